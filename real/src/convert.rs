//! Conversions between zookeeper-client's types and zklock-recipe's.

use zklock_recipe::{CreateMode, EventType, SessionState, Stat, WatchedEvent, ZkError};
use zookeeper_client as zk;

/// ZooKeeper's numeric codes for errors the recipe types have no variant of.
mod code {
    pub const MARSHALLING_ERROR: i32 = -5;
    pub const UNIMPLEMENTED: i32 = -6;
    pub const INVALID_ACL: i32 = -114;
    pub const AUTH_FAILED: i32 = -115;
    pub const SESSION_MOVED: i32 = -118;
    pub const NOT_READ_ONLY: i32 = -119;
    pub const NO_WATCHER: i32 = -121;
    pub const RECONFIG_DISABLED: i32 = -123;
    pub const QUOTA_EXCEEDED: i32 = -125;
    pub const THROTTLED: i32 = -127;
    /// `RuntimeInconsistency`, which zookeeper-client also uses for a failed path check.
    pub const RUNTIME_INCONSISTENCY: i32 = -2;
    /// Client-side errors with no server code.
    pub const CLIENT: i32 = -1;
}

/// Maps a zookeeper-client error onto the recipe's.
///
/// Every error that is not a server verdict (I/O errors, "no response from connection",
/// protocol surprises) becomes `ConnectionLoss`: the client cannot know whether the request
/// was applied, and `ConnectionLoss` is how the recipe is told exactly that.
pub(crate) fn zk_error(error: zk::Error) -> ZkError {
    use zk::Error as E;
    let other = |code: i32, error: &zk::Error| ZkError::Other {
        code,
        message: error.to_string(),
    };
    match error {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        E::ConnectionLoss | E::Custom(_) | E::UnexpectedError(_) | E::UnmarshalError { .. } => {
            ZkError::ConnectionLoss
        }
        E::SessionExpired => ZkError::SessionExpired,
        E::ClientClosed => ZkError::SessionClosed,
        E::BadArguments(why) => ZkError::BadArguments((*why).to_string()),
        E::Timeout => ZkError::OperationTimeout,
        E::NoAuth => ZkError::NoAuth,
        ref e @ E::InvalidAcl => other(code::INVALID_ACL, e),
        ref e @ E::AuthFailed => other(code::AUTH_FAILED, e),
        ref e @ E::SessionMoved => other(code::SESSION_MOVED, e),
        ref e @ E::NotReadOnly => other(code::NOT_READ_ONLY, e),
        ref e @ E::NoWatcher => other(code::NO_WATCHER, e),
        ref e @ E::QuotaExceeded => other(code::QUOTA_EXCEEDED, e),
        ref e @ E::Throttled => other(code::THROTTLED, e),
        ref e @ E::MarshallingError => other(code::MARSHALLING_ERROR, e),
        ref e @ E::Unimplemented => other(code::UNIMPLEMENTED, e),
        ref e @ E::ReconfigDisabled => other(code::RECONFIG_DISABLED, e),
        ref e @ E::RuntimeInconsistent => other(code::RUNTIME_INCONSISTENCY, e),
        ref e @ E::UnexpectedErrorCode(code) => other(code, e),
        ref e => other(code::CLIENT, e),
    }
}

pub(crate) fn stat(s: &zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        pzxid: s.pzxid,
        version: s.version,
        cversion: s.cversion,
        ephemeral_owner: s.ephemeral_owner,
        num_children: s.num_children,
        data_length: s.data_length,
    }
}

pub(crate) fn create_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
    }
}

/// The recipe's view of a session state. A read-only connection still serves reads, so it
/// counts as connected; failed authentication ends the session as a close does.
pub(crate) fn session_state(state: zk::SessionState) -> SessionState {
    match state {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            SessionState::Connected
        }
        zk::SessionState::Disconnected => SessionState::Disconnected,
        zk::SessionState::Expired => SessionState::Expired,
        zk::SessionState::Closed | zk::SessionState::AuthFailed => SessionState::Closed,
    }
}

/// What a fired one-shot watcher means for a recipe's `Watch`: a node event, or the end of
/// the session (zookeeper-client wakes one-shot watchers only on terminal session states).
pub(crate) fn watch_outcome(event: zk::WatchedEvent) -> Result<WatchedEvent, ZkError> {
    let event_type = match event.event_type {
        zk::EventType::NodeCreated => EventType::NodeCreated,
        zk::EventType::NodeDeleted => EventType::NodeDeleted,
        zk::EventType::NodeDataChanged => EventType::NodeDataChanged,
        zk::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
        zk::EventType::Session => {
            return Err(match event.session_state {
                zk::SessionState::Expired => ZkError::SessionExpired,
                zk::SessionState::AuthFailed => ZkError::Other {
                    code: code::AUTH_FAILED,
                    message: "authentication failed".to_string(),
                },
                _ => ZkError::SessionClosed,
            });
        }
    };
    Ok(WatchedEvent {
        event_type,
        path: event.path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_level_errors_become_connection_loss() {
        assert_eq!(zk_error(zk::Error::ConnectionLoss), ZkError::ConnectionLoss);
        assert_eq!(
            zk_error(zk::Error::UnexpectedError("x".into())),
            ZkError::ConnectionLoss
        );
        assert_eq!(zk_error(zk::Error::Timeout), ZkError::OperationTimeout);
        assert_eq!(zk_error(zk::Error::ClientClosed), ZkError::SessionClosed);
    }

    #[test]
    fn server_codes_survive() {
        assert_eq!(zk_error(zk::Error::NoNode), ZkError::NoNode);
        assert_eq!(
            zk_error(zk::Error::UnexpectedErrorCode(-999)),
            ZkError::Other {
                code: -999,
                message: "unexpected error code: -999".into()
            }
        );
        assert!(matches!(
            zk_error(zk::Error::InvalidAcl),
            ZkError::Other { code: -114, .. }
        ));
    }

    #[test]
    fn session_events_end_watches() {
        let expired = zk::WatchedEvent::new_session(zk::SessionState::Expired);
        assert_eq!(watch_outcome(expired), Err(ZkError::SessionExpired));
        let closed = zk::WatchedEvent::new_session(zk::SessionState::Closed);
        assert_eq!(watch_outcome(closed), Err(ZkError::SessionClosed));
        let deleted = zk::WatchedEvent::new(zk::EventType::NodeDeleted, "/a");
        assert_eq!(
            watch_outcome(deleted),
            Ok(WatchedEvent {
                event_type: EventType::NodeDeleted,
                path: "/a".into()
            })
        );
    }
}
