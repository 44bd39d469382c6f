//! `LockGuard::release_in_background`: the delete is sent at the call, ahead of the lock
//! object's next acquire, and finished by the client's background cleanup
//! (`Coordination::cleanup_detached`), through connection loss too.

use crate::common::{DIR, nodes, ops_since, sim, sleep_ms};
use zklock_recipe::history::ZkOp;
use zklock_recipe::{Coordination, Lock, LockOptions, SessionState};

/// The operations and outcomes of `ops`, without paths.
fn kinds(ops: &[(ZkOp, String, String)]) -> Vec<(ZkOp, &str)> {
    ops.iter().map(|(op, _, o)| (*op, o.as_str())).collect()
}

#[test]
fn a_background_release_deletes_the_node_and_leaves_nothing_pending() {
    sim(400, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        let path = guard.path().to_owned();
        let released_at = c.now();
        guard.release_in_background();
        sleep_ms(&c, 100).await;
        assert!(nodes(&sim).is_empty(), "{:?}", nodes(&sim));
        assert_eq!(sim.detached_cleanups_pending(&c), 0);
        assert!(lock.pending_cleanup().is_empty());
        assert_eq!(
            ops_since(&sim, &c, released_at),
            [(ZkOp::Delete, path, "ok".to_owned())]
        );
    });
}

#[test]
fn the_next_acquire_starts_at_once_and_its_listing_comes_after_the_delete() {
    sim(401, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let mut guard = lock.acquire().await.unwrap();
        for _ in 0..5 {
            let (released, sequence) = (guard.path().to_owned(), guard.sequence());
            let released_at = c.now();
            guard.release_in_background();
            // The lock object is free at once: no InUse, no wait for the delete's reply.
            guard = lock.acquire().await.unwrap();
            assert!(guard.sequence() > sequence, "a new, later node");
            // The delete went out first, then the create with its listing, and nothing
            // else: had the listing shown the released node, the acquire would have
            // watched it (getData) and listed again.
            let ops = ops_since(&sim, &c, released_at);
            assert_eq!(
                kinds(&ops),
                [
                    (ZkOp::Delete, "ok"),
                    (ZkOp::Create, "ok"),
                    (ZkOp::GetChildren, "ok")
                ],
                "{ops:?}"
            );
            assert_eq!(ops[0].1, released);
            assert_eq!(nodes(&sim), [guard.node().name.clone()]);
        }
        guard.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_background_release_while_disconnected_deletes_the_node_after_the_reconnect() {
    sim(402, |sim| async move {
        let c = sim.client();
        let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
        let guard = lock.acquire().await.unwrap();
        let released = guard.node().name.clone();
        sim.disconnect(&c);
        sleep_ms(&c, 10).await;
        assert_eq!(c.session_state(), SessionState::Disconnected);
        guard.release_in_background();
        // Nothing can be sent yet; the item waits for the reconnect.
        sleep_ms(&c, 20).await;
        assert_eq!(nodes(&sim), [released]);
        assert_eq!(sim.detached_cleanups_pending(&c), 1);
        // The lock object is free at once; its acquire rides out the disconnect too.
        let again = lock.acquire().await.unwrap();
        assert_eq!(c.session_state(), SessionState::Connected, "not by expiry");
        sleep_ms(&c, 100).await;
        assert_eq!(nodes(&sim), [again.node().name.clone()]);
        assert_eq!(sim.detached_cleanups_pending(&c), 0);
        again.release().await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_background_delete_cut_off_by_connection_loss_is_sent_again_after_the_reconnect() {
    // The delete is on the connection when it breaks: applied or not, as each seed's
    // Chooser decides; either way it is sent again after the reconnect.
    for seed in 410..416 {
        sim(seed, |sim| async move {
            let c = sim.client();
            let lock = Lock::new(c.clone(), DIR, LockOptions::default()).unwrap();
            let guard = lock.acquire().await.unwrap();
            let path = guard.path().to_owned();
            let released_at = c.now();
            guard.release_in_background();
            // In the same turn: the delete is sent first, then the connection breaks.
            sim.disconnect(&c);
            sleep_ms(&c, 1000).await;
            assert!(nodes(&sim).is_empty(), "seed {seed}: {:?}", nodes(&sim));
            assert_eq!(sim.detached_cleanups_pending(&c), 0);
            assert_eq!(c.session_state(), SessionState::Connected, "not by expiry");
            let deletes: Vec<String> = ops_since(&sim, &c, released_at)
                .into_iter()
                .filter(|(op, p, _)| *op == ZkOp::Delete && *p == path)
                .map(|(_, _, outcome)| outcome)
                .collect();
            assert_eq!(deletes.len(), 2, "seed {seed}: {deletes:?}");
            assert_eq!(deletes[0], "unknown");
            assert!(deletes[1] == "ok" || deletes[1] == "NoNode", "{deletes:?}");
            // The lock works on.
            let got = lock.try_acquire().await.unwrap().expect("free");
            got.release().await.unwrap();
            assert!(nodes(&sim).is_empty());
        });
    }
}
