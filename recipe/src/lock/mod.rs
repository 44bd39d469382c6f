//! Lock recipes: an exclusive lock and a read/write lock, with revocation, fencing tokens
//! and a lost signal. See the crate docs for the guarantees and their reasoning.
//!
//! Each concept has its own module, and the building blocks are public so that variants
//! (the test suite's canaries) can reuse them: [`naming`] (names and ordering),
//! [`queue`] (who waits for whom), [`retry`] (connection loss), [`create_contender`]
//! (guid recovery), [`list_contenders`], [`watch_node`] and [`await_watch`] (waiting),
//! and [`hand_over`] (no grant handed over once its trust ended).

mod acquire;
mod create;
mod error;
mod grant;
mod guard;
mod mutex;
pub mod naming;
mod observe;
pub mod queue;
pub mod retry;
mod rwlock;
mod state;

pub use acquire::{await_watch, list_contenders, watch_node};
pub use create::{
    ContenderSpec, OwnNode, create_contender, create_contender_listed, ensure_path, find_own_nodes,
};
pub use error::{LockError, LostReason};
pub use grant::{Grant, Trust, hand_over, lost_error};
pub use guard::{FencingToken, LockGuard, request_revoke};
pub use mutex::Lock;
pub use naming::{LockNode, NamingStyle, NodeKind};
pub use observe::REVOKE_MESSAGE;
pub use retry::RetryPolicy;
pub use rwlock::RwLock;
pub use state::abandoned_cleanup;

/// When a guard stops trusting its ownership.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LostPolicy {
    /// Disconnected, Expired, or our node deleted. While disconnected we cannot know
    /// whether the server still considers us the holder, so, as Curator's TN14 advises for
    /// SUSPENDED, we stop believing at once. The client reports Disconnected after 2/3 of
    /// the session timeout without a reply; the server expires the session only after the
    /// full timeout; so we stop believing before anyone else can be granted the lock.
    #[default]
    DisconnectedOrExpired,
    /// Only Expired (or our node deleted). Survives brief disconnects, at the price that a
    /// holder may believe it holds after the server expired it and granted the lock to
    /// someone else: use fencing tokens.
    ExpiredOnly,
}

/// How a lock object contends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockOptions {
    /// The base of each contender's guid. The node is `_c_<guid>-<marker>NNNNNNNNNN` with
    /// `guid = <base>-<n>`, `n` counting this lock object's attempts (hex).
    ///
    /// The recipe has no RNG, so the default base is the session id in hex, followed, for
    /// every lock object of the session but its first, by `-<k>`, the object's
    /// [`Coordination::next_object_number`](crate::Coordination::next_object_number)
    /// (hex): no two lock objects of one session share a guid, or a lost create reply
    /// could make one adopt the other's node. A client whose `next_object_number` is the
    /// trait's default tells sessions apart only: give each of its objects a distinct
    /// base. A base given here is used as it is, for every object it is given to. Must
    /// not contain `/`.
    pub guid: Option<String>,
    /// When a guard reports the lock lost.
    pub lost_policy: LostPolicy,
    /// Connection-loss retries of each request.
    pub retry: RetryPolicy,
    /// Data stored in our node (an identifier for whoever lists contenders).
    pub data: Vec<u8>,
    /// Create the lock directory and its ancestors (persistent) when missing.
    pub create_parents: bool,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            guid: None,
            lost_policy: LostPolicy::default(),
            retry: RetryPolicy::default(),
            data: Vec::new(),
            create_parents: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Coordination;
    use std::time::Duration;

    fn assert_send<T: Send>(_: &T) {}

    /// The futures must be Send so that runners can spawn them on any executor.
    #[allow(dead_code)]
    fn futures_are_send<C: Coordination + Clone + 'static>(lock: &Lock<C>, guard: &LockGuard<C>) {
        assert_send(&lock.acquire());
        assert_send(&lock.try_acquire());
        assert_send(&lock.acquire_timeout(Duration::from_secs(1)));
        assert_send(&lock.with_lock(|_| async {}));
        assert_send(&lock.participants());
        assert_send(&guard.lost());
        assert_send(&guard.revocation());
    }
}
