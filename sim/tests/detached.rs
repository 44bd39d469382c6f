//! The client library's background cleanup (`Coordination::cleanup_detached`) in the
//! simulated world: ordinary requests in the history, retried through connection loss,
//! dropped with the session, and deterministic, also when madsim drops an aborted actor.

use futures_util::future::{Either, select};
use std::pin::pin;
use std::time::Duration;
use zklock_recipe::history::{EventKind, History, ZkOp};
use zklock_recipe::lock::{Lock, LockOptions};
use zklock_recipe::{Coordination, CreateMode, DetachedCleanup, SessionId};
use zklock_sim::{Sim, SimClient, SimConfig, run};

fn cfg(seed: u64) -> SimConfig {
    SimConfig::with_seed(seed)
}

/// Client `c`'s requests in the history, from its `skip`-th on: (op, path, outcome).
fn ops(sim: &Sim, c: &SimClient, skip: usize) -> Vec<(ZkOp, String, &'static str)> {
    let events = sim.history().events;
    let outcome = |id: u64| {
        events.iter().find_map(|e| match &e.kind {
            EventKind::OpOk { op_id } if *op_id == id => Some("ok"),
            EventKind::OpUnknown { op_id } if *op_id == id => Some("unknown"),
            EventKind::OpFail { op_id, .. } if *op_id == id => Some("fail"),
            _ => None,
        })
    };
    events
        .iter()
        .filter(|e| e.client as usize == c.index())
        .filter_map(|e| match &e.kind {
            EventKind::OpInvoke {
                op_id, op, path, ..
            } => Some((*op, path.to_string(), outcome(*op_id).unwrap_or("pending"))),
            _ => None,
        })
        .skip(skip)
        .collect()
}

#[test]
fn detached_cleanup_appears_in_the_history_as_ordinary_ops() {
    run(cfg(1), |sim| async move {
        let (a, b) = (sim.client(), sim.client());
        let seq = CreateMode::EphemeralSequential;
        a.create("/d", b"", CreateMode::Persistent).await.unwrap();
        let (mine1, _) = a.create("/d/_c_f-lock-", b"", seq).await.unwrap();
        let (theirs, _) = b.create("/d/_c_f-lock-", b"", seq).await.unwrap();
        let (mine2, _) = a.create("/d/_c_f-lock-", b"", seq).await.unwrap();
        let (other, _) = a.create("/d/_c_g-lock-", b"", seq).await.unwrap();
        let (plain, _) = a
            .create("/d/plain", b"", CreateMode::Ephemeral)
            .await
            .unwrap();
        let before = ops(&sim, &a, 0).len();
        a.cleanup_detached(DetachedCleanup::Node(plain.clone()));
        a.cleanup_detached(DetachedCleanup::OwnedMatching {
            dir: "/d".into(),
            fragment: "_c_f-lock-".into(),
        });
        a.sleep(Duration::from_millis(100)).await;
        // Only a's nodes with the fragment, and the named node, are gone.
        let mut left = [theirs.clone(), other.clone()];
        left.sort();
        let left: Vec<String> = left.iter().map(|p| p[3..].to_owned()).collect();
        assert_eq!(sim.server_children("/d"), left);
        assert_eq!(sim.detached_cleanups_pending(&a), 0);
        // Each step is one ordinary request of a's, in order: the delete, the listing,
        // an owner check per matching child (in name order), the deletes of its own.
        assert_eq!(
            ops(&sim, &a, before),
            [
                (ZkOp::Delete, plain, "ok"),
                (ZkOp::GetChildren, "/d".to_owned(), "ok"),
                (ZkOp::Exists, mine1.clone(), "ok"),
                (ZkOp::Delete, mine1, "ok"),
                (ZkOp::Exists, theirs, "ok"),
                (ZkOp::Exists, mine2.clone(), "ok"),
                (ZkOp::Delete, mine2, "ok"),
            ]
        );
        // Recorded with a's session, as a's requests.
        let session = a.session_id();
        let h = sim.history();
        let invokes = h.events.iter().filter(|e| {
            e.client as usize == a.index() && matches!(e.kind, EventKind::OpInvoke { .. })
        });
        assert!(invokes.into_iter().all(|e| e.session == session));
    })
    .unwrap();
}

#[test]
fn detached_cleanup_of_an_ended_session_does_nothing() {
    run(cfg(2), |sim| async move {
        let a = sim.client();
        a.create("/n", b"", CreateMode::Persistent).await.unwrap();
        a.close().await.unwrap();
        let before = ops(&sim, &a, 0).len();
        a.cleanup_detached(DetachedCleanup::Node("/n".into()));
        a.sleep(Duration::from_millis(100)).await;
        assert_eq!(sim.detached_cleanups_pending(&a), 0);
        assert_eq!(ops(&sim, &a, before), []);
        assert!(sim.server_stat("/n").is_some());
    })
    .unwrap();
}

#[test]
fn detached_cleanup_waits_out_a_disconnect_and_fails_nothing() {
    run(cfg(3), |sim| async move {
        let a = sim.client();
        let (p, _) = a.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
        sim.disconnect(&a);
        a.sleep(Duration::from_millis(1)).await;
        let before = ops(&sim, &a, 0).len();
        a.cleanup_detached(DetachedCleanup::Node(p.clone()));
        a.sleep(Duration::from_millis(50)).await;
        // Not sent while disconnected (it could only fail), sent once reconnected.
        assert_eq!(ops(&sim, &a, before), []);
        assert_eq!(sim.detached_cleanups_pending(&a), 1);
        a.sleep(Duration::from_millis(500)).await;
        assert_eq!(ops(&sim, &a, before), [(ZkOp::Delete, p, "ok")]);
        assert_eq!(sim.detached_cleanups_pending(&a), 0);
    })
    .unwrap();
}

/// Locks dropped in every way a program can drop them, under a disconnect: a waiter's
/// actor aborted (madsim drops its acquire outside any poll), an acquire future dropped
/// by its own actor, a guard dropped unreleased while disconnected. Returns the history,
/// the choices and the nodes left.
fn drops_workload(config: SimConfig) -> (History, Vec<u32>, Vec<String>) {
    run(config, |s| async move {
        let clients: Vec<SimClient> = (0..3).map(|_| s.client()).collect();
        let lock = |c: &SimClient| Lock::new(c.clone(), "/l", LockOptions::default());
        let holder = lock(&clients[0]).unwrap();
        let held = holder.acquire().await.unwrap();
        let aborted = {
            let lock = lock(&clients[1]).unwrap();
            s.spawn(async move { lock.acquire().await.map(drop) })
        };
        let dropper = {
            let c = clients[2].clone();
            let lock = lock(&c).unwrap();
            s.spawn(async move {
                let acquire = pin!(lock.acquire());
                let give_up = pin!(c.sleep(Duration::from_millis(40)));
                assert!(matches!(select(acquire, give_up).await, Either::Right(_)));
            })
        };
        clients[0].sleep(Duration::from_millis(20)).await;
        aborted.abort();
        dropper.await;
        s.disconnect(&clients[0]);
        drop(held);
        clients[0].sleep(Duration::from_secs(2)).await;
        (s.history(), s.choices(), s.server_children("/l"))
    })
    .unwrap()
}

#[test]
fn dropped_locks_leave_nothing_and_the_same_seed_gives_the_same_history() {
    let (history, choices, left) = drops_workload(cfg(7));
    assert_eq!(left, Vec::<String>::new(), "every dropped node was deleted");
    // Every client's node was deleted by a request no actor issued.
    for client in 0..3u32 {
        let deletes = history
            .events
            .iter()
            .filter(|e| e.client == client)
            .filter(|e| {
                matches!(
                    &e.kind,
                    EventKind::OpInvoke {
                        op: ZkOp::Delete,
                        ..
                    }
                )
            })
            .count();
        assert!(deletes >= 1, "client {client} deleted nothing");
    }
    assert_ne!(history.events[0].session, SessionId(0));
    assert_eq!(
        drops_workload(cfg(7)),
        (history.clone(), choices.clone(), left)
    );
    // madsim's own task order (which also decides when it drops the aborted actor)
    // changes nothing.
    for madsim_seed in 100..108 {
        let c = SimConfig {
            madsim_seed: Some(madsim_seed),
            ..cfg(7)
        };
        let (h, ch, _) = drops_workload(c);
        assert_eq!(h, history, "madsim seed {madsim_seed}");
        assert_eq!(ch, choices, "madsim seed {madsim_seed}");
    }
}

#[test]
fn a_crash_ends_the_background_cleanup_with_the_process() {
    run(cfg(4), |sim| async move {
        let a = sim.client();
        let (p, _) = a.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
        sim.disconnect(&a);
        a.cleanup_detached(DetachedCleanup::Node(p.clone()));
        sim.sleep(Duration::from_millis(1)).await;
        assert_eq!(sim.detached_cleanups_pending(&a), 1);
        sim.crash(&a);
        sim.sleep(Duration::from_millis(1)).await;
        assert_eq!(sim.detached_cleanups_pending(&a), 0);
        // Nothing is queued for a crashed process; its session expires instead.
        a.cleanup_detached(DetachedCleanup::Node(p.clone()));
        sim.sleep(Duration::from_secs(10)).await;
        assert_eq!(sim.detached_cleanups_pending(&a), 0);
        assert!(sim.server_stat(&p).is_none());
    })
    .unwrap();
}

#[test]
fn a_guard_dropped_outside_the_simulation_does_not_panic() {
    // The guard outlives the run: its drop hands the node over from outside any actor.
    let (lock, guard) = run(cfg(5), |sim| async move {
        let lock = Lock::new(sim.client(), "/o", LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        (lock, guard)
    })
    .unwrap();
    drop(guard);
    drop(lock);
}

/// The guid of a lock node `_c_<guid>-lock-NNNNNNNNNN`.
fn guid_of(node: &str) -> &str {
    let name = node.rsplit('/').next().unwrap();
    name.strip_prefix("_c_")
        .and_then(|n| n.rsplit_once("-lock-"))
        .map(|(guid, _)| guid)
        .unwrap()
}

/// Two lock objects of one session shared their default guids (`<session>-1` for each
/// first attempt): an acquire whose create reply was lost looks for its node by guid,
/// and a leader latch made anew for each term adopted the node its closed predecessor's
/// dropped attempt had made and was deleting, on a real server (two leaders at once).
/// Each lock object of a session now numbers its guid apart, the first as before.
#[test]
fn two_lock_objects_of_one_session_never_share_a_guid() {
    run(cfg(3), |sim| async move {
        let a = sim.client();
        a.create("/d", b"", CreateMode::Persistent).await.unwrap();
        let mut guids = Vec::new();
        for _ in 0..3 {
            let lock = Lock::new(a.clone(), "/d", LockOptions::default()).unwrap();
            for _ in 0..2 {
                let g = lock.acquire().await.unwrap();
                guids.push(guid_of(g.path()).to_owned());
                g.release().await.unwrap();
            }
        }
        let hex = format!("{:x}", a.session_id().0);
        let first: Vec<String> = ["1", "2"].iter().map(|n| format!("{hex}-{n}")).collect();
        assert_eq!(
            guids[..2],
            first[..],
            "the first object's guids are as they were"
        );
        let mut distinct = guids.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), guids.len(), "{guids:?}");
        // A given base is the user's: used as it is, by every object it is given to.
        let given = LockOptions {
            guid: Some("mine".into()),
            ..LockOptions::default()
        };
        let lock = Lock::new(a.clone(), "/d", given).unwrap();
        let g = lock.acquire().await.unwrap();
        assert_eq!(guid_of(g.path()), "mine-1");
        g.release().await.unwrap();
    })
    .unwrap();
}
