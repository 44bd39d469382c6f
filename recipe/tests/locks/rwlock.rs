//! Readers and writers queued in every order: who holds when.

use crate::common::{DIR, nodes, sim, wait_until};
use futures_channel::oneshot;
use std::sync::{Arc, Mutex};
use zklock_recipe::{LockOptions, NodeKind, RwLock};

/// The groups the ZooKeeper recipe grants together, in order: a writer alone, or a run
/// of consecutive readers.
fn expected_groups(kinds: &[NodeKind]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        let joins = *k == NodeKind::Read && i > 0 && kinds[i - 1] == NodeKind::Read;
        match groups.last_mut() {
            Some(g) if joins => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// Queues one contender per kind, in order, then releases the holders group by group,
/// checking after each step exactly who holds.
fn run_queue(seed: u64, kinds: Vec<NodeKind>) {
    let expected = expected_groups(&kinds);
    let observed = sim(seed, move |sim| async move {
        let main = sim.client();
        let holding: Arc<Mutex<Vec<usize>>> = Arc::default();
        let mut releases = Vec::new();
        let mut tasks = Vec::new();
        for (i, kind) in kinds.iter().copied().enumerate() {
            let rw = RwLock::new(sim.client(), DIR, LockOptions::default()).unwrap();
            let (tx, rx) = oneshot::channel::<()>();
            releases.push(Some(tx));
            let holding = holding.clone();
            tasks.push(sim.spawn(async move {
                let (read, write) = rw.into_parts();
                let lock = if kind == NodeKind::Read { read } else { write };
                let guard = lock.acquire().await.unwrap();
                assert_eq!(guard.kind(), kind);
                holding.lock().unwrap().push(i);
                let _ = rx.await;
                holding.lock().unwrap().retain(|&h| h != i);
                guard.release().await.unwrap();
            }));
            let s = sim.clone();
            wait_until(&main, || nodes(&s).len() == i + 1).await;
        }
        let mut observed = Vec::new();
        let mut released = 0;
        while released < kinds.len() {
            // Let every grant that can happen happen.
            crate::common::sleep_ms(&main, 100).await;
            let mut now: Vec<usize> = holding.lock().unwrap().clone();
            now.sort();
            assert!(!now.is_empty(), "nobody holds after {observed:?}");
            for &h in &now {
                releases[h].take().unwrap().send(()).unwrap();
            }
            released += now.len();
            let s = sim.clone();
            let gone = released;
            wait_until(&main, || nodes(&s).len() == kinds.len() - gone).await;
            observed.push(now);
        }
        for t in tasks {
            t.await;
        }
        assert!(nodes(&sim).is_empty());
        observed
    });
    assert_eq!(observed, expected);
}

#[test]
fn readers_and_writers_in_every_order() {
    use NodeKind::{Read as R, Write as W};
    let orders: [&[NodeKind]; 12] = [
        &[R, W],
        &[W, R],
        &[R, R],
        &[W, W],
        &[R, R, W],
        &[W, R, R],
        &[R, W, R],
        &[W, R, W],
        &[R, W, W],
        &[W, W, R],
        &[R, R, W, R, R],
        &[W, R, R, W, R],
    ];
    for (seed, kinds) in orders.iter().enumerate() {
        run_queue(seed as u64, kinds.to_vec());
    }
}

#[test]
fn the_grouping_model_matches_the_recipe_text() {
    use NodeKind::{Read as R, Write as W};
    assert_eq!(
        expected_groups(&[R, R, W, R]),
        [vec![0, 1], vec![2], vec![3]]
    );
    assert_eq!(expected_groups(&[W, W]), [vec![0], vec![1]]);
}

#[test]
fn a_writer_waits_for_kazoo_and_curator_readers() {
    use zklock_recipe::{Coordination, CreateMode};
    sim(40, |sim| async move {
        let other = sim.client();
        let seq = CreateMode::EphemeralSequential;
        other
            .create("/locks", b"", CreateMode::Persistent)
            .await
            .unwrap();
        other
            .create(DIR, b"", CreateMode::Persistent)
            .await
            .unwrap();
        let (k, _) = other
            .create(&format!("{DIR}/abc__rlock__"), b"", seq)
            .await
            .unwrap();
        let rw = RwLock::new(sim.client(), DIR, LockOptions::default()).unwrap();
        // A reader passes a foreign reader; a writer does not.
        let r = rw
            .read_lock()
            .try_acquire()
            .await
            .unwrap()
            .expect("readers share");
        assert!(rw.write_lock().try_acquire().await.unwrap().is_none());
        r.release().await.unwrap();
        other.delete(&k, None).await.unwrap();
        let w = rw.write_lock().try_acquire().await.unwrap().expect("free");
        // A foreign writer (Curator's __WRIT__) after us blocks our later readers.
        other
            .create(&format!("{DIR}/_c_x-__WRIT__"), b"", seq)
            .await
            .unwrap();
        w.release().await.unwrap();
        assert!(rw.read_lock().try_acquire().await.unwrap().is_none());
        assert_eq!(nodes(&sim).len(), 1, "only the foreign writer is left");
    });
}
