//! Soundness evidence for counting states by what a recipe keeps of a reply (see
//! `zklock_checker::keep_only`): on every configuration the search that tells every
//! reply apart completes, the search by what the shipped lock keeps reaches the same
//! verdict and the same final states. Both searches' state counts are pinned, as
//! stateright pins its examples': a change to the world, the recipe or the digest shows
//! up here. Update them knowingly.

use crate::common::evidence::{Case, check_pinned};
use zklock_checker::keep_only::compare;
use zklock_sim::ShippedRecipe;

/// Each configuration's evidence: both searches, compared, their counts pinned.
fn pinned(cases: &[Case]) {
    let evidence = |c: &Case| {
        let (base, bounds) = c.scenario_and_bounds();
        compare(&base, &ShippedRecipe::default(), &bounds, &|r| {
            r.failure().is_some()
        })
        .unwrap()
    };
    check_pinned(cases, evidence, |r| r.keep_only);
}

// The two largest configurations are tests of their own, so that they run beside the
// others rather than after them.
#[test]
fn counting_by_what_the_lock_keeps_keeps_its_verdicts_and_final_states() {
    let case = Case::new;
    pinned(&[
        case("2 clients, 0 faults", 2, 0, 0, 1, (128, 253)),
        case("2 clients, 1 fault", 2, 1, 0, 1, (7_265, 13_792)),
        case("2 readers, 1 fault", 2, 1, 2, 1, (6_117, 11_489)),
        case("1 reader 1 writer, 1 fault", 2, 1, 1, 1, (14_513, 27_567)),
        case("2 clients, 2 locks, 1 fault", 2, 1, 0, 2, (29_109, 42_163)),
        case("3 clients, 0 faults", 3, 0, 0, 1, (1_356, 11_177)),
        case("1 reader 2 writers, 0 faults", 3, 0, 1, 1, (4_030, 33_472)),
    ]);
}

#[test]
fn the_same_verdict_and_final_states_at_two_clients_with_two_faults() {
    pinned(&[Case::new(
        "2 clients, 2 faults",
        2,
        2,
        0,
        1,
        (375_558, 702_455),
    )]);
}

#[test]
fn the_same_verdict_and_final_states_at_three_clients_with_a_fault() {
    pinned(&[Case::new(
        "3 clients, 1 fault",
        3,
        1,
        0,
        1,
        (74_950, 602_835),
    )]);
}
