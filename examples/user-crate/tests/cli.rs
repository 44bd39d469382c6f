//! This crate's own zklock binary (src/bin/user-zklock.rs), run as a user runs it.

use std::process::Command;

/// Runs the binary in `dir`: (exit code, stdout and stderr).
fn user_zklock(args: &[&str], dir: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_user-zklock"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run user-zklock");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("exited"), text)
}

#[test]
fn the_binary_sweeps_its_own_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = user_zklock(&["explore", "--recipe", "queue", "--seeds", "50"], dir.path());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok: every property held on every seed"), "{out}");
    // Its next steps name this binary, not zklock's.
    let exe = env!("CARGO_BIN_EXE_user-zklock");
    assert!(out.contains(&format!("next: {exe} explore --recipe queue")), "{out}");
    assert!(!out.contains("cargo run --release"), "{out}");
}

#[test]
fn a_failing_seed_is_reproduced_with_this_binary() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["explore", "--recipe", "herding-queue", "--seeds", "50", "--no-shrink"];
    let (code, out) = user_zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED") && out.contains("no_herd"), "{out}");
    let exe = env!("CARGO_BIN_EXE_user-zklock");
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: "))
        .expect("a reproduce line");
    let trace = line
        .strip_prefix(&format!("{exe} replay "))
        .unwrap_or_else(|| panic!("names this binary: {line}"))
        .split(" (")
        .next()
        .unwrap();
    // The line runs as printed: the replay reproduces the failure.
    let (code, out) = user_zklock(&["replay", trace], dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("replay: identical history"), "{out}");
}

#[test]
fn the_real_server_commands_are_left_out_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (sub, feature) in [("real", "real"), ("search", "real"), ("bench", "bench")] {
        let (code, out) = user_zklock(&[sub, "--help"], dir.path());
        assert_eq!(code, 2, "{sub}: {out}");
        assert!(
            out.contains(&format!("zklock's cargo feature `{feature}`")),
            "{sub}: {out}"
        );
    }
}
