//! Random op sequences against the data tree, checked after every op against a small
//! model: which nodes exist, how often each was set, which suffixes each parent gave out,
//! which sessions are closed.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;
use zklock_recipe::{CreateMode, EventType, Op, OpResult, SessionId, ZkError};
use zklock_sim::tree::{DataTree, Notification};

const SESSIONS: i64 = 4;
/// Parents to create under; "/e" is made ephemeral at the start.
const PARENTS: [&str; 4] = ["/", "/a", "/a/b", "/e"];
/// Names under a parent; with "/" they recreate the fixed parents once deleted.
const NAMES: [&str; 5] = ["a", "b", "e", "x", "lock-"];
const MODES: [CreateMode; 4] = [
    CreateMode::Persistent,
    CreateMode::PersistentSequential,
    CreateMode::Ephemeral,
    CreateMode::EphemeralSequential,
];

/// A node to act on: mostly one that exists, sometimes one that may not.
#[derive(Clone, Debug)]
enum Target {
    Existing(Index),
    Fixed(&'static str),
}

/// The expected version: any, the node's current one, or a wrong one.
#[derive(Clone, Copy, Debug)]
enum Version {
    Any,
    Current,
    Wrong,
}

#[derive(Clone, Debug)]
enum Step {
    Create {
        parent: usize,
        name: usize,
        mode: usize,
    },
    Delete(Target, Version),
    SetData(Target, Version),
    Check(Target, Version),
}

#[derive(Clone, Debug)]
enum Action {
    Write(i64, Step),
    Multi(i64, Vec<Step>),
    Read {
        session: i64,
        target: Target,
        kind: u8,
    },
    Close(i64),
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<Index>().prop_map(Target::Existing),
        1 => prop::sample::select(vec!["/a", "/a/b", "/e", "/a/x", "/nope", "/"]).prop_map(Target::Fixed),
    ]
}

fn version() -> impl Strategy<Value = Version> {
    prop_oneof![
        Just(Version::Any),
        Just(Version::Current),
        Just(Version::Wrong)
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..PARENTS.len(), 0..NAMES.len(), 0..MODES.len())
            .prop_map(|(parent, name, mode)| Step::Create { parent, name, mode }),
        2 => (target(), version()).prop_map(|(t, v)| Step::Delete(t, v)),
        2 => (target(), version()).prop_map(|(t, v)| Step::SetData(t, v)),
        1 => (target(), version()).prop_map(|(t, v)| Step::Check(t, v)),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    let session = 1..=SESSIONS;
    prop_oneof![
        6 => (session.clone(), step()).prop_map(|(s, step)| Action::Write(s, step)),
        2 => (session.clone(), prop::collection::vec(step(), 0..4)).prop_map(|(s, ops)| Action::Multi(s, ops)),
        4 => (session.clone(), target(), 0..3u8)
            .prop_map(|(session, target, kind)| Action::Read { session, target, kind }),
        1 => session.prop_map(Action::Close),
    ]
}

/// What the tree should hold, kept independently of it.
struct Model {
    /// Path -> (czxid, successful set_data count since the node's creation).
    nodes: BTreeMap<String, (i64, i32)>,
    /// (parent path, parent czxid) -> the last suffix handed out there.
    last_suffix: BTreeMap<(String, i64), i64>,
    closed: BTreeSet<SessionId>,
    /// Watches the tree should hold: (session, is a child watch, path).
    watches: BTreeSet<(SessionId, bool, String)>,
    /// The watches the current op must have fired: (is a child watch, path).
    fired: Vec<(bool, String)>,
}

const DATA: bool = false;
const CHILD: bool = true;

impl Model {
    fn created(&mut self, path: &str, mode: CreateMode, czxid: i64) {
        let fresh = self.nodes.insert(path.to_owned(), (czxid, 0)).is_none();
        assert!(fresh, "{path} created twice");
        let parent = zklock_recipe::path::parent(path).expect("not the root");
        self.fired.push((DATA, path.to_owned()));
        self.fired.push((CHILD, parent.to_owned()));
        if mode.is_sequential() {
            // The parent's czxid tells its incarnations apart: a recreated parent
            // starts its suffixes again from 0.
            let (czxid, _) = self.nodes[parent];
            let suffix: i64 = path[path.len() - 10..].parse().expect("10-digit suffix");
            let last = self.last_suffix.insert((parent.to_owned(), czxid), suffix);
            assert!(
                last.is_none_or(|last| suffix > last),
                "{path} after suffix {last:?}"
            );
        }
    }

    fn deleted(&mut self, path: &str) {
        assert!(self.nodes.remove(path).is_some(), "{path} was not there");
        let parent = zklock_recipe::path::parent(path).expect("not the root");
        self.fired.push((DATA, path.to_owned()));
        self.fired.push((CHILD, path.to_owned()));
        self.fired.push((CHILD, parent.to_owned()));
    }

    fn set(&mut self, path: &str) {
        self.nodes.get_mut(path).expect("modelled").1 += 1;
        self.fired.push((DATA, path.to_owned()));
    }

    /// Checks `notes` against the watches, then that every watch that should have fired
    /// did, and that the tree agrees on which sessions still watch something.
    fn notified(&mut self, tree: &DataTree, notes: &[Notification]) {
        for note in notes {
            let (session, path) = (note.session, note.event.path.clone());
            let had = match note.event.event_type {
                EventType::NodeCreated | EventType::NodeDataChanged => {
                    self.watches.remove(&(session, DATA, path))
                }
                EventType::NodeChildrenChanged => self.watches.remove(&(session, CHILD, path)),
                EventType::NodeDeleted => {
                    let data = self.watches.remove(&(session, DATA, path.clone()));
                    self.watches.remove(&(session, CHILD, path)) | data
                }
            };
            assert!(had, "{note:?} without a watch (or twice)");
        }
        for (kind, path) in self.fired.drain(..) {
            let left = self
                .watches
                .iter()
                .find(|(_, k, p)| *k == kind && *p == path);
            assert!(left.is_none(), "{left:?} should have fired");
        }
        for session in (1..=SESSIONS).map(SessionId) {
            let modelled = self.watches.iter().any(|(s, _, _)| *s == session);
            assert_eq!(tree.has_watches(session), modelled, "watches of {session}");
        }
    }
}

fn resolve(tree: &DataTree, target: &Target) -> String {
    match target {
        Target::Existing(index) => {
            let paths = tree.paths();
            paths[index.index(paths.len())].clone()
        }
        Target::Fixed(path) => (*path).to_owned(),
    }
}

fn expected_version(tree: &DataTree, path: &str, version: Version) -> Option<i32> {
    let current = tree.stat(path).map_or(0, |stat| stat.version);
    match version {
        Version::Any => None,
        Version::Current => Some(current),
        Version::Wrong => Some(current + 1),
    }
}

/// Turns a step into a multi op, resolved against the tree as it is before the multi.
fn to_op(tree: &DataTree, step: &Step) -> Op {
    match step {
        Step::Create { parent, name, mode } => Op::Create {
            path: zklock_recipe::path::join(PARENTS[*parent], NAMES[*name]),
            data: b"d".to_vec(),
            mode: MODES[*mode],
        },
        Step::Delete(target, v) => {
            let path = resolve(tree, target);
            let version = expected_version(tree, &path, *v);
            Op::Delete { path, version }
        }
        Step::SetData(target, v) => {
            let path = resolve(tree, target);
            let version = expected_version(tree, &path, *v);
            Op::SetData {
                path,
                data: b"s".to_vec(),
                version,
            }
        }
        Step::Check(target, v) => {
            let path = resolve(tree, target);
            let version = expected_version(tree, &path, *v).unwrap_or(-1);
            Op::Check { path, version }
        }
    }
}

/// Runs one action; returns whether it was a successful write.
fn run(
    tree: &mut DataTree,
    model: &mut Model,
    action: &Action,
    out: &mut Vec<Notification>,
) -> bool {
    match action {
        Action::Write(session, step) => {
            let owner = SessionId(*session);
            if model.closed.contains(&owner) {
                return false; // a closed session issues nothing
            }
            // A single write is a one-op multi without the multi's wrapping.
            match to_op(tree, step) {
                Op::Create { path, data, mode } => {
                    match tree.create(owner, &path, &data, mode, out) {
                        Ok((path, stat)) => {
                            model.created(&path, mode, stat.czxid);
                            true
                        }
                        Err(_) => false,
                    }
                }
                Op::Delete { path, version } => {
                    let ok = tree.delete(&path, version, out).is_ok();
                    if ok {
                        model.deleted(&path);
                    }
                    ok
                }
                Op::SetData {
                    path,
                    data,
                    version,
                } => {
                    let ok = tree.set_data(&path, &data, version, out).is_ok();
                    if ok {
                        model.set(&path);
                    }
                    ok
                }
                // A lone check is only meaningful inside a multi.
                Op::Check { .. } => false,
            }
        }
        Action::Multi(session, steps) => {
            let owner = SessionId(*session);
            if model.closed.contains(&owner) {
                return false;
            }
            let ops: Vec<Op> = steps.iter().map(|step| to_op(tree, step)).collect();
            let before = tree.clone();
            match tree.multi(owner, &ops, out) {
                Ok(results) => {
                    assert_eq!(results.len(), ops.len());
                    for (op, result) in ops.iter().zip(&results) {
                        match (op, result) {
                            (Op::Create { mode, .. }, OpResult::Create { path, stat }) => {
                                model.created(path, *mode, stat.czxid);
                            }
                            (Op::Delete { path, .. }, OpResult::Delete) => model.deleted(path),
                            (Op::SetData { path, .. }, OpResult::SetData { .. }) => {
                                model.set(path);
                            }
                            (Op::Check { .. }, OpResult::Check) => {}
                            other => panic!("result does not match its op: {other:?}"),
                        }
                    }
                    !ops.is_empty()
                }
                Err(error) => {
                    assert!(
                        matches!(error, ZkError::MultiFailed { index, .. } if index < ops.len())
                    );
                    assert_eq!(*tree, before, "a failed multi changed the tree");
                    false
                }
            }
        }
        Action::Read {
            session,
            target,
            kind,
        } => {
            let session = SessionId(*session);
            if model.closed.contains(&session) {
                return false;
            }
            let path = resolve(tree, target);
            let exists = tree.stat(&path).is_some();
            // exists watches even an absent node; the others only a present one.
            let watch = match kind {
                0 => {
                    assert_eq!(tree.exists(&path, Some(session)).unwrap().is_some(), exists);
                    Some(DATA)
                }
                1 => {
                    assert_eq!(tree.get_data(&path, Some(session)).is_ok(), exists);
                    exists.then_some(DATA)
                }
                _ => {
                    assert_eq!(tree.get_children(&path, Some(session)).is_ok(), exists);
                    exists.then_some(CHILD)
                }
            };
            if let Some(kind) = watch {
                model.watches.insert((session, kind, path));
            }
            false
        }
        Action::Close(session) => {
            let session = SessionId(*session);
            if !model.closed.insert(session) {
                return false;
            }
            let expected = tree.ephemerals_of(session);
            let deleted = tree.expire_session(session, out);
            assert_eq!(deleted, expected);
            model.watches.retain(|(s, _, _)| *s != session);
            for path in &deleted {
                model.deleted(path);
            }
            !deleted.is_empty()
        }
    }
}

fn check_invariants(tree: &DataTree, model: &Model) {
    let paths = tree.paths();
    let modelled: Vec<&String> = model.nodes.keys().collect();
    assert_eq!(
        paths.iter().collect::<Vec<_>>(),
        modelled,
        "nodes differ from the model"
    );
    for path in &paths {
        let stat = tree.stat(path).unwrap();
        let (czxid, sets) = model.nodes[path];
        assert_eq!(stat.czxid, czxid, "czxid of {path}");
        assert_eq!(stat.version, sets, "version of {path}");
        let children = tree.children(path).unwrap();
        assert_eq!(
            stat.num_children as usize,
            children.len(),
            "num_children of {path}"
        );
        for child in &children {
            let child_path = zklock_recipe::path::join(path, child);
            assert!(
                tree.stat(&child_path).is_some(),
                "{child_path} listed but absent"
            );
        }
        if path != "/" {
            let parent = zklock_recipe::path::parent(path).unwrap();
            let name = zklock_recipe::path::basename(path).to_owned();
            assert!(
                tree.children(parent).unwrap().contains(&name),
                "{path} not listed"
            );
            assert_eq!(
                tree.stat(parent).unwrap().ephemeral_owner,
                0,
                "{path} under an ephemeral"
            );
        }
        let owner = SessionId(stat.ephemeral_owner);
        if stat.ephemeral_owner != 0 {
            assert!(
                !model.closed.contains(&owner),
                "{path} of closed session {owner} remains"
            );
            assert!(tree.ephemerals_of(owner).contains(path));
        }
    }
    for &session in &model.closed {
        assert!(tree.ephemerals_of(session).is_empty());
        assert!(!tree.has_watches(session));
    }
}

proptest! {
    #[test]
    fn random_ops_keep_zookeeper_invariants(actions in prop::collection::vec(action(), 0..60)) {
        let mut tree = DataTree::new();
        let mut model = Model {
            // A fresh tree holds ZooKeeper's own nodes besides "/".
            nodes: ["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]
                .into_iter()
                .map(|p| (p.to_owned(), (0, 0)))
                .collect(),
            last_suffix: BTreeMap::new(),
            closed: BTreeSet::new(),
            watches: BTreeSet::new(),
            fired: Vec::new(),
        };
        // The fixed parents: "/a", "/a/b", and "/e" owned by session 1.
        let mut setup = Vec::new();
        for (path, mode, owner) in [
            ("/a", CreateMode::Persistent, 1),
            ("/a/b", CreateMode::Persistent, 1),
            ("/e", CreateMode::Ephemeral, 1),
        ] {
            let (path, stat) = tree.create(SessionId(owner), path, b"", mode, &mut setup).unwrap();
            model.created(&path, mode, stat.czxid);
        }
        model.fired.clear();
        for action in &actions {
            let zxid = tree.last_zxid();
            let mut out = Vec::new();
            let wrote = run(&mut tree, &mut model, action, &mut out);
            let expected = if wrote { zxid + 1 } else { zxid };
            prop_assert_eq!(tree.last_zxid(), expected, "after {:?}", action);
            if !wrote {
                prop_assert!(out.is_empty(), "notifications without a write: {:?}", out);
            }
            for note in &out {
                prop_assert!(!model.closed.contains(&note.session), "closed session notified: {:?}", note);
            }
            model.notified(&tree, &out);
            check_invariants(&tree, &model);
        }
    }
}
