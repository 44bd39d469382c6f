//! The work queue's canaries: zklock's herd-free consumer, or its producer, with one bug
//! each, built from the queue's public building blocks (`zklock_recipe::work_queue::items`).

use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use zklock_recipe::lock::retry::{RetryPolicy, retry_while_session, session_over};
use zklock_recipe::lock::{ensure_path, hand_over};
use zklock_recipe::path::basename;
use zklock_recipe::work_queue::items::{
    Claim, ITEM_PREFIX, QueuePaths, Taken, complete_item, delete_item, item_exists, list,
    list_watched, lock_item, lost, lost_before_taken, release_item, sorted_items, wait_change,
};
use zklock_recipe::work_queue::{ConsumerUnderTest, Producer, ProducerUnderTest, QueueError};
use zklock_recipe::{Coordination, CreateMode, Lock, LockOptions, SessionState};
use zklock_sim::scenario::work_queue::{MakeConsumer, MakeProducer};
use zklock_sim::{QueueRecipe, Recipe, Scenario, SimClient, WorkQueue};

/// The work queue's bug classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueBug {
    /// Takes an item's lock and processes the item without checking that it is still in
    /// the queue: an item completed between the listing and the lock is processed again.
    NoExistsCheck,
    /// Creates an item's lock persistent, not ephemeral: the lock of a consumer whose
    /// session ended (or whose create's reply was lost) stands for ever, and its item is
    /// never taken again.
    PersistentLock,
    /// Deletes the item as soon as it takes it, before processing: a consumer that
    /// crashes or loses its session while processing loses the item.
    DeleteBeforeDone,
    /// Hands its item over once it has released the take lock, without a look at the
    /// item lock's trust (no [`hand_over`]): when the connection drops during that
    /// release, the server may expire the session, and another consumer take the item,
    /// while this one starts processing it.
    HandsOverLostItem,
    /// Completes an item by deleting its lock first and the item second: between the two,
    /// another consumer takes the item, still queued, and processes it.
    ReleaseBeforeDelete,
    /// A producer that sends its create again after a ConnectionLoss without looking for
    /// the item the first may have made: one produce call, two items. Its consumers are
    /// zklock's.
    BlindProduce,
}

impl QueueBug {
    pub const ALL: [QueueBug; 6] = [
        QueueBug::NoExistsCheck,
        QueueBug::PersistentLock,
        QueueBug::DeleteBeforeDone,
        QueueBug::HandsOverLostItem,
        QueueBug::ReleaseBeforeDelete,
        QueueBug::BlindProduce,
    ];

    /// The canary's name, as registered and as its trace file is named.
    pub fn name(self) -> &'static str {
        match self {
            QueueBug::NoExistsCheck => "canary-queue-no-exists-check",
            QueueBug::PersistentLock => "canary-queue-persistent-lock",
            QueueBug::DeleteBeforeDone => "canary-queue-delete-before-done",
            QueueBug::HandsOverLostItem => "canary-queue-hands-over-lost-item",
            QueueBug::ReleaseBeforeDelete => "canary-queue-release-before-delete",
            QueueBug::BlindProduce => "canary-queue-blind-produce",
        }
    }

    /// The property it must violate.
    pub fn caught_by(self) -> &'static str {
        match self {
            QueueBug::NoExistsCheck => "queue_no_process_after_complete",
            QueueBug::PersistentLock | QueueBug::DeleteBeforeDone => "queue_items_completed",
            QueueBug::HandsOverLostItem | QueueBug::ReleaseBeforeDelete => "queue_item_exclusive",
            QueueBug::BlindProduce => "queue_one_item_per_produce",
        }
    }

    /// A consumer with this bug on `paths`, on any client (a simulated one, a real
    /// server's). Panics on invalid paths (see `QueuePaths::validate`).
    pub fn consumer<C: Coordination + Clone + Send + Sync + 'static>(
        self,
        client: C,
        paths: &QueuePaths,
    ) -> Box<dyn ConsumerUnderTest> {
        let take_lock = Lock::new(client.clone(), &paths.take_lock(), LockOptions::default())
            .expect("the queue's paths are valid");
        Box::new(BuggyConsumer {
            client,
            paths: paths.clone(),
            take_lock,
            bug: self,
            policy: RetryPolicy::default(),
        })
    }

    /// A producer with this bug on `paths` (zklock's [`Producer`] for a consumer's bug), on
    /// any client. Panics on invalid paths (see `QueuePaths::validate`).
    pub fn producer<C: Coordination + Clone + Send + Sync + 'static>(
        self,
        client: C,
        paths: &QueuePaths,
    ) -> Box<dyn ProducerUnderTest> {
        if self != QueueBug::BlindProduce {
            return Box::new(Producer::new(client, paths).expect("the queue's paths are valid"));
        }
        paths.validate().expect("the queue's paths are valid");
        Box::new(BlindProducer {
            client,
            paths: paths.clone(),
            policy: RetryPolicy::default(),
            produced: AtomicU64::new(0),
        })
    }

    /// What it does wrong.
    pub fn description(self) -> &'static str {
        match self {
            QueueBug::NoExistsCheck => {
                "a work-queue consumer that processes an item without checking it still exists"
            }
            QueueBug::PersistentLock => "a work-queue consumer whose item locks are persistent",
            QueueBug::DeleteBeforeDone => {
                "a work-queue consumer that deletes the item before it finishes processing"
            }
            QueueBug::HandsOverLostItem => {
                "a work-queue consumer that hands over an item whose lock lost its trust while \
                 it released the take lock"
            }
            QueueBug::ReleaseBeforeDelete => {
                "a work-queue consumer that completes an item by deleting its lock before the item"
            }
            QueueBug::BlindProduce => {
                "a work-queue producer that creates again after a ConnectionLoss without \
                 looking for its first item"
            }
        }
    }
}

/// The canary of one queue bug, as a [`Recipe`]: its producer and consumers, one of
/// them with the bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueCanary(pub QueueBug);

impl Recipe for QueueCanary {
    type Lock = <QueueRecipe as Recipe>::Lock;
    fn name(&self) -> String {
        self.0.name().into()
    }
    fn lock(
        &self,
        client: SimClient,
        role: zklock_recipe::history::LockRole,
        path: &str,
    ) -> Self::Lock {
        QueueRecipe::default().lock(client, role, path)
    }
    /// The item handed over lost shows only in [`crate::lost_before_granted_scenario`];
    /// the others in the default.
    fn scenario(&self) -> Scenario {
        match self.0 {
            QueueBug::HandsOverLostItem => crate::lost_before_granted_scenario(),
            _ => Scenario::default(),
        }
    }
    fn work_queue(&self) -> Option<WorkQueue> {
        let paths = QueuePaths::default();
        let bug = self.0;
        let p = paths.clone();
        let consumer: MakeConsumer = Arc::new(move |c| bug.consumer(c, &p));
        let p = paths.clone();
        let producer: MakeProducer = Arc::new(move |c| bug.producer(c, &p));
        Some(WorkQueue {
            paths,
            producers: QueueRecipe::default().producers,
            consumer,
            producer,
        })
    }
}

/// [`zklock_recipe::work_queue::Consumer`] with one bug.
struct BuggyConsumer<C> {
    client: C,
    paths: QueuePaths,
    take_lock: Lock<C>,
    bug: QueueBug,
    policy: RetryPolicy,
}

impl<C: Coordination + Clone + Send + Sync + 'static> BuggyConsumer<C> {
    async fn take(&self) -> Result<Taken, QueueError> {
        loop {
            let guard = self.take_lock.acquire().await?;
            let found = self.find().await;
            let taken = match found {
                Ok(Some(claim)) if self.bug == QueueBug::HandsOverLostItem => {
                    // BUG: the release can outlast the item lock's trust, unseen.
                    let _ = guard.release().await;
                    claim.into_taken()
                }
                Ok(Some(claim)) => {
                    let (claim, _) = hand_over(&self.client, claim, guard.release())
                        .await
                        .map_err(lost_before_taken)?;
                    claim.into_taken()
                }
                Ok(None) => {
                    let _ = guard.release().await;
                    if let Some(over) = session_over(&self.client) {
                        return Err(over.into());
                    }
                    continue;
                }
                Err(e) => {
                    let _ = guard.release().await;
                    return Err(e);
                }
            };
            if self.bug == QueueBug::DeleteBeforeDone {
                // BUG: the item is gone before it is processed.
                delete_item(&self.client, &self.paths, &self.policy, &taken).await?;
            }
            return Ok(taken);
        }
    }

    async fn find(&self) -> Result<Option<Claim<'_, C>>, QueueError> {
        let c = &self.client;
        let mode = if self.bug == QueueBug::PersistentLock {
            CreateMode::Persistent // BUG: outlives its session
        } else {
            CreateMode::Ephemeral
        };
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
                let Some(claim) = lock_item(c, &self.paths, &self.policy, &item, mode).await?
                else {
                    oldest_locked.get_or_insert(item);
                    continue;
                };
                // BUG (NoExistsCheck): the item may have been completed since the listing.
                if self.bug == QueueBug::NoExistsCheck
                    || item_exists(c, &self.paths, &self.policy, &item).await?
                {
                    return Ok(Some(claim));
                }
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
                    (None, _) => continue,
                }
            }
            if events.try_next().is_some() {
                return Ok(None);
            }
            wait_change(watches, &mut events).await;
            if c.session_state() != SessionState::Connected {
                return Ok(None);
            }
        }
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> ConsumerUnderTest for BuggyConsumer<C> {
    fn take(&self) -> BoxFuture<'_, Result<Taken, String>> {
        Box::pin(async move { BuggyConsumer::take(self).await.map_err(|e| e.to_string()) })
    }
    fn lost(&self) -> BoxFuture<'_, String> {
        Box::pin(lost(&self.client))
    }
    fn complete(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let c = &self.client;
            let done = match self.bug {
                QueueBug::DeleteBeforeDone => release_item(c, &self.policy, &taken).await,
                QueueBug::ReleaseBeforeDelete => {
                    // BUG: between the two deletes the item is queued and unlocked.
                    match release_item(c, &self.policy, &taken).await {
                        Ok(()) => delete_item(c, &self.paths, &self.policy, &taken).await,
                        Err(e) => Err(e),
                    }
                }
                _ => complete_item(c, &self.paths, &self.policy, &taken).await,
            };
            done.map_err(|e| e.to_string())
        })
    }
    fn abandon(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            release_item(&self.client, &self.policy, &taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// [`Producer`] without its recovery: it names each item with a guid as zklock's does, but
/// after a ConnectionLoss sends the create again instead of listing the queue for it.
struct BlindProducer<C> {
    client: C,
    paths: QueuePaths,
    policy: RetryPolicy,
    produced: AtomicU64,
}

impl<C: Coordination + Send + Sync + 'static> BlindProducer<C> {
    async fn produce(&self) -> Result<String, QueueError> {
        let c = &self.client;
        let n = self.produced.fetch_add(1, Ordering::Relaxed);
        let guid = format!("{:x}x{n}", c.session_id().0 as u64);
        let path = format!("{}/{ITEM_PREFIX}{guid}-", self.paths.queue);
        let mut attempt = 1u32;
        let mut parents_made = false;
        loop {
            if let Some(over) = session_over(c) {
                return Err(over.into());
            }
            match c.create(&path, b"", CreateMode::PersistentSequential).await {
                Ok((created, _)) => return Ok(basename(&created).to_owned()),
                Err(zklock_recipe::ZkError::NoNode) if !parents_made => {
                    ensure_path(c, &self.policy, &self.paths.queue).await?;
                    parents_made = true;
                }
                // BUG: the lost create may have made the item; this one makes a second.
                Err(e) if e.is_connection_loss() => {
                    c.sleep(self.policy.backoff(attempt)).await;
                    attempt = attempt.saturating_add(1);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl<C: Coordination + Send + Sync + 'static> ProducerUnderTest for BlindProducer<C> {
    fn produce(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            BlindProducer::produce(self)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
