//! The nodes a run left: their lives as the proxies saw them, and the directories' children read at the end.

use super::*;

/// Each ephemeral node the clients' proxies saw created, with its delete (by any client)
/// and the last time the server answered its session, on `recorder`'s clock.
pub(super) fn node_lives(
    links: &[Arc<ClientLink>],
    recorder: &Recorder,
    leak_bound_ms: u64,
) -> NodeLives {
    let mut answered: std::collections::HashMap<i64, Duration> = std::collections::HashMap::new();
    let mut changes = Vec::new();
    for (client, link) in links.iter().enumerate() {
        for (session, at) in link.sessions_answered() {
            let last = answered.entry(session).or_default();
            *last = (*last).max(at);
        }
        changes.extend(
            link.node_changes()
                .0
                .into_iter()
                .map(|c| (client as u32, c)),
        );
    }
    changes.sort_by_key(|(_, c)| c.at);
    let mut nodes: Vec<NodeLife> = Vec::new();
    for (client, change) in changes {
        let at_us = recorder.time_us_of(change.at);
        if change.deleted {
            // The node of that path standing then: the latest made and not yet deleted.
            if let Some(node) = nodes
                .iter_mut()
                .rev()
                .find(|n| n.path == change.path && n.deleted_us.is_none())
            {
                node.deleted_us = Some(at_us);
            }
        } else {
            let session_answered_us = answered
                .get(&change.session)
                .map_or(at_us, |&t| recorder.time_us_of(t));
            nodes.push(NodeLife {
                path: change.path,
                client,
                session: SessionId(change.session),
                created_us: at_us,
                deleted_us: None,
                session_answered_us,
            });
        }
    }
    NodeLives {
        nodes,
        leak_bound_ms,
    }
}

/// The lock directory's children, read until none is left or `settle` has passed: nodes
/// of sessions that are ending vanish meanwhile, a live session's orphan stays. Connection
/// loss (a leader election) is retried.
pub async fn settled_children<C: Coordination>(
    observer: &C,
    lock_path: &str,
    settle: Duration,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + settle;
    loop {
        let read = observer.get_children(lock_path).await;
        let children = match read {
            Ok(children) => children.to_vec(),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
                continue;
            }
            // The observer's session is gone: report what cannot be read as nothing.
            Err(_) => Vec::new(),
        };
        if children.is_empty() || tokio::time::Instant::now() >= deadline {
            let mut children = children;
            children.sort();
            return children;
        }
        tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
    }
}

/// Every directory the clients created a node in (the parent of each create their
/// proxies saw), but those of `read`, their ancestors and the root, in order.
pub(super) fn touched_dirs(
    requests: &[(Vec<crate::plan::SeenRequest>, u64)],
    read: &[String],
) -> Vec<String> {
    let creates = crate::plan::op::by_name("create").unwrap_or(&[]);
    let dirs: std::collections::BTreeSet<String> = requests
        .iter()
        .flat_map(|(seen, _)| seen)
        .filter(|r| creates.contains(&r.op))
        .filter_map(|r| r.path.rfind('/').map(|slash| r.path[..slash].to_owned()))
        .filter(|dir| !dir.is_empty() && !read.contains(dir))
        // The lock directories' ancestors hold the run's own directories (and, on
        // someone else's servers, other runs'), not the library's nodes.
        .filter(|dir| !read.iter().any(|r| r.starts_with(&format!("{dir}/"))))
        .collect();
    dirs.into_iter().collect()
}

/// The ephemeral children of `dir`, read until none is left or `settle` has passed (as
/// [`settled_children`]); persistent ones (a library's directories) are not counted.
pub(super) async fn settled_ephemerals(
    observer: &ZkClient,
    dir: &str,
    settle: Duration,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + settle;
    loop {
        let mut left = Vec::new();
        for name in settled_children(observer, dir, Duration::ZERO).await {
            let stat = observer.exists(&format!("{dir}/{name}")).await;
            if let Ok(Some(stat)) = stat
                && stat.ephemeral_owner != 0
            {
                left.push(name);
            }
        }
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
    }
}

/// How often the final children are re-read while sessions expire.
pub(super) const SETTLE_POLL_MS: u64 = 200;
