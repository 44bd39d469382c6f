//! A lock as zklock's runners drive it, whichever runs it: the simulation's scenario
//! runner (`zklock_sim`) and the real-server workload (`zklock_real`) take any
//! [`LockUnderTest`], so a recipe of a user's own, or a changed copy of the shipped one,
//! is checked the same way on both. [`ShippedLock`] is the shipped recipe so adapted, through
//! [`GuardedLock`], which makes a [`LockUnderTest`] of any lock whose holds are
//! [`LockGuard`]s.

use crate::Coordination;
/// The election's runners' view, beside the lock's and the work queue's.
pub use crate::election::under_test::{ElectionUnderTest, LatchUnderTest, SelectorUnderTest};
use crate::history::LockRole;
use crate::lock::{Lock, LockError, LockGuard, LockOptions, RwLock};
use std::future::Future;
use std::time::Duration;

/// A lock as the runners drive it: the acquire modes, release, the lost signal, the
/// fencing token and the hold's node. Errors are text: the runners record them in the
/// history. Only [`try_acquire`](LockUnderTest::try_acquire) has a default: a timed
/// acquire with no time to wait.
///
/// The workload holds each lock, reads and writes the shared resource with the token, and
/// races the hold against [`lost`](LockUnderTest::lost). A lock of one node that whoever
/// creates it holds:
///
/// ```
/// use std::time::Duration;
/// use zklock_recipe::{Coordination, CreateMode, SessionState, ZkError};
/// use zklock_recipe::LockUnderTest;
///
/// struct OwnerNode<C> {
///     client: C,
///     /// The lock's one node, `<dir>/owner`.
///     node: String,
/// }
///
/// /// A hold: its token is the owner node's czxid, which only grows.
/// struct Hold(i64);
///
/// impl<C: Coordination + Send + Sync + 'static> OwnerNode<C> {
///     async fn attempt(&self) -> Result<Option<Hold>, String> {
///         match self.client.create(&self.node, b"", CreateMode::Ephemeral).await {
///             Ok((_, stat)) => Ok(Some(Hold(stat.czxid))),
///             Err(ZkError::NodeExists) => Ok(None),
///             Err(e) => Err(e.to_string()),
///         }
///     }
/// }
///
/// impl<C: Coordination + Send + Sync + 'static> LockUnderTest for OwnerNode<C> {
///     type Guard = Hold;
///
///     async fn acquire(&self) -> Result<Hold, String> {
///         loop {
///             if let Some(hold) = self.attempt().await? {
///                 return Ok(hold);
///             }
///             // Every waiter watches the one node: each release wakes them all (a herd).
///             if let (Some(_), watch) =
///                 self.client.exists_watch(&self.node).await.map_err(|e| e.to_string())?
///             {
///                 let _ = watch.await;
///             }
///         }
///     }
///
///     async fn acquire_timeout(&self, _timeout: Duration) -> Result<Option<Hold>, String> {
///         self.attempt().await
///     }
///
///     fn token(&self, hold: &Hold) -> i64 {
///         hold.0
///     }
///
///     fn node(&self, _hold: &Hold) -> String {
///         self.node.clone()
///     }
///
///     async fn lost<'a>(&'a self, _hold: &'a Hold) -> String {
///         let mut events = self.client.session_events();
///         loop {
///             match events.next().await {
///                 Some(SessionState::Disconnected) => return "disconnected".into(),
///                 Some(SessionState::Expired) | None => return "expired".into(),
///                 Some(_) => {}
///             }
///         }
///     }
///
///     async fn release(&self, _hold: Hold) -> Result<(), String> {
///         match self.client.delete(&self.node, None).await {
///             Ok(()) | Err(ZkError::NoNode) => Ok(()),
///             Err(e) => Err(e.to_string()),
///         }
///     }
/// }
/// ```
pub trait LockUnderTest: Send + Sync + 'static {
    type Guard: Send + Sync + 'static;
    /// Waits until the lock is held. The runner may drop this future before it finishes
    /// (every `drop_every`-th acquire of a workload): the recipe must then leave no node
    /// behind, as the shipped one does through
    /// [`Coordination::cleanup_detached`].
    fn acquire(&self) -> impl Future<Output = Result<Self::Guard, String>> + Send;
    /// Takes the lock if it is free now; `None` if someone holds it. Default:
    /// [`acquire_timeout`](LockUnderTest::acquire_timeout) with a zero timeout.
    fn try_acquire(&self) -> impl Future<Output = Result<Option<Self::Guard>, String>> + Send {
        self.acquire_timeout(Duration::ZERO)
    }
    /// Waits at most `timeout`; `None` when it ran out.
    fn acquire_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Self::Guard>, String>> + Send;
    /// The hold's fencing token; it must strictly increase across successive holders.
    fn token(&self, guard: &Self::Guard) -> i64;
    /// The hold's lock node (for a sequential node, with its sequence suffix). The
    /// checker needs it: `no_herd` finds a release by the delete of this node, and `fifo`
    /// orders grants by its sequence, so it has no default.
    fn node(&self, guard: &Self::Guard) -> String;
    /// Resolves when the holder can no longer trust its ownership, with why.
    fn lost<'a>(&'a self, guard: &'a Self::Guard) -> impl Future<Output = String> + Send + 'a;
    /// Releases the hold.
    fn release(&self, guard: Self::Guard) -> impl Future<Output = Result<(), String>> + Send;
    /// Resolves `Ok` when another client asks the holder to give up (see
    /// [`revoke`](LockUnderTest::revoke)), or `Err` with why, as
    /// [`lost`](LockUnderTest::lost), if the hold is lost first. A run with revokers
    /// (`Scenario::revokers` in zklock-sim) races the hold against it instead of `lost`.
    /// Default: never asked, so the lost signal's reason.
    fn revocation<'a>(
        &'a self,
        guard: &'a Self::Guard,
    ) -> impl Future<Output = Result<(), String>> + Send + 'a {
        async move { Err(self.lost(guard).await) }
    }
    /// Asks the holder of `node` (a full path, as a listing of the lock directory shows
    /// it) to give up its hold: `Ok(false)` when the node is gone. Default: an error, for
    /// a lock that cannot be revoked ([`NOT_REVOCABLE`]).
    fn revoke<'a>(
        &'a self,
        node: &'a str,
    ) -> impl Future<Output = Result<bool, String>> + Send + 'a {
        let _ = node;
        async { Err(NOT_REVOCABLE.to_owned()) }
    }
}

/// What [`LockUnderTest::revoke`] answers by default: the lock has no revocation.
pub const NOT_REVOCABLE: &str = "this lock cannot be revoked";

/// zklock's exclusive lock (role Exclusive) or one side of its read/write lock (roles
/// Read, Write), as a [`LockUnderTest`].
#[derive(Debug)]
pub struct ShippedLock<C> {
    lock: Lock<C>,
}

impl<C: Coordination + Clone> ShippedLock<C> {
    /// The lock object of `role` on directory `path`; fails on an invalid path.
    pub fn new(
        client: C,
        role: LockRole,
        path: &str,
        options: LockOptions,
    ) -> Result<ShippedLock<C>, LockError> {
        let lock = match role {
            LockRole::Exclusive => Lock::new(client, path, options),
            LockRole::Read => RwLock::new(client, path, options).map(|rw| rw.into_parts().0),
            LockRole::Write => RwLock::new(client, path, options).map(|rw| rw.into_parts().1),
        }?;
        Ok(ShippedLock { lock })
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> GuardedLock for ShippedLock<C> {
    type Client = C;

    async fn revoke_node<'a>(&'a self, node: &'a str) -> Result<bool, String> {
        self.lock.revoke(node).await.map_err(|e| e.to_string())
    }

    async fn contend(&self, wait: Wait) -> Result<Option<LockGuard<C>>, LockError> {
        match wait {
            Wait::Forever => self.lock.acquire().await.map(Some),
            Wait::Now => self.lock.try_acquire().await,
            Wait::For(timeout) => match self.lock.acquire_timeout(timeout).await {
                Ok(g) => Ok(Some(g)),
                Err(LockError::Timeout { .. }) => Ok(None),
                Err(e) => Err(e),
            },
        }
    }
}

/// How long an acquire of a [`GuardedLock`] waits. Exhaustive: every implementor matches
/// on it, and an acquire mode it had not heard of would have no meaning for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Until the lock is held ([`LockUnderTest::acquire`]).
    Forever,
    /// Not at all: the lock if it is free now ([`LockUnderTest::try_acquire`]).
    Now,
    /// At most this long ([`LockUnderTest::acquire_timeout`]).
    For(Duration),
}

/// A lock whose holds are [`LockGuard`]s: implement [`contend`](GuardedLock::contend) and
/// it is a [`LockUnderTest`] (the one adapter over `LockGuard`), its token the guard's
/// fencing token, its node the guard's path, its lost signal and release the guard's.
/// The `hold_` methods are there for a lock that does one of those its own way (a canary
/// with a planted bug).
pub trait GuardedLock: Send + Sync + 'static {
    type Client: Coordination + Clone + Send + Sync + 'static;
    /// Contends for the lock for as long as `wait` says: `Ok(None)` when that ran out
    /// (never with [`Wait::Forever`]).
    fn contend(
        &self,
        wait: Wait,
    ) -> impl Future<Output = Result<Option<LockGuard<Self::Client>>, LockError>> + Send;
    /// The hold's fencing token ([`LockUnderTest::token`]).
    fn hold_token(&self, guard: &LockGuard<Self::Client>) -> i64 {
        guard.fencing_token().0
    }
    /// Resolves when the holder can no longer trust its hold, with why
    /// ([`LockUnderTest::lost`]).
    fn hold_lost<'a>(
        &'a self,
        guard: &'a LockGuard<Self::Client>,
    ) -> impl Future<Output = String> + Send + 'a {
        async move { format!("{:?}", guard.lost().await) }
    }
    /// Resolves `Ok` when the holder is asked to give up, `Err` when the hold is lost
    /// first ([`LockUnderTest::revocation`]): the guard's
    /// [`revocation`](LockGuard::revocation).
    fn hold_revocation<'a>(
        &'a self,
        guard: &'a LockGuard<Self::Client>,
    ) -> impl Future<Output = Result<(), String>> + Send + 'a {
        async move { guard.revocation().await.map_err(|r| format!("{r:?}")) }
    }
    /// Asks the holder of `node` to give up ([`LockUnderTest::revoke`]). Default: an
    /// error, [`NOT_REVOCABLE`]; zklock's lock sets the revoke request on the node
    /// ([`Lock::revoke`]).
    fn revoke_node<'a>(
        &'a self,
        node: &'a str,
    ) -> impl Future<Output = Result<bool, String>> + Send + 'a {
        let _ = node;
        async { Err(NOT_REVOCABLE.to_owned()) }
    }
    /// Releases the hold ([`LockUnderTest::release`]).
    fn hold_release(
        &self,
        guard: LockGuard<Self::Client>,
    ) -> impl Future<Output = Result<(), String>> + Send {
        async move { guard.release().await.map_err(|e| e.to_string()) }
    }
}

impl<L: GuardedLock> LockUnderTest for L {
    type Guard = LockGuard<L::Client>;

    async fn acquire(&self) -> Result<Self::Guard, String> {
        match self.contend(Wait::Forever).await {
            Ok(Some(g)) => Ok(g),
            Ok(None) => Err("no deadline, yet timed out".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn try_acquire(&self) -> Result<Option<Self::Guard>, String> {
        self.contend(Wait::Now).await.map_err(|e| e.to_string())
    }

    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Self::Guard>, String> {
        self.contend(Wait::For(timeout))
            .await
            .map_err(|e| e.to_string())
    }

    fn token(&self, guard: &Self::Guard) -> i64 {
        self.hold_token(guard)
    }

    fn node(&self, guard: &Self::Guard) -> String {
        guard.path().to_owned()
    }

    async fn lost<'a>(&'a self, guard: &'a Self::Guard) -> String {
        self.hold_lost(guard).await
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        self.hold_release(guard).await
    }

    async fn revocation<'a>(&'a self, guard: &'a Self::Guard) -> Result<(), String> {
        self.hold_revocation(guard).await
    }

    async fn revoke<'a>(&'a self, node: &'a str) -> Result<bool, String> {
        self.revoke_node(node).await
    }
}
