//! Background cleanup for [`Coordination::cleanup_detached`]: what a recipe hands over when
//! it cannot await (a dropped acquire, a guard dropped or released in the background), done
//! as the client library's own work.
//!
//! [`start`] sends the item's first request before it returns, as zookeeper-client sends a
//! request when its method is called, so that request goes out ahead of any request the
//! client issues after the call; a spawned task then awaits the reply and does the rest.
//! Connection loss is retried with backoff (through the reconnect); an item ends when the
//! node is gone, the session is over (the server deletes its ephemerals anyway), or on an
//! error that repeating would not change.
//!
//! Two clients run it: [`ZkClient`](crate::ZkClient), on its raw zookeeper-client handle
//! (the task cannot borrow the `ZkClient`), and
//! [`RecordingClient`](crate::recording::RecordingClient), through its `ZkClient` with
//! every request recorded. One algorithm serves both through [`CleanupOps`].
//!
//! [`Coordination::cleanup_detached`]: zklock_recipe::Coordination::cleanup_detached

use crate::convert::{self, zk_error};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use zklock_recipe::lock::RetryPolicy;
use zklock_recipe::path::join;
use zklock_recipe::{DetachedCleanup, SessionId, ZkError};
use zookeeper_client as zk;

/// The requests cleanup needs, on a handle the cleanup task owns.
pub(crate) trait CleanupOps: Send + Sync + 'static {
    /// Sends a delete of `path` (any version) before returning; the future awaits the
    /// reply.
    fn delete(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send + use<Self>;
    /// Sends a listing of `dir` before returning; the future awaits the reply.
    fn children(
        &self,
        dir: &str,
    ) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send + use<Self>;
    /// The node's ephemeral owner, `None` if it does not exist.
    fn owner(&self, path: &str) -> impl Future<Output = Result<Option<i64>, ZkError>> + Send;
    fn session(&self) -> SessionId;
    fn pause(&self, duration: Duration) -> impl Future<Output = ()> + Send;
}

/// A zookeeper-client handle of one session.
pub(crate) struct Raw {
    pub(crate) client: Arc<zk::Client>,
    pub(crate) session: SessionId,
}

impl CleanupOps for Raw {
    fn delete(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send + use<> {
        // zookeeper-client sends here; its future only awaits the reply.
        let reply = self.client.delete(path, None);
        async move { reply.await.map_err(zk_error) }
    }
    fn children(
        &self,
        dir: &str,
    ) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send + use<> {
        let reply = self.client.get_children(dir);
        async move { reply.await.map(|(children, _)| children).map_err(zk_error) }
    }
    async fn owner(&self, path: &str) -> Result<Option<i64>, ZkError> {
        let stat = self.client.check_stat(path).await.map_err(zk_error)?;
        Ok(stat.map(|s| convert::stat(&s).ephemeral_owner))
    }
    fn session(&self) -> SessionId {
        self.session
    }
    fn pause(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }
}

/// Where the rest of a cleanup runs: on a tokio runtime's workers, or on the thread of
/// [`reactor::block_on`](crate::reactor::block_on) its client was connected in, when the
/// cleanup starts on that thread.
#[derive(Clone, Debug)]
pub(crate) struct CleanupHome {
    runtime: tokio::runtime::Handle,
    on_reactor: bool,
}

impl CleanupHome {
    /// For a client connected by the caller: the caller's runtime, and the reactor's
    /// thread if the caller is inside `reactor::block_on`. Must run inside a runtime.
    pub(crate) fn here() -> CleanupHome {
        CleanupHome {
            runtime: tokio::runtime::Handle::current(),
            on_reactor: crate::reactor::inside(),
        }
    }

    /// The caller's runtime's workers only. Must run inside a runtime.
    pub(crate) fn workers() -> CleanupHome {
        CleanupHome {
            on_reactor: false,
            ..CleanupHome::here()
        }
    }
}

/// Starts `what` on `ops`: sends its first request now, then spawns the rest where `home`
/// says (see the module docs). Never blocks; callable from `Drop`, inside a task or not.
pub(crate) fn start<O: CleanupOps>(home: &CleanupHome, ops: O, what: DetachedCleanup) {
    match what {
        DetachedCleanup::Node(path) => {
            let sent = ops.delete(&path);
            spawn(home, async move {
                // Done on Ok, NoNode, the session's end, or any other error alike.
                answered(&ops, sent, || ops.delete(&path)).await;
            });
        }
        DetachedCleanup::OwnedMatching { dir, fragment } => {
            let sent = ops.children(&dir);
            spawn(home, async move {
                delete_owned_matching(&ops, sent, &dir, &fragment).await;
            });
        }
    }
}

fn spawn(home: &CleanupHome, task: impl Future<Output = ()> + Send + 'static) {
    if home.on_reactor && crate::reactor::inside() {
        drop(tokio::task::spawn_local(task));
    } else {
        drop(home.runtime.spawn(task));
    }
}

/// Awaits `sent`, then retries with `again` through connection loss; `None` once the
/// session is over or on another error (the item ends either way).
async fn answered<O, T, Again>(
    ops: &O,
    sent: impl Future<Output = Result<T, ZkError>>,
    mut again: impl FnMut() -> Again,
) -> Option<Result<T, ZkError>>
where
    O: CleanupOps,
    Again: Future<Output = Result<T, ZkError>>,
{
    let policy = RetryPolicy::default();
    let mut outcome = sent.await;
    let mut attempt = 1;
    loop {
        match outcome {
            Err(e) if e.is_connection_loss() => {
                ops.pause(policy.backoff(attempt)).await;
                attempt = attempt.saturating_add(1);
                outcome = again().await;
            }
            Err(e) if e.is_session_terminal() => return None,
            outcome => return Some(outcome),
        }
    }
}

/// Deletes the children of `dir` whose names contain `fragment` and that this session
/// owns; `listed` is the listing already sent.
async fn delete_owned_matching<O: CleanupOps>(
    ops: &O,
    listed: impl Future<Output = Result<Vec<String>, ZkError>>,
    dir: &str,
    fragment: &str,
) {
    let Some(Ok(mut children)) = answered(ops, listed, || ops.children(dir)).await else {
        return;
    };
    // A fixed order, so a history shows the same requests for the same children.
    children.sort();
    for name in children.iter().filter(|c| c.contains(fragment)) {
        let path = join(dir, name);
        match answered(ops, ops.owner(&path), || ops.owner(&path)).await {
            Some(Ok(Some(owner))) if owner == ops.session().0 => {
                answered(ops, ops.delete(&path), || ops.delete(&path)).await;
            }
            Some(Ok(_) | Err(ZkError::NoNode)) => {}
            _ => return,
        }
    }
}
