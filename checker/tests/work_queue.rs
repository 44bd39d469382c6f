//! The work queue over the default budget (100 seeds, every fault on): both consumers
//! keep every safety and eventual property; the naive consumer's herd is flagged on every
//! seed, the herd-free consumer's never.

use zklock_checker::check_seed;
use zklock_checker::properties::queue::{
    completed, herd, item_exclusive, no_process_after_complete,
};
use zklock_sim::{QueueRecipe, Scenario};

/// The default budget of `zklock explore`.
const SEEDS: u64 = 100;

/// Runs every seed and returns the herd verdicts' per-item figures.
fn sweep(recipe: &QueueRecipe) -> Vec<(u64, bool, String)> {
    let scenario = Scenario::default();
    (0..SEEDS)
        .map(|seed| {
            let run = check_seed(&scenario, seed, recipe);
            assert!(
                run.outcome.error.is_none(),
                "seed {seed}: {:?}",
                run.outcome.error
            );
            for name in [
                item_exclusive::NAME,
                no_process_after_complete::NAME,
                completed::NAME,
            ] {
                let v = run
                    .report
                    .verdicts
                    .iter()
                    .find(|v| v.property == name)
                    .unwrap();
                assert!(v.ok, "{} seed {seed}: {}", recipe.naive, run.report);
            }
            let h = run
                .report
                .verdicts
                .iter()
                .find(|v| v.property == herd::NAME)
                .unwrap();
            (seed, h.ok, h.note.clone().unwrap_or_default())
        })
        .collect()
}

/// The herd figures of a sweep: (most consumers woken by one change, notifications per
/// completed item, listings per completed item), each as (min, mean, max), from the
/// verdicts' notes. `cargo test -p zklock-checker --test suite work_queue:: -- --nocapture`
/// prints them (docs/recipes.md quotes them).
fn figures(name: &str, notes: &[String]) -> [(f64, f64, f64); 3] {
    let parse = |note: &str| -> [f64; 3] {
        let words: Vec<&str> = note.split_whitespace().collect();
        let at = |w: &str| words.iter().position(|x| *x == w).unwrap();
        [
            words[at("most") + 1].parse().unwrap(),
            words[at("watch") - 1].parse().unwrap(),
            words[at("getChildren") - 1].parse().unwrap(),
        ]
    };
    let all: Vec<[f64; 3]> = notes.iter().map(|n| parse(n)).collect();
    let stat = |k: usize| {
        let v: Vec<f64> = all.iter().map(|a| a[k]).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        (
            v.iter().copied().fold(f64::MAX, f64::min),
            mean,
            v.iter().copied().fold(0.0, f64::max),
        )
    };
    let f = [stat(0), stat(1), stat(2)];
    eprintln!(
        "{name}: woken by one change {:?}; notifications per item {:.2}/{:.2}/{:.2}; \
         listings per item {:.2}/{:.2}/{:.2} (min/mean/max over {SEEDS} seeds)",
        f[0], f[1].0, f[1].1, f[1].2, f[2].0, f[2].1, f[2].2
    );
    f
}

#[test]
fn the_herd_free_queue_keeps_every_property_over_the_default_budget() {
    let runs = sweep(&QueueRecipe::default());
    for (seed, ok, note) in &runs {
        assert!(ok, "seed {seed}: {note}");
    }
    let notes: Vec<String> = runs.into_iter().map(|r| r.2).collect();
    let [woken, ..] = figures("queue", &notes);
    // Not vacuous: changes did wake consumers.
    assert!(woken.2 >= 1.0, "{woken:?}");
}

#[test]
fn the_naive_queue_keeps_safety_and_completion_and_its_herd_is_flagged_on_every_seed() {
    let runs = sweep(&QueueRecipe::naive());
    for (seed, ok, note) in &runs {
        assert!(!ok, "seed {seed}: {note}");
    }
    let notes: Vec<String> = runs.into_iter().map(|r| r.2).collect();
    figures("queue-naive", &notes);
}

/// Every schedule of one producer and one consumer with one fault, crashes included: a
/// consumer that crashes mid-item leaves its item to nobody, which is no fault of the
/// queue's (the simulation restarts no process), yet its item lock must go with its
/// session. Both consumers hold; the counts are pinned, update them knowingly.
#[test]
fn a_sole_consumer_that_crashes_mid_item_is_no_violation_but_every_schedule_is_judged() {
    use zklock_checker::{Bounds, check_exhaustive};
    let bounds = Bounds {
        clients: 2,
        acquisitions_per_client: 1,
        faults_max: 1,
        ..Bounds::default()
    };
    for (recipe, schedules) in [
        (QueueRecipe::default(), 18_801),
        (QueueRecipe::naive(), 10_245),
    ] {
        let r = check_exhaustive(&Scenario::default(), &recipe, &bounds).unwrap();
        assert!(r.complete && r.violation.is_none(), "{r}");
        assert_eq!(r.schedules, schedules, "{r}");
    }
}

/// Regression: the check of three consumers and two items with a fault reported the
/// herd-free queue as a herd at schedule 12,688, where two deletes applied at one
/// instant (the check's requests take no time) each woke one consumer. The naive queue's
/// herd is still found there. `zklock check --recipe queue --clients 4 --acquisitions 2
/// --faults-max 1`.
#[test]
fn the_herd_free_queue_is_no_herd_where_two_writes_at_one_instant_wake_one_consumer_each() {
    use zklock_checker::{Bounds, check_exhaustive};
    let bounds = |schedules_max| Bounds {
        clients: 4,
        acquisitions_per_client: 2,
        faults_max: 1,
        schedules_max,
        threads: 1,
        ..Bounds::default()
    };
    let shipped = check_exhaustive(
        &Scenario::default(),
        &QueueRecipe::default(),
        &bounds(20_000),
    )
    .unwrap();
    assert!(shipped.violation.is_none(), "{shipped}");
    assert_eq!(shipped.schedules, 20_000, "{shipped}");
    let naive =
        check_exhaustive(&Scenario::default(), &QueueRecipe::naive(), &bounds(20_000)).unwrap();
    let run = naive
        .violation
        .as_ref()
        .expect("the naive queue's herd was missed");
    assert!(run.violates(herd::NAME), "{}", run.report);
}
