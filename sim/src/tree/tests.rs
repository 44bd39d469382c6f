//! One test per rule of ZooKeeper's data tree. Where the rule is subtle, the expected
//! values are those a real ZooKeeper 3.8 server gave for the same calls.

use super::*;

const S1: SessionId = SessionId(1);
const S2: SessionId = SessionId(2);
const S3: SessionId = SessionId(3);

use CreateMode::{Ephemeral, EphemeralSequential, Persistent, PersistentSequential};
use EventType::{NodeChildrenChanged, NodeCreated, NodeDataChanged, NodeDeleted};

fn note(session: SessionId, event_type: EventType, path: &str) -> Notification {
    Notification {
        session,
        event: WatchedEvent {
            event_type,
            path: path.to_owned(),
        },
    }
}

/// Creates `path` (persistent, empty) and returns its actual path.
fn mk(t: &mut DataTree, path: &str) -> String {
    mk_as(t, S1, path, Persistent)
}

fn mk_as(t: &mut DataTree, owner: SessionId, path: &str, mode: CreateMode) -> String {
    t.create(owner, path, b"", mode, &mut Vec::new())
        .unwrap_or_else(|e| panic!("create {path}: {e}"))
        .0
}

fn del(t: &mut DataTree, path: &str) {
    t.delete(path, None, &mut Vec::new())
        .unwrap_or_else(|e| panic!("delete {path}: {e}"));
}

fn is_bad_arguments<T: std::fmt::Debug>(r: Result<T, ZkError>) -> bool {
    matches!(r, Err(ZkError::BadArguments(_)))
}

// ---- The empty tree ----

/// A fresh ZooKeeper 3.8 server shows these nodes and stats (checked against one).
#[test]
fn new_tree_holds_zookeepers_own_nodes_as_a_fresh_server_does() {
    let t = DataTree::default();
    assert_eq!(
        t.paths(),
        vec!["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]
    );
    let with = |cversion, num_children| Stat {
        cversion,
        num_children,
        ..Stat::default()
    };
    assert_eq!(t.stat("/"), Some(with(-1, 1)));
    assert_eq!(t.stat("/zookeeper"), Some(with(-2, 2)));
    assert_eq!(t.stat("/zookeeper/config"), Some(Stat::default()));
    assert_eq!(t.stat("/zookeeper/quota"), Some(Stat::default()));
    assert_eq!(t.data("/"), Some(&b""[..]));
    assert_eq!(t.children("/"), Some(vec!["zookeeper".to_string()]));
    assert_eq!(
        t.children("/zookeeper"),
        Some(vec!["config".to_string(), "quota".to_string()])
    );
    assert_eq!(t.last_zxid(), 0);
}

/// The simulation once lacked `/zookeeper`: a create of it succeeded, one under its
/// quota node failed with NoNode, and writes to its config node with NoNode.
#[test]
fn zookeeper_subtree_refuses_writes_as_a_real_server_does() {
    let mut t = DataTree::new();
    let mut out = Vec::new();
    let p = CreateMode::Persistent;
    assert_eq!(
        t.create(S1, "/zookeeper", b"", p, &mut out),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        t.create(S1, "/zookeeper/quota", b"", p, &mut out),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        t.create(S1, "/zookeeper/config/x", b"", p, &mut out),
        Err(ZkError::NoAuth)
    );
    assert_eq!(
        t.set_data("/zookeeper/config", b"x", Some(7), &mut out),
        Err(ZkError::NoAuth)
    );
    for special in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
        assert!(
            is_bad_arguments(t.delete(special, Some(5), &mut out)),
            "{special}"
        );
    }
    assert_eq!(t.last_zxid(), 0);
    // Elsewhere under it, as anywhere: a create under /zookeeper takes sequence 1 after
    // one plain create, and the parent's cversion follows 2 * creates - children.
    t.create(S1, "/zookeeper/x", b"", p, &mut out).unwrap();
    let (seq, _) = t
        .create(
            S1,
            "/zookeeper/x-",
            b"",
            CreateMode::PersistentSequential,
            &mut out,
        )
        .unwrap();
    assert_eq!(seq, "/zookeeper/x-0000000001");
    assert_eq!(t.stat("/zookeeper").unwrap().cversion, 0);
    t.create(S1, "/zookeeper/quota/x", b"", p, &mut out)
        .unwrap();
    t.delete("/zookeeper/x", None, &mut out).unwrap();
    t.set_data("/zookeeper", b"a", None, &mut out).unwrap();
    // Sequential names at the root start from 0.
    let (s0, _) = t
        .create(S1, "/s-", b"", CreateMode::PersistentSequential, &mut out)
        .unwrap();
    assert_eq!(s0, "/s-0000000000");
    assert_eq!(t.stat("/").unwrap().cversion, 0);
}

// ---- Stat ----

#[test]
fn create_stores_data_and_initial_stat() {
    let mut t = DataTree::new();
    let (path, stat) = t
        .create(S1, "/a", b"hello", Persistent, &mut Vec::new())
        .unwrap();
    assert_eq!(path, "/a");
    let expected = Stat {
        czxid: 1,
        mzxid: 1,
        pzxid: 1,
        version: 0,
        cversion: 0,
        ephemeral_owner: 0,
        num_children: 0,
        data_length: 5,
    };
    assert_eq!(stat, expected);
    assert_eq!(t.stat("/a"), Some(expected));
    assert_eq!(t.data("/a"), Some(&b"hello"[..]));
}

#[test]
fn stat_fields_track_czxid_mzxid_pzxid() {
    let mut t = DataTree::new();
    mk(&mut t, "/a"); // zxid 1
    mk(&mut t, "/a/x"); // zxid 2
    t.set_data("/a", b"v", None, &mut Vec::new()).unwrap(); // zxid 3
    mk(&mut t, "/a/y"); // zxid 4
    let a = t.stat("/a").unwrap();
    assert_eq!((a.czxid, a.mzxid, a.pzxid), (1, 3, 4));
    del(&mut t, "/a/x"); // zxid 5
    let a = t.stat("/a").unwrap();
    assert_eq!((a.czxid, a.mzxid, a.pzxid), (1, 3, 5));
    // A child's own writes do not touch its parent's pzxid.
    t.set_data("/a/y", b"w", None, &mut Vec::new()).unwrap(); // zxid 6
    assert_eq!(t.stat("/a").unwrap().pzxid, 5);
    let y = t.stat("/a/y").unwrap();
    assert_eq!((y.czxid, y.mzxid, y.pzxid), (4, 6, 4));
}

#[test]
fn num_children_and_data_length_follow_the_node() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/x");
    mk(&mut t, "/a/y");
    assert_eq!(t.stat("/a").unwrap().num_children, 2);
    del(&mut t, "/a/x");
    assert_eq!(t.stat("/a").unwrap().num_children, 1);
    t.set_data("/a", b"abc", None, &mut Vec::new()).unwrap();
    assert_eq!(t.stat("/a").unwrap().data_length, 3);
    t.set_data("/a", b"", None, &mut Vec::new()).unwrap();
    assert_eq!(t.stat("/a").unwrap().data_length, 0);
}

#[test]
fn cversion_counts_child_creates_and_deletes() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let seq: Vec<String> = (0..3)
        .map(|_| mk_as(&mut t, S1, "/a/x-", PersistentSequential))
        .collect();
    del(&mut t, &seq[0]);
    del(&mut t, &seq[2]);
    // 3 creates + 2 deletes, as a real server reports.
    assert_eq!(t.stat("/a").unwrap().cversion, 5);
    // Data changes are not child changes.
    t.set_data("/a", b"v", None, &mut Vec::new()).unwrap();
    t.set_data(&seq[1], b"v", None, &mut Vec::new()).unwrap();
    assert_eq!(t.stat("/a").unwrap().cversion, 5);
}

// ---- Sequential names ----

#[test]
fn sequential_suffix_comes_from_parent_child_create_count() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    assert_eq!(
        mk_as(&mut t, S1, "/a/x-", PersistentSequential),
        "/a/x-0000000000"
    );
    assert_eq!(
        mk_as(&mut t, S1, "/a/y-", EphemeralSequential),
        "/a/y-0000000001"
    );
    // A plain create counts too: the counter is the parent's, shared by all names.
    mk(&mut t, "/a/plain");
    assert_eq!(
        mk_as(&mut t, S1, "/a/x-", PersistentSequential),
        "/a/x-0000000003"
    );
    // Each parent has its own counter.
    mk(&mut t, "/b");
    assert_eq!(
        mk_as(&mut t, S1, "/b/x-", PersistentSequential),
        "/b/x-0000000000"
    );
}

/// ZooKeeper's counter is a Java int formatted with `%010d`: past 2147483647 it wraps to
/// -2147483648 ('-' and ten digits), and from -999999999 it has '-' and nine.
#[test]
fn sequential_counter_wraps_like_a_java_int() {
    let mut t = DataTree::new();
    t.start_sequence_at("/d", i32::MAX - 1);
    mk(&mut t, "/d");
    let names: Vec<String> = (0..3)
        .map(|_| mk_as(&mut t, S1, "/d/n-", EphemeralSequential))
        .collect();
    assert_eq!(
        names,
        ["/d/n-2147483646", "/d/n-2147483647", "/d/n--2147483648"]
    );
    assert_eq!(t.stat("/d").unwrap().cversion, i32::MIN + 1);
    // Set on a directory that exists, it takes effect at once.
    t.start_sequence_at("/d", -2);
    let names: Vec<String> = (0..3)
        .map(|_| mk_as(&mut t, S1, "/d/n-", EphemeralSequential))
        .collect();
    assert_eq!(
        names,
        ["/d/n--000000002", "/d/n--000000001", "/d/n-0000000000"]
    );
}

#[test]
fn sequential_suffixes_never_repeat_after_deletes() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let seq: Vec<String> = (0..3)
        .map(|_| mk_as(&mut t, S1, "/a/x-", PersistentSequential))
        .collect();
    del(&mut t, &seq[0]);
    del(&mut t, &seq[2]);
    // A real 3.8 server: after 3 creates and 2 deletes the next suffix is 3 (deletes do
    // not advance it), and it never reuses 2, the deleted newest name.
    assert_eq!(
        mk_as(&mut t, S1, "/a/x-", PersistentSequential),
        "/a/x-0000000003"
    );
}

#[test]
fn sequential_create_with_trailing_slash() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    assert_eq!(
        mk_as(&mut t, S1, "/a/", PersistentSequential),
        "/a/0000000000"
    );
    assert_eq!(t.children("/a"), Some(vec!["0000000000".to_owned()]));
    // A trailing slash is only legal for a sequential create.
    assert!(is_bad_arguments(t.create(
        S1,
        "/a/",
        b"",
        Persistent,
        &mut Vec::new()
    )));
}

#[test]
fn sequential_name_taken_by_a_plain_node_is_node_exists() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/x-0000000001"); // the parent's counter becomes 1
    let before = t.clone();
    assert_eq!(
        t.create(S1, "/a/x-", b"", PersistentSequential, &mut Vec::new()),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        t, before,
        "a failed sequential create does not advance the counter"
    );
}

// ---- Create errors ----

#[test]
fn create_without_parent_is_no_node() {
    let mut t = DataTree::new();
    assert_eq!(
        t.create(S1, "/a/b", b"", Persistent, &mut Vec::new()),
        Err(ZkError::NoNode)
    );
    assert_eq!(
        t.create(S1, "/a/b-", b"", EphemeralSequential, &mut Vec::new()),
        Err(ZkError::NoNode)
    );
    assert_eq!(
        t.paths(),
        vec!["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]
    );
}

/// The simulation once created "/0000000000" for a sequential create of "/", and
/// answered a plain one with NodeExists; a real 3.8 server refuses both with
/// BadArguments.
#[test]
fn create_of_the_root_is_bad_arguments_sequential_or_not() {
    let mut t = DataTree::new();
    for mode in [
        Persistent,
        PersistentSequential,
        Ephemeral,
        EphemeralSequential,
    ] {
        assert!(is_bad_arguments(t.create(
            S1,
            "/",
            b"",
            mode,
            &mut Vec::new()
        )));
    }
    assert_eq!(t.last_zxid(), 0);
    // A sequential create under "/" with a name is as anywhere.
    assert_eq!(
        mk_as(&mut t, S1, "/s-", PersistentSequential),
        "/s-0000000000"
    );
}

#[test]
fn create_of_existing_node_is_node_exists() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    assert_eq!(
        t.create(S2, "/a", b"x", Ephemeral, &mut Vec::new()),
        Err(ZkError::NodeExists)
    );
    assert_eq!(t.stat("/a").unwrap().ephemeral_owner, 0);
}

#[test]
fn ephemeral_cannot_have_children() {
    let mut t = DataTree::new();
    mk_as(&mut t, S1, "/e", Ephemeral);
    for mode in [
        Persistent,
        PersistentSequential,
        Ephemeral,
        EphemeralSequential,
    ] {
        assert_eq!(
            t.create(S1, "/e/c", b"", mode, &mut Vec::new()),
            Err(ZkError::NoChildrenForEphemerals),
            "{mode:?}"
        );
    }
    assert_eq!(t.children("/e"), Some(vec![]));
    // As on a real server, an existing path is NodeExists even under an ephemeral.
    assert_eq!(
        t.create(S1, "/e", b"", Persistent, &mut Vec::new()),
        Err(ZkError::NodeExists)
    );
}

#[test]
fn ephemeral_owner_is_the_creating_session() {
    let mut t = DataTree::new();
    mk_as(&mut t, S2, "/e", Ephemeral);
    let (seq, stat) = t
        .create(S3, "/s-", b"", EphemeralSequential, &mut Vec::new())
        .unwrap();
    mk_as(&mut t, S2, "/p", Persistent);
    assert_eq!(t.stat("/e").unwrap().ephemeral_owner, 2);
    assert_eq!(stat.ephemeral_owner, 3);
    assert_eq!(t.stat("/p").unwrap().ephemeral_owner, 0);
    assert_eq!(t.ephemerals_of(S2), vec!["/e"]);
    assert_eq!(t.ephemerals_of(S3), vec![seq]);
    assert_eq!(t.ephemerals_of(S1), Vec::<String>::new());
}

// ---- Delete ----

#[test]
fn delete_of_missing_node_is_no_node() {
    let mut t = DataTree::new();
    assert_eq!(t.delete("/a", None, &mut Vec::new()), Err(ZkError::NoNode));
    assert_eq!(
        t.delete("/a/b", Some(0), &mut Vec::new()),
        Err(ZkError::NoNode)
    );
}

#[test]
fn delete_of_node_with_children_is_not_empty() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/b");
    assert_eq!(
        t.delete("/a", None, &mut Vec::new()),
        Err(ZkError::NotEmpty)
    );
    // As on a real server, a wrong version is reported before the children.
    assert_eq!(
        t.delete("/a", Some(7), &mut Vec::new()),
        Err(ZkError::BadVersion)
    );
    del(&mut t, "/a/b");
    del(&mut t, "/a");
    assert_eq!(
        t.paths(),
        vec!["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]
    );
}

#[test]
fn deleting_root_is_bad_arguments() {
    let mut t = DataTree::new();
    assert!(is_bad_arguments(t.delete("/", None, &mut Vec::new())));
    assert_eq!(t.last_zxid(), 0);
}

#[test]
fn delete_of_ephemeral_forgets_its_owner() {
    let mut t = DataTree::new();
    mk_as(&mut t, S1, "/e", Ephemeral);
    del(&mut t, "/e");
    assert_eq!(t.ephemerals_of(S1), Vec::<String>::new());
    // The session's later close deletes nothing and uses no zxid.
    let zxid = t.last_zxid();
    assert_eq!(t.close_session(S1, &mut Vec::new()), Vec::<String>::new());
    assert_eq!(t.last_zxid(), zxid);
}

// ---- Versions ----

#[test]
fn conditional_delete_checks_version() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.set_data("/a", b"v", None, &mut Vec::new()).unwrap(); // version 1
    assert_eq!(
        t.delete("/a", Some(0), &mut Vec::new()),
        Err(ZkError::BadVersion)
    );
    assert_eq!(
        t.delete("/a", Some(2), &mut Vec::new()),
        Err(ZkError::BadVersion)
    );
    assert!(t.stat("/a").is_some());
    assert_eq!(t.delete("/a", Some(1), &mut Vec::new()), Ok(()));
    assert_eq!(t.stat("/a"), None);
}

#[test]
fn conditional_set_data_checks_version() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    assert_eq!(
        t.set_data("/a", b"x", Some(1), &mut Vec::new()),
        Err(ZkError::BadVersion)
    );
    assert_eq!(t.data("/a"), Some(&b""[..]));
    let stat = t.set_data("/a", b"x", Some(0), &mut Vec::new()).unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(
        t.set_data("/a", b"y", Some(0), &mut Vec::new()),
        Err(ZkError::BadVersion)
    );
    assert_eq!(t.data("/a"), Some(&b"x"[..]));
}

#[test]
fn version_minus_one_matches_any_version() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.set_data("/a", b"x", None, &mut Vec::new()).unwrap();
    assert_eq!(
        t.set_data("/a", b"y", Some(-1), &mut Vec::new())
            .unwrap()
            .version,
        2
    );
    let check = [Op::Check {
        path: "/a".into(),
        version: -1,
    }];
    assert_eq!(
        t.multi(S1, &check, &mut Vec::new()),
        Ok(vec![OpResult::Check])
    );
    assert_eq!(t.delete("/a", Some(-1), &mut Vec::new()), Ok(()));
}

#[test]
fn version_increases_by_one_per_write() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    for expected in 1..=4 {
        let stat = t.set_data("/a", b"same", None, &mut Vec::new()).unwrap();
        assert_eq!(stat.version, expected, "even when the data does not change");
        assert_eq!(t.stat("/a").unwrap().version, expected);
    }
    // A recreated node starts again from 0.
    del(&mut t, "/a");
    mk(&mut t, "/a");
    assert_eq!(t.stat("/a").unwrap().version, 0);
}

#[test]
fn set_data_of_missing_node_is_no_node() {
    let mut t = DataTree::new();
    assert_eq!(
        t.set_data("/a", b"x", None, &mut Vec::new()),
        Err(ZkError::NoNode)
    );
    assert_eq!(t.last_zxid(), 0);
}

// ---- zxids ----

#[test]
fn zxid_increments_once_per_write() {
    let mut t = DataTree::new();
    let mut out = Vec::new();
    t.create(S1, "/a", b"", Persistent, &mut out).unwrap();
    assert_eq!(t.last_zxid(), 1);
    t.set_data("/a", b"x", None, &mut out).unwrap();
    assert_eq!(t.last_zxid(), 2);
    t.create(S1, "/a/s-", b"", EphemeralSequential, &mut out)
        .unwrap();
    assert_eq!(t.last_zxid(), 3);
    t.delete("/a/s-0000000000", None, &mut out).unwrap();
    assert_eq!(t.last_zxid(), 4);
    // Reads are not writes.
    t.exists("/a", Some(S1)).unwrap();
    t.get_data("/a", Some(S1)).unwrap();
    t.get_children("/a", Some(S1)).unwrap();
    assert_eq!(t.last_zxid(), 4);
    assert_eq!(t.stat("/a").unwrap().czxid, 1);
}

#[test]
fn failed_write_consumes_no_zxid() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/b");
    let before = t.clone();
    let mut out = Vec::new();
    assert!(t.create(S1, "/a", b"", Persistent, &mut out).is_err());
    assert!(t.create(S1, "/x/y", b"", Persistent, &mut out).is_err());
    assert!(t.delete("/a", None, &mut out).is_err());
    assert!(t.delete("/a/b", Some(3), &mut out).is_err());
    assert!(t.set_data("/nope", b"", None, &mut out).is_err());
    assert!(t.set_data("/a", b"", Some(9), &mut out).is_err());
    assert!(t.create(S1, "bad", b"", Persistent, &mut out).is_err());
    assert_eq!(t.last_zxid(), 2);
    assert_eq!(t, before);
    assert!(out.is_empty());
    assert_eq!(
        t.create(S1, "/c", b"", Persistent, &mut out)
            .unwrap()
            .1
            .czxid,
        3
    );
}

// ---- multi ----

fn create_op(path: &str, mode: CreateMode) -> Op {
    Op::Create {
        path: path.to_owned(),
        data: Vec::new(),
        mode,
    }
}

#[test]
fn multi_shares_one_zxid() {
    let mut t = DataTree::new();
    mk(&mut t, "/a"); // zxid 1
    let ops = [
        create_op("/a/x", Persistent),
        create_op("/a/s-", EphemeralSequential),
        Op::SetData {
            path: "/a".into(),
            data: b"v".to_vec(),
            version: Some(0),
        },
    ];
    let results = t.multi(S2, &ops, &mut Vec::new()).unwrap();
    assert_eq!(t.last_zxid(), 2);
    assert_eq!(t.stat("/a/x").unwrap().czxid, 2);
    assert_eq!(t.stat("/a/s-0000000001").unwrap().czxid, 2);
    assert_eq!(t.stat("/a/s-0000000001").unwrap().ephemeral_owner, 2);
    let a = t.stat("/a").unwrap();
    assert_eq!((a.mzxid, a.pzxid, a.version), (2, 2, 1));
    assert_eq!(
        results,
        vec![
            OpResult::Create {
                path: "/a/x".into(),
                stat: t.stat("/a/x").unwrap()
            },
            OpResult::Create {
                path: "/a/s-0000000001".into(),
                stat: t.stat("/a/s-0000000001").unwrap()
            },
            OpResult::SetData { stat: a },
        ]
    );
}

#[test]
fn multi_is_atomic_on_failure() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.exists("/a/x", Some(S2)).unwrap();
    t.get_children("/a", Some(S2)).unwrap();
    let before = t.clone();
    let ops = [
        create_op("/a/x", Persistent),
        create_op("/a/s-", PersistentSequential),
        Op::Delete {
            path: "/a/nope".into(),
            version: None,
        },
        create_op("/a/y", Persistent),
    ];
    let mut out = Vec::new();
    assert_eq!(
        t.multi(S1, &ops, &mut out),
        Err(ZkError::MultiFailed {
            index: 2,
            error: Box::new(ZkError::NoNode)
        })
    );
    // Same nodes, counters, zxid and watches; nothing notified.
    assert_eq!(t, before);
    assert!(out.is_empty());
    assert!(t.has_watches(S2));
    assert_eq!(
        mk_as(&mut t, S1, "/a/s-", PersistentSequential),
        "/a/s-0000000000"
    );
}

#[test]
fn multi_reports_the_first_failing_op() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let ops = [
        Op::Check {
            path: "/a".into(),
            version: 0,
        },
        Op::Check {
            path: "/a".into(),
            version: 5,
        },
        Op::Check {
            path: "/nope".into(),
            version: 0,
        },
    ];
    let err = t.multi(S1, &ops, &mut Vec::new()).unwrap_err();
    assert_eq!(
        err,
        ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::BadVersion)
        }
    );
    assert_eq!(err.root(), &ZkError::BadVersion);
    let bad_path = [create_op("/a/", Persistent)];
    let err = t.multi(S1, &bad_path, &mut Vec::new()).unwrap_err();
    assert!(matches!(err.root(), ZkError::BadArguments(_)), "{err:?}");
}

#[test]
fn multi_ops_see_earlier_ops_in_the_same_multi() {
    let mut t = DataTree::new();
    let ops = [
        create_op("/a", Persistent),
        Op::SetData {
            path: "/a".into(),
            data: b"v".to_vec(),
            version: Some(0),
        },
        Op::Check {
            path: "/a".into(),
            version: 1,
        },
        create_op("/a/b", Persistent),
        Op::Delete {
            path: "/a/b".into(),
            version: Some(0),
        },
        create_op("/a/s-", PersistentSequential),
    ];
    let results = t.multi(S1, &ops, &mut Vec::new()).unwrap();
    assert_eq!(results.len(), 6);
    // The sequential create saw the earlier create of "/a/b": its suffix is 1.
    assert_eq!(
        t.paths(),
        vec![
            "/",
            "/a",
            "/a/s-0000000001",
            "/zookeeper",
            "/zookeeper/config",
            "/zookeeper/quota"
        ]
    );
    assert_eq!(t.data("/a"), Some(&b"v"[..]));
    assert_eq!(t.last_zxid(), 1);
}

#[test]
fn multi_check_op_checks_existence_and_version() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let check = |path: &str, version| Op::Check {
        path: path.to_owned(),
        version,
    };
    assert_eq!(
        t.multi(S1, &[check("/a", 0)], &mut Vec::new()),
        Ok(vec![OpResult::Check])
    );
    // A check-only multi is still a transaction, as on a real server.
    assert_eq!(t.last_zxid(), 2);
    assert_eq!(
        t.multi(S1, &[check("/b", 0)], &mut Vec::new()),
        Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::NoNode)
        })
    );
    assert_eq!(
        t.multi(S1, &[check("/a", 1)], &mut Vec::new()),
        Err(ZkError::MultiFailed {
            index: 0,
            error: Box::new(ZkError::BadVersion)
        })
    );
    assert_eq!(t.last_zxid(), 2);
}

#[test]
fn empty_multi_is_a_no_op() {
    let mut t = DataTree::new();
    let before = t.clone();
    assert_eq!(t.multi(S1, &[], &mut Vec::new()), Ok(vec![]));
    assert_eq!(t, before);
}

#[test]
fn multi_notifications_follow_op_order() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/old");
    t.exists("/a/new", Some(S1)).unwrap();
    t.get_data("/a/old", Some(S2)).unwrap();
    t.get_children("/a", Some(S3)).unwrap();
    let ops = [
        create_op("/a/new", Persistent),
        Op::Delete {
            path: "/a/old".into(),
            version: None,
        },
    ];
    let mut out = Vec::new();
    t.multi(S1, &ops, &mut out).unwrap();
    // The create fires the child watch of "/a" first; the delete finds it gone (one-shot).
    assert_eq!(
        out,
        vec![
            note(S1, NodeCreated, "/a/new"),
            note(S3, NodeChildrenChanged, "/a"),
            note(S2, NodeDeleted, "/a/old"),
        ]
    );
}

// ---- Sessions ----

#[test]
fn close_session_removes_ephemerals_in_one_zxid() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk_as(&mut t, S1, "/a/e1", Ephemeral);
    mk_as(&mut t, S2, "/a/other", Ephemeral);
    mk_as(&mut t, S1, "/a/s-", EphemeralSequential);
    mk_as(&mut t, S1, "/p", Persistent);
    let zxid = t.last_zxid();
    let deleted = t.close_session(S1, &mut Vec::new());
    assert_eq!(deleted, vec!["/a/e1", "/a/s-0000000002"]);
    assert_eq!(t.last_zxid(), zxid + 1);
    assert_eq!(
        t.paths(),
        vec![
            "/",
            "/a",
            "/a/other",
            "/p",
            "/zookeeper",
            "/zookeeper/config",
            "/zookeeper/quota"
        ]
    );
    assert_eq!(t.ephemerals_of(S1), Vec::<String>::new());
    assert_eq!(t.ephemerals_of(S2), vec!["/a/other"]);
    let a = t.stat("/a").unwrap();
    assert_eq!((a.pzxid, a.cversion, a.num_children), (zxid + 1, 5, 1));
}

#[test]
fn close_session_without_ephemerals_consumes_no_zxid() {
    let mut t = DataTree::new();
    mk_as(&mut t, S1, "/p", Persistent);
    let before = t.clone();
    assert_eq!(t.close_session(S1, &mut Vec::new()), Vec::<String>::new());
    assert_eq!(t.close_session(S3, &mut Vec::new()), Vec::<String>::new());
    assert_eq!(t, before);
}

/// Watches of S1 (the closing session) and of others on S1's ephemerals and their parent.
fn watched_ephemerals() -> DataTree {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/p");
    mk_as(&mut t, S1, "/a/y", Ephemeral);
    mk_as(&mut t, S1, "/a/x", Ephemeral);
    t.exists("/a/y", Some(S2)).unwrap();
    t.exists("/a/y", Some(S1)).unwrap();
    t.get_data("/a/x", Some(S3)).unwrap();
    t.get_children("/a", Some(S2)).unwrap();
    t.get_children("/a", Some(S1)).unwrap();
    t.get_data("/p", Some(S1)).unwrap();
    t
}

#[test]
fn expire_session_notifies_other_sessions_in_path_order() {
    let mut t = watched_ephemerals();
    let mut out = Vec::new();
    t.expire_session(S1, &mut out);
    assert_eq!(
        out,
        vec![
            note(S3, NodeDeleted, "/a/x"),
            note(S2, NodeChildrenChanged, "/a"),
            note(S2, NodeDeleted, "/a/y"),
        ]
    );
    assert!(!t.has_watches(S1));
}

/// As a real server: the closing connection is still registered when the close deletes
/// its ephemerals (real/tests/real_server.rs checks the same on ZooKeeper).
#[test]
fn close_session_notifies_its_own_watches_on_what_it_deletes_and_drops_the_rest() {
    let mut t = watched_ephemerals();
    let mut out = Vec::new();
    t.close_session(S1, &mut out);
    assert_eq!(
        out,
        vec![
            note(S3, NodeDeleted, "/a/x"),
            note(S1, NodeChildrenChanged, "/a"),
            note(S2, NodeChildrenChanged, "/a"),
            note(S1, NodeDeleted, "/a/y"),
            note(S2, NodeDeleted, "/a/y"),
        ]
    );
    // Its watch on /p, which the close does not touch, is dropped unfired.
    assert!(!t.has_watches(S1));
}

#[test]
fn closed_session_watches_are_removed() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.exists("/absent", Some(S1)).unwrap();
    t.get_data("/a", Some(S1)).unwrap();
    t.get_children("/a", Some(S1)).unwrap();
    t.get_data("/a", Some(S2)).unwrap();
    assert!(t.has_watches(S1));
    t.close_session(S1, &mut Vec::new());
    assert!(!t.has_watches(S1));
    assert!(t.has_watches(S2));
    let mut out = Vec::new();
    mk(&mut t, "/absent");
    t.create(S2, "/a/c", b"", Persistent, &mut out).unwrap();
    t.set_data("/a", b"v", None, &mut out).unwrap();
    assert_eq!(out, vec![note(S2, NodeDataChanged, "/a")]);
}

// ---- Watches ----

#[test]
fn watch_is_one_shot() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.get_data("/a", Some(S1)).unwrap();
    let mut out = Vec::new();
    t.set_data("/a", b"1", None, &mut out).unwrap();
    t.set_data("/a", b"2", None, &mut out).unwrap();
    assert_eq!(out, vec![note(S1, NodeDataChanged, "/a")]);
    assert!(!t.has_watches(S1));
    // Setting the same watch twice still fires once.
    t.get_data("/a", Some(S1)).unwrap();
    t.exists("/a", Some(S1)).unwrap();
    out.clear();
    t.set_data("/a", b"3", None, &mut out).unwrap();
    assert_eq!(out, vec![note(S1, NodeDataChanged, "/a")]);
}

#[test]
fn exists_watch_fires_node_created() {
    let mut t = DataTree::new();
    assert_eq!(t.exists("/a", Some(S1)), Ok(None));
    assert!(t.has_watches(S1));
    let mut out = Vec::new();
    t.create(S2, "/a", b"", Persistent, &mut out).unwrap();
    assert_eq!(out, vec![note(S1, NodeCreated, "/a")]);
    assert!(!t.has_watches(S1));
}

#[test]
fn exists_watch_on_present_node_fires_data_changed_and_deleted() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let stat = t.exists("/a", Some(S1)).unwrap();
    assert_eq!(stat, t.stat("/a"));
    let mut out = Vec::new();
    t.set_data("/a", b"v", None, &mut out).unwrap();
    t.exists("/a", Some(S1)).unwrap();
    t.delete("/a", None, &mut out).unwrap();
    assert_eq!(
        out,
        vec![note(S1, NodeDataChanged, "/a"), note(S1, NodeDeleted, "/a")]
    );
}

#[test]
fn get_data_on_missing_node_leaves_no_watch() {
    let mut t = DataTree::new();
    assert_eq!(t.get_data("/a", Some(S1)), Err(ZkError::NoNode));
    assert!(!t.has_watches(S1));
    let mut out = Vec::new();
    t.create(S2, "/a", b"", Persistent, &mut out).unwrap();
    assert!(out.is_empty());
}

#[test]
fn get_children_on_missing_node_leaves_no_watch() {
    let mut t = DataTree::new();
    assert_eq!(t.get_children("/a", Some(S1)), Err(ZkError::NoNode));
    assert!(!t.has_watches(S1));
    let mut out = Vec::new();
    mk(&mut t, "/a");
    t.create(S2, "/a/b", b"", Persistent, &mut out).unwrap();
    assert!(out.is_empty());
}

#[test]
fn get_children_returns_sorted_names_and_data_returns_contents() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    for name in ["/a/c", "/a/a", "/a/b-"] {
        mk(&mut t, name);
    }
    mk_as(&mut t, S1, "/a/b-", PersistentSequential);
    assert_eq!(
        t.get_children("/a", None).unwrap(),
        vec!["a", "b-", "b-0000000003", "c"]
    );
    t.set_data("/a/a", b"xyz", None, &mut Vec::new()).unwrap();
    let (data, stat) = t.get_data("/a/a", None).unwrap();
    assert_eq!(
        (data.as_slice(), stat),
        (&b"xyz"[..], t.stat("/a/a").unwrap())
    );
    // Reads without a watcher leave none.
    assert!(!t.has_watches(S1));
}

#[test]
fn create_fires_node_created_then_parent_children_changed() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.get_children("/a", Some(S1)).unwrap();
    t.exists("/a/b", Some(S2)).unwrap();
    let mut out = Vec::new();
    t.create(S3, "/a/b", b"", Persistent, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            note(S2, NodeCreated, "/a/b"),
            note(S1, NodeChildrenChanged, "/a")
        ]
    );
}

#[test]
fn delete_fires_node_deleted_and_parent_children_changed() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/b");
    t.get_children("/a", Some(S1)).unwrap();
    t.exists("/a/b", Some(S2)).unwrap();
    t.get_children("/a/b", Some(S3)).unwrap();
    let mut out = Vec::new();
    t.delete("/a/b", None, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            note(S2, NodeDeleted, "/a/b"),
            note(S3, NodeDeleted, "/a/b"),
            note(S1, NodeChildrenChanged, "/a"),
        ]
    );
    for s in [S1, S2, S3] {
        assert!(!t.has_watches(s));
    }
}

#[test]
fn data_and_child_watch_on_deleted_node_notify_once() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.get_data("/a", Some(S1)).unwrap();
    t.get_children("/a", Some(S1)).unwrap();
    let mut out = Vec::new();
    t.delete("/a", None, &mut out).unwrap();
    assert_eq!(out, vec![note(S1, NodeDeleted, "/a")]);
    // Both watches are spent.
    assert!(!t.has_watches(S1));
}

#[test]
fn set_data_fires_node_data_changed() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    mk(&mut t, "/a/b");
    t.get_data("/a/b", Some(S2)).unwrap();
    t.exists("/a/b", Some(S1)).unwrap();
    // A child watch on the parent ignores a child's data; one on the node ignores its own.
    t.get_children("/a", Some(S3)).unwrap();
    t.get_children("/a/b", Some(S3)).unwrap();
    let mut out = Vec::new();
    t.set_data("/a/b", b"v", None, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            note(S1, NodeDataChanged, "/a/b"),
            note(S2, NodeDataChanged, "/a/b")
        ]
    );
    assert!(t.has_watches(S3));
}

#[test]
fn notifications_of_one_trigger_go_in_ascending_session_order() {
    let mut t = DataTree::new();
    for s in [S3, S1, S2] {
        t.exists("/a", Some(s)).unwrap();
    }
    let mut out = Vec::new();
    mk(&mut t, "/a");
    t.create(S1, "/a", b"", Persistent, &mut out).unwrap_err();
    assert!(out.is_empty());
    for s in [S2, S3, S1] {
        t.exists("/a", Some(s)).unwrap();
    }
    t.delete("/a", None, &mut out).unwrap();
    let sessions: Vec<SessionId> = out.iter().map(|n| n.session).collect();
    assert_eq!(sessions, vec![S1, S2, S3]);
}

#[test]
fn failed_write_fires_no_watch() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    t.get_data("/a", Some(S1)).unwrap();
    t.get_children("/a", Some(S1)).unwrap();
    let mut out = Vec::new();
    assert!(t.set_data("/a", b"x", Some(4), &mut out).is_err());
    assert!(t.delete("/a", Some(4), &mut out).is_err());
    assert!(t.create(S1, "/a", b"", Persistent, &mut out).is_err());
    assert!(out.is_empty());
    assert!(t.has_watches(S1));
}

// ---- Validation ----

#[test]
fn invalid_paths_are_rejected_as_bad_arguments() {
    let mut t = DataTree::new();
    mk(&mut t, "/a");
    let before = t.clone();
    for bad in [
        "", "a", "/a/", "//a", "/a//b", "/a/.", "/a/../a", "/a\0b", "/a\u{1}",
    ] {
        assert!(
            is_bad_arguments(t.create(S1, bad, b"", Persistent, &mut Vec::new())),
            "{bad:?}"
        );
        assert!(
            is_bad_arguments(t.delete(bad, None, &mut Vec::new())),
            "{bad:?}"
        );
        assert!(
            is_bad_arguments(t.set_data(bad, b"", None, &mut Vec::new())),
            "{bad:?}"
        );
        assert!(is_bad_arguments(t.exists(bad, Some(S1))), "{bad:?}");
        assert!(is_bad_arguments(t.get_data(bad, Some(S1))), "{bad:?}");
        assert!(is_bad_arguments(t.get_children(bad, Some(S1))), "{bad:?}");
        let check = [Op::Check {
            path: bad.to_owned(),
            version: 0,
        }];
        let err = t.multi(S1, &check, &mut Vec::new()).unwrap_err();
        assert!(matches!(err.root(), ZkError::BadArguments(_)), "{bad:?}");
    }
    // Sequential creates allow a trailing slash, but not the rest.
    assert!(is_bad_arguments(t.create(
        S1,
        "//",
        b"",
        PersistentSequential,
        &mut Vec::new()
    )));
    assert!(is_bad_arguments(t.create(
        S1,
        "a-",
        b"",
        EphemeralSequential,
        &mut Vec::new()
    )));
    assert_eq!(t, before, "nothing changed, no watch left");
}

#[test]
fn oversized_data_is_rejected() {
    let mut t = DataTree::new();
    let max = vec![7u8; DataTree::DATA_BYTES_MAX];
    let over = vec![7u8; DataTree::DATA_BYTES_MAX + 1];
    assert!(is_bad_arguments(t.create(
        S1,
        "/a",
        &over,
        Persistent,
        &mut Vec::new()
    )));
    assert_eq!(t.last_zxid(), 0);
    let (_, stat) = t
        .create(S1, "/a", &max, Persistent, &mut Vec::new())
        .unwrap();
    assert_eq!(stat.data_length as usize, DataTree::DATA_BYTES_MAX);
    assert!(is_bad_arguments(t.set_data(
        "/a",
        &over,
        None,
        &mut Vec::new()
    )));
    let set_over = [Op::SetData {
        path: "/a".into(),
        data: over,
        version: None,
    }];
    let err = t.multi(S1, &set_over, &mut Vec::new()).unwrap_err();
    assert!(matches!(err.root(), ZkError::BadArguments(_)));
    assert_eq!(t.stat("/a").unwrap().version, 0);
    assert_eq!(t.last_zxid(), 1);
}

// ---- Inspection ----

#[test]
fn inspection_reports_none_for_absent_or_invalid_paths() {
    let t = DataTree::new();
    for path in ["/a", "", "bad", "/a/"] {
        assert_eq!(t.stat(path), None);
        assert_eq!(t.data(path), None);
        assert_eq!(t.children(path), None);
    }
}

#[test]
fn paths_lists_every_node_sorted() {
    let mut t = DataTree::new();
    for path in ["/b", "/a", "/a/z", "/a/b", "/a-"] {
        mk(&mut t, path);
    }
    assert_eq!(
        t.paths(),
        vec![
            "/",
            "/a",
            "/a-",
            "/a/b",
            "/a/z",
            "/b",
            "/zookeeper",
            "/zookeeper/config",
            "/zookeeper/quota"
        ]
    );
}
