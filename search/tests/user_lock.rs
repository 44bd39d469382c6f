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
