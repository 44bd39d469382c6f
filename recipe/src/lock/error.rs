//! The lock recipes' errors and the reasons a held lock can be lost.

use crate::ZkError;
use std::fmt;
use std::time::Duration;

/// Why a guard stopped trusting its ownership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LostReason {
    /// The connection dropped. The session (and our node) may still be alive, but another
    /// client may hold the lock by the time we learn more; see [`LostPolicy`](super::LostPolicy).
    Disconnected,
    /// The session expired: the server deleted our node, someone else may hold the lock.
    Expired,
    /// The session was closed by this client.
    SessionClosed,
    /// Our lock node was deleted by someone else while the session lived.
    NodeDeleted,
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LostReason::Disconnected => "the connection to ZooKeeper was lost",
            LostReason::Expired => "the ZooKeeper session expired",
            LostReason::SessionClosed => "the ZooKeeper session was closed",
            LostReason::NodeDeleted => "the lock node was deleted by another client",
        })
    }
}

/// An error from a lock recipe.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockError {
    /// The session expired: its ephemeral nodes, ours included, are gone.
    SessionExpired,
    /// The session was closed by this client.
    SessionClosed,
    /// `acquire_timeout` ran out; our node was deleted before returning.
    Timeout { waited: Duration },
    /// `acquire_until`'s cancel signal fired; our node was deleted before returning.
    Cancelled,
    /// The lock directory does not exist (deleted while in use, or never created with
    /// `create_parents` off).
    LockPathDeleted { path: String },
    /// Our contender node vanished while we waited, though the session lives: another
    /// client deleted it.
    NodeDeleted { path: String },
    /// The lock path is not a valid ZooKeeper path. Nothing was created.
    InvalidPath { path: String, reason: String },
    /// The caller's guid cannot be part of a node name. Nothing was created.
    InvalidGuid { guid: String, reason: String },
    /// This lock object already has a contender (a pending acquire or a live guard).
    InUse,
    /// The lock was lost while `with_lock`'s closure ran; the closure was dropped.
    Lost(LostReason),
    /// What acquire had taken lost its trust before acquire returned (the connection
    /// dropped under the default [`LostPolicy`](super::LostPolicy)); it was given up, so
    /// nothing is held.
    LostBeforeGranted(LostReason),
    /// Another ZooKeeper error. `ConnectionLoss` here means the retry policy ran out.
    Zk(ZkError),
}

impl LockError {
    /// Maps a ZooKeeper error to the matching lock error.
    pub fn from_zk(error: ZkError) -> LockError {
        match error {
            ZkError::SessionExpired => LockError::SessionExpired,
            ZkError::SessionClosed => LockError::SessionClosed,
            e => LockError::Zk(e),
        }
    }
}

impl From<ZkError> for LockError {
    fn from(error: ZkError) -> Self {
        LockError::from_zk(error)
    }
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::SessionExpired => f.write_str(
                "the ZooKeeper session expired, so its lock nodes are gone; \
                 create a new session and acquire again",
            ),
            LockError::SessionClosed => f.write_str(
                "the ZooKeeper session was closed; create a new session to use the lock",
            ),
            LockError::Timeout { waited } => write!(
                f,
                "the lock was not acquired within {} ms and our node was removed; \
                 retry later or wait longer",
                waited.as_millis()
            ),
            LockError::Cancelled => {
                f.write_str("the acquire was cancelled and our node was removed")
            }
            LockError::LockPathDeleted { path } => write!(
                f,
                "the lock path {path} does not exist (deleted while in use, or never \
                 created with create_parents off); recreate it and acquire again"
            ),
            LockError::NodeDeleted { path } => write!(
                f,
                "our lock node {path} was deleted by another client while we waited; \
                 find out who removes lock nodes, then acquire again"
            ),
            LockError::InvalidPath { path, reason } => {
                write!(
                    f,
                    "invalid lock path {path:?}: {reason}; nothing was created"
                )
            }
            LockError::InvalidGuid { guid, reason } => {
                write!(
                    f,
                    "invalid lock guid {guid:?}: {reason}; nothing was created"
                )
            }
            LockError::InUse => f.write_str(
                "this lock object already has a pending acquire or a live guard (the \
                 recipe is not reentrant); release it first, or use another lock object",
            ),
            LockError::Lost(reason) => write!(
                f,
                "the lock was lost while the closure ran ({reason}); the closure was \
                 stopped, so its work may be partial"
            ),
            LockError::LostBeforeGranted(reason) => write!(
                f,
                "what acquire took was lost before it returned ({reason}); it was given \
                 up and nothing is held; retry once reconnected"
            ),
            LockError::Zk(ZkError::ConnectionLoss) => f.write_str(
                "connection loss persisted past the retry policy's attempts_max; a lock \
                 call removes any node of its own before returning this; retry once \
                 reconnected",
            ),
            LockError::Zk(e) => write!(f, "ZooKeeper error: {e}"),
        }
    }
}

/// No `source()`: `Zk`'s message already says the ZooKeeper error, and a cause both shown
/// and chained is printed twice by error reporters (anyhow's `{:#}`).
impl std::error::Error for LockError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zookeeper_error_is_said_once_with_its_source_chain() {
        let e = LockError::Zk(ZkError::NoNode);
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text = format!("{text}: {c}");
            cause = c.source();
        }
        assert_eq!(text, "ZooKeeper error: no node");
    }
}
