//! A search on several threads stopped by its schedule bound keeps every unfinished job
//! in its checkpoint (see `zklock_checker::parallel` and `zklock_checker::checkpoint`):
//! resumed, on two threads or on one, over several stops, it completes with the distinct
//! states, final states and verdict of one search run in one go; a canary resumed on two
//! threads reports the violation of the search on one. The schedule counts of several
//! threads vary between runs (work done in vain), so only states are compared; every
//! stop is by `schedules_max`, never by the clock.

use crate::common::Deaf;
use std::collections::BTreeSet;
use zklock_checker::{
    Bounds, CheckedRun, Checkpoint, Control, ExhaustiveReport, Interrupt, PROGRESS_EVERY_SCHEDULES,
    Subtree, check_exhaustive_controlled,
};
use zklock_sim::{Recipe, Scenario, ShippedRecipe};

fn failing(run: &CheckedRun) -> bool {
    run.failure().is_some()
}

fn search<R: Recipe>(recipe: &R, bounds: &Bounds, resume: Option<Checkpoint>) -> ExhaustiveReport {
    let control = Control {
        resume,
        checkpoint: true,
        final_states: true,
        ..Control::default()
    };
    let r = check_exhaustive_controlled(
        &Scenario::default(),
        recipe,
        bounds,
        &failing,
        &|_, _| {},
        control,
    )
    .unwrap();
    assert_eq!(
        r.checkpoint.is_some(),
        !r.complete && r.violation.is_none(),
        "{r}"
    );
    r
}

/// The search on one thread, run in one go: what every search in parts must match.
fn in_one_go<R: Recipe>(recipe: &R, bounds: &Bounds) -> ExhaustiveReport {
    let one = Bounds {
        threads: 1,
        ..bounds.clone()
    };
    search(recipe, &one, None)
}

/// What a search in parts ended with: its last report, the union of every part's final
/// states, and how many times a bound stopped it.
struct Parts {
    last: ExhaustiveReport,
    final_states: BTreeSet<u128>,
    stops: usize,
}

/// Runs `bounds` in parts of `step` schedules, part `i` on `threads(i)` threads, each
/// resuming from the checkpoint (read back from its bytes) of the one before, until the
/// search completes or finds a violation.
fn in_parts<R: Recipe>(
    recipe: &R,
    bounds: &Bounds,
    first: Option<Checkpoint>,
    step: u64,
    threads: impl Fn(usize) -> usize,
) -> Parts {
    let mut resume = first;
    let mut final_states = BTreeSet::new();
    let mut stops = 0;
    loop {
        let b = Bounds {
            schedules_max: step,
            threads: threads(stops),
            ..bounds.clone()
        };
        let r = search(recipe, &b, resume.take());
        final_states.extend(r.final_states.iter().flatten());
        let Some(c) = &r.checkpoint else {
            return Parts {
                last: r,
                final_states,
                stops,
            };
        };
        stops += 1;
        assert!(stops < 1000, "{r}");
        assert!(!r.interrupted, "{r}");
        // A worker's job each, and at most one queued.
        assert!(
            !c.work.is_empty() && c.work.len() <= 3,
            "{:?}",
            c.work.len()
        );
        resume = Some(Checkpoint::from_bytes(&c.to_bytes()).unwrap());
    }
}

fn same_as_in_one_go(name: &str, whole: &ExhaustiveReport, parts: &Parts) {
    let last = &parts.last;
    eprintln!(
        "{name}: in one go {whole}; in {} parts {last}",
        parts.stops + 1
    );
    assert!(parts.stops >= 2, "{name}: {last}");
    assert!(last.complete, "{name}: {last}");
    assert_eq!(
        last.violation.is_some(),
        whole.violation.is_some(),
        "{name}"
    );
    assert_eq!(last.distinct_states, whole.distinct_states, "{name}");
    assert_eq!(
        Some(&parts.final_states),
        whole.final_states.as_ref(),
        "{name}: final states differ"
    );
}

#[test]
fn a_search_on_two_threads_stopped_and_resumed_reaches_the_states_of_one_go() {
    let lock = ShippedRecipe::default();
    for (clients, faults_max, step) in [(2, 1, 900), (3, 0, 500)] {
        let bounds = Bounds {
            clients,
            faults_max,
            symmetry: true,
            ..Bounds::default()
        };
        let whole = in_one_go(&lock, &bounds);
        assert!(whole.complete && whole.symmetry, "{whole}");
        let name = format!("{clients}c/{faults_max}f");
        let on_two = in_parts(&lock, &bounds, None, step, |_| 2);
        same_as_in_one_go(&format!("{name}, on two threads"), &whole, &on_two);
        // Stopped on two threads, resumed on one; then on two and one by turns.
        let on_one = in_parts(&lock, &bounds, None, step, |i| if i == 0 { 2 } else { 1 });
        same_as_in_one_go(&format!("{name}, then on one"), &whole, &on_one);
        let by_turns = in_parts(&lock, &bounds, None, step, |i| 2 - i % 2);
        same_as_in_one_go(&format!("{name}, by turns"), &whole, &by_turns);
    }
}

/// An interrupt (Ctrl-C) stops the threads between two runs as a bound does, and their
/// checkpoint resumes: set at the first progress report, so that the stop does not hang
/// on the machine's speed, after that many schedules at least.
#[test]
fn an_interrupted_search_on_two_threads_keeps_its_work_and_resumes_to_the_states_of_one_go() {
    let lock = ShippedRecipe::default();
    let bounds = Bounds {
        clients: 2,
        faults_max: 1,
        threads: 2,
        ..Bounds::default()
    };
    let whole = in_one_go(&lock, &bounds);
    let interrupt = Interrupt::new();
    let control = Control {
        interrupt: interrupt.clone(),
        checkpoint: true,
        final_states: true,
        ..Control::default()
    };
    let stopped = check_exhaustive_controlled(
        &Scenario::default(),
        &lock,
        &bounds,
        &failing,
        &|_, _| interrupt.set(),
        control,
    )
    .unwrap();
    assert!(stopped.interrupted && !stopped.complete, "{stopped}");
    assert!(stopped.schedules >= PROGRESS_EVERY_SCHEDULES, "{stopped}");
    let c = stopped
        .checkpoint
        .expect("a checkpoint of the interrupted search");
    assert_eq!(c.schedules, stopped.schedules);
    let resumed = search(
        &lock,
        &bounds,
        Some(Checkpoint::from_bytes(&c.to_bytes()).unwrap()),
    );
    assert!(resumed.complete && resumed.violation.is_none(), "{resumed}");
    assert_eq!(resumed.distinct_states, whole.distinct_states, "{resumed}");
    let mut final_states = stopped.final_states.unwrap();
    final_states.extend(resumed.final_states.unwrap());
    assert_eq!(Some(final_states), whole.final_states);
}

/// The work of two threads, made by hand so that it does not hang on their timing: the
/// whole tree split at its first choice, before any run, the first alternative in one
/// subtree and the rest in another (as a worker splits its job). Resumed on one thread,
/// the subtrees run one after the other, and on two at once: the states of one go either
/// way.
#[test]
fn a_checkpoint_of_several_subtrees_resumes_on_one_thread_or_two() {
    let lock = ShippedRecipe::default();
    let bounds = Bounds {
        clients: 2,
        faults_max: 0,
        ..Bounds::default()
    };
    let whole = in_one_go(&lock, &bounds);
    let split = Checkpoint {
        work: vec![
            Subtree {
                root_len: 0,
                next_prefix: Vec::new(),
                caps: vec![(0, 1)],
            },
            Subtree::from_prefix(vec![1]),
        ],
        ..Checkpoint::start_reduced(
            "zklock",
            &bounds.scenario(&Scenario::default()),
            true,
            true,
            true,
        )
    };
    let split = Checkpoint::from_bytes(&split.to_bytes()).unwrap();
    for threads in [1, 2] {
        let b = Bounds {
            threads,
            ..bounds.clone()
        };
        let r = search(&lock, &b, Some(split.clone()));
        assert!(r.complete, "{r}");
        assert_eq!(r.distinct_states, whole.distinct_states, "{threads}: {r}");
        assert_eq!(r.final_states, whole.final_states, "{threads}: {r}");
    }
}

#[test]
fn a_canary_stopped_before_its_violation_and_resumed_on_two_threads_reports_the_same_one() {
    let deaf = Deaf(ShippedRecipe::default());
    let bounds = Bounds::default();
    let one = in_one_go(&deaf, &bounds);
    let v = one
        .violation
        .as_ref()
        .expect("the canary is caught on one thread");
    assert!(one.schedules > 1, "{one}");
    // One schedule, the first (no violation: the search on one thread found none there),
    // then parts of a few hundred on two threads until the violation.
    let first = search(
        &deaf,
        &Bounds {
            schedules_max: 1,
            threads: 2,
            ..bounds.clone()
        },
        None,
    );
    assert!(first.violation.is_none() && !first.complete, "{first}");
    let parts = in_parts(&deaf, &bounds, first.checkpoint, 300, |_| 2);
    let last = &parts.last;
    eprintln!(
        "one thread {one}; after {} stops on two {last}",
        parts.stops + 1
    );
    let found = last
        .violation
        .as_ref()
        .expect("the canary is caught on two threads");
    assert_eq!(found.failure(), v.failure());
    assert_eq!(found.outcome.choices, v.outcome.choices);
    assert_eq!(found.report_text(), v.report_text());
    assert_eq!(last.schedules, one.schedules, "{last}");
}
