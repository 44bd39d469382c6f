//! The exhaustive search on several threads (see `zklock_checker::parallel`) against the
//! search on one: on every configuration here, which the suite completes, the same
//! verdict, the same distinct states and the same final states, whatever the number of
//! threads. (Every canary's report is compared in `tests/canaries/cases.rs`.)

use zklock_checker::{Bounds, Control, ExhaustiveReport, check_exhaustive_controlled};
use zklock_sim::{Recipe, Scenario, SemaphoreRecipe, ShippedRecipe};

fn search<R: Recipe>(recipe: &R, base: &Scenario, bounds: &Bounds) -> ExhaustiveReport {
    let control = Control {
        final_states: true,
        ..Control::default()
    };
    check_exhaustive_controlled(
        base,
        recipe,
        bounds,
        &|r| r.failure().is_some(),
        &|_, _| {},
        control,
    )
    .unwrap()
}

/// The search on one thread, 2 and 3: the same verdict, states and final states. The
/// one-thread report comes back.
fn same_on_every_thread_count<R: Recipe>(
    recipe: &R,
    name: &str,
    base: &Scenario,
    b: Bounds,
) -> ExhaustiveReport {
    let one = search(
        recipe,
        base,
        &Bounds {
            threads: 1,
            ..b.clone()
        },
    );
    assert!(one.complete, "{name}: {one}");
    assert_eq!(one.threads, 1);
    for threads in [2, 3] {
        let many = search(
            recipe,
            base,
            &Bounds {
                threads,
                ..b.clone()
            },
        );
        eprintln!("{name}: one thread {one}; {threads} threads {many}");
        assert_eq!(many.threads, threads, "{name}");
        assert!(many.complete, "{name}, {threads} threads: {many}");
        assert_eq!(
            many.violation.is_some(),
            one.violation.is_some(),
            "{name}, {threads} threads"
        );
        assert_eq!(
            many.distinct_states, one.distinct_states,
            "{name}, {threads} threads"
        );
        assert_eq!(
            many.final_states, one.final_states,
            "{name}, {threads} threads: final states differ"
        );
    }
    one
}

#[test]
fn a_search_on_several_threads_reaches_the_states_and_final_states_of_one() {
    let lock = ShippedRecipe::default();
    let bounds = |clients, faults_max, symmetry| Bounds {
        clients,
        faults_max,
        symmetry,
        ..Bounds::default()
    };
    let plain = Scenario::default();
    same_on_every_thread_count(&lock, "2 clients, 0 faults", &plain, bounds(2, 0, true));
    same_on_every_thread_count(&lock, "2 clients, 1 fault", &plain, bounds(2, 1, true));
    same_on_every_thread_count(
        &lock,
        "2 clients, 1 fault, symmetry off",
        &plain,
        bounds(2, 1, false),
    );
    same_on_every_thread_count(&lock, "3 clients, 0 faults", &plain, bounds(3, 0, true));
    let rw = Scenario {
        readers: 1,
        ..Scenario::default()
    };
    same_on_every_thread_count(&lock, "1 reader 1 writer, 1 fault", &rw, bounds(2, 1, true));
    same_on_every_thread_count(
        &SemaphoreRecipe::default(),
        "semaphore of 2, 2 clients, 0 faults",
        &plain,
        bounds(2, 0, true),
    );
}

/// A bound stops the threads as it stops one: never more schedules than the bound.
#[test]
fn a_search_on_several_threads_stops_at_its_schedule_bound() {
    let b = Bounds {
        clients: 3,
        faults_max: 1,
        schedules_max: 500,
        threads: 2,
        ..Bounds::default()
    };
    let r = search(&ShippedRecipe::default(), &Scenario::default(), &b);
    assert!(!r.complete, "{r}");
    assert_eq!(r.schedules, 500, "{r}");
    assert!(r.violation.is_none(), "{r}");
}

/// 3 clients with a fault, on one thread and on two: the same states and final states,
/// pinned (`tests/keep_only.rs` pins the search that tells every reply apart whole).
#[test]
fn three_clients_with_a_fault_complete_with_the_same_states_on_one_thread_and_two() {
    let b = Bounds {
        clients: 3,
        faults_max: 1,
        schedules_max: u64::MAX,
        time_limit_ms: 3_600_000,
        ..Bounds::default()
    };
    let lock = ShippedRecipe::default();
    let plain = Scenario::default();
    let one = same_on_every_thread_count(&lock, "3 clients, 1 fault", &plain, b);
    assert!(one.violation.is_none(), "{one}");
    assert_eq!(one.distinct_states, 74_950, "{one}");
}
