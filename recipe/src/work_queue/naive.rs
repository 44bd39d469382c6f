//! The naive consumer: every idle consumer watches the whole queue (a herd).

use super::QueueError;
use super::items::{
    QueuePaths, Taken, complete_item, item_exists, list_watched, lock_item, lost_before_taken,
    release_item, sorted_items, wait_change,
};
use crate::lock::hand_over;
use crate::lock::retry::{RetryPolicy, retry_while_session, session_over};
use crate::{Coordination, CreateMode};

/// A consumer as the queue recipe is often first written: it lists the queue with a
/// child watch, tries every item's lock in turn, oldest first, and, finding none free,
/// waits on the queue's children and on every locked item's lock node. It is correct
/// (it checks the item still exists once it holds its lock, and a freed lock wakes it),
/// but every idle consumer wakes, lists and tries at every produce, completion and freed
/// lock: a herd, which [`Consumer`](super::Consumer) avoids.
#[derive(Debug)]
pub struct NaiveConsumer<C> {
    client: C,
    paths: QueuePaths,
    policy: RetryPolicy,
}

impl<C: Coordination> NaiveConsumer<C> {
    /// A consumer on `paths`; fails on an invalid path.
    pub fn new(client: C, paths: &QueuePaths) -> Result<NaiveConsumer<C>, QueueError> {
        paths.validate()?;
        Ok(NaiveConsumer {
            client,
            paths: paths.clone(),
            policy: RetryPolicy::default(),
        })
    }

    /// Waits until it holds an item's lock and has seen the item still in the queue.
    pub async fn take(&self) -> Result<Taken, QueueError> {
        let c = &self.client;
        'listing: loop {
            if let Some(over) = session_over(c) {
                return Err(over.into());
            }
            let mut events = c.session_events();
            let (children, queue_watch) = list_watched(c, &self.paths, &self.policy).await?;
            let mut watches = vec![queue_watch];
            for item in sorted_items(&children) {
                let Some(claim) =
                    lock_item(c, &self.paths, &self.policy, &item, CreateMode::Ephemeral).await?
                else {
                    let lock = self.paths.lock(&item);
                    match retry_while_session(c, &self.policy, || c.exists_watch(&lock)).await? {
                        (Some(_), w) => watches.push(w),
                        (None, _) => continue 'listing,
                    }
                    continue;
                };
                // The check can outlast the item lock's trust: handed over only if not.
                let exists = item_exists(c, &self.paths, &self.policy, &item);
                let (claim, exists) = hand_over(c, claim, exists)
                    .await
                    .map_err(lost_before_taken)?;
                if exists? {
                    return Ok(claim.into_taken());
                }
                claim.release().await?;
            }
            if events.try_next().is_none() {
                wait_change(watches, &mut events).await;
            }
        }
    }

    /// Completes a taken item: deletes it, then its lock.
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
