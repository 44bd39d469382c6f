//! The work queue's building blocks, shared by its consumers and by variants of them:
//! item names, an item's lock, the existence check, completion, and the session's end.

use super::QueueError;
use crate::lock::ensure_path;
use crate::lock::naming::{parse_sequence, sequence_precedes};
use crate::lock::retry::{RetryPolicy, delete_own_until_gone, retry_while_session, session_over};
use crate::lock::{Grant, LockError, LostPolicy, LostReason, Trust};
use crate::path::{join, validate_path};
use crate::{
    Children, Coordination, CreateMode, DetachedCleanup, SessionEvents, SessionState, ZkError,
};
use std::cmp::Ordering;

/// Every item's name starts with it: `item-<guid>-<sequence>`.
pub const ITEM_PREFIX: &str = "item-";

/// Where a queue lives: its items' directory and its item locks' directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuePaths {
    /// The items' directory. Default `/queue`.
    pub queue: String,
    /// The item locks' directory: item `X`'s lock is `<locks>/X`. Default `/queue_lock`.
    pub locks: String,
}

impl Default for QueuePaths {
    fn default() -> Self {
        QueuePaths {
            queue: "/queue".into(),
            locks: "/queue_lock".into(),
        }
    }
}

impl QueuePaths {
    /// Both directories must be valid paths, and neither the root.
    pub fn validate(&self) -> Result<(), QueueError> {
        for p in [&self.queue, &self.locks] {
            validate_path(p, false).map_err(|e| QueueError::InvalidPath {
                path: p.clone(),
                reason: e.to_string(),
            })?;
            if p == "/" {
                return Err(QueueError::InvalidPath {
                    path: p.clone(),
                    reason: "a queue directory cannot be the root".into(),
                });
            }
        }
        Ok(())
    }

    /// Item `item`'s node.
    pub fn item(&self, item: &str) -> String {
        join(&self.queue, item)
    }

    /// Item `item`'s lock node.
    pub fn lock(&self, item: &str) -> String {
        join(&self.locks, item)
    }

    /// The take lock's directory of [`Consumer`](super::Consumer): `<locks>.take`, a
    /// sibling, so that the locks' directory holds item locks only.
    pub fn take_lock(&self) -> String {
        format!("{}.take", self.locks)
    }
}

/// An item a consumer holds the lock of, and has seen still in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The item's name (a child of the queue directory).
    pub item: String,
    /// The item's lock node.
    pub lock_node: String,
    /// The lock node's czxid: it grows with every take of any item.
    pub token: i64,
}

/// The items among `children`, oldest first (by sequence, across the counter's wrap).
pub fn sorted_items(children: &Children) -> Vec<String> {
    let mut items: Vec<(i32, String)> = children
        .iter()
        .filter(|n| n.starts_with(ITEM_PREFIX))
        .filter_map(|n| Some((parse_sequence(n)?, n.to_owned())))
        .collect();
    items.sort_by(|a, b| {
        if a.0 == b.0 {
            Ordering::Equal
        } else if sequence_precedes(a.0, b.0) {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    });
    items.into_iter().map(|(_, n)| n).collect()
}

/// An item's lock this consumer just created, with the session's trust in it since: a
/// [`Grant`], handed to the caller of `take` only through
/// [`hand_over`](crate::lock::hand_over), so that no consumer processes an item whose lock
/// its session may have lost meanwhile.
///
/// A claim dropped before it was handed over or given back (its `take` was dropped, say)
/// hands its lock to the client's background cleanup, so that no item stays locked by a
/// consumer that went away while its session lives.
#[derive(Debug)]
pub struct Claim<'a, C: Coordination> {
    client: &'a C,
    policy: &'a RetryPolicy,
    taken: Taken,
    trust: Trust,
    armed: bool,
}

impl<C: Coordination> Claim<'_, C> {
    /// The item and its lock.
    pub fn taken(&self) -> &Taken {
        &self.taken
    }

    /// The item, for its consumer to process: the claim's cleanup is now the caller's
    /// (`complete` or `abandon`).
    pub fn into_taken(mut self) -> Taken {
        self.armed = false;
        self.taken.clone()
    }

    /// Gives the item back unprocessed: deletes its lock ([`release_item`]). If that
    /// fails while the session lives, the lock goes to the client's background cleanup.
    pub async fn release(mut self) -> Result<(), QueueError> {
        let r = release_item(self.client, self.policy, &self.taken).await;
        if r.is_ok() {
            self.armed = false;
        }
        r
    }
}

impl<C: Coordination> Drop for Claim<'_, C> {
    fn drop(&mut self) {
        // A session that ended took its ephemeral lock with it.
        if self.armed && session_over(self.client).is_none() {
            self.client.cleanup_detached(owned_lock(&self.taken));
        }
    }
}

/// The cleanup that finds the item lock `taken` by owner, not by path: another consumer
/// may take the path once ours goes.
fn owned_lock(taken: &Taken) -> DetachedCleanup {
    let dir = crate::path::parent(&taken.lock_node)
        .unwrap_or("/")
        .to_owned();
    DetachedCleanup::OwnedMatching {
        dir,
        fragment: taken.item.clone(),
    }
}

impl<C: Coordination> Grant for Claim<'_, C> {
    fn trust_ended(&mut self) -> Option<LostReason> {
        self.trust.ended()
    }
    fn node_path(&self) -> &str {
        &self.taken.lock_node
    }
    async fn give_back(self) {
        // A failed release hands the lock to the cleanup, as a drop does.
        let _ = self.release().await;
    }
}

/// The error `take` returns when an item's lock lost its trust before `take` returned
/// (`e` from [`hand_over`](crate::lock::hand_over)): the item was given back.
pub fn lost_before_taken(e: LockError) -> QueueError {
    match e {
        LockError::SessionExpired => QueueError::SessionEnded(ZkError::SessionExpired),
        LockError::SessionClosed => QueueError::SessionEnded(ZkError::SessionClosed),
        LockError::LostBeforeGranted(reason) => QueueError::LostBeforeTaken(reason),
        LockError::NodeDeleted { .. } => QueueError::LostBeforeTaken(LostReason::NodeDeleted),
        other => QueueError::TakeLock(other),
    }
}

/// Creates `item`'s lock node in `mode`; `None` if another session holds it. A create
/// whose reply was lost is retried while the session lives, and a node found then is ours
/// if its ephemeral owner is our session, so a lost reply never strands our own lock. The
/// claim's trust begins at the reply that showed the node ours.
pub async fn lock_item<'a, C: Coordination>(
    client: &'a C,
    paths: &QueuePaths,
    policy: &'a RetryPolicy,
    item: &str,
    mode: CreateMode,
) -> Result<Option<Claim<'a, C>>, QueueError> {
    let path = paths.lock(item);
    // Dropped once a create was sent, before the claim exists, or failed while the
    // session lives: the node may be ours, and nobody else deletes it while it lives.
    let mut in_flight = CreateInFlight {
        client,
        what: Some(owned_lock(&Taken {
            item: item.to_owned(),
            lock_node: path.clone(),
            token: 0,
        })),
    };
    let settled = create_item_lock(client, paths, policy, &path, mode).await;
    if settled.is_ok() || session_over(client).is_some() {
        in_flight.what = None;
    }
    Ok(settled?.map(|token| Claim {
        client,
        policy,
        trust: Trust::begin(client, LostPolicy::DisconnectedOrExpired),
        taken: Taken {
            item: item.to_owned(),
            lock_node: path,
            token,
        },
        armed: true,
    }))
}

/// [`lock_item`]'s requests: the lock's czxid once it is ours, `None` if another
/// session's.
async fn create_item_lock<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
    path: &str,
    mode: CreateMode,
) -> Result<Option<i64>, QueueError> {
    let mut parents_made = false;
    loop {
        match retry_while_session(client, policy, || client.create(path, b"", mode)).await {
            Ok((_, stat)) => return Ok(Some(stat.czxid)),
            Err(ZkError::NodeExists) => {
                let stat = retry_while_session(client, policy, || client.exists(path)).await?;
                match stat {
                    Some(s) if s.ephemeral_owner == client.session_id().0 => {
                        return Ok(Some(s.czxid));
                    }
                    Some(_) => return Ok(None),
                    // Released in between: try again.
                    None => {}
                }
            }
            Err(ZkError::NoNode) if !parents_made => {
                ensure_path(client, policy, &paths.locks).await?;
                parents_made = true;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// An item lock's create in flight: dropped before it is settled, it hands the lock (if
/// made) to the client's background cleanup.
struct CreateInFlight<'a, C: Coordination> {
    client: &'a C,
    what: Option<DetachedCleanup>,
}

impl<C: Coordination> Drop for CreateInFlight<'_, C> {
    fn drop(&mut self) {
        if let Some(what) = self.what.take()
            && session_over(self.client).is_none()
        {
            self.client.cleanup_detached(what);
        }
    }
}

/// Whether `item` is still in the queue: a consumer that holds an item's lock checks
/// this before processing, since the item may have been completed (and its lock
/// released) between the consumer's listing and its lock.
pub async fn item_exists<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
    item: &str,
) -> Result<bool, QueueError> {
    let path = paths.item(item);
    Ok(retry_while_session(client, policy, || client.exists(&path))
        .await?
        .is_some())
}

/// Deletes the taken item's lock node, retrying through connection loss until the node
/// or the session is gone. The lock's path is the item's name, which the next consumer
/// takes once ours is gone: a delete retried after a ConnectionLoss deletes only while
/// the node there is still ours ([`delete_own_until_gone`]).
pub async fn release_item<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    taken: &Taken,
) -> Result<(), QueueError> {
    Ok(delete_own_until_gone(client, policy, &taken.lock_node, taken.token).await?)
}

/// Completes a taken item: deletes the item ([`delete_item`]), then releases its lock.
pub async fn complete_item<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
    taken: &Taken,
) -> Result<(), QueueError> {
    delete_item(client, paths, policy, taken).await?;
    release_item(client, policy, taken).await
}

/// Deletes a taken item from the queue: the moment it is complete. `Ok` only if our
/// delete removed the item: a `NoNode` after a ConnectionLoss of ours means our earlier
/// attempt was applied (we held the item's lock all along, since the session lived), but
/// a `NoNode` at the first attempt means someone else had already deleted it, an error.
pub async fn delete_item<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
    taken: &Taken,
) -> Result<(), QueueError> {
    let path = paths.item(&taken.item);
    let mut attempt = 1u32;
    let mut unknown = false;
    loop {
        if let Some(over) = session_over(client) {
            return Err(over.into());
        }
        match client.delete(&path, None).await {
            Ok(()) => return Ok(()),
            Err(ZkError::NoNode) if unknown => return Ok(()),
            Err(e) if e.is_connection_loss() => {
                unknown = true;
                client.sleep(policy.backoff(attempt)).await;
                attempt = attempt.saturating_add(1);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Resolves when a consumer can no longer trust its item's lock: at once if the session
/// is not connected, else at its next Disconnected, Expired or Closed. As the lock's
/// default lost policy, a Disconnected ends the trust: the server expires the session
/// (and the lock) only after the full timeout, and the client reports Disconnected at
/// two thirds of it.
pub async fn lost<C: Coordination>(client: &C) -> String {
    let mut events: SessionEvents = client.session_events();
    let mut state = client.session_state();
    loop {
        match state {
            SessionState::Connected => {}
            SessionState::Disconnected => return "disconnected".into(),
            SessionState::Expired => return "expired".into(),
            SessionState::Closed => return "closed".into(),
        }
        state = events.next().await.unwrap_or(SessionState::Expired);
    }
}

/// Waits until one of `watches` fires or the session's state changes (a change of state
/// is the caller's cue to look again). With no watch, only the session's change ends it.
pub async fn wait_change(watches: Vec<crate::Watch>, events: &mut SessionEvents) {
    use futures_util::future::{select, select_all};
    use std::pin::pin;
    let session = pin!(events.next());
    if watches.is_empty() {
        session.await;
        return;
    }
    let _ = select(select_all(watches), session).await;
}

/// The queue's children with a child watch, creating the queue directory if it is
/// missing; retried while the session lives.
pub async fn list_watched<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
) -> Result<(Children, crate::Watch), QueueError> {
    loop {
        match retry_while_session(client, policy, || client.get_children_watch(&paths.queue)).await
        {
            Err(ZkError::NoNode) => ensure_path(client, policy, &paths.queue).await?,
            r => return Ok(r?),
        }
    }
}

/// The queue's children, without a watch (an empty list if the directory is missing);
/// retried while the session lives.
pub async fn list<C: Coordination>(
    client: &C,
    paths: &QueuePaths,
    policy: &RetryPolicy,
) -> Result<Children, QueueError> {
    match retry_while_session(client, policy, || client.get_children(&paths.queue)).await {
        Err(ZkError::NoNode) => Ok(Children::new()),
        r => Ok(r?),
    }
}
