//! Lock recipes for ZooKeeper, written once against the [`Coordination`] trait.
//!
//! The crate has no runtime, clock, RNG or I/O of its own: everything comes through
//! `Coordination`, so the same recipe code runs on zklock's simulated ZooKeeper, under its
//! exhaustive explorer, and on a real server.

mod coordination;
pub mod lock;
pub mod path;
mod types;

pub use coordination::{Coordination, SessionBroadcast, SessionEvents, Watch, WatchSender};
pub use lock::{
    FencingToken, Lock, LockError, LockGuard, LockNode, LockOptions, LostPolicy, LostReason,
    NodeKind, RetryPolicy, RwLock,
};
pub use types::{
    CreateMode, EventType, Op, OpResult, SessionId, SessionState, Stat, WatchedEvent, ZkError,
};
