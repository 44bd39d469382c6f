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

/// A seed a strategy found is a trace like any other: it records the seed's own scenario,
/// replays to the same history and violation, and shrinks keeping the violation.
#[test]
fn a_seed_the_swarm_strategy_found_replays_and_shrinks_as_any_other() {
    use zklock_checker::{ShrinkLimits, Strategy, explore, replay, shrink};
    use zklock_sim::Recipe;
    let canary = zklock_canaries::Canary(zklock_canaries::Bug::DeafHolder);
    let base = canary.scenario();
    let budget = Budget {
        strategy: Strategy::Swarm,
        threads: 1,
        ..Budget::default()
    };
    let e = explore(&base, &canary, &budget, &|_, _| {}).unwrap();
    let (seed, run) = e.failure.expect("the swarm caught the deaf holder");
    let own = Strategy::Swarm.scenario_for(&base, seed);
    assert_ne!(
        own, base,
        "seed {seed} ran the base scenario: nothing to show"
    );
    let trace = run.trace(&own, seed, &canary.name());
    let again = replay(&trace, &canary).unwrap();
    assert_eq!(again.outcome.history, run.outcome.history, "seed {seed}");
    assert_eq!(again.failure(), run.failure());
    // "liveness_after_heal (stuck)" names the property first.
    let failure = run.failure().unwrap();
    let property = failure.split(' ').next().unwrap();
    // Few runs: a shrink keeps its trace failing whatever its limits.
    let limits = ShrinkLimits {
        runs_max: 200,
        fresh_seeds_max: 0,
        exhaustive_schedules_max: 0,
        ..ShrinkLimits::default()
    };
    let shrunk = shrink(&trace, &canary, &limits).unwrap();
    let small = replay(&shrunk.trace, &canary).unwrap();
    assert!(
        small.violates(property),
        "the shrunk trace lost {property}: {}",
        small.report
    );
}

/// A seed whose faults the aimed strategy aimed at one operation's requests: `explore`
/// finds it failing, and its trace records the aim through a write and a read, replays
/// to the same history and violation, and shrinks keeping the violation.
#[test]
fn an_aimed_seed_replays_from_its_file_and_shrinks_as_any_other() {
    use zklock_checker::{ShrinkLimits, Strategy, Trace, check_seed, explore, replay, shrink};
    use zklock_sim::Recipe;
    let canary = zklock_canaries::Canary(zklock_canaries::Bug::DeafHolder);
    let base = canary.scenario();
    // The first aimed seed the canary fails on (an aimed seed's run is `check_seed` in
    // its own scenario, as the sweep runs it).
    let (seed, own) = (0..10_000u64)
        .map(|seed| (seed, Strategy::Aimed.scenario_for(&base, seed)))
        .find(|(seed, sc)| {
            sc.faults.aim.is_some() && check_seed(sc, *seed, &canary).failure().is_some()
        })
        .expect("an aimed seed catches the deaf holder");
    let op = own.faults.aim.expect("aimed");
    // The sweep finds it as well, and hands over its scenario.
    let budget = Budget {
        strategy: Strategy::Aimed,
        seed_start: seed,
        seeds: 1,
        threads: 1,
        ..Budget::default()
    };
    let e = explore(&base, &canary, &budget, &|_, _| {}).unwrap();
    assert_eq!(e.failure_scenario.as_ref(), Some(&own), "seed {seed}");
    let trace = e
        .failure_trace(&canary.name())
        .unwrap_or_else(|| panic!("seed {seed} did not fail in the sweep"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aimed.json");
    trace.write(&path).unwrap();
    let trace = Trace::read(&path).unwrap();
    assert_eq!(trace.scenario.faults.aim, Some(op), "the file lost the aim");
    let run = &e.failure.as_ref().unwrap().1;
    let again = replay(&trace, &canary).unwrap();
    assert_eq!(again.outcome.history, run.outcome.history, "seed {seed}");
    assert_eq!(again.failure(), run.failure());
    let failure = run.failure().unwrap();
    let property = failure.split(' ').next().unwrap();
    let limits = ShrinkLimits {
        runs_max: 200,
        fresh_seeds_max: 0,
        exhaustive_schedules_max: 0,
        ..ShrinkLimits::default()
    };
    let shrunk = shrink(&trace, &canary, &limits).unwrap();
    assert_eq!(shrunk.trace.scenario.faults.aim, Some(op));
    let small = replay(&shrunk.trace, &canary).unwrap();
    assert!(
        small.violates(property),
        "the shrunk trace lost {property}: {}",
        small.report
    );
}
