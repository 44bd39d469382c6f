//! ZooKeeper's data tree: znodes, zxids, ephemerals and one-shot watches, as the server's
//! `DataTree` and `PrepRequestProcessor` keep them.
//!
//! Pure and synchronous. The simulated server owns one tree and delivers the
//! [`Notification`]s that its writes return. Everything is ordered (`BTreeMap`, `BTreeSet`),
//! so the same calls always give the same tree and the same notifications in the same order.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use valid::{validate as validate_path, validate_name};
use watchers::Watchers;
use zklock_recipe::{
    Children, CreateMode, EventType, Op, OpResult, SessionId, Stat, WatchedEvent, ZkError,
};

/// A watch notification the server must send to `session`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub session: SessionId,
    pub event: WatchedEvent,
}

/// A node's index in the tree's slab.
type NodeId = u32;
const ROOT: NodeId = 0;
/// ZooKeeper's own nodes, in the slots [`DataTree::new`] gives them. No client can
/// delete them, so their slots never change.
const PROC_NODE: NodeId = 1;
const CONFIG_NODE: NodeId = 2;
const QUOTA_NODE: NodeId = 3;

/// ZooKeeper's own node, present from the start.
pub const PROC_PATH: &str = "/zookeeper";
/// The ensemble's configuration: readable by all, and by no client writable (its ACL is
/// world:anyone read), so a setData or a create under it fails with NoAuth.
pub const CONFIG_PATH: &str = "/zookeeper/config";
/// The root of quota records. Clients may create under it; the simulation keeps no
/// quotas.
pub const QUOTA_PATH: &str = "/zookeeper/quota";

/// Paths no client may delete: the server refuses them with BadArguments before looking
/// at the node.
fn is_special_path(path: &str) -> bool {
    path == "/"
        || path.starts_with(PROC_PATH) && matches!(path, PROC_PATH | CONFIG_PATH | QUOTA_PATH)
}

#[derive(Clone, Debug)]
struct Node {
    /// Full path, shared with the path index.
    path: Arc<str>,
    /// Where the name starts in `path`: after the last '/'.
    name_at: usize,
    parent: NodeId,
    data: Vec<u8>,
    /// The stat as clients see it. Its `cversion` counts child creates and deletes.
    stat: Stat,
    /// Child creates since this node was created: the server's internal cversion. A
    /// sequential name takes its suffix from this count, not from `stat.cversion`: a real
    /// 3.8 server names the child created after 3 creates and 2 deletes `-0000000003`,
    /// while its parent's stat reports cversion 5.
    child_creates: i32,
    /// Children, in name order.
    children: Vec<NodeId>,
    /// Their names, in the same order: a listing answers with a clone, copying nothing.
    listing: Children,
    /// Sessions with a data (exists/getData) watch on this node, ascending.
    data_watches: Watchers,
    /// Sessions with a child (getChildren) watch on this node, ascending.
    child_watches: Watchers,
}

impl Node {
    fn name(&self) -> &str {
        &self.path[self.name_at..]
    }
}

/// The in-memory tree of one simulated ZooKeeper ensemble.
///
/// Nodes live in a slab, found by path through an ordered index, and know their parent
/// and children by slot: a request looks its path up once. A node carries its own
/// watches (ZooKeeper keys watches by path; a watch on an existing path fires and goes
/// when the node does, so only `exists` watches on absent paths need a table of their
/// own). Equality and hashing see the logical tree only (paths, data, stats, counters,
/// children, watches), never the slab's layout.
///
/// Failed writes leave the tree untouched and consume no zxid. A real server does log
/// them as error transactions with zxids of their own, but no client can observe the gap.
#[derive(Clone)]
pub struct DataTree {
    /// `None`: a free slot, listed in `free`.
    nodes: Vec<Option<Node>>,
    free: Vec<NodeId>,
    /// Path → node. Only looked up, never iterated where order could show: the ordered
    /// views (`paths`, equality, hashing) sort.
    index: HashMap<Arc<str>, NodeId, BuildHasherDefault<PathHasher>>,
    last_zxid: i64,
    /// Data watches left by `exists` on paths without a node: they fire NodeCreated.
    absent_watches: BTreeMap<String, Vec<SessionId>>,
    /// A directory whose sequential counter starts at this value when it is created
    /// (see [`DataTree::start_sequence_at`]).
    sequence_start: Option<(String, i32)>,
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// The largest data this tree takes in one write (BadArguments past it). Through a
    /// simulated server this bound is never met: the whole request frame is bounded
    /// first, by [`REQUEST_BYTES_MAX`](crate::REQUEST_BYTES_MAX), as a real server's
    /// jute.maxbuffer bounds it, and a larger request drops the connection.
    pub const DATA_BYTES_MAX: usize = 1024 * 1024;

    /// A tree as a fresh ZooKeeper 3.8 server holds it: "/" with ZooKeeper's own
    /// `/zookeeper`, `/zookeeper/config` and `/zookeeper/quota`, every stat zero but the
    /// cversions: a parent's cversion counts creates twice less its children (the
    /// server's `2 * creates - children`), and these three nodes were placed without a
    /// create, so "/" shows -1 and `/zookeeper` -2. Their sequential counters are 0.
    pub fn new() -> Self {
        let node = |path: &str, name_at: usize, parent: NodeId, children: Vec<NodeId>| Node {
            path: Arc::from(path),
            name_at,
            parent,
            data: Vec::new(),
            stat: Stat {
                cversion: -(children.len() as i32),
                num_children: children.len() as i32,
                ..Stat::default()
            },
            child_creates: 0,
            children,
            listing: Children::new(),
            data_watches: Watchers::default(),
            child_watches: Watchers::default(),
        };
        let mut nodes = vec![
            node("/", 1, ROOT, vec![PROC_NODE]),
            node(PROC_PATH, 1, ROOT, vec![CONFIG_NODE, QUOTA_NODE]),
            node(CONFIG_PATH, PROC_PATH.len() + 1, PROC_NODE, Vec::new()),
            node(QUOTA_PATH, PROC_PATH.len() + 1, PROC_NODE, Vec::new()),
        ];
        for id in [ROOT, PROC_NODE] {
            let names: Vec<Arc<str>> = nodes[id as usize]
                .children
                .iter()
                .map(|&c| Arc::from(nodes[c as usize].name()))
                .collect();
            for (at, name) in names.iter().enumerate() {
                nodes[id as usize].listing.insert(at, name);
            }
        }
        let index = nodes
            .iter()
            .enumerate()
            .map(|(id, n)| (n.path.clone(), id as NodeId))
            .collect();
        DataTree {
            nodes: nodes.into_iter().map(Some).collect(),
            free: Vec::new(),
            index,
            last_zxid: 0,
            absent_watches: BTreeMap::new(),
            sequence_start: None,
        }
    }

    /// Gives the directory at `path` a sequential counter of `counter`, as if that many
    /// sequential children had been created in it before (its stat's cversion too): now
    /// if it exists, else when it is created. The counter is ZooKeeper's signed 32-bit
    /// int, so from `i32::MAX` the next suffix is `-2147483648`; starting near it makes a
    /// run cross that wrap, which lock recipes have mishandled (Kazoo#730,
    /// go-zookeeper/zk#65, ZOOKEEPER-4372).
    pub fn start_sequence_at(&mut self, path: &str, counter: i32) {
        if let Some(id) = self.find(path) {
            let node = self.node_mut(id);
            node.child_creates = counter;
            node.stat.cversion = counter;
        }
        self.sequence_start = Some((path.to_owned(), counter));
    }

    /// The zxid of the last successful write transaction; 0 before any.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    fn node(&self, id: NodeId) -> &Node {
        self.nodes[id as usize]
            .as_ref()
            .expect("an indexed node exists")
    }

    fn node_mut(&mut self, id: NodeId) -> &mut Node {
        self.nodes[id as usize]
            .as_mut()
            .expect("an indexed node exists")
    }

    fn find(&self, path: &str) -> Option<NodeId> {
        self.index.get(path).copied()
    }

    fn get(&self, path: &str) -> Option<&Node> {
        self.find(path).map(|id| self.node(id))
    }

    /// The node at `path`, or why there is none. Every indexed path is valid (creates
    /// validate), so only a path the index lacks needs validating: its error comes
    /// before NoNode, as the server's does.
    fn lookup(&self, path: &str) -> Result<NodeId, ZkError> {
        match self.find(path) {
            Some(id) => Ok(id),
            None => {
                validate_path(path, false)?;
                Err(ZkError::NoNode)
            }
        }
    }

    // ---- Writes: each successful one is one transaction with the next zxid. ----

    /// Creates a node; returns its actual path (with the suffix, if sequential) and stat.
    pub fn create(
        &mut self,
        owner: SessionId,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        out: &mut Vec<Notification>,
    ) -> Result<(String, Stat), ZkError> {
        let zxid = self.last_zxid + 1;
        let created = self.apply_create(zxid, owner, path, data, mode, out)?;
        self.last_zxid = zxid;
        Ok(created)
    }

    /// Deletes a leaf node; `version` is the expected data version (`None` or -1: any).
    pub fn delete(
        &mut self,
        path: &str,
        version: Option<i32>,
        out: &mut Vec<Notification>,
    ) -> Result<(), ZkError> {
        let zxid = self.last_zxid + 1;
        self.apply_delete(zxid, path, version, out)?;
        self.last_zxid = zxid;
        Ok(())
    }

    /// Replaces a node's data; `version` is the expected data version (`None` or -1: any).
    pub fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
        out: &mut Vec<Notification>,
    ) -> Result<Stat, ZkError> {
        let zxid = self.last_zxid + 1;
        let stat = self.apply_set_data(zxid, path, data, version, out)?;
        self.last_zxid = zxid;
        Ok(stat)
    }

    /// Applies `ops` atomically as one transaction. Each op sees the effects of the ones
    /// before it. On failure nothing changes and the error names the first failing op.
    pub fn multi(
        &mut self,
        owner: SessionId,
        ops: &[Op],
        out: &mut Vec<Notification>,
    ) -> Result<Vec<OpResult>, ZkError> {
        // A real server answers an empty multi without a transaction (no zxid is used).
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        // A client refuses the whole multi before sending it when any op's path is
        // invalid, naming that op: no op is judged before every path is.
        for (index, op) in ops.iter().enumerate() {
            let sequential = matches!(op, Op::Create { mode, .. } if mode.is_sequential());
            if let Err(error) = validate_path(op.path(), sequential) {
                return Err(ZkError::MultiFailed {
                    index,
                    error: Box::new(error),
                });
            }
        }
        let zxid = self.last_zxid + 1;
        // Apply to a copy, so that a failure part-way leaves `self` as it was.
        let mut scratch = self.clone();
        let mut fired = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            let result = match op {
                Op::Check { path, version } => {
                    scratch.check(path, *version).map(|()| OpResult::Check)
                }
                Op::Create { path, data, mode } => scratch
                    .apply_create(zxid, owner, path, data, *mode, &mut fired)
                    .map(|(path, stat)| OpResult::Create { path, stat }),
                Op::Delete { path, version } => scratch
                    .apply_delete(zxid, path, *version, &mut fired)
                    .map(|()| OpResult::Delete),
                Op::SetData {
                    path,
                    data,
                    version,
                } => scratch
                    .apply_set_data(zxid, path, data, *version, &mut fired)
                    .map(|stat| OpResult::SetData { stat }),
            };
            match result {
                Ok(r) => results.push(r),
                Err(error) => {
                    return Err(ZkError::MultiFailed {
                        index,
                        error: Box::new(error),
                    });
                }
            }
        }
        scratch.last_zxid = zxid;
        *self = scratch;
        out.append(&mut fired);
        Ok(results)
    }

    /// The session closes itself (CloseSession): deletes its ephemerals in one transaction,
    /// notifying every watcher of them, its own watches included (ZooKeeper's server runs
    /// the close while the closing connection is still registered, so the client hears
    /// NodeDeleted for its own nodes before the close's reply), then drops the session's
    /// other watches. Returns the deleted paths, sorted.
    pub fn close_session(
        &mut self,
        session: SessionId,
        out: &mut Vec<Notification>,
    ) -> Vec<String> {
        let paths = self.delete_ephemerals(session, out);
        self.drop_watches(session);
        paths
    }

    /// The server expires `session`: drops its watches, then deletes its ephemerals in one
    /// transaction, notifying other sessions (an expired session hears nothing more).
    /// Returns the deleted paths, sorted.
    pub fn expire_session(
        &mut self,
        session: SessionId,
        out: &mut Vec<Notification>,
    ) -> Vec<String> {
        self.drop_watches(session);
        self.delete_ephemerals(session, out)
    }

    fn drop_watches(&mut self, session: SessionId) {
        for node in self.nodes.iter_mut().flatten() {
            node.data_watches.remove(session);
            node.child_watches.remove(session);
        }
        self.absent_watches.retain(|_, sessions| {
            remove_session(sessions, session);
            !sessions.is_empty()
        });
    }

    /// Deletes the session's ephemerals in one transaction (none: no zxid is used).
    fn delete_ephemerals(
        &mut self,
        session: SessionId,
        out: &mut Vec<Notification>,
    ) -> Vec<String> {
        let paths = self.ephemerals_of(session);
        if paths.is_empty() {
            return paths;
        }
        let zxid = self.last_zxid + 1;
        for path in &paths {
            self.apply_delete(zxid, path, None, out)
                .expect("an ephemeral exists and, having no children, can be deleted");
        }
        self.last_zxid = zxid;
        paths
    }

    // ---- Reads: `watcher: Some(s)` leaves a one-shot watch for session `s`. ----

    /// The node's stat, or `None` if absent. A watch is left even then: it fires
    /// NodeCreated.
    pub fn exists(
        &mut self,
        path: &str,
        watcher: Option<SessionId>,
    ) -> Result<Option<Stat>, ZkError> {
        match self.find(path) {
            Some(id) => {
                let node = self.node_mut(id);
                if let Some(session) = watcher {
                    node.data_watches.add(session);
                }
                Ok(Some(node.stat))
            }
            None => {
                validate_path(path, false)?;
                if let Some(session) = watcher {
                    match self.absent_watches.get_mut(path) {
                        Some(sessions) => add_session(sessions, session),
                        None => {
                            self.absent_watches.insert(path.to_owned(), vec![session]);
                        }
                    }
                }
                Ok(None)
            }
        }
    }

    /// The node's data and stat. NoNode leaves no watch.
    pub fn get_data(
        &mut self,
        path: &str,
        watcher: Option<SessionId>,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        let id = self.lookup(path)?;
        let node = self.node_mut(id);
        if let Some(session) = watcher {
            node.data_watches.add(session);
        }
        Ok((node.data.clone(), node.stat))
    }

    /// The node's child names, sorted. NoNode leaves no watch.
    pub fn get_children(
        &mut self,
        path: &str,
        watcher: Option<SessionId>,
    ) -> Result<Children, ZkError> {
        let id = self.lookup(path)?;
        if let Some(session) = watcher {
            self.node_mut(id).child_watches.add(session);
        }
        Ok(self.child_names(id))
    }

    fn child_names(&self, id: NodeId) -> Children {
        let node = self.node(id);
        debug_assert!(
            node.listing
                .iter()
                .eq(node.children.iter().map(|&c| self.node(c).name())),
            "the listing of {} follows its children",
            node.path
        );
        node.listing.clone()
    }

    // ---- Inspection, for tests and the checker: no watches, no errors. ----

    pub fn stat(&self, path: &str) -> Option<Stat> {
        self.get(path).map(|node| node.stat)
    }

    pub fn data(&self, path: &str) -> Option<&[u8]> {
        self.get(path).map(|node| node.data.as_slice())
    }

    /// Child names, sorted.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.find(path).map(|id| self.child_names(id).to_vec())
    }

    /// Every node's path, sorted, "/" included.
    pub fn paths(&self) -> Vec<String> {
        self.logical().map(|(p, _)| p.to_owned()).collect()
    }

    /// The ephemerals `session` owns, sorted. A scan rather than an index: sessions end
    /// far less often than nodes come and go, and the tree stays small.
    pub fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        if session.0 == 0 {
            return Vec::new();
        }
        self.logical()
            .filter(|(_, node)| node.stat.ephemeral_owner == session.0)
            .map(|(path, _)| path.to_owned())
            .collect()
    }

    /// Whether `session` has any data or child watch registered.
    pub fn has_watches(&self, session: SessionId) -> bool {
        self.nodes
            .iter()
            .flatten()
            .any(|node| node.data_watches.contains(session) || node.child_watches.contains(session))
            || self
                .absent_watches
                .values()
                .any(|sessions| sessions.contains(&session))
    }

    // ---- One op at a given zxid. Each validates fully before it changes anything. ----

    fn apply_create(
        &mut self,
        zxid: i64,
        owner: SessionId,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        out: &mut Vec<Notification>,
    ) -> Result<(String, Stat), ZkError> {
        // A real 3.8 server refuses a create of "/" itself, sequential or not.
        if path == "/" {
            return Err(ZkError::BadArguments(
                "invalid path \"/\": a create needs a name".to_owned(),
            ));
        }
        // Like the server, split at the last '/' of the path as given: "/a/" (sequential)
        // names a child of "/a".
        let slash = path.bytes().rposition(|b| b == b'/');
        let parent_path = match slash {
            Some(i) if i > 0 => &path[..i],
            _ => "/",
        };
        let parent = self.find(parent_path);
        let name_at = slash.map_or(0, |i| i + 1);
        // An indexed parent is valid, so then only the new name needs judging; but "//a"
        // splits into "/" and "a" too, so a parent of one byte only counts at slash 0.
        match (parent, slash) {
            (Some(_), Some(i)) if i != 1 => {
                validate_name(path, name_at, mode.is_sequential())?;
            }
            _ => validate_path(path, mode.is_sequential())?,
        }
        check_data_size(data)?;
        // Not `ok_or`: that builds and drops an error even on success.
        let Some(parent_id) = parent else {
            return Err(ZkError::NoNode);
        };
        // The parent's ACL is checked before the name.
        if parent_id == CONFIG_NODE {
            return Err(ZkError::NoAuth);
        }
        // The path is built once, straight into the String the answer takes. A plain
        // name is judged before it is copied; a sequential one is judged with its suffix,
        // and is refused too rarely for its copy to matter.
        let (created, at) = if mode.is_sequential() {
            let mut full = String::with_capacity(path.len() + SEQUENCE_DIGITS);
            full.push_str(path);
            push_sequence(&mut full, self.node(parent_id).child_creates);
            let at = self.refuse_create(parent_id, &full[name_at..])?;
            (full, at)
        } else {
            let at = self.refuse_create(parent_id, &path[name_at..])?;
            (path.to_owned(), at)
        };
        let ephemeral_owner = if mode.is_ephemeral() {
            // ephemeral_owner 0 means persistent, so session 0 cannot own ephemerals.
            debug_assert_ne!(owner.0, 0, "session 0 cannot own an ephemeral");
            owner.0
        } else {
            0
        };
        let counter = match &self.sequence_start {
            Some((dir, counter)) if *dir == created => *counter,
            _ => 0,
        };
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            cversion: counter,
            ephemeral_owner,
            num_children: 0,
            data_length: data_len(data),
        };
        let shared: Arc<str> = Arc::from(created.as_str());
        let node = Node {
            path: shared.clone(),
            name_at,
            parent: parent_id,
            data: data.to_vec(),
            stat,
            child_creates: counter,
            children: Vec::new(),
            listing: Children::new(),
            data_watches: Watchers::default(),
            child_watches: Watchers::default(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = Some(node);
                id
            }
            None => {
                self.nodes.push(Some(node));
                NodeId::try_from(self.nodes.len() - 1).expect("fewer than 2^32 nodes")
            }
        };
        let parent = self.node_mut(parent_id);
        parent.children.insert(at, id);
        parent.listing.insert(at, &shared[name_at..]);
        self.index.insert(shared, id);
        let parent = self.node_mut(parent_id);
        // Java's int arithmetic: past i32::MAX the counter wraps negative.
        parent.child_creates = parent.child_creates.wrapping_add(1);
        parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
        parent.stat.num_children += 1;
        parent.stat.pzxid = zxid;

        if !self.absent_watches.is_empty()
            && let Some(sessions) = self.absent_watches.remove(created.as_str())
        {
            notify(&sessions, &created, EventType::NodeCreated, &[], out);
        }
        self.children_changed(parent_id, out);
        Ok((created, stat))
    }

    /// Fires the child watches of `id`: its children changed.
    fn children_changed(&mut self, id: NodeId, out: &mut Vec<Notification>) {
        let node = self.node_mut(id);
        if !node.child_watches.is_empty() {
            let sessions = node.child_watches.as_slice();
            notify(
                sessions,
                &node.path,
                EventType::NodeChildrenChanged,
                &[],
                out,
            );
            node.child_watches.clear();
        }
    }

    /// Where a child named `name` goes among the children of `parent_id`, or why it
    /// cannot be created there.
    fn refuse_create(&self, parent_id: NodeId, name: &str) -> Result<usize, ZkError> {
        // The server checks existence before the ephemeral parent. A node exists exactly
        // when its parent lists it; the one name no parent lists is "/"'s own.
        let at = match self.child_position(parent_id, name) {
            Err(at) if !name.is_empty() => at,
            _ => return Err(ZkError::NodeExists),
        };
        if self.node(parent_id).stat.ephemeral_owner != 0 {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        Ok(at)
    }

    /// Where `name` is, or would go, among the children of `parent_id`.
    fn child_position(&self, parent_id: NodeId, name: &str) -> Result<usize, usize> {
        self.node(parent_id)
            .children
            .binary_search_by(|&c| self.node(c).name().cmp(name))
    }

    fn apply_delete(
        &mut self,
        zxid: i64,
        path: &str,
        version: Option<i32>,
        out: &mut Vec<Notification>,
    ) -> Result<(), ZkError> {
        if is_special_path(path) {
            return Err(ZkError::BadArguments(format!(
                "cannot delete {path:?}: ZooKeeper's own node"
            )));
        }
        // Out of the index at once, with one hash: a delete that fails puts it back.
        let Some((key, id)) = self.index.remove_entry(path) else {
            validate_path(path, false)?;
            return Err(ZkError::NoNode);
        };
        let node = self.node(id);
        // The server checks the version before the children.
        let refused = if !version_matches(version, node.stat.version) {
            Some(ZkError::BadVersion)
        } else if !node.children.is_empty() {
            Some(ZkError::NotEmpty)
        } else {
            None
        };
        if let Some(e) = refused {
            self.index.insert(key, id);
            return Err(e);
        }
        drop(key);
        let parent_id = node.parent;
        // A scan for the slot, not a search by name: lists are short, and slots compare
        // cheaper than names.
        let at = self
            .node(parent_id)
            .children
            .iter()
            .position(|&c| c == id)
            .expect("a node's parent lists it");
        let parent = self.node_mut(parent_id);
        parent.children.remove(at);
        parent.listing.remove(at);
        parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
        parent.stat.num_children -= 1;
        parent.stat.pzxid = zxid;

        // A session watching both data and children of the path hears NodeDeleted once.
        let node = self.node(id);
        let path = &*node.path;
        let notified = node.data_watches.as_slice();
        notify(notified, path, EventType::NodeDeleted, &[], out);
        notify(
            node.child_watches.as_slice(),
            path,
            EventType::NodeDeleted,
            notified,
            out,
        );
        // Dropped in its slot, not moved out first.
        self.nodes[id as usize] = None;
        self.free.push(id);
        self.children_changed(parent_id, out);
        Ok(())
    }

    fn apply_set_data(
        &mut self,
        zxid: i64,
        path: &str,
        data: &[u8],
        version: Option<i32>,
        out: &mut Vec<Notification>,
    ) -> Result<Stat, ZkError> {
        let found = self.find(path);
        if found.is_none() {
            validate_path(path, false)?;
        }
        check_data_size(data)?;
        let Some(id) = found else {
            return Err(ZkError::NoNode);
        };
        // The ACL is checked before the version.
        if id == CONFIG_NODE {
            return Err(ZkError::NoAuth);
        }
        let node = self.node_mut(id);
        if !version_matches(version, node.stat.version) {
            return Err(ZkError::BadVersion);
        }
        node.data = data.to_vec();
        // Java int arithmetic, as the server's.
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        node.stat.data_length = data_len(data);
        let stat = node.stat;
        notify(
            node.data_watches.as_slice(),
            path,
            EventType::NodeDataChanged,
            &[],
            out,
        );
        node.data_watches.clear();
        Ok(stat)
    }

    /// A multi's Check op: the node exists with the expected version.
    fn check(&self, path: &str, version: i32) -> Result<(), ZkError> {
        let node = self.node(self.lookup(path)?);
        if version_matches(Some(version), node.stat.version) {
            Ok(())
        } else {
            Err(ZkError::BadVersion)
        }
    }

    /// The logical tree, in path order: what equality and hashing compare.
    fn logical(&self) -> impl Iterator<Item = (&str, &Node)> {
        let mut all: Vec<(&str, &Node)> =
            self.nodes.iter().flatten().map(|n| (&*n.path, n)).collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter()
    }

    /// Every watch of one kind as (path, sessions), in path order: ZooKeeper's own view.
    fn watches(&self, data: bool) -> Vec<(&str, &[SessionId])> {
        self.watches_in(self.logical(), data)
    }

    /// [`Self::watches`], of the nodes `logical` (the logical tree, in path order).
    fn watches_in<'a>(
        &'a self,
        logical: impl Iterator<Item = (&'a str, &'a Node)>,
        data: bool,
    ) -> Vec<(&'a str, &'a [SessionId])> {
        let mut all: Vec<(&str, &[SessionId])> = logical
            .map(|(p, n)| {
                let sessions = if data {
                    &n.data_watches
                } else {
                    &n.child_watches
                };
                (p, sessions.as_slice())
            })
            .filter(|(_, s)| !s.is_empty())
            .collect();
        if data {
            all.extend(
                self.absent_watches
                    .iter()
                    .map(|(p, s)| (p.as_str(), s.as_slice())),
            );
            all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        all
    }
}

/// A node as a symmetric digest reads it (see `world::symmetry`): everything the tree's
/// own `Hash` encodes of it.
pub(crate) struct NodeView<'a> {
    pub(crate) path: &'a str,
    pub(crate) data: &'a [u8],
    pub(crate) stat: Stat,
    pub(crate) child_creates: i32,
    pub(crate) children: Vec<&'a str>,
}

impl DataTree {
    /// Every node, in path order, for a symmetric digest.
    pub(crate) fn node_views(&self) -> impl Iterator<Item = NodeView<'_>> {
        self.logical().map(|(path, n)| NodeView {
            path,
            data: &n.data,
            stat: n.stat,
            child_creates: n.child_creates,
            children: n.children.iter().map(|&c| self.node(c).name()).collect(),
        })
    }

    /// Every watch of one kind as (path, sessions), in path order, for a symmetric digest.
    pub(crate) fn watch_views(&self, data: bool) -> Vec<(&str, &[SessionId])> {
        self.watches(data)
    }
}

impl PartialEq for DataTree {
    fn eq(&self, other: &Self) -> bool {
        self.last_zxid == other.last_zxid
            && self.index.len() == other.index.len()
            && self
                .logical()
                .zip(other.logical())
                .all(|((pa, a), (pb, b))| {
                    pa == pb
                        && (&a.data, a.stat, a.child_creates) == (&b.data, b.stat, b.child_creates)
                        && self.child_names(self.find(pa).expect("indexed"))
                            == other.child_names(other.find(pb).expect("indexed"))
                })
            && self.watches(true) == other.watches(true)
            && self.watches(false) == other.watches(false)
    }
}

impl Eq for DataTree {}

/// The logical tree (see [`DataTree`]): nodes in path order with their data, stat,
/// counter and child names, the last zxid, then both kinds of watches in path order.
impl std::hash::Hash for DataTree {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // The nodes in path order, sorted once for the nodes and both kinds of watch.
        let logical: Vec<(&str, &Node)> = self.logical().collect();
        self.index.len().hash(h);
        for &(path, node) in &logical {
            (path, &node.data, node.stat, node.child_creates).hash(h);
            node.children.len().hash(h);
            for &c in &node.children {
                self.node(c).name().hash(h);
            }
        }
        self.last_zxid.hash(h);
        for data in [true, false] {
            let watches = self.watches_in(logical.iter().copied(), data);
            watches.len().hash(h);
            for (path, sessions) in watches {
                (path, sessions).hash(h);
            }
        }
    }
}

impl std::fmt::Debug for DataTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<_> = self
            .logical()
            .map(|(p, n)| (p, &n.data, n.stat, n.child_creates))
            .collect();
        f.debug_struct("DataTree")
            .field("nodes", &nodes)
            .field("last_zxid", &self.last_zxid)
            .field("data_watches", &self.watches(true))
            .field("child_watches", &self.watches(false))
            .finish()
    }
}

/// FxHash (rustc's hasher) over path bytes: fast, and the same on every run, though
/// nothing depends on a hash value anyway (the index is never iterated in hash order).
#[derive(Default)]
struct PathHasher(u64);

impl PathHasher {
    fn mix(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for PathHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        // The tail as one word: the last eight bytes when there are that many (they
        // overlap the chunks), else the bytes zero-padded. Equal keys still hash alike,
        // and the map compares keys, so a collision costs nothing. Either way without a
        // copy of variable length, which would cost a call to memcpy.
        let tail = chunks.remainder();
        if !tail.is_empty() {
            let w = match bytes.last_chunk::<8>() {
                Some(last) => u64::from_le_bytes(*last),
                None => tail.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
            };
            self.mix(w);
        }
    }
    /// `str`'s terminator, in one step.
    fn write_u8(&mut self, b: u8) {
        self.mix(u64::from(b));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn add_session(sessions: &mut Vec<SessionId>, session: SessionId) {
    if let Err(at) = sessions.binary_search(&session) {
        sessions.insert(at, session);
    }
}

fn remove_session(sessions: &mut Vec<SessionId>, session: SessionId) {
    if let Ok(at) = sessions.binary_search(&session) {
        sessions.remove(at);
    }
}

/// Notifies `sessions` (ascending) of `event_type` on `path`, except those in `skip`.
fn notify(
    sessions: &[SessionId],
    path: &str,
    event_type: EventType,
    skip: &[SessionId],
    out: &mut Vec<Notification>,
) {
    for &session in sessions {
        if !skip.contains(&session) {
            out.push(Notification {
                session,
                event: WatchedEvent {
                    event_type,
                    path: path.to_owned(),
                },
            });
        }
    }
}

/// ZooKeeper's expected-version rule. On the wire "any version" is -1, so `Some(-1)` means
/// any version too, as it would on a real server.
fn version_matches(expected: Option<i32>, actual: i32) -> bool {
    match expected {
        None | Some(-1) => true,
        Some(v) => v == actual,
    }
}

fn check_data_size(data: &[u8]) -> Result<(), ZkError> {
    if data.len() > DataTree::DATA_BYTES_MAX {
        return Err(ZkError::BadArguments(format!(
            "data of {} bytes exceeds the limit of {} bytes",
            data.len(),
            DataTree::DATA_BYTES_MAX
        )));
    }
    Ok(())
}

fn data_len(data: &[u8]) -> i32 {
    i32::try_from(data.len()).expect("data size is checked against DATA_BYTES_MAX")
}

/// The length of a sequential name's suffix (longer only for a negative count).
const SEQUENCE_DIGITS: usize = 10;

/// Appends ZooKeeper's ten-digit sequence suffix, as `format!("{n:010}")` writes it,
/// without the formatting machinery (this runs on every sequential create).
fn push_sequence(out: &mut String, n: i32) {
    if n < 0 {
        use std::fmt::Write as _;
        write!(out, "{n:010}").expect("writing to a String cannot fail");
        return;
    }
    let mut digits = [b'0'; 10];
    let mut v = n as u32;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    // An i32 has at most ten digits, so they all fit.
    out.extend(digits.iter().map(|&d| char::from(d)));
}

#[cfg(test)]
mod tests;
mod valid;
mod watchers;
