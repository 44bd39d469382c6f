//! The counting semaphore honours the lease count stored in its node, whatever count a
//! client was configured with, and leaves nothing behind a try that finds it full.

use crate::common::{DIR, nodes, sim};
use zklock_recipe::semaphore::Semaphore;
use zklock_recipe::{Coordination, CreateMode, LockUnderTest};

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
