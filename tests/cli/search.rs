//! `zklock search` on a real server: its points are scripted faults aimed at recorded
//! requests, so what it finds does not hang on a lucky timing. A canary whose release
//! forgets a dropped delete is found at that delete, and the `real` line it prints (naming
//! the program as the binary names itself) reproduces the violation; the shipped lock
//! passes the same search.

use super::zklock;
use std::path::Path;

/// The smallest script: one client, one blocking attempt, single strikes only.
pub(super) const SMALL: [&str; 10] = [
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
        .find(|l| l.ends_with("--aim 0:drop-request:delete:/zklock/lock/"))
        .unwrap_or_else(|| panic!("no reproduction line for the dropped delete:\n{out}"));
    // The zklock binary names itself `cargo run --release --`, as in every command it prints.
    let line = line
        .strip_prefix("cargo run --release -- real ")
        .unwrap_or_else(|| panic!("names the program: {line}"));
    assert!(
        out.contains("timeline: failures/search-canary-forgetful-release-"),
        "{out}"
    );
    // The printed line, run as it is, violates the same property.
    let mut args: Vec<&str> = std::iter::once("real")
        .chain(line.split_whitespace())
        .collect();
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

/// A search stopped after 3 runs (`--max-runs`, as Ctrl-C stops it) keeps what ran in its
/// journal; `--resume` takes the reference run and those 3 points from it, runs the rest
/// (here 2 at once, each on a server of its own) and ends where a whole search ends:
/// every point judged once, the first 3 not run again.
#[test]
fn a_stopped_search_resumes_from_its_journal_and_judges_each_point_once() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let base = ["search", "--lock", "zklock", "--out", "failures"];
    let with = |more: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(SMALL);
        args.extend(["--journal", "journal.jsonl"]);
        args.extend(more);
        zklock(&args, dir.path())
    };
    let (code, out, err) = with(&["--jobs", "1", "--max-runs", "3"]);
    assert_eq!(code, 3, "stopped, inconclusive: {out}{err}");
    assert!(out.contains("--journal journal.jsonl --resume"), "{out}");
    let first = std::fs::read_to_string(&journal).unwrap();
    let plans = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.get("plan").map(|p| p.as_str().unwrap().to_owned())
            })
            .collect()
    };
    assert_eq!(plans(&first).len(), 3, "{first}");
    // An existing journal is not overwritten.
    let (code, _, err) = with(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
    let (code, out, err) = with(&["--jobs", "2", "--resume"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(3 points judged)"), "{out}");
    let all = std::fs::read_to_string(&journal).unwrap();
    assert!(
        all.starts_with(&first),
        "the saved results stay as they were"
    );
    let judged = plans(&all);
    let unique: std::collections::BTreeSet<&String> = judged.iter().collect();
    assert_eq!(
        unique.len(),
        judged.len(),
        "a point judged twice: {judged:?}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("| zklock |"))
        .unwrap_or_else(|| panic!("no table row:\n{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let tried: usize = cells[3].split(' ').next().unwrap().parse().unwrap();
    assert_eq!(tried, judged.len(), "{row}");
    assert!(tried > 3, "{row}");
}
