//! The herd-free consumer: takes items only while holding the queue's take lock.

use super::QueueError;
use super::items::{
    Claim, QueuePaths, Taken, complete_item, item_exists, list, list_watched, lock_item,
    lost_before_taken, release_item, sorted_items, wait_change,
};
use crate::lock::hand_over;
use crate::lock::retry::{RetryPolicy, retry_while_session, session_over};
use crate::{Coordination, CreateMode, Lock, LockOptions};

/// A consumer that takes the oldest unlocked item, and wakes alone.
///
/// Consumers queue on the take lock (zklock's [`Lock`] on
/// [`QueuePaths::take_lock`], whose waiters each watch their predecessor only). Its
/// holder lists the queue with a watch and tries the items' locks, oldest first. If
/// every item is locked, or there is none, it waits, still holding the take lock,
/// watching the queue's children and the lock node of the oldest locked item (freed when
/// its consumer's session ends). Once it holds an item's lock and has seen the item still
/// in the queue, it releases the take lock. So a produce, a completion or a freed lock
/// wakes one consumer, and a take hands the take lock to one more.
#[derive(Debug)]
pub struct Consumer<C> {
    client: C,
    paths: QueuePaths,
    take_lock: Lock<C>,
    policy: RetryPolicy,
}

impl<C: Coordination + Clone> Consumer<C> {
    /// A consumer on `paths`; fails on an invalid path.
    pub fn new(client: C, paths: &QueuePaths) -> Result<Consumer<C>, QueueError> {
        paths.validate()?;
        let take_lock = Lock::new(client.clone(), &paths.take_lock(), LockOptions::default())?;
        Ok(Consumer {
            client,
            paths: paths.clone(),
            take_lock,
            policy: RetryPolicy::default(),
        })
    }

    /// Waits until it holds an item's lock and has seen the item still in the queue.
    ///
    /// Fails with [`QueueError::LostBeforeTaken`] (or `SessionEnded`) when the item's lock
    /// lost its trust before `take` returned: the connection dropped while it released
    /// the take lock, say. The item was then given back. From the return on, the caller
    /// stops trusting the item at the session's next Disconnected, as a lock's holder
    /// does (`work_queue::items::lost`).
    pub async fn take(&self) -> Result<Taken, QueueError> {
        loop {
            let guard = self.take_lock.acquire().await?;
            match self.find().await {
                Ok(Some(claim)) => {
                    // The item's lock, not the take lock, guards the item: a failed
                    // release (the session ended) leaves the take lock to the server's
                    // expiry. But the release can outlast the item lock's trust.
                    let (claim, _) = hand_over(&self.client, claim, guard.release())
                        .await
                        .map_err(lost_before_taken)?;
                    return Ok(claim.into_taken());
                }
                Ok(None) => drop(guard.release().await),
                Err(e) => {
                    drop(guard.release().await);
                    return Err(e);
                }
            }
            if let Some(over) = session_over(&self.client) {
                return Err(over.into());
            }
        }
    }

    /// As the take lock's holder: the oldest item it could lock and saw still queued;
    /// `None` once the session's state changed, so that the caller stops trusting its
    /// take lock and queues again.
    async fn find(&self) -> Result<Option<Claim<'_, C>>, QueueError> {
        let c = &self.client;
        // A pass lists without a watch; only a pass that finds nothing to take lists
        // again with one and waits. A watch left by a pass that took an item would fire
        // later at a consumer busy processing: a notification for nothing.
        let mut watched = false;
        loop {
            let mut events = c.session_events();
            let (children, queue_watch) = if watched {
                let (children, w) = list_watched(c, &self.paths, &self.policy).await?;
                (children, Some(w))
            } else {
                (list(c, &self.paths, &self.policy).await?, None)
            };
            let mut oldest_locked = None;
            for item in sorted_items(&children) {
                let Some(claim) =
                    lock_item(c, &self.paths, &self.policy, &item, CreateMode::Ephemeral).await?
                else {
                    oldest_locked.get_or_insert(item);
                    continue;
                };
                if item_exists(c, &self.paths, &self.policy, &item).await? {
                    return Ok(Some(claim));
                }
                // Completed since the listing: not ours to process.
                claim.release().await?;
            }
            let Some(queue_watch) = queue_watch else {
                watched = true;
                continue;
            };
            watched = false;
            let mut watches = vec![queue_watch];
            if let Some(item) = oldest_locked {
                let lock = self.paths.lock(&item);
                match retry_while_session(c, &self.policy, || c.exists_watch(&lock)).await? {
                    (Some(_), w) => watches.push(w),
                    // Freed since: look again at once.
                    (None, _) => continue,
                }
            }
            if events.try_next().is_some() {
                return Ok(None);
            }
            wait_change(watches, &mut events).await;
            if c.session_state() != crate::SessionState::Connected {
                return Ok(None);
            }
        }
    }

    /// Completes a taken item: deletes it, then its lock (see [`complete_item`]).
    pub async fn complete(&self, taken: Taken) -> Result<(), QueueError> {
        complete_item(&self.client, &self.paths, &self.policy, &taken).await
    }

    /// Gives a taken item back unprocessed: deletes its lock.
    pub async fn abandon(&self, taken: Taken) -> Result<(), QueueError> {
        release_item(&self.client, &self.policy, &taken).await
    }

    /// The client this consumer uses.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The queue's directories.
    pub fn paths(&self) -> &QueuePaths {
        &self.paths
    }
}
