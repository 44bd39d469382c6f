//! The lock object: one contender at a time for one lock directory.

use super::LockOptions;
use super::acquire::Attempt;
use super::error::LockError;
use super::guard::{FencingToken, LockGuard};
use super::naming::{LockNode, NodeKind, contenders, node_prefix};
use super::retry::retry;
use super::state::{DetachOnDrop, SharedState};
use crate::path::{join, validate_path};
use crate::{Coordination, DetachedCleanup, ZkError};
use futures_util::future::{self, Either};
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

/// A lock on one ZooKeeper directory: exclusive ([`Lock::new`]) or one side of a
/// read/write lock ([`RwLock`](super::RwLock)).
///
/// A lock object has at most one contender at a time (a pending acquire or a live
/// guard); a second acquire meanwhile fails with [`LockError::InUse`] instead of queueing
/// behind itself. Use one lock object per task.
#[derive(Debug)]
pub struct Lock<C> {
    client: C,
    dir: String,
    kind: NodeKind,
    options: LockOptions,
    shared: SharedState,
}

impl<C: Coordination + Clone> Lock<C> {
    /// An exclusive lock on `path`. Refuses an invalid path or guid before any request.
    pub fn new(client: C, path: &str, options: LockOptions) -> Result<Lock<C>, LockError> {
        Lock::with_kind(client, path, NodeKind::Exclusive, options)
    }

    /// A lock whose contenders are of `kind` (exclusive, read or write).
    pub fn with_kind(
        client: C,
        path: &str,
        kind: NodeKind,
        options: LockOptions,
    ) -> Result<Lock<C>, LockError> {
        validate_path(path, false).map_err(|e| LockError::InvalidPath {
            path: path.to_owned(),
            reason: bad_arguments(e),
        })?;
        if let Some(guid) = &options.guid {
            check_guid(path, guid, kind)?;
        }
        // Numbered only when the default guid needs it: a given base is used as it is.
        let object = match &options.guid {
            Some(_) => 0,
            None => client.next_object_number(),
        };
        Ok(Lock {
            client,
            dir: path.to_owned(),
            kind,
            options,
            shared: SharedState::of_object(object),
        })
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        &self.dir
    }

    /// The kind of contender this object creates.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }

    pub fn client(&self) -> &C {
        &self.client
    }

    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    fn attempt(&self) -> Attempt<'_, C> {
        Attempt {
            client: &self.client,
            dir: &self.dir,
            kind: self.kind,
            options: &self.options,
            shared: &self.shared,
        }
    }

    /// Runs one attempt (after deleting earlier orphans) until it ends or `stop` fires with
    /// the error to report. Anything short of a guard leaves no node: the attempt records
    /// it and it is deleted here before returning. If this call is itself dropped, the
    /// node goes to the runner's background cleanup instead.
    /// `stop: None` never stops: the attempt is awaited directly, without a `select`
    /// layer polled on every wake.
    async fn run<S>(&self, wait: bool, stop: Option<S>) -> Result<Option<LockGuard<C>>, LockError>
    where
        S: Future<Output = LockError>,
    {
        // Declared first so that, if this call is dropped, it drops after the attempt has
        // recorded its node.
        let detach = DetachOnDrop::new(&self.client, &self.shared);
        let outcome = {
            let attempt = pin!(async {
                // Usually nothing is recorded: checked here, without the cleanup's future.
                if self.shared.has_orphans() {
                    self.cleanup().await?;
                }
                self.attempt().run(wait).await
            });
            match stop {
                None => attempt.await,
                Some(stop) => match future::select(attempt, pin!(stop)).await {
                    Either::Left((outcome, _)) => outcome,
                    Either::Right((stopped, _)) => Err(stopped),
                },
            }
            // The attempt is dropped here, recording its node.
        };
        let result = match outcome {
            Ok(Some(guard)) => Ok(Some(guard)),
            Ok(None) => self.cleanup().await.map(|()| None),
            Err(e) => {
                // Report the reason we stopped; an undeleted node stays recorded.
                let _ = self.cleanup().await;
                Err(e)
            }
        };
        detach.disarm();
        result
    }

    /// Waits for the lock as long as it takes (or until the session ends).
    pub async fn acquire(&self) -> Result<LockGuard<C>, LockError> {
        let guard = self.run(true, NEVER).await?;
        Ok(guard.expect("a waiting attempt returns a guard or an error"))
    }

    /// Takes the lock only if nobody blocks us now. `None` leaves no node behind.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard<C>>, LockError> {
        self.run(false, NEVER).await
    }

    /// Waits at most `timeout` (of the client's clock). On timeout our node is deleted,
    /// retried through connection loss, before `Timeout` is returned, so the call can
    /// take longer than `timeout` while the connection is down.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard<C>, LockError> {
        let stop = async {
            self.client.sleep(timeout).await;
            LockError::Timeout { waited: timeout }
        };
        let guard = self.run(true, Some(stop)).await?;
        Ok(guard.expect("a waiting attempt returns a guard or an error"))
    }

    /// Waits until acquired or until `cancel` completes; then our node is deleted before
    /// `Cancelled` is returned. Dropping an `acquire` future also leaves no node, but
    /// its deletion completes later, in the runner's background
    /// ([`Coordination::cleanup_detached`]); this call returns only once it is done.
    pub async fn acquire_until<F>(&self, cancel: F) -> Result<LockGuard<C>, LockError>
    where
        F: Future<Output = ()>,
    {
        let stop = async {
            cancel.await;
            LockError::Cancelled
        };
        let guard = self.run(true, Some(stop)).await?;
        Ok(guard.expect("a waiting attempt returns a guard or an error"))
    }

    /// Acquires, runs `work` with the fencing token, and releases. If the lock is lost
    /// first, `work` is dropped at its next await point and `Lost` is returned: the work
    /// must tolerate stopping partway (it no longer has exclusive access).
    pub async fn with_lock<T, F, Fut>(&self, work: F) -> Result<T, LockError>
    where
        F: FnOnce(FencingToken) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.acquire().await?;
        let outcome = {
            let work = pin!(work(guard.fencing_token()));
            match future::select(work, pin!(guard.lost())).await {
                Either::Left((value, _)) => Ok(value),
                Either::Right((reason, _)) => Err(LockError::Lost(reason)),
            }
        };
        guard.release().await?;
        outcome
    }

    /// The contenders in lock order (the first holds, or the first readers do),
    /// recognising Curator- and Kazoo-style names. Empty if the directory does not exist.
    pub async fn participants(&self) -> Result<Vec<LockNode>, LockError> {
        self.cleanup().await?;
        let client = &self.client;
        match retry(client, &self.options.retry, || {
            client.get_children(&self.dir)
        })
        .await
        {
            Ok(children) => Ok(contenders(&children)),
            Err(ZkError::NoNode) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes nodes an earlier call of this lock object failed to delete (with an error
    /// that retrying through connection loss cannot fix), each retried through connection
    /// loss until it or the session is gone. Every call does this first. Dropped acquires
    /// and guards do not need it: their nodes go to the runner's background cleanup.
    pub async fn cleanup(&self) -> Result<(), LockError> {
        Ok(self
            .shared
            .cleanup(&self.client, &self.options.retry)
            .await?)
    }

    /// Asks the holder of `node_path` (a contender's node, as [`participants`](Lock::participants)
    /// lists it) to give up, with this lock's retry policy: see [`request_revoke`]. Returns
    /// false if the node no longer exists.
    ///
    /// [`request_revoke`]: super::request_revoke
    pub async fn revoke(&self, node_path: &str) -> Result<bool, LockError> {
        super::request_revoke(&self.client, &self.options.retry, node_path).await
    }

    /// Nodes recorded for deletion by the next call (see [`cleanup`](Lock::cleanup)).
    pub fn pending_cleanup(&self) -> Vec<DetachedCleanup> {
        self.shared.orphans()
    }
}

/// No stop: wait as long as it takes.
const NEVER: Option<future::Pending<LockError>> = None;

fn bad_arguments(e: ZkError) -> String {
    match e {
        ZkError::BadArguments(why) => why,
        e => e.to_string(),
    }
}

/// A caller's guid becomes part of node names: it must keep them valid and parseable.
fn check_guid(dir: &str, guid: &str, kind: NodeKind) -> Result<(), LockError> {
    let bad = |reason: &str| {
        Err(LockError::InvalidGuid {
            guid: guid.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if guid.is_empty() {
        return bad("it is empty");
    }
    if guid.contains('/') {
        return bad("it contains '/'");
    }
    match validate_path(&join(dir, &node_prefix(guid, kind)), true) {
        Ok(()) => Ok(()),
        Err(e) => bad(&bad_arguments(e)),
    }
}
