//! Background cleanup for [`Coordination::cleanup_detached`]: what a recipe hands over when
//! it cannot await (a dropped acquire, a guard dropped without release), done as the client
//! library's own work.
//!
//! The caller spawns the work on a task of its own, so its first request goes out after
//! every request the client issued before the call. Connection loss is retried with
//! backoff (through the reconnect); an item ends when the node is gone, the session is over
//! (the server deletes its ephemerals anyway), or on an error that repeating would not
//! change.
//!
//! Two clients run it: [`ZkClient`](crate::ZkClient), on its raw zookeeper-client handle
//! (the task cannot borrow the `ZkClient`), and
//! [`RecordingClient`](crate::recording::RecordingClient), through its own `Coordination`
//! so the requests are recorded. One algorithm serves both through [`CleanupOps`].

use crate::convert::{self, zk_error};
use std::future::Future;
use std::time::Duration;
use zklock_recipe::lock::RetryPolicy;
use zklock_recipe::path::join;
use zklock_recipe::{Coordination, DetachedCleanup, SessionId, ZkError};
use zookeeper_client as zk;

/// The requests cleanup needs.
trait CleanupOps: Sync {
    fn delete(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send;
    fn children(&self, dir: &str) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send;
    /// The node's ephemeral owner, `None` if it does not exist.
    fn owner(&self, path: &str) -> impl Future<Output = Result<Option<i64>, ZkError>> + Send;
    fn session(&self) -> SessionId;
    fn pause(&self, duration: Duration) -> impl Future<Output = ()> + Send;
}

impl<C: Coordination> CleanupOps for C {
    fn delete(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send {
        Coordination::delete(self, path, None)
    }
    fn children(&self, dir: &str) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send {
        self.get_children(dir)
    }
    async fn owner(&self, path: &str) -> Result<Option<i64>, ZkError> {
        Ok(self.exists(path).await?.map(|s| s.ephemeral_owner))
    }
    fn session(&self) -> SessionId {
        self.session_id()
    }
    fn pause(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        self.sleep(duration)
    }
}

/// A zookeeper-client handle of one session.
struct Raw {
    client: zk::Client,
    session: SessionId,
}

impl CleanupOps for Raw {
    async fn delete(&self, path: &str) -> Result<(), ZkError> {
        self.client.delete(path, None).await.map_err(zk_error)
    }
    async fn children(&self, dir: &str) -> Result<Vec<String>, ZkError> {
        self.client.list_children(dir).await.map_err(zk_error)
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

/// Performs `what` through `client` (spawn it; see the module docs).
pub(crate) async fn run_detached<C: Coordination>(client: &C, what: DetachedCleanup) {
    run(client, what).await;
}

/// Performs `what` on `client`'s raw handle, whose session is `session`.
pub(crate) async fn run_detached_raw(
    client: zk::Client,
    session: SessionId,
    what: DetachedCleanup,
) {
    run(&Raw { client, session }, what).await;
}

/// Retries `op` through connection loss; `None` once the session is over or on another
/// error (the item ends either way).
async fn answered<O, T, F, Fut>(ops: &O, mut op: F) -> Option<Result<T, ZkError>>
where
    O: CleanupOps,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let policy = RetryPolicy::default();
    let mut attempt = 1;
    loop {
        match op().await {
            Err(e) if e.is_connection_loss() => {
                ops.pause(policy.backoff(attempt)).await;
                attempt = attempt.saturating_add(1);
            }
            Err(e) if e.is_session_terminal() => return None,
            outcome => return Some(outcome),
        }
    }
}

async fn run<O: CleanupOps>(ops: &O, what: DetachedCleanup) {
    match what {
        // Done on Ok, NoNode, the session's end, or any other error alike.
        DetachedCleanup::Node(path) => {
            answered(ops, || ops.delete(&path)).await;
        }
        DetachedCleanup::OwnedMatching { dir, fragment } => {
            let Some(Ok(mut children)) = answered(ops, || ops.children(&dir)).await else {
                return;
            };
            // A fixed order, so a history shows the same requests for the same children.
            children.sort();
            for name in children.iter().filter(|c| c.contains(fragment.as_str())) {
                let path = join(&dir, name);
                match answered(ops, || ops.owner(&path)).await {
                    Some(Ok(Some(owner))) if owner == ops.session().0 => {
                        answered(ops, || ops.delete(&path)).await;
                    }
                    Some(Ok(_) | Err(ZkError::NoNode)) => {}
                    _ => return,
                }
            }
        }
    }
}
