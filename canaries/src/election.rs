//! The election's canaries: zklock's leader latch or selector with one known bug each,
//! built from the lock's public building blocks, one per bug class the libraries'
//! elections shipped.

use futures_channel::oneshot;
use futures_util::future::{BoxFuture, Either, select};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use zklock_recipe::election::{
    ElectionError, ElectionUnderTest, LatchUnderTest, SelectorListener, SelectorUnderTest, Term,
};
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::queue::{blocker, position};
use zklock_recipe::lock::retry::{delete_until_gone, retry};
use zklock_recipe::lock::{
    ContenderSpec, Lock, LockError, LockGuard, LockNode, LockOptions, LostPolicy, NodeKind,
    OwnNode, RetryPolicy, await_watch, create_contender, list_contenders, watch_node,
};
use zklock_recipe::path::join;
use zklock_recipe::{Coordination, ZkError};
use zklock_sim::scenario::election::MakeContender;
use zklock_sim::{Election, ElectionRecipe, Rate, Recipe, Scenario, SimClient};

/// The election's bug classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElectionBug {
    /// A latch that, joining again on a new session, re-asserts leadership on the node
    /// bearing its process's id without checking the node's owner, as a latch that
    /// keeps its id across reconnects does: once the client library declared the session
    /// expired on its own (the server still holds it), the next session leads on the old
    /// session's node, which goes when the server expires that session.
    ReassertWithoutOwner,
    /// A latch that expects its election path to exist (made beforehand, by an operator
    /// or at deployment) and waits for it to appear when it is gone: once the path was
    /// reaped as an empty container, or before anyone made it, nobody is ever elected.
    PathGoneNoRecovery,
    /// A selector that takes a cancel in the middle of its task for the task's end, and
    /// queues again: it runs its task again after it was cancelled.
    RequeueAfterCancel,
    /// A latch whose epoch is its node's sequence number: when the election path is
    /// reaped and made again, the counter starts over and the next leader's epoch is
    /// lower than an earlier leader's.
    SequenceEpoch,
    /// A latch whose every contender watches the leader's node, not its predecessor:
    /// each change of leader wakes them all (a herd).
    WatchLeader,
}

impl ElectionBug {
    /// Every election canary, in the order the suite runs them.
    pub const ALL: [ElectionBug; 5] = [
        ElectionBug::ReassertWithoutOwner,
        ElectionBug::PathGoneNoRecovery,
        ElectionBug::RequeueAfterCancel,
        ElectionBug::SequenceEpoch,
        ElectionBug::WatchLeader,
    ];

    /// The canary's name, as registered.
    pub fn name(self) -> &'static str {
        match self {
            ElectionBug::ReassertWithoutOwner => "canary-election-reassert-without-owner",
            ElectionBug::PathGoneNoRecovery => "canary-election-path-gone",
            ElectionBug::RequeueAfterCancel => "canary-election-requeue-after-cancel",
            ElectionBug::SequenceEpoch => "canary-election-sequence-epoch",
            ElectionBug::WatchLeader => "canary-election-watch-leader",
        }
    }

    /// The property it must violate.
    pub fn caught_by(self) -> &'static str {
        match self {
            ElectionBug::ReassertWithoutOwner => "election_leader_owns_node",
            ElectionBug::PathGoneNoRecovery => "liveness_after_heal",
            ElectionBug::RequeueAfterCancel => "election_no_leadership_after_close",
            ElectionBug::SequenceEpoch => "fencing_token_order",
            ElectionBug::WatchLeader => "no_herd",
        }
    }

    /// What it does wrong.
    pub fn description(self) -> &'static str {
        match self {
            ElectionBug::ReassertWithoutOwner => {
                "a leader latch that re-asserts leadership on its id's node without checking \
                 the node's owner"
            }
            ElectionBug::PathGoneNoRecovery => {
                "a leader latch that waits for its election path to appear instead of making it"
            }
            ElectionBug::RequeueAfterCancel => {
                "a leader selector that queues again, and runs its task, after a cancel"
            }
            ElectionBug::SequenceEpoch => {
                "a leader latch whose epoch is its node's sequence number"
            }
            ElectionBug::WatchLeader => "a leader latch whose contenders all watch the leader",
        }
    }

    /// The scenario that shows the bug, the canary's own: the shipped election's
    /// ([`ElectionRecipe::default_scenario`]), with what the bug needs to show within
    /// small bounds.
    pub fn scenario(self) -> Scenario {
        let mut sc = ElectionRecipe::default_scenario();
        match self {
            // Client-side expiries often enough that a contender's next session joins
            // while the server still holds its last one's node.
            ElectionBug::ReassertWithoutOwner => sc.faults.local_expiry = Rate::new(1, 150),
            // Every term cancelled in the middle of its task, so that the smallest
            // bounds have one.
            ElectionBug::RequeueAfterCancel => sc.drop_every = 1,
            // Two contenders: the path is empty, and reaped, between their terms.
            ElectionBug::SequenceEpoch => sc.clients = 2,
            _ => {}
        }
        sc
    }

    /// Client `index`'s contender with this bug on `path`, on any client. Panics on an
    /// invalid path.
    pub fn contender<C: Coordination + Clone + Send + Sync + 'static>(
        self,
        client: C,
        index: u32,
        path: &str,
    ) -> ElectionUnderTest {
        if self == ElectionBug::RequeueAfterCancel {
            let lock = Lock::new(client, path, LockOptions::default())
                .expect("the election path is valid");
            return ElectionUnderTest::Selector(Box::new(RequeueingSelector {
                lock,
                cancel: Mutex::new(CancelState::default()),
            }));
        }
        zklock_recipe::path::validate_path(path, false).expect("the election path is valid");
        ElectionUnderTest::Latch(Box::new(CanaryLatch {
            c: client,
            index,
            dir: path.to_owned(),
            bug: self,
            policy: RetryPolicy::default(),
            attempts: AtomicU64::new(0),
            state: Mutex::new(LatchState {
                closed: false,
                signal: None,
                own: None,
                held: None,
            }),
        }))
    }
}

/// The canary of one election bug, as a [`Recipe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionCanary(pub ElectionBug);

impl Recipe for ElectionCanary {
    type Lock = <ElectionRecipe as Recipe>::Lock;
    fn name(&self) -> String {
        self.0.name().into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> Self::Lock {
        ElectionRecipe::default().lock(client, role, path)
    }
    /// [`ElectionBug::scenario`].
    fn scenario(&self) -> Scenario {
        self.0.scenario()
    }
    fn election(&self) -> Option<Election> {
        let bug = self.0;
        let contender: MakeContender =
            Arc::new(move |c, index, path| bug.contender(c, index, path));
        Some(Election { contender })
    }
    /// Symmetric as the shipped election is, but for the id made of the client's index.
    fn symmetric(&self) -> bool {
        self.0 != ElectionBug::ReassertWithoutOwner
    }
}

struct LatchState<C: Coordination> {
    closed: bool,
    /// Wakes the contender waiting for its predecessor, if one is.
    signal: Option<oneshot::Sender<()>>,
    /// The node of the attempt under way, deleted if it ends without leadership.
    own: Option<String>,
    held: Option<Arc<LockGuard<C>>>,
}

/// A leader latch with one bug: the shipped latch's steps, written out.
struct CanaryLatch<C: Coordination> {
    c: C,
    index: u32,
    dir: String,
    bug: ElectionBug,
    policy: RetryPolicy,
    attempts: AtomicU64,
    state: Mutex<LatchState<C>>,
}

impl<C: Coordination + Clone + Send + Sync + 'static> CanaryLatch<C> {
    fn state(&self) -> MutexGuard<'_, LatchState<C>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This attempt's guid: the session and the attempt, or, with the reassert bug, the
    /// process's id, the same for every session.
    fn guid(&self) -> String {
        if self.bug == ElectionBug::ReassertWithoutOwner {
            return format!("p{}", self.index);
        }
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{:x}-{n:x}", self.c.session_id().0)
    }

    async fn enqueue(&self, guid: &str) -> Result<OwnNode, LockError> {
        let spec = ContenderSpec {
            dir: &self.dir,
            guid,
            kind: NodeKind::Exclusive,
            data: b"",
            create_parents: self.bug != ElectionBug::PathGoneNoRecovery,
            retry: &self.policy,
        };
        if self.bug == ElectionBug::ReassertWithoutOwner {
            let listed = retry(&self.c, &self.policy, || self.c.get_children(&self.dir)).await;
            let mine = listed
                .unwrap_or_default()
                .iter()
                .filter_map(LockNode::parse)
                .find(|n| n.guid() == Some(guid));
            if let Some(node) = mine {
                let path = join(&self.dir, &node.name);
                // BUG: the node bears our id, so it is taken for ours, whichever session
                // owns it.
                if let Some(stat) = retry(&self.c, &self.policy, || self.c.exists(&path)).await? {
                    return OwnNode::new(path, stat.czxid);
                }
            }
        }
        loop {
            match create_contender(&self.c, &spec).await {
                Err(LockError::Zk(ZkError::NoNode) | LockError::LockPathDeleted { .. })
                    if self.bug == ElectionBug::PathGoneNoRecovery =>
                {
                    // BUG: waits for someone else to make the path.
                    let (stat, watch) =
                        retry(&self.c, &self.policy, || self.c.exists_watch(&self.dir)).await?;
                    if stat.is_none() {
                        let mut events = self.c.session_events();
                        await_watch(watch, &mut events).await?;
                    }
                }
                r => return r,
            }
        }
    }

    /// One attempt, until it leads; `closed` ends its waits.
    async fn contend(&self, closed: &mut oneshot::Receiver<()>) -> Result<LockGuard<C>, LockError> {
        let guid = self.guid();
        let own = self.enqueue(&guid).await?;
        self.state().own = Some(own.path.clone());
        let mut events = self.c.session_events();
        loop {
            let list = list_contenders(&self.c, &self.policy, &self.dir).await?;
            let ours = position(&list, &own.name).ok_or(LockError::Zk(ZkError::NoNode))?;
            let ahead = if self.bug == ElectionBug::WatchLeader && ours > 0 {
                // BUG: the leader, not the predecessor.
                list.first()
            } else {
                blocker(&list, ours)
            };
            let Some(ahead) = ahead else {
                let lost = LostPolicy::default();
                return LockGuard::adopt(
                    self.c.clone(),
                    own,
                    NodeKind::Exclusive,
                    lost,
                    self.policy.clone(),
                )
                .await;
            };
            let path = join(&self.dir, &ahead.name);
            let Some(w) = watch_node(&self.c, &self.policy, &path).await? else {
                continue;
            };
            match select(pin!(await_watch(w, &mut events)), &mut *closed).await {
                Either::Left((fired, _)) => {
                    fired?;
                }
                Either::Right(_) => return Err(LockError::Cancelled),
            }
        }
    }

    async fn delete_own(&self) {
        let own = self.state().own.take();
        if let Some(path) = own {
            let _ = delete_until_gone(&self.c, &self.policy, &path).await;
        }
    }

    async fn give_up(&self, guard: Arc<LockGuard<C>>) -> Result<(), String> {
        match Arc::try_unwrap(guard) {
            Ok(g) => g.release().await.map_err(|e| e.to_string()),
            Err(shared) => delete_until_gone(&self.c, &self.policy, shared.path())
                .await
                .map_err(|e| e.to_string()),
        }
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LatchUnderTest for CanaryLatch<C> {
    fn await_leadership(&self) -> BoxFuture<'_, Result<Term, String>> {
        Box::pin(async move {
            let (signal, mut closed) = oneshot::channel();
            let old = {
                let mut s = self.state();
                if s.closed {
                    return Err(ElectionError::Closed.to_string());
                }
                s.signal = Some(signal);
                s.held.take()
            };
            if let Some(old) = old {
                self.give_up(old).await?;
            }
            let guard = match self.contend(&mut closed).await {
                Ok(g) => g,
                Err(e) => {
                    self.delete_own().await;
                    return Err(ElectionError::from(e).to_string());
                }
            };
            let epoch = if self.bug == ElectionBug::SequenceEpoch {
                // BUG: starts over with the path.
                i64::from(guard.sequence())
            } else {
                guard.fencing_token().0
            };
            let term = Term {
                epoch,
                node: guard.path().to_owned(),
            };
            let refused = {
                let mut s = self.state();
                s.own = None;
                s.signal = None;
                if s.closed {
                    Some(guard)
                } else {
                    s.held = Some(Arc::new(guard));
                    None
                }
            };
            if let Some(guard) = refused {
                let _ = guard.release().await;
                return Err(ElectionError::Closed.to_string());
            }
            Ok(term)
        })
    }

    fn lost(&self) -> BoxFuture<'_, String> {
        Box::pin(async move {
            let held = self.state().held.clone();
            match held {
                Some(g) => format!("{:?}", g.lost().await),
                None => "not leading".into(),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let (signal, held) = {
                let mut s = self.state();
                s.closed = true;
                (s.signal.take(), s.held.take())
            };
            if let Some(signal) = signal {
                let _ = signal.send(());
            }
            match held {
                Some(g) => self.give_up(g).await,
                None => Ok(()),
            }
        })
    }
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    signals: Vec<oneshot::Sender<()>>,
}

/// The shipped selector's loop, but for the bug: a cancel that stops a task is taken for
/// handled, and the selector queues again.
struct RequeueingSelector<C> {
    lock: Lock<C>,
    cancel: Mutex<CancelState>,
}

impl<C: Coordination + Clone + Send + Sync + 'static> RequeueingSelector<C> {
    fn cancel_state(&self) -> MutexGuard<'_, CancelState> {
        self.cancel.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cancelled(&self) -> impl std::future::Future<Output = ()> + Send + use<C> {
        let (signal, fired) = oneshot::channel();
        let mut c = self.cancel_state();
        if c.cancelled {
            let _ = signal.send(());
        } else {
            c.signals.push(signal);
        }
        async move {
            let _ = fired.await;
        }
    }

    async fn run_loop(&self, listener: &dyn SelectorListener) -> Result<(), ElectionError> {
        loop {
            if self.cancel_state().cancelled {
                return Ok(());
            }
            listener.queued();
            let guard = match self.lock.acquire_until(self.cancelled()).await {
                Ok(g) => g,
                Err(e) => {
                    let e = ElectionError::from(e);
                    listener.not_elected(&e.to_string());
                    return match e {
                        ElectionError::Closed => Ok(()),
                        e => Err(e),
                    };
                }
            };
            let term = Term {
                epoch: guard.fencing_token().0,
                node: guard.path().to_owned(),
            };
            let stopped = {
                let task = pin!(listener.lead(&term));
                let lost = pin!(guard.lost());
                let cancelled = pin!(self.cancelled());
                match select(task, select(lost, cancelled)).await {
                    Either::Left(((), _)) => None,
                    Either::Right((Either::Left((reason, _)), _)) => Some(reason.to_string()),
                    Either::Right((Either::Right(((), _)), _)) => {
                        // BUG: the cancel stopped the task, and is taken for handled.
                        self.cancel_state().cancelled = false;
                        Some(ElectionError::Closed.to_string())
                    }
                }
            };
            if let Some(reason) = stopped {
                listener.interrupted(&reason);
            }
            listener.relinquishing();
            let released = guard.release().await.map_err(ElectionError::from);
            listener.relinquished(released.as_ref().map(|_| ()));
            released?;
        }
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> SelectorUnderTest for RequeueingSelector<C> {
    fn run<'a>(&'a self, listener: &'a dyn SelectorListener) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.run_loop(listener).await.map_err(|e| e.to_string()) })
    }
    fn cancel(&self) {
        let signals = {
            let mut c = self.cancel_state();
            c.cancelled = true;
            std::mem::take(&mut c.signals)
        };
        for s in signals {
            let _ = s.send(());
        }
    }
}
