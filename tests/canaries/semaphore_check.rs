//! The exhaustive check (`zklock check`) runs the counting semaphore, and catches its
//! canary at the smallest bound that can show N + 1 holders of 2 leases: three clients of
//! one acquisition each, no fault. Two clients can never exceed two leases, so there the
//! canary passes every schedule, which is why three is the smallest bound.
//!
//! The counts are pinned, as the shipped lock's are (`checker/tests/exhaustive.rs`): a
//! change to the recipes' requests, the world's choices or the search shows up here.
//! Update them knowingly.

use zklock_canaries::{LEASE_OUTSIDE_LOCK_CAUGHT_BY, LeaseOutsideLock};
use zklock_checker::{Bounds, check_exhaustive};
use zklock_sim::{Scenario, SemaphoreRecipe};

fn bounds(clients: u32) -> Bounds {
    Bounds {
        clients,
        acquisitions_per_client: 1,
        faults_max: 0,
        // The unreduced search's counts, as docs/recipes.md gives them.
        symmetry: false,
        ..Bounds::default()
    }
}

#[test]
fn check_catches_a_lease_outside_the_inner_lock_at_three_clients_and_not_below() {
    let canary = LeaseOutsideLock::default();
    let two = check_exhaustive(&Scenario::default(), &canary, &bounds(2)).unwrap();
    assert!(two.complete && two.violation.is_none(), "{two}");
    assert_eq!((two.schedules, two.distinct_states), (162, 344), "{two}");

    let three = check_exhaustive(&Scenario::default(), &canary, &bounds(3)).unwrap();
    let run = three
        .violation
        .as_ref()
        .expect("the canary survived the check");
    assert!(run.violates(LEASE_OUTSIDE_LOCK_CAUGHT_BY), "{}", run.report);
    let v = run.report.verdict(LEASE_OUTSIDE_LOCK_CAUGHT_BY).unwrap();
    assert!(
        v.report
            .as_ref()
            .unwrap()
            .summary
            .starts_with("3 clients believed"),
        "{}",
        run.report
    );
    assert_eq!(
        (three.schedules, three.distinct_states),
        (24, 95),
        "{three}"
    );
}

/// With partial-order reduction the canary is caught at three clients too, and two
/// clients reach the same states in fewer schedules.
#[test]
fn check_with_partial_order_catches_a_lease_outside_the_inner_lock() {
    let canary = LeaseOutsideLock::default();
    let por = |clients| Bounds {
        partial_order: true,
        ..bounds(clients)
    };
    let two = check_exhaustive(&Scenario::default(), &canary, &por(2)).unwrap();
    assert!(two.complete && two.violation.is_none(), "{two}");
    assert_eq!((two.schedules, two.distinct_states), (139, 344), "{two}");
    let three = check_exhaustive(&Scenario::default(), &canary, &por(3)).unwrap();
    let run = three
        .violation
        .as_ref()
        .expect("the canary survived the reduced check");
    assert!(run.violates(LEASE_OUTSIDE_LOCK_CAUGHT_BY), "{}", run.report);
}

#[test]
fn check_runs_the_semaphore_every_schedule_of_two_clients_and_the_first_of_three() {
    let recipe = SemaphoreRecipe::default();
    let two = check_exhaustive(&Scenario::default(), &recipe, &bounds(2)).unwrap();
    assert!(two.complete && two.violation.is_none(), "{two}");
    assert_eq!(
        (two.schedules, two.distinct_states),
        (1_380, 3_594),
        "{two}"
    );

    // Three clients of one acquisition complete in 1,058,510 schedules (36 s of a release
    // build on 2 threads): the first 20,000 hold every property.
    let three = Bounds {
        schedules_max: 20_000,
        ..bounds(3)
    };
    let first = check_exhaustive(&Scenario::default(), &recipe, &three).unwrap();
    assert!(first.violation.is_none(), "{first}");
    assert!(!first.complete, "{first}");
    assert_eq!(
        (first.schedules, first.distinct_states),
        (20_000, 37_533),
        "{first}"
    );
}
