//! A holder that ignores Disconnected / Expired (the shipped lock with its lost signal
//! unplugged), holding longer than a session: `mutual_exclusion` must catch two
//! believers, while the shipped lock passes the same runs.

use crate::common::Deaf;
use zklock_checker::{CheckConfig, Report, check_all};
use zklock_sim::{Faults, Rate, Recipe, Scenario, ShippedRecipe, run_scenario};

/// Long holds and session-ending faults, no pauses.
fn scenario() -> Scenario {
    Scenario {
        clients: 3,
        acquisitions_per_client: 4,
        hold_ms: 10_000,
        // Two 10 s holds can queue ahead of a waiter.
        liveness_bound_ms: 60_000,
        faults: Faults {
            partition: Rate::new(1, 50),
            forced_expiry: Rate::new(1, 50),
            ..Faults::none()
        },
        ..Scenario::default()
    }
}

fn check<R: Recipe>(seed: u64, recipe: &R) -> Report {
    let sc = scenario();
    let out = run_scenario(&sc, seed, recipe);
    let cfg = CheckConfig::from_scenario(&sc)
        .with_final_children(out.final_lock_children.clone())
        .with_run_end_us(out.end_time_us);
    check_all(&out.history, &cfg)
}

#[test]
fn mutual_exclusion_catches_a_deaf_holder() {
    let caught = (0..40).find_map(|seed| {
        let report = check(seed, &Deaf(ShippedRecipe::default()));
        report
            .verdict("mutual_exclusion")
            .filter(|v| !v.ok)
            .cloned()
    });
    let verdict = caught.expect("a deaf holder overlaps another within 40 seeds");
    let v = verdict.report.unwrap();
    assert!(!v.known_unavoidable);
    assert!(v.events.len() >= 2, "{v}");
}

#[test]
fn the_shipped_lock_passes_the_same_runs() {
    for seed in 0..40 {
        let report = check(seed, &ShippedRecipe::default());
        assert!(report.ok(), "seed {seed}:\n{report}");
    }
}

#[test]
fn a_failing_sweep_says_how_to_reproduce_it() {
    let sweep = zklock_checker::check_seeds(&scenario(), &Deaf(ShippedRecipe::default()), 0..40)
        .expect_err("the deaf holder fails some seed");
    let err = sweep.seed_failure().expect("a seed failed");
    let text = err.to_string();
    // `.unwrap()` in a test prints this same report.
    assert_eq!(format!("{sweep:?}"), text);
    assert!(
        text.contains(&format!("ZKLOCK_SEED={} cargo test", err.seed)),
        "{text}"
    );
    assert!(
        text.contains("a_failing_sweep_says_how_to_reproduce_it"),
        "{text}"
    );
    let trace = err.trace.as_ref().expect("the trace was written");
    let t = zklock_checker::Trace::read(trace).unwrap();
    assert_eq!(t.seed, err.seed);
    assert_eq!(t.recipe, "deaf-holder");
    // Replaying the trace with the same recipe fails the same way.
    let again = zklock_checker::replay(&t, &Deaf(ShippedRecipe::default())).unwrap();
    assert_eq!(again.outcome.history, t.history);
    assert_eq!(again.failure().as_deref(), Some(err.failure.as_str()));
}

#[test]
fn shrinking_keeps_the_violation_and_makes_the_trace_smaller() {
    let recipe = Deaf(ShippedRecipe::default());
    let sweep = zklock_checker::check_seeds(&scenario(), &recipe, 0..40).expect_err("fails");
    let err = sweep.seed_failure().expect("a seed failed");
    let trace = zklock_checker::Trace::read(err.trace.as_ref().unwrap()).unwrap();
    // No wall-time limit a loaded machine could reach: the shrink ends on its run budget.
    let unhurried = zklock_checker::ShrinkLimits {
        time_limit_ms: 3_600_000,
        ..Default::default()
    };
    let s = zklock_checker::shrink(&trace, &recipe, &unhurried).unwrap();
    eprintln!(
        "before {:?} after {:?} in {} runs",
        s.before, s.after, s.runs
    );
    assert_eq!(s.trace.violation, trace.violation);
    assert!(
        s.after.choices < s.before.choices,
        "{:?} -> {:?}",
        s.before,
        s.after
    );
    assert!(s.after.faults <= s.before.faults);
    assert!(s.after.clients <= s.before.clients);
    // The shrunk trace replays to the same violation.
    let again = zklock_checker::replay(&s.trace, &recipe).unwrap();
    assert_eq!(again.failure(), s.trace.violation);
    assert_eq!(again.outcome.history, s.trace.history);
    // Within its time limit a shrink is a function of the trace and its limits.
    assert!(
        !s.time_limit_hit,
        "an hour's limit cut a small shrink short"
    );
    let twice = zklock_checker::shrink(&trace, &recipe, &unhurried).unwrap();
    assert_eq!(
        (&twice.trace.choices, twice.after, twice.runs),
        (&s.trace.choices, s.after, s.runs)
    );
    // Cut short by the clock, it says so, and still keeps the violation.
    let limits = zklock_checker::ShrinkLimits {
        time_limit_ms: 0,
        ..Default::default()
    };
    let cut = zklock_checker::shrink(&trace, &recipe, &limits).unwrap();
    assert!(cut.time_limit_hit);
    assert_eq!(cut.trace.violation, trace.violation);
}
