//! A counting semaphore: at most N holders at once, after Curator's
//! InterProcessSemaphoreV2 and Kazoo's Semaphore.
//!
//! The semaphore is a directory `<path>`, whose data is its lease count N (the first
//! client to create it stores its own count; every client then honours the stored one,
//! as Kazoo does, so that clients configured differently never admit more than the
//! directory says). A lease is an ephemeral-sequential child of `<path>`, created with
//! guid recovery as the lock's contenders are. Leases are taken only under the
//! semaphore's inner lock (zklock's exclusive lock on `<path>.lock`), as Curator does:
//! the inner lock's holder creates its lease and waits, watching the lease directory,
//! until fewer than N leases stand ahead of it; it then holds a lease and releases the
//! inner lock. Only one client waits on the leases at a time, so a release wakes one
//! waiter, not a herd. A lease taken outside the inner lock races another and can admit
//! N + 1 (Kazoo's non-blocking `acquire`, python-zk/kazoo#380): the canaries keep that
//! bug.

use crate::lock::naming::{contenders, node_prefix};
use crate::lock::queue::position;
use crate::lock::retry::{delete_until_gone, retry};
use crate::lock::{
    ContenderSpec, Lock, LockError, LockGuard, LockOptions, LostPolicy, NodeKind, RetryPolicy,
    abandoned_cleanup, await_watch, create_contender, ensure_path, hand_over,
};
use crate::{Coordination, CreateMode, GuardedLock, Wait, ZkError};
use futures_util::future::{Either, select};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The most leases a semaphore takes: its count is stored as text in its node, and the
/// simulation has at most 64 clients.
pub const LEASES_MAX: u32 = 1024;

/// The inner lock's directory of the semaphore at `path`: a sibling, so that the
/// semaphore's own directory holds leases only.
pub fn inner_lock_path(path: &str) -> String {
    format!("{}.lock", path.trim_end_matches('/'))
}

/// The lease count stored in the semaphore node's data, if it holds one.
pub fn parse_leases(data: &[u8]) -> Option<u32> {
    std::str::from_utf8(data)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|n| (1..=LEASES_MAX).contains(n))
}

/// A lease taken under the semaphore's inner lock, both still held: see
/// [`Semaphore::take_lease`].
#[derive(Debug)]
pub struct LeaseTaken<C: Coordination> {
    /// The inner lock, which only orders the takers.
    pub inner: LockGuard<C>,
    /// The lease.
    pub lease: LockGuard<C>,
}

/// A counting semaphore of `leases` holders on directory `path`.
#[derive(Debug)]
pub struct Semaphore<C> {
    client: C,
    path: String,
    /// The count this client stores if it creates the semaphore; the stored one rules.
    leases: u32,
    inner: Lock<C>,
    policy: RetryPolicy,
    attempts: AtomicU64,
}

impl<C: Coordination + Clone> Semaphore<C> {
    /// The semaphore of `leases` (1 to [`LEASES_MAX`]) holders on `path`; fails on an
    /// invalid path or count.
    pub fn new(client: C, path: &str, leases: u32) -> Result<Semaphore<C>, LockError> {
        crate::path::validate_path(path, false)?;
        if !(1..=LEASES_MAX).contains(&leases) {
            return Err(LockError::Zk(ZkError::BadArguments(format!(
                "a semaphore takes 1 to {LEASES_MAX} leases, not {leases}"
            ))));
        }
        let inner = Lock::new(
            client.clone(),
            &inner_lock_path(path),
            LockOptions::default(),
        )?;
        Ok(Semaphore {
            client,
            path: path.to_owned(),
            leases,
            inner,
            policy: RetryPolicy::default(),
            attempts: AtomicU64::new(0),
        })
    }

    /// The semaphore's directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The client this semaphore object uses.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The lease count stored in the semaphore's node, creating the node with ours if
    /// it is missing. A node without a valid count is an error, not a guess.
    pub async fn stored_leases(&self) -> Result<u32, LockError> {
        let c = &self.client;
        if let Some(parent) = crate::path::parent(&self.path) {
            ensure_path(c, &self.policy, parent).await?;
        }
        let ours = self.leases.to_string();
        let made = retry(c, &self.policy, || {
            c.create(&self.path, ours.as_bytes(), CreateMode::Persistent)
        })
        .await;
        match made {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e.into()),
        }
        let (data, _) = retry(c, &self.policy, || c.get_data(&self.path)).await?;
        parse_leases(&data).ok_or_else(|| {
            LockError::Zk(ZkError::BadArguments(format!(
                "the semaphore node {} holds no lease count",
                self.path
            )))
        })
    }

    /// Takes a lease: `Ok(None)` when `deadline_us` (client time, µs) passed first.
    async fn contend(&self, deadline_us: Option<u64>) -> Result<Option<LockGuard<C>>, LockError> {
        let Some(LeaseTaken { inner, lease }) = self.take_lease(deadline_us).await? else {
            return Ok(None);
        };
        // The lease stands on its own; the inner lock only orders the takers. Releasing it
        // can outlast the lease's trust, which `hand_over` looks at.
        let (lease, released) = hand_over(&self.client, lease, inner.release()).await?;
        match released {
            Ok(()) => Ok(Some(lease)),
            Err(e) => {
                drop(lease.release().await);
                Err(e)
            }
        }
    }

    /// The first step of an acquire: takes the inner lock, then a lease under it; `Ok(None)`
    /// when `deadline_us` (client time, µs) passed first, with both given back. The caller
    /// releases the inner lock and hands the lease over through
    /// [`hand_over`], as `acquire` does: the release can outlast
    /// the lease's trust.
    pub async fn take_lease(
        &self,
        deadline_us: Option<u64>,
    ) -> Result<Option<LeaseTaken<C>>, LockError> {
        let max = self.stored_leases().await?;
        let inner = match deadline_us {
            None => self.inner.acquire().await?,
            Some(d) => {
                let now = self.client.now().as_micros() as u64;
                let left = Duration::from_micros(d.saturating_sub(now));
                // With no time left, a try: a timed wait of no time ends before it asks.
                let got = if left.is_zero() {
                    self.inner.try_acquire().await
                } else {
                    match self.inner.acquire_timeout(left).await {
                        Ok(g) => Ok(Some(g)),
                        Err(LockError::Timeout { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                };
                match got? {
                    Some(g) => g,
                    None => return Ok(None),
                }
            }
        };
        match self.lease(deadline_us, max).await {
            Ok(Some(lease)) => Ok(Some(LeaseTaken { inner, lease })),
            Ok(None) => inner.release().await.map(|()| None),
            Err(e) => {
                drop(inner.release().await);
                Err(e)
            }
        }
    }

    /// Under the inner lock: creates our lease and waits until fewer than `max` stand
    /// ahead of it.
    async fn lease(
        &self,
        deadline_us: Option<u64>,
        max: u32,
    ) -> Result<Option<LockGuard<C>>, LockError> {
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        let guid = format!("{:x}-s{n:x}", self.client.session_id().0);
        let kind = NodeKind::Exclusive;
        let mut dropped = LeaseOnDrop {
            c: &self.client,
            dir: &self.path,
            fragment: node_prefix(&guid, kind),
            own: None,
            armed: true,
        };
        let spec = ContenderSpec {
            dir: &self.path,
            guid: &guid,
            kind,
            data: b"",
            create_parents: false,
            retry: &self.policy,
        };
        let own = create_contender(&self.client, &spec).await?;
        dropped.own = Some(own.path.clone());
        let mut events = self.client.session_events();
        let r = loop {
            let c = &self.client;
            let (children, watch) =
                retry(c, &self.policy, || c.get_children_watch(&self.path)).await?;
            let list = contenders(&children);
            let ours = position(&list, &own.name).ok_or(LockError::Zk(ZkError::NoNode))?;
            if ours < max as usize {
                let policy = LostPolicy::default();
                let g = LockGuard::adopt(c.clone(), own, kind, policy, self.policy.clone()).await?;
                break Ok(Some(g));
            }
            let now = c.now().as_micros() as u64;
            if deadline_us.is_some_and(|d| now >= d) {
                delete_until_gone(c, &self.policy, &own.path).await?;
                break Ok(None);
            }
            let waited = await_watch(watch, &mut events);
            match deadline_us {
                None => drop(waited.await?),
                Some(d) => {
                    let left = Duration::from_micros(d.saturating_sub(now));
                    if let Either::Left((r, _)) = select(pin!(waited), pin!(c.sleep(left))).await {
                        r?;
                    }
                }
            }
        };
        dropped.armed = false;
        r
    }
}

/// An acquire dropped or failed before it returned hands its lease to the client's
/// background cleanup: its node once known, or else the name fragment that finds it.
struct LeaseOnDrop<'a, C: Coordination> {
    c: &'a C,
    dir: &'a str,
    fragment: String,
    own: Option<String>,
    armed: bool,
}

impl<C: Coordination> Drop for LeaseOnDrop<'_, C> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let fragment = std::mem::take(&mut self.fragment);
        if let Some(what) = abandoned_cleanup(self.own.take(), true, self.dir, || fragment) {
            self.c.cleanup_detached(what);
        }
    }
}

/// The lease node's czxid is the token: unique, and growing with the order leases were
/// taken (leases are not exclusive, so it fences nothing).
impl<C: Coordination + Clone + Send + Sync + 'static> GuardedLock for Semaphore<C> {
    type Client = C;

    async fn contend(&self, wait: Wait) -> Result<Option<LockGuard<C>>, LockError> {
        match wait {
            Wait::Forever => self.contend(None).await,
            Wait::Now => {
                self.contend(Some(self.client.now().as_micros() as u64))
                    .await
            }
            Wait::For(timeout) => {
                let d = (self.client.now() + timeout).as_micros() as u64;
                self.contend(Some(d)).await
            }
        }
    }
}
