//! The work-queue workload: producers add items, consumers take, process and complete
//! them, under the scenario's faults; a recipe opts in with [`Recipe::work_queue`].
//!
//! - Clients `0..producers` produce, the rest consume (see [`WorkQueue::producers`]).
//!   Each producer adds `acquisitions_per_client` items, drawing a pause of 0 to
//!   `4 × hold_ms` before each from the Chooser, and records `ProduceInvoked` before
//!   each produce call and `ItemProduced` (or `ProduceFailed`) when it returns.
//! - A consumer takes an item, records `ProcessStart`, processes it for `hold_ms`
//!   unless its trust in the item's lock is lost first (`Lost`, and it abandons the
//!   item), then completes it (`ProcessEnd`). Take, complete and abandon are the
//!   consumer's public calls ([`ConsumerUnderTest`]).
//! - A client whose session ended opens a new one with a new producer or consumer, as
//!   the lock workload does.
//! - Consumers stop once every producer is done and the queue directory on the server
//!   is empty (the workload's stop rule, not the recipe's), or at the latest
//!   `liveness_bound_ms` after both the faults' end (the heal, plus the longest a
//!   partition, pause or delay drawn before it can last) and the last producer's end;
//!   then every
//!   client closes its session, as a process exits.

use super::world_run::{outcome, prepare_world, settle};
use super::{FaultMode, Recipe, Scenario};
use crate::chooser::ChoiceKind;
use crate::{Sim, SimClient};
use futures_util::future::{Either, select};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_recipe::history::EventKind;
use zklock_recipe::work_queue::{ConsumerUnderTest, ProducerUnderTest, QueuePaths};

/// Makes a client's consumer.
pub type MakeConsumer = Arc<dyn Fn(SimClient) -> Box<dyn ConsumerUnderTest> + Send + Sync>;
/// Makes a client's producer.
pub type MakeProducer = Arc<dyn Fn(SimClient) -> Box<dyn ProducerUnderTest> + Send + Sync>;

/// A work queue under test: its directories, how many producers, and how each client's
/// producer or consumer is made (again, with a new session, after an expiry).
#[derive(Clone)]
pub struct WorkQueue {
    pub paths: QueuePaths,
    /// Producers among the scenario's clients; the rest consume. Clamped to leave at
    /// least one consumer: a scenario of one client runs one producer and one consumer.
    pub producers: u32,
    pub consumer: MakeConsumer,
    pub producer: MakeProducer,
}

impl std::fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("paths", &self.paths)
            .field("producers", &self.producers)
            .finish_non_exhaustive()
    }
}

/// When the faults are over: the heal, plus, in a sweep, the longest a fault drawn just
/// before it can outlast it (a partition, a pause or a delayed reply). A consumer cut off
/// until then gets the whole liveness bound after it.
fn healed(sc: &Scenario) -> Duration {
    let f = &sc.faults;
    let tail_ms = match sc.fault_mode {
        FaultMode::Random => [
            (f.partition, f.partition_ms_max),
            (f.pause, f.pause_ms_max),
            (f.delayed_delivery, f.delay_ms_max),
        ]
        .iter()
        .filter(|(rate, _)| !rate.is_never())
        .map(|&(_, ms)| ms)
        .max()
        .unwrap_or(0),
        // A bounded check's heal is its time limit.
        FaultMode::Bounded { .. } => 0,
    };
    Duration::from_millis(sc.heal_ms.saturating_add(tail_ms))
}

/// How often an idle consumer looks at the workload's stop rule, in ms.
const STOP_POLL_MS: u64 = 250;

/// The workload's shared progress: producers still at work, and when the last ended or
/// the faults healed, whichever is later (the time only when past the heal, so that a
/// bounded check, whose heal is its time limit, tells no two states apart by it).
#[derive(Debug, Default)]
struct Progress {
    producers_left: u32,
    producers_end_us: u64,
}

/// Runs the work-queue workload of `scenario` on `sim`.
pub(super) fn run(sim: Sim, scenario: &Scenario, queue: WorkQueue) -> super::RunOutcome {
    let dirs = vec![queue.paths.queue.clone(), queue.paths.locks.clone()];
    let clients = scenario.clients.max(2);
    let producers = queue.producers.clamp(1, clients - 1);
    // Producers and consumers run different code: two roles.
    let roles: Vec<u32> = (0..clients).map(|i| u32::from(i < producers)).collect();
    prepare_world(&sim, scenario, &dirs, &roles);
    let progress = Arc::new(Mutex::new(Progress {
        producers_left: producers,
        producers_end_us: healed(scenario).as_micros() as u64,
    }));
    let main = {
        let sim = sim.clone();
        let sc = scenario.clone();
        async move {
            let mut tasks = Vec::new();
            for i in 0..clients {
                let c = sim.client();
                let t = if i < producers {
                    let p = producer(sim.clone(), c.clone(), sc.clone(), queue.clone());
                    let progress = progress.clone();
                    let (c2, heal) = (c.clone(), healed(&sc));
                    sim.spawn(async move {
                        p.await;
                        let mut g = progress.lock().expect("progress lock");
                        g.producers_left -= 1;
                        g.producers_end_us = c2.now_at_least(heal).as_micros() as u64;
                    })
                } else {
                    let w = consumer(
                        sim.clone(),
                        c.clone(),
                        sc.clone(),
                        queue.clone(),
                        progress.clone(),
                    );
                    sim.spawn(w)
                };
                tasks.push((t, c, i < producers));
            }
            for (t, c, producing) in tasks {
                let crashed = sim.until_crashed(&c);
                match select(t, pin!(crashed)).await {
                    Either::Left(_) => {}
                    Either::Right((_, t)) => {
                        t.abort();
                        if producing {
                            // A crashed producer produces no more.
                            let mut g = progress.lock().expect("progress lock");
                            g.producers_left -= 1;
                            let heal = healed(&sc);
                            g.producers_end_us = c.now_at_least(heal).as_micros() as u64;
                        }
                    }
                }
            }
            settle(&sim, &sc).await;
        }
    };
    let error = crate::sim::complete(sim.run(main)).err();
    outcome(&sim, &dirs, error, None, Some(dirs_paths(&dirs)))
}

fn dirs_paths(dirs: &[String]) -> QueuePaths {
    QueuePaths {
        queue: dirs[0].clone(),
        locks: dirs[1].clone(),
    }
}

/// A new session for `c`, once the client can reach the server again.
async fn new_session(sim: &Sim, c: &SimClient) -> SimClient {
    loop {
        c.sleep(sim.reconnect_delay()).await;
        if let Some(fresh) = sim.renew_session(c).await {
            return fresh;
        }
    }
}

/// Closes the client's session, as a process exits, so that the server deletes its
/// ephemerals at once (a take dropped at the stop may have left an item lock). A close
/// that fails with the connection is tried again after a while, at most
/// [`CLOSE_ATTEMPTS_MAX`] times; each waits at most a session timeout for its reply (a
/// close whose reply is held back may never answer: the session then ends by expiry).
async fn close(c: &SimClient, sc: &Scenario) {
    for _ in 0..CLOSE_ATTEMPTS_MAX {
        if c.session_state().is_terminal() {
            return;
        }
        let close = pin!(c.close());
        let limit = pin!(c.sleep(Duration::from_millis(sc.session_timeout_ms)));
        match select(close, limit).await {
            Either::Left((Err(e), _)) if e.is_connection_loss() => {
                c.sleep(Duration::from_millis(STOP_POLL_MS)).await;
            }
            _ => return,
        }
    }
}

/// Closes a client tries at its workload's end.
const CLOSE_ATTEMPTS_MAX: u32 = 20;

/// One producer's loop.
async fn producer(sim: Sim, mut c: SimClient, sc: Scenario, queue: WorkQueue) {
    let mut p = (queue.producer)(c.clone());
    let pace = (sc.hold_ms.saturating_mul(4).saturating_add(1)).min(1 << 16) as usize;
    for _ in 0..sc.acquisitions_per_client {
        if c.session_state().is_terminal() {
            c = new_session(&sim, &c).await;
            p = (queue.producer)(c.clone());
        }
        let wait = sim.choose(&c, ChoiceKind::Delay, pace).await as u64;
        c.sleep(Duration::from_millis(wait)).await;
        // The call's bounds tie the items its creates make to it
        // (`queue_one_item_per_produce`).
        sim.record(&c, EventKind::ProduceInvoked);
        match p.produce().await {
            Ok(item) => sim.record(&c, EventKind::ItemProduced { item }),
            // The item may stand anyway (a create whose fate the session's end hid):
            // its consumer's processing shows it.
            Err(reason) => {
                sim.record(&c, EventKind::ProduceFailed { reason });
                c.sleep(Duration::from_millis(10)).await;
            }
        }
    }
    sim.record(&c, EventKind::Done);
    close(&c, &sc).await;
}

/// One consumer's loop.
async fn consumer(
    sim: Sim,
    mut c: SimClient,
    sc: Scenario,
    queue: WorkQueue,
    progress: Arc<Mutex<Progress>>,
) {
    let mut q = (queue.consumer)(c.clone());
    // The clock is compared, not kept: only the answer is part of the state.
    let stop = |sim: &Sim, c: &SimClient| {
        let g = progress.lock().expect("progress lock");
        let deadline_us = g.producers_end_us + sc.liveness_bound_ms * 1000;
        let done = g.producers_left == 0 && sim.server_children(&queue.paths.queue).is_empty();
        done || (g.producers_left == 0 && c.now_past(Duration::from_micros(deadline_us)))
    };
    loop {
        if stop(&sim, &c) {
            break;
        }
        if c.session_state().is_terminal() {
            c = new_session(&sim, &c).await;
            q = (queue.consumer)(c.clone());
        }
        let taken = {
            let take = pin!(q.take());
            let poll = pin!(async {
                loop {
                    c.sleep(Duration::from_millis(STOP_POLL_MS)).await;
                    if stop(&sim, &c) {
                        break;
                    }
                }
            });
            match select(take, poll).await {
                Either::Left((taken, _)) => taken,
                Either::Right(_) => break,
            }
        };
        let taken = match taken {
            Ok(t) => t,
            Err(_) => {
                c.sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let item = taken.item.clone();
        sim.record(
            &c,
            EventKind::ProcessStart {
                item: item.clone(),
                token: taken.token,
            },
        );
        let hold = super::world_run::hold_length(&sim, &c, &sc).await;
        let lost = {
            let work = pin!(c.sleep(hold));
            let lost = pin!(q.lost());
            match select(work, lost).await {
                Either::Left(_) => None,
                Either::Right((reason, _)) => Some(reason),
            }
        };
        let completed = match lost {
            Some(reason) => Err(reason),
            // Completing is part of processing: as a holder does, a consumer stops
            // believing at Disconnected, and drops its completion (whose delete, if in
            // flight, ends unknown).
            None => {
                let complete = pin!(q.complete(taken.clone()));
                let lost = pin!(q.lost());
                match select(complete, lost).await {
                    Either::Left((Ok(()), _)) => Ok(()),
                    Either::Left((Err(reason), _)) => Err(format!("completing failed: {reason}")),
                    Either::Right((reason, _)) => Err(reason),
                }
            }
        };
        match completed {
            Ok(()) => sim.record(&c, EventKind::ProcessEnd { item }),
            Err(reason) => {
                sim.record(&c, EventKind::Lost { reason });
                let _ = q.abandon(taken).await;
            }
        }
    }
    sim.record(&c, EventKind::Done);
    close(&c, &sc).await;
}

/// zklock's work queue: producers and [`Consumer`](zklock_recipe::work_queue::Consumer)s
/// (herd-free, under the take lock), or, with `naive`,
/// [`NaiveConsumer`](zklock_recipe::work_queue::NaiveConsumer)s (every idle consumer
/// watches the whole queue). Its lock type is the shipped lock's, which the queue's
/// workload never asks for.
#[derive(Clone, Debug)]
pub struct QueueRecipe {
    /// Naive consumers instead of herd-free ones. Default false.
    pub naive: bool,
    /// Producers among the scenario's clients. Default 1.
    pub producers: u32,
    pub paths: QueuePaths,
}

impl Default for QueueRecipe {
    fn default() -> Self {
        QueueRecipe {
            naive: false,
            producers: 1,
            paths: QueuePaths::default(),
        }
    }
}

impl QueueRecipe {
    /// The naive consumers' queue.
    pub fn naive() -> QueueRecipe {
        QueueRecipe {
            naive: true,
            ..QueueRecipe::default()
        }
    }
}

impl Recipe for QueueRecipe {
    type Lock = super::ShippedLock;
    fn name(&self) -> String {
        if self.naive { "queue-naive" } else { "queue" }.into()
    }
    fn lock(
        &self,
        client: SimClient,
        role: zklock_recipe::history::LockRole,
        path: &str,
    ) -> Self::Lock {
        super::ShippedRecipe::default().lock(client, role, path)
    }
    fn work_queue(&self) -> Option<WorkQueue> {
        let paths = self.paths.clone();
        let p2 = paths.clone();
        let consumer: MakeConsumer = if self.naive {
            Arc::new(move |c| {
                Box::new(
                    zklock_recipe::work_queue::NaiveConsumer::new(c, &p2)
                        .expect("the queue's paths are valid"),
                )
            })
        } else {
            Arc::new(move |c| {
                Box::new(
                    zklock_recipe::work_queue::Consumer::new(c, &p2)
                        .expect("the queue's paths are valid"),
                )
            })
        };
        let p3 = paths.clone();
        let producer: MakeProducer = Arc::new(move |c| {
            Box::new(
                zklock_recipe::work_queue::Producer::new(c, &p3)
                    .expect("the queue's paths are valid"),
            )
        });
        Some(WorkQueue {
            paths,
            producers: self.producers,
            consumer,
            producer,
        })
    }
}
