//! Trace files: everything needed to replay a run (scenario, seed, choices) and what it
//! did (the history), as JSON, with a human-readable timeline beside it.

mod error;
mod report;
#[cfg(test)]
mod tests;

pub use error::TraceError;
pub use report::{SavedEvent, SavedReport, SavedViolation};

use crate::timeline::{render_marked_timeline, render_timeline_html};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use zklock_recipe::history::{EventKind, History};
use zklock_sim::Scenario;

/// The trace format this zklock writes and the newest it reads. Bump it when older
/// readers would misread a newer file. Version 2 records watch events in the history and
/// the checker's report, version 3 a work-queue producer's calls; version 1 and 2 files
/// still load and replay.
pub const TRACE_FORMAT_VERSION: u32 = 3;

/// The first trace format whose histories record watch events: replay ignores them when
/// it compares with an older file's history.
pub const WATCH_EVENTS_SINCE_FORMAT: u32 = 2;

/// The first trace format whose histories record a producer's calls (`ProduceInvoked`,
/// `ProduceFailed`): replay ignores them when it compares with an older file's history.
pub const PRODUCE_EVENTS_SINCE_FORMAT: u32 = 3;

/// The version of zklock, recorded in each trace.
pub const ZKLOCK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The source commit zklock was built from (12 hex digits), recorded in each trace;
/// empty when built outside a git checkout.
pub const ZKLOCK_COMMIT: &str = env!("ZKLOCK_COMMIT");

/// One run, as a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub format_version: u32,
    pub zklock_version: String,
    /// The commit that wrote the trace ([`ZKLOCK_COMMIT`]); empty if unknown, as in
    /// traces written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zklock_commit: String,
    pub scenario: Scenario,
    pub seed: u64,
    /// The Chooser's decisions, in order: replaying them reproduces the run.
    pub choices: Vec<u32>,
    /// The recipe variant run, e.g. `mutex`.
    pub recipe: String,
    pub history: History,
    /// The property the run violated, if any.
    pub violation: Option<String>,
    /// The checker's report on the run: what was violated, the events that prove it, the
    /// faults just before. Absent in traces written before it was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SavedReport>,
    /// The seed of the run this trace was shrunk from ([`shrink`](crate::shrink())),
    /// which a fresh seed of the shrink may have replaced in `seed`; `None` for a trace
    /// not shrunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk_from: Option<u64>,
}

impl Trace {
    /// A trace in the current format, stamped with this zklock's version.
    pub fn new(
        scenario: Scenario,
        seed: u64,
        choices: Vec<u32>,
        recipe: impl Into<String>,
        history: History,
        violation: Option<String>,
    ) -> Trace {
        Trace {
            format_version: TRACE_FORMAT_VERSION,
            zklock_version: ZKLOCK_VERSION.to_owned(),
            zklock_commit: ZKLOCK_COMMIT.to_owned(),
            scenario,
            seed,
            choices,
            recipe: recipe.into(),
            history,
            violation,
            report: None,
            shrunk_from: None,
        }
    }

    /// The trace with the checker's report on its run.
    pub fn with_report(mut self, report: SavedReport) -> Trace {
        self.report = Some(report);
        self
    }

    /// Whether `replayed` is the history this trace recorded. A trace written before
    /// watch events ([`WATCH_EVENTS_SINCE_FORMAT`]) or a producer's calls
    /// ([`PRODUCE_EVENTS_SINCE_FORMAT`]) were recorded is compared with the replayed
    /// history's events of those kinds left out: recording them changed no decision.
    pub fn same_history(&self, replayed: &History) -> bool {
        if self.format_version >= PRODUCE_EVENTS_SINCE_FORMAT {
            return *replayed == self.history;
        }
        let watches = self.format_version >= WATCH_EVENTS_SINCE_FORMAT;
        let mut theirs = replayed.events.iter().filter(|e| match e.kind {
            EventKind::WatchEvent { .. } => watches,
            EventKind::ProduceInvoked | EventKind::ProduceFailed { .. } => false,
            _ => true,
        });
        let mut ours = self.history.events.iter();
        loop {
            match (theirs.next(), ours.next()) {
                (None, None) => return true,
                (Some(a), Some(b)) if a == b => {}
                _ => return false,
            }
        }
    }

    /// Where the visual timeline of the trace at `path` goes: `<path>.timeline.html`.
    pub fn html_path(path: &Path) -> PathBuf {
        let mut p: OsString = path.as_os_str().to_owned();
        p.push(".timeline.html");
        PathBuf::from(p)
    }

    /// The visual timeline: one self-contained HTML page (see
    /// [`timeline::html`](crate::timeline::html)).
    pub fn timeline_html(&self) -> String {
        render_timeline_html(self)
    }

    /// Where the timeline of the trace at `path` goes: `<path>.timeline.txt`.
    pub fn timeline_path(path: &Path) -> PathBuf {
        let mut p: OsString = path.as_os_str().to_owned();
        p.push(".timeline.txt");
        PathBuf::from(p)
    }

    /// "seed 7", and for a shrunk trace the seed it came from: "seed 7, shrunk from seed
    /// 1", so that its titles lead back to the run that failed.
    pub fn seed_words(&self) -> String {
        match self.shrunk_from {
            Some(from) => format!("seed {}, shrunk from seed {from}", self.seed),
            None => format!("seed {}", self.seed),
        }
    }

    /// The timeline file's text: a header naming the run, then the history's timeline.
    pub fn timeline(&self) -> String {
        let commit = match self.zklock_commit.as_str() {
            "" => String::new(),
            c => format!(" (commit {c})"),
        };
        let mut out = format!(
            "zklock {}{commit} trace (format {}): recipe {}, {}, {} clients, {} \
             choices\nviolation: {}\n\n",
            self.zklock_version,
            self.format_version,
            self.recipe,
            self.seed_words(),
            self.scenario.clients,
            self.choices.len(),
            self.violation.as_deref().unwrap_or("none")
        );
        let marks = match &self.report {
            Some(report) => {
                out.push_str("the checker's report:\n");
                out.push_str(&report.text);
                if let Some(why) = &report.stopped {
                    out.push_str(&format!("the run stopped early: {why}\n"));
                }
                out.push('\n');
                report.marks()
            }
            None => Default::default(),
        };
        out.push_str(&render_marked_timeline(&self.history, &marks));
        out
    }

    /// Writes the trace as pretty JSON to `path`, and its timelines beside it (text,
    /// [`Trace::timeline_path`], and HTML, [`Trace::html_path`]), all private to the user
    /// (0600 on Unix). Each file is written to a temporary file in
    /// the same directory and renamed into place, so a crash leaves either the old file
    /// or the new one, never half of one. An existing file is replaced: callers that
    /// must not replace one check first (the `zklock` command line does).
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        let io_err = |source| TraceError::Io {
            path: path.to_owned(),
            source,
        };
        let mut json = serde_json::to_string_pretty(self).map_err(|e| io_err(e.into()))?;
        json.push('\n');
        write_atomic(path, json.as_bytes()).map_err(io_err)?;
        let timeline = Trace::timeline_path(path);
        write_atomic(&timeline, self.timeline().as_bytes()).map_err(|source| TraceError::Io {
            path: timeline,
            source,
        })?;
        let html = Trace::html_path(path);
        write_atomic(&html, self.timeline_html().as_bytes())
            .map_err(|source| TraceError::Io { path: html, source })
    }

    /// Reads a trace file. Never panics: every problem is a [`TraceError`] naming the
    /// file. A file larger than [`TRACE_BYTES_MAX`] is refused before it is read. The
    /// format version is checked before anything else, so a newer file with fields this
    /// zklock does not know is reported as newer, not as corrupt; the scenario is checked
    /// against its bounds ([`Scenario::validate`]) before anything runs it. Loading takes
    /// the file's bytes and the trace itself in memory, about twice the file's size.
    pub fn read(path: &Path) -> Result<Trace, TraceError> {
        let bytes = read_bounded(path)?;
        Trace::from_slice(&bytes, path)
    }

    /// Reads a trace from the bytes of a file, as [`Trace::read`] does; `path` names the
    /// file in errors.
    pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Trace, TraceError> {
        if bytes.len() as u64 > TRACE_BYTES_MAX {
            return Err(TraceError::TooLarge {
                path: path.to_owned(),
                bytes: bytes.len() as u64,
                max: TRACE_BYTES_MAX,
            });
        }
        let found = format_version(path, bytes)?;
        if found > TRACE_FORMAT_VERSION {
            return Err(TraceError::NewerFormat {
                path: path.to_owned(),
                found,
                supported: TRACE_FORMAT_VERSION,
            });
        }
        let trace: Trace = serde_json::from_slice(bytes).map_err(|e| json_error(path, &e))?;
        if let Some(index) = trace
            .report
            .as_ref()
            .and_then(|r| r.index_out_of(trace.history.events.len()))
        {
            return Err(TraceError::Corrupt {
                path: path.to_owned(),
                line: 0,
                column: 0,
                what: format!(
                    "its report names event #{index}, but its history has {} events",
                    trace.history.events.len()
                ),
            });
        }
        trace
            .scenario
            .validate()
            .map_err(|error| TraceError::Invalid {
                path: path.to_owned(),
                error,
            })?;
        // The bound `zklock real --session-timeout-ms` sets: a file gives no value the
        // flag refuses.
        if trace.scenario.session_timeout_ms < SESSION_TIMEOUT_MS_MIN {
            return Err(TraceError::Corrupt {
                path: path.to_owned(),
                line: 0,
                column: 0,
                what: format!(
                    "its scenario's session_timeout_ms is {}, below the least a run takes, \
                     {SESSION_TIMEOUT_MS_MIN}",
                    trace.scenario.session_timeout_ms
                ),
            });
        }
        Ok(trace)
    }
}

/// The shortest session timeout a trace's scenario may give, in ms: the least `zklock real`
/// accepts (`zklock_real::workload::MIN_SESSION_TIMEOUT_MS`, what its harness servers
/// grant).
pub const SESSION_TIMEOUT_MS_MIN: u64 = 400;

/// A trace file's size at most, in bytes: 256 MiB. A run within the scenario's bounds
/// (`zklock_sim::scenario::limits`) writes less: some 3 KB an acquire attempt, some 32 MB
/// at most acquire attempts, some 150 MB for a run stopped at its step limit. Reading one
/// takes about twice its size in memory.
pub const TRACE_BYTES_MAX: u64 = 256 << 20;

/// The file's bytes, refused past [`TRACE_BYTES_MAX`] (before reading, by its length, and
/// while reading, for a file that grows or a device that never ends).
fn read_bounded(path: &Path) -> Result<Vec<u8>, TraceError> {
    let io_err = |source| TraceError::Io {
        path: path.to_owned(),
        source,
    };
    let too_large = |bytes| TraceError::TooLarge {
        path: path.to_owned(),
        bytes,
        max: TRACE_BYTES_MAX,
    };
    let file = fs::File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    if len > TRACE_BYTES_MAX {
        return Err(too_large(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(TRACE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > TRACE_BYTES_MAX {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The `format_version` field alone. The rest of the file is skipped, not built into a
/// JSON tree: a tree of a trace takes some twenty times the file's size.
fn format_version(path: &Path, bytes: &[u8]) -> Result<u32, TraceError> {
    #[derive(Deserialize)]
    struct Header {
        format_version: Option<serde_json::Value>,
    }
    let corrupt = |what: String| TraceError::Corrupt {
        path: path.to_owned(),
        line: 0,
        column: 0,
        what,
    };
    let header: Header = match serde_json::from_slice(bytes) {
        Ok(h) => h,
        Err(e) if e.is_data() && e.to_string().starts_with("invalid type") => {
            return Err(corrupt("expected a JSON object at the top level".into()));
        }
        Err(e) => return Err(json_error(path, &e)),
    };
    match header.format_version {
        None => Err(TraceError::MissingField {
            path: path.to_owned(),
            field: "format_version".into(),
        }),
        Some(v) => v
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                corrupt(format!(
                    "format_version must be a small unsigned integer, found {v}"
                ))
            }),
    }
}

/// Classifies a serde_json error into the trace error that explains it.
fn json_error(path: &Path, e: &serde_json::Error) -> TraceError {
    use serde_json::error::Category;
    let path = path.to_owned();
    let (line, column) = (e.line(), e.column());
    match e.classify() {
        Category::Eof => TraceError::Truncated { path, line, column },
        Category::Io => TraceError::Io {
            path,
            source: io::Error::other(e.to_string()),
        },
        Category::Data => {
            let msg = e.to_string();
            match missing_field(&msg) {
                Some(field) => TraceError::MissingField { path, field },
                None => TraceError::Corrupt {
                    path,
                    line,
                    column,
                    what: strip_position(&msg),
                },
            }
        }
        Category::Syntax => TraceError::Corrupt {
            path,
            line,
            column,
            what: strip_position(&e.to_string()),
        },
    }
}

/// `missing field `seed` at line 3 column 1` -> `seed`.
fn missing_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("missing field `")?;
    rest.split('`').next().map(str::to_owned)
}

/// serde_json appends " at line L column C"; the error reports those separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(at) => msg[..at].to_owned(),
        None => msg.to_owned(),
    }
}

/// A new file, readable and writable by its owner alone (0600 on Unix): a trace holds a
/// run's every detail, which is nobody else's business.
fn create_private(path: &Path) -> io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = create_private(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
