//! Bounded exhaustive checks of the shipped recipe.

use std::sync::Mutex;
use zklock_checker::{
    Bounds, CheckedRun, Checkpoint, CheckpointError, Control, Interrupt, PROGRESS_EVERY_SCHEDULES,
    SearchError, check_exhaustive_controlled, check_exhaustive_with,
};
use zklock_sim::{Scenario, ShippedRecipe};

#[test]
fn two_clients_one_fault_shipped_recipe_is_correct() {
    let calls = Mutex::new(Vec::new());
    let r = check_exhaustive_with(
        &Scenario::default(),
        &ShippedRecipe::default(),
        &Bounds::default(),
        &|run| run.failure().is_some(),
        &|schedules, states| calls.lock().unwrap().push((schedules, states)),
    )
    .unwrap();
    eprintln!("{r}");
    if let Some(v) = &r.violation {
        panic!("{}", v.report);
    }
    assert!(r.complete, "{r}");
    // Pinned, as stateright pins its state counts: a change to the recipe's requests, the
    // world's choices or the state digest shows up here. Update them knowingly.
    // With symmetry reduction and by what the lock keeps of replies (the defaults):
    // `tests/symmetry.rs` and `tests/keep_only.rs` pin the searches without each.
    assert!(r.symmetry && r.keep_only, "{r}");
    assert_eq!((r.schedules, r.distinct_states), (2_920, 7_265), "{r}");
    // Progress came every PROGRESS_EVERY_SCHEDULES schedules, its counts growing.
    let calls = calls.into_inner().unwrap();
    assert_eq!(calls.len() as u64, r.schedules / PROGRESS_EVERY_SCHEDULES);
    assert!(
        calls
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
    );
    assert!(calls.last().unwrap().1 <= r.distinct_states);
}

/// A check stopped by its schedule limit (several times over) and resumed from its
/// checkpoint, read back from bytes each time, runs exactly the schedules of a check run
/// in one go: the same counts, the same states, complete.
#[test]
fn a_check_resumed_from_checkpoints_equals_one_run_in_one_go() {
    let base = Scenario::default();
    let bounds = Bounds {
        faults_max: 1,
        ..Bounds::default()
    };
    let recipe = ShippedRecipe::default();
    let failing = |run: &CheckedRun| run.failure().is_some();
    let whole = check_exhaustive_with(&base, &recipe, &bounds, &failing, &|_, _| {}).unwrap();
    assert!(whole.complete && whole.violation.is_none(), "{whole}");
    assert!(whole.schedules > 100, "{whole}");
    let step = Bounds {
        // Three stops, then the rest: a part never ends exactly at the end.
        schedules_max: (whole.schedules - 1) / 3,
        ..bounds.clone()
    };
    let mut resume = None;
    let mut stops = 0;
    let last = loop {
        let control = Control {
            resume: resume.take(),
            checkpoint: true,
            ..Control::default()
        };
        let r = check_exhaustive_controlled(&base, &recipe, &step, &failing, &|_, _| {}, control)
            .unwrap();
        if r.complete {
            break r;
        }
        stops += 1;
        assert!(!r.interrupted && r.violation.is_none(), "{r}");
        let bytes = r
            .checkpoint
            .expect("a checkpoint of the stopped check")
            .to_bytes();
        resume = Some(Checkpoint::from_bytes(&bytes).unwrap());
    };
    assert_eq!(stops, 3);
    assert!(last.checkpoint.is_none());
    assert_eq!(
        (
            last.schedules,
            last.pruned,
            last.distinct_states,
            last.max_depth
        ),
        (
            whole.schedules,
            whole.pruned,
            whole.distinct_states,
            whole.max_depth
        )
    );
}

/// An interrupted check stops before its next schedule, says so, and its checkpoint
/// resumes it; a checkpoint of another check is refused and nothing runs.
#[test]
fn an_interrupted_check_resumes_and_a_foreign_checkpoint_is_refused() {
    let base = Scenario::default();
    let bounds = Bounds {
        faults_max: 0,
        ..Bounds::default()
    };
    let recipe = ShippedRecipe::default();
    let failing = |run: &CheckedRun| run.failure().is_some();
    let interrupt = Interrupt::new();
    interrupt.set();
    let control = Control {
        interrupt,
        checkpoint: true,
        ..Control::default()
    };
    let r = check_exhaustive_controlled(&base, &recipe, &bounds, &failing, &|_, _| {}, control)
        .unwrap();
    assert!(r.interrupted && !r.complete && r.schedules == 0, "{r}");
    let checkpoint = r.checkpoint.expect("a checkpoint of the interrupted check");
    let other = Bounds {
        clients: 3,
        ..bounds.clone()
    };
    let refused = check_exhaustive_controlled(
        &base,
        &recipe,
        &other,
        &failing,
        &|_, _| panic!("nothing runs"),
        Control {
            resume: Some(checkpoint.clone()),
            ..Control::default()
        },
    );
    assert!(
        matches!(
            refused,
            Err(SearchError::Checkpoint(CheckpointError::Mismatch {
                what: "scenario",
                ..
            }))
        ),
        "{refused:?}"
    );
    let resumed = check_exhaustive_controlled(
        &base,
        &recipe,
        &bounds,
        &failing,
        &|_, _| {},
        Control {
            resume: Some(checkpoint),
            ..Control::default()
        },
    )
    .unwrap();
    let whole = check_exhaustive_with(&base, &recipe, &bounds, &failing, &|_, _| {}).unwrap();
    assert!(resumed.complete, "{resumed}");
    assert_eq!(
        (resumed.schedules, resumed.distinct_states),
        (whole.schedules, whole.distinct_states)
    );
}

/// A search takes over, at each schedule's last replayed choice, the folds of what actors
/// were given that the schedule before had there, rather than fold the replay again
/// (`Control::fold_replayed_prefix` switches that off): every digest is the same, so
/// the same schedules run, the same are pruned, and the same final states are reached,
/// with symmetry on and off, with partial-order reduction, with clock reads (a
/// semaphore's try and timed attempts) and with the work queue.
#[test]
fn taking_over_a_replayed_prefixs_folds_changes_no_count_or_final_state() {
    use zklock_sim::{ModeKind, QueueRecipe, Recipe, SemaphoreRecipe, Shape};
    fn both<R: Recipe>(name: &str, recipe: &R, bounds: &Bounds) {
        let run = |fold_replayed_prefix| {
            let control = Control {
                final_states: true,
                fold_replayed_prefix,
                ..Control::default()
            };
            let failing = |_: &CheckedRun| false;
            check_exhaustive_controlled(
                &Scenario::default(),
                recipe,
                bounds,
                &failing,
                &|_, _| {},
                control,
            )
            .unwrap()
        };
        let (taken, folded) = (run(false), run(true));
        assert!(
            taken.complete && folded.complete,
            "{name}: {taken}; {folded}"
        );
        let counts = |r: &zklock_checker::ExhaustiveReport| {
            (r.schedules, r.pruned, r.distinct_states, r.max_depth)
        };
        assert_eq!(counts(&taken), counts(&folded), "{name}");
        assert_eq!(taken.final_states, folded.final_states, "{name}");
        assert!(taken.pruned > 0, "{name}: nothing pruned, nothing compared");
    }
    let bounds = |clients, faults_max| Bounds {
        clients,
        faults_max,
        ..Bounds::default()
    };
    let shipped = ShippedRecipe::default();
    both("2 clients, 1 fault", &shipped, &bounds(2, 1));
    let unreduced = Bounds {
        symmetry: false,
        ..bounds(2, 1)
    };
    both("2 clients, 1 fault, no symmetry", &shipped, &unreduced);
    let por = Bounds {
        partial_order: true,
        ..bounds(3, 0)
    };
    both("3 clients, partial order", &shipped, &por);
    let shaped = Bounds {
        shape: Shape {
            modes: vec![ModeKind::Try, ModeKind::Timed],
            ..Shape::fixed()
        },
        ..bounds(2, 0)
    };
    both(
        "semaphore, try and timed",
        &SemaphoreRecipe::default(),
        &shaped,
    );
    both("work queue", &QueueRecipe::default(), &bounds(2, 0));
}
