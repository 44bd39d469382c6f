//! Revocation's canaries: zklock's revocable read/write lock with one known bug each, in
//! the revocation workload ([`revocation_scenario`]): a revoker asks readers and writers
//! to give up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::{LockGuard, LockOptions};
use zklock_recipe::under_test::ShippedLock;
use zklock_recipe::{Coordination, LockUnderTest, ZkError};
use zklock_sim::{Recipe, Scenario, SimClient, revocation_scenario};

/// Revocation's bug classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevocationBug {
    /// A holder that looks at its node's data once, at the grant, and never watches it:
    /// a request that comes during the hold goes unseen, and the holder keeps the lock
    /// for as long as its work takes.
    Unwatched,
    /// A revoker that deletes the holder's node where it should ask (a forced
    /// revocation): the lock is released under a holder that never gave it up.
    ForcedDelete,
    /// A lock object that keeps a revocation it once saw, and takes every later hold for
    /// revoked too, as a flag never cleared between holds: a holder gives up unasked.
    StickyFlag,
}

impl RevocationBug {
    /// Every revocation canary, in the order the suite runs them.
    pub const ALL: [RevocationBug; 3] = [
        RevocationBug::Unwatched,
        RevocationBug::ForcedDelete,
        RevocationBug::StickyFlag,
    ];

    /// The canary's name, as registered.
    pub fn name(self) -> &'static str {
        match self {
            RevocationBug::Unwatched => "canary-revoke-unwatched",
            RevocationBug::ForcedDelete => "canary-revoke-forced-delete",
            RevocationBug::StickyFlag => "canary-revoke-sticky-flag",
        }
    }

    /// The property it must violate.
    pub fn caught_by(self) -> &'static str {
        match self {
            RevocationBug::Unwatched => "revocation_honored",
            RevocationBug::ForcedDelete | RevocationBug::StickyFlag => "revocation_only_given_up",
        }
    }

    /// What it does wrong.
    pub fn description(self) -> &'static str {
        match self {
            RevocationBug::Unwatched => {
                "a revocable lock whose holder reads its revoke request once, at the grant"
            }
            RevocationBug::ForcedDelete => {
                "a revocable lock whose revoker deletes the holder's node instead of asking"
            }
            RevocationBug::StickyFlag => {
                "a revocable lock object that takes every hold after a revoked one for revoked"
            }
        }
    }
}

/// A revocation canary: a [`Recipe`] whose scenario is the revocation workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RevocationCanary(pub RevocationBug);

/// A revocation canary's lock object: zklock's lock, but for its bug.
#[derive(Debug)]
pub struct RevocationCanaryLock<C> {
    client: C,
    lock: ShippedLock<C>,
    bug: RevocationBug,
    /// Whether a hold of this object was revoked (read by the sticky flag's bug only).
    revoked: AtomicBool,
}

impl Recipe for RevocationCanary {
    type Lock = RevocationCanaryLock<SimClient>;
    fn name(&self) -> String {
        self.0.name().into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        let lock = ShippedLock::new(client.clone(), role, path, LockOptions::default())
            .expect("the scenario's lock path is valid");
        RevocationCanaryLock {
            client,
            lock,
            bug: self.0,
            revoked: AtomicBool::new(false),
        }
    }
    /// [`revocation_scenario`].
    fn scenario(&self) -> Scenario {
        revocation_scenario()
    }
    /// As the shipped lock: none of the bugs reads a client's identity.
    fn symmetric(&self) -> bool {
        true
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LockUnderTest for RevocationCanaryLock<C> {
    type Guard = LockGuard<C>;

    async fn acquire(&self) -> Result<LockGuard<C>, String> {
        self.lock.acquire().await
    }

    async fn try_acquire(&self) -> Result<Option<LockGuard<C>>, String> {
        self.lock.try_acquire().await
    }

    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard<C>>, String> {
        self.lock.acquire_timeout(timeout).await
    }

    fn token(&self, guard: &LockGuard<C>) -> i64 {
        self.lock.token(guard)
    }

    fn node(&self, guard: &LockGuard<C>) -> String {
        self.lock.node(guard)
    }

    async fn lost<'a>(&'a self, guard: &'a LockGuard<C>) -> String {
        self.lock.lost(guard).await
    }

    async fn release(&self, guard: LockGuard<C>) -> Result<(), String> {
        self.lock.release(guard).await
    }

    async fn revocation<'a>(&'a self, guard: &'a LockGuard<C>) -> Result<(), String> {
        match self.bug {
            RevocationBug::Unwatched => {
                // BUG: one look, before any watch is set; then only the lost signal.
                if guard.revoke_requested() {
                    return Ok(());
                }
                Err(self.lock.lost(guard).await)
            }
            RevocationBug::StickyFlag => {
                // BUG: a revocation once seen is never forgotten.
                if self.revoked.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let asked = self.lock.revocation(guard).await;
                if asked.is_ok() {
                    self.revoked.store(true, Ordering::Relaxed);
                }
                asked
            }
            RevocationBug::ForcedDelete => self.lock.revocation(guard).await,
        }
    }

    async fn revoke<'a>(&'a self, node: &'a str) -> Result<bool, String> {
        if self.bug == RevocationBug::ForcedDelete {
            // BUG: the holder is not asked; its node is deleted under it.
            return match self.client.delete(node, None).await {
                Ok(()) => Ok(true),
                Err(ZkError::NoNode) => Ok(false),
                Err(e) => Err(e.to_string()),
            };
        }
        self.lock.revoke(node).await
    }
}
