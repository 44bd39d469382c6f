//! What a lock object remembers between calls, and how abandoned nodes get deleted.
//!
//! A node is abandoned when the code that owns it stops short of a guard or of a
//! `release`: an acquire that fails, times out, is cancelled or is dropped, or a guard
//! dropped without `release`. Two ways to delete it, depending on whether anyone can
//! still await:
//!
//! - A lock object's call that ends without a guard (`try_acquire` finding the lock held,
//!   `acquire_timeout`, `acquire_until`, a failed acquire) deletes the node itself before
//!   returning, retrying through connection loss until the node or the session is gone.
//!   The attempt records the node here on its way out; the call deletes it next.
//! - A *dropped* call, or a guard dropped without release, cannot await. It hands the
//!   node to the runner with [`Coordination::cleanup_detached`], which deletes it in the
//!   background with the same retry rule. So a dropped acquire leaves no node behind once
//!   the runner's background cleanup completes, without any further call on the lock
//!   object.
//!
//! A node whose deletion failed with an error that retrying cannot fix stays recorded
//! here, and the lock object's next call tries again.

use super::create::OwnNode;
use super::naming::{NodeKind, node_prefix};
use super::retry::{RetryPolicy, delete_until_gone, retry_while_session};
use crate::path::join;
use crate::{Coordination, DetachedCleanup, ZkError};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Nodes that may exist on the server and that no local owner will delete.
    pub(crate) orphans: Vec<DetachedCleanup>,
    /// A pending acquire or a live guard exists.
    pub(crate) active: bool,
    /// Acquire attempts so far; numbers each attempt's guid.
    pub(crate) attempts: u64,
    /// The lock object's number among its session's
    /// ([`Coordination::next_object_number`]): past 0, part of its default guid.
    pub(crate) object: u64,
    /// The default guid base (the session id in hex) and the session it was written for,
    /// kept so that each attempt copies it instead of formatting it again.
    pub(crate) session_hex: Option<(i64, String)>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SharedState(Arc<Mutex<Shared>>);

impl SharedState {
    /// The state of lock object number `object` of its session.
    pub(crate) fn of_object(object: u64) -> SharedState {
        SharedState(Arc::new(Mutex::new(Shared {
            object,
            ..Shared::default()
        })))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic elsewhere cannot leave `Shared` half-updated in a harmful way.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn orphans(&self) -> Vec<DetachedCleanup> {
        self.lock().orphans.clone()
    }

    /// Whether any orphan is recorded (a cleanup would send requests).
    pub(crate) fn has_orphans(&self) -> bool {
        !self.lock().orphans.is_empty()
    }

    /// Records an orphan and frees the lock object for another contender.
    pub(crate) fn abandon(&self, orphan: Option<DetachedCleanup>) {
        let mut s = self.lock();
        s.orphans.extend(orphan);
        s.active = false;
    }

    /// Hands every recorded orphan to the runner's background cleanup.
    pub(crate) fn detach_all<C: Coordination>(&self, client: &C) {
        // Taken first, so the std mutex is not held while the runner is called.
        let orphans = std::mem::take(&mut self.lock().orphans);
        for orphan in orphans {
            client.cleanup_detached(orphan);
        }
    }

    /// Deletes every recorded orphan, each retried until it or the session is gone.
    pub(crate) async fn cleanup<C: Coordination>(
        &self,
        client: &C,
        policy: &RetryPolicy,
    ) -> Result<(), ZkError> {
        // One at a time: an orphan leaves the list only once it is known to be gone.
        loop {
            // A separate statement, so the std mutex is released before any await.
            let next = self.lock().orphans.first().cloned();
            let Some(orphan) = next else {
                return Ok(());
            };
            match &orphan {
                DetachedCleanup::Node(path) => delete_until_gone(client, policy, path).await?,
                DetachedCleanup::OwnedMatching { dir, fragment } => {
                    delete_owned_matching(client, policy, dir, fragment).await?;
                }
            }
            let mut s = self.lock();
            if let Some(i) = s.orphans.iter().position(|o| *o == orphan) {
                s.orphans.remove(i);
            }
        }
    }
}

/// Deletes the children of `dir` whose names contain `fragment` and that our session
/// owns, retried until gone: what a runner does for
/// [`DetachedCleanup::OwnedMatching`], done in the foreground.
async fn delete_owned_matching<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    dir: &str,
    fragment: &str,
) -> Result<(), ZkError> {
    let children = match retry_while_session(client, policy, || client.get_children(dir)).await {
        Ok(c) => c,
        Err(ZkError::NoNode) => return Ok(()),
        Err(e) if e.is_session_terminal() => return Ok(()),
        Err(e) => return Err(e),
    };
    // The server lists children in no particular order; keep the requests' order fixed.
    let mut matching: Vec<&str> = children.iter().filter(|c| c.contains(fragment)).collect();
    matching.sort_unstable();
    let session = client.session_id().0;
    for name in matching {
        let path = join(dir, name);
        match retry_while_session(client, policy, || client.exists(&path)).await {
            Ok(Some(stat)) if stat.ephemeral_owner == session => {
                delete_until_gone(client, policy, &path).await?;
            }
            Ok(_) | Err(ZkError::NoNode) => {}
            Err(e) if e.is_session_terminal() => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// An acquire in progress. If it is dropped (cancelled, timed out, failed) before handing
/// its node to a guard, it records the node, or the name fragment of an unanswered
/// create, as an orphan; [`DetachOnDrop`] or the lock object's call then deletes it.
#[derive(Debug)]
pub(crate) struct Pending<'a> {
    shared: &'a SharedState,
    dir: &'a str,
    guid: &'a str,
    kind: NodeKind,
    /// Set before the first create is sent: from then on a node may exist.
    pub(crate) create_sent: bool,
    /// Our node, once known.
    pub(crate) own: Option<OwnNode>,
    armed: bool,
}

impl<'a> Pending<'a> {
    pub(crate) fn new(
        shared: &'a SharedState,
        dir: &'a str,
        guid: &'a str,
        kind: NodeKind,
    ) -> Self {
        Pending {
            shared,
            dir,
            guid,
            kind,
            create_sent: false,
            own: None,
            armed: true,
        }
    }

    /// The node now belongs to a guard, which takes over its cleanup: here it is.
    pub(crate) fn hand_over(mut self) -> OwnNode {
        self.armed = false;
        self.own
            .take()
            .expect("a node is handed over only once it is known")
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let orphan = abandoned_cleanup(
            self.own.take().map(|own| own.path),
            self.create_sent,
            self.dir,
            || node_prefix(self.guid, self.kind),
        );
        self.shared.abandon(orphan);
    }
}

/// What an acquire abandoned before it returned leaves to delete: its node once known
/// (`own`), or else, once its create was sent, every child of `dir` whose name contains
/// `fragment` (the guid and kind part of its name) and that its session owns. The owner
/// check rules out another session's node that happens to contain the fragment.
pub fn abandoned_cleanup(
    own: Option<String>,
    create_sent: bool,
    dir: &str,
    fragment: impl FnOnce() -> String,
) -> Option<DetachedCleanup> {
    match (own, create_sent) {
        (Some(path), _) => Some(DetachedCleanup::Node(path)),
        (None, true) => Some(DetachedCleanup::OwnedMatching {
            dir: dir.to_owned(),
            fragment: fragment(),
        }),
        (None, false) => None,
    }
}

/// Held by a lock object's call for as long as it may still delete recorded orphans
/// itself. If the call is dropped first (the caller gave up on its future), this hands
/// them to the runner's background cleanup, since nobody will await their deletion.
///
/// Declared before the attempt in the call, so it drops after the attempt's [`Pending`]
/// has recorded its node.
pub(crate) struct DetachOnDrop<'a, C: Coordination> {
    client: &'a C,
    shared: &'a SharedState,
    armed: bool,
}

impl<'a, C: Coordination> DetachOnDrop<'a, C> {
    pub(crate) fn new(client: &'a C, shared: &'a SharedState) -> Self {
        DetachOnDrop {
            client,
            shared,
            armed: true,
        }
    }

    /// The call finished its own cleanup: whatever is still recorded failed with an error
    /// retrying cannot fix, and stays for the next call.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl<C: Coordination> Drop for DetachOnDrop<'_, C> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.detach_all(self.client);
        }
    }
}
