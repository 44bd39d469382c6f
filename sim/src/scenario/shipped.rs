//! The shipped recipes, adapted to [`LockUnderTest`](super::LockUnderTest).

use super::{Recipe, Scenario};
use crate::SimClient;
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;

/// zklock's exclusive lock (role Exclusive) and read/write lock (roles Read, Write).
#[derive(Clone, Debug, Default)]
pub struct ShippedRecipe {
    pub options: LockOptions,
}

/// One client's lock object of the shipped recipe.
pub type ShippedLock = zklock_recipe::under_test::ShippedLock<SimClient>;

impl Recipe for ShippedRecipe {
    type Lock = ShippedLock;
    fn name(&self) -> String {
        "zklock".into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
        ShippedLock::new(client, role, path, self.options.clone())
            .expect("the scenario's lock path is valid")
    }
    /// Contenders are ordered by sequence number and a guid is only compared, so yes,
    /// unless every client was given one guid of the user's (which a renaming of
    /// sessions could mistake for a session's).
    fn symmetric(&self) -> bool {
        self.options.guid.is_none()
    }
}

/// zklock's counting semaphore ([`Semaphore`](zklock_recipe::semaphore::Semaphore)) of
/// `leases` holders, on the scenario's lock directory; every client's lease is the same
/// whatever its role.
#[derive(Clone, Debug)]
pub struct SemaphoreRecipe {
    /// The lease count each client stores if it creates the semaphore. Default 2.
    pub leases: u32,
}

impl Default for SemaphoreRecipe {
    fn default() -> Self {
        SemaphoreRecipe { leases: 2 }
    }
}

/// One client's semaphore object.
pub type SemaphoreLock = zklock_recipe::semaphore::Semaphore<SimClient>;

impl Recipe for SemaphoreRecipe {
    type Lock = SemaphoreLock;
    fn name(&self) -> String {
        "semaphore".into()
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> SemaphoreLock {
        SemaphoreLock::new(client, path, self.leases)
            .expect("the scenario's lock path and the lease count are valid")
    }
    fn leases(&self) -> Option<u32> {
        Some(self.leases)
    }
    /// As the shipped lock's: leases are counted and ordered by czxid, guids compared.
    fn symmetric(&self) -> bool {
        true
    }
}

/// zklock's read/write lock with revocation ([`Lock::revoke`](zklock_recipe::lock::Lock::revoke)):
/// in its own scenario ([`RevocableRecipe::scenario`]) a revoker asks readers and writers
/// to give up, and they do.
#[derive(Clone, Debug, Default)]
pub struct RevocableRecipe {
    pub shipped: ShippedRecipe,
}

impl Recipe for RevocableRecipe {
    type Lock = ShippedLock;
    fn name(&self) -> String {
        "revocable".into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
        self.shipped.lock(client, role, path)
    }
    fn symmetric(&self) -> bool {
        self.shipped.symmetric()
    }
    /// One reader, two writers and a revoker, holds of 1000 ms (the revoker asks every
    /// 500 ms), every fault on.
    fn scenario(&self) -> Scenario {
        revocation_scenario()
    }
}

/// The revocation workload: 4 clients, one of them a reader and one a revoker, holds of
/// 1000 ms (four times the bound a holder has to give up in), the default faults and
/// rates. The revocation canaries run in it too.
pub fn revocation_scenario() -> Scenario {
    Scenario {
        clients: 4,
        readers: 1,
        revokers: 1,
        hold_ms: 1000,
        ..Scenario::default()
    }
}
