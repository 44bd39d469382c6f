//! Clearing a subtree between runs that share one server (the fault-point search): each
//! run then starts from the same empty tree, so its requests line up with the last's.

use crate::client::ZkClient;
use crate::error::RealError;
use std::time::Duration;
use zklock_recipe::{Coordination, ZkError};

/// Deletes `root` and everything under it, through a session of its own on
/// `connect_string`. A node another session deletes meanwhile is no error; a node that
/// keeps coming back (a live session's ephemeral) is, once `timeout` passed.
pub async fn delete_tree(
    connect_string: &str,
    root: &str,
    timeout: Duration,
) -> Result<(), RealError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let ms = timeout.as_millis() as u64;
    let client = ZkClient::connect(connect_string, TREE_SESSION_MS, ms).await?;
    let failed = |path: &str, error: ZkError| RealError::Tree {
        path: path.to_owned(),
        error,
    };
    let result = async {
        // Depth first, children before their parent: a stack of paths to empty.
        let mut stack = vec![root.to_owned()];
        while let Some(path) = stack.last().cloned() {
            if tokio::time::Instant::now() >= deadline {
                return Err(failed(&path, ZkError::OperationTimeout));
            }
            match client.get_children(&path).await {
                Ok(children) if !children.is_empty() => {
                    for child in children.iter() {
                        stack.push(format!("{}/{child}", path.trim_end_matches('/')));
                    }
                    continue;
                }
                Ok(_) | Err(ZkError::NoNode) => {}
                Err(e) => return Err(failed(&path, e)),
            }
            match client.delete(&path, None).await {
                Ok(()) | Err(ZkError::NoNode) => {
                    stack.pop();
                }
                // A child came meanwhile: list it again.
                Err(ZkError::NotEmpty) => {}
                Err(e) => return Err(failed(&path, e)),
            }
        }
        Ok(())
    }
    .await;
    let _ = client.close().await;
    result
}

/// The session timeout of the clearing session, in ms.
const TREE_SESSION_MS: u64 = 4_000;
