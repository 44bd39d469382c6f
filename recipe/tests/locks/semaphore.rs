//! The counting semaphore honours the lease count stored in its node, whatever count a
//! client was configured with, and leaves nothing behind a try that finds it full.

use crate::common::{DIR, nodes, sim};
use zklock_recipe::semaphore::Semaphore;
use zklock_recipe::{Coordination, CreateMode, LockUnderTest};
use zklock_sim::RequestKind;

#[test]
fn a_client_configured_with_more_leases_honours_the_stored_count() {
    sim(5, |sim| async move {
        let first = Semaphore::new(sim.client(), DIR, 1).unwrap();
        // The first client creates the semaphore, storing its count of 1.
        assert_eq!(first.stored_leases().await.unwrap(), 1);
        let held = first.acquire().await.unwrap();
        // A second client configured with 3 still finds the one lease taken.
        let second = Semaphore::new(sim.client(), DIR, 3).unwrap();
        assert_eq!(second.stored_leases().await.unwrap(), 1);
        assert!(second.try_acquire().await.unwrap().is_none());
        assert_eq!(nodes(&sim).len(), 1, "only the holder's lease stands");
        first.release(held).await.unwrap();
        let got = second
            .try_acquire()
            .await
            .unwrap()
            .expect("the lease is free");
        second.release(got).await.unwrap();
        assert!(nodes(&sim).is_empty());
    });
}

#[test]
fn a_semaphore_node_without_a_count_is_an_error_not_a_guess() {
    sim(6, |sim| async move {
        let c = sim.client();
        c.create("/locks", b"", CreateMode::Persistent)
            .await
            .unwrap();
        c.create(DIR, b"many", CreateMode::Persistent)
            .await
            .unwrap();
        let s = Semaphore::new(c, DIR, 2).unwrap();
        let e = s.acquire().await.unwrap_err();
        assert!(e.contains("holds no lease count"), "{e}");
    });
}

/// A lease whose session expired while the inner lock was being released is no lease:
/// acquire fails instead of returning it (seen on a real server under `--faults all`,
/// where the client then believed it held a third of 2 leases).
#[test]
fn a_lease_lost_while_releasing_the_inner_lock_is_not_granted() {
    sim(7, |sim| async move {
        let c = sim.client();
        let s = Semaphore::new(c.clone(), DIR, 2).unwrap();
        // The first delete of an acquire is the inner lock's release, after the lease
        // was taken: the session expires just before the server applies it.
        let session = c.session_id();
        sim.before_next(&c, RequestKind::Delete, move |srv| srv.expire(session));
        let e = s
            .acquire()
            .await
            .expect_err("the lease died with its session");
        assert!(e.contains("expired"), "{e}");
        assert!(nodes(&sim).is_empty(), "no lease stands: {:?}", nodes(&sim));
    });
}

/// A connection lost while the inner lock is released ends the lease's trust (the default
/// LostPolicy): acquire fails and deletes the lease, which the live session still held.
#[test]
fn a_lease_disconnected_while_releasing_the_inner_lock_is_deleted_not_granted() {
    sim(8, |sim| async move {
        let c = sim.client();
        let s = Semaphore::new(c.clone(), DIR, 2).unwrap();
        let session = c.session_id();
        sim.before_next(&c, RequestKind::Delete, move |srv| srv.disconnect(session));
        let e = s.acquire().await.expect_err("the lease's trust ended");
        assert!(e.contains("lost before it returned"), "{e}");
        assert_eq!(c.session_id(), session, "the session lives on");
        assert!(nodes(&sim).is_empty(), "no lease stands: {:?}", nodes(&sim));
        // The next acquire takes a lease.
        let g = s.acquire().await.unwrap();
        assert_eq!(nodes(&sim).len(), 1);
        s.release(g).await.unwrap();
    });
}
