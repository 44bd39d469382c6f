//! Canaries: zklock's lock with one known bug each, built from its public building blocks,
//! one per bug class real lock libraries shipped. They live here, never in the shipped
//! recipe. The suite must catch every one (the workspace's `tests/canaries/`), and each
//! has a minimized trace, `traces/<name>.json`, that replays to its violation.
//!
//! [`Canary`] is a [`Recipe`] for the simulation; its lock, [`CanaryLock`], is generic
//! over [`Coordination`], so the same code runs on a real server too
//! ([`Canary::lock_on`]).
//!
//! ```
//! use zklock_canaries::{Bug, Canary};
//! use zklock_sim::{Recipe, Scenario, run_scenario};
//!
//! let bug = Bug::WatchParent;
//! assert_eq!(bug.name(), "canary-watch-parent");
//! assert_eq!(bug.caught_by(), "no_herd");
//! let run = run_scenario(&Scenario::default(), 1, &Canary(bug));
//! assert!(!run.history.events.is_empty());
//! assert_eq!(Canary(bug).name(), "canary-watch-parent");
//! ```

mod election;
mod queue;
mod revocation;
mod semaphore;

pub use election::{ElectionBug, ElectionCanary};
pub use revocation::{RevocationBug, RevocationCanary, RevocationCanaryLock};

pub use queue::{QueueBug, QueueCanary};
pub use semaphore::{
    HandsOverLostLease, LEASE_HANDED_OVER_LOST, LEASE_HANDED_OVER_LOST_CAUGHT_BY,
    LeaseHandedOverLost, lost_before_granted_scenario,
};

use futures_util::future::{Either, select};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use zklock_checker::registry::{Recipes, RegistryError};
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::naming::{node_prefix, sort_by_sequence};
use zklock_recipe::lock::queue::{blocker, position};
use zklock_recipe::lock::retry::{delete_until_gone, retry};
use zklock_recipe::lock::{
    ContenderSpec, LockError, LockGuard, LockNode, LostPolicy, NodeKind, OwnNode, RetryPolicy,
    abandoned_cleanup, await_watch, create_contender, ensure_path, list_contenders, watch_node,
};
use zklock_recipe::path::join;
use zklock_recipe::{Coordination, CreateMode, SessionEvents, SessionState, Watch, ZkError};
use zklock_recipe::{GuardedLock, Wait};
use zklock_sim::{Rate, Recipe, Scenario, SimClient};

/// Registers every canary under its [`name`](Bug::name), described by what it does wrong
/// and the property it must violate: the command line then explores, checks, replays and
/// shrinks them by name (`zklock replay traces/canary-watch-parent.json`).
///
/// ```
/// use zklock_checker::registry::Recipes;
///
/// let mut recipes = Recipes::shipped();
/// zklock_canaries::register_all(&mut recipes).unwrap();
/// assert!(recipes.get("canary-watch-parent").is_some());
/// ```
pub fn register_all(recipes: &mut Recipes) -> Result<(), RegistryError> {
    for bug in Bug::ALL {
        let description = format!("{} (must violate {})", bug.description(), bug.caught_by());
        recipes.register(bug.name(), &description, Canary(bug))?;
    }
    recipes.register(
        LEASE_OUTSIDE_LOCK,
        format!(
            "a semaphore lease taken outside the inner lock (must violate {LEASE_OUTSIDE_LOCK_CAUGHT_BY})"
        ),
        LeaseOutsideLock::default(),
    )?;
    recipes.register(
        LEASE_HANDED_OVER_LOST,
        format!(
            "a semaphore lease handed over after its trust ended (must violate {LEASE_HANDED_OVER_LOST_CAUGHT_BY})"
        ),
        LeaseHandedOverLost::default(),
    )?;
    for bug in QueueBug::ALL {
        let description = format!("{} (must violate {})", bug.description(), bug.caught_by());
        recipes.register(bug.name(), &description, QueueCanary(bug))?;
    }
    for bug in ElectionBug::ALL {
        let description = format!("{} (must violate {})", bug.description(), bug.caught_by());
        recipes.register(bug.name(), &description, ElectionCanary(bug))?;
    }
    for bug in RevocationBug::ALL {
        let description = format!("{} (must violate {})", bug.description(), bug.caught_by());
        recipes.register(bug.name(), &description, RevocationCanary(bug))?;
    }
    Ok(())
}

/// The bug classes real lock libraries shipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// Retries create after ConnectionLoss without looking for the first node (no guid
    /// recovery): an orphan node, then a stuck lock.
    BlindRetry,
    /// Waits on the parent's children instead of the predecessor: a herd.
    WatchParent,
    /// A holder that ignores Disconnected and Expired: two believers after an expiry.
    DeafHolder,
    /// Orders contenders by full name instead of by sequence: two holders.
    FullNameOrder,
    /// Releases with one delete and forgets the node whatever came of it, as ZooKeeper's
    /// own WriteLock.unlock does: after a ConnectionLoss the node may still stand, and
    /// every later contender waits behind it for as long as the session lives.
    ForgetfulRelease,
    /// Gives up a wait (a try that finds the lock held, a timeout that runs out) and
    /// returns without deleting its node, as zk-ruby's locker, Twitter commons'
    /// DistributedLockImpl.tryLock and aiozk once did: the node stands for as long as the
    /// session lives, and every later contender waits behind it.
    AbandonedWait,
    /// Finds the blocker already gone when it comes to watch it, and waits anyway, as
    /// Apache Helix's WriteLock did (apache/helix#44): no watch was set, so nothing wakes
    /// the waiter, and every later contender waits behind its node.
    LostWakeup,
    /// A waiter that hears only its blocker's deletion and drops the session's end, as
    /// Twitter commons' DistributedLockImpl did (twitter-archive/commons#20): once its
    /// session expires while it waits, its node is gone and nothing wakes it.
    DeafWaiter,
    /// A reader that counts writers queued after it as ahead of it, as Kazoo's ReadLock
    /// did (python-zk/kazoo#649): it waits for a later writer, which waits for it.
    ReaderWaitsForLaterWriter,
    /// An acquire dropped while its create is in flight forgets the node the server still
    /// creates, as Curator's InterProcessMutex did when interrupted there (CURATOR-79,
    /// apache/curator#600): the node stands for as long as the session lives, and every
    /// later contender waits behind it.
    DroppedCreate,
    /// A waiter whose connection drops deletes its node once, while the connection is
    /// still down, forgets it whatever came of it, and starts over with a new node, as
    /// zk-ruby's locker did (zk-ruby/zk#54, fixed in zk 1.7.4): the first node stands
    /// ahead of the second for as long as the session lives, and the waiter waits behind
    /// itself.
    RestartForgetsNode,
    /// A timed acquire that waits on its blocker's watch with no deadline and looks at
    /// the clock only when woken: behind a long hold (a holder cut off or paused until
    /// its session expires), the waiter returns seconds after its timeout. The overrun
    /// class of CURATOR-559 and spring-projects/spring-integration#1863 (timed lock
    /// acquires that returned far too late, there through retries while the server was
    /// unreachable), by the simplest way to it.
    DeadlineOnWake,
    /// Orders contenders by sequence as plain numbers, blind to ZooKeeper's counter
    /// wrapping from 2147483647 to -2147483648: the first node past the wrap sorts ahead
    /// of the holder and takes the lock too. Kazoo's Lock compared the suffixes as strings
    /// (python-zk/kazoo#730), go-zookeeper's lock misparsed them (go-zookeeper/zk#65),
    /// and ZooKeeper's own WriteLock recipe likewise (ZOOKEEPER-4372).
    OrderBlindToWrap,
    /// After a lost create reply, adopts the node bearing its guid whichever session owns
    /// it, with a guid that does not name the session, as Curator's protected mode did
    /// (CURATOR-498, apache/curator#303): once its client library declared the session
    /// expired on its own (Curator's own session timer, or KillSession), the next session
    /// takes the old one's node, which the server still holds, for its own. The server
    /// expires the old session, the node goes, and the next waiter takes the lock while
    /// this holder, watching only its connection as Curator's InterProcessMutex does,
    /// still believes.
    GuidOutlivesSession,
    /// A fencing token drawn from a hash of the lock node's name: unique, but not ordered
    /// by the order of holding, as Redlock's random lock value is (Kleppmann, "How to do
    /// distributed locking", 2016: it "does not provide the required monotonicity"). The
    /// fenced resource refuses the rightful holder's writes once an earlier holder's
    /// larger token reached it, and accepts a stale holder's whose token happens to be
    /// large.
    UnorderedToken,
    /// A reader that waits for the first writer ahead of it instead of the nearest: the
    /// first writer's release wakes it with the next writer still ahead, so that release
    /// wakes that writer and the reader, a herd, and the reader only goes back to waiting.
    ReaderWatchesFirstWriter,
}

impl Bug {
    /// Every canary, in the order the suite runs them.
    pub const ALL: [Bug; 16] = [
        Bug::BlindRetry,
        Bug::WatchParent,
        Bug::DeafHolder,
        Bug::FullNameOrder,
        Bug::ForgetfulRelease,
        Bug::AbandonedWait,
        Bug::LostWakeup,
        Bug::DeafWaiter,
        Bug::ReaderWaitsForLaterWriter,
        Bug::DroppedCreate,
        Bug::RestartForgetsNode,
        Bug::DeadlineOnWake,
        Bug::OrderBlindToWrap,
        Bug::GuidOutlivesSession,
        Bug::UnorderedToken,
        Bug::ReaderWatchesFirstWriter,
    ];
    /// The canary's stable name: its recipe's name in traces and its trace file's name,
    /// `traces/<name>.json`.
    pub fn name(self) -> &'static str {
        match self {
            Bug::BlindRetry => "canary-blind-retry",
            Bug::WatchParent => "canary-watch-parent",
            Bug::DeafHolder => "canary-deaf-holder",
            Bug::FullNameOrder => "canary-full-name-order",
            Bug::ForgetfulRelease => "canary-forgetful-release",
            Bug::AbandonedWait => "canary-abandoned-wait",
            Bug::LostWakeup => "canary-lost-wakeup",
            Bug::DeafWaiter => "canary-deaf-waiter",
            Bug::ReaderWaitsForLaterWriter => "canary-reader-waits-for-later-writer",
            Bug::DroppedCreate => "canary-dropped-create",
            Bug::RestartForgetsNode => "canary-restart-forgets-node",
            Bug::DeadlineOnWake => "canary-deadline-on-wake",
            Bug::OrderBlindToWrap => "canary-order-blind-to-wrap",
            Bug::GuidOutlivesSession => "canary-guid-outlives-session",
            Bug::UnorderedToken => "canary-unordered-token",
            Bug::ReaderWatchesFirstWriter => "canary-reader-watches-first-writer",
        }
    }
    /// The canary whose [`name`](Bug::name) is `name`.
    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == name)
    }

    /// What the canary's lock does wrong, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Bug::BlindRetry => {
                "retries a create after ConnectionLoss without looking for the first node"
            }
            Bug::WatchParent => "waiters watch the lock directory, not their predecessor",
            Bug::DeafHolder => "a holder deaf to Disconnected and Expired",
            Bug::FullNameOrder => "orders contenders by full name, not by sequence",
            Bug::ForgetfulRelease => {
                "releases with one delete and forgets the node whatever came of it"
            }
            Bug::AbandonedWait => "a try or timed wait gives up without deleting its node",
            Bug::LostWakeup => {
                "finds its blocker already gone when it comes to watch it, and waits"
            }
            Bug::DeafWaiter => "a waiter that drops its session's end and waits forever",
            Bug::ReaderWaitsForLaterWriter => {
                "a reader counts writers queued after it as ahead of it"
            }
            Bug::DroppedCreate => {
                "an acquire dropped while its create is in flight forgets the node"
            }
            Bug::RestartForgetsNode => {
                "on a disconnect a waiter deletes its node once, forgets it and starts over"
            }
            Bug::DeadlineOnWake => "a timed acquire looks at its deadline only when woken",
            Bug::OrderBlindToWrap => {
                "orders contenders by sequence as plain numbers, blind to the counter's wrap"
            }
            Bug::GuidOutlivesSession => {
                "after a lost create reply, adopts its guid's node whichever session owns it"
            }
            Bug::UnorderedToken => "its fencing token is unique but not ordered by holding",
            Bug::ReaderWatchesFirstWriter => {
                "a reader waits for the first writer ahead of it, not the nearest"
            }
        }
    }

    /// The property the canary must violate: the one that catches it.
    pub fn caught_by(self) -> &'static str {
        match self {
            Bug::BlindRetry
            | Bug::ForgetfulRelease
            | Bug::AbandonedWait
            | Bug::LostWakeup
            | Bug::DeafWaiter
            | Bug::ReaderWaitsForLaterWriter
            | Bug::DroppedCreate
            | Bug::RestartForgetsNode => "liveness_after_heal",
            Bug::WatchParent | Bug::ReaderWatchesFirstWriter => "no_herd",
            Bug::DeafHolder
            | Bug::FullNameOrder
            | Bug::OrderBlindToWrap
            | Bug::GuidOutlivesSession => "mutual_exclusion",
            Bug::DeadlineOnWake => "timed_acquire_in_time",
            Bug::UnorderedToken => "fencing_token_order",
        }
    }

    /// The scenario that shows the bug, the canary's own (`zklock explore --recipe NAME`
    /// runs it): the default, with one reader among the writers for a bug of the
    /// read/write lock, and the other knobs a bug needs to show within small bounds.
    pub fn scenario(self) -> Scenario {
        match self {
            Bug::ReaderWaitsForLaterWriter | Bug::ReaderWatchesFirstWriter => Scenario {
                readers: 1,
                ..Scenario::default()
            },
            // Every acquire dropped, so that the smallest bounds have one.
            Bug::DroppedCreate => Scenario {
                drop_every: 1,
                ..Scenario::default()
            },
            // Each client's first attempt timed, so that the smallest bounds have one.
            Bug::DeadlineOnWake => Scenario {
                mix_offset: 2,
                ..Scenario::default()
            },
            // The lock directory's counter at its last positive value: the second node
            // created is the first past the wrap.
            Bug::OrderBlindToWrap => Scenario {
                sequence_start: i32::MAX,
                ..Scenario::default()
            },
            // Client-side expiries and lost create replies often enough that one follows
            // the other within a session timeout, no drops (a dropped attempt's node
            // bears the same guid), and holds longer than a session timeout, so that the
            // server's expiry of the old session comes during the hold by its node
            // (waiters behind such holds get the time they need to be judged live).
            Bug::GuidOutlivesSession => {
                let mut sc = Scenario {
                    hold_ms: 7000,
                    drop_every: 0,
                    liveness_bound_ms: 60_000,
                    ..Scenario::default()
                };
                sc.faults.local_expiry = Rate::new(1, 150);
                sc.faults.lost_create_response = Rate::new(1, 40);
                sc
            }
            _ => Scenario::default(),
        }
    }
}

/// The canary of one bug, as a [`Recipe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Canary(pub Bug);

/// A canary's lock object, on a simulated client or a real one.
#[derive(Debug)]
pub struct CanaryLock<C> {
    c: C,
    /// The client's number in the run: the same for every session of its process.
    index: u32,
    /// Exclusive, or a reader's or a writer's node of a read/write lock.
    kind: NodeKind,
    dir: String,
    bug: Bug,
    attempts: AtomicU64,
    policy: RetryPolicy,
}

impl Canary {
    /// The lock object of client number `index` (the same for every session of its
    /// process), in role `role`, on directory `path`, on any client: the simulation's or
    /// a real session's.
    pub fn lock_on<C>(&self, client: C, index: u32, role: LockRole, path: &str) -> CanaryLock<C> {
        CanaryLock {
            c: client,
            index,
            kind: match role {
                LockRole::Exclusive => NodeKind::Exclusive,
                LockRole::Read => NodeKind::Read,
                LockRole::Write => NodeKind::Write,
            },
            dir: path.to_owned(),
            bug: self.0,
            attempts: AtomicU64::new(0),
            policy: RetryPolicy::default(),
        }
    }
}

impl Recipe for Canary {
    type Lock = CanaryLock<SimClient>;
    fn name(&self) -> String {
        self.0.name().into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        let index = client.index() as u32;
        self.lock_on(client, index, role, path)
    }
    /// [`Bug::scenario`].
    fn scenario(&self) -> Scenario {
        self.0.scenario()
    }
    /// Symmetric as the shipped lock is, but for the bugs that make a client's identity
    /// matter: ordering by full name (guid included) and a guid made of the client's
    /// index; and the unordered-token canary, whose bug shows in the names' order.
    fn symmetric(&self) -> bool {
        !matches!(
            self.0,
            Bug::FullNameOrder | Bug::GuidOutlivesSession | Bug::UnorderedToken
        )
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> CanaryLock<C> {
    /// The guid of this lock's next attempt: the session, then the attempt number.
    fn next_guid(&self) -> String {
        if self.bug == Bug::GuidOutlivesSession {
            // BUG: one guid for every session of the process.
            return format!("p{}", self.index);
        }
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{:x}-{n:x}", self.c.session_id().0)
    }

    async fn enqueue(&self, guid: &str) -> Result<OwnNode, LockError> {
        if self.bug == Bug::GuidOutlivesSession {
            return self.enqueue_blind_to_owner(guid).await;
        }
        if self.bug != Bug::BlindRetry {
            let spec = ContenderSpec {
                dir: &self.dir,
                guid,
                kind: self.kind,
                data: b"",
                create_parents: true,
                retry: &self.policy,
            };
            return create_contender(&self.c, &spec).await;
        }
        ensure_path(&self.c, &self.policy, &self.dir).await?;
        let prefix = join(&self.dir, &format!("_c_{guid}-lock-"));
        loop {
            // BUG: a ConnectionLoss may hide a create that was applied; retrying without
            // looking for it leaves that node behind.
            match self
                .c
                .create(&prefix, b"", CreateMode::EphemeralSequential)
                .await
            {
                Ok((path, stat)) => return OwnNode::new(path, stat.czxid),
                Err(e) if e.is_connection_loss() => self.c.sleep(self.policy.backoff(1)).await,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The shipped recovery of a lost create reply, but for the owner: the lowest node
    /// bearing our guid is adopted whichever session owns it, and the others deleted.
    async fn enqueue_blind_to_owner(&self, guid: &str) -> Result<OwnNode, LockError> {
        ensure_path(&self.c, &self.policy, &self.dir).await?;
        let prefix = join(&self.dir, &node_prefix(guid, self.kind));
        for attempt in 1.. {
            match self
                .c
                .create(&prefix, b"", CreateMode::EphemeralSequential)
                .await
            {
                Ok((path, stat)) => return OwnNode::new(path, stat.czxid),
                Err(e) if e.is_connection_loss() && attempt < self.policy.attempts_max => {
                    self.c.sleep(self.policy.backoff(attempt)).await;
                }
                Err(e) => return Err(e.into()),
            }
            let children = retry(&self.c, &self.policy, || self.c.get_children(&self.dir)).await?;
            let mut ours: Vec<LockNode> = children
                .iter()
                .filter_map(LockNode::parse)
                .filter(|n| n.kind == self.kind && n.guid() == Some(guid))
                .collect();
            sort_by_sequence(&mut ours);
            let mut ours = ours.into_iter().map(|n| join(&self.dir, &n.name));
            let Some(first) = ours.next() else { continue };
            for extra in ours {
                delete_until_gone(&self.c, &self.policy, &extra).await?;
            }
            // BUG: no look at the node's ephemeral owner.
            if let Some(stat) = retry(&self.c, &self.policy, || self.c.exists(&first)).await? {
                return OwnNode::new(first, stat.czxid);
            }
        }
        unreachable!("the attempts end by returning")
    }

    /// The recipe's loop with the bug; `Ok(None)` when `deadline_us` passed (or at once
    /// when `deadline_us` is 0 and the lock is held), with our node deleted. Dropped
    /// before it returns, it leaves its node to the client's background cleanup, as the
    /// shipped recipe does (but for `DroppedCreate`).
    async fn contend(&self, deadline_us: Option<u64>) -> Result<Option<LockGuard<C>>, LockError> {
        let guid = self.next_guid();
        let mut dropped = OnDrop {
            c: &self.c,
            dir: &self.dir,
            fragment: node_prefix(&guid, self.kind),
            // BUG (DroppedCreate): a create in flight is not counted as a node.
            create_sent: self.bug != Bug::DroppedCreate,
            own: None,
            armed: true,
        };
        let r = self.contend_with(deadline_us, &guid, &mut dropped).await;
        // Returned: whatever it left is the bug's, or was cleaned up already.
        dropped.armed = false;
        r
    }

    async fn contend_with(
        &self,
        deadline_us: Option<u64>,
        guid: &str,
        dropped: &mut OnDrop<'_, C>,
    ) -> Result<Option<LockGuard<C>>, LockError> {
        let mut own = self.enqueue(guid).await?;
        dropped.own = Some(own.path.clone());
        let mut events = self.c.session_events();
        loop {
            let mut list = list_contenders(&self.c, &self.policy, &self.dir).await?;
            if self.bug == Bug::FullNameOrder {
                list.sort_by(|a, b| a.name.cmp(&b.name)); // BUG: by name, not sequence
            }
            if self.bug == Bug::OrderBlindToWrap {
                list.sort_by_key(|c| c.sequence); // BUG: plain numbers, blind to the wrap
            }
            let ours = position(&list, &own.name).ok_or(LockError::Zk(ZkError::NoNode))?;
            let ahead = if self.bug == Bug::ReaderWaitsForLaterWriter && self.kind == NodeKind::Read
            {
                // BUG: the last writer of the whole listing, though it may come after us.
                list.iter()
                    .rev()
                    .find(|c| c.kind.is_writer() && c.name != own.name)
            } else if self.bug == Bug::ReaderWatchesFirstWriter && self.kind == NodeKind::Read {
                // BUG: the first writer ahead, though a nearer one may stand behind it.
                list[..ours].iter().find(|c| c.kind.is_writer())
            } else {
                blocker(&list, ours)
            };
            let Some(ahead) = ahead else {
                let lost = LostPolicy::default();
                let c = self.c.clone();
                let g = LockGuard::adopt(c, own, self.kind, lost, self.policy.clone()).await?;
                return Ok(Some(g));
            };
            let now = self.c.now().as_micros() as u64;
            if deadline_us.is_some_and(|d| now >= d) {
                if self.bug != Bug::AbandonedWait {
                    delete_until_gone(&self.c, &self.policy, &own.path).await?;
                }
                // BUG (AbandonedWait): the node is left standing.
                return Ok(None);
            }
            let watch = if self.bug == Bug::WatchParent {
                // BUG: every change of the directory wakes every waiter.
                Some(self.c.get_children_watch(&self.dir).await?.1)
            } else {
                watch_node(&self.c, &self.policy, &join(&self.dir, &ahead.name)).await?
            };
            // Kept alive through the wait: dropped, it would end the watch it sends.
            let mut _never_fired = None;
            let w = match watch {
                Some(w) => w,
                None if self.bug == Bug::LostWakeup => {
                    // BUG: the blocker is gone and no watch was set, yet we wait: only a
                    // deadline or the session's end can end this wait.
                    let (sender, w) = Watch::channel();
                    _never_fired = Some(sender);
                    w
                }
                None => continue,
            };
            let waited = self.wait(w, &mut events);
            let r = match deadline_us {
                // BUG (DeadlineOnWake): the deadline is looked at only once woken.
                Some(_) if self.bug == Bug::DeadlineOnWake => waited.await,
                None => waited.await,
                Some(d) => {
                    let left = Duration::from_micros(d.saturating_sub(now));
                    match select(pin!(waited), pin!(self.c.sleep(left))).await {
                        Either::Left((r, _)) => r,
                        Either::Right(_) => Ok(()),
                    }
                }
            };
            match r {
                Err(LockError::Zk(ZkError::ConnectionLoss))
                    if self.bug == Bug::RestartForgetsNode =>
                {
                    // BUG (RestartForgetsNode): one delete while the connection is down,
                    // and the node is forgotten whatever came of it; the attempt starts
                    // over as a new one, with a new guid and a new node.
                    let _ = self.c.delete(&own.path, None).await;
                    let guid = self.next_guid();
                    dropped.fragment = node_prefix(&guid, self.kind);
                    dropped.own = None;
                    own = self.enqueue(&guid).await?;
                    dropped.own = Some(own.path.clone());
                }
                r => r?,
            }
        }
    }

    /// Waits for the blocker's watch to fire, or for the session to end.
    async fn wait(&self, mut w: Watch, events: &mut SessionEvents) -> Result<(), LockError> {
        if self.bug == Bug::RestartForgetsNode {
            // The watch would survive the disconnect; this waiter gives up on it.
            return match select(&mut w, pin!(disconnected(events))).await {
                Either::Left((fired, _)) => fired.map(drop).map_err(LockError::from),
                Either::Right((ended, _)) => Err(ended),
            };
        }
        if self.bug != Bug::DeafWaiter {
            return await_watch(w, events).await.map(drop);
        }
        match w.await {
            Ok(_) => Ok(()),
            // BUG: the session's end reaches the watcher as an event of no node, and is
            // dropped: the wait goes on, though the server has deleted our node.
            Err(_) => std::future::pending().await,
        }
    }
}

/// The first state change that ends a wait for a waiter that gives up on a disconnect:
/// ConnectionLoss for Disconnected, else the session's end.
async fn disconnected(events: &mut SessionEvents) -> LockError {
    loop {
        match events.next().await {
            Some(SessionState::Disconnected) => return LockError::Zk(ZkError::ConnectionLoss),
            Some(SessionState::Expired) => return LockError::SessionExpired,
            Some(SessionState::Closed) | None => return LockError::SessionClosed,
            Some(SessionState::Connected) => {}
        }
    }
}

/// What an acquire dropped before it returned hands to the client's background cleanup:
/// its node once known, or else, once its create was sent, the name fragment that finds it.
struct OnDrop<'a, C: Coordination> {
    c: &'a C,
    dir: &'a str,
    fragment: String,
    create_sent: bool,
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
        let own = self.own.take();
        if let Some(what) = abandoned_cleanup(own, self.create_sent, self.dir, || fragment) {
            self.c.cleanup_detached(what);
        }
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> GuardedLock for CanaryLock<C> {
    type Client = C;

    async fn contend(&self, wait: Wait) -> Result<Option<LockGuard<C>>, LockError> {
        match wait {
            Wait::Forever => self.contend(None).await,
            // A deadline long past: one look, no clock read.
            Wait::Now => self.contend(Some(0)).await,
            Wait::For(timeout) => {
                let d = (self.c.now() + timeout).as_micros() as u64;
                self.contend(Some(d)).await
            }
        }
    }

    fn hold_token(&self, g: &LockGuard<C>) -> i64 {
        if self.bug == Bug::UnorderedToken {
            // BUG: unique, as node names are, but in no order.
            return fnv1a(g.path().as_bytes()) as i64;
        }
        g.fencing_token().0
    }

    async fn hold_lost<'a>(&'a self, g: &'a LockGuard<C>) -> String {
        if self.bug == Bug::DeafHolder {
            // BUG: never stop believing.
            return std::future::pending().await;
        }
        if self.bug == Bug::GuidOutlivesSession {
            // As Curator's InterProcessMutex: only the connection's state ends a hold.
            let mut events = self.c.session_events();
            if self.c.session_state() != SessionState::Connected {
                return format!("{:?}", self.c.session_state());
            }
            return format!("{:?}", disconnected(&mut events).await);
        }
        format!("{:?}", g.lost().await)
    }

    async fn hold_release(&self, g: LockGuard<C>) -> Result<(), String> {
        if self.bug == Bug::ForgetfulRelease {
            // BUG: one delete, not retried, and the node is forgotten either way.
            let node = g.into_node();
            return match self.c.delete(&node.path, None).await {
                Ok(()) | Err(ZkError::NoNode) => Ok(()),
                Err(e) => Err(e.to_string()),
            };
        }
        g.release().await.map_err(|e| e.to_string())
    }
}

/// FNV-1a, 64 bits: a fixed hash, the same on every run and machine.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The semaphore canary's name, as registered and as its trace file is named.
pub const LEASE_OUTSIDE_LOCK: &str = "canary-lease-outside-lock";

/// The property the semaphore canary must violate.
pub const LEASE_OUTSIDE_LOCK_CAUGHT_BY: &str = "semaphore_leases";

/// zklock's semaphore of `leases` leases (2 by default), but each client takes its lease
/// outside the semaphore's inner lock: it counts the leases, and creates its own if fewer
/// than the stored count stand, as Kazoo's non-blocking `Semaphore.acquire` did
/// (python-zk/kazoo#380). Two clients that count N - 1 at once both take one: N + 1
/// holders. Must violate `semaphore_leases`.
#[derive(Clone, Debug)]
pub struct LeaseOutsideLock {
    pub leases: u32,
}

impl Default for LeaseOutsideLock {
    fn default() -> Self {
        LeaseOutsideLock { leases: 2 }
    }
}

impl Recipe for LeaseOutsideLock {
    type Lock = LeaseCanaryLock<SimClient>;
    fn name(&self) -> String {
        LEASE_OUTSIDE_LOCK.into()
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> LeaseCanaryLock<SimClient> {
        LeaseCanaryLock::new(client, path, self.leases)
    }
    fn leases(&self) -> Option<u32> {
        Some(self.leases)
    }
}

/// One client's semaphore of [`LeaseOutsideLock`].
#[derive(Debug)]
pub struct LeaseCanaryLock<C> {
    sem: zklock_recipe::semaphore::Semaphore<C>,
    policy: RetryPolicy,
    attempts: AtomicU64,
}

impl<C: Coordination + Clone + Send + Sync + 'static> LeaseCanaryLock<C> {
    /// The canary's semaphore of `leases` on `path`.
    pub fn new(client: C, path: &str, leases: u32) -> LeaseCanaryLock<C> {
        LeaseCanaryLock {
            sem: zklock_recipe::semaphore::Semaphore::new(client, path, leases)
                .expect("a valid path and count"),
            policy: RetryPolicy::default(),
            attempts: AtomicU64::new(0),
        }
    }

    async fn contend(&self, deadline_us: Option<u64>) -> Result<Option<LockGuard<C>>, LockError> {
        let max = self.sem.stored_leases().await?;
        let c = self.sem.client();
        let dir = self.sem.path();
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        let guid = format!("{:x}-k{n:x}", c.session_id().0);
        let kind = NodeKind::Exclusive;
        let mut dropped = OnDrop {
            c,
            dir,
            fragment: node_prefix(&guid, kind),
            create_sent: true,
            own: None,
            armed: true,
        };
        let mut events = c.session_events();
        let r = loop {
            let (children, watch) = retry(c, &self.policy, || c.get_children_watch(dir)).await?;
            // BUG: counted outside the inner lock; another client may count the same.
            if children.iter().count() < max as usize {
                let spec = ContenderSpec {
                    dir,
                    guid: &guid,
                    kind,
                    data: b"",
                    create_parents: false,
                    retry: &self.policy,
                };
                let own = create_contender(c, &spec).await?;
                dropped.own = Some(own.path.clone());
                let lost = LostPolicy::default();
                break LockGuard::adopt(c.clone(), own, kind, lost, self.policy.clone())
                    .await
                    .map(Some);
            }
            let now = c.now().as_micros() as u64;
            if deadline_us.is_some_and(|d| now >= d) {
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
        dropped.armed = r.is_err();
        r
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> GuardedLock for LeaseCanaryLock<C> {
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
