//! Requests as the simulated server receives them, and their answers.

use std::sync::Arc;
use zklock_recipe::path::validate_path;
use zklock_recipe::{Children, CreateMode, Op, OpResult, Stat, Watch, ZkError};

/// The kind of a request, for hooks: the history's own operation names.
pub use zklock_recipe::history::ZkOp as RequestKind;

/// Paths are shared (`Arc<str>`): the history's record of a request and the watch it
/// sets take the path without copying it.
#[derive(Clone, Debug, Hash)]
pub(crate) enum Request {
    Create {
        path: Arc<str>,
        data: Vec<u8>,
        mode: CreateMode,
    },
    Delete {
        path: Arc<str>,
        version: Option<i32>,
    },
    Exists {
        path: Arc<str>,
        watch: bool,
    },
    GetData {
        path: Arc<str>,
        watch: bool,
    },
    GetChildren {
        path: Arc<str>,
        watch: bool,
    },
    SetData {
        path: Arc<str>,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Multi(Vec<Op>),
    Close,
}

impl Request {
    pub(crate) fn kind(&self) -> RequestKind {
        match self {
            Request::Create { .. } => RequestKind::Create,
            Request::Delete { .. } => RequestKind::Delete,
            Request::Exists { .. } => RequestKind::Exists,
            Request::GetData { .. } => RequestKind::GetData,
            Request::GetChildren { .. } => RequestKind::GetChildren,
            Request::SetData { .. } => RequestKind::SetData,
            Request::Multi(_) => RequestKind::Multi,
            Request::Close => RequestKind::Close,
        }
    }

    /// The request's frame on the wire, as zookeeper-client encodes it (jute: an i32
    /// length before each string and buffer, one byte per bool; the create's one ACL,
    /// world:anyone), without the frame's own 4-byte length: what the server compares
    /// with jute.maxbuffer ([`REQUEST_BYTES_MAX`]).
    pub(crate) fn wire_bytes(&self) -> usize {
        /// xid and op code.
        const HEADER: usize = 8;
        /// perms, then the strings "world" and "anyone", after the vector's length.
        const ONE_ACL: usize = 4 + 4 + (4 + 5) + (4 + 6);
        let string = |s: &str| 4 + s.len();
        let create = |path: &str, data: &[u8]| string(path) + 4 + data.len() + ONE_ACL + 4;
        HEADER
            + match self {
                Request::Create { path, data, .. } => create(path, data),
                Request::Delete { path, .. } => string(path) + 4,
                Request::Exists { path, .. }
                | Request::GetData { path, .. }
                | Request::GetChildren { path, .. } => string(path) + 1,
                Request::SetData { path, data, .. } => string(path) + 4 + data.len() + 4,
                Request::Multi(ops) => {
                    // Each op behind a header (type, done, err), then a closing header.
                    const OP_HEADER: usize = 4 + 1 + 4;
                    let body: usize = ops
                        .iter()
                        .map(|op| {
                            OP_HEADER
                                + match op {
                                    Op::Check { path, .. } | Op::Delete { path, .. } => {
                                        string(path) + 4
                                    }
                                    Op::Create { path, data, .. } => create(path, data),
                                    Op::SetData { path, data, .. } => {
                                        string(path) + 4 + data.len() + 4
                                    }
                                }
                        })
                        .sum();
                    body + OP_HEADER
                }
                Request::Close => 0,
            }
    }

    /// Whether the client refuses this request before sending it: a path it would not
    /// send (the error it gives), wherever its connection stands.
    pub(crate) fn refused_by_client(&self) -> Option<ZkError> {
        let path = match self {
            Request::Create { path, mode, .. } => {
                return validate_path(path, mode.is_sequential()).err();
            }
            Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::SetData { path, .. } => path,
            Request::Multi(ops) => {
                return ops.iter().enumerate().find_map(|(index, op)| {
                    let sequential = matches!(op, Op::Create { mode, .. } if mode.is_sequential());
                    validate_path(op.path(), sequential)
                        .err()
                        .map(|error| ZkError::MultiFailed {
                            index,
                            error: Box::new(error),
                        })
                });
            }
            Request::Close => return None,
        };
        validate_path(path, false).err()
    }
}

/// The largest request frame a ZooKeeper 3.8 server reads: jute.maxbuffer's default,
/// 0xfffff = 1,048,575 bytes (a frame counted without its 4-byte length prefix). On a
/// larger one the server closes the connection without applying it or anything the
/// client sent after it; the client sees ConnectionLoss.
pub const REQUEST_BYTES_MAX: usize = 0xfffff;

/// A successful answer. Watches are attached when the reply reaches the client, so that
/// a watch exists client-side exactly when ZooKeeper's client would have registered it.
#[derive(Debug)]
pub(crate) enum Answer {
    Created(String, Stat),
    Done,
    Exists(Option<Stat>, Option<Watch>),
    Data(Vec<u8>, Stat, Option<Watch>),
    Children(Children, Option<Watch>),
    Stat(Stat),
    Multi(Vec<OpResult>),
}

impl Answer {
    pub(crate) fn attach_watch(&mut self, w: Watch) {
        match self {
            Answer::Exists(_, slot) | Answer::Data(_, _, slot) | Answer::Children(_, slot) => {
                *slot = Some(w)
            }
            _ => {}
        }
    }
}

pub(crate) type Reply = Result<Answer, ZkError>;

/// Which client-side watch table a registration belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WatchKind {
    Data,
    Child,
}

/// For state digests. A watch counts by its presence only: the one attached to a reply is
/// always fresh and unfired, so nothing else about it can differ between two states.
impl std::hash::Hash for Answer {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Answer::Created(p, s) => (p, s).hash(h),
            Answer::Done => {}
            Answer::Exists(s, w) => (s, w.is_some()).hash(h),
            Answer::Data(d, s, w) => (d, s, w.is_some()).hash(h),
            Answer::Children(c, w) => (c, w.is_some()).hash(h),
            Answer::Stat(s) => s.hash(h),
            Answer::Multi(r) => r.hash(h),
        }
    }
}
