//! A lock as zklock's runners drive it, whichever runs it: the simulation's scenario
//! runner (`zklock_sim`) and the real-server workload (`zklock_real`) take any
//! [`LockUnderTest`], so a recipe of a user's own, or a changed copy of the shipped one,
//! is checked the same way on both. [`ShippedLock`] is the shipped recipe so adapted.

use crate::Coordination;
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
}

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

impl<C: Coordination + Clone + Send + Sync + 'static> LockUnderTest for ShippedLock<C> {
    type Guard = LockGuard<C>;

    async fn acquire(&self) -> Result<Self::Guard, String> {
        self.lock.acquire().await.map_err(|e| e.to_string())
    }

    async fn try_acquire(&self) -> Result<Option<Self::Guard>, String> {
        self.lock.try_acquire().await.map_err(|e| e.to_string())
    }

    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Self::Guard>, String> {
        match self.lock.acquire_timeout(timeout).await {
            Ok(g) => Ok(Some(g)),
            Err(LockError::Timeout { .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    fn token(&self, guard: &Self::Guard) -> i64 {
        guard.fencing_token().0
    }

    fn node(&self, guard: &Self::Guard) -> String {
        guard.path().to_owned()
    }

    async fn lost<'a>(&'a self, guard: &'a Self::Guard) -> String {
        format!("{:?}", guard.lost().await)
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        guard.release().await.map_err(|e| e.to_string())
    }
}
