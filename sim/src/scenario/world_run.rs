//! What every scenario's run does around its workload, whichever runs it (the lock
//! workload in `runner`, the work queue's in `work_queue`): arm the world, let it settle
//! once the clients are done, take its outcome; and the hold lengths both draw.

use super::Scenario;
use crate::chooser::ChoiceKind;
use crate::world::FaultPlan;
use crate::{Sim, SimClient, SimError};
use std::time::Duration;
use zklock_recipe::history::History;
use zklock_recipe::work_queue::QueuePaths;

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub history: History,
    /// Every choice drawn: with the scenario and seed, a replayable schedule.
    pub choices: Vec<u32>,
    /// Children of the lock directory once every client was done and every dead session
    /// had expired: a node left here is an orphan. In a run of several locks, the first
    /// lock's.
    pub final_lock_children: Vec<String>,
    /// The same for each lock directory, in [`Scenario::lock_paths`] order.
    pub final_children_by_lock: Vec<Vec<String>>,
    /// Why the world stopped early, if it did (a stuck waiter, a limit).
    pub error: Option<SimError>,
    /// The recipe's [`Recipe::leases`](super::Recipe::leases): `Some(n)` for a semaphore
    /// of `n` leases.
    pub leases: Option<u32>,
    /// The queue's directories, for a run of a work queue
    /// ([`Recipe::work_queue`](super::Recipe::work_queue)),
    /// whose `final_children_by_lock` then holds the final children of the queue
    /// directory and of the item locks' directory, in that order.
    pub work_queue: Option<QueuePaths>,
    /// Whether the run was a leader election's
    /// ([`Recipe::election`](super::Recipe::election)), judged by the election's
    /// properties besides the lock's.
    pub election: bool,
    pub faults_injected: u64,
    pub steps: u64,
    pub end_time_us: u64,
}

/// Arms the world for `scenario`: its faults, the lock directories' counters, room for
/// the history.
pub(super) fn prepare_world(sim: &Sim, scenario: &Scenario, lock_paths: &[String], roles: &[u32]) {
    let mut w = sim.shared.world();
    w.faults = Some(FaultPlan::new(
        &scenario.faults,
        scenario.fault_mode,
        scenario.heal_ms,
        scenario.shape.fault_durations_chosen,
    ));
    w.priorities = scenario.priorities.map(crate::world::PriorityOrder::new);
    // Clients of one role are interchangeable, for an explorer's symmetric digests.
    w.set_roles(roles);
    if scenario.sequence_start != 0 {
        for path in lock_paths {
            w.tree.start_sequence_at(path, scenario.sequence_start);
        }
    }
    // Room for a typical run's history (some 15 events an acquisition), so that it is
    // not copied over and over as it grows.
    let acquisitions = u64::from(scenario.clients) * u64::from(scenario.acquisitions_per_client);
    w.history.reserve(acquisitions.min(1 << 16) as usize * 16);
}

/// Lets dead sessions expire and background cleanups finish, so that what remains is a
/// true orphan: a crash or a cleanup may come after the last client is done.
pub(super) async fn settle(sim: &Sim, scenario: &Scenario) {
    let settle = Duration::from_millis(scenario.session_timeout_ms + 1000);
    sim.sleep(settle).await;
    for _ in 0..SETTLE_WAITS_MAX {
        if !sim.settling() {
            break;
        }
        sim.sleep(settle).await;
    }
}

/// The outcome of a finished world: its history and choices are moved out, not copied;
/// `dirs`' final children are read from the tree.
pub(super) fn outcome(
    sim: &Sim,
    dirs: &[String],
    error: Option<SimError>,
    leases: Option<u32>,
    work_queue: Option<QueuePaths>,
) -> RunOutcome {
    let mut w = sim.shared.world();
    if error != Some(SimError::Pruned) {
        w.report_final_state();
    }
    let final_children_by_lock: Vec<Vec<String>> = dirs
        .iter()
        .map(|p| w.tree.children(p).unwrap_or_default())
        .collect();
    RunOutcome {
        history: History {
            events: std::mem::take(&mut w.history),
        },
        choices: std::mem::take(&mut w.choices),
        final_lock_children: final_children_by_lock[0].clone(),
        final_children_by_lock,
        error,
        leases,
        work_queue,
        election: false,
        faults_injected: w.faults.as_ref().map_or(0, |f| f.injected),
        steps: w.steps,
        end_time_us: w.now_us,
    }
}

/// Further waits of a session timeout (and a second) for the world to settle after the
/// first, at most.
const SETTLE_WAITS_MAX: u32 = 10;

/// How long this hold lasts: `hold_ms`, or the chooser's pick of
/// [`hold_lengths_ms`](super::shape::hold_lengths_ms) when the shape chooses holds.
pub(super) async fn hold_length(sim: &Sim, c: &SimClient, sc: &Scenario) -> Duration {
    let ms = if sc.shape.holds_chosen {
        let lengths = super::shape::hold_lengths_ms(sc.hold_ms, sc.session_timeout_ms);
        lengths[sim.choose(c, ChoiceKind::HoldLength, lengths.len()).await]
    } else {
        sc.hold_ms
    };
    Duration::from_millis(ms)
}
