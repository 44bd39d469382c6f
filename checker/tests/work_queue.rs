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

#[test]
fn the_herd_free_queue_keeps_every_property_over_the_default_budget() {
    for (seed, ok, note) in sweep(&QueueRecipe::default()) {
        assert!(ok, "seed {seed}: {note}");
    }
}

#[test]
fn the_naive_queue_keeps_safety_and_completion_and_its_herd_is_flagged_on_every_seed() {
    for (seed, ok, note) in sweep(&QueueRecipe::naive()) {
        assert!(!ok, "seed {seed}: {note}");
    }
}
