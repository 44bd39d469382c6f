//! A failing sweep records its seed in the test's regressions file, and the next run of
//! the same test replays that seed first and names it, as proptest's regression files do.
//! Two tests failing on one seed keep a trace each.

use std::path::Path;
use std::time::Duration;
use zklock_checker::{Regression, SeedFailure, Sweep, SweepError};
use zklock_recipe::history::LockRole;
use zklock_sim::{
    Faults, LockUnderTest, Rate, Recipe, Scenario, ShippedLock, ShippedRecipe, SimClient,
};

/// The shipped lock deaf to its lost signal: two believers after an expiry.
struct Deaf;
struct DeafLock(ShippedLock);

impl Recipe for Deaf {
    type Lock = DeafLock;
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> DeafLock {
        DeafLock(ShippedRecipe::default().lock(client, role, path))
    }
}

impl LockUnderTest for DeafLock {
    type Guard = <ShippedLock as LockUnderTest>::Guard;
    async fn acquire(&self) -> Result<Self::Guard, String> {
        self.0.acquire().await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Self::Guard>, String> {
        self.0.acquire_timeout(timeout).await
    }
    fn token(&self, guard: &Self::Guard) -> i64 {
        self.0.token(guard)
    }
    fn node(&self, guard: &Self::Guard) -> String {
        self.0.node(guard)
    }
    async fn lost<'a>(&'a self, _guard: &'a Self::Guard) -> String {
        std::future::pending().await
    }
    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        self.0.release(guard).await
    }
}

fn scenario() -> Scenario {
    Scenario {
        clients: 3,
        acquisitions_per_client: 4,
        hold_ms: 10_000,
        liveness_bound_ms: 60_000,
        faults: Faults {
            partition: Rate::new(1, 50),
            forced_expiry: Rate::new(1, 50),
            ..Faults::none()
        },
        ..Scenario::default()
    }
}

fn failed(e: &SweepError) -> &SeedFailure {
    e.seed_failure()
        .unwrap_or_else(|| panic!("no seed failed: {e}"))
}

#[test]
fn a_second_run_replays_the_recorded_seed_first_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("zklock-regressions").join("deaf.txt");
    let sc = scenario();
    let sweep = |seeds| {
        Sweep::new(&sc, &Deaf)
            .seeds(seeds)
            .regressions(&file)
            .failures_dir(dir.path().join("failures"))
            .test_name("deaf_test")
    };
    let first = sweep(0..40)
        .run()
        .expect_err("the deaf holder fails some seed");
    let first = failed(&first);
    assert_eq!(first.regression, Regression::Recorded(file.clone()));
    let text = std::fs::read_to_string(&file).unwrap();
    let line = format!("deaf_test {} # {}\n", first.seed, first.failure);
    assert!(text.ends_with(&line), "{text}");
    assert!(first.to_string().contains("commit it"), "{first}");

    // A range that starts past the recorded seed: it fails on that seed, replayed first.
    let later = first.seed + 1..first.seed + 41;
    let second = sweep(later)
        .run()
        .expect_err("the recorded seed still fails");
    let second = failed(&second);
    assert_eq!(second.seed, first.seed);
    assert_eq!(second.regression, Regression::Replayed(file.clone()));
    let report = second.to_string();
    assert!(
        report.contains(&format!(
            "seed {} is recorded in {}",
            first.seed,
            file.display()
        )),
        "{report}"
    );
    // Recorded once.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // Once the lock is fixed, the recorded seed is still replayed first, and named.
    let fixed = Sweep::new(&sc, &ShippedRecipe::default())
        .seeds(0..3)
        .regressions(&file)
        .test_name("deaf_test")
        .run()
        .expect("the shipped lock passes");
    assert_eq!(fixed.replayed, vec![first.seed]);
    assert_eq!(fixed.runs, if first.seed < 3 { 3 } else { 4 });
    // Another test's seeds are its own.
    let other = Sweep::new(&sc, &ShippedRecipe::default())
        .seeds(0..1)
        .regressions(&file)
        .test_name("other_test")
        .run()
        .unwrap();
    assert!(other.replayed.is_empty());

    // A test name of several words keeps the file readable.
    let spaced = Sweep::new(&sc, &Deaf)
        .seeds(0..40)
        .regressions(&file)
        .failures_dir(dir.path().join("failures"))
        .test_name("deaf test #2")
        .run()
        .expect_err("fails");
    assert!(matches!(
        failed(&spaced).regression,
        Regression::Recorded(_)
    ));
    let again = Sweep::new(&sc, &ShippedRecipe::default())
        .seeds(0..0)
        .regressions(&file)
        .test_name("deaf test #2")
        .run()
        .expect("the file reads back");
    assert_eq!(again.replayed, vec![failed(&spaced).seed]);
}

#[test]
fn two_tests_failing_on_one_seed_keep_a_trace_each() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario();
    let run = |test: &str| {
        let e = Sweep::new(&sc, &Deaf)
            .seeds(0..40)
            .without_regressions()
            .failures_dir(dir.path())
            .test_name(test)
            .run()
            .expect_err("fails");
        let f = failed(&e);
        (f.seed, f.trace.clone().expect("the trace was written"))
    };
    let (seed_a, a) = run("suite::first_test");
    let (seed_b, b) = run("suite::second_test");
    assert_eq!(seed_a, seed_b);
    assert_ne!(a, b);
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        name(&a),
        format!("Deaf-seed-{seed_a}.suite.first_test.json")
    );
    for p in [&a, &b] {
        assert_eq!(zklock_checker::Trace::read(p).unwrap().seed, seed_a);
    }
}

#[test]
fn a_regressions_file_that_cannot_be_read_fails_the_sweep_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.txt");
    std::fs::write(&file, "deaf_test not-a-seed\n").unwrap();
    let e = Sweep::new(&scenario(), &ShippedRecipe::default())
        .regressions(&file)
        .test_name("deaf_test")
        .run()
        .expect_err("a bad regressions file fails the sweep");
    assert!(e.seed_failure().is_none());
    assert!(e.to_string().contains("bad.txt line 1"), "{e}");
}
