//! A held lock: its fencing token, the lost signal and revocation.

use super::LostPolicy;
use super::create::OwnNode;
use super::error::{LockError, LostReason};
use super::naming::NodeKind;
use super::observe::{Observer, REVOKE_MESSAGE};
use super::retry::{RetryPolicy, delete_until_gone, retry, session_over};
use super::state::SharedState;
use crate::{Coordination, DetachedCleanup, SessionState};
use futures_util::future::poll_fn;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A fencing token: the czxid of the holder's lock node.
///
/// czxid, not the sequence number, because czxid is ZooKeeper's global write order: it
/// strictly increases across successive holders even when the lock directory is deleted
/// and recreated (its sequence counter restarts at 0) and across different directories.
/// Successive holders' nodes were created in grant order (a node is granted only once
/// every lower node is gone), so their czxids increase. A resource that rejects tokens
/// lower than the highest it has seen therefore rejects a stale holder (for example one
/// resuming from a process pause).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub i64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[derive(Debug)]
struct Watching {
    observer: Observer,
    /// Tasks awaiting this guard. A session-event receiver keeps only the last waker, so
    /// whoever sees a change wakes the others.
    wakers: Wakers,
    rereading: bool,
}

/// The tasks awaiting a guard, in the order they first waited. Usually one task awaits,
/// so the first is kept inline: no allocation per guard.
#[derive(Debug, Default)]
struct Wakers {
    first: Option<Waker>,
    more: Vec<Waker>,
}

impl Wakers {
    fn register(&mut self, waker: &Waker) {
        match &self.first {
            None => self.first = Some(waker.clone()),
            Some(w) if w.will_wake(waker) => {}
            Some(_) => {
                if !self.more.iter().any(|k| k.will_wake(waker)) {
                    self.more.push(waker.clone());
                }
            }
        }
    }

    fn wake_all(&mut self) {
        if let Some(w) = self.first.take() {
            w.wake();
        }
        self.more.drain(..).for_each(Waker::wake);
    }
}

enum Step {
    Lost(LostReason),
    Revoked,
    Reread,
}

/// Proof that the lock was granted. Release it with [`release`](LockGuard::release),
/// which returns once our node is gone, or with
/// [`release_in_background`](LockGuard::release_in_background), which does not wait.
///
/// Dropping a guard is the same as `release_in_background`: nothing can await the
/// delete, so the node goes to the runner's background cleanup
/// ([`Coordination::cleanup_detached`]), which retries it through connection loss until
/// the node or the session is gone. Until the delete is applied the node blocks other
/// contenders.
///
/// The guard has no background task: its lost and revoke signals advance while
/// [`lost`](LockGuard::lost) or [`revocation`](LockGuard::revocation) is awaited;
/// [`is_lost`](LockGuard::is_lost) and [`revoke_requested`](LockGuard::revoke_requested)
/// report what has been observed plus whatever notifications are already queued. Session
/// loss is always observed; our node's deletion and revocation requests once the watch
/// on our node is set, at the first await of `lost` or `revocation` (until then the guard
/// spends no request on it; that first read reports a deletion at any time since the
/// grant).
#[derive(Debug)]
pub struct LockGuard<C: Coordination> {
    client: C,
    node: OwnNode,
    kind: NodeKind,
    retry: RetryPolicy,
    watching: Mutex<Watching>,
    shared: SharedState,
    released: bool,
}

impl<C: Coordination> LockGuard<C> {
    /// Builds a guard for a node whose grant was just verified. Queued session events
    /// predate the grant, so they are dropped and the current state is taken instead.
    pub(crate) fn new(
        client: C,
        node: OwnNode,
        kind: NodeKind,
        mut observer: Observer,
        policy: LostPolicy,
        retry: RetryPolicy,
        shared: SharedState,
    ) -> LockGuard<C> {
        observer.absorb(None);
        observer.counts_disconnect = policy == LostPolicy::DisconnectedOrExpired;
        if observer.counts_disconnect && client.session_state() == SessionState::Disconnected {
            observer.lost.get_or_insert(LostReason::Disconnected);
        }
        LockGuard {
            client,
            node,
            kind,
            retry,
            watching: Mutex::new(Watching {
                observer,
                wakers: Wakers::default(),
                rereading: false,
            }),
            shared,
            released: false,
        }
    }

    /// Makes a guard for a node some other code created and found granted (canary
    /// recipes in tests use this). Subscribes to session events and sets the data watch on
    /// the node now; a change before this call goes unseen. Fails if that read does (the
    /// node gone, the connection down past `retry_policy`, the session ended): a guard
    /// never starts out lost.
    pub async fn adopt(
        client: C,
        node: OwnNode,
        kind: NodeKind,
        policy: LostPolicy,
        retry_policy: RetryPolicy,
    ) -> Result<LockGuard<C>, LockError> {
        let mut observer = Observer::new(client.session_events());
        let read = retry(&client, &retry_policy, || client.get_data_watch(&node.path)).await;
        if let Some(over) = session_over(&client) {
            return Err(over.into());
        }
        // Cut off past the retries, or our node gone: not granted, whatever the caller saw.
        observer.apply_read(Ok(read?));
        let shared = SharedState::default();
        shared.lock().active = true;
        Ok(LockGuard::new(
            client,
            node,
            kind,
            observer,
            policy,
            retry_policy,
            shared,
        ))
    }

    /// The fencing token: our node's czxid. See [`FencingToken`].
    pub fn fencing_token(&self) -> FencingToken {
        FencingToken(self.node.czxid)
    }

    /// Our lock node's path.
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// Our node's sequence number: ZooKeeper's counter, negative once it wrapped (compare
    /// with [`sequence_precedes`](super::naming::sequence_precedes)).
    pub fn sequence(&self) -> i32 {
        self.node.sequence
    }

    /// What this guard holds: exclusive, read or write.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }

    /// The node this guard holds.
    pub fn node(&self) -> &OwnNode {
        &self.node
    }

    fn watching(&self) -> MutexGuard<'_, Watching> {
        self.watching.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes in queued notifications (with `cx`, also registering for the next ones),
    /// waking the guard's other waiters if anything changed.
    fn absorb(&self, cx: Option<&mut Context<'_>>) -> MutexGuard<'_, Watching> {
        let mut w = self.watching();
        if w.observer.absorb(cx) {
            w.wakers.wake_all();
        }
        w
    }

    /// Why the lock is lost, if that has been observed (see the type's docs).
    pub fn is_lost(&self) -> Option<LostReason> {
        self.absorb(None).observer.lost
    }

    /// Whether another client asked us to release (set [`REVOKE_MESSAGE`] on our node), as
    /// far as observed (see the type's docs). Releasing is up to the holder.
    pub fn revoke_requested(&self) -> bool {
        self.absorb(None).observer.revoke
    }

    fn poll_step(&self, cx: &mut Context<'_>, want_revoke: bool) -> Poll<Step> {
        let mut w = self.absorb(Some(cx));
        if let Some(reason) = w.observer.lost {
            return Poll::Ready(Step::Lost(reason));
        }
        if want_revoke && w.observer.revoke {
            return Poll::Ready(Step::Revoked);
        }
        if w.observer.reread && !w.rereading {
            w.rereading = true;
            return Poll::Ready(Step::Reread);
        }
        w.wakers.register(cx.waker());
        Poll::Pending
    }

    async fn observe(&self, want_revoke: bool) -> Result<(), LostReason> {
        let mut failures = 0;
        loop {
            match poll_fn(|cx| self.poll_step(cx, want_revoke)).await {
                Step::Lost(reason) => return Err(reason),
                Step::Revoked => return Ok(()),
                Step::Reread => {
                    let reset = RereadDone(self);
                    let read = self.unless_lost(self.client.get_data_watch(&self.node.path));
                    let Some(read) = read.await else {
                        continue; // Lost: the next step reports it.
                    };
                    let again = reset.0.watching().observer.apply_read(read);
                    drop(reset);
                    if again {
                        failures += 1;
                        let pause = self.client.sleep(self.retry.backoff(failures));
                        self.unless_lost(pause).await;
                    } else {
                        failures = 0;
                    }
                }
            }
        }
    }

    /// Runs `fut` while watching the session: `None` if the lock is lost first. A read of
    /// our node may wait for a reconnect, and Disconnected must not wait for it.
    async fn unless_lost<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            if let Poll::Ready(r) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            match self.absorb(Some(cx)).observer.lost {
                Some(_) => Poll::Ready(None),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Resolves when ownership can no longer be trusted: Disconnected (under the default
    /// [`LostPolicy`]), Expired, session closed, or our node deleted by someone else.
    /// Await it from one task at a time.
    pub async fn lost(&self) -> LostReason {
        match self.observe(false).await {
            Err(reason) => reason,
            Ok(()) => unreachable!("observe(false) returns only when the lock is lost"),
        }
    }

    /// Resolves `Ok` when another client asks us to release, or `Err` if the lock is lost
    /// first.
    pub async fn revocation(&self) -> Result<(), LostReason> {
        self.observe(true).await
    }

    /// Deletes our node, retrying connection loss until the node or the session is gone,
    /// then deletes any orphans recorded on the lock object. On error (one that retrying
    /// cannot fix) the node may still exist: it goes to the runner's background cleanup,
    /// as for a dropped guard.
    pub async fn release(mut self) -> Result<(), LockError> {
        delete_until_gone(&self.client, &self.retry, &self.node.path).await?;
        self.released = true;
        self.shared.abandon(None);
        if self.shared.has_orphans() {
            self.shared.cleanup(&self.client, &self.retry).await?;
        }
        Ok(())
    }

    /// Releases without waiting for the delete, as dropping the guard does, but said
    /// explicitly. The lock's peers in other libraries release this way too
    /// (zookeeper-client deletes in the background when its lock guard is dropped).
    ///
    /// - Our node's delete is sent now, through the runner's background cleanup
    ///   ([`Coordination::cleanup_detached`]): when the client is connected, ahead of any
    ///   request it issues afterwards. It is retried there through connection loss until
    ///   the node or the session is gone.
    /// - Other contenders can acquire once the delete is applied.
    /// - The lock object is free for its next acquire at once, and that acquire's listing
    ///   does not show this node (the delete went first).
    /// - Orphans recorded on the lock object go to the background cleanup too.
    ///
    /// Nothing reports whether the delete succeeded; use [`release`](LockGuard::release)
    /// to know that the node is gone.
    pub fn release_in_background(mut self) {
        self.hand_over();
    }

    /// Takes our node out of the guard without deleting it: the caller answers for it
    /// from now on, and the lock object is free. Nothing is sent. Canary recipes in tests
    /// use it to model a release that loses track of its node.
    pub fn into_node(mut self) -> OwnNode {
        self.released = true;
        self.shared.abandon(None);
        self.node.clone()
    }

    /// Hands our node, then any recorded orphans, to the runner's background cleanup, and
    /// frees the lock object.
    fn hand_over(&mut self) {
        self.released = true;
        // The guard is going away: its path is not needed after this.
        let path = std::mem::take(&mut self.node.path);
        self.client.cleanup_detached(DetachedCleanup::Node(path));
        self.shared.detach_all(&self.client);
        self.shared.abandon(None);
    }
}

impl<C: Coordination> Drop for LockGuard<C> {
    fn drop(&mut self) {
        if !self.released {
            // Nobody can await the delete now: the runner does it in the background.
            self.hand_over();
        }
    }
}

/// Clears the `rereading` flag even if the reread is dropped halfway.
struct RereadDone<'a, C: Coordination>(&'a LockGuard<C>);

impl<C: Coordination> Drop for RereadDone<'_, C> {
    fn drop(&mut self) {
        let mut w = self.0.watching();
        w.rereading = false;
        w.wakers.wake_all();
    }
}

/// Asks the holder of `node_path` to release, by setting [`REVOKE_MESSAGE`] as its data.
/// Returns false if the node no longer exists.
pub async fn request_revoke<C: Coordination>(
    client: &C,
    retry_policy: &RetryPolicy,
    node_path: &str,
) -> Result<bool, LockError> {
    match retry(client, retry_policy, || {
        client.set_data(node_path, REVOKE_MESSAGE, None)
    })
    .await
    {
        Ok(_) => Ok(true),
        Err(crate::ZkError::NoNode) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
