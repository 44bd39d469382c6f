//! A work queue on real servers: the simulation's work-queue workload
//! (`zklock_sim::scenario::work_queue`) on [`RecordingClient`]s, under the same faults as
//! a lock's run, recording the same history events for the queue's properties.
//!
//! - Clients `0..producers` produce, the rest consume. Producer `p` adds
//!   `items_per_producer` items, its `k`th (from 0) due at `(k + 1) / items_per_producer`
//!   of the first half of `duration_ms`, so that items come while the faults strike (they
//!   heal at two thirds of the run in `zklock real`); it records `ProduceInvoked` before
//!   each produce call and `ItemProduced` (or `ProduceFailed`) when it returns. A
//!   produce that failed (its session ended) is made again, so that every producer
//!   records exactly `items_per_producer` items; the failed one's item may stand anyway,
//!   and is taken and completed like any other (a consumer's processing shows it). A
//!   producer that crashed and restarts goes on with its next item.
//! - A consumer takes an item, records `ProcessStart`, processes it for `hold_ms` unless
//!   its trust in the item's lock is lost first (`Lost`, and it gives the item back),
//!   then completes it (`ProcessEnd`) and releases the item's lock.
//! - A client whose session ended opens a new one with a new producer or consumer, as
//!   the lock's workload does.
//! - The run ends when every producer is done, the faults have healed and the queue
//!   directory on the server is empty (read by the run's own session, outside the
//!   faults), and the run's `until` goal (if any) holds; or, with items left, at the
//!   latest `drain_timeout_ms` after the later of the heal and the last producer's end
//!   (the items left then fail `queue_items_completed`); or at `goal_deadline_ms`, a bound
//!   only a hang reaches.
//!
//! The queue's directories are `queue` and `queue_lock` beside the run's lock path
//! ([`queue_paths`]): `/zklock/queue` and `/zklock/queue_lock` by default.

use super::{GOAL_POLL_MS, RealRun, RunStart, Shared, Work, WorkloadConfig, run_work};
use crate::client::ZkClient;
use crate::error::RealError;
use crate::faults::{FaultConfig, NOT_HEALED};
use crate::recording::RecordingClient;
use crate::servers::Servers;
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use zklock_recipe::history::EventKind;
use zklock_recipe::path::{join, parent};
use zklock_recipe::work_queue::{
    Consumer, ConsumerUnderTest, NaiveConsumer, Producer, ProducerUnderTest, QueuePaths,
};
use zklock_recipe::{Coordination, ZkError};

/// The most items a producer of a real run adds.
pub const MAX_ITEMS_PER_PRODUCER: u32 = 10_000;

/// Makes a client's consumer on the queue's directories (again, with a new session,
/// after an expiry).
pub type MakeRealConsumer =
    Arc<dyn Fn(RecordingClient, &QueuePaths) -> Box<dyn ConsumerUnderTest> + Send + Sync>;

/// Makes a client's producer on the queue's directories (again, with a new session,
/// after an expiry).
pub type MakeRealProducer =
    Arc<dyn Fn(RecordingClient, &QueuePaths) -> Box<dyn ProducerUnderTest> + Send + Sync>;

/// A work queue's run: its roles, its item count, its consumer and its producer.
#[derive(Clone)]
pub struct QueueWorkload {
    /// Producers among the run's clients, 1 to clients − 1; the rest consume. Default 1,
    /// as the simulation's.
    pub producers: u32,
    /// Items each producer adds, 1 to [`MAX_ITEMS_PER_PRODUCER`]. Default 20, as the
    /// simulation's (its acquisitions per client).
    pub items_per_producer: u32,
    /// Makes each consumer.
    pub consumer: MakeRealConsumer,
    /// Makes each producer. Default zklock's [`Producer`].
    pub producer: MakeRealProducer,
}

impl std::fmt::Debug for QueueWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueWorkload")
            .field("producers", &self.producers)
            .field("items_per_producer", &self.items_per_producer)
            .finish_non_exhaustive()
    }
}

impl QueueWorkload {
    /// One producer (zklock's) of 20 items, and consumers made by `consumer`.
    pub fn new(consumer: MakeRealConsumer) -> QueueWorkload {
        QueueWorkload {
            producers: 1,
            items_per_producer: 20,
            consumer,
            producer: Arc::new(|c, paths| {
                Box::new(Producer::new(c, paths).expect("the run's queue paths were validated"))
            }),
        }
    }

    /// zklock's herd-free consumers ([`Consumer`]).
    pub fn herd_free() -> QueueWorkload {
        QueueWorkload::new(Arc::new(|c, paths| {
            Box::new(Consumer::new(c, paths).expect("the run's queue paths were validated"))
        }))
    }

    /// The naive consumers ([`NaiveConsumer`]): every idle one watches the whole queue.
    pub fn naive() -> QueueWorkload {
        QueueWorkload::new(Arc::new(|c, paths| {
            Box::new(NaiveConsumer::new(c, paths).expect("the run's queue paths were validated"))
        }))
    }

    /// Checks the bounds for a run of `clients` clients; the error says which one.
    pub fn validate(&self, clients: u32) -> Result<(), RealError> {
        let bad = |reason: String| Err(RealError::Config { reason });
        if clients < 2 {
            return bad(format!(
                "a work queue needs at least 2 clients (a producer and a consumer), got {clients}"
            ));
        }
        if !(1..clients).contains(&self.producers) {
            return bad(format!(
                "producers must be 1 to {} (clients - 1, leaving a consumer), got {}",
                clients - 1,
                self.producers
            ));
        }
        if !(1..=MAX_ITEMS_PER_PRODUCER).contains(&self.items_per_producer) {
            return bad(format!(
                "items per producer must be 1 to {MAX_ITEMS_PER_PRODUCER}, got {}",
                self.items_per_producer
            ));
        }
        Ok(())
    }
}

/// The queue's directories of a run whose lock path is `lock_path`: `queue` and
/// `queue_lock` in its parent directory.
pub fn queue_paths(lock_path: &str) -> QueuePaths {
    let dir = parent(lock_path).unwrap_or("/");
    QueuePaths {
        queue: join(dir, "queue"),
        locks: join(dir, "queue_lock"),
    }
}

/// Runs the work queue on `servers` with `faults`, and hands the servers back with the
/// run, whose [`RealRun::queue`] names the queue's directories.
pub async fn run_queue(
    servers: Servers,
    config: &WorkloadConfig,
    faults: &FaultConfig,
    queue: QueueWorkload,
) -> Result<RealRun, RealError> {
    config.validate()?;
    queue.validate(config.clients)?;
    let paths = queue_paths(&config.lock_path);
    paths.validate().map_err(|e| RealError::Config {
        reason: e.to_string(),
    })?;
    let work = QueueWork {
        produced: (0..queue.producers).map(|_| AtomicU32::new(0)).collect(),
        progress: Mutex::new(Progress {
            producers_left: queue.producers,
            last_producer_end_ms: 0,
        }),
        spec: queue,
        paths,
    };
    run_work(servers, config, faults, Arc::new(work)).await
}

/// The producers still at work, and when the last one ended.
#[derive(Debug)]
struct Progress {
    producers_left: u32,
    last_producer_end_ms: u64,
}

/// The queue's [`Work`].
struct QueueWork {
    spec: QueueWorkload,
    paths: QueuePaths,
    /// Per producer: the items it produced so far (kept across a crash's restart).
    produced: Vec<AtomicU32>,
    progress: Mutex<Progress>,
}

impl QueueWork {
    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Work for QueueWork {
    fn worker(
        self: Arc<Self>,
        shared: Arc<Shared>,
        index: usize,
        first: RecordingClient,
    ) -> BoxFuture<'static, Option<RecordingClient>> {
        if index < self.spec.producers as usize {
            Box::pin(async move { Some(producer(self, shared, index, first).await) })
        } else {
            Box::pin(async move { Some(consumer(self, shared, index, first).await) })
        }
    }

    fn final_dirs(&self, _: &WorkloadConfig) -> Vec<(String, String)> {
        [&self.paths.queue, &self.paths.locks]
            .into_iter()
            .map(|d| (d.clone(), d.clone()))
            .collect()
    }

    fn leases(&self) -> Option<u32> {
        None
    }

    fn start<'a>(&'a self, _: &'a RunStart) -> BoxFuture<'a, Result<(), RealError>> {
        Box::pin(async { Ok(()) })
    }

    fn watch_end<'a>(
        self: Arc<Self>,
        shared: &'a Shared,
        observer: &'a ZkClient,
        _planned_heal_ms: u64,
        pauses_on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move { self.watch(shared, observer, pauses_on).await })
    }

    fn queue(&self) -> Option<QueuePaths> {
        Some(self.paths.clone())
    }
}

impl QueueWork {
    /// Ends the run by the rule of the module's docs.
    async fn watch(&self, shared: &Shared, observer: &ZkClient, pauses_on: bool) {
        let c = &shared.config;
        let deadline = Duration::from_millis(c.goal_deadline_ms.max(c.duration_ms));
        loop {
            let now = shared.recorder.elapsed();
            if now >= deadline || shared.recorder.is_full() || shared.stop.load(Ordering::Acquire) {
                break;
            }
            let healed_ms = shared.healed_at_ms.load(Ordering::Acquire);
            let (left, last_end_ms) = {
                let p = self.progress();
                (p.producers_left, p.last_producer_end_ms)
            };
            if healed_ms != NOT_HEALED && left == 0 {
                let drained = match observer.get_children(&self.paths.queue).await {
                    Ok(items) => items.is_empty(),
                    Err(ZkError::NoNode) => true,
                    Err(_) => false,
                };
                let reached = c.until.as_ref().is_none_or(|goal| {
                    goal.reached(
                        &shared.recorder.history(),
                        &shared.facts_so_far(healed_ms, pauses_on),
                    )
                });
                let given_up = Duration::from_millis(
                    healed_ms
                        .max(last_end_ms)
                        .saturating_add(c.drain_timeout_ms),
                );
                if (drained && reached) || now >= given_up {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(GOAL_POLL_MS)).await;
        }
        shared.over.store(true, Ordering::Release);
    }
}

/// Resolves once the run is over for its clients.
async fn over(shared: &Shared) {
    while !shared.acquisitions_over() {
        tokio::time::sleep(Duration::from_millis(GOAL_POLL_MS)).await;
    }
}

/// Ends client `index`'s process: records `Done` and closes its session, as a process
/// exits, so that the server deletes its ephemerals at once (a take dropped at the end
/// may have left an item's lock) before the run reads what is left.
async fn exit(shared: &Shared, index: usize, client: RecordingClient) -> RecordingClient {
    client.record(EventKind::Done);
    shared.sessions.set(index, None);
    let limit = Duration::from_millis(shared.config.session_timeout_ms);
    let _ = tokio::time::timeout(limit, client.close()).await;
    client
}

/// Producer `index`'s loop.
async fn producer(
    work: Arc<QueueWork>,
    shared: Arc<Shared>,
    index: usize,
    first: RecordingClient,
) -> RecordingClient {
    let c = &shared.config;
    let items = work.spec.items_per_producer;
    let make = |client: &RecordingClient| (work.spec.producer)(client.clone(), &work.paths);
    let mut client = first;
    let mut p = make(&client);
    while !shared.acquisitions_over() {
        let k = work.produced[index].load(Ordering::Acquire);
        if k >= items {
            break;
        }
        if client.session_state().is_terminal() {
            if let Some(fresh) = shared.renew(index).await {
                client = fresh;
                p = make(&client);
            }
            continue;
        }
        let due = Duration::from_millis(c.duration_ms / 2 * u64::from(k + 1) / u64::from(items));
        let now = shared.recorder.elapsed();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
        // The call's bounds tie the items its creates make to it
        // (`queue_one_item_per_produce`).
        client.record(EventKind::ProduceInvoked);
        match p.produce().await {
            Ok(item) => {
                work.produced[index].fetch_add(1, Ordering::AcqRel);
                client.record(EventKind::ItemProduced { item });
            }
            Err(reason) => {
                client.record(EventKind::ProduceFailed { reason });
                tokio::time::sleep(Duration::from_millis(c.error_backoff_ms)).await;
            }
        }
    }
    {
        let mut progress = work.progress();
        progress.producers_left = progress.producers_left.saturating_sub(1);
        progress.last_producer_end_ms = shared.recorder.elapsed().as_millis() as u64;
    }
    exit(&shared, index, client).await
}

/// Consumer `index`'s loop.
async fn consumer(
    work: Arc<QueueWork>,
    shared: Arc<Shared>,
    index: usize,
    first: RecordingClient,
) -> RecordingClient {
    let c = &shared.config;
    let hold = Duration::from_millis(c.hold_ms);
    let make = |client: &RecordingClient| (work.spec.consumer)(client.clone(), &work.paths);
    let mut client = first;
    let mut q = make(&client);
    while !shared.acquisitions_over() {
        if client.session_state().is_terminal() {
            if let Some(fresh) = shared.renew(index).await {
                client = fresh;
                q = make(&client);
            }
            continue;
        }
        let taken = tokio::select! {
            taken = q.take() => taken,
            // The take is dropped here, wherever it was, as a process exits.
            () = over(&shared) => break,
        };
        let taken = match taken {
            Ok(taken) => taken,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(c.error_backoff_ms)).await;
                continue;
            }
        };
        let item = taken.item.clone();
        client.record(EventKind::ProcessStart {
            item: item.clone(),
            token: taken.token,
        });
        if shared.processes[index].strike_armed(client.zk()) {
            // Crashed: the process is dropped here, at its next await.
            std::future::pending::<()>().await;
        }
        let lost = tokio::select! {
            // The work first, as the lock's holders: a process resuming from a pause
            // finishes the step it was on before it reads its mail.
            biased;
            () = client.sleep(hold) => None,
            reason = q.lost() => Some(reason),
        };
        // Completing is part of processing: a consumer stops believing at Disconnected,
        // and drops its completion (whose delete, if in flight, ends unknown).
        let completed = match lost {
            Some(reason) => Err(reason),
            None => tokio::select! {
                done = q.complete(taken.clone()) => done.map_err(|e| format!("completing failed: {e}")),
                reason = q.lost() => Err(reason),
            },
        };
        match completed {
            Ok(()) => client.record(EventKind::ProcessEnd { item }),
            Err(reason) => {
                client.record(EventKind::Lost { reason });
                let _ = q.abandon(taken).await;
            }
        }
    }
    exit(&shared, index, client).await
}
