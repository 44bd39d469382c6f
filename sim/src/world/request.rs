//! Requests as the simulated server receives them, and their answers.

use std::sync::Arc;
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
}

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
