//! `$ZKLOCK_SEED` set to something that is not a seed fails the sweep and runs nothing:
//! a typo there used to run the whole range and pass, reproducing nothing. Environment
//! variables are process-wide, so the sweep runs in a child process of this test binary.

use std::process::Command;
use zklock_checker::check_seeds;
use zklock_sim::{Scenario, ShippedRecipe};

/// Set in the child process.
const CHILD: &str = "ZKLOCK_SEED_ENV_TEST_CHILD";
const NAME: &str = "seed_env::a_seed_env_that_is_not_a_seed_fails_the_sweep";

#[test]
fn a_seed_env_that_is_not_a_seed_fails_the_sweep() {
    if std::env::var_os(CHILD).is_some() {
        let err = check_seeds(&Scenario::default(), &ShippedRecipe::default(), 0..3)
            .expect_err("a sweep under ZKLOCK_SEED=4x2 passed");
        assert!(err.seed_failure().is_none(), "{err}");
        println!("child saw: {err}");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("ZKLOCK_SEED", "4x2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let expected = "child saw: ZKLOCK_SEED=\"4x2\" is not a seed: set it to one seed (a number)";
    assert!(stdout.contains(expected), "{stdout}");
}

const SHRINK_NAME: &str = "seed_env::a_shrink_env_that_is_not_a_number_fails_the_sweep";

/// `$ZKLOCK_SHRINK_TIME_LIMIT_MS` set to something that is not a number fails the sweep
/// and runs nothing, as a bad `$ZKLOCK_SEED` does.
#[test]
fn a_shrink_env_that_is_not_a_number_fails_the_sweep() {
    if std::env::var_os(CHILD).is_some() {
        let err = check_seeds(&Scenario::default(), &ShippedRecipe::default(), 0..3)
            .expect_err("a sweep under ZKLOCK_SHRINK_TIME_LIMIT_MS=1m passed");
        println!("child saw: {err}");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", SHRINK_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("ZKLOCK_SHRINK_TIME_LIMIT_MS", "1m")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let expected = "child saw: ZKLOCK_SHRINK_TIME_LIMIT_MS=\"1m\" is not a time in ms";
    assert!(stdout.contains(expected), "{stdout}");
}
