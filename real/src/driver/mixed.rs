//! Mixed runs: clients of several libraries contending on one lock directory
//! (`zklock real --lock zklock,curator-mutex,zkclient-lock`), client i on the (i mod n)-th
//! lock of the list, judged by the same checker as a run of one lock.
//!
//! Locks interoperate only where each counts the others' nodes as contenders and orders
//! them by their sequence number. From the libraries' code:
//!
//! - zklock's shipped lock writes `_c_<guid>-lock-<seq>` and reads Curator's, Kazoo's and
//!   ZooKeeper's plain names, ordered by sequence (`zklock_recipe::lock::naming`).
//! - Curator 5.4's `InterProcessMutex` writes `_c_<guid>-lock-<seq>` and orders every
//!   child by the text after its last `lock-`, the whole name when there is none
//!   (`StandardLockInternalsDriver.fixForSorting`).
//! - zookeeper-client 0.11's `Client::lock` (`LockPrefix::new_curator(dir, "lock-")`)
//!   writes `_c_<uuid>-lock-<seq>` and counts only the children whose name contains
//!   `lock-`, ordered by their last ten characters (`Client::wait_lock`).
//! - Kazoo 2.8's `Lock` writes `<uuid>__lock__<seq>` and counts only the children that
//!   match `(?:__lock__)(-?\d{10})$`, unless given `extra_lock_patterns`
//!   (`Lock._get_predecessor`); in a mix its driver passes `["-lock-"]`, so it counts the
//!   others' nodes.
//!
//! - ZooKeeper's contrib `WriteLock` (zookeeper-recipes-lock 3.8) writes
//!   `x-<sessionId>-<seq>` and orders every child by the number after its last `-`, the
//!   names without one after all the others (`ZNodeName.compareTo`).
//!
//! So zklock, Curator's mutex and zookeeper-client's lock interoperate with each other;
//! Kazoo's Lock with zklock's only: Curator sorts `<uuid>__lock__<seq>` by its whole name,
//! after its own nodes, and zookeeper-client does not count it, so either takes the lock
//! while a Kazoo client holds it. ZooKeeper's WriteLock with none of them: it orders the
//! `-lock-` names rightly, but none of the others counts `x-<sessionId>-<seq>` (zklock's
//! naming reads only the plain `lock-<seq>`), and it sorts Kazoo's hex `<uuid>__lock__<seq>`,
//! which has no `-`, after every numbered node. Read/write locks and semaphores are not
//! mixed.

use super::{DriverHold, DriverKind, DriverLock, DriverRecipe, DriverStatus};
use crate::error::RealError;
use crate::recording::RecordingClient;
use crate::workload::{RealRecipe, RunStart, ShippedRealRecipe};
use zklock_recipe::history::LockRole;
use zklock_recipe::under_test::ShippedLock;
use zklock_recipe::{LockGuard, LockUnderTest};

/// The most locks one mixed run names.
pub const MAX_MIXED_LOCKS: usize = 8;

/// A lock a mixed run can name: zklock's shipped lock or a driver's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockName {
    Zklock,
    Driver(DriverKind),
}

impl LockName {
    /// `zklock`, or a driver's name.
    pub fn parse(name: &str) -> Result<LockName, String> {
        match name {
            "zklock" => Ok(LockName::Zklock),
            other => DriverKind::parse(other).map(LockName::Driver),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LockName::Zklock => "zklock",
            LockName::Driver(kind) => kind.name(),
        }
    }
}

impl std::fmt::Display for LockName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why `a` and `b` do not interoperate on one directory, from their code; `None` when
/// they do. Read/write locks and semaphores are refused by [`check_mix`] before.
pub fn foreign_naming(a: LockName, b: LockName) -> Option<&'static str> {
    use DriverKind::{CuratorMutex, KazooLock, ZkclientLock, ZookeeperWriteLock};
    let pair = |x, y| (a == x && b == y) || (a == y && b == x);
    let writelock = LockName::Driver(ZookeeperWriteLock);
    if (a == writelock) != (b == writelock) {
        let other = if a == writelock { b } else { a };
        return Some(writelock_beside(other));
    }
    let (kazoo, curator, zkclient) = (
        LockName::Driver(KazooLock),
        LockName::Driver(CuratorMutex),
        LockName::Driver(ZkclientLock),
    );
    if pair(kazoo, curator) {
        return Some(
            "Curator's InterProcessMutex orders children by the text after their last \
             `lock-` (StandardLockInternalsDriver.fixForSorting), and Kazoo's nodes \
             (`<uuid>__lock__<seq>`) have none: it sorts them by their whole name, after \
             its own, and takes the lock while a Kazoo client holds it",
        );
    }
    if pair(kazoo, zkclient) {
        return Some(
            "zookeeper-client's Client::lock counts only children whose name contains \
             `lock-` (LockPrefixKind::filter), which Kazoo's `<uuid>__lock__<seq>` does \
             not: it takes the lock while a Kazoo client holds it",
        );
    }
    None
}

/// Why ZooKeeper's WriteLock does not interoperate with `other` (not itself).
fn writelock_beside(other: LockName) -> &'static str {
    match other {
        LockName::Zklock => {
            "zklock's lock counts Curator's, Kazoo's and the plain `lock-<seq>` names \
             (zklock_recipe::lock::naming), not WriteLock's `x-<sessionId>-<seq>`: it takes \
             the lock while a WriteLock client holds it"
        }
        LockName::Driver(DriverKind::CuratorMutex) => {
            "Curator's InterProcessMutex orders children by the text after their last \
             `lock-` (StandardLockInternalsDriver.fixForSorting), and WriteLock's nodes \
             (`x-<sessionId>-<seq>`) have none: it sorts them by their whole name, after its \
             own, and takes the lock while a WriteLock client holds it"
        }
        LockName::Driver(DriverKind::KazooLock) => {
            "Kazoo's Lock counts `__lock__` names (and `-lock-` ones in a mix), not \
             WriteLock's `x-<sessionId>-<seq>`, and WriteLock sorts Kazoo's \
             `<hex uuid>__lock__<seq>`, which has no `-`, after every numbered node \
             (ZNodeName.compareTo): each takes the lock while the other holds it"
        }
        _ => {
            "zookeeper-client's Client::lock counts only children whose name contains \
             `lock-` (LockPrefixKind::filter), which WriteLock's `x-<sessionId>-<seq>` does \
             not: it takes the lock while a WriteLock client holds it"
        }
    }
}

/// Checks a mix of locks: each an exclusive lock that can be mixed, and, unless
/// `allow_foreign`, every pair interoperating. The error says why not.
pub fn check_mix(locks: &[LockName], allow_foreign: bool) -> Result<(), String> {
    if locks.len() > MAX_MIXED_LOCKS {
        return Err(format!(
            "a mix names at most {MAX_MIXED_LOCKS} locks, got {}",
            locks.len()
        ));
    }
    for &lock in locks {
        if let LockName::Driver(kind) = lock
            && !matches!(
                kind,
                DriverKind::CuratorMutex
                    | DriverKind::ZkclientLock
                    | DriverKind::KazooLock
                    | DriverKind::ZookeeperWriteLock
            )
        {
            return Err(format!(
                "{kind} cannot be mixed: a mix takes the exclusive locks zklock, \
                 curator-mutex, zkclient-lock, kazoo-lock and zookeeper-writelock \
                 (read/write locks, semaphores and elections name and place their nodes \
                 each their own way)"
            ));
        }
    }
    if allow_foreign {
        return Ok(());
    }
    for (i, &a) in locks.iter().enumerate() {
        for &b in &locks[i + 1..] {
            if let Some(why) = foreign_naming(a, b) {
                return Err(format!(
                    "{a} and {b} do not interoperate on one directory: {why} \
                     (--allow-foreign-naming runs them anyway)"
                ));
            }
        }
    }
    Ok(())
}

/// Which lock client `index` of a mix of `locks` runs: round-robin.
pub fn lock_of(locks: &[LockName], index: usize) -> LockName {
    locks[index % locks.len()]
}

/// "client 0 zklock, client 1 curator-mutex, ..." for `clients` clients of a mix.
pub fn describe_mix(locks: &[LockName], clients: u32) -> String {
    let each: Vec<String> = (0..clients as usize)
        .map(|i| format!("client {i} {}", lock_of(locks, i)))
        .collect();
    each.join(", ")
}

/// A [`RealRecipe`] whose clients run the locks of a mix, round-robin.
#[derive(Debug)]
pub struct MixedRecipe {
    locks: Vec<LockName>,
    shipped: ShippedRealRecipe,
    /// One driver recipe per driver kind of the mix, serving its clients only.
    drivers: Vec<DriverRecipe>,
}

impl MixedRecipe {
    /// Locates (or builds) every driver of the mix: fails, naming what to install, when a
    /// library is missing. The mix is checked with [`check_mix`] first.
    pub fn prepare(locks: Vec<LockName>, allow_foreign: bool) -> Result<MixedRecipe, RealError> {
        if locks.is_empty() {
            return Err(RealError::Config {
                reason: "a mix names at least one lock".into(),
            });
        }
        check_mix(&locks, allow_foreign).map_err(|reason| RealError::Config { reason })?;
        let mut drivers: Vec<DriverRecipe> = Vec::new();
        for &lock in &locks {
            let LockName::Driver(kind) = lock else {
                continue;
            };
            if drivers.iter().any(|d| d.kind() == kind) {
                continue;
            }
            let slots = locks.iter().map(|&l| l == lock).collect();
            drivers.push(DriverRecipe::prepare_for(kind, slots)?);
        }
        Ok(MixedRecipe {
            locks,
            shipped: ShippedRealRecipe::default(),
            drivers,
        })
    }

    /// The locks, in the order clients take them.
    pub fn locks(&self) -> &[LockName] {
        &self.locks
    }

    /// The run's driver failures and hellos, readable after the run.
    pub fn status(&self) -> Option<DriverStatus> {
        let mut parts = self.drivers.iter().map(DriverRecipe::status);
        let first = parts.next()?;
        Some(parts.fold(first, DriverStatus::with))
    }

    fn driver(&self, kind: DriverKind) -> Option<&DriverRecipe> {
        self.drivers.iter().find(|d| d.kind() == kind)
    }
}

impl RealRecipe for MixedRecipe {
    type Lock = MixedLock;

    fn fresh_lock(
        &self,
        current: &MixedLock,
        client: RecordingClient,
        role: LockRole,
        path: &str,
    ) -> MixedLock {
        match (current, lock_of(&self.locks, client.index() as usize)) {
            (MixedLock::Driver(lock), LockName::Driver(kind)) => match self.driver(kind) {
                Some(d) => MixedLock::Driver(d.fresh_lock(lock, client, role, path)),
                None => MixedLock::Missing(kind),
            },
            _ => self.lock(client, role, path),
        }
    }

    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> MixedLock {
        match lock_of(&self.locks, client.index() as usize) {
            LockName::Driver(kind) => match self.driver(kind) {
                Some(d) => MixedLock::Driver(d.lock(client, role, path)),
                None => MixedLock::Missing(kind),
            },
            LockName::Zklock => MixedLock::Shipped(self.shipped.lock(client, role, path)),
        }
    }

    /// Drivers and the shipped lock alike report their nodes' czxids.
    fn tokens_are_czxids(&self) -> bool {
        true
    }

    /// A driver's client gives back what its cancelled acquires took after all, as the
    /// driver's own recipe does: kept idle until the run has been read, it would hold a
    /// node the orphan check counts.
    async fn retire(&self, lock: &MixedLock) {
        if let MixedLock::Driver(lock) = lock {
            lock.retire().await;
        }
    }

    async fn start(&self, run: &RunStart) -> Result<(), RealError> {
        if run.roles.iter().any(|r| *r != LockRole::Exclusive) {
            return Err(RealError::Config {
                reason: "a mixed run has no readers: its locks are exclusive".into(),
            });
        }
        for d in &self.drivers {
            d.start(run).await?;
        }
        Ok(())
    }
}

/// One client's lock in a mixed run.
#[derive(Debug)]
pub enum MixedLock {
    Shipped(ShippedLock<RecordingClient>),
    Driver(DriverLock),
    /// A driver the recipe did not prepare (unreachable through [`MixedRecipe::prepare`]).
    Missing(DriverKind),
}

/// A hold of a [`MixedLock`].
#[derive(Debug)]
pub enum MixedHold {
    Shipped(LockGuard<RecordingClient>),
    Driver(DriverHold),
}

const MISMATCH: &str = "a hold of another lock of the mix";

impl LockUnderTest for MixedLock {
    type Guard = MixedHold;

    async fn acquire(&self) -> Result<MixedHold, String> {
        match self {
            MixedLock::Shipped(l) => l.acquire().await.map(MixedHold::Shipped),
            MixedLock::Driver(l) => l.acquire().await.map(MixedHold::Driver),
            MixedLock::Missing(kind) => Err(format!("no driver {kind} was prepared")),
        }
    }

    async fn try_acquire(&self) -> Result<Option<MixedHold>, String> {
        match self {
            MixedLock::Shipped(l) => Ok(l.try_acquire().await?.map(MixedHold::Shipped)),
            MixedLock::Driver(l) => Ok(l.try_acquire().await?.map(MixedHold::Driver)),
            MixedLock::Missing(kind) => Err(format!("no driver {kind} was prepared")),
        }
    }

    async fn acquire_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<MixedHold>, String> {
        match self {
            MixedLock::Shipped(l) => Ok(l.acquire_timeout(timeout).await?.map(MixedHold::Shipped)),
            MixedLock::Driver(l) => Ok(l.acquire_timeout(timeout).await?.map(MixedHold::Driver)),
            MixedLock::Missing(kind) => Err(format!("no driver {kind} was prepared")),
        }
    }

    fn token(&self, hold: &MixedHold) -> i64 {
        match (self, hold) {
            (MixedLock::Shipped(l), MixedHold::Shipped(g)) => l.token(g),
            (MixedLock::Driver(l), MixedHold::Driver(h)) => l.token(h),
            _ => -1,
        }
    }

    fn node(&self, hold: &MixedHold) -> String {
        match (self, hold) {
            (MixedLock::Shipped(l), MixedHold::Shipped(g)) => l.node(g),
            (MixedLock::Driver(l), MixedHold::Driver(h)) => l.node(h),
            _ => String::new(),
        }
    }

    async fn lost<'a>(&'a self, hold: &'a MixedHold) -> String {
        match (self, hold) {
            (MixedLock::Shipped(l), MixedHold::Shipped(g)) => l.lost(g).await,
            (MixedLock::Driver(l), MixedHold::Driver(h)) => l.lost(h).await,
            _ => MISMATCH.into(),
        }
    }

    async fn release(&self, hold: MixedHold) -> Result<(), String> {
        match (self, hold) {
            (MixedLock::Shipped(l), MixedHold::Shipped(g)) => l.release(g).await,
            (MixedLock::Driver(l), MixedHold::Driver(h)) => l.release(h).await,
            _ => Err(MISMATCH.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<LockName> {
        list.split(',')
            .map(|n| LockName::parse(n).unwrap())
            .collect()
    }

    #[test]
    fn only_interoperating_exclusive_locks_mix() {
        assert!(check_mix(&names("zklock,curator-mutex,zkclient-lock"), false).is_ok());
        assert!(check_mix(&names("zklock,kazoo-lock"), false).is_ok());
        let e = check_mix(&names("zklock,curator-mutex,kazoo-lock"), false).unwrap_err();
        assert!(
            e.contains("curator-mutex and kazoo-lock") && e.contains("fixForSorting"),
            "{e}"
        );
        let e = check_mix(&names("kazoo-lock,zkclient-lock"), false).unwrap_err();
        assert!(e.contains("contains `lock-`"), "{e}");
        assert!(check_mix(&names("kazoo-lock,zkclient-lock"), true).is_ok());
        let e = check_mix(&names("zklock,kazoo-rw"), true).unwrap_err();
        assert!(e.contains("kazoo-rw cannot be mixed"), "{e}");
        assert!(check_mix(&names("zklock,curator-semaphore-mutex"), false).is_err());
        assert!(check_mix(&[LockName::Zklock; MAX_MIXED_LOCKS + 1], false).is_err());
    }

    /// An election is a lock's run only alone, forced or not.
    #[test]
    fn elections_are_never_mixed() {
        for kind in DriverKind::ALL.into_iter().filter(|k| k.is_election()) {
            for mix in [format!("zklock,{kind}"), format!("{kind},{kind}")] {
                let e = check_mix(&names(&mix), true).unwrap_err();
                assert!(e.contains(&format!("{kind} cannot be mixed")), "{e}");
            }
        }
    }

    /// ZooKeeper's WriteLock mixes with none of the others, each refused with its own
    /// reason; forced, it runs (to show the double grant).
    #[test]
    fn zookeepers_writelock_mixes_with_no_other_lock() {
        let reasons = [
            ("zklock", "zklock_recipe::lock::naming"),
            ("curator-mutex", "fixForSorting"),
            ("kazoo-lock", "ZNodeName.compareTo"),
            ("zkclient-lock", "LockPrefixKind::filter"),
        ];
        for (other, why) in reasons {
            let mix = names(&format!("zookeeper-writelock,{other}"));
            let e = check_mix(&mix, false).unwrap_err();
            assert!(
                e.contains(&format!(
                    "zookeeper-writelock and {other} do not interoperate"
                )) && e.contains(why),
                "{e}"
            );
            assert!(check_mix(&mix, true).is_ok(), "{other}");
        }
        assert!(check_mix(&names("zookeeper-writelock,zookeeper-writelock"), false).is_ok());
    }

    #[test]
    fn clients_take_the_locks_round_robin() {
        let mix = names("zklock,curator-mutex,zkclient-lock");
        let got: Vec<_> = (0..5).map(|i| lock_of(&mix, i).name()).collect();
        assert_eq!(
            got,
            [
                "zklock",
                "curator-mutex",
                "zkclient-lock",
                "zklock",
                "curator-mutex"
            ]
        );
    }
}
