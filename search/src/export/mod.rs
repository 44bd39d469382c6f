//! Exported reproductions: a finding of a Kazoo lock as one Python file a maintainer runs
//! with Python and Kazoo alone (`zklock search --export DIR`, `zklock export`).
//!
//! The file starts its own ZooKeeper server (or takes one given), carries a small proxy
//! that injects exactly the finding's faults, drives the script's attempts with Kazoo's
//! API and fails with an assertion in Kazoo's terms. Before it is written, the script is
//! shrunk (fewer attempts, clients, faults, as long as it still fails) and the smallest
//! is verified here: run [`ExportOptions::runs`] times, it must fail at least once (its
//! rate is reported), and, with its faults removed, pass. A file that does not fail is
//! never written. Other libraries' findings are refused
//! ([`ExportError::UnsupportedLock`]).

mod kazoo;
mod line;
pub mod versions;

pub use line::{Aim, RealLine};

use crate::engine::Finding;
use kazoo::RunResult;
use std::fmt;
use std::path::{Path, PathBuf};

/// The verification's runs by default: a reproduction fails in each.
pub const RUNS_DEFAULT: u32 = 3;
/// The most verification runs asked for.
pub const RUNS_MAX: u32 = 20;
/// The Python an export is verified with by default: Debian's, whose Kazoo it tests.
pub const PYTHON_DEFAULT: &str = "/usr/bin/python3";

/// Why a finding was not exported.
#[non_exhaustive]
#[derive(Debug)]
pub enum ExportError {
    /// The finding is of a lock this version exports nothing for (only Kazoo's locks).
    UnsupportedLock { lock: String },
    /// The finding needs what an export does not carry (a fault, a property).
    Unsupported { reason: String },
    /// A line, a journal or an option that cannot be read, or out of its bounds.
    Invalid { reason: String },
    /// The file did not fail in any of `runs` runs here: it is no reproduction.
    DoesNotReproduce { runs: u32 },
    /// Without its faults it failed too: it does not reproduce what the faults cause.
    FailsWithoutFault { assertion: String },
    /// Python, Kazoo, Java or ZooKeeper is missing, or a run broke.
    Run { reason: String },
    /// Writing the export's files; an existing directory is never overwritten.
    Io {
        path: PathBuf,
        #[doc(hidden)]
        source: std::io::Error,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::UnsupportedLock { lock } => write!(
                f,
                "exporting a finding of {lock} is not supported yet: only Kazoo's locks ({}) \
                 export, as Python",
                supported_locks().join(", ")
            ),
            ExportError::Unsupported { reason }
            | ExportError::Invalid { reason }
            | ExportError::Run { reason } => f.write_str(reason),
            ExportError::DoesNotReproduce { runs } => write!(
                f,
                "the export passed in {runs} of {runs} runs here: it does not reproduce the \
                 finding, so nothing was written"
            ),
            ExportError::FailsWithoutFault { assertion } => write!(
                f,
                "the export fails with its faults removed too ({assertion}): it does not \
                 reproduce what its faults cause, so nothing was written"
            ),
            ExportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // An I/O error's cause is in its message already.
        None
    }
}

/// The locks whose findings export.
pub fn supported_locks() -> Vec<&'static str> {
    kazoo::LOCKS.iter().map(|(name, _)| *name).collect()
}

/// `Ok` when findings of `lock` export; else why not (before a search runs).
pub fn check_lock(lock: &str) -> Result<(), ExportError> {
    match supported_locks().contains(&lock) {
        true => Ok(()),
        false => Err(ExportError::UnsupportedLock {
            lock: lock.to_owned(),
        }),
    }
}

/// How an export is verified and shrunk.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Runs of the exported file, 1 to [`RUNS_MAX`] (default [`RUNS_DEFAULT`]).
    pub runs: u32,
    /// The Python that runs it (default [`PYTHON_DEFAULT`]).
    pub python: PathBuf,
    /// Whether smaller scripts are tried first (default true).
    pub shrink: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            runs: RUNS_DEFAULT,
            python: PathBuf::from(PYTHON_DEFAULT),
            shrink: true,
        }
    }
}

/// What an export is made from: a finding's line, what it violated and its timeline.
#[derive(Clone, Debug, Default)]
pub struct ToExport {
    /// Its `zklock real` line.
    pub repro: String,
    pub violated: Vec<String>,
    pub timeline: Option<String>,
    pub explanation: Option<String>,
    pub html: Option<String>,
}

impl From<&Finding> for ToExport {
    fn from(f: &Finding) -> ToExport {
        ToExport {
            repro: f.repro.clone(),
            violated: f.violated.clone(),
            timeline: f.timeline.clone(),
            explanation: f.explanation.clone(),
            html: f.html.clone(),
        }
    }
}

/// An export written.
#[derive(Clone, Debug)]
pub struct Exported {
    /// Its directory: `repro.py`, `README.md`, the timeline.
    pub dir: PathBuf,
    /// The `zklock real` line of the script exported (after shrinking).
    pub line: String,
    /// Whether it is smaller than the finding's.
    pub shrunk: bool,
    /// Verification runs that failed, of `runs`.
    pub failed: u32,
    pub runs: u32,
    /// What the file's assertion said.
    pub assertion: String,
    /// Whether it passed with its faults removed (None: the finding has no fault).
    pub control_passed: Option<bool>,
    /// The versions it ran against.
    pub versions: String,
}

/// Exports `finding` into a new directory under `parent`, after shrinking and verifying
/// it; `progress` hears each run. The directory must not exist.
pub fn export(
    finding: &ToExport,
    parent: &Path,
    options: &ExportOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Exported, ExportError> {
    if !(1..=RUNS_MAX).contains(&options.runs) {
        return Err(ExportError::Invalid {
            reason: format!("--runs must be 1 to {RUNS_MAX}, got {}", options.runs),
        });
    }
    let line = RealLine::parse(&finding.repro)?;
    check_lock(&line.lock)?;
    let checks: Vec<String> = (kazoo::PROPERTIES.iter())
        .filter(|p| finding.violated.iter().any(|v| v == *p))
        .map(|p| p.to_string())
        .collect();
    if checks.is_empty() {
        return Err(ExportError::Unsupported {
            reason: format!(
                "{}: an export states {} only, in Kazoo's terms",
                finding.violated.join(", "),
                kazoo::PROPERTIES.join(", ")
            ),
        });
    }
    let dir = parent.join(dir_name(&line, &checks));
    if dir.exists() {
        return Err(ExportError::Io {
            path: dir,
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists already: remove it or export elsewhere",
            ),
        });
    }
    let work = tempdir()?;
    let title = title_of(&line, &checks);
    let file = work.join("repro.py");
    let write = |l: &RealLine| -> Result<(), ExportError> {
        let text = kazoo::render(l, &checks, &title)?;
        std::fs::write(&file, text).map_err(|source| ExportError::Io {
            path: file.clone(),
            source,
        })
    };
    // Shrinking: the first smaller script that still fails, again, until none does.
    let mut best = line.clone();
    if options.shrink {
        'smaller: loop {
            for candidate in kazoo::smaller(&best) {
                write(&candidate)?;
                progress(&format!("shrinking: {candidate}"));
                if let (RunResult::Failed(_), _) = kazoo::run_file(options, &file, false)? {
                    best = candidate;
                    continue 'smaller;
                }
            }
            break;
        }
    }
    write(&best)?;
    let (mut failed, mut assertion, mut versions) = (0, String::new(), String::new());
    for i in 0..options.runs {
        let (result, v) = kazoo::run_file(options, &file, false)?;
        versions = v.unwrap_or(versions);
        progress(&format!(
            "verifying, run {} of {}: {result:?}",
            i + 1,
            options.runs
        ));
        if let RunResult::Failed(a) = result {
            failed += 1;
            assertion = a;
        }
    }
    if failed == 0 {
        let _ = std::fs::remove_dir_all(&work);
        return Err(ExportError::DoesNotReproduce { runs: options.runs });
    }
    let control_passed = match best.aims.is_empty() {
        true => None,
        false => {
            let (result, _) = kazoo::run_file(options, &file, true)?;
            progress(&format!("without its faults: {result:?}"));
            if let RunResult::Failed(a) = result {
                let _ = std::fs::remove_dir_all(&work);
                return Err(ExportError::FailsWithoutFault { assertion: a });
            }
            Some(true)
        }
    };
    let exported = Exported {
        dir: dir.clone(),
        line: best.to_string(),
        shrunk: best.to_string() != line.to_string(),
        failed,
        runs: options.runs,
        assertion,
        control_passed,
        versions,
    };
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let target = dir.join("repro.py");
    std::fs::rename(&file, &target)
        .or_else(|_| std::fs::copy(&file, &target).map(|_| ()))
        .map_err(io(&target))?;
    let _ = std::fs::remove_dir_all(&work);
    let readme = readme(finding, &line, &best, &exported, &title, &checks);
    std::fs::write(dir.join("README.md"), readme).map_err(io(&dir))?;
    let extras = [
        ("timeline.txt", &finding.timeline),
        ("explanation.txt", &finding.explanation),
        ("timeline.html", &finding.html),
    ];
    for (name, text) in extras {
        if let Some(text) = text {
            std::fs::write(dir.join(name), text).map_err(io(&dir.join(name)))?;
        }
    }
    Ok(exported)
}

fn tempdir() -> Result<PathBuf, ExportError> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let dir = base.join(format!("zklock-export-{}-{n}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Ok(dir);
        }
    }
    Err(ExportError::Io {
        path: base,
        source: std::io::Error::other("no temporary directory could be made"),
    })
}

/// `kazoo-lock-node_outlives_attempt-0-drop-request-delete-4`: the lock, the property and
/// the points.
fn dir_name(line: &RealLine, checks: &[String]) -> String {
    let mut name = format!("{}-{}", line.lock, checks[0]);
    match line.aims.is_empty() {
        true => name.push_str("-no-fault"),
        false => {
            for aim in &line.aims {
                name.push('-');
                name.push_str(&format!(
                    "{}-{}-{}-{}",
                    aim.client, aim.action, aim.op, aim.nth
                ));
            }
        }
    }
    name
}

fn title_of(line: &RealLine, checks: &[String]) -> String {
    let faults = match line.aims.len() {
        0 => "with no fault".to_owned(),
        _ => {
            let aims: Vec<String> = line.aims.iter().map(Aim::to_string).collect();
            format!("after {}", aims.join(" and "))
        }
    };
    format!("{}: {} {faults}", line.lock, checks.join(", "))
}

fn readme(
    finding: &ToExport,
    found: &RealLine,
    best: &RealLine,
    e: &Exported,
    title: &str,
    checks: &[String],
) -> String {
    let w = &best.workload;
    let rate = match (e.failed, e.runs) {
        (f, r) if f == r => format!("it failed in {f} of {r} runs"),
        (f, r) => format!("it failed in {f} of {r} runs only: the outcome turns on timing"),
    };
    let control = match e.control_passed {
        Some(_) => "With `--no-fault` (the same script, no fault injected) it passes.".to_owned(),
        None => "The finding needs no fault: `--no-fault` runs the same script.".to_owned(),
    };
    let shrunk = match e.shrunk {
        true => format!(
            "This file runs a smaller script than the search's, the smallest that still \
             fails (fewer attempts, clients or faults), as zklock runs it: `{}`.",
            e.line
        ),
        false => "No smaller script (fewer attempts, clients or faults) still fails.".to_owned(),
    };
    let files = [
        (
            "timeline.txt",
            &finding.timeline,
            "zklock's timeline of the search's run that found it",
        ),
        (
            "explanation.txt",
            &finding.explanation,
            "zklock's checker on each property",
        ),
        ("timeline.html", &finding.html, "the timeline as a page"),
    ];
    let files: String = files
        .iter()
        .filter(|(_, text, _)| text.is_some())
        .map(|(name, _, what)| format!("- [`{name}`]({name}): {what}\n"))
        .collect();
    format!(
        "# {title}\n\n\
         ## Versions\n\n{versions}\n\n\
         ## Steps\n\n\
         ```sh\npython3 repro.py            # starts a ZooKeeper server of its own\n\
         ZK_HOSTS=127.0.0.1:2181 python3 repro.py   # or uses yours\n```\n\n\
         The file needs Python 3 and Kazoo alone (and, to start its own server, Java and the \
         ZooKeeper jars: `ZK_JAVA`, `ZK_JAR`). Each client is a `KazooClient` of its own, \
         connected through a small proxy in the file that injects the faults below at the \
         requests they name.\n\n\
         What it does, on sessions of {session} ms:\n\n{steps}\n\n\
         ## Expected\n\n{expected}\n\n\
         ## What happened\n\n```\nAssertionError: {assertion}\n```\n\n\
         Verified here: {rate}. {control}\n\n{shrunk}\n\n\
         Found by zklock's fault-point search: `{found}`\n\n{files}",
        versions = e.versions,
        session = w.session_timeout_ms,
        steps = steps(best),
        expected = expected(checks),
        assertion = e.assertion,
    )
}

/// The script in Kazoo's terms: each client's calls, then the faults.
fn steps(line: &RealLine) -> String {
    use zklock_recipe::history::AcquireMode;
    let w = &line.workload;
    let mut out = Vec::new();
    for i in 0..w.clients {
        let class = match line.lock.as_str() {
            "kazoo-semaphore" => "Semaphore(max_leases=1)",
            "kazoo-rw" if i < w.readers => "ReadLock",
            "kazoo-rw" => "WriteLock",
            _ => "Lock",
        };
        let calls: Vec<String> = (0..u64::from(w.attempts_per_client))
            .map(|k| match zklock_real::workload::mode_of(i as usize, k, w) {
                AcquireMode::Blocking => "`acquire()`".to_owned(),
                AcquireMode::Try => "`acquire(blocking=False)`".to_owned(),
                AcquireMode::Timeout { timeout_ms } => {
                    format!("`acquire(timeout={})`", timeout_ms as f64 / 1000.0)
                }
                AcquireMode::Dropped { after_ms } => {
                    format!("`acquire()` cancelled (`cancel()`) after {after_ms} ms")
                }
            })
            .collect();
        let start = match w.start_stagger_ms.saturating_mul(u64::from(i)) {
            0 => String::new(),
            ms => format!(", from {ms} ms"),
        };
        out.push(format!(
            "- client {i}, a `{class}` on `{}`{start}: {}; each hold {}, then `release()`",
            w.lock_path,
            calls.join(", "),
            match w.long_hold_every {
                0 => format!("{} ms", w.hold_ms),
                1 => format!("{} ms", w.long_hold_ms),
                n => format!("{} ms ({} ms every {n}th)", w.hold_ms, w.long_hold_ms),
            }
        ));
    }
    for aim in &line.aims {
        let what = match aim.action.as_str() {
            "drop-request" => {
                "is dropped before the server sees it and the connection cut (ConnectionLoss)"
            }
            "withhold-reply" => {
                "reaches the server, its reply is withheld and the connection cut (ConnectionLoss)"
            }
            "expire" => {
                "is dropped, the connection cut, and the session closed at the server before the client reconnects (SessionExpired)"
            }
            _ => "is held 1 s while the caller gives the acquire up (`cancel()`), then goes on",
        };
        let which = match aim.repeat {
            zklock_real::plan::Repeat::Once => format!("request {} of", aim.nth),
            zklock_real::plan::Repeat::Next(n) => {
                format!("requests {} to {} of", aim.nth, aim.nth + n - 1)
            }
            zklock_real::plan::Repeat::WindowMs(ms) => {
                format!("for {ms} ms from request {} of", aim.nth)
            }
        };
        out.push(format!(
            "- the fault: client {}'s {which} its `{}` requests under `{}` {what}",
            aim.client, aim.op, aim.under
        ));
    }
    if line.aims.is_empty() {
        out.push("- no fault".to_owned());
    }
    out.join("\n")
}

fn expected(checks: &[String]) -> String {
    let lines: Vec<&str> = checks
        .iter()
        .map(|p| match p.as_str() {
            "node_outlives_attempt" => {
                "- an acquire that fails, times out or is cancelled leaves no node behind: \
                 its cleanup deletes it, or the session ends"
            }
            "timed_acquire_in_time" => {
                "- `acquire(timeout=T)` returns within T (and a second of grace for its cleanup)"
            }
            "mutual_exclusion" => "- no two clients hold the lock at once",
            "liveness_after_heal" => {
                "- a blocking `acquire()` is served within twice the session timeout and 1 s of \
                 its start, the last fault and the last release, unless another client holds"
            }
            _ => "- `acquire()` returns True only while the client's own node exists",
        })
        .collect();
    lines.join("\n")
}

/// The violating runs a search's journal saved, each with its `zklock real` line (a
/// shape's run on its shape's script).
pub fn journal_findings(path: &Path) -> Result<Vec<ToExport>, ExportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ExportError::Io {
        path: path.to_owned(),
        source,
    })?;
    let bad = |n: usize, why: &str| ExportError::Invalid {
        reason: format!("{} line {}: {why}", path.display(), n + 1),
    };
    let mut setup: Option<String> = None;
    let mut found = Vec::new();
    for (n, l) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).map_err(|e| bad(n, &e.to_string()))?;
        if let Some(s) = v.get("setup").and_then(|s| s.as_str()) {
            // The script's line, then the actions the search tried, in brackets.
            setup = Some(s.split(" (pause ").next().unwrap_or(s).to_owned());
            continue;
        }
        let line = setup
            .as_deref()
            .ok_or_else(|| bad(n, "no setup line before it"))?;
        let (key, outcome) = match (v.get("reference"), v.get("plan")) {
            (Some(o), _) => ("", o),
            (None, Some(k)) => (
                k.as_str().unwrap_or_default(),
                v.get("outcome")
                    .ok_or_else(|| bad(n, "a plan without its outcome"))?,
            ),
            _ => return Err(bad(n, "neither setup, reference nor plan")),
        };
        let strings = |key: &str| -> Vec<String> {
            (outcome
                .get(key)
                .and_then(|a| a.as_array())
                .into_iter()
                .flatten())
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
        };
        let violated = strings("violated");
        if violated.is_empty() || key.starts_with("control:") {
            continue;
        }
        let repro = match key.strip_prefix("shape:") {
            Some(shape) => {
                let shape = zklock_real::shapes::Shape::parse(shape)
                    .ok_or_else(|| bad(n, &format!("an unknown shape {shape:?}")))?;
                let mut l = RealLine::parse(line)?;
                l.workload = shape.script(&l.workload);
                l.to_string()
            }
            None => {
                let aims: String = (key.split_whitespace())
                    .map(|a| format!(" --aim {a}"))
                    .collect();
                format!("{line}{aims}")
            }
        };
        let text = |key: &str| outcome.get(key).and_then(|t| t.as_str()).map(str::to_owned);
        found.push(ToExport {
            repro,
            violated,
            timeline: text("timeline"),
            explanation: text("explanation"),
            html: text("html"),
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
