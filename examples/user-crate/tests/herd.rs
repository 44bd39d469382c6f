//! The herding lock and its fix, checked by zklock from plain tests, as zklock's docs/your-lock.md tells.

use user_crate::{QueueLock, Waits};
use zklock_checker::{Bounds, check_exhaustive, check_seeds};
use zklock_recipe::history::LockRole;
use zklock_sim::{Recipe, Scenario, SimClient};

/// The queue lock, waiting as told, for the simulation's clients.
struct Queue(Waits);

impl Recipe for Queue {
    type Lock = QueueLock<SimClient>;
    fn name(&self) -> String {
        match self.0 {
            Waits::OnDirectory => "herding-queue".into(),
            Waits::OnPredecessor => "queue".into(),
        }
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> Self::Lock {
        QueueLock::new(client, path, self.0)
    }
}

#[test]
fn the_herding_lock_is_caught_herding() {
    let err = check_seeds(&Scenario::default(), &Queue(Waits::OnDirectory), 0..200)
        .expect_err("a release that wakes every waiter is a herd");
    let failure = err.seed_failure().expect("a seed failed");
    assert_eq!(failure.failure, "no_herd", "{err}");
    // The report names the seed, the trace and the command that reproduces it.
    eprintln!("{err}");
}

#[test]
fn the_fix_passes_200_seeds() {
    let counters = check_seeds(&Scenario::default(), &Queue(Waits::OnPredecessor), 0..200).unwrap();
    // Not vacuous: waiters waited, and faults struck.
    assert!(counters.contended_acquisitions > 0, "{counters}");
}

#[test]
fn the_fix_passes_every_schedule_of_two_clients() {
    let report = check_exhaustive(
        &Scenario::default(),
        &Queue(Waits::OnPredecessor),
        &Bounds::default(),
    )
    .expect("the default bounds are within the limits");
    assert!(report.complete, "{report}");
    assert!(report.violation.is_none(), "{report}");
}

/// The measure of a sweep's speed (zklock docs/your-lock.md): `cargo test --
/// --ignored the_fix_passes_3000_seeds`.
#[test]
#[ignore = "3,000 seeds: run it to measure a sweep"]
fn the_fix_passes_3000_seeds() {
    let counters =
        check_seeds(&Scenario::default(), &Queue(Waits::OnPredecessor), 0..3000).unwrap();
    assert!(counters.contended_acquisitions > 0, "{counters}");
}
