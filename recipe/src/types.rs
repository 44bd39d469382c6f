//! ZooKeeper's data types, as a lock recipe sees them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A ZooKeeper session id. The simulation hands them out in order from 1.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SessionId(pub i64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0)
    }
}

/// How a znode is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
}

impl CreateMode {
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }
}

/// A znode's metadata, as ZooKeeper's `Stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stat {
    /// zxid of the create.
    pub czxid: i64,
    /// zxid of the last data change (or the create).
    pub mzxid: i64,
    /// zxid of the last change to the children list (or the create).
    pub pzxid: i64,
    /// Number of data changes.
    pub version: i32,
    /// Number of children changes; the parent's cversion gives a sequential suffix.
    pub cversion: i32,
    /// Owner session of an ephemeral node; 0 for a persistent node.
    pub ephemeral_owner: i64,
    pub num_children: i32,
    pub data_length: i32,
}

/// ZooKeeper's watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// A fired one-shot watch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub path: String,
}

/// Session state changes, as a client library reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SessionState {
    /// Connected (or reconnected within the timeout: the session and its watches live on).
    Connected,
    /// The connection is gone; the session may still be alive at the server.
    Disconnected,
    /// The server has expired the session: its ephemerals and watches are gone.
    Expired,
    /// The client closed the session.
    Closed,
}

impl SessionState {
    /// Expired and Closed are final.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }
}

/// One operation of a `multi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Check {
        path: String,
        version: i32,
    },
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
}

impl Op {
    pub fn path(&self) -> &str {
        match self {
            Op::Check { path, .. }
            | Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::SetData { path, .. } => path,
        }
    }
}

/// The result of one operation of a successful `multi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpResult {
    Check,
    Create { path: String, stat: Stat },
    Delete,
    SetData { stat: Stat },
}

/// ZooKeeper's error codes.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZkError {
    /// The node does not exist (or, for create, its parent does not).
    NoNode,
    /// The node already exists.
    NodeExists,
    /// The node has children and cannot be deleted.
    NotEmpty,
    /// The expected version did not match.
    BadVersion,
    /// Ephemeral nodes cannot have children.
    NoChildrenForEphemerals,
    /// The connection was lost; the request may or may not have been applied.
    ConnectionLoss,
    /// The session has expired; its ephemerals are gone.
    SessionExpired,
    /// The session was closed by this client.
    SessionClosed,
    /// An invalid argument, such as a malformed path. The text says what.
    BadArguments(String),
    /// The operation timed out at the client.
    OperationTimeout,
    /// Authentication or ACL failure.
    NoAuth,
    /// A multi failed: `index` is the first failing operation, `error` its error.
    MultiFailed { index: usize, error: Box<ZkError> },
    /// Any other server or client error, with ZooKeeper's code and a description.
    Other { code: i32, message: String },
}

impl ZkError {
    /// True for errors after which the request's fate is unknown and a retry may help.
    pub fn is_connection_loss(&self) -> bool {
        matches!(self, ZkError::ConnectionLoss | ZkError::OperationTimeout)
    }
    /// True when the session can never be used again.
    pub fn is_session_terminal(&self) -> bool {
        matches!(self, ZkError::SessionExpired | ZkError::SessionClosed)
    }
    /// The error of the failing operation, for a failed multi; `self` otherwise.
    pub fn root(&self) -> &ZkError {
        match self {
            ZkError::MultiFailed { error, .. } => error.root(),
            e => e,
        }
    }
}

impl fmt::Display for ZkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZkError::NoNode => f.write_str("no node"),
            ZkError::NodeExists => f.write_str("node exists"),
            ZkError::NotEmpty => f.write_str("node has children"),
            ZkError::BadVersion => f.write_str("bad version"),
            ZkError::NoChildrenForEphemerals => f.write_str("ephemeral nodes cannot have children"),
            ZkError::ConnectionLoss => {
                f.write_str("connection loss: the request may or may not have been applied")
            }
            ZkError::SessionExpired => f.write_str("session expired"),
            ZkError::SessionClosed => f.write_str("session closed"),
            ZkError::BadArguments(why) => write!(f, "bad arguments: {why}"),
            ZkError::OperationTimeout => f.write_str("operation timed out"),
            ZkError::NoAuth => f.write_str("not authorised"),
            ZkError::MultiFailed { index, error } => {
                write!(f, "multi failed at operation {index}: {error}")
            }
            ZkError::Other { code, message } => write!(f, "zookeeper error {code}: {message}"),
        }
    }
}

impl std::error::Error for ZkError {}
