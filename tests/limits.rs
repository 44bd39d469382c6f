//! The command line refuses values past their documented bounds with a clear error and
//! exit status 2 (bad input), never a panic, an overflow, a hang or a run that fills the memory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use zklock_checker::{TRACE_BYTES_MAX, check_seed};
use zklock_sim::{Scenario, ShippedRecipe};

/// Runs zklock in `dir`; a run still going after `deadline` (which only a hang reaches)
/// is killed and fails the test.
fn zklock(args: &[&str], dir: &Path) -> (i32, String) {
    let deadline = Duration::from_secs(300);
    let out_path = dir.join(".zklock-out");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("run zklock");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zklock {args:?} still ran after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap();
    // A panic exits 101, an abort 134: only 0 to 3 are answers.
    (status.code().unwrap_or(-1), text)
}

/// A failing-free trace of the shipped recipe, written as `name` with its scenario's lock
/// path replaced.
fn trace_with_lock_path(dir: &Path, name: &str, lock_path: &str) {
    let sc = Scenario {
        clients: 2,
        acquisitions_per_client: 2,
        ..Scenario::default()
    };
    let run = check_seed(&sc, 1, &ShippedRecipe::default());
    let mut v = serde_json::to_value(run.trace(&sc, 1, "zklock")).unwrap();
    v["scenario"]["lock_path"] = serde_json::json!(lock_path);
    std::fs::write(dir.join(name), v.to_string()).unwrap();
}

#[test]
fn a_trace_whose_lock_path_is_empty_or_a_double_slash_is_refused_by_replay_and_shrink() {
    let dir = tempfile::tempdir().unwrap();
    for (name, lock_path) in [("empty.json", ""), ("slashes.json", "//")] {
        trace_with_lock_path(dir.path(), name, lock_path);
        for cmd in ["replay", "shrink"] {
            let (code, out) = zklock(&[cmd, name], dir.path());
            assert_eq!(code, 2, "{cmd} {name}: {out}");
            assert!(
                out.contains(name) && out.contains("lock_path") && !out.contains("panicked"),
                "{cmd} {name}: {out}"
            );
        }
    }
}

#[test]
fn acquisitions_4294967295_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = zklock(&["explore", "--acquisitions", "4294967295"], dir.path());
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("acquisitions_per_client is 4294967295, more than its maximum of 10000"),
        "{out}"
    );
    assert!(!dir.path().join("traces").exists(), "nothing ran: {out}");
}

#[test]
fn time_limit_s_18446744073709552_is_refused_not_wrapped_to_a_fraction_of_a_second() {
    let dir = tempfile::tempdir().unwrap();
    trace_with_lock_path(dir.path(), "t.json", "/zklock/lock");
    for args in [
        &["explore", "--time-limit-s", "18446744073709552"][..],
        &["check", "--time-limit-s", "18446744073709552"],
        &["shrink", "t.json", "--time-limit-s", "18446744073709552"],
    ] {
        let (code, out) = zklock(args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(
            out.contains("--time-limit-s is 18446744073709552, more than its maximum of 2592000"),
            "{args:?}: {out}"
        );
    }
}

#[test]
fn seeds_18446744073709551615_in_as_many_shards_runs_its_one_seed_at_once() {
    // The seed list was once built by filtering every seed of the range: it never ended.
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = zklock(
        &[
            "explore",
            "--seeds",
            "18446744073709551615",
            "--shard",
            "1/18446744073709551615",
            "--clients",
            "2",
            "--acquisitions",
            "2",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 seeds run"), "{out}");
}

#[test]
fn a_file_larger_than_trace_bytes_max_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::File::create(dir.path().join("huge.json"))
        .unwrap()
        .set_len(TRACE_BYTES_MAX + 1)
        .unwrap();
    let (code, out) = zklock(&["replay", "huge.json"], dir.path());
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("huge.json") && out.contains(&format!("more than the {TRACE_BYTES_MAX}")),
        "{out}"
    );
}

/// `real`'s durations once went unchecked (a session timeout of u64::MAX overflowed the
/// fault plan's arithmetic) and `merge` read a file of any size: each is refused, exit 2,
/// before any server starts or any file is read.
#[test]
fn real_durations_and_merge_files_past_their_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for flag in [
        "--session-timeout-ms",
        "--hold-ms",
        "--acquire-timeout-ms",
        "--connect-timeout-ms",
        "--drain-timeout-ms",
    ] {
        let (code, out) = zklock(&["real", flag, "18446744073709551615"], dir.path());
        assert_eq!(code, 2, "{flag}: {out}");
        assert!(out.contains("at most 3600000"), "{flag}: {out}");
    }
    for (flag, says) in [
        ("--items", "items per producer must be 1 to 10000"),
        ("--producers", "producers must be 1 to 4"),
    ] {
        let args = ["real", "--recipe", "queue", flag, "4294967295"];
        let (code, out) = zklock(&args, dir.path());
        assert_eq!(code, 2, "{flag}: {out}");
        assert!(out.contains(says), "{flag}: {out}");
    }
    let huge = dir.path().join("huge-summary.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(64 * 1024 * 1024)
        .unwrap();
    let (code, out) = zklock(&["merge", "huge-summary.json"], dir.path());
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("a summary may be"), "{out}");
    let (code, out) = zklock(&["bench", "--seeds", "18446744073709551615"], dir.path());
    assert_eq!(code, 2, "{out}");
}
