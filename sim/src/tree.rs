//! ZooKeeper's data tree: znodes, zxids, ephemerals and one-shot watches, as the server's
//! `DataTree` and `PrepRequestProcessor` keep them.
//!
//! Pure and synchronous. The simulated server owns one tree and delivers the
//! [`Notification`]s that its writes return. Everything is ordered (`BTreeMap`, `BTreeSet`),
//! so the same calls always give the same tree and the same notifications in the same order.

use std::collections::{BTreeMap, BTreeSet};

use valid::validate as validate_path;
use zklock_recipe::path::split;
use zklock_recipe::{CreateMode, EventType, Op, OpResult, SessionId, Stat, WatchedEvent, ZkError};

/// A watch notification the server must send to `session`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub session: SessionId,
    pub event: WatchedEvent,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Node {
    data: Vec<u8>,
    /// The stat as clients see it. Its `cversion` counts child creates and deletes.
    stat: Stat,
    /// Child creates since this node was created: the server's internal cversion. A
    /// sequential name takes its suffix from this count, not from `stat.cversion`: a real
    /// 3.8 server names the child created after 3 creates and 2 deletes `-0000000003`,
    /// while its parent's stat reports cversion 5.
    child_creates: i32,
    children: BTreeSet<String>,
}

/// Watches of one kind: path -> the sessions watching it.
type Watches = BTreeMap<String, BTreeSet<SessionId>>;

/// The in-memory tree of one simulated ZooKeeper ensemble.
///
/// Failed writes leave the tree untouched and consume no zxid. A real server does log
/// them as error transactions with zxids of their own, but no client can observe the gap.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataTree {
    nodes: BTreeMap<String, Node>,
    last_zxid: i64,
    data_watches: Watches,
    child_watches: Watches,
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// The largest data a node may hold. ZooKeeper's limit is jute.maxbuffer (1 MiB by
    /// default).
    pub const DATA_BYTES_MAX: usize = 1024 * 1024;

    /// A tree holding only "/", with an all-zero stat.
    pub fn new() -> Self {
        let root = Node {
            data: Vec::new(),
            stat: Stat::default(),
            child_creates: 0,
            children: BTreeSet::new(),
        };
        DataTree {
            nodes: BTreeMap::from([("/".to_owned(), root)]),
            last_zxid: 0,
            data_watches: Watches::new(),
            child_watches: Watches::new(),
        }
    }

    /// The zxid of the last successful write transaction; 0 before any.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
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

    /// Ends `session` (closed or expired): drops its watches, then deletes its ephemerals
    /// in one transaction, notifying other sessions. Returns the deleted paths, sorted.
    pub fn close_session(
        &mut self,
        session: SessionId,
        out: &mut Vec<Notification>,
    ) -> Vec<String> {
        // Watches go first: a closed session must never be notified.
        for watches in [&mut self.data_watches, &mut self.child_watches] {
            watches.retain(|_, sessions| {
                sessions.remove(&session);
                !sessions.is_empty()
            });
        }
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
        validate_path(path, false)?;
        if let Some(session) = watcher {
            add_watch(&mut self.data_watches, path, session);
        }
        Ok(self.nodes.get(path).map(|node| node.stat))
    }

    /// The node's data and stat. NoNode leaves no watch.
    pub fn get_data(
        &mut self,
        path: &str,
        watcher: Option<SessionId>,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        validate_path(path, false)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if let Some(session) = watcher {
            add_watch(&mut self.data_watches, path, session);
        }
        Ok((node.data.clone(), node.stat))
    }

    /// The node's child names, sorted. NoNode leaves no watch.
    pub fn get_children(
        &mut self,
        path: &str,
        watcher: Option<SessionId>,
    ) -> Result<Vec<String>, ZkError> {
        validate_path(path, false)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if let Some(session) = watcher {
            add_watch(&mut self.child_watches, path, session);
        }
        Ok(node.children.iter().cloned().collect())
    }

    // ---- Inspection, for tests and the checker: no watches, no errors. ----

    pub fn stat(&self, path: &str) -> Option<Stat> {
        self.nodes.get(path).map(|node| node.stat)
    }

    pub fn data(&self, path: &str) -> Option<&[u8]> {
        self.nodes.get(path).map(|node| node.data.as_slice())
    }

    /// Child names, sorted.
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.nodes
            .get(path)
            .map(|node| node.children.iter().cloned().collect())
    }

    /// Every node's path, sorted, "/" included.
    pub fn paths(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// The ephemerals `session` owns, sorted. A scan rather than an index: sessions end
    /// far less often than nodes come and go, and the tree stays small.
    pub fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        if session.0 == 0 {
            return Vec::new();
        }
        self.nodes
            .iter()
            .filter(|(_, node)| node.stat.ephemeral_owner == session.0)
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// Whether `session` has any data or child watch registered.
    pub fn has_watches(&self, session: SessionId) -> bool {
        [&self.data_watches, &self.child_watches]
            .iter()
            .any(|watches| watches.values().any(|sessions| sessions.contains(&session)))
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
        validate_path(path, mode.is_sequential())?;
        check_data_size(data)?;
        // Like the server, split at the last '/' of the path as given: "/a/" (sequential)
        // names a child of "/a", and "/" (sequential) a child of "/".
        let slash = path.bytes().rposition(|b| b == b'/');
        let parent_path = match slash {
            Some(i) if i > 0 => &path[..i],
            _ => "/",
        };
        let parent = self.nodes.get_mut(parent_path).ok_or(ZkError::NoNode)?;
        let path = if mode.is_sequential() {
            sequential_name(path, parent.child_creates)
        } else {
            path.to_owned()
        };
        // The suffix has no '/': the name starts after the same slash. A node exists
        // exactly when its parent lists it; the one name no parent lists is "/"'s own.
        let name = &path[slash.map_or(0, |i| i + 1)..];
        // The server checks existence before the ephemeral parent.
        if name.is_empty() || parent.children.contains(name) {
            return Err(ZkError::NodeExists);
        }
        if parent.stat.ephemeral_owner != 0 {
            return Err(ZkError::NoChildrenForEphemerals);
        }

        let ephemeral_owner = if mode.is_ephemeral() {
            // ephemeral_owner 0 means persistent, so session 0 cannot own ephemerals.
            debug_assert_ne!(owner.0, 0, "session 0 cannot own an ephemeral");
            owner.0
        } else {
            0
        };
        parent.children.insert(name.to_owned());
        parent.child_creates += 1;
        parent.stat.cversion += 1;
        parent.stat.num_children += 1;
        parent.stat.pzxid = zxid;
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            cversion: 0,
            ephemeral_owner,
            num_children: 0,
            data_length: data_len(data),
        };
        let node = Node {
            data: data.to_vec(),
            stat,
            child_creates: 0,
            children: BTreeSet::new(),
        };
        self.nodes.insert(path.clone(), node);

        trigger(
            &mut self.data_watches,
            &path,
            EventType::NodeCreated,
            &BTreeSet::new(),
            out,
        );
        trigger(
            &mut self.child_watches,
            parent_path,
            EventType::NodeChildrenChanged,
            &BTreeSet::new(),
            out,
        );
        Ok((path, stat))
    }

    fn apply_delete(
        &mut self,
        zxid: i64,
        path: &str,
        version: Option<i32>,
        out: &mut Vec<Notification>,
    ) -> Result<(), ZkError> {
        validate_path(path, false)?;
        let Some((parent_path, name)) = split(path) else {
            return Err(ZkError::BadArguments("cannot delete \"/\"".to_owned()));
        };
        // Taken out at once, and put back on the rare refusal: one search, not two.
        let (key, node) = self.nodes.remove_entry(path).ok_or(ZkError::NoNode)?;
        // The server checks the version before the children.
        let refused = if !version_matches(version, node.stat.version) {
            Some(ZkError::BadVersion)
        } else if !node.children.is_empty() {
            Some(ZkError::NotEmpty)
        } else {
            None
        };
        if let Some(e) = refused {
            self.nodes.insert(key, node);
            return Err(e);
        }
        let parent = self
            .nodes
            .get_mut(parent_path)
            .expect("a node's parent exists");
        parent.children.remove(name);
        parent.stat.cversion += 1;
        parent.stat.num_children -= 1;
        parent.stat.pzxid = zxid;

        // A session watching both data and children of the path hears NodeDeleted once.
        let notified = trigger(
            &mut self.data_watches,
            path,
            EventType::NodeDeleted,
            &BTreeSet::new(),
            out,
        );
        trigger(
            &mut self.child_watches,
            path,
            EventType::NodeDeleted,
            &notified,
            out,
        );
        trigger(
            &mut self.child_watches,
            parent_path,
            EventType::NodeChildrenChanged,
            &BTreeSet::new(),
            out,
        );
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
        validate_path(path, false)?;
        check_data_size(data)?;
        let node = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
        if !version_matches(version, node.stat.version) {
            return Err(ZkError::BadVersion);
        }
        node.data = data.to_vec();
        // Java int arithmetic, as the server's.
        node.stat.version = node.stat.version.wrapping_add(1);
        node.stat.mzxid = zxid;
        node.stat.data_length = data_len(data);
        let stat = node.stat;
        trigger(
            &mut self.data_watches,
            path,
            EventType::NodeDataChanged,
            &BTreeSet::new(),
            out,
        );
        Ok(stat)
    }

    /// A multi's Check op: the node exists with the expected version.
    fn check(&self, path: &str, version: i32) -> Result<(), ZkError> {
        validate_path(path, false)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if version_matches(Some(version), node.stat.version) {
            Ok(())
        } else {
            Err(ZkError::BadVersion)
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

fn add_watch(watches: &mut Watches, path: &str, session: SessionId) {
    // The key is copied only when the path is not watched yet.
    match watches.get_mut(path) {
        Some(sessions) => {
            sessions.insert(session);
        }
        None => {
            watches.insert(path.to_owned(), BTreeSet::from([session]));
        }
    }
}

/// Fires and removes the watches on `path`, notifying their sessions in ascending order,
/// except those in `skip` (their watch is removed all the same). Returns the sessions
/// whose watches fired.
fn trigger(
    watches: &mut Watches,
    path: &str,
    event_type: EventType,
    skip: &BTreeSet<SessionId>,
    out: &mut Vec<Notification>,
) -> BTreeSet<SessionId> {
    // Nothing watched here (the common case): no set to walk.
    let Some(sessions) = watches.remove(path) else {
        return BTreeSet::new();
    };
    for &session in sessions.difference(skip) {
        out.push(Notification {
            session,
            event: WatchedEvent {
                event_type,
                path: path.to_owned(),
            },
        });
    }
    sessions
}

/// `path` with ZooKeeper's ten-digit sequence suffix, as `format!("{path}{n:010}")`
/// writes it, without the formatting machinery (this runs on every sequential create).
fn sequential_name(path: &str, n: i32) -> String {
    if n < 0 {
        return format!("{path}{n:010}");
    }
    let mut out = String::with_capacity(path.len() + 10);
    out.push_str(path);
    let mut digits = [b'0'; 10];
    let mut v = n as u32;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    // An i32 has at most ten digits, so they all fit.
    out.extend(digits.iter().map(|&d| char::from(d)));
    out
}

#[cfg(test)]
mod tests;
mod valid;
