//! The acquire loop, after ZooKeeper's lock recipe as Curator's `LockInternals` runs it:
//!
//! 1. create our ephemeral-sequential node (with guid recovery, see [`create_contender`]),
//!    with the first listing of the children sent right behind it (one round trip);
//! 2. order contenders by sequence number (listing again, without a watch, when needed);
//! 3. if nobody blocks us ([`blocker`]), set a data watch on our own node and hold;
//! 4. else set a data watch on the blocker (getData, see [`watch_node`]) and, in the same
//!    round trip, our own node's watch (once). If the blocker is already gone, go to 2 at
//!    once. Otherwise wait for its watch to fire, then go to 2. Only one node is watched,
//!    so a release wakes one waiter (no herd).
//!
//! We list again after the blocker's deletion even when it was the only contender ahead
//! (sequence numbers only grow, so nobody can have got ahead of us). If its session was
//! expired by the server, that listing's round trip is what gives the old holder time to
//! hear of the expiry before we hold. Holding at once was tried: the checker found two
//! believers right after a forced expiry (checker/tests/deaf_holder_canary.rs, seed 2).
//!
//! Our own node's watch reports its deletion and revocation requests, while waiting and
//! then to the guard. Waiting ends early on session expiry or if our node vanishes.

use super::LockOptions;
use super::create::{ContenderSpec, OwnNode, create_contender_listed};
use super::error::{LockError, LostReason};
use super::guard::LockGuard;
use super::naming::{LockNode, NodeKind, contenders};
use super::observe::Observer;
use super::queue::{blocker, position};
use super::retry::{RetryPolicy, retry, session_over};
use super::state::{Pending, SharedState};
use crate::path::join;
use crate::{Coordination, SessionEvents, SessionState, Watch, WatchedEvent, ZkError};
use futures_util::future::poll_fn;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;

/// The recognised contenders of `dir`, in lock order. `LockPathDeleted` if `dir` is gone.
pub async fn list_contenders<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    dir: &str,
) -> Result<Vec<LockNode>, LockError> {
    match retry(client, policy, || client.get_children(dir)).await {
        Ok(children) => Ok(contenders(&children)),
        Err(ZkError::NoNode) => Err(LockError::LockPathDeleted {
            path: dir.to_owned(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Sets a data watch on `path` (getData, as Curator: unlike exists, it leaves no watch
/// behind when the node is already gone). `None` means it is gone: list again at once.
pub async fn watch_node<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    path: &str,
) -> Result<Option<Watch>, LockError> {
    match retry(client, policy, || client.get_data_watch(path)).await {
        Ok((_, _, watch)) => Ok(Some(watch)),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Waits for `watch` to fire, failing if the session ends first. Disconnects are sat out:
/// watches survive a reconnect.
pub async fn await_watch(
    mut watch: Watch,
    events: &mut SessionEvents,
) -> Result<WatchedEvent, LockError> {
    loop {
        let next = poll_fn(|cx| {
            if let Poll::Ready(r) = Pin::new(&mut watch).poll(cx) {
                return Poll::Ready(Err(r));
            }
            pin!(events.next()).poll(cx).map(Ok)
        })
        .await;
        match next {
            Err(fired) => return fired.map_err(LockError::from),
            Ok(Some(SessionState::Expired)) => return Err(LockError::SessionExpired),
            Ok(Some(SessionState::Closed) | None) => return Err(LockError::SessionClosed),
            Ok(Some(_)) => {}
        }
    }
}

/// Why our node vanished: the session ended, or someone else deleted it. A request
/// settles it, since the session's end may not have been reported yet.
async fn vanished<C: Coordination>(client: &C, policy: &RetryPolicy, path: &str) -> LockError {
    if let Some(over) = session_over(client) {
        return over.into();
    }
    match retry(client, policy, || client.exists(path)).await {
        Err(e) if e.is_session_terminal() => e.into(),
        _ => LockError::NodeDeleted {
            path: path.to_owned(),
        },
    }
}

/// Waits until the blocker's watch fires, keeping our own node's watch up to date.
async fn wait_for_blocker<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    observer: &mut Observer,
    mut blocker: Watch,
) -> Result<(), LockError> {
    let mut failures = 0;
    loop {
        let step = poll_fn(|cx| {
            if let Poll::Ready(r) = Pin::new(&mut blocker).poll(cx) {
                return Poll::Ready(Some(r));
            }
            observer.absorb(Some(cx));
            if observer.lost.is_some() || observer.reread {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        match (step, observer.lost) {
            (Some(fired), _) => return fired.map(drop).map_err(LockError::from),
            (None, Some(LostReason::Expired)) => return Err(LockError::SessionExpired),
            (None, Some(LostReason::SessionClosed)) => return Err(LockError::SessionClosed),
            (None, Some(_)) => return Err(vanished(client, policy, &observer.path).await),
            (None, None) => {
                let read = client.get_data_watch(&observer.path).await;
                if observer.apply_read(read) {
                    failures += 1;
                    client.sleep(policy.backoff(failures)).await;
                }
            }
        }
    }
}

/// Reads our node's data with a watch (the revoke flag, and deletion notice).
async fn arm_own_watch<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    observer: &mut Observer,
) -> Result<(), LockError> {
    let read = retry(client, policy, || client.get_data_watch(&observer.path)).await;
    match &read {
        Err(e) if !matches!(e, ZkError::NoNode) && !e.is_session_terminal() => {
            Err(e.clone().into())
        }
        // NoNode or the session's end marks the observer lost; the caller reports why.
        _ => {
            observer.apply_read(read);
            Ok(())
        }
    }
}

/// One acquisition attempt by a lock object.
pub(crate) struct Attempt<'a, C> {
    pub(crate) client: &'a C,
    pub(crate) dir: &'a str,
    pub(crate) kind: NodeKind,
    pub(crate) options: &'a LockOptions,
    pub(crate) shared: &'a SharedState,
}

impl<C: Coordination + Clone> Attempt<'_, C> {
    /// Runs the recipe. `wait = false` gives up (returning `None`) instead of watching.
    /// Whatever way this ends short of a guard, including being dropped, our node is
    /// recorded as an orphan for the caller's cleanup.
    pub(crate) async fn run(self, wait: bool) -> Result<Option<LockGuard<C>>, LockError> {
        let Attempt {
            client,
            dir,
            kind,
            options,
            shared,
        } = self;
        let policy = &options.retry;
        let number = {
            let mut s = shared.lock();
            if s.active {
                return Err(LockError::InUse);
            }
            s.active = true;
            s.attempts += 1;
            s.attempts
        };
        let base = match &options.guid {
            Some(g) => g.clone(),
            None => format!("{:x}", client.session_id().0),
        };
        let mut pending = Pending::new(shared.clone(), dir, format!("{base}-{number:x}"), kind);
        // Subscribed before the create, so no state change after it goes unseen.
        let events = client.session_events();
        let guid = pending.guid.clone();
        let spec = ContenderSpec {
            dir,
            guid: &guid,
            kind,
            data: &options.data,
            create_parents: options.create_parents,
            retry: policy,
        };
        pending.create_sent = true;
        let (own, listed): (OwnNode, _) = create_contender_listed(client, &spec).await?;
        pending.path = Some(own.path.clone());

        // Our node's data watch (deletion, revocation) is set once we know we must wait,
        // or hold: as in the recipe, the first read after the create is the listing.
        let mut observer = Observer::new(own.path.clone(), events);
        let mut listed = listed.map(|children| contenders(&children));
        loop {
            if observer.lost.is_some() {
                return Err(vanished(client, policy, &own.path).await);
            }
            let list = match listed.take() {
                Some(list) => list,
                None => list_contenders(client, policy, dir).await?,
            };
            let Some(ours) = position(&list, &own.name) else {
                return Err(vanished(client, policy, &own.path).await);
            };
            if let Some(ahead) = blocker(&list, ours) {
                if !wait {
                    return Ok(None);
                }
                let ahead = join(dir, &ahead.name);
                // Both watches in one round trip; the blocker's is requested first.
                let (watch, armed) = if observer.reread {
                    let (w, a) = futures_util::future::join(
                        watch_node(client, policy, &ahead),
                        arm_own_watch(client, policy, &mut observer),
                    )
                    .await;
                    (w, a)
                } else {
                    (watch_node(client, policy, &ahead).await, Ok(()))
                };
                let watch = watch?;
                armed?;
                let Some(watch) = watch else {
                    continue; // Already gone: list again at once.
                };
                if observer.lost.is_some() {
                    continue;
                }
                wait_for_blocker(client, policy, &mut observer, watch).await?;
                continue;
            }
            if observer.reread {
                arm_own_watch(client, policy, &mut observer).await?;
                if observer.lost.is_some() {
                    continue;
                }
            }
            if let Some(over) = session_over(client) {
                return Err(over.into());
            }
            pending.hand_over();
            return Ok(Some(LockGuard::new(
                client.clone(),
                own,
                kind,
                observer,
                options.lost_policy,
                policy.clone(),
                shared.clone(),
            )));
        }
    }
}
