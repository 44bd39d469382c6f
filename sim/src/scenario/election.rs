//! The election workload: every client is a contender for leadership of the scenario's
//! lock path, under the scenario's faults; a recipe opts in with [`Recipe::election`].
//!
//! Each contender makes `acquisitions_per_client` attempts at a term of leadership. An
//! attempt records `AcquireInvoked` when it joins the election, `Acquired` (token: the
//! term's epoch, node: the leader's node) once it leads, then, as a lock's holder does,
//! reads the shared resource with the epoch, leads for a hold (`hold_ms`, or by the
//! chooser's pick a session timeout longer when the shape chooses holds: a leader that
//! holds longer than the session), races that against the recipe's lost signal (`Lost`),
//! and writes the resource unless lost first. `ReleaseInvoked` and `Released` bound the
//! giving up of leadership; `Closed` marks the close of a latch or the cancel of a
//! selector, after which the contender must not lead until it joins again.
//!
//! - A **latch** contender closes its latch after each term and joins again with a new
//!   one (contenders that close and rejoin). Every `drop_every`-th attempt closes its
//!   latch while it still waits, after a delay the chooser draws in
//!   `0..=drop_after_ms_max` (`AcquireMode::Dropped`, ended by `AcquireFailed`), unless
//!   elected first. After each close the contender deletes the election path if it is
//!   empty, as ZooKeeper does with an empty container (Curator's latch path is one): a
//!   latch must recover when its path is gone.
//! - A **selector** contender runs its selector, which queues, leads and queues again by
//!   itself; the workload cancels it once the contender's terms are done, and, in every
//!   `drop_every`-th term, in the middle of the task, after a delay the chooser draws in
//!   `0..=hold_ms` (leadership given up in the middle of the task).
//! - A client whose session ended opens a new one with a new contender, as the lock
//!   workload does.

use super::world_run::{hold_length, outcome, prepare_world, settle};
use super::{Recipe, Scenario};
use crate::chooser::ChoiceKind;
use crate::world::ResourceOp;
use crate::{Sim, SimClient};
use futures_channel::mpsc;
use futures_util::StreamExt;
use futures_util::future::{BoxFuture, Either, join, select};
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_recipe::election::{
    ElectionError, ElectionUnderTest, LatchUnderTest, SelectorListener, SelectorUnderTest, Term,
};
use zklock_recipe::history::{AcquireMode, EventKind, LockRole};

/// Makes client `index`'s contender on a session (again, with a new session, after an
/// expiry): `(client, index, election path)`. The index is the same for every session of
/// the client's process.
pub type MakeContender = Arc<dyn Fn(SimClient, u32, &str) -> ElectionUnderTest + Send + Sync>;

/// An election under test: how each client's contender is made.
#[derive(Clone)]
pub struct Election {
    pub contender: MakeContender,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election").finish_non_exhaustive()
    }
}

/// Runs the election workload of `scenario` on `sim`.
pub(super) fn run(sim: Sim, scenario: &Scenario, election: Election) -> super::RunOutcome {
    let dirs = vec![scenario.lock_path.clone()];
    let roles = vec![0; scenario.clients as usize];
    prepare_world(&sim, scenario, &dirs, &roles);
    let clients: Vec<SimClient> = (0..scenario.clients).map(|_| sim.client()).collect();
    let main = {
        let sim = sim.clone();
        let sc = scenario.clone();
        async move {
            let mut tasks = Vec::new();
            for (i, c) in clients.into_iter().enumerate() {
                let w = contender(sim.clone(), c.clone(), sc.clone(), election.clone(), i);
                let (finisher, client) = (sim.clone(), c.clone());
                let t = sim.spawn(async move {
                    w.await;
                    finisher.finish(&client);
                });
                tasks.push((t, c));
            }
            for (t, c) in tasks {
                let crashed = sim.until_crashed(&c);
                match select(t, pin!(crashed)).await {
                    Either::Left(_) => {}
                    Either::Right((_, t)) => t.abort(),
                }
            }
            settle(&sim, &sc).await;
        }
    };
    let error = crate::sim::complete(sim.run(main)).err();
    let mut o = outcome(&sim, &dirs, error, None, None);
    o.election = true;
    o
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

/// One contender's loop.
async fn contender(sim: Sim, mut c: SimClient, sc: Scenario, election: Election, index: usize) {
    let mut k = 0;
    while k < sc.acquisitions_per_client {
        if k > 0 && sc.shape.count_chosen && sim.choose(&c, ChoiceKind::AcquireCount, 2).await == 1
        {
            break;
        }
        if c.session_state().is_terminal() {
            c = new_session(&sim, &c).await;
        }
        match (election.contender)(c.clone(), index as u32, &sc.lock_path) {
            ElectionUnderTest::Latch(latch) => {
                latch_attempt(&sim, &c, &sc, latch.as_ref(), k).await;
                k += 1;
            }
            ElectionUnderTest::Selector(selector) => {
                let left = sc.acquisitions_per_client - k;
                // At least one attempt counted, so that a selector that never leads ends.
                k += selector_run(&sim, &c, &sc, selector.as_ref(), k, left)
                    .await
                    .max(1);
            }
        }
    }
    sim.record(&c, EventKind::Done);
}

/// Whether attempt `k` gives up early: the latch closed while it waits, the selector
/// cancelled in the middle of its task.
fn gives_up_early(sc: &Scenario, k: u32) -> bool {
    sc.drop_every > 0 && k % sc.drop_every == sc.drop_every - 1
}

/// The lead of one term: the resource read with the epoch, the hold, and the write
/// unless the trust is lost first (`lost`).
async fn lead(sim: &Sim, c: &SimClient, sc: &Scenario, term: &Term, lost: BoxFuture<'_, String>) {
    let token = term.epoch;
    let read = sim.resource(c, ResourceOp::Read { token, lock: 0 }).await;
    let hold = hold_length(sim, c, sc).await;
    let lost = {
        let work = pin!(c.sleep(hold));
        match select(work, lost).await {
            Either::Left(_) => None,
            Either::Right((reason, _)) => Some(reason),
        }
    };
    match lost {
        None => {
            let op = ResourceOp::Write {
                token,
                read_fenced: read.fenced,
                read_unfenced: read.unfenced,
                lock: 0,
            };
            sim.resource(c, op).await;
        }
        Some(reason) => sim.record(c, EventKind::Lost { reason }),
    }
}

fn acquired(sim: &Sim, c: &SimClient, term: &Term) {
    sim.record(
        c,
        EventKind::Acquired {
            token: term.epoch,
            node: term.node.clone(),
        },
    );
}

/// One latch's attempt at a term, then its close and the reap of an empty path.
async fn latch_attempt(
    sim: &Sim,
    c: &SimClient,
    sc: &Scenario,
    latch: &dyn LatchUnderTest,
    k: u32,
) {
    let mode = if gives_up_early(sc, k) {
        let n = sc.drop_after_ms_max.saturating_add(1).min(1 << 16) as usize;
        AcquireMode::Dropped {
            after_ms: sim.choose(c, ChoiceKind::Delay, n).await as u64,
        }
    } else {
        AcquireMode::Blocking
    };
    sim.record(
        c,
        EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode,
            lock: None,
        },
    );
    let mut closed = false;
    let got = match mode {
        AcquireMode::Dropped { after_ms } => {
            let mut waiting = pin!(latch.await_leadership());
            let after = pin!(c.sleep(Duration::from_millis(after_ms)));
            match select(waiting.as_mut(), after).await {
                Either::Left((got, _)) => got,
                Either::Right(_) => {
                    // Closed while it waits: the wait must end without leadership.
                    sim.record(c, EventKind::Closed);
                    closed = true;
                    join(waiting, latch.close()).await.0
                }
            }
        }
        _ => latch.await_leadership().await,
    };
    match got {
        Ok(term) => {
            acquired(sim, c, &term);
            lead(sim, c, sc, &term, latch.lost()).await;
            sim.record(c, EventKind::ReleaseInvoked);
            if !closed {
                sim.record(c, EventKind::Closed);
            }
            match latch.close().await {
                Ok(()) => sim.record(c, EventKind::Released),
                Err(reason) => sim.record(c, EventKind::ReleaseFailed { reason }),
            }
        }
        Err(reason) => {
            sim.record(c, EventKind::AcquireFailed { reason });
            if !closed {
                sim.record(c, EventKind::Closed);
                let _ = latch.close().await;
            }
            c.sleep(Duration::from_millis(10)).await;
        }
    }
    // As ZooKeeper reaps an empty container: fails, as it should, while anyone contends.
    if !c.session_state().is_terminal() {
        let _ = c.delete(&sc.lock_path, None).await;
    }
}

/// What the selector's listener asks of the canceller: one message, one cancel.
type CancelAsk = mpsc::UnboundedSender<()>;

/// The selector's listener: records each step, leads as a lock's holder holds, and asks
/// for the cancel once the contender's terms are done, or in the middle of a task.
struct Recorder<'a> {
    sim: &'a Sim,
    c: &'a SimClient,
    sc: &'a Scenario,
    /// The contender's attempt number of the first term of this run.
    first: u32,
    /// Terms this run may have.
    terms_max: u32,
    terms: AtomicU32,
    cancel: CancelAsk,
    /// Whether the workload cancelled the selector (and recorded `Closed`).
    closed: Mutex<bool>,
}

impl SelectorListener for Recorder<'_> {
    fn queued(&self) {
        if *self.closed.lock().expect("cancel flag") {
            // A queue after the cancel is the selector's own doing, not a join: the
            // contender joins again only with a new selector. Recorded as one, it would
            // hide a leadership after the cancel.
            return;
        }
        let invoked = EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode: AcquireMode::Blocking,
            lock: None,
        };
        self.sim.record(self.c, invoked);
    }
    fn not_elected(&self, reason: &str) {
        let failed = EventKind::AcquireFailed {
            reason: reason.into(),
        };
        self.sim.record(self.c, failed);
    }
    fn lead<'b>(&'b self, term: &'b Term) -> BoxFuture<'b, ()> {
        Box::pin(async move {
            let k = self.first + self.terms.fetch_add(1, Ordering::Relaxed);
            acquired(self.sim, self.c, term);
            // The selector stops the task itself when leadership is lost.
            let never: BoxFuture<'_, String> = Box::pin(std::future::pending());
            if gives_up_early(self.sc, k) {
                let n = self.sc.hold_ms.saturating_add(1).min(1 << 16) as usize;
                let after = self.sim.choose(self.c, ChoiceKind::Delay, n).await as u64;
                let task = pin!(lead(self.sim, self.c, self.sc, term, never));
                let cancel = pin!(async {
                    self.c.sleep(Duration::from_millis(after)).await;
                    let _ = self.cancel.unbounded_send(());
                    std::future::pending::<()>().await;
                });
                select(task, cancel).await;
            } else {
                lead(self.sim, self.c, self.sc, term, never).await;
            }
        })
    }
    fn interrupted(&self, reason: &str) {
        let lost = EventKind::Lost {
            reason: reason.into(),
        };
        self.sim.record(self.c, lost);
    }
    fn relinquishing(&self) {
        self.sim.record(self.c, EventKind::ReleaseInvoked);
        if self.terms.load(Ordering::Relaxed) >= self.terms_max {
            let _ = self.cancel.unbounded_send(());
        }
    }
    fn relinquished(&self, result: Result<(), &ElectionError>) {
        let kind = match result {
            Ok(()) => EventKind::Released,
            Err(e) => EventKind::ReleaseFailed {
                reason: e.to_string(),
            },
        };
        self.sim.record(self.c, kind);
    }
}

/// Runs a selector until it is cancelled or its session ends; the terms it started.
async fn selector_run(
    sim: &Sim,
    c: &SimClient,
    sc: &Scenario,
    selector: &dyn SelectorUnderTest,
    first: u32,
    terms_max: u32,
) -> u32 {
    let (ask, mut asked) = mpsc::unbounded();
    let recorder = Recorder {
        sim,
        c,
        sc,
        first,
        terms_max,
        terms: AtomicU32::new(0),
        cancel: ask,
        closed: Mutex::new(false),
    };
    let cancelled = &recorder.closed;
    {
        let run = pin!(selector.run(&recorder));
        let canceller = pin!(async {
            while asked.next().await.is_some() {
                let mut done = cancelled.lock().expect("cancel flag");
                if !*done {
                    sim.record(c, EventKind::Closed);
                    *done = true;
                }
                selector.cancel();
            }
        });
        match select(run, canceller).await {
            Either::Left(_) => {}
            Either::Right(((), run)) => {
                let _ = run.await;
            }
        }
    }
    let ended_by_cancel = *cancelled.lock().expect("cancel flag");
    if !ended_by_cancel {
        // Ended by its session: closed all the same, as a process gives the selector up.
        sim.record(c, EventKind::Closed);
        selector.cancel();
    }
    recorder.terms.load(Ordering::Relaxed)
}

/// The election's default liveness bound, in ms: four terms of the longest hold
/// (5 ms + the 6000 ms session timeout) ahead of a contender, plus the lock's default
/// bound (13000 ms), rounded up.
pub const ELECTION_LIVENESS_BOUND_MS: u64 = 45_000;

/// zklock's election: a [`LeaderLatch`](zklock_recipe::election::LeaderLatch), or with
/// `selector`, a [`LeaderSelector`](zklock_recipe::election::LeaderSelector), on the
/// scenario's lock path. Its lock type is the shipped lock's, which the election's
/// workload never asks for.
#[derive(Clone, Debug, Default)]
pub struct ElectionRecipe {
    /// Selectors instead of latches. Default false.
    pub selector: bool,
}

impl ElectionRecipe {
    /// The selectors' election.
    pub fn selector() -> ElectionRecipe {
        ElectionRecipe { selector: true }
    }

    /// The scenario both shapes run in by default: the default, with each hold chosen
    /// between `hold_ms` and a session timeout longer (leaders that hold longer than the
    /// session), and a liveness bound of [`ELECTION_LIVENESS_BOUND_MS`] to match: a
    /// contender joins behind up to four others, each of which may lead that long.
    pub fn default_scenario() -> Scenario {
        let mut sc = Scenario {
            liveness_bound_ms: ELECTION_LIVENESS_BOUND_MS,
            ..Scenario::default()
        };
        sc.shape.holds_chosen = true;
        sc
    }
}

impl Recipe for ElectionRecipe {
    type Lock = super::ShippedLock;
    fn name(&self) -> String {
        if self.selector {
            "election-selector"
        } else {
            "election-latch"
        }
        .into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        super::ShippedRecipe::default().lock(client, role, path)
    }
    fn election(&self) -> Option<Election> {
        use zklock_recipe::election::{LeaderLatch, LeaderSelector};
        let contender: MakeContender = if self.selector {
            Arc::new(|c, _, path| {
                ElectionUnderTest::Selector(Box::new(
                    LeaderSelector::new(c, path).expect("the scenario's lock path is valid"),
                ))
            })
        } else {
            Arc::new(|c, _, path| {
                ElectionUnderTest::Latch(Box::new(
                    LeaderLatch::new(c, path).expect("the scenario's lock path is valid"),
                ))
            })
        };
        Some(Election { contender })
    }
    /// Contenders are ordered by sequence and a guid (the session's) only compared.
    fn symmetric(&self) -> bool {
        true
    }
    /// [`ElectionRecipe::default_scenario`].
    fn scenario(&self) -> Scenario {
        ElectionRecipe::default_scenario()
    }
}
