//! The API on a healthy connection: acquire, release, try, timeout, with_lock, cleanup of
//! dropped futures, invalid arguments, participants.

use crate::common::{DIR, nodes, sim, sleep_ms, wait_until};
use futures_util::future::{self, Either};
use std::pin::pin;
use std::time::Duration;
use zklock_recipe::{
    Coordination, CreateMode, Lock, LockError, LockOptions, NodeKind, lock::NamingStyle,
};

#[test]
fn acquire_and_release_leaves_only_the_directory() {
    let (token, during, after, paths) = sim(1, |sim| async move {
        let lock = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        let during = nodes(&sim);
        let token = guard.fencing_token();
        assert_eq!(guard.is_lost(), None);
        assert!(!guard.revoke_requested());
        guard.release().await.unwrap();
        (token, during, nodes(&sim), sim.server_paths())
    });
    assert_eq!(during.len(), 1, "{during:?}");
    assert!(during[0].starts_with("_c_") && during[0].ends_with("-lock-0000000000"));
    assert!(token.0 > 0);
    assert!(after.is_empty());
    // ZooKeeper's own nodes stand beside the lock's, as on a real server.
    assert_eq!(
        paths,
        [
            "/",
            "/locks",
            "/locks/a",
            "/zookeeper",
            "/zookeeper/config",
            "/zookeeper/quota"
        ]
    );
}

#[test]
fn try_acquire_on_a_held_lock_returns_none_and_leaves_no_node() {
    sim(2, |sim| async move {
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let before = nodes(&sim);
        assert!(b.try_acquire().await.unwrap().is_none());
        assert_eq!(nodes(&sim), before, "b's node must be gone");
        assert!(b.pending_cleanup().is_empty());
        held.release().await.unwrap();
        let got = b.try_acquire().await.unwrap().expect("free now");
        assert_eq!(nodes(&sim).len(), 1);
        got.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn acquire_timeout_expires_and_leaves_no_node() {
    sim(3, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let before = nodes(&sim);
        let start = bc.now();
        let err = b
            .acquire_timeout(Duration::from_millis(500))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            LockError::Timeout {
                waited: Duration::from_millis(500)
            }
        );
        assert!(bc.now() - start >= Duration::from_millis(500));
        assert_eq!(nodes(&sim), before);
        assert!(b.pending_cleanup().is_empty());
        held.release().await.unwrap();
        // The lock object is usable again.
        b.acquire_timeout(Duration::from_secs(1))
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn acquire_until_cancelled_leaves_no_node() {
    sim(4, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let err = b.acquire_until(sleep_ms(&bc, 100)).await.unwrap_err();
        assert_eq!(err, LockError::Cancelled);
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
    });
}

#[test]
fn invalid_lock_path_is_refused_before_anything_is_created() {
    let (before, after) = sim(5, |sim| async move {
        let before = sim.server_paths();
        for bad in ["locks", "/locks/", "/locks//a", "/locks/./a", ""] {
            let err = Lock::new(sim.client(), bad, LockOptions::default()).unwrap_err();
            assert!(
                matches!(err, LockError::InvalidPath { .. }),
                "{bad:?}: {err}"
            );
        }
        for bad in ["", "a/b", "a\u{1}"] {
            let options = LockOptions {
                guid: Some(bad.into()),
                ..LockOptions::default()
            };
            let err = Lock::new(sim.client(), DIR, options).unwrap_err();
            assert!(
                matches!(err, LockError::InvalidGuid { .. }),
                "{bad:?}: {err}"
            );
        }
        (before, sim.server_paths())
    });
    assert_eq!(before, after);
    assert_eq!(
        after,
        ["/", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"]
    );
}

#[test]
fn with_lock_releases_after_the_closure() {
    sim(6, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let s = sim.clone();
        let (seen, token) = lock
            .with_lock(|token| async move {
                sleep_ms(&c, 10).await;
                (nodes(&s), token)
            })
            .await
            .unwrap();
        assert_eq!(seen.len(), 1);
        assert!(token.0 > 0);
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_second_contender_on_one_lock_object_is_refused() {
    sim(7, |sim| async move {
        let lock = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        assert_eq!(lock.try_acquire().await.unwrap_err(), LockError::InUse);
        assert_eq!(nodes(&sim).len(), 1);
        guard.release().await.unwrap();
        lock.acquire().await.unwrap().release().await.unwrap();
    });
}

#[test]
fn a_dropped_acquire_leaves_no_node_without_another_call() {
    sim(8, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        {
            let acquire = pin!(b.acquire());
            let give_up = pin!(sleep_ms(&bc, 100));
            assert!(matches!(
                future::select(acquire, give_up).await,
                Either::Right(_)
            ));
        }
        // Dropped while waiting: its node goes to the client's background cleanup, not to
        // the lock object.
        assert!(b.pending_cleanup().is_empty());
        sleep_ms(&bc, 10).await;
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        assert_eq!(sim.detached_cleanups_pending(&bc), 0);
        // The lock object is usable again, and nothing was left for it to do.
        held.release().await.unwrap();
        b.acquire().await.unwrap().release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_dropped_guard_leaves_no_node_without_another_call() {
    sim(9, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let first = lock.acquire().await.unwrap().node().clone();
        // The guard was dropped unreleased: the background cleanup deletes its node.
        assert!(lock.pending_cleanup().is_empty());
        sleep_ms(&c, 10).await;
        assert!(nodes(&sim).is_empty(), "{:?}", nodes(&sim));
        let second = lock.acquire().await.unwrap();
        assert_eq!(nodes(&sim), [second.node().name.clone()]);
        assert!(second.sequence() > first.sequence);
        second.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_guard_taken_apart_with_into_node_leaves_its_node_to_the_caller() {
    sim(9, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let node = lock.acquire().await.unwrap().into_node();
        // Nothing was deleted, now or in the background, and the lock object is free.
        sleep_ms(&c, 10).await;
        assert_eq!(nodes(&sim), std::slice::from_ref(&node.name));
        assert!(lock.pending_cleanup().is_empty());
        // A second acquire queues behind the node the caller now answers for.
        assert!(lock.try_acquire().await.unwrap().is_none());
        c.delete(&node.path, None).await.unwrap();
        let again = lock.acquire().await.unwrap();
        again.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_guard_dropped_while_another_waits_hands_the_lock_over() {
    sim(12, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let waiter = sim.spawn(async move {
            let g = b.acquire().await.unwrap();
            let name = g.node().name.clone();
            g.release().await.unwrap();
            name
        });
        wait_until(&bc, || nodes(&sim).len() == 2).await;
        let second = nodes(&sim)
            .into_iter()
            .find(|n| *n != held.node().name)
            .unwrap();
        // Dropped, not released: the waiter is granted once the background delete lands.
        drop(held);
        assert_eq!(waiter.await, second);
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn participants_lists_curator_and_kazoo_contenders_in_sequence_order() {
    sim(10, |sim| async move {
        let k = sim.client();
        let lock = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let held = lock.acquire().await.unwrap(); // sequence 0, Curator style
        let seq = CreateMode::EphemeralSequential;
        k.create(&format!("{DIR}/ffff__lock__"), b"kazoo", seq)
            .await
            .unwrap();
        k.create(&format!("{DIR}/_c_0-9-__READ__"), b"", seq)
            .await
            .unwrap();
        k.create(&format!("{DIR}/aaaa__rlock__"), b"", seq)
            .await
            .unwrap();
        k.create(&format!("{DIR}/config"), b"", CreateMode::Persistent)
            .await
            .unwrap();
        let got: Vec<_> = lock
            .participants()
            .await
            .unwrap()
            .into_iter()
            .map(|n| (n.sequence, n.kind, n.style, n.guid().map(str::to_owned)))
            .collect();
        let guid = held.node().name[3..]
            .split("-lock-")
            .next()
            .unwrap()
            .to_owned();
        assert_eq!(
            got,
            [
                (0, NodeKind::Exclusive, NamingStyle::Curator, Some(guid)),
                (
                    1,
                    NodeKind::Exclusive,
                    NamingStyle::Kazoo,
                    Some("ffff".into())
                ),
                (2, NodeKind::Read, NamingStyle::Curator, Some("0-9".into())),
                (3, NodeKind::Read, NamingStyle::Kazoo, Some("aaaa".into())),
            ]
        );
    });
}

#[test]
fn waiters_are_granted_in_sequence_order() {
    let order = sim(11, |sim| async move {
        let main = sim.client();
        let granted = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..4 {
            let lock = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
            let granted = granted.clone();
            let c = lock.client().clone();
            tasks.push(sim.spawn(async move {
                let guard = lock.acquire().await.unwrap();
                granted.lock().unwrap().push(i);
                sleep_ms(&c, 50).await;
                guard.release().await.unwrap();
            }));
            // Enqueue one at a time, so that sequence order is i's order.
            let s = sim.clone();
            wait_until(&main, || nodes(&s).len() == i + 1).await;
        }
        for t in tasks {
            t.await;
        }
        assert!(nodes(&sim).is_empty());
        granted.lock().unwrap().clone()
    });
    assert_eq!(order, [0, 1, 2, 3]);
}

/// The requests `client` made from history event `from` on, as "> Op" when sent and
/// "< Op" when answered, in the order the client saw them.
fn requests(sim: &zklock_sim::Sim, client: &zklock_sim::SimClient, from: usize) -> Vec<String> {
    use zklock_recipe::history::EventKind;
    let mut ops = std::collections::BTreeMap::new();
    let session = client.session_id();
    let h = sim.history();
    h.events[from..]
        .iter()
        .filter(|e| e.session == session)
        .filter_map(|e| match &e.kind {
            EventKind::OpInvoke { op_id, op, .. } => {
                ops.insert(*op_id, *op);
                Some(format!("> {op:?}"))
            }
            EventKind::OpOk { op_id } => Some(format!("< {:?}", ops[op_id])),
            _ => None,
        })
        .collect()
}

#[test]
fn an_uncontended_acquisition_sends_the_listing_behind_the_create() {
    let trace = sim(40, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        lock.acquire().await.unwrap().release().await.unwrap(); // creates the directory
        let from = sim.history().events.len();
        lock.acquire().await.unwrap().release().await.unwrap();
        requests(&sim, &c, from)
    });
    // One round trip to acquire, one to release; no read of our own node.
    assert_eq!(
        trace,
        [
            "> Create",
            "> GetChildren",
            "< Create",
            "< GetChildren",
            "> Delete",
            "< Delete"
        ]
    );
}

/// Create and listing in one round trip, the blocker's watch, the listing after it fired,
/// the delete: no read of our own node unless the guard's signals are awaited.
#[test]
fn a_waiter_sends_no_more_requests_than_curator() {
    let trace = sim(41, |sim| async move {
        let (ac, bc) = (sim.client(), sim.client());
        let a = Lock::new(ac.clone(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let from = sim.history().events.len();
        let waiting = sim.spawn(async move { b.acquire().await.unwrap().release().await });
        wait_until(&ac, || sim.server_children(DIR).len() == 2).await;
        sleep_ms(&ac, 100).await;
        held.release().await.unwrap();
        waiting.await.unwrap();
        requests(&sim, &bc, from)
    });
    assert_eq!(
        trace,
        [
            "> Create",
            "> GetChildren",
            "< Create",
            "< GetChildren",
            "> GetData",
            "< GetData",
            "> GetChildren",
            "< GetChildren",
            "> Delete",
            "< Delete"
        ]
    );
}
