use super::cfg;
use crate::properties::no_herd;
use crate::testkit::{DIR, Hb, node};
use zklock_recipe::history::{EventKind, LockRole, ZkOp};

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

/// Client `c`'s node of sequence `seq` in a read/write lock: a reader's or a writer's.
fn rw_node(c: u32, role: LockRole, seq: i32) -> String {
    format!("{}{seq:010}", rw_asked(c, role))
}

/// The name client `c`'s create asks for.
fn rw_asked(c: u32, role: LockRole) -> String {
    let kind = if role == LockRole::Read {
        "read"
    } else {
        "write"
    };
    format!("{DIR}/_c_{c:x}-0-{kind}-")
}

/// Client `c` acquires in `role` with node `seq`: its create, its listing, then, when
/// `blocker` is given, its watch on that node (`(client, role, seq)`); `Acquired` only
/// when there is no blocker.
fn rw_enqueue(h: &mut Hb, c: u32, role: LockRole, seq: i32, blocker: Option<(u32, LockRole, i32)>) {
    h.invoke_acquire(c, role);
    h.op(c, ZkOp::Create, &rw_asked(c, role));
    h.op(c, ZkOp::GetChildren, DIR);
    match blocker {
        Some((b, role, seq)) => {
            h.op(c, ZkOp::GetData, &rw_node(b, role, seq));
        }
        None => rw_acquired(h, c, role, seq),
    }
}

fn rw_acquired(h: &mut Hb, c: u32, role: LockRole, seq: i32) {
    let node = rw_node(c, role, seq);
    h.ev(
        c,
        EventKind::Acquired {
            token: i64::from(seq),
            node,
        },
    );
}

/// The release of client `c`'s node `seq`; returns the delete's invoke index.
fn rw_release(h: &mut Hb, c: u32, role: LockRole, seq: i32) -> usize {
    h.ev(c, EventKind::ReleaseInvoked);
    let at = h.op(c, ZkOp::Delete, &rw_node(c, role, seq));
    h.ev(c, EventKind::Released);
    at
}

const R: LockRole = LockRole::Read;
const W: LockRole = LockRole::Write;

/// Writer c1 holds node 1; readers c2 and c3 (nodes 2, 3) both wait on it, and writer
/// c4 (node 4) queues behind them. c1's release wakes both readers: the run of readers
/// behind it, no herd, though writer c4 still stands (behind them, not ahead).
#[test]
fn a_writers_release_waking_the_run_of_readers_behind_it_is_no_herd() {
    let mut h = Hb::new();
    rw_enqueue(&mut h, 1, W, 1, None);
    rw_enqueue(&mut h, 2, R, 2, Some((1, W, 1)));
    rw_enqueue(&mut h, 3, R, 3, Some((1, W, 1)));
    rw_enqueue(&mut h, 4, W, 4, Some((3, R, 3)));
    rw_release(&mut h, 1, W, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.op(3, ZkOp::GetChildren, DIR);
    rw_acquired(&mut h, 2, R, 2);
    rw_acquired(&mut h, 3, R, 3);
    rw_release(&mut h, 2, R, 2);
    rw_release(&mut h, 3, R, 3);
    h.op(4, ZkOp::GetChildren, DIR);
    rw_acquired(&mut h, 4, W, 4);
    rw_release(&mut h, 4, W, 4);
    let v = no_herd::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}

/// Writers c1 and c2 (nodes 1, 2) and reader c3 (node 3), which watches the first
/// writer, c1, instead of the nearest, c2. c1's release wakes its successor c2 and c3,
/// which still has c2 ahead of it; `then` runs after the wakes.
fn reader_behind_two_writers(then: impl FnOnce(&mut Hb)) -> (Hb, [usize; 3]) {
    let mut h = Hb::new();
    rw_enqueue(&mut h, 1, W, 1, None);
    rw_enqueue(&mut h, 2, W, 2, Some((1, W, 1)));
    rw_enqueue(&mut h, 3, R, 3, Some((1, W, 1)));
    let delete = rw_release(&mut h, 1, W, 1);
    let w2 = h.op(2, ZkOp::GetChildren, DIR);
    let w3 = h.op(3, ZkOp::GetChildren, DIR);
    rw_acquired(&mut h, 2, W, 2);
    then(&mut h);
    (h, [delete, w2, w3])
}

#[test]
fn a_reader_woken_with_another_writer_still_ahead_of_it_counts_in_the_herd() {
    let (h, indices) = reader_behind_two_writers(|h| {
        // c3 now watches c2, and c2 releases: both show c2's node stood after c1's delete.
        h.op(3, ZkOp::GetData, &rw_node(2, W, 2));
        rw_release(h, 2, W, 2);
        h.op(3, ZkOp::GetChildren, DIR);
        rw_acquired(h, 3, R, 3);
    });
    let v = no_herd::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), indices.to_vec());
    assert!(
        r.summary.contains("woke 2 waiters: c2, c3"),
        "{}",
        r.summary
    );
    let roles: Vec<&str> = r.events.iter().map(|e| e.role.as_str()).collect();
    let ahead = "c3 woken, with writer _c_2-0-write-0000000002 still ahead";
    assert_eq!(roles[1..], ["c2 woken", ahead]);
}

/// The same wakes, but nothing after them shows c2's node still standing (an `Acquired`
/// is a belief, and c2 never touches its node again): the history does not prove c3 had
/// a writer ahead of it, so c3 is not counted and c2 alone woke.
#[test]
fn a_woken_reader_counts_only_when_the_history_proves_the_writer_ahead_stood() {
    let (h, _) = reader_behind_two_writers(|h| {
        // `exists` answers ok on a missing node too: no proof.
        h.op(3, ZkOp::Exists, &rw_node(2, W, 2));
    });
    let v = no_herd::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}
