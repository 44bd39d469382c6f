//! The `Coordination` trait: everything a lock recipe needs from ZooKeeper, and nothing
//! else. A recipe written against it runs unchanged on the simulated ZooKeeper, under the
//! exhaustive explorer, and on a real server.

use crate::types::{CreateMode, Op, OpResult, SessionId, SessionState, Stat, WatchedEvent};
use crate::{Children, ZkError};
use futures_channel::oneshot;
use futures_util::future::poll_fn;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A one-shot watch left by `exists_watch`, `get_data_watch` or `get_children_watch`.
///
/// It resolves once, with the event that fired it, or with an error when the session
/// ends first (`SessionExpired` or `SessionClosed`); after that no event can come.
/// A watch survives a Disconnected/Connected cycle, as ZooKeeper restores watches on
/// reconnect.
#[must_use = "a watch does nothing unless awaited"]
pub struct Watch {
    source: Source,
}

/// Where a watch's outcome comes from.
enum Source {
    /// Sent by the runner ([`Watch::channel`]).
    Sent(oneshot::Receiver<Result<WatchedEvent, ZkError>>),
    /// Polled from the runner's own future ([`Watch::polled`]), so that the event wakes
    /// the recipe directly, with no task in between to forward it.
    Polled(Box<dyn WatchSource>),
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match self.source {
            Source::Sent(_) => "sent",
            Source::Polled(_) => "polled",
        };
        f.debug_struct("Watch").field("source", &source).finish()
    }
}

/// A runner's watch outcome, polled by the [`Watch`] made of it ([`Watch::polled`]).
/// Dropping it (the recipe dropped its `Watch`) should drop the server-side interest.
///
/// ```
/// use std::task::{Context, Poll};
/// use zklock_recipe::{Watch, WatchSource, WatchedEvent, ZkError};
///
/// /// A watch whose session has ended: it fires with the session's end.
/// struct Ended;
///
/// impl WatchSource for Ended {
///     fn poll_outcome(&mut self, _cx: &mut Context<'_>) -> Poll<Result<WatchedEvent, ZkError>> {
///         Poll::Ready(Err(ZkError::SessionExpired))
///     }
/// }
///
/// let watch = Watch::polled(Box::new(Ended));
/// let fired = futures_util::FutureExt::now_or_never(watch);
/// assert_eq!(fired, Some(Err(ZkError::SessionExpired)));
/// ```
pub trait WatchSource: Send {
    /// Polls for the outcome, as [`Future::poll`]: `Ready` once, with the event or the
    /// error ending the session; it is not polled again after that.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<WatchedEvent, ZkError>>;
}

/// The runner's end of a [`Watch`].
#[derive(Debug)]
pub struct WatchSender {
    tx: oneshot::Sender<Result<WatchedEvent, ZkError>>,
}

impl Watch {
    /// A new watch and the sender that fires it. For runners, not recipes.
    pub fn channel() -> (WatchSender, Watch) {
        let (tx, rx) = oneshot::channel();
        (
            WatchSender { tx },
            Watch {
                source: Source::Sent(rx),
            },
        )
    }

    /// A watch that polls `source` for its outcome. For runners, not recipes.
    pub fn polled(source: Box<dyn WatchSource>) -> Watch {
        Watch {
            source: Source::Polled(source),
        }
    }

    /// The outcome if the watch has already resolved, without waiting.
    pub fn try_take(&mut self) -> Option<Result<WatchedEvent, ZkError>> {
        match &mut self.source {
            Source::Sent(rx) => match rx.try_recv() {
                Ok(Some(r)) => Some(r),
                Ok(None) => None,
                Err(_) => Some(Err(ZkError::SessionClosed)),
            },
            Source::Polled(source) => {
                match source.poll_outcome(&mut Context::from_waker(Waker::noop())) {
                    Poll::Ready(r) => Some(r),
                    Poll::Pending => None,
                }
            }
        }
    }
}

impl WatchSender {
    /// Fires the watch with its event.
    pub fn fire(self, event: WatchedEvent) {
        // The receiver may be gone: the recipe stopped caring. That is fine.
        let _ = self.tx.send(Ok(event));
    }
    /// Ends the watch with an error (the session expired or closed).
    pub fn fail(self, error: ZkError) {
        let _ = self.tx.send(Err(error));
    }
    /// True when the recipe dropped its `Watch`.
    pub fn is_abandoned(&self) -> bool {
        self.tx.is_canceled()
    }
}

impl Future for Watch {
    type Output = Result<WatchedEvent, ZkError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.source {
            Source::Sent(rx) => match Pin::new(rx).poll(cx) {
                Poll::Ready(Ok(r)) => Poll::Ready(r),
                // The runner dropped the sender: the session is gone.
                Poll::Ready(Err(_)) => Poll::Ready(Err(ZkError::SessionClosed)),
                Poll::Pending => Poll::Pending,
            },
            Source::Polled(source) => source.poll_outcome(cx),
        }
    }
}

/// A subscription to a session's state changes, from the moment of subscribing.
///
/// It reads the session's log of state changes from where it subscribed, so
/// subscribing costs no channel and every subscriber sees every later change, in order.
#[derive(Debug)]
pub struct SessionEvents {
    log: Arc<Mutex<StateLog>>,
    /// This subscription's number, for its entry among the log's waiters.
    id: u64,
    /// Index in the log of the next change to read.
    next: usize,
}

/// A session's state changes so far, and who waits for the next.
#[derive(Debug, Default)]
struct StateLog {
    states: Vec<SessionState>,
    /// No change will come any more (after the terminal state).
    closed: bool,
    /// Subscriptions made so far: numbers them.
    subscribers: u64,
    /// Subscriptions waiting for the next change, each once; a subscription's entry goes
    /// with it, so dropped ones never pile up between changes.
    waiters: Vec<(u64, Waker)>,
}

impl SessionEvents {
    /// The next state change; `None` once the session is gone and every change was read.
    pub async fn next(&mut self) -> Option<SessionState> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// The next state change if one is already queued.
    pub fn try_next(&mut self) -> Option<SessionState> {
        let log = lock_log(&self.log);
        let state = log.states.get(self.next).copied()?;
        self.next += 1;
        Some(state)
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<SessionState>> {
        let mut log = lock_log(&self.log);
        if let Some(&state) = log.states.get(self.next) {
            self.next += 1;
            return Poll::Ready(Some(state));
        }
        if log.closed {
            return Poll::Ready(None);
        }
        match log.waiters.iter_mut().find(|(id, _)| *id == self.id) {
            Some((_, w)) => w.clone_from(cx.waker()),
            None => log.waiters.push((self.id, cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl Drop for SessionEvents {
    fn drop(&mut self) {
        let mut log = lock_log(&self.log);
        if let Some(i) = log.waiters.iter().position(|(id, _)| *id == self.id) {
            log.waiters.swap_remove(i);
        }
    }
}

fn lock_log(log: &Mutex<StateLog>) -> MutexGuard<'_, StateLog> {
    // Every update under this lock is complete when it is released.
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Fans session state changes out to every subscriber. For runners, not recipes.
#[derive(Debug, Default)]
pub struct SessionBroadcast {
    log: Arc<Mutex<StateLog>>,
}

impl SessionBroadcast {
    pub fn subscribe(&mut self) -> SessionEvents {
        let mut log = lock_log(&self.log);
        log.subscribers += 1;
        SessionEvents {
            log: Arc::clone(&self.log),
            id: log.subscribers,
            next: log.states.len(),
        }
    }
    pub fn send(&mut self, state: SessionState) {
        let mut log = lock_log(&self.log);
        log.states.push(state);
        let waiters = std::mem::take(&mut log.waiters);
        drop(log);
        waiters.into_iter().for_each(|(_, w)| w.wake());
    }
    /// Ends every subscription (after the terminal state was sent).
    pub fn close(&mut self) {
        let mut log = lock_log(&self.log);
        log.closed = true;
        let waiters = std::mem::take(&mut log.waiters);
        drop(log);
        waiters.into_iter().for_each(|(_, w)| w.wake());
    }
}

/// Cleanup a recipe hands to its runner because it cannot await it: the node of an
/// acquire future that was dropped, or of a guard dropped without release. See
/// [`Coordination::cleanup_detached`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DetachedCleanup {
    /// Delete this node (any version). Done once the delete succeeds or answers `NoNode`.
    Node(String),
    /// A create was sent whose reply never came, so the node's name is unknown: list
    /// `dir` and delete every child whose name contains `fragment` and whose
    /// `ephemeral_owner` is this client's session. Done once each such child is gone, or
    /// if `dir` does not exist.
    OwnedMatching { dir: String, fragment: String },
}

/// Everything a lock recipe needs from ZooKeeper.
///
/// Every request is asynchronous and answers with ZooKeeper's outcome, or with
/// [`ZkError::ConnectionLoss`] when the client cannot know it: the request may or may not
/// have been applied. Requests of one client are applied in the order they were issued.
/// Time comes from [`now`](Coordination::now) and [`sleep`](Coordination::sleep), so a
/// recipe never touches a runtime or clock of its own.
///
/// Paths are those [`validate_path`](crate::path::validate_path) accepts (others fail
/// with [`ZkError::BadArguments`]). A request larger than the server's jute.maxbuffer
/// (1,048,575 bytes by default, path and data included) fails with ConnectionLoss,
/// unapplied, and the client reconnects.
///
/// Code written against it runs on the simulation's clients (`zklock_sim::SimClient`)
/// and on a real session's (`zklock_real`):
///
/// ```
/// use zklock_recipe::{Coordination, CreateMode, ZkError};
///
/// /// Creates `path` unless it exists: a recipe's first step.
/// async fn ensure<C: Coordination>(client: &C, path: &str) -> Result<(), ZkError> {
///     match client.create(path, b"", CreateMode::Persistent).await {
///         Ok(_) | Err(ZkError::NodeExists) => Ok(()),
///         Err(e) => Err(e),
///     }
/// }
///
/// let children = zklock_sim::run(zklock_sim::SimConfig::with_seed(1), |sim| async move {
///     let c = sim.client();
///     ensure(&c, "/locks").await.unwrap();
///     ensure(&c, "/locks").await.unwrap();
///     sim.server_children("/")
/// })
/// .unwrap();
/// assert!(children.contains(&"locks".to_string()));
/// ```
pub trait Coordination: Send + Sync {
    /// This client's session.
    fn session_id(&self) -> SessionId;
    /// The session's current state, as this client believes it.
    fn session_state(&self) -> SessionState;
    /// Subscribes to session state changes from now on.
    fn session_events(&self) -> SessionEvents;
    /// Time since the runner's epoch: virtual in the simulation, monotonic on a real server.
    fn now(&self) -> Duration;
    /// Waits for `duration` of the runner's time.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;

    /// Creates a znode and returns its path (with the sequential suffix, if any) and stat.
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<(String, Stat), ZkError>> + Send;
    /// Deletes a znode, if `version` is given only at that version.
    fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), ZkError>> + Send;
    /// The node's stat, or `None` if it does not exist.
    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send;
    /// As `exists`, and leaves a watch: NodeCreated if absent; NodeDeleted or
    /// NodeDataChanged if present.
    fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watch), ZkError>> + Send;
    /// The node's data and stat.
    fn get_data(&self, path: &str)
    -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send;
    /// As `get_data`, and leaves a data watch (NodeDeleted or NodeDataChanged). No watch is
    /// left when the node does not exist.
    fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch), ZkError>> + Send;
    /// The names of the node's children, in no particular order.
    fn get_children(&self, path: &str) -> impl Future<Output = Result<Children, ZkError>> + Send;
    /// As `get_children`, and leaves a child watch (NodeChildrenChanged or NodeDeleted).
    fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Children, Watch), ZkError>> + Send;
    /// Sets the node's data, if `version` is given only at that version.
    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send;
    /// Applies all operations atomically, or none. On failure the error is
    /// [`ZkError::MultiFailed`] naming the first failing operation (or a connection error).
    ///
    /// - An operation with an invalid path refuses the whole multi before it is sent:
    ///   `MultiFailed` names the first such operation, with
    ///   [`ZkError::BadArguments`], even when an earlier operation would have failed.
    /// - A create's [`OpResult::Create`] carries its actual path but a placeholder stat:
    ///   czxid, mzxid, pzxid, version and cversion -1, the rest 0 (ZooKeeper's clients
    ///   send it as a plain create, whose reply has no stat; every runner answers alike).
    ///   Read the node (`exists`, `get_data`) for its stat, its czxid for example.
    /// - A multi larger than the server reads (jute.maxbuffer) fails as any request
    ///   does: with ConnectionLoss, nothing applied.
    fn multi(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>, ZkError>> + Send;
    /// Closes the session: the server deletes its ephemerals at once.
    fn close(&self) -> impl Future<Output = Result<(), ZkError>> + Send;

    /// Performs `what` in the background, as the client library's own work (Curator runs
    /// such deletes on its background executor): the recipe has no runtime, and a `Drop`
    /// cannot await.
    ///
    /// - Its requests go after every request this client issued before the call, so a
    ///   create still in flight is seen by the listing of
    ///   [`OwnedMatching`](DetachedCleanup::OwnedMatching).
    /// - Its first request goes out before any request this client issues after the
    ///   call, provided that at the call the client is connected (its connection
    ///   reaching the server) and none of its earlier background work is still under
    ///   way. So the node of a [`Node`](DetachedCleanup::Node) is deleted before the
    ///   client's next create or listing is applied, and that listing does not show it.
    ///   Otherwise the request may go out after later requests of the client.
    /// - Each request is retried through [`ZkError::ConnectionLoss`] (after the
    ///   reconnect) until the node is gone.
    /// - It ends without error when the session ends (`SessionExpired` or
    ///   `SessionClosed`): the server deletes the session's ephemerals anyway. Any other
    ///   error ends that item too, since repeating the request would not change it.
    ///
    /// It never blocks, and may be called from `Drop`, inside or outside a task.
    fn cleanup_detached(&self, what: DetachedCleanup);

    /// Says that of the answer to the request the caller awaited last, it keeps only
    /// `kept` (any bytes that tell apart what it keeps): from here on it acts on that
    /// answer only through them. Call it right after that await, before any other.
    ///
    /// An exhaustive check then counts two states as one when they differ only in what
    /// the caller was given and dropped, such as the names in a listing of which a lock
    /// keeps only its place in the queue: far fewer states to search. It is a promise:
    /// a caller that keeps more than it says may have a bug the check does not see.
    /// Everywhere else, as on a real server, it does nothing (the default).
    ///
    /// ```
    /// use zklock_recipe::{Coordination, CreateMode, ZkError};
    ///
    /// /// Whether `name` is the first of `dir`'s children: all this keeps of the listing.
    /// async fn first<C: Coordination>(c: &C, dir: &str, name: &str) -> Result<bool, ZkError> {
    ///     let children = c.get_children(dir).await?;
    ///     let first = children.iter().min() == Some(name);
    ///     c.keep_only(&[u8::from(first)]);
    ///     Ok(first)
    /// }
    ///
    /// let first = zklock_sim::run(zklock_sim::SimConfig::with_seed(1), |sim| async move {
    ///     let c = sim.client();
    ///     for path in ["/d", "/d/a", "/d/b"] {
    ///         c.create(path, b"", CreateMode::Persistent).await.unwrap();
    ///     }
    ///     first(&c, "/d", "a").await.unwrap()
    /// })
    /// .unwrap();
    /// assert!(first);
    /// ```
    fn keep_only(&self, kept: &[u8]) {
        let _ = kept;
    }

    /// A number this client (its session) has not handed out before, from 0: each lock
    /// object takes one for its default guid, so that no two lock objects of one session
    /// share a guid. Two that did could each take the other's node for its own: an
    /// acquire whose create reply was lost looks for its node by guid, and would adopt a
    /// node another object of the session made and is deleting (a leader latch made
    /// anew for each term did, on a real server). Default: 0 on every call, for a client
    /// that cannot count: its lock objects' default guids then tell sessions apart but
    /// not objects, and each object needs a base of its own
    /// ([`LockOptions::guid`](crate::lock::LockOptions::guid)).
    fn next_object_number(&self) -> u64 {
        0
    }
}

impl<T: Coordination + ?Sized> Coordination for Arc<T> {
    fn keep_only(&self, kept: &[u8]) {
        (**self).keep_only(kept)
    }
    fn next_object_number(&self) -> u64 {
        (**self).next_object_number()
    }
    fn session_id(&self) -> SessionId {
        (**self).session_id()
    }
    fn session_state(&self) -> SessionState {
        (**self).session_state()
    }
    fn session_events(&self) -> SessionEvents {
        (**self).session_events()
    }
    fn now(&self) -> Duration {
        (**self).now()
    }
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        (**self).sleep(duration)
    }
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<(String, Stat), ZkError>> + Send {
        (**self).create(path, data, mode)
    }
    fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), ZkError>> + Send {
        (**self).delete(path, version)
    }
    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send {
        (**self).exists(path)
    }
    fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watch), ZkError>> + Send {
        (**self).exists_watch(path)
    }
    fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send {
        (**self).get_data(path)
    }
    fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch), ZkError>> + Send {
        (**self).get_data_watch(path)
    }
    fn get_children(&self, path: &str) -> impl Future<Output = Result<Children, ZkError>> + Send {
        (**self).get_children(path)
    }
    fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Children, Watch), ZkError>> + Send {
        (**self).get_children_watch(path)
    }
    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send {
        (**self).set_data(path, data, version)
    }
    fn multi(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>, ZkError>> + Send {
        (**self).multi(ops)
    }
    fn close(&self) -> impl Future<Output = Result<(), ZkError>> + Send {
        (**self).close()
    }
    fn cleanup_detached(&self, what: DetachedCleanup) {
        (**self).cleanup_detached(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_subscriptions_do_not_pile_up_between_state_changes() {
        let mut broadcast = SessionBroadcast::default();
        let mut kept = broadcast.subscribe();
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(kept.poll_next(&mut cx).is_pending());
        for _ in 0..1000 {
            let mut gone = broadcast.subscribe();
            assert!(gone.poll_next(&mut cx).is_pending());
        }
        // Only the subscription still alive waits.
        assert_eq!(lock_log(&broadcast.log).waiters.len(), 1);
        broadcast.send(SessionState::Disconnected);
        assert_eq!(kept.try_next(), Some(SessionState::Disconnected));
        // A subscription sees changes from when it subscribed, and ends with the log.
        let mut late = broadcast.subscribe();
        broadcast.send(SessionState::Expired);
        broadcast.close();
        assert_eq!(late.try_next(), Some(SessionState::Expired));
        assert_eq!(late.poll_next(&mut cx), Poll::Ready(None));
        assert_eq!(kept.try_next(), Some(SessionState::Expired));
    }
}
