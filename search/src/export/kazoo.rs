//! A Kazoo finding as one Python file: the script and its faults filled into
//! `kazoo_repro.py`, run here with Debian's Kazoo to verify it, and shrunk.

use super::line::RealLine;
use super::{ExportError, ExportOptions};
use std::path::Path;
use std::process::Command;
use zklock_real::plan::{GIVE_UP_HOLD_MS, Repeat, op};

const TEMPLATE: &str = include_str!("kazoo_repro.py");

/// The locks exported as Python, and their kind in the file.
pub(super) const LOCKS: [(&str, &str); 3] = [
    ("kazoo-lock", "lock"),
    ("kazoo-rw", "rw"),
    ("kazoo-semaphore", "semaphore"),
];

/// The actions the file's proxy carries out.
const ACTIONS: [&str; 4] = ["drop-request", "withhold-reply", "expire", "give-up"];

/// The file for `line`, checking `checks`, titled `title`.
pub(super) fn render(
    line: &RealLine,
    checks: &[String],
    title: &str,
) -> Result<String, ExportError> {
    let kind = LOCKS
        .iter()
        .find(|(name, _)| *name == line.lock)
        .map(|(_, kind)| *kind)
        .ok_or_else(|| ExportError::UnsupportedLock {
            lock: line.lock.clone(),
        })?;
    let w = &line.workload;
    if w.attempts_per_client == 0 {
        return Err(ExportError::Invalid {
            reason: "an export runs a fixed script: the line has no --attempts".into(),
        });
    }
    let mut faults = Vec::new();
    for aim in &line.aims {
        if !ACTIONS.contains(&aim.action.as_str()) {
            return Err(ExportError::Unsupported {
                reason: format!(
                    "--aim {aim}: a Kazoo export carries {} only (a pause or a crash needs \
                     zklock's process control)",
                    ACTIONS.join(", ")
                ),
            });
        }
        let (next, window_ms) = match aim.repeat {
            Repeat::Once => (1, 0),
            Repeat::Next(n) => (n, 0),
            Repeat::WindowMs(ms) => (0, ms),
        };
        faults.push(serde_json::json!({
            "client": aim.client,
            "action": aim.action,
            "ops": op::by_name(&aim.op).unwrap_or(&[]),
            "under": aim.under,
            "skip": aim.nth - 1,
            "next": next,
            "window_ms": window_ms,
            "give_up_hold_ms": GIVE_UP_HOLD_MS,
        }));
    }
    let script = serde_json::json!({
        "kind": kind,
        "lock_path": w.lock_path,
        "clients": w.clients,
        "readers": w.readers,
        "attempts": w.attempts_per_client,
        "session_timeout_ms": w.session_timeout_ms,
        "hold_ms": w.hold_ms,
        "drop_every": w.drop_every,
        "drop_after_ms_max": w.drop_after_ms_max,
        "acquire_timeout_ms": w.acquire_timeout_ms,
        "mix_offset": w.mix_offset,
        "start_stagger_ms": w.start_stagger_ms,
        "long_hold_every": w.long_hold_every,
        "long_hold_ms": w.long_hold_ms,
        "idle_after_give_up_ms": w.idle_after_give_up_ms,
        "fresh_lock_every": w.fresh_lock_every,
        "leak_bound_ms": w.leak_bound_in_force_ms(),
        "faults": faults,
        "check": checks,
    });
    let pretty = serde_json::to_string_pretty(&script).unwrap_or_default();
    Ok(TEMPLATE
        .replacen("__TITLE__", title, 1)
        .replacen("__SCRIPT__", &pretty, 1))
}

/// What one run of an exported file did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum RunResult {
    /// It exited 0: the lock behaved.
    Passed,
    /// It failed its assertion, which says this.
    Failed(String),
}

/// The versions line the file logs first (`Kazoo 2.8.0, ZooKeeper 3.8.0, Python 3.11.2`).
pub(super) fn versions_of(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find_map(|l| l.split_once("versions: ").map(|(_, v)| v.trim().to_owned()))
}

/// Runs `file` once with `python` (its own server: `ZK_HOSTS` is not passed on), without
/// its faults when `no_fault`. The versions line comes back too.
pub(super) fn run_file(
    options: &ExportOptions,
    file: &Path,
    no_fault: bool,
) -> Result<(RunResult, Option<String>), ExportError> {
    let mut command = Command::new(&options.python);
    command.arg(file).env_remove("ZK_HOSTS");
    if no_fault {
        command.arg("--no-fault");
    }
    let out = command.output().map_err(|e| ExportError::Run {
        reason: format!("running {}: {e}", options.python.display()),
    })?;
    outcome(&options.python.display().to_string(), file, &out)
}

/// What a run of an exported file by `program` did: a pass (exit 0), its assertion's
/// failure (Python's `AssertionError: ...`, Java's `java.lang.AssertionError: ...`), or
/// neither, an error naming what broke. The versions line comes back too.
pub(super) fn outcome(
    program: &str,
    file: &Path,
    out: &std::process::Output,
) -> Result<(RunResult, Option<String>), ExportError> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let versions = versions_of(&stderr);
    if out.status.success() {
        return Ok((RunResult::Passed, versions));
    }
    if let Some(assertion) =
        (stderr.lines().rev()).find_map(|l| l.split_once("AssertionError: ").map(|(_, a)| a))
    {
        return Ok((RunResult::Failed(assertion.to_owned()), versions));
    }
    // Neither a pass nor the lock's failure: the library, Java or the server is missing.
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(ExportError::Run {
        reason: format!(
            "{program} {} broke ({}): {}",
            file.display(),
            out.status,
            tail.join(" | ")
        ),
    })
}

/// Smaller scripts than `line` (any library's), the smallest first of each kind: fewer attempts, fewer
/// clients (the last ones, no fault aimed at them), fewer faults.
pub(super) fn smaller(line: &RealLine) -> Vec<RealLine> {
    let w = &line.workload;
    let mut out = Vec::new();
    if w.attempts_per_client > 1 {
        let mut l = line.clone();
        l.workload.attempts_per_client -= 1;
        out.push(l);
    }
    let aimed_max = line.aims.iter().map(|a| a.client + 1).max().unwrap_or(0);
    if w.clients > 1 && w.clients > aimed_max && w.clients > w.readers.max(1) {
        let mut l = line.clone();
        l.workload.clients -= 1;
        out.push(l);
    }
    for i in 0..line.aims.len() {
        if line.aims.len() > 1 {
            let mut l = line.clone();
            l.aims.remove(i);
            out.push(l);
        }
    }
    out
}
