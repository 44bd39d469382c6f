//! The counting semaphore (`zklock explore --recipe semaphore`) runs clean over the
//! default budget with every fault, one lock or several, and fills its leases; its
//! canary, a lease taken outside the inner lock, is caught within the same budget, and
//! its minimized trace (`traces/semaphore/`) replays to `semaphore_leases`.

use std::path::PathBuf;
use zklock_canaries::{LEASE_OUTSIDE_LOCK, LEASE_OUTSIDE_LOCK_CAUGHT_BY, LeaseOutsideLock};
use zklock_checker::{Budget, ShrinkLimits, Trace, check_seed, explore, replay, shrink};
use zklock_sim::{Scenario, SemaphoreRecipe};

fn trace_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("traces/semaphore")
        .join(format!("{LEASE_OUTSIDE_LOCK}.json"))
}

#[test]
fn the_semaphore_passes_the_default_budget_with_every_fault_and_fills_its_leases() {
    let recipe = SemaphoreRecipe::default();
    for locks in [1, 3] {
        let scenario = Scenario {
            locks,
            ..Scenario::default()
        };
        let e = explore(&scenario, &recipe, &Budget::default(), &|_, _| {}).unwrap();
        assert!(
            e.failure.is_none(),
            "locks {locks}: {:?}",
            e.failure.map(|f| f.0)
        );
        assert_eq!(e.summary.seeds_run, Budget::default().seeds);
    }
    // Not vacuous: some run had both leases held at once.
    let full = (0..20).any(|seed| {
        let run = check_seed(&Scenario::default(), seed, &recipe);
        let v = run.report.verdict("semaphore_leases").expect("judged");
        v.note.as_deref() == Some("at most 2 of 2 leases held at once")
    });
    assert!(full, "no run held both leases at once");
}

#[test]
fn a_lease_outside_the_inner_lock_is_caught_within_the_default_budget() {
    let e = explore(
        &Scenario::default(),
        &LeaseOutsideLock::default(),
        &Budget::default(),
        &|_, _| {},
    )
    .unwrap();
    let (seed, run) = e.failure.expect("the canary survived the default budget");
    assert!(
        run.violates(LEASE_OUTSIDE_LOCK_CAUGHT_BY),
        "seed {seed}: {}",
        run.report
    );
    // Judged per lock too.
    let several = Scenario {
        locks: 2,
        ..Scenario::default()
    };
    let e = explore(
        &several,
        &LeaseOutsideLock::default(),
        &Budget::default(),
        &|_, _| {},
    )
    .unwrap();
    let (seed, run) = e.failure.expect("the canary survived two locks");
    assert!(
        run.violates(LEASE_OUTSIDE_LOCK_CAUGHT_BY),
        "seed {seed}: {}",
        run.report
    );
}

/// `ZKLOCK_BLESS=canary-lease-outside-lock cargo test semaphore` (re)writes the trace.
#[test]
fn the_lease_outside_lock_trace_replays_to_semaphore_leases() {
    let path = trace_path();
    if std::env::var("ZKLOCK_BLESS").is_ok_and(|b| b == LEASE_OUTSIDE_LOCK) {
        let scenario = Scenario::default();
        let e = explore(
            &scenario,
            &LeaseOutsideLock::default(),
            &Budget::default(),
            &|_, _| {},
        )
        .unwrap();
        let trace = e.failure_trace(LEASE_OUTSIDE_LOCK).expect("caught");
        let limits = ShrinkLimits {
            time_limit_ms: 3_600_000,
            ..ShrinkLimits::default()
        };
        let shrunk = shrink(&trace, &LeaseOutsideLock::default(), &limits).unwrap();
        assert!(!shrunk.time_limit_hit);
        shrunk.trace.write(&path).unwrap();
    }
    let trace = Trace::read(&path).unwrap();
    assert_eq!(trace.recipe, LEASE_OUTSIDE_LOCK);
    let run = replay(&trace, &LeaseOutsideLock::default()).unwrap();
    assert!(
        run.outcome.history == trace.history,
        "the replay parted from the trace"
    );
    assert!(run.violates(LEASE_OUTSIDE_LOCK_CAUGHT_BY), "{}", run.report);
    // Three holders of two leases: the smallest the bug needs.
    assert_eq!(trace.scenario.clients, 3, "{}", trace.scenario.clients);
}
