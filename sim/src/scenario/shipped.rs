//! The shipped recipes, adapted to [`LockUnderTest`].

use super::{LockUnderTest, Recipe};
use crate::SimClient;
use std::time::Duration;
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::{Lock, LockError, LockGuard, LockOptions, RwLock};

/// zklock's exclusive lock (role Exclusive) and read/write lock (roles Read, Write).
#[derive(Clone, Debug, Default)]
pub struct ShippedRecipe {
    pub options: LockOptions,
}

/// One client's lock object of the shipped recipe.
#[derive(Debug)]
pub struct ShippedLock {
    lock: Lock<SimClient>,
}

impl Recipe for ShippedRecipe {
    type Lock = ShippedLock;
    fn name(&self) -> String {
        "zklock".into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
        let opts = self.options.clone();
        let lock = match role {
            LockRole::Exclusive => Lock::new(client, path, opts),
            LockRole::Read => RwLock::new(client, path, opts).map(|rw| rw.into_parts().0),
            LockRole::Write => RwLock::new(client, path, opts).map(|rw| rw.into_parts().1),
        }
        .expect("the scenario's lock path is valid");
        ShippedLock { lock }
    }
}

impl LockUnderTest for ShippedLock {
    type Guard = LockGuard<SimClient>;

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
