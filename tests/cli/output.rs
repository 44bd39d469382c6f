//! Standard output that goes away early (`zklock check | head -1`): the command neither
//! panics nor loses anything: it writes the same files and exits with the same verdict.

use super::zklock;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the binary in `dir` with its stdout a pipe nobody reads, closed before it starts,
/// so that its first write fails for certain: (exit code, stderr).
fn zklock_into_a_closed_pipe(args: &[&str], dir: &Path) -> (i32, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::from(writer))
        .output()
        .expect("run zklock");
    let code = out.status.code().expect("exited, not killed by a signal");
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Names of the files under `dir`, relative to it, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                names.push(name);
            }
        }
    }
    names.sort();
    names
}

#[test]
fn a_reader_gone_early_loses_no_file_and_keeps_the_exit_status() {
    let check = [
        "check",
        "--recipe",
        "canary-blind-retry",
        "--clients",
        "1",
        "--faults-max",
        "1",
        "--threads",
        "1",
        "--out",
        "out",
    ];
    let read = tempfile::tempdir().unwrap();
    let (code, out, err) = zklock(&check, read.path());
    assert_eq!(code, 1, "{out}{err}");
    let gone = tempfile::tempdir().unwrap();
    let (gone_code, gone_err) = zklock_into_a_closed_pipe(&check, gone.path());
    assert!(!gone_err.contains("panicked"), "{gone_err}");
    assert!(!gone_err.contains("standard output"), "{gone_err}");
    assert_eq!(gone_code, code, "{gone_err}");
    let written = files(read.path());
    assert!(!written.is_empty());
    assert_eq!(files(gone.path()), written);
    // A listing too, whose every line is a write that fails.
    let (code, err) = zklock_into_a_closed_pipe(&["recipes"], gone.path());
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn completions_into_a_reader_gone_early_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = zklock_into_a_closed_pipe(&["completions", "bash"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Read, the script is whole.
    let (code, out, err) = zklock(&["completions", "bash"], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("_zklock() {") && out.contains("complete -F _zklock"),
        "{out}"
    );
}
