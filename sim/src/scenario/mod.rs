//! Scenario runs: N clients, each on its own session, repeat acquire → critical section
//! on the shared resource → release, under random faults, and the run's history. A client
//! whose session expired opens a new session ([`Sim::renew_session`](crate::Sim::renew_session))
//! and goes on with a new lock from [`Recipe::lock`], as a real process would.
//!
//! The runner drives any recipe through [`LockUnderTest`]: plug in your own recipe, or a
//! changed copy of ours, and check it the same way.

mod config;
pub mod election;
pub mod limits;
mod runner;
mod shape;
mod shipped;
pub mod work_queue;
mod world_run;

pub use config::{FaultMode, Faults, Priorities, REVOKE_BOUND_MS_DEFAULT, Rate, Scenario};
pub use election::{Election, ElectionRecipe};
pub use limits::ScenarioError;
pub use runner::{run_scenario, run_scenario_with};
pub use shape::{ModeKind, Shape, fault_durations_ms, hold_lengths_ms};
pub use shipped::{
    RevocableRecipe, SemaphoreLock, SemaphoreRecipe, ShippedLock, ShippedRecipe,
    revocation_scenario,
};
pub use work_queue::{QueueRecipe, WorkQueue};
pub use world_run::RunOutcome;

use crate::SimClient;
/// The runners' view of a lock, shared with the real-server workload (`zklock_real`).
pub use zklock_recipe::LockUnderTest;
use zklock_recipe::history::LockRole;

/// Makes one lock per client session: the recipe under test.
///
/// ```
/// use zklock_recipe::history::LockRole;
/// use zklock_sim::{Recipe, Scenario, ShippedLock, ShippedRecipe, SimClient, run_scenario};
///
/// /// The shipped lock, under a name of its own.
/// struct Mine;
///
/// impl Recipe for Mine {
///     type Lock = ShippedLock;
///     fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
///         ShippedRecipe::default().lock(client, role, path)
///     }
/// }
///
/// assert_eq!(Mine.name(), "Mine");
/// let run = run_scenario(&Scenario::default(), 1, &Mine);
/// assert!(run.error.is_none());
/// ```
pub trait Recipe: Send + Sync {
    type Lock: LockUnderTest;
    /// A name for reports, traces and regressions files. Default: the type's name,
    /// without its path and generic parameters.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let plain = full.split('<').next().unwrap_or(full);
        plain.rsplit("::").next().unwrap_or(plain).to_owned()
    }
    /// The lock object client `client` uses, in role `role`, on directory `path`. Called
    /// again with a new handle when the client opens a new session after an expiry.
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock;
    /// `Some(n)` for a counting semaphore of `n` leases: every client then takes its
    /// lease in role Read and only reads the shared resource in its hold (holders share
    /// it), and the checker judges `semaphore_leases` (never more than `n` holders).
    /// Default `None`: a lock.
    fn leases(&self) -> Option<u32> {
        None
    }
    /// Whether the recipe is symmetric in its clients: it uses a client's identity (its
    /// session id, its guid, other clients' node names) only to compare it for equality,
    /// and orders nodes by sequence number, never by name. An exhaustive check then
    /// treats states that differ only by a permutation of clients of one role as one
    /// (see `zklock_checker::exhaustive`). Default false: no reduction, which is always
    /// sound.
    fn symmetric(&self) -> bool {
        false
    }
    /// `Some` for a work queue: the run is then the work-queue workload
    /// ([`work_queue`]), producers and consumers rather than lock holders, judged by the
    /// queue's properties. Default `None`: a lock.
    fn work_queue(&self) -> Option<WorkQueue> {
        None
    }
    /// `Some` for a leader election: the run is then the election workload
    /// ([`election`]), contenders for leadership of the lock path, judged by the lock's
    /// properties (leadership as the hold) and the election's own. Default `None`.
    fn election(&self) -> Option<Election> {
        None
    }
    /// The scenario this recipe runs in when nothing overrides it: what `zklock explore
    /// --recipe NAME` and `zklock check --recipe NAME` start from, each flag given
    /// replacing one knob. A recipe whose bugs show only in a workload of its own (readers
    /// beside writers, holds longer than the session timeout, a sequence counter near its
    /// wrap, fault rates of its own) carries that workload here, so that exploring it by
    /// name shows them. Default [`Scenario::default()`].
    fn scenario(&self) -> Scenario {
        Scenario::default()
    }
}
