//! Every canary carries the scenario that shows its bug (`Recipe::scenario`), so that
//! `zklock explore --recipe NAME` with no other flag catches it: from each of 20 starting
//! seeds, within the command line's default budget of seeds.

use zklock_checker::Budget;
use zklock_checker::registry::Recipes;

/// Twenty starting seeds, far apart.
fn starts() -> impl Iterator<Item = u64> {
    (0..20u64).map(|i| i * 100_000)
}

#[test]
fn every_canary_is_caught_in_its_own_scenario_from_twenty_starting_seeds() {
    let mut recipes = Recipes::shipped();
    zklock_canaries::register_all(&mut recipes).unwrap();
    let mut canaries = 0;
    for entry in &recipes {
        if !entry.name().starts_with("canary-") {
            continue;
        }
        canaries += 1;
        let recipe = entry.recipe();
        let scenario = recipe.scenario();
        for start in starts() {
            let budget = Budget {
                seed_start: start,
                seeds: zklock::SEEDS_DEFAULT,
                ..Budget::default()
            };
            let e = recipe.explore(&scenario, &budget, &|_, _| {}).unwrap();
            // Caught: explore exits 1. The property may be another than the one the canary
            // is named for (the wrap canary's second holder can show first as a token out
            // of order); tests/canaries/cases.rs pins each canary's own property.
            assert!(
                e.failure.is_some(),
                "{} survived seeds {start}..{} in its own scenario",
                entry.name(),
                start + zklock::SEEDS_DEFAULT
            );
        }
    }
    assert!(canaries >= 24, "only {canaries} canaries registered");
}

/// The shipped recipes run in the default scenario: their own is no narrower.
#[test]
fn the_shipped_recipes_run_in_the_default_scenario() {
    for entry in &Recipes::shipped() {
        assert_eq!(
            entry.recipe().scenario(),
            zklock_sim::Scenario::default(),
            "{}",
            entry.name()
        );
    }
}
