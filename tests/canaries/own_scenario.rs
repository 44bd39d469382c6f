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
    use zklock_checker::{Strategy, explore};
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
    replays_and_shrinks(&trace, &run, &canary);
}

/// The tail every strategy's seed shares: its trace replays to the run's history and
/// violation, and shrinks keeping the violation; the shrunk trace is returned.
fn replays_and_shrinks<R: zklock_sim::Recipe + 'static>(
    trace: &zklock_checker::Trace,
    run: &zklock_checker::CheckedRun,
    canary: &R,
) -> zklock_checker::Trace {
    use zklock_checker::{ShrinkLimits, replay, shrink};
    let again = replay(trace, canary).unwrap();
    assert_eq!(again.outcome.history, run.outcome.history);
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
    let shrunk = shrink(trace, canary, &limits).unwrap();
    let small = replay(&shrunk.trace, canary).unwrap();
    assert!(
        small.violates(property),
        "the shrunk trace lost {property}: {}",
        small.report
    );
    shrunk.trace
}

/// The first seed of `strategy` whose scenario `pick` accepts and on which the canary
/// fails, found by the sweep as well: its scenario and its trace, written and read back.
fn first_failing_seed_through_a_file(
    strategy: zklock_checker::Strategy,
    pick: fn(&zklock_sim::Scenario) -> bool,
) -> (
    zklock_canaries::Canary,
    zklock_sim::Scenario,
    zklock_checker::Trace,
    zklock_checker::CheckedRun,
) {
    use zklock_checker::{Trace, check_seed, explore};
    use zklock_sim::Recipe;
    let canary = zklock_canaries::Canary(zklock_canaries::Bug::DeafHolder);
    let base = canary.scenario();
    // A strategy's seed runs `check_seed` in its own scenario, as the sweep runs it.
    let (seed, own) = (0..10_000u64)
        .map(|seed| (seed, strategy.scenario_for(&base, seed)))
        .find(|(seed, sc)| pick(sc) && check_seed(sc, *seed, &canary).failure().is_some())
        .unwrap_or_else(|| panic!("no {} seed catches the deaf holder", strategy.name()));
    // The sweep finds it as well, and hands over its scenario.
    let budget = Budget {
        strategy,
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
    let path = dir.path().join("seed.json");
    trace.write(&path).unwrap();
    let trace = Trace::read(&path).unwrap();
    let run = e.failure.unwrap().1;
    (canary, own, trace, run)
}

/// A seed whose faults the aimed strategy aimed at one operation's requests: `explore`
/// finds it failing, and its trace records the aim through a write and a read, replays
/// to the same history and violation, and shrinks keeping the violation.
#[test]
fn an_aimed_seed_replays_from_its_file_and_shrinks_as_any_other() {
    let (canary, own, trace, run) =
        first_failing_seed_through_a_file(zklock_checker::Strategy::Aimed, |sc| {
            sc.faults.aim.is_some()
        });
    let op = own.faults.aim.expect("aimed");
    assert_eq!(trace.scenario.faults.aim, Some(op), "the file lost the aim");
    let shrunk = replays_and_shrinks(&trace, &run, &canary);
    assert_eq!(shrunk.scenario.faults.aim, Some(op));
}

/// A seed whose requests the pct strategy ordered by priorities: the same, with the
/// priorities kept through the file and the shrink.
#[test]
fn a_pct_seed_replays_from_its_file_and_shrinks_as_any_other() {
    let (canary, own, trace, run) =
        first_failing_seed_through_a_file(zklock_checker::Strategy::Pct, |sc| {
            sc.priorities.is_some()
        });
    let order = own.priorities.expect("ordered by priorities");
    assert_eq!(
        trace.scenario.priorities,
        Some(order),
        "the file lost the order"
    );
    let shrunk = replays_and_shrinks(&trace, &run, &canary);
    assert_eq!(shrunk.scenario.priorities, Some(order));
}

/// A seed the coverage strategy ran near a corpus scenario (one no draw from the seed
/// alone gives): the sweep hands over that scenario, and its trace, written and read
/// back, replays to the same history and violation and shrinks keeping both.
#[test]
fn a_coverage_seed_run_near_the_corpus_replays_from_its_file_and_shrinks_as_any_other() {
    use zklock_checker::{Strategy, Trace, explore};
    use zklock_sim::Recipe;
    let canary = zklock_canaries::Canary(zklock_canaries::Bug::GuidOutlivesSession);
    let base = canary.scenario();
    // The first start whose first failure ran near the corpus (a later generation's).
    let (seed, own, run) = starts()
        .find_map(|start| {
            let budget = Budget {
                strategy: Strategy::Coverage,
                seed_start: start,
                seeds: zklock::SEEDS_DEFAULT,
                threads: 2,
                ..Budget::default()
            };
            let e = explore(&base, &canary, &budget, &|_, _| {}).unwrap();
            let (seed, run) = e.failure?;
            let own = e.failure_scenario?;
            (own != Strategy::Coverage.scenario_for(&base, seed)).then_some((seed, own, run))
        })
        .expect("from some start, a seed near the corpus catches the guid canary");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.json");
    run.trace(&own, seed, &canary.name()).write(&path).unwrap();
    let trace = Trace::read(&path).unwrap();
    assert_eq!(trace.scenario, own, "the file lost the seed's scenario");
    let shrunk = replays_and_shrinks(&trace, &run, &canary);
    assert_eq!(shrunk.scenario.clients, own.clients);
}
