//! The producer: adds items as persistent-sequential children of the queue directory.

use super::QueueError;
use super::items::{ITEM_PREFIX, QueuePaths};
use crate::lock::ensure_path;
use crate::lock::retry::{RetryPolicy, retry_while_session, session_over};
use crate::path::basename;
use crate::{Coordination, CreateMode, ZkError};
use std::sync::atomic::{AtomicU64, Ordering};

/// Adds items to a queue. A sequential create is not idempotent, so each item's name
/// carries a guid (`item-<guid>-`) and, after a ConnectionLoss, the producer lists the
/// queue and adopts the item bearing it rather than creating a second one.
#[derive(Debug)]
pub struct Producer<C> {
    client: C,
    paths: QueuePaths,
    policy: RetryPolicy,
    produced: AtomicU64,
}

impl<C: Coordination> Producer<C> {
    /// A producer on `paths`; fails on an invalid path.
    pub fn new(client: C, paths: &QueuePaths) -> Result<Producer<C>, QueueError> {
        paths.validate()?;
        Ok(Producer {
            client,
            paths: paths.clone(),
            policy: RetryPolicy::default(),
            produced: AtomicU64::new(0),
        })
    }

    /// Adds an item holding `data`, creating the queue directory if it is missing;
    /// returns the item's name. Retries through connection loss while the session lives.
    pub async fn produce(&self, data: &[u8]) -> Result<String, QueueError> {
        let c = &self.client;
        let n = self.produced.fetch_add(1, Ordering::Relaxed);
        // The session makes the guid unique across producers, the count across items.
        let guid = format!("{:x}x{n}", c.session_id().0 as u64);
        let prefix = format!("{ITEM_PREFIX}{guid}-");
        let path = format!("{}/{prefix}", self.paths.queue);
        let mut attempt = 1u32;
        let mut parents_made = false;
        loop {
            if let Some(over) = session_over(c) {
                return Err(over.into());
            }
            match c
                .create(&path, data, CreateMode::PersistentSequential)
                .await
            {
                Ok((created, _)) => return Ok(basename(&created).to_owned()),
                Err(ZkError::NoNode) if !parents_made => {
                    ensure_path(c, &self.policy, &self.paths.queue).await?;
                    parents_made = true;
                }
                Err(e) if e.is_connection_loss() => {
                    c.sleep(self.policy.backoff(attempt)).await;
                    attempt = attempt.saturating_add(1);
                    let listed =
                        retry_while_session(c, &self.policy, || c.get_children(&self.paths.queue))
                            .await;
                    match listed {
                        Ok(children) => {
                            if let Some(ours) = children.iter().find(|n| n.starts_with(&prefix)) {
                                return Ok(ours.to_owned());
                            }
                        }
                        Err(ZkError::NoNode) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
