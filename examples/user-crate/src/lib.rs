//! A queue lock of ephemeral-sequential nodes, built from zklock's building blocks
//! (`zklock_recipe::lock`): each contender creates its node (recovering it after a lost
//! create reply), and whoever has the lowest node holds. What a waiter watches is the
//! difference between the herding lock and its fix:
//!
//! - [`Waits::OnDirectory`]: every waiter watches the lock directory, so each release
//!   wakes every waiter (a herd: zklock's `no_herd` catches it);
//! - [`Waits::OnPredecessor`]: each waiter watches the one node just ahead of it, so a
//!   release wakes one waiter.

use futures_util::future::{Either, select};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use zklock_recipe::lock::naming::node_prefix;
use zklock_recipe::lock::queue::{blocker, position};
use zklock_recipe::lock::retry::{delete_until_gone, retry};
use zklock_recipe::lock::{
    ContenderSpec, LockError, LockGuard, LostPolicy, NodeKind, RetryPolicy, abandoned_cleanup,
    await_watch, create_contender, list_contenders, watch_node,
};
use zklock_recipe::path::join;
use zklock_recipe::{Coordination, LockUnderTest, ZkError};

/// What a waiter watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// The lock directory's children: the herd.
    OnDirectory,
    /// The node just ahead: the fix.
    OnPredecessor,
}

/// One client's lock object on directory `dir`.
#[derive(Debug)]
pub struct QueueLock<C> {
    client: C,
    dir: String,
    waits: Waits,
    attempts: AtomicU64,
    policy: RetryPolicy,
}

impl<C: Coordination + Clone + Send + Sync + 'static> QueueLock<C> {
    pub fn new(client: C, dir: &str, waits: Waits) -> Self {
        QueueLock {
            client,
            dir: dir.to_owned(),
            waits,
            attempts: AtomicU64::new(0),
            policy: RetryPolicy::default(),
        }
    }

    /// Contends; `Ok(None)` once `deadline_us` (the client's clock) passed, our node
    /// deleted. Dropped before it returns, or failing, it hands its node to the client's
    /// background cleanup.
    async fn contend(&self, deadline_us: Option<u64>) -> Result<Option<LockGuard<C>>, LockError> {
        // The guid names the session and the attempt: a lost create reply is recovered
        // by finding our node by it.
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        let guid = format!("{:x}-{n:x}", self.client.session_id().0);
        let mut dropped = OnDrop {
            client: &self.client,
            dir: &self.dir,
            fragment: node_prefix(&guid, NodeKind::Exclusive),
            own: None,
            armed: true,
        };
        let r = self.queue_up(deadline_us, &guid, &mut dropped).await;
        // Returned with the lock, or with our node deleted at the deadline. An error
        // (the retries ran out, say) leaves the node to the cleanup, as a drop does:
        // standing, it would block every later contender while our session lives.
        if r.is_ok() {
            dropped.armed = false;
        }
        r
    }

    async fn queue_up(
        &self,
        deadline_us: Option<u64>,
        guid: &str,
        dropped: &mut OnDrop<'_, C>,
    ) -> Result<Option<LockGuard<C>>, LockError> {
        let spec = ContenderSpec {
            dir: &self.dir,
            guid,
            kind: NodeKind::Exclusive,
            data: b"",
            create_parents: true,
            retry: &self.policy,
        };
        let own = create_contender(&self.client, &spec).await?;
        dropped.own = Some(own.path.clone());
        let mut events = self.client.session_events();
        loop {
            let list = list_contenders(&self.client, &self.policy, &self.dir).await?;
            let ours = position(&list, &own.name).ok_or(LockError::Zk(ZkError::NoNode))?;
            let Some(ahead) = blocker(&list, ours) else {
                let (c, lost, policy) = (self.client.clone(), LostPolicy::default(), &self.policy);
                let guard = LockGuard::adopt(c, own, NodeKind::Exclusive, lost, policy.clone());
                return Ok(Some(guard.await?));
            };
            let now = self.client.now().as_micros() as u64;
            if deadline_us.is_some_and(|d| now >= d) {
                delete_until_gone(&self.client, &self.policy, &own.path).await?;
                return Ok(None);
            }
            let watch = match self.waits {
                Waits::OnDirectory => {
                    let listed = retry(&self.client, &self.policy, || {
                        self.client.get_children_watch(&self.dir)
                    });
                    Some(listed.await?.1)
                }
                Waits::OnPredecessor => {
                    let ahead = join(&self.dir, &ahead.name);
                    watch_node(&self.client, &self.policy, &ahead).await?
                }
            };
            // The node ahead is gone already: look again.
            let Some(watch) = watch else { continue };
            let waited = pin!(await_watch(watch, &mut events));
            match deadline_us {
                None => drop(waited.await?),
                Some(d) => {
                    let left = Duration::from_micros(d.saturating_sub(now));
                    if let Either::Left((r, _)) =
                        select(waited, pin!(self.client.sleep(left))).await
                    {
                        r?;
                    }
                }
            }
        }
    }
}

/// What an acquire dropped before it returned hands to the client's background cleanup:
/// its node once known, else the name fragment that finds it.
struct OnDrop<'a, C: Coordination> {
    client: &'a C,
    dir: &'a str,
    fragment: String,
    own: Option<String>,
    /// Until the acquire returns.
    armed: bool,
}

impl<C: Coordination> Drop for OnDrop<'_, C> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let fragment = std::mem::take(&mut self.fragment);
        if let Some(what) = abandoned_cleanup(self.own.take(), true, self.dir, || fragment) {
            self.client.cleanup_detached(what);
        }
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LockUnderTest for QueueLock<C> {
    type Guard = LockGuard<C>;

    async fn acquire(&self) -> Result<LockGuard<C>, String> {
        match self.contend(None).await {
            Ok(Some(g)) => Ok(g),
            Ok(None) => Err("no deadline, yet timed out".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard<C>>, String> {
        let deadline = (self.client.now() + timeout).as_micros() as u64;
        self.contend(Some(deadline))
            .await
            .map_err(|e| e.to_string())
    }

    fn token(&self, g: &LockGuard<C>) -> i64 {
        g.fencing_token().0
    }

    fn node(&self, g: &LockGuard<C>) -> String {
        g.path().to_owned()
    }

    async fn lost<'a>(&'a self, g: &'a LockGuard<C>) -> String {
        format!("{:?}", g.lost().await)
    }

    async fn release(&self, g: LockGuard<C>) -> Result<(), String> {
        g.release().await.map_err(|e| e.to_string())
    }
}
