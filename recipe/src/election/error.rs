//! The election recipes' errors.

use crate::lock::LockError;
use std::fmt;

/// An error from an election recipe.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElectionError {
    /// The latch was closed, or the selector cancelled: it leads no more. Nothing of it
    /// is left on the server once the call that saw this returns.
    Closed,
    /// The lock beneath the election failed (the session ended, an invalid path, the
    /// retry policy ran out).
    Lock(LockError),
}

impl fmt::Display for ElectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElectionError::Closed => f.write_str("the election was closed"),
            ElectionError::Lock(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ElectionError {}

impl From<LockError> for ElectionError {
    fn from(e: LockError) -> ElectionError {
        match e {
            // The lock's cancel is how a close reaches a contender that waits.
            LockError::Cancelled => ElectionError::Closed,
            e => ElectionError::Lock(e),
        }
    }
}
