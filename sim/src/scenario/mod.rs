//! Scenario runs: N clients, each on its own session, repeat acquire → critical section
//! on the shared resource → release, under random faults, and the run's history. A client
//! whose session expired opens a new session ([`Sim::renew_session`](crate::Sim::renew_session))
//! and goes on with a new lock from [`Recipe::lock`], as a real process would.
//!
//! The runner drives any recipe through [`LockUnderTest`]: plug in your own recipe, or a
//! changed copy of ours, and check it the same way.

mod config;
mod runner;
mod shipped;

pub use config::{FaultMode, Faults, Rate, Scenario};
pub use runner::{RunOutcome, run_scenario, run_scenario_with};
pub use shipped::{ShippedLock, ShippedRecipe};

use crate::SimClient;
use std::future::Future;
use std::time::Duration;
use zklock_recipe::history::LockRole;

/// A lock as the scenario runner drives it: the acquire modes, release, the lost signal
/// and the fencing token. Errors are text: the runner records them in the history.
pub trait LockUnderTest: Send + Sync + 'static {
    type Guard: Send + Sync + 'static;
    /// Waits until the lock is held. The runner may drop this future before it finishes
    /// ([`Scenario::drop_every`]): the recipe must then leave no node behind, as the
    /// shipped one does through [`Coordination::cleanup_detached`](zklock_recipe::Coordination::cleanup_detached).
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

/// Makes one lock per client session: the recipe under test.
pub trait Recipe: Send + Sync {
    type Lock: LockUnderTest;
    /// A name for reports and traces.
    fn name(&self) -> String;
    /// The lock object client `client` uses, in role `role`, on directory `path`. Called
    /// again with a new handle when the client opens a new session after an expiry.
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock;
}
