//! The search's typed error.

use std::fmt;
use std::path::PathBuf;
use zklock_real::RealError;

/// Why a search could not start or go on. A search that found violations is no error:
/// [`crate::Findings`] holds them.
#[non_exhaustive]
#[derive(Debug)]
pub enum SearchError {
    /// A setting out of its bounds, or settings that do not fit together (a read side
    /// asked of a lock without one, a work queue given as the lock).
    Invalid { reason: String },
    /// The journal at `path` could not be created, read, written, or resumed from
    /// (`reason` names the file).
    Journal { path: PathBuf, reason: String },
    /// A server, a driver or a run failed: `what` says which step.
    Real {
        what: String,
        #[doc(hidden)]
        source: RealError,
    },
    /// The runtime or a worker thread could not start, or a worker ended early.
    Workers { reason: String },
    /// The progress sink refused an event (the command line could not write a finding's
    /// files, say): the search stopped there.
    Progress {
        #[doc(hidden)]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The search stopped on `source`; the journal at `journal` keeps every point it
    /// judged, and a search with the same settings resumes from it.
    Stopped {
        journal: PathBuf,
        #[doc(hidden)]
        source: Box<SearchError>,
    },
}

impl SearchError {
    pub(crate) fn invalid(reason: impl Into<String>) -> SearchError {
        SearchError::Invalid {
            reason: reason.into(),
        }
    }

    pub(crate) fn real(what: impl Into<String>, source: RealError) -> SearchError {
        SearchError::Real {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn workers(reason: impl Into<String>) -> SearchError {
        SearchError::Workers {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchError::Invalid { reason }
            | SearchError::Workers { reason }
            | SearchError::Journal { reason, .. } => f.write_str(reason),
            SearchError::Real { what, source } if what.is_empty() => write!(f, "{source}"),
            SearchError::Real { what, source } => write!(f, "{what}: {source}"),
            SearchError::Progress { source } => write!(f, "{source}"),
            SearchError::Stopped { journal, source } => write!(
                f,
                "the search stopped; {} keeps every point judged: go on with the same command \
                 and --resume: {source}",
                journal.display()
            ),
        }
    }
}

impl std::error::Error for SearchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SearchError::Real { source, .. } => Some(source),
            SearchError::Progress { source } => Some(source.as_ref()),
            SearchError::Stopped { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
