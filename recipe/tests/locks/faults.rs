//! Each branch of the recipe under a scripted fault, asserting the outcome and the nodes
//! left in the tree.

use crate::common::{DIR, nodes, sim, sleep_ms, wait_until};
use futures_util::future::{self, Either};
use std::pin::pin;
use std::time::Duration;
use zklock_recipe::lock::{REVOKE_MESSAGE, request_revoke};
use zklock_recipe::{
    Coordination, Lock, LockError, LockOptions, LostPolicy, LostReason, RetryPolicy,
};
use zklock_sim::RequestKind;

fn expired_only() -> LockOptions {
    LockOptions {
        lost_policy: LostPolicy::ExpiredOnly,
        ..LockOptions::default()
    }
}

#[test]
fn predecessor_gone_between_get_children_and_the_watch() {
    sim(20, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let a_path = held.path().to_owned();
        // b's first getData is its watch on the predecessor: delete a's node just before.
        sim.before_next(&bc, RequestKind::GetData, move |srv| {
            srv.delete(&a_path).unwrap();
        });
        let start = bc.now();
        let got = b.acquire().await.unwrap();
        // b listed again at once instead of waiting on a watch that would never fire.
        assert!(bc.now() - start < Duration::from_millis(50));
        assert_eq!(nodes(&sim), [got.node().name.clone()]);
        // a's node was deleted by someone else: its lost signal fires.
        assert_eq!(held.lost().await, LostReason::NodeDeleted);
        held.release().await.unwrap();
        got.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn lost_create_response_is_adopted_without_orphan() {
    sim(21, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        sim.lose_next_create_response(&c);
        let guard = lock.acquire().await.unwrap();
        assert_eq!(nodes(&sim), [guard.node().name.clone()], "exactly one node");
        let owner = sim.server_stat(guard.path()).unwrap().ephemeral_owner;
        assert_eq!(owner, c.session_id().0);
        assert_eq!(
            guard.fencing_token().0,
            sim.server_stat(guard.path()).unwrap().czxid
        );
        guard.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
        assert!(lock.pending_cleanup().is_empty());
    });
}

#[test]
fn lost_create_response_never_adopts_another_sessions_node() {
    sim(30, |sim| async move {
        let (c, other) = (sim.client(), sim.client());
        let options = LockOptions {
            guid: Some("w".into()),
            ..LockOptions::default()
        };
        let lock = Lock::new(c.clone(), DIR, options).unwrap();
        // Another session holds a node bearing the guid of our first attempt ("w-1").
        let seq = zklock_recipe::CreateMode::EphemeralSequential;
        other
            .create("/locks", b"", zklock_recipe::CreateMode::Persistent)
            .await
            .unwrap();
        other
            .create(DIR, b"", zklock_recipe::CreateMode::Persistent)
            .await
            .unwrap();
        let (impostor, _) = other
            .create(&format!("{DIR}/_c_w-1-lock-"), b"", seq)
            .await
            .unwrap();
        sim.lose_next_create_response(&c);
        let got = lock.acquire_timeout(Duration::from_secs(5)).await;
        // Adopting the impostor would "hold" at once; ours queues behind it instead.
        assert_eq!(
            got.unwrap_err(),
            LockError::Timeout {
                waited: Duration::from_secs(5)
            }
        );
        assert_eq!(nodes(&sim), ["_c_w-1-lock-0000000000"]);
        other.delete(&impostor, None).await.unwrap();
        let guard = lock.acquire().await.unwrap();
        assert_eq!(
            sim.server_stat(guard.path()).unwrap().ephemeral_owner,
            c.session_id().0
        );
        guard.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn lost_create_response_while_queued_keeps_the_place() {
    sim(22, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        sim.lose_next_create_response(&bc);
        let waiter = sim.spawn(async move {
            let g = b.acquire().await.unwrap();
            let name = g.node().name.clone();
            g.release().await.unwrap();
            name
        });
        let s = sim.clone();
        wait_until(&bc, || nodes(&s).len() == 2).await;
        sleep_ms(&bc, 1000).await; // reconnected and recovered by now
        assert_eq!(nodes(&sim).len(), 2, "no second node for b");
        held.release().await.unwrap();
        let b_name = waiter.await;
        assert!(b_name.ends_with("0000000001"), "{b_name}");
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn expiry_while_waiting_fails_with_session_expired() {
    sim(23, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let waiter = sim.spawn(async move { b.acquire().await.map(|g| g.path().to_owned()) });
        let s = sim.clone();
        wait_until(&bc, || nodes(&s).len() == 2).await;
        sim.expire(&bc);
        assert_eq!(waiter.await, Err(LockError::SessionExpired));
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        assert_eq!(held.is_lost(), None);
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn expiry_while_holding_fires_lost() {
    for (options, reason) in [
        (LockOptions::default(), LostReason::Disconnected),
        (expired_only(), LostReason::Expired),
    ] {
        sim(24, move |sim| async move {
            let ac = sim.client();
            let a = Lock::new(ac.clone(), DIR, options).unwrap();
            let bc = sim.client();
            let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
            let held = a.acquire().await.unwrap();
            sim.expire(&ac);
            sleep_ms(&bc, 1).await; // the fault applies at the next quiescent point
            // The server deleted the ephemeral at once.
            assert!(nodes(&sim).is_empty());
            assert_eq!(held.lost().await, reason);
            let next = b.acquire().await.unwrap();
            assert!(next.fencing_token() > held.fencing_token());
            held.release().await.unwrap(); // nothing left to delete
            assert_eq!(nodes(&sim), [next.node().name.clone()]);
        });
    }
}

/// The guard reads our node when `lost` is first awaited. A disconnect while that read
/// (or its retry backoff) was pending went unseen until the backoff ended: the checker
/// found a holder writing after its session was expired (2 clients, 1 forced expiry).
#[test]
fn disconnect_during_the_guards_first_read_fires_lost_at_once() {
    sim(26, |sim| async move {
        let ac = sim.client();
        let a = Lock::new(ac.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let start = ac.now();
        let lost = {
            let lost = pin!(held.lost());
            let s = sim.clone();
            let c = ac.clone();
            // Sent first, the read is in flight when the connection drops.
            let cut = pin!(async move {
                s.disconnect(&c);
                future::pending::<()>().await
            });
            match future::select(lost, cut).await {
                Either::Left((reason, _)) => reason,
                Either::Right(_) => unreachable!("the cut never ends"),
            }
        };
        assert_eq!(lost, LostReason::Disconnected);
        // Not after a retry backoff (50 ms by default).
        assert!(
            ac.now() - start < Duration::from_millis(5),
            "{:?}",
            ac.now() - start
        );
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn disconnect_and_reconnect_while_holding() {
    // Default policy: lost at the disconnect, though the node survives the reconnect.
    sim(25, |sim| async move {
        let ac = sim.client();
        let a = Lock::new(ac.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        sim.disconnect(&ac);
        assert_eq!(held.lost().await, LostReason::Disconnected);
        sleep_ms(&ac, 500).await;
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
    // Expired-only: a disconnect within the session timeout is not a loss.
    sim(25, |sim| async move {
        let ac = sim.client();
        let a = Lock::new(ac.clone(), DIR, expired_only()).unwrap();
        let held = a.acquire().await.unwrap();
        sim.disconnect(&ac);
        sleep_ms(&ac, 500).await;
        assert_eq!(held.is_lost(), None);
        {
            let lost = pin!(held.lost());
            let later = pin!(sleep_ms(&ac, 2000));
            assert!(matches!(
                future::select(lost, later).await,
                Either::Right(_)
            ));
        }
        assert_eq!(nodes(&sim), [held.node().name.clone()]);
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn timeout_while_the_cleanup_delete_meets_connection_loss() {
    sim(26, |sim| async move {
        let bc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let b = Lock::new(bc.clone(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        let start = bc.now();
        let waiter = {
            let bc = bc.clone();
            sim.spawn(async move {
                let r = b.acquire_timeout(Duration::from_millis(1000)).await.err();
                (r, bc.now(), b.pending_cleanup())
            })
        };
        // Cut b off just before its timeout, so its cleanup delete fails with connection
        // loss until the reconnect (200 ms later).
        sleep_ms(&bc, 950).await;
        sim.disconnect(&bc);
        let (err, end, orphans) = waiter.await;
        assert_eq!(
            err,
            Some(LockError::Timeout {
                waited: Duration::from_millis(1000)
            })
        );
        assert!(
            end - start >= Duration::from_millis(1150),
            "retried past the reconnect"
        );
        assert!(orphans.is_empty());
        assert_eq!(nodes(&sim), [held.node().name.clone()], "b left no node");
    });
}

#[test]
fn retries_give_up_after_attempts_max() {
    sim(27, |sim| async move {
        let c = sim.client();
        let options = LockOptions {
            retry: RetryPolicy {
                attempts_max: 2,
                backoff_ms: 10,
                backoff_max_ms: 10,
            },
            ..LockOptions::default()
        };
        let lock = Lock::new(c.clone(), DIR, options).unwrap();
        lock.acquire().await.unwrap().release().await.unwrap();
        sim.disconnect(&c); // reconnects after 200 ms, past 2 attempts 10 ms apart
        let err = lock.acquire().await.unwrap_err();
        assert_eq!(err, LockError::Zk(zklock_recipe::ZkError::ConnectionLoss));
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn revocation_sets_revoke_requested() {
    sim(28, |sim| async move {
        let rc = sim.client();
        let a = Lock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        let held = a.acquire().await.unwrap();
        assert!(!held.revoke_requested());
        let policy = RetryPolicy::default();
        assert!(request_revoke(&rc, &policy, held.path()).await.unwrap());
        assert_eq!(sim.server_data(held.path()).unwrap(), REVOKE_MESSAGE);
        assert_eq!(held.revocation().await, Ok(()));
        assert!(held.revoke_requested());
        assert_eq!(held.is_lost(), None);
        let path = held.path().to_owned();
        held.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
        assert!(!request_revoke(&rc, &policy, &path).await.unwrap());
    });
}

#[test]
fn with_lock_stops_the_work_when_the_lock_is_lost() {
    sim(29, |sim| async move {
        let ac = sim.client();
        let a = Lock::new(ac.clone(), DIR, LockOptions::default()).unwrap();
        let (s, c) = (sim.clone(), ac.clone());
        let r = a
            .with_lock(|_| async move {
                s.disconnect(&c);
                sleep_ms(&c, 10_000).await;
                "finished"
            })
            .await;
        assert_eq!(r, Err(LockError::Lost(LostReason::Disconnected)));
        assert!(nodes(&sim).is_empty(), "released after the reconnect");
    });
}
