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
