//! A user's lock searched from a plain test, as docs/your-lock.md shows: the doc test's
//! lock, run here on a real server (the doc test only compiles). Skips, saying why, where
//! ZooKeeper or Java is not installed.

use zklock_real::harness;
use zklock_real::recording::RecordingClient;
use zklock_real::workload::RealRecipe;
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::ShippedLock;
use zklock_search::{Lock, Origin, Search};

struct MyRecipe;

impl RealRecipe for MyRecipe {
    type Lock = ShippedLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
    }
}

#[test]
fn a_users_recipe_is_searched_from_a_test_and_its_reference_run_holds() {
    if let Err(e) = harness::availability() {
        eprintln!("skipped: {e}");
        return;
    }
    // k = 0: the reference run only, the script's every request recorded.
    let findings = Search::new(Lock::recipe("my-lock", MyRecipe))
        .program("my-cli")
        .k(0)
        .jobs(1)
        .run()
        .expect("the search runs");
    assert!(findings.reference_run && !findings.interrupted);
    assert!(
        findings.requests_seen > 0,
        "the reference run saw no request"
    );
    assert_eq!(findings.fault_free.runs, 1);
    let at_points: Vec<_> = (findings.findings.iter())
        .filter(|f| f.origin == Origin::Point)
        .collect();
    assert!(at_points.is_empty() && findings.tried == 0);
    assert!(findings.findings.is_empty(), "{:?}", findings.findings);
}

/// A lock whose every acquire fails: nothing a search of it does puts a property to
/// the test.
struct Never;

struct NeverLock;

impl zklock_recipe::LockUnderTest for NeverLock {
    type Guard = ();
    async fn acquire(&self) -> Result<(), String> {
        Err("no node".into())
    }
    async fn acquire_timeout(&self, _: std::time::Duration) -> Result<Option<()>, String> {
        Err("no node".into())
    }
    fn token(&self, _: &()) -> i64 {
        0
    }
    fn node(&self, _: &()) -> String {
        String::new()
    }
    async fn lost(&self, _: &()) -> String {
        std::future::pending().await
    }
    async fn release(&self, _: ()) -> Result<(), String> {
        Ok(())
    }
}

impl RealRecipe for Never {
    type Lock = NeverLock;
    fn lock(&self, _: RecordingClient, _: LockRole, _: &str) -> NeverLock {
        NeverLock
    }
}

#[test]
fn a_search_of_a_lock_that_never_acquires_says_nothing_was_exercised_and_names_the_error() {
    if let Err(e) = harness::availability() {
        eprintln!("skipped: {e}");
        return;
    }
    let findings = Search::new(Lock::recipe("never", Never))
        .k(0)
        .jobs(1)
        .run()
        .expect("the search runs");
    assert_eq!(findings.reference_acquired, Some(0));
    let why = findings.nothing_exercised().expect("inconclusive");
    assert!(
        why.contains("every acquire failed, 8 with \"no node\""),
        "{why}"
    );
}
