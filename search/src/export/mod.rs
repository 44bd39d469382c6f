//! Exported reproductions: a finding as a test a maintainer runs with their library
//! alone (`zklock search --export DIR`, `zklock export`): for a Kazoo lock one Python
//! file, for Curator's locks and ZooKeeper's own WriteLock one Java file.
//!
//! The file starts its own ZooKeeper server (or takes one given), carries a small proxy
//! that injects exactly the finding's faults, drives the script's attempts with the
//! library's API and fails with an assertion in the library's terms. Before it is written, the script is
//! shrunk (fewer attempts, clients, faults, as long as it still fails) and the smallest
//! is verified here: run [`ExportOptions::runs`] times, it must fail at least once (its
//! rate is reported), and, with its faults removed, pass. A file that does not fail is
//! never written. Other libraries' findings (zookeeper-client's) are refused
//! ([`ExportError::UnsupportedLock`]).

mod java;
mod kazoo;
mod line;
mod readme;
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
/// The Java a Java export is verified with by default.
pub const JAVA_DEFAULT: &str = "/usr/bin/java";
/// The `javac` a Java export is compiled with by default (else `ZKLOCK_JAVAC`).
pub const JAVAC_DEFAULT: &str = "/usr/bin/javac";
/// Where Curator's, ZooKeeper's and their dependencies' jars are by default (Debian's;
/// else `ZKLOCK_JAVA_LIBS`, as for the drivers).
pub const JAVA_LIBS_DEFAULT: &str = "/usr/share/java";

/// The properties an export states in the library's terms: a finding must violate one
/// of them. The most telling first: a directory is named after the first it violates.
const PROPERTIES: [&str; 5] = [
    "node_outlives_attempt",
    "timed_acquire_in_time",
    "mutual_exclusion",
    "fencing_token_order",
    "liveness_after_heal",
];

/// The language a lock's findings export in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Language {
    Python,
    Java(java::Library),
}

impl Language {
    fn of(lock: &str) -> Option<Language> {
        if kazoo::LOCKS.iter().any(|(name, _)| *name == lock) {
            return Some(Language::Python);
        }
        java::Library::of(lock).map(Language::Java)
    }

    /// The file it writes.
    fn file_name(self) -> &'static str {
        match self {
            Language::Python => "repro.py",
            Language::Java(_) => java::FILE_NAME,
        }
    }

    fn render(
        self,
        line: &RealLine,
        checks: &[String],
        title: &str,
    ) -> Result<String, ExportError> {
        match self {
            Language::Python => kazoo::render(line, checks, title),
            Language::Java(_) => java::render(line, checks, title),
        }
    }

    fn run(
        self,
        options: &ExportOptions,
        file: &Path,
        no_fault: bool,
    ) -> Result<(RunResult, Option<String>), ExportError> {
        match self {
            Language::Python => kazoo::run_file(options, file, no_fault),
            Language::Java(library) => java::run_file(options, library, file, no_fault),
        }
    }
}

/// Why a finding was not exported.
#[non_exhaustive]
#[derive(Debug)]
pub enum ExportError {
    /// The finding is of a lock this version exports nothing for (zookeeper-client's).
    UnsupportedLock { lock: String },
    /// The finding needs what an export does not carry (a fault, a property).
    Unsupported { reason: String },
    /// A line, a journal or an option that cannot be read, or out of its bounds.
    Invalid { reason: String },
    /// The file did not fail in any of `runs` runs here: it is no reproduction.
    DoesNotReproduce { runs: u32 },
    /// Without its faults it failed too: it does not reproduce what the faults cause.
    FailsWithoutFault { assertion: String },
    /// Python, Kazoo, Java, a jar or ZooKeeper is missing, or a run broke.
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
                 export, as Python, and Curator's and ZooKeeper's WriteLock ({}), as Java",
                kazoo::LOCKS.map(|l| l.0).join(", "),
                java::LOCKS.map(|l| l.0).join(", ")
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
    let python = kazoo::LOCKS.iter().map(|(name, _)| *name);
    python.chain(java::LOCKS.iter().map(|l| l.0)).collect()
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
    /// The Python that runs a Python export (default [`PYTHON_DEFAULT`]).
    pub python: PathBuf,
    /// The Java that runs a Java export (default [`JAVA_DEFAULT`]).
    pub java: PathBuf,
    /// The `javac` that compiles it (default `ZKLOCK_JAVAC`, else [`JAVAC_DEFAULT`]).
    pub javac: PathBuf,
    /// The directory of the jars it compiles and runs against (default
    /// `ZKLOCK_JAVA_LIBS`, else [`JAVA_LIBS_DEFAULT`]).
    pub java_libs: PathBuf,
    /// Whether smaller scripts are tried first (default true).
    pub shrink: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            runs: RUNS_DEFAULT,
            python: PathBuf::from(PYTHON_DEFAULT),
            java: PathBuf::from(JAVA_DEFAULT),
            javac: std::env::var_os(zklock_real::driver::locate::JAVAC_ENV)
                .map_or_else(|| PathBuf::from(JAVAC_DEFAULT), PathBuf::from),
            java_libs: std::env::var_os(zklock_real::driver::locate::JARS_ENV)
                .map_or_else(|| PathBuf::from(JAVA_LIBS_DEFAULT), PathBuf::from),
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
    /// Its directory: `repro.py` or `Repro.java`, `README.md`, the timeline.
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
    let lang = Language::of(&line.lock).ok_or_else(|| ExportError::UnsupportedLock {
        lock: line.lock.clone(),
    })?;
    let checks: Vec<String> = (PROPERTIES.iter())
        .filter(|p| finding.violated.iter().any(|v| v == *p))
        .map(|p| p.to_string())
        .collect();
    if checks.is_empty() {
        return Err(ExportError::Unsupported {
            reason: format!(
                "{}: an export states {} only, in the library's terms",
                finding.violated.join(", "),
                PROPERTIES.join(", ")
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
    let file = work.join(lang.file_name());
    let write = |l: &RealLine| -> Result<(), ExportError> {
        let text = lang.render(l, &checks, &title)?;
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
                if let (RunResult::Failed(_), _) = lang.run(options, &file, false)? {
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
        let (result, v) = lang.run(options, &file, false)?;
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
            let (result, _) = lang.run(options, &file, true)?;
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
    let target = dir.join(lang.file_name());
    std::fs::rename(&file, &target)
        .or_else(|_| std::fs::copy(&file, &target).map(|_| ()))
        .map_err(io(&target))?;
    let _ = std::fs::remove_dir_all(&work);
    let readme = readme::readme(finding, lang, &line, &best, &exported, &title, &checks);
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

/// Runs an export's file in `dir` once here (its own server), without its faults when
/// `no_fault`: `Some(assertion)` when it failed, `None` when the lock behaved. A Java
/// file is compiled in a temporary directory, so that `dir` is left as it is.
pub fn run_reproduction(
    dir: &Path,
    options: &ExportOptions,
    no_fault: bool,
) -> Result<Option<String>, ExportError> {
    let (lang, file) = reproduction_in(dir)?;
    let result = match lang {
        Language::Python => lang.run(options, &file, no_fault),
        Language::Java(_) => {
            let work = tempdir()?;
            let copy = work.join(lang.file_name());
            let copied = std::fs::copy(&file, &copy).map_err(|source| ExportError::Io {
                path: copy.clone(),
                source,
            });
            let result = copied.and_then(|_| lang.run(options, &copy, no_fault));
            let _ = std::fs::remove_dir_all(&work);
            result
        }
    };
    Ok(match result?.0 {
        RunResult::Failed(assertion) => Some(assertion),
        RunResult::Passed => None,
    })
}

/// The language and file of the export in `dir`: a Java file's library is its line's.
fn reproduction_in(dir: &Path) -> Result<(Language, PathBuf), ExportError> {
    let python = dir.join(Language::Python.file_name());
    if python.is_file() {
        return Ok((Language::Python, python));
    }
    let file = dir.join(java::FILE_NAME);
    let text = std::fs::read_to_string(&file).map_err(|source| ExportError::Io {
        path: file.clone(),
        source,
    })?;
    let library = (text.lines())
        .find_map(|l| l.strip_prefix(java::LINE_PREFIX))
        .and_then(|l| RealLine::parse(l).ok())
        .and_then(|l| java::Library::of(&l.lock))
        .ok_or_else(|| ExportError::Invalid {
            reason: format!("{}: no line of a Java lock in it", file.display()),
        })?;
    Ok((Language::Java(library), file))
}

/// A Java export's text as an export writes it today, from the line, the properties and
/// the title the text states: what a committed file is checked against.
pub fn java_rendered_again(text: &str) -> Result<String, ExportError> {
    let bad = |what: &str| ExportError::Invalid {
        reason: format!("not a Java export: no {what}"),
    };
    let title = (text.lines().next())
        .and_then(|l| l.strip_prefix("// "))
        .ok_or_else(|| bad("title"))?;
    let line = (text.lines())
        .find_map(|l| l.strip_prefix(java::LINE_PREFIX))
        .ok_or_else(|| bad("line"))?;
    let checks: Vec<String> = (text.lines())
        .find_map(|l| {
            l.trim()
                .strip_prefix("static final Set<String> CHECK = Set.of(")
        })
        .ok_or_else(|| bad("CHECK"))?
        .trim_end_matches(");")
        .split(", ")
        .map(|c| c.trim_matches('"').to_owned())
        .collect();
    java::render(&RealLine::parse(line)?, &checks, title)
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
