//! Dropped acquires and guards: their nodes go to the client's background cleanup
//! (`Coordination::cleanup_detached`), which deletes them without any further call on the
//! lock object, through lost create replies, connection loss and session expiry.

use crate::common::{DIR, nodes, ops_since, sim, sleep_ms};
use futures_util::future::{self, Either};
use std::pin::pin;
use std::time::Duration;
use zklock_recipe::history::ZkOp;
use zklock_recipe::lock::{RetryPolicy, ensure_path};
use zklock_recipe::path::join;
use zklock_recipe::{Coordination, Lock, LockOptions, SessionState};
use zklock_sim::SimClient;

/// Drops `acquire` after `ms` of virtual time, asserting it had not finished.
async fn drop_after<F: std::future::Future>(c: &SimClient, ms: u64, acquire: F) {
    let acquire = pin!(acquire);
    let give_up = pin!(sleep_ms(c, ms));
    assert!(
        matches!(future::select(acquire, give_up).await, Either::Right(_)),
        "the acquire was meant to be still pending"
    );
}

#[test]
fn a_dropped_acquire_whose_create_reply_was_lost_leaves_no_node() {
    sim(300, |sim| async move {
        let (ac, bc) = (sim.client(), sim.client());
        // Both use guid "g": b's cleanup must spare a's node, whose name also contains
        // b's fragment, because b's session does not own it.
        let options = LockOptions {
            guid: Some("g".into()),
            ..LockOptions::default()
        };
        let a = Lock::new(ac.clone(), DIR, options.clone()).unwrap();
        let b = Lock::new(bc.clone(), DIR, options).unwrap();
        let held = a.acquire().await.unwrap();
        ensure_path(&bc, &RetryPolicy::default(), DIR)
            .await
            .unwrap();
        sim.lose_next_create_response(&bc);
        // The create is applied, its reply lost, and b waits to reconnect (200 ms): it
        // does not know its node's name when it is dropped.
        drop_after(&bc, 20, b.acquire()).await;
        let dropped_at = bc.now();
        let mine: Vec<String> = nodes(&sim)
            .into_iter()
            .filter(|n| *n != held.node().name)
            .collect();
        assert_eq!(mine.len(), 1, "{:?}", nodes(&sim));
        let path = join(DIR, &mine[0]);
        assert_eq!(
            sim.server_stat(&path).unwrap().ephemeral_owner,
            bc.session_id().0
        );
        // Staged items reach the world at the next await; b is still disconnected then.
        sleep_ms(&bc, 1).await;
        assert_eq!(sim.detached_cleanups_pending(&bc), 1);

        sleep_ms(&bc, 1000).await;
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        assert_eq!(sim.detached_cleanups_pending(&bc), 0);
        assert_eq!(bc.session_state(), SessionState::Connected, "not by expiry");
        assert!(b.pending_cleanup().is_empty());
        // The cleanup listed the directory, checked both matching nodes' owners, and
        // deleted only its own.
        // Owner checks go in name order.
        let mut checked = [join(DIR, &held.node().name), path.clone()];
        checked.sort();
        let ok = || "ok".to_owned();
        let expected = vec![
            (ZkOp::GetChildren, DIR.to_owned(), ok()),
            (ZkOp::Exists, checked[0].clone(), ok()),
            (ZkOp::Exists, checked[1].clone(), ok()),
            (ZkOp::Delete, path.clone(), ok()),
        ];
        assert_eq!(ops_since(&sim, &bc, dropped_at), expected);
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn the_cleanup_delete_meets_connection_loss_and_is_retried_after_the_reconnect() {
    // The delete is on the connection when it breaks: applied or not, as each seed's
    // Chooser decides; either way it is sent again after the reconnect.
    for seed in 310..316 {
        sim(seed, |sim| async move {
            let bc = sim.client();
            let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
            let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
            let held = a.acquire().await.unwrap();
            let start = bc.now();
            let mut mine = None;
            {
                let acquire = pin!(b.acquire());
                let give_up = pin!(async {
                    sleep_ms(&bc, 100).await;
                    mine = nodes(&sim).into_iter().find(|n| *n != held.node().name);
                });
                assert!(matches!(
                    future::select(acquire, give_up).await,
                    Either::Right(_)
                ));
            }
            // Right after the drop, in the same turn: the cleanup's delete is sent first,
            // then the connection breaks under it.
            sim.disconnect(&bc);
            let path = join(DIR, &mine.expect("b had a node"));
            sleep_ms(&bc, 1000).await;
            assert_eq!(nodes(&sim), [held.node().name.clone()], "seed {seed}");
            assert_eq!(sim.detached_cleanups_pending(&bc), 0);
            let deletes: Vec<String> = ops_since(&sim, &bc, start)
                .into_iter()
                .filter(|(op, p, _)| *op == ZkOp::Delete && *p == path)
                .map(|(_, _, outcome)| outcome)
                .collect();
            assert_eq!(deletes.len(), 2, "seed {seed}: {deletes:?}");
            assert_eq!(deletes[0], "unknown");
            assert!(deletes[1] == "ok" || deletes[1] == "NoNode", "{deletes:?}");
        });
    }
}

#[test]
fn a_dropped_guard_is_deleted_once_the_client_reconnects() {
    sim(320, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        sim.disconnect(&c);
        sleep_ms(&c, 10).await;
        drop(guard);
        // Disconnected: nothing can be sent; the item waits for the reconnect.
        sleep_ms(&c, 50).await;
        assert_eq!(nodes(&sim).len(), 1);
        assert_eq!(sim.detached_cleanups_pending(&c), 1);
        sleep_ms(&c, 500).await;
        assert!(nodes(&sim).is_empty());
        assert_eq!(sim.detached_cleanups_pending(&c), 0);
        assert_eq!(c.session_state(), SessionState::Connected);
    });
}

#[test]
fn detached_work_is_abandoned_without_error_after_session_expiry() {
    sim(330, |sim| async move {
        let (ac, bc) = (sim.client(), sim.client());
        let a = Lock::new(ac.clone(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let guard = b.acquire().await.unwrap();
        // Cut off past its session timeout (6 s) before the guard is dropped: the cleanup
        // can never be sent; the server's expiry deletes the node instead.
        sim.partition(&bc, Duration::from_secs(10));
        drop(guard);
        let dropped_at = bc.now();
        sleep_ms(&ac, 5000).await;
        assert_eq!(nodes(&sim).len(), 1, "still there before the expiry");
        assert_eq!(sim.detached_cleanups_pending(&bc), 1);
        // The node goes with the session; a is granted.
        let got = a.acquire().await.unwrap();
        assert_eq!(nodes(&sim), [got.node().name.clone()]);
        // After the heal b learns Expired, and the queued cleanup is dropped unsent.
        sleep_ms(&ac, 6000).await;
        assert_eq!(bc.session_state(), SessionState::Expired);
        assert_eq!(sim.detached_cleanups_pending(&bc), 0);
        assert!(ops_since(&sim, &bc, dropped_at).is_empty());
        got.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_dropped_acquire_then_forced_expiry_ends_the_cleanup() {
    sim(331, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        drop_after(&bc, 100, b.acquire()).await;
        // The cleanup's delete is in flight when the server kills the session.
        sim.expire(&bc);
        sleep_ms(&bc, 1000).await;
        assert_eq!(bc.session_state(), SessionState::Expired);
        assert_eq!(sim.detached_cleanups_pending(&bc), 0);
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        held.release().await.unwrap();
    });
}
