use super::cfg;
use crate::properties::no_herd;
use crate::testkit::{DIR, Hb, node};
use zklock_recipe::history::{LockRole, ZkOp};

/// c1 holds node 1; c2 and c3 queue behind it, each either watching its predecessor
/// (`exists`) or, as the herd canary does, the whole directory (`getChildren`).
fn queue(herd: bool, roles: [LockRole; 2]) -> Hb {
    let mut h = Hb::new();
    h.acquire(1, 1);
    for (c, role) in [2u32, 3].into_iter().zip(roles) {
        h.invoke_acquire(c, role);
        h.op(c, ZkOp::Create, &format!("{DIR}/_c_{c:x}-0-lock-"));
        h.op(c, ZkOp::GetChildren, DIR);
        if !herd {
            h.op(c, ZkOp::Exists, &node(c - 1, c as i32 - 1));
        }
    }
    h
}

#[test]
fn predecessor_watch_wakes_only_the_successor() {
    let mut h = queue(false, [LockRole::Exclusive; 2]);
    h.release(1, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.acquired(2, 2);
    let v = no_herd::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}

#[test]
fn parent_watch_herd_is_caught() {
    let mut h = queue(true, [LockRole::Exclusive; 2]);
    let delete = h.release(1, 1);
    let w2 = h.op(2, ZkOp::GetChildren, DIR);
    let w3 = h.op(3, ZkOp::GetChildren, DIR);
    h.acquired(2, 2);
    let v = no_herd::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![delete, w2, w3]);
    assert!(
        r.summary.contains("woke 2 waiters: c2, c3"),
        "{}",
        r.summary
    );
}

#[test]
fn a_writer_release_may_wake_every_reader_behind_it() {
    let mut h = queue(true, [LockRole::Read; 2]);
    h.release(1, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.op(3, ZkOp::GetChildren, DIR);
    h.acquired(2, 2);
    h.acquired(3, 3);
    assert!(no_herd::check(&h.build(), &cfg()).ok);
}

/// Seed 192 of the default sweep, once acquires were dropped: a client's background
/// cleanup listed the directory without a watch, then, after a release, its acquire's
/// backed-off create retry listed it again. The listing left no watch, so that was no
/// wake; counted as one, it made a herd of a release that woke a single waiter.
#[test]
fn no_herd_ignores_a_listing_that_left_no_watch() {
    let mut h = queue(false, [LockRole::Exclusive; 2]);
    let plain = h.invoke_plain(3, ZkOp::GetChildren, DIR);
    h.ok(3, plain);
    h.release(1, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.op(3, ZkOp::GetChildren, DIR);
    h.acquired(2, 2);
    let v = no_herd::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");

    // The same listing with a watch is a directory wait, and that wake is a herd's.
    let mut h = queue(false, [LockRole::Exclusive; 2]);
    h.op(3, ZkOp::GetChildren, DIR);
    h.release(1, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.op(3, ZkOp::GetChildren, DIR);
    assert!(!no_herd::check(&h.build(), &cfg()).ok);
}
