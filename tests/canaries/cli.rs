//! The `zklock` binary knows every canary by name: each trace in traces/ replays through
//! it to the property it was committed for, and shrinks keeping that property; `explore
//! --recipe canary-watch-parent` finds the herd from the command line.

use super::Bug;
use std::path::{Path, PathBuf};
use std::process::Command;
use zklock_checker::Trace;

/// Runs the binary in `dir`: its exit code and everything it printed.
fn zklock(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run zklock");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Every trace file in traces/, with the canary that recorded it.
fn committed_traces() -> Vec<(PathBuf, Bug)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut traces: Vec<(PathBuf, Bug)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let recipe = Trace::read(&p).unwrap().recipe;
            let bug = Bug::from_name(&recipe)
                .unwrap_or_else(|| panic!("{}: recipe {recipe:?} is no canary", p.display()));
            (p, bug)
        })
        .collect();
    traces.sort_by(|a, b| a.0.cmp(&b.0));
    for bug in Bug::ALL {
        assert!(
            traces.iter().any(|(_, b)| *b == bug),
            "no trace of {} in traces/",
            bug.name()
        );
    }
    traces
}

#[test]
fn every_trace_in_traces_replays_through_the_binary_to_its_property() {
    for (path, bug) in committed_traces() {
        let (code, out) = zklock(&["replay", path.to_str().unwrap()], Path::new("."));
        let name = path.display();
        assert_eq!(code, Some(1), "{name}: a violation exits 1\n{out}");
        assert!(out.contains("replay: identical history"), "{name}:\n{out}");
        let expected = format!("FAILED: {}", bug.caught_by());
        assert!(out.contains(&expected), "{name}: not {expected}\n{out}");
    }
}

#[test]
fn every_trace_in_traces_shrinks_through_the_binary_keeping_its_property() {
    for (path, bug) in committed_traces() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::copy(&path, &copy).unwrap();
        let (code, out) = zklock(&["shrink", copy.to_str().unwrap()], dir.path());
        let name = path.display();
        assert_eq!(code, Some(0), "{name}: the shrunk trace was written\n{out}");
        let expected = format!("violation: {}", bug.caught_by());
        assert!(out.contains(&expected), "{name}: not {expected}\n{out}");
        let shrunk = copy.with_extension("min.json");
        let (code, out) = zklock(&["replay", shrunk.to_str().unwrap()], dir.path());
        assert_eq!(code, Some(1), "{name}: the shrunk trace fails\n{out}");
        let expected = format!("FAILED: {}", bug.caught_by());
        assert!(
            out.contains(&expected),
            "{name}: shrunk, not {expected}\n{out}"
        );
    }
}

#[test]
fn explore_finds_the_watch_parent_canary_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explore",
        "--recipe",
        "canary-watch-parent",
        "--seeds",
        "20",
    ];
    let (code, out) = zklock(&args, dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("VIOLATED: no_herd"), "{out}");
    let (code, out) = zklock(&["recipes"], dir.path());
    assert_eq!(code, Some(0), "{out}");
    for bug in Bug::ALL {
        assert!(
            out.contains(bug.name()),
            "{} not listed:\n{out}",
            bug.name()
        );
    }
}
