//! A lock as zklock's runners drive it, whichever runs it: the simulation's scenario
//! runner (`zklock_sim`) and the real-server workload (`zklock_real`) take any
//! [`LockUnderTest`], so a recipe of a user's own, or a changed copy of the shipped one,
//! is checked the same way on both. [`ShippedLock`] is the shipped recipe so adapted.

use crate::Coordination;
use crate::history::LockRole;
use crate::lock::{Lock, LockError, LockGuard, LockOptions, RwLock};
use std::future::Future;
use std::time::Duration;

/// A lock as the runners drive it: the acquire modes, release, the lost signal and the
/// fencing token. Errors are text: the runners record them in the history.
pub trait LockUnderTest: Send + Sync + 'static {
    type Guard: Send + Sync + 'static;
    /// Waits until the lock is held. The runner may drop this future before it finishes
    /// (every `drop_every`-th acquire of a workload): the recipe must then leave no node
    /// behind, as the shipped one does through
    /// [`Coordination::cleanup_detached`].
    fn acquire(&self) -> impl Future<Output = Result<Self::Guard, String>> + Send;
    /// Takes the lock if it is free now; `None` if someone holds it.
    fn try_acquire(&self) -> impl Future<Output = Result<Option<Self::Guard>, String>> + Send;
    /// Waits at most `timeout`; `None` when it ran out.
    fn acquire_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Self::Guard>, String>> + Send;
    /// The hold's fencing token; it must strictly increase across successive holders.
    fn token(&self, guard: &Self::Guard) -> i64;
    /// The hold's lock node, with its sequence suffix.
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
