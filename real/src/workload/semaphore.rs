//! zklock's counting semaphore on a real run.

use super::RealRecipe;
use crate::recording::RecordingClient;
use zklock_recipe::history::LockRole;
use zklock_recipe::semaphore::Semaphore;

/// zklock's counting semaphore ([`Semaphore`]) of `leases` holders on each lock path: every
/// client holds a lease as a reader of the resource, whatever its role, and the checker
/// judges `semaphore_leases` first, as `zklock_sim::SemaphoreRecipe` in the simulation.
#[derive(Clone, Debug)]
pub struct SemaphoreRealRecipe {
    /// The lease count each client stores if it creates the semaphore. Default 2.
    pub leases: u32,
}

impl Default for SemaphoreRealRecipe {
    fn default() -> Self {
        SemaphoreRealRecipe { leases: 2 }
    }
}

impl RealRecipe for SemaphoreRealRecipe {
    type Lock = Semaphore<RecordingClient>;
    fn lock(&self, client: RecordingClient, _role: LockRole, path: &str) -> Self::Lock {
        Semaphore::new(client, path, self.leases)
            .expect("the workload's lock path was validated and the count is in range")
    }

    fn leases(&self) -> Option<u32> {
        Some(self.leases)
    }

    /// A lease's token is its node's czxid.
    fn tokens_are_czxids(&self) -> bool {
        true
    }
}
