//! Creating our contender node, surviving lost create responses.
//!
//! A sequential create is not idempotent: if the reply is lost (`ConnectionLoss`) the node
//! may exist, and a blind retry makes a second one that nobody deletes, blocking the lock
//! until our session ends. So, as Curator's protected mode does, the name carries a guid
//! and, after connection loss, we list the children and adopt the node bearing our guid,
//! but only if its `ephemeral_owner` is our session (a node of an older session of ours,
//! or of a client reusing the guid, must not be mistaken for ours).

use super::error::LockError;
use super::naming::{LockNode, NamingStyle, NodeKind, parse_sequence, push_node_prefix};
use super::retry::{RetryPolicy, delete_until_gone, retry, session_over};
use crate::path::{basename, join, parent};
use crate::{Children, Coordination, CreateMode, ZkError};
use futures_util::future::poll_fn;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;

/// Our contender node, as created or adopted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnNode {
    /// Full path.
    pub path: String,
    /// Last component, with the sequential suffix.
    pub name: String,
    /// ZooKeeper's counter, negative once it wrapped (see
    /// [`parse_sequence`](super::naming::parse_sequence)).
    pub sequence: i32,
    /// zxid of the create: the fencing token (see [`FencingToken`](super::FencingToken)).
    pub czxid: i64,
}

impl OwnNode {
    /// Builds it from the path a create returned and the node's czxid.
    pub fn new(path: String, czxid: i64) -> Result<OwnNode, LockError> {
        let name = basename(&path).to_owned();
        let sequence = parse_sequence(&name).ok_or_else(|| {
            LockError::Zk(ZkError::Other {
                code: 0,
                message: format!("created node {path} has no 10-digit sequential suffix"),
            })
        })?;
        Ok(OwnNode {
            path,
            name,
            sequence,
            czxid,
        })
    }
}

/// Who we are in a lock directory.
#[derive(Clone, Copy, Debug)]
pub struct ContenderSpec<'a> {
    /// The lock directory.
    pub dir: &'a str,
    /// This attempt's guid (see [`LockOptions::guid`](super::LockOptions::guid)).
    pub guid: &'a str,
    pub kind: NodeKind,
    /// Data stored in the node (an identifier, as Kazoo's contenders()).
    pub data: &'a [u8],
    /// Create missing persistent parents of `dir`, as Curator does.
    pub create_parents: bool,
    pub retry: &'a RetryPolicy,
}

/// Creates the persistent node `path` and its missing ancestors. `NodeExists` is fine.
pub async fn ensure_path<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    path: &str,
) -> Result<(), ZkError> {
    let mut prefixes = Vec::new();
    let mut p = path;
    while let Some(up) = parent(p) {
        prefixes.push(p);
        p = up;
    }
    for p in prefixes.into_iter().rev() {
        match retry(client, policy, || {
            client.create(p, &[], CreateMode::Persistent)
        })
        .await
        {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Our nodes in `dir`: names with our guid and kind, owned by our session, lowest first.
pub async fn find_own_nodes<C: Coordination>(
    client: &C,
    spec: &ContenderSpec<'_>,
) -> Result<Vec<OwnNode>, ZkError> {
    let children = match retry(client, spec.retry, || client.get_children(spec.dir)).await {
        Err(ZkError::NoNode) => return Ok(Vec::new()),
        r => r?,
    };
    let mut mine: Vec<LockNode> = children
        .iter()
        .filter_map(LockNode::parse)
        .filter(|n| {
            n.style == NamingStyle::Curator && n.kind == spec.kind && n.guid() == Some(spec.guid)
        })
        .collect();
    super::naming::sort_by_sequence(&mut mine);
    let session = client.session_id().0;
    let mut own = Vec::new();
    for n in mine {
        let path = join(spec.dir, &n.name);
        if let Some(stat) = retry(client, spec.retry, || client.exists(&path)).await?
            && stat.ephemeral_owner == session
        {
            own.push(OwnNode {
                path,
                name: n.name,
                sequence: n.sequence,
                czxid: stat.czxid,
            });
        }
    }
    Ok(own)
}

/// Creates our ephemeral-sequential node `<dir>/_c_<guid>-<marker>`, retrying connection
/// loss (bounded by `spec.retry`) through guid recovery: after each loss, a node of ours
/// found in the directory is adopted instead of creating another. Should several be found
/// (several lost replies), the lowest is adopted and the others deleted.
pub async fn create_contender<C: Coordination>(
    client: &C,
    spec: &ContenderSpec<'_>,
) -> Result<OwnNode, LockError> {
    create_loop(client, spec, false, &create_path(spec))
        .await
        .map(|(own, _)| own)
}

/// [`create_contender`], with the directory's listing requested right behind each create
/// without waiting for its reply. A session's requests are applied in order, so a listing
/// sent after a successful create contains our node: the first listing of the recipe
/// costs no round trip of its own. `None` when the create succeeded but its listing did
/// not (the caller lists again) or when the node was adopted after a lost reply.
pub async fn create_contender_listed<C: Coordination>(
    client: &C,
    spec: &ContenderSpec<'_>,
) -> Result<(OwnNode, Option<Children>), LockError> {
    create_loop(client, spec, true, &create_path(spec)).await
}

/// [`create_contender_listed`] for a caller that built the create's path
/// `<dir>/<node_prefix>` itself (the acquire loop, with the guid in the same buffer).
pub(crate) async fn create_listed_at<C: Coordination>(
    client: &C,
    spec: &ContenderSpec<'_>,
    prefix: &str,
) -> Result<(OwnNode, Option<Children>), LockError> {
    create_loop(client, spec, true, prefix).await
}

/// `<dir>/<node_prefix>`, built in one buffer.
fn create_path(spec: &ContenderSpec<'_>) -> String {
    let dir = if spec.dir == "/" { "" } else { spec.dir };
    let mut p = String::with_capacity(dir.len() + 5 + spec.guid.len() + 6);
    p.push_str(dir);
    p.push('/');
    push_node_prefix(&mut p, spec.guid, spec.kind);
    p
}

async fn create_loop<C: Coordination>(
    client: &C,
    spec: &ContenderSpec<'_>,
    list: bool,
    prefix: &str,
) -> Result<(OwnNode, Option<Children>), LockError> {
    let mut attempt = 1;
    let mut parents_made = false;
    loop {
        let create = client.create(prefix, spec.data, CreateMode::EphemeralSequential);
        let (created, listing) = if list {
            // Both polled in order on each wake until both answered, as `join` does but
            // without its per-future wrappers. Pinned in reverse, so that (as in `join`)
            // the create drops first if this is dropped halfway.
            let listing = client.get_children(spec.dir);
            let mut listing = pin!(listing);
            let mut create = pin!(create);
            let (mut c, mut l) = (None, None);
            poll_fn(|cx| {
                if c.is_none()
                    && let Poll::Ready(r) = create.as_mut().poll(cx)
                {
                    c = Some(r);
                }
                if l.is_none()
                    && let Poll::Ready(r) = listing.as_mut().poll(cx)
                {
                    l = Some(r);
                }
                if c.is_some() && l.is_some() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            match (c, l) {
                (Some(c), Some(l)) => (c, l.ok()),
                _ => unreachable!("both answered"),
            }
        } else {
            (create.await, None)
        };
        if list && created.is_err() {
            // The listing goes unread: nothing of it is kept.
            client.keep_only(b"");
        }
        match created {
            Ok((path, stat)) => return Ok((OwnNode::new(path, stat.czxid)?, listing)),
            Err(ZkError::NoNode) if spec.create_parents && !parents_made => {
                ensure_path(client, spec.retry, spec.dir).await?;
                parents_made = true;
            }
            Err(ZkError::NoNode) => {
                return Err(LockError::LockPathDeleted {
                    path: spec.dir.to_owned(),
                });
            }
            Err(e) if e.is_connection_loss() => {
                if let Some(over) = session_over(client) {
                    return Err(over.into());
                }
                if attempt >= spec.retry.attempts_max {
                    return Err(e.into());
                }
                client.sleep(spec.retry.backoff(attempt)).await;
                attempt += 1;
                let mut own = find_own_nodes(client, spec).await?.into_iter();
                if let Some(first) = own.next() {
                    for extra in own {
                        delete_until_gone(client, spec.retry, &extra.path).await?;
                    }
                    return Ok((first, None));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}
