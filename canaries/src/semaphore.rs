//! The semaphore canary of the lost-before-granted class: zklock's semaphore, lease taken
//! under the inner lock, but handed over without a look at its trust.

use zklock_recipe::history::LockRole;
use zklock_recipe::lock::{LockError, LockGuard};
use zklock_recipe::semaphore::{LeaseTaken, Semaphore};
use zklock_recipe::{Coordination, GuardedLock, Wait};
use zklock_sim::{Faults, Rate, Recipe, Scenario, SimClient};

/// The canary's name, as registered and as its trace file is named.
pub const LEASE_HANDED_OVER_LOST: &str = "canary-lease-handed-over-lost";

/// The property it must violate.
pub const LEASE_HANDED_OVER_LOST_CAUGHT_BY: &str = "semaphore_leases";

/// zklock's semaphore of `leases` leases (2 by default), but an acquire hands its lease
/// over once it has released the inner lock, without [`hand_over`]'s look at the lease's
/// trust: when the connection dropped during that release, the server may have expired
/// the session and let another client take a lease in its place, while this one starts
/// holding its own. Must violate `semaphore_leases`.
///
/// [`hand_over`]: zklock_recipe::lock::hand_over
#[derive(Clone, Debug)]
pub struct LeaseHandedOverLost {
    pub leases: u32,
}

impl Default for LeaseHandedOverLost {
    fn default() -> Self {
        LeaseHandedOverLost { leases: 2 }
    }
}

/// The scenario that shows the lost-before-granted class: three clients (for two leases,
/// or one producer and two consumers), holds of 200 ms, so that the others hold while one
/// takes, and the faults that end a session while a reply to it is held back (forced
/// expiries and slow links) often enough that one strikes between a grant and its
/// hand-over; partitions and connection loss at their default rates.
pub fn lost_before_granted_scenario() -> Scenario {
    Scenario {
        clients: 3,
        hold_ms: 200,
        faults: Faults {
            forced_expiry: Rate::new(1, 100),
            delayed_delivery: Rate::new(1, 40),
            connection_loss: Faults::default().connection_loss,
            partition: Faults::default().partition,
            ..Faults::none()
        },
        ..Scenario::default()
    }
}

impl Recipe for LeaseHandedOverLost {
    type Lock = HandsOverLostLease<SimClient>;
    fn name(&self) -> String {
        LEASE_HANDED_OVER_LOST.into()
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> Self::Lock {
        HandsOverLostLease::new(client, path, self.leases)
    }
    /// [`lost_before_granted_scenario`]: the class shows only there.
    fn scenario(&self) -> Scenario {
        lost_before_granted_scenario()
    }
    fn leases(&self) -> Option<u32> {
        Some(self.leases)
    }
    fn symmetric(&self) -> bool {
        true
    }
}

/// One client's semaphore of [`LeaseHandedOverLost`].
#[derive(Debug)]
pub struct HandsOverLostLease<C> {
    sem: Semaphore<C>,
}

impl<C: Coordination + Clone + Send + Sync + 'static> HandsOverLostLease<C> {
    /// The canary's semaphore of `leases` on `path`.
    pub fn new(client: C, path: &str, leases: u32) -> HandsOverLostLease<C> {
        HandsOverLostLease {
            sem: Semaphore::new(client, path, leases).expect("a valid path and count"),
        }
    }

    async fn contend(&self, deadline_us: Option<u64>) -> Result<Option<LockGuard<C>>, LockError> {
        let Some(LeaseTaken { inner, lease }) = self.sem.take_lease(deadline_us).await? else {
            return Ok(None);
        };
        // BUG: the release can outlast the lease's trust, unseen.
        let _ = inner.release().await;
        Ok(Some(lease))
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> GuardedLock for HandsOverLostLease<C> {
    type Client = C;

    async fn contend(&self, wait: Wait) -> Result<Option<LockGuard<C>>, LockError> {
        match wait {
            Wait::Forever => self.contend(None).await,
            // As a timed acquire with no time to wait.
            Wait::Now => {
                self.contend(Some(self.sem.client().now().as_micros() as u64))
                    .await
            }
            Wait::For(timeout) => {
                let d = (self.sem.client().now() + timeout).as_micros() as u64;
                self.contend(Some(d)).await
            }
        }
    }
}
