//! The work queue's errors.

use crate::lock::LostReason;
use crate::{LockError, ZkError};
use std::fmt;

/// An error from the work queue's producer or consumers.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// A queue or lock directory is not a valid ZooKeeper path. Nothing was created.
    InvalidPath { path: String, reason: String },
    /// The session ended: a taken item's lock is gone with it.
    SessionEnded(ZkError),
    /// The take lock failed (consumers that take under it).
    TakeLock(LockError),
    /// The item's lock lost its trust before `take` returned (the connection dropped, so
    /// the session may have expired on the server); the item was given back, nothing is
    /// held. Take again once reconnected.
    LostBeforeTaken(LostReason),
    /// Another ZooKeeper error. `ConnectionLoss` here means the retry policy ran out.
    Zk(ZkError),
}

impl From<ZkError> for QueueError {
    fn from(e: ZkError) -> QueueError {
        if e.is_session_terminal() {
            QueueError::SessionEnded(e)
        } else {
            QueueError::Zk(e)
        }
    }
}

impl From<LockError> for QueueError {
    fn from(e: LockError) -> QueueError {
        QueueError::TakeLock(e)
    }
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::InvalidPath { path, reason } => {
                write!(f, "invalid queue path {path}: {reason}")
            }
            QueueError::SessionEnded(e) => write!(f, "the session ended: {e}"),
            QueueError::TakeLock(e) => write!(f, "the take lock failed: {e}"),
            QueueError::LostBeforeTaken(reason) => write!(
                f,
                "the item's lock was lost before take returned ({reason}); the item was \
                 given back and nothing is held; take again once reconnected"
            ),
            QueueError::Zk(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for QueueError {}
