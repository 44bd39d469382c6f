//! Soundness evidence for partial-order reduction (see `zklock_checker::partial_order`):
//! on every configuration the unreduced search completes, the reduced search reaches the
//! same verdict, the same distinct states (sleep sets visit every state) and the same
//! final states. Both searches' state and schedule counts are pinned, as stateright pins
//! its examples': a change to the world, the recipe or the independence relation shows
//! up here. Update them knowingly.

use crate::common::evidence::scenario_and_bounds;
use zklock_checker::Bounds;
use zklock_checker::partial_order::{Evidence, compare};
use zklock_sim::{Recipe, Scenario, SemaphoreRecipe, ShippedRecipe};

/// A configuration, its distinct states, and its (reduced, unreduced) schedules.
struct Case {
    name: &'static str,
    clients: u32,
    faults_max: u32,
    readers: u32,
    locks: u32,
    symmetry: bool,
    states: u64,
    schedules: (u64, u64),
}

fn evidence<R: Recipe>(recipe: &R, c: &Case) -> Evidence {
    let (base, bounds) = scenario_and_bounds(c.clients, c.faults_max, c.readers, c.locks);
    let bounds = Bounds {
        symmetry: c.symmetry,
        ..bounds
    };
    compare(&base, recipe, &bounds, &|r| r.failure().is_some()).unwrap()
}

fn check_all<R: Recipe>(recipe: &R, cases: &[Case]) {
    let mut wrong = Vec::new();
    for c in cases {
        let e = evidence(recipe, c);
        eprintln!(
            "{}: reduced {}; unreduced {}; schedules / {:.2}",
            c.name,
            e.reduced,
            e.unreduced,
            e.reduction()
        );
        assert!(e.reduced.partial_order && !e.unreduced.partial_order);
        if let Err(why) = e.agrees() {
            panic!("{}: {why}", c.name);
        }
        assert!(e.reduced.violation.is_none(), "{}", c.name);
        let got = (
            e.reduced.distinct_states,
            (e.reduced.schedules, e.unreduced.schedules),
        );
        if got != (c.states, c.schedules) {
            wrong.push(format!(
                "{}: {got:?}, pinned {:?}",
                c.name,
                (c.states, c.schedules)
            ));
        }
    }
    assert!(wrong.is_empty(), "counts changed:\n{}", wrong.join("\n"));
}

#[allow(clippy::too_many_arguments)]
fn case(
    name: &'static str,
    clients: u32,
    faults_max: u32,
    readers: u32,
    locks: u32,
    symmetry: bool,
    states: u64,
    schedules: (u64, u64),
) -> Case {
    Case {
        name,
        clients,
        faults_max,
        readers,
        locks,
        symmetry,
        states,
        schedules,
    }
}

#[test]
fn partial_order_reduction_keeps_two_clients_verdicts_and_states() {
    check_all(
        &ShippedRecipe::default(),
        &[
            case("2 clients, 0 faults", 2, 0, 0, 1, false, 252, (112, 120)),
            case(
                "2 clients, 1 fault",
                2,
                1,
                0,
                1,
                false,
                14_520,
                (6_105, 5_756),
            ),
        ],
    );
}

#[test]
fn partial_order_reduction_keeps_readers_and_writers_verdicts_and_states() {
    check_all(
        &ShippedRecipe::default(),
        &[
            case(
                "2 readers, 1 fault",
                2,
                1,
                2,
                1,
                false,
                12_226,
                (6_893, 6_442),
            ),
            case(
                "1 reader 1 writer, 1 fault",
                2,
                1,
                1,
                1,
                false,
                14_513,
                (6_105, 5_756),
            ),
        ],
    );
}

/// With symmetry reduction too: the same verdict, states and final states (up to
/// permutation) as symmetry alone.
#[test]
fn partial_order_with_symmetry_keeps_two_clients_verdicts_and_states() {
    check_all(
        &ShippedRecipe::default(),
        &[case(
            "2 clients, 1 fault, symmetric",
            2,
            1,
            0,
            1,
            true,
            7_265,
            (3_380, 2_920),
        )],
    );
}

// The larger configurations take minutes in a debug build:
// `cargo test --release -p zklock-checker --test suite partial_order:: -- --ignored`.

#[test]
#[ignore = "minutes in a debug build; run with --release -- --ignored"]
fn partial_order_reduction_keeps_three_clients_and_two_locks_verdicts_and_states() {
    check_all(
        &ShippedRecipe::default(),
        &[
            case(
                "2 clients, 2 locks, 1 fault",
                2,
                1,
                0,
                2,
                false,
                58_142,
                (26_624, 25_068),
            ),
            case(
                "3 clients, 0 faults",
                3,
                0,
                0,
                1,
                false,
                8_026,
                (8_585, 9_010),
            ),
            case(
                "3 clients, 0 faults, symmetric",
                3,
                0,
                0,
                1,
                true,
                1_356,
                (7_061, 1_535),
            ),
        ],
    );
}

#[test]
#[ignore = "minutes in a debug build; run with --release -- --ignored"]
fn partial_order_reduction_keeps_the_semaphores_verdicts_and_states() {
    check_all(
        &SemaphoreRecipe::default(),
        &[case(
            "semaphore, 2 clients, 1 fault",
            2,
            1,
            0,
            1,
            false,
            250_237,
            (80_557, 79_054),
        )],
    );
}

/// A checkpoint holds no sleep sets: a reduced search stopped early keeps none, and one
/// of an unreduced search is refused by a reduced one rather than resumed unsoundly.
#[test]
fn a_reduced_search_takes_no_checkpoint_and_resumes_none() {
    use zklock_checker::{Control, SearchError, check_exhaustive_controlled};
    let base = Scenario::default();
    let recipe = ShippedRecipe::default();
    let bounds = |partial_order| Bounds {
        faults_max: 0,
        schedules_max: 10,
        partial_order,
        ..Bounds::default()
    };
    let search = |partial_order, resume| {
        let control = Control {
            checkpoint: true,
            resume,
            ..Control::default()
        };
        check_exhaustive_controlled(
            &base,
            &recipe,
            &bounds(partial_order),
            &|_| false,
            &|_, _| {},
            control,
        )
    };
    let reduced = search(true, None).unwrap();
    assert!(
        !reduced.complete && reduced.checkpoint.is_none(),
        "{reduced}"
    );
    let unreduced = search(false, None).unwrap();
    let checkpoint = unreduced.checkpoint.expect("an unreduced search keeps one");
    match search(true, Some(checkpoint)) {
        Err(SearchError::Checkpoint(e)) => {
            assert!(e.to_string().contains("partial-order"), "{e}")
        }
        other => panic!("resumed: {other:?}"),
    }
}
