//! `zklock search` on a real server: its points are scripted faults aimed at recorded
//! requests, so what it finds does not hang on a lucky timing. A canary whose release
//! forgets a dropped delete is found at that delete, and the `zklock real` line it prints
//! reproduces the violation; the shipped lock passes the same search.

use super::zklock;
use std::path::Path;

/// The smallest script: one client, one blocking attempt, single strikes only.
const SMALL: [&str; 10] = [
    "--clients",
    "1",
    "--attempts",
    "1",
    "--drop-every",
    "0",
    "--repeat-next",
    "0",
    "--repeat-window-ms",
    "0",
];

fn search(lock: &str, dir: &Path) -> (i32, String, String) {
    let mut args = vec!["search", "--lock", lock, "--out", "failures"];
    args.extend(SMALL);
    zklock(&args, dir)
}

#[test]
fn the_search_finds_a_forgetful_release_at_its_dropped_delete_and_prints_its_reproduction() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = search("canary-forgetful-release", dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("violated liveness_after_heal at 0:drop-request:delete:/zklock/lock/"),
        "{out}"
    );
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| {
            l.starts_with("zklock real ")
                && l.ends_with("--aim 0:drop-request:delete:/zklock/lock/")
        })
        .unwrap_or_else(|| panic!("no reproduction line for the dropped delete:\n{out}"));
    assert!(
        out.contains("timeline: failures/search-canary-forgetful-release-"),
        "{out}"
    );
    // The printed line, run as it is, violates the same property.
    let mut args: Vec<&str> = line.split_whitespace().skip(1).collect();
    args.extend(["--out", "failures"]);
    let (code, again, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{again}{err}");
    assert!(again.contains("FAILED: liveness_after_heal"), "{again}");
}

#[test]
fn the_shipped_lock_passes_every_point_of_the_small_search() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = search("zklock", dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| zklock |"))
        .unwrap_or_else(|| panic!("no table row:\n{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | lock | requests seen | points tried (pairs) | struck | violations |
    let tried: u64 = cells[3].split(' ').next().unwrap().parse().unwrap();
    let struck: u64 = cells[4].parse().unwrap();
    assert!(tried >= 5, "at least every action at one request: {row}");
    assert!(struck > 0, "{row}");
    assert_eq!(cells[5], "none", "{row}");
}

#[test]
fn bad_search_arguments_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["search", "--k", "3"], "--k must be 1 or 2"),
        (vec!["search", "--lock", "no-such-lock"], "--lock"),
        (vec!["search", "--lock", "queue"], "not a lock to search"),
        (vec!["search", "--attempts", "0"], "--attempts must be 1 to"),
        (vec!["search", "--clients", "9"], "--clients must be 1 to"),
        (
            vec!["search", "--lock", "kazoo-lock", "--readers", "1"],
            "has no read side",
        ),
        (
            vec!["search", "--readers", "3"],
            "--readers must be at most --clients",
        ),
    ] {
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
