use super::cfg;
use crate::properties::fifo;
use crate::testkit::Hb;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, LockRole};

#[test]
fn grants_in_sequence_order_pass() {
    let mut h = Hb::new();
    for c in 1..=3 {
        h.acquire(c, c as i32);
        h.release(c, c as i32);
    }
    assert!(fifo::check(&h.build(), &cfg()).ok);
}

#[test]
fn a_grant_out_of_turn_is_caught() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.release(1, 1);
    h.invoke_acquire(2, LockRole::Exclusive);
    let jumped = h.acquire(3, 3);
    h.release(3, 3);
    let passed_over = h.acquired(2, 2);
    let v = fifo::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![jumped, passed_over]);
    assert!(r.summary.contains("sequence 3") && r.summary.contains("sequence 2"));
}

#[test]
fn a_vanished_node_lets_the_next_go() {
    let mut h = Hb::new();
    h.invoke_acquire(2, LockRole::Exclusive);
    // c2's node 2 vanished with its session; c3 (node 3) goes first, c2 retries as 5.
    h.session(2, SessionState::Expired);
    h.acquire(3, 3);
    h.release(3, 3);
    h.acquire(2, 5);
    assert!(fifo::check(&h.build(), &cfg()).ok);
}

#[test]
fn a_belief_on_an_expired_session_is_left_to_the_belief_properties() {
    let mut h = Hb::new();
    h.acquire(3, 3);
    h.ev(3, EventKind::ReleaseInvoked);
    h.session(2, SessionState::Expired);
    h.acquired(2, 2);
    assert!(fifo::check(&h.build(), &cfg()).ok);
}

#[test]
fn readers_queued_together_may_go_in_any_order() {
    let mut h = Hb::new();
    h.invoke_acquire(3, LockRole::Read);
    h.acquired(3, 3);
    h.invoke_acquire(2, LockRole::Read);
    h.acquired(2, 2);
    assert!(fifo::check(&h.build(), &cfg()).ok);
}

/// ZooKeeper's counter wraps from 2147483647 to -2147483648: a grant past the wrap
/// after one before it is in turn, and the reverse is not.
#[test]
fn grants_count_across_the_sequence_wrap() {
    let mut h = Hb::new();
    h.acquire(1, i32::MAX - 1);
    h.release(1, i32::MAX - 1);
    h.acquire(2, i32::MAX);
    h.release(2, i32::MAX);
    h.acquire(3, i32::MIN);
    h.release(3, i32::MIN);
    h.acquire(1, -999_999_999);
    assert!(fifo::check(&h.build(), &cfg()).ok);

    let mut h = Hb::new();
    h.invoke_acquire(2, LockRole::Exclusive);
    let jumped = h.acquire(3, i32::MIN);
    h.release(3, i32::MIN);
    let passed_over = h.acquired(2, i32::MAX);
    let v = fifo::check(&h.build(), &cfg());
    assert!(!v.ok);
    assert_eq!(v.report.unwrap().event_indices(), vec![jumped, passed_over]);
}

/// A grant of `client`'s node `seq`, whose czxid is `czxid`.
fn acquired_made_at(h: &mut Hb, client: u32, seq: i32, czxid: i64) -> usize {
    h.invoke_acquire(client, LockRole::Exclusive);
    h.ev(
        client,
        EventKind::Acquired {
            token: czxid,
            node: crate::testkit::node(client, seq),
        },
    )
}

fn with_czxids() -> crate::CheckConfig {
    crate::CheckConfig {
        tokens_are_czxids: true,
        ..cfg()
    }
}

/// Curator's lock directory is a container: ZooKeeper deletes it once empty, and the
/// next create makes it again with its sequence from 0. The second 0 was made last.
#[test]
fn a_directory_made_again_starts_its_sequence_over_without_a_violation() {
    let mut h = Hb::new();
    for (seq, czxid) in [(0, 10), (1, 20), (2, 30)] {
        acquired_made_at(&mut h, 1, seq, czxid);
        h.ev(1, EventKind::ReleaseInvoked);
        h.ev(1, EventKind::Released);
    }
    acquired_made_at(&mut h, 2, 0, 40);
    let history = h.build();
    assert!(fifo::check(&history, &with_czxids()).ok);
    // Sequence order alone cannot tell it from a node passed over.
    assert!(!fifo::check(&history, &cfg()).ok);
}

#[test]
fn a_node_made_earlier_and_granted_later_is_caught_across_a_directory_made_again() {
    let mut h = Hb::new();
    // The first incarnation: up to sequence 5.
    acquired_made_at(&mut h, 1, 5, 50);
    h.ev(1, EventKind::ReleaseInvoked);
    h.ev(1, EventKind::Released);
    // The second: c2's node 1 (czxid 60) is ahead of c3's 3 (czxid 80), granted first.
    h.invoke_acquire(2, LockRole::Exclusive);
    let jumped = acquired_made_at(&mut h, 3, 3, 80);
    h.ev(3, EventKind::ReleaseInvoked);
    h.ev(3, EventKind::Released);
    let passed_over = h.ev(
        2,
        EventKind::Acquired {
            token: 60,
            node: crate::testkit::node(2, 1),
        },
    );
    let v = fifo::check(&h.build(), &with_czxids());
    assert!(!v.ok);
    // The pair named is the one in the same incarnation, not the older grant of 5.
    assert_eq!(v.report.unwrap().event_indices(), vec![jumped, passed_over]);
}

#[test]
fn a_grant_without_a_czxid_is_judged_by_its_sequence() {
    let mut h = Hb::new();
    acquired_made_at(&mut h, 1, 3, 30);
    h.ev(1, EventKind::ReleaseInvoked);
    h.ev(1, EventKind::Released);
    // The driver found no node for c2's grant (-1): it is not taken as made later.
    acquired_made_at(&mut h, 2, 1, -1);
    assert!(!fifo::check(&h.build(), &with_czxids()).ok);
}
