//! Recipes and evidence runs shared by the checker's integration tests.

pub mod evidence;

use std::time::Duration;
use zklock_recipe::history::LockRole;
use zklock_sim::{LockUnderTest, Recipe, ShippedLock, ShippedRecipe, SimClient};

/// A holder that ignores Disconnected and Expired (the shipped lock with its lost signal
/// unplugged, the deaf-holder canary): two believers after its session ends.
pub struct Deaf(pub ShippedRecipe);
pub struct DeafLock(ShippedLock);

impl Recipe for Deaf {
    type Lock = DeafLock;
    fn name(&self) -> String {
        "deaf-holder".into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> DeafLock {
        DeafLock(self.0.lock(client, role, path))
    }
}

impl LockUnderTest for DeafLock {
    type Guard = <ShippedLock as LockUnderTest>::Guard;
    async fn acquire(&self) -> Result<Self::Guard, String> {
        self.0.acquire().await
    }
    async fn try_acquire(&self) -> Result<Option<Self::Guard>, String> {
        self.0.try_acquire().await
    }
    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Self::Guard>, String> {
        self.0.acquire_timeout(timeout).await
    }
    fn token(&self, guard: &Self::Guard) -> i64 {
        self.0.token(guard)
    }
    fn node(&self, guard: &Self::Guard) -> String {
        self.0.node(guard)
    }
    async fn lost<'a>(&'a self, _guard: &'a Self::Guard) -> String {
        // The bug: never stop believing.
        std::future::pending().await
    }
    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        self.0.release(guard).await
    }
}
