//! What a lock object remembers between calls: nodes that may exist on the server but
//! that nobody owns locally any more (orphans), and whether a contender is active.
//!
//! A dropped future cannot await, and the recipe has no runtime to spawn a cleanup on.
//! So a dropped acquire (or a guard dropped without `release`) records its node here, and
//! the next call on the lock object (`acquire*`, `participants`, `cleanup`, or a guard's
//! `release`) deletes it first. Until then the node stays, as it would in Curator if the
//! thread died: it blocks others until deleted or until our session ends.

use super::naming::{LockNode, NamingStyle, NodeKind};
use super::retry::{RetryPolicy, delete_until_gone, retry_while_session};
use crate::path::join;
use crate::{Coordination, ZkError};
use std::sync::{Arc, Mutex, MutexGuard};

/// A node that may exist on the server and that no local owner will delete.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Orphan {
    /// A node whose path we know.
    Node(String),
    /// A create was sent but its reply never came: any node in `dir` with this guid and
    /// kind, owned by our session, is ours.
    Guid {
        dir: String,
        guid: String,
        kind: NodeKind,
    },
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) orphans: Vec<Orphan>,
    /// A pending acquire or a live guard exists.
    pub(crate) active: bool,
    /// Acquire attempts so far; numbers each attempt's guid.
    pub(crate) attempts: u64,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct SharedState(Arc<Mutex<Shared>>);

impl SharedState {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic elsewhere cannot leave `Shared` half-updated in a harmful way.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn orphans(&self) -> Vec<Orphan> {
        self.lock().orphans.clone()
    }

    /// Records an orphan and frees the lock object for another contender.
    pub(crate) fn abandon(&self, orphan: Option<Orphan>) {
        let mut s = self.lock();
        s.orphans.extend(orphan);
        s.active = false;
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
                Orphan::Node(path) => delete_until_gone(client, policy, path).await?,
                Orphan::Guid { dir, guid, kind } => {
                    delete_by_guid(client, policy, dir, guid, *kind).await?;
                }
            }
            let mut s = self.lock();
            if let Some(i) = s.orphans.iter().position(|o| *o == orphan) {
                s.orphans.remove(i);
            }
        }
    }
}

/// Deletes our nodes (guid, kind, our session) in `dir`, retried until gone.
async fn delete_by_guid<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    dir: &str,
    guid: &str,
    kind: NodeKind,
) -> Result<(), ZkError> {
    let children = match retry_while_session(client, policy, || client.get_children(dir)).await {
        Ok(c) => c,
        Err(ZkError::NoNode) => return Ok(()),
        Err(e) if e.is_session_terminal() => return Ok(()),
        Err(e) => return Err(e),
    };
    let session = client.session_id().0;
    for node in children.iter().filter_map(|c| LockNode::parse(c)) {
        if node.style != NamingStyle::Curator || node.kind != kind {
            continue;
        }
        if node.guid.as_deref() != Some(guid) {
            continue;
        }
        let path = join(dir, &node.name);
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
/// its node to a guard, it records the node, or the guid of an unanswered create, as an
/// orphan.
#[derive(Debug)]
pub(crate) struct Pending {
    shared: SharedState,
    dir: String,
    pub(crate) guid: String,
    kind: NodeKind,
    /// Set before the first create is sent: from then on a node may exist.
    pub(crate) create_sent: bool,
    /// Our node, once known.
    pub(crate) path: Option<String>,
    armed: bool,
}

impl Pending {
    pub(crate) fn new(shared: SharedState, dir: &str, guid: String, kind: NodeKind) -> Pending {
        Pending {
            shared,
            dir: dir.to_owned(),
            guid,
            kind,
            create_sent: false,
            path: None,
            armed: true,
        }
    }

    /// The node now belongs to a guard, which takes over its cleanup.
    pub(crate) fn hand_over(mut self) {
        self.armed = false;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let orphan = match (&self.path, self.create_sent) {
            (Some(path), _) => Some(Orphan::Node(path.clone())),
            (None, true) => Some(Orphan::Guid {
                dir: self.dir.clone(),
                guid: self.guid.clone(),
                kind: self.kind,
            }),
            (None, false) => None,
        };
        self.shared.abandon(orphan);
    }
}
