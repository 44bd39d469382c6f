//! `zklock check --shard K/N`: shards run as separate processes and merged reach the
//! single check's verdict; a missing or unfinished shard makes the merge inconclusive;
//! a violation in a shard carries its trace; bad shards and mismatched summaries are
//! refused.

use super::{replayed_trace, zklock};
use std::path::Path;
use std::process::Command;

/// The "N distinct states" of a check's "recipe ..." line.
fn distinct_states(out: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with("recipe ")).unwrap();
    let part = line
        .split(", ")
        .find(|p| p.ends_with("distinct states"))
        .unwrap();
    part.split(' ').next().unwrap().parse().unwrap()
}

/// Runs shards 1..=n of `args` at once, as separate processes, each writing
/// `{stem}-K.json`: their exit codes and outputs.
fn run_shards(dir: &Path, args: &[&str], n: u32, stem: &str) -> Vec<(i32, String)> {
    let children: Vec<_> = (1..=n)
        .map(|k| {
            Command::new(env!("CARGO_BIN_EXE_zklock"))
                .args(args)
                .args(["--shard", &format!("{k}/{n}")])
                .args(["--summary", &format!("{stem}-{k}.json")])
                .current_dir(dir)
                .output()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let c = c.expect("run zklock");
            (
                c.status.code().expect("exited"),
                String::from_utf8_lossy(&c.stdout).into_owned()
                    + &String::from_utf8_lossy(&c.stderr),
            )
        })
        .collect()
}

#[test]
fn shards_run_as_processes_merge_to_the_single_checks_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let check = [
        "check",
        "--clients",
        "2",
        "--faults-max",
        "1",
        "--threads",
        "1",
    ];
    let (code, one, err) = zklock(&check, dir.path());
    assert_eq!(code, 0, "{one}{err}");
    let states = distinct_states(&one);
    for (code, out) in run_shards(dir.path(), &check, 3, "s") {
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("ok: every property held on every schedule of this shard"),
            "{out}"
        );
        assert!(distinct_states(&out) < states + states / 10, "{out}");
    }
    let (code, out, err) = zklock(&["merge", "s-1.json", "s-2.json", "s-3.json"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("3 of 3 shards given"), "{out}");
    assert!(out.contains("searched by more than one shard"), "{out}");
    assert!(
        out.contains("ok: every property held on every schedule of every shard"),
        "{out}"
    );

    // A missing shard: never green, and named.
    let (code, out, err) = zklock(&["merge", "s-1.json", "s-3.json"], dir.path());
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("shard 2/3: no summary of it given"), "{out}");
    assert!(!out.contains("ok:"), "{out}");

    // An unfinished shard: its bound stopped it, the merge says so.
    let mut short = check.to_vec();
    short.extend([
        "--schedules-max",
        "5",
        "--shard",
        "2/3",
        "--summary",
        "short.json",
    ]);
    let (code, out, err) = zklock(&short, dir.path());
    assert_eq!(code, 3, "{out}{err}");
    let (code, out, err) = zklock(&["merge", "s-1.json", "short.json", "s-3.json"], dir.path());
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("shard 2/3 (short.json): stopped by a bound after 5 schedules"),
        "{out}"
    );

    // Shards of another check, or summaries of a sweep, are not merged with these.
    let mut other = vec!["check", "--clients", "1", "--faults-max", "1"];
    other.extend(["--shard", "2/3", "--summary", "other.json"]);
    let (code, out, err) = zklock(&other, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = zklock(&["merge", "s-1.json", "other.json", "s-3.json"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("not shards of one check"), "{err}");
    let (code, out, err) = zklock(
        &["explore", "--seeds", "3", "--summary", "sweep.json"],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = zklock(&["merge", "s-1.json", "sweep.json"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("sweep.json: not a zklock check summary"),
        "{err}"
    );
}

#[test]
fn a_violation_in_a_shard_carries_its_trace_through_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let check = ["check", "--recipe", "canary-deaf-holder", "--threads", "1"];
    let shards = run_shards(dir.path(), &check, 2, "c");
    let failed: Vec<&String> = shards
        .iter()
        .filter(|(code, _)| *code == 1)
        .map(|(_, out)| out)
        .collect();
    assert!(!failed.is_empty(), "{shards:?}");
    for out in &failed {
        let trace = replayed_trace(dir.path(), out);
        assert!(!trace.choices.is_empty());
    }
    let (code, out, err) = zklock(&["merge", "c-1.json", "c-2.json"], dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAILED"), "{out}");
    let path = failed[0]
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .unwrap();
    assert!(out.contains(&format!("  trace: {path}")), "{out}");
}

#[test]
fn bad_shards_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["--shard", "0/4"], "K must be 1 to 4"),
        (vec!["--shard", "5/4"], "K must be 1 to 4"),
        (vec!["--shard", "1/0"], "at least 1 shard"),
        (vec!["--shard", "1/1025"], "at most 1024"),
        (vec!["--shard", "2"], "a shard is K/N"),
        (
            vec!["--shard", "1/2", "--partial-order", "on"],
            "--shard 1/2 needs --partial-order off",
        ),
        (vec!["--summary", "s.json"], "give --shard K/N too"),
    ] {
        let mut a = vec!["check", "--clients", "2", "--faults-max", "0"];
        a.extend(args.iter());
        let (code, out, err) = zklock(&a, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
