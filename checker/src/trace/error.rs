//! Why a trace file could not be read or written. Every variant names the file.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A trace file problem. Each message names the file and says what to do.
#[non_exhaustive]
#[derive(Debug)]
pub enum TraceError {
    /// The file could not be read or written.
    Io { path: PathBuf, source: io::Error },
    /// The file ends in the middle of the JSON (an interrupted write or copy).
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    /// The file is not a valid trace: bad JSON, or a field of the wrong type.
    Corrupt {
        path: PathBuf,
        /// 0 when the position is unknown.
        line: usize,
        column: usize,
        what: String,
    },
    /// Written by a newer zklock, in a format this one does not know.
    NewerFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// A required field is absent.
    MissingField { path: PathBuf, field: String },
    /// The file is larger than [`TRACE_BYTES_MAX`](super::TRACE_BYTES_MAX).
    TooLarge { path: PathBuf, bytes: u64, max: u64 },
    /// The trace's scenario is outside its bounds: nothing may run it.
    Invalid {
        path: PathBuf,
        error: zklock_sim::ScenarioError,
    },
}

impl TraceError {
    /// The trace file concerned.
    pub fn path(&self) -> &std::path::Path {
        match self {
            TraceError::Io { path, .. }
            | TraceError::Truncated { path, .. }
            | TraceError::Corrupt { path, .. }
            | TraceError::NewerFormat { path, .. }
            | TraceError::MissingField { path, .. }
            | TraceError::TooLarge { path, .. }
            | TraceError::Invalid { path, .. } => path,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, source } => {
                write!(f, "trace file {}: {source}", path.display())
            }
            TraceError::Truncated { path, line, column } => write!(
                f,
                "trace file {} is truncated: it ends at line {line}, column {column} in the \
                 middle of the JSON (was it written completely?)",
                path.display()
            ),
            TraceError::Corrupt {
                path,
                line,
                column,
                what,
            } => {
                write!(f, "trace file {} is corrupt", path.display())?;
                if *line > 0 {
                    write!(f, " at line {line}, column {column}")?;
                }
                write!(f, ": {what}")
            }
            TraceError::NewerFormat {
                path,
                found,
                supported,
            } => write!(
                f,
                "trace file {} has format version {found}, newer than the version {supported} \
                 this zklock ({}) reads: use a newer zklock to read it",
                path.display(),
                env!("CARGO_PKG_VERSION")
            ),
            TraceError::MissingField { path, field } => write!(
                f,
                "trace file {} is missing the required field `{field}`",
                path.display()
            ),
            TraceError::TooLarge { path, bytes, max } => write!(
                f,
                "trace file {} is {bytes} bytes, more than the {max} bytes a trace may be \
                 (is it a trace?)",
                path.display()
            ),
            TraceError::Invalid { path, error } => {
                write!(f, "trace file {} cannot be run: {error}", path.display())
            }
        }
    }
}

/// No `source()`: the message already says the I/O error, and a cause both shown and
/// chained is printed twice by error reporters (anyhow's `{:#}`, `zklock`'s `error:` line).
impl std::error::Error for TraceError {}
