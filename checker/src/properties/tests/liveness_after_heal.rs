use super::cfg;
use crate::properties::liveness_after_heal;
use crate::testkit::{DIR, Hb};
use zklock_recipe::history::{EventKind, FaultKind, LockRole, ZkOp};
use zklock_recipe::{SessionState, ZkError};

#[test]
fn waiter_served_within_the_bound_passes() {
    let mut h = Hb::new();
    h.at_ms(31_000);
    h.acquire(1, 1);
    h.invoke_acquire(2, LockRole::Exclusive);
    h.at_ms(40_000);
    h.release(1, 1);
    h.acquired(2, 2);
    let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(600_000_000));
    assert!(v.ok, "{v}");
}

#[test]
fn waiter_served_late_is_caught() {
    let mut h = Hb::new();
    h.at_ms(31_000);
    h.acquire(1, 1);
    let wait = h.invoke_acquire(2, LockRole::Exclusive);
    h.at_ms(50_000);
    h.release(1, 1);
    let late = h.acquired(2, 2);
    let v = liveness_after_heal::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![wait, late]);
    assert!(r.summary.contains("44000.700 ms"), "{}", r.summary);
}

fn stuck() -> (Hb, usize, usize) {
    let mut h = Hb::new();
    h.at_ms(10_000);
    h.acquire(1, 1);
    let wait = h.invoke_acquire(2, LockRole::Exclusive);
    h.op(2, ZkOp::Create, &format!("{DIR}/_c_2-0-lock-"));
    let last = h.op(2, ZkOp::GetChildren, DIR) + 1;
    (h, wait, last)
}

#[test]
fn stuck_waiter_is_caught_when_the_run_outlives_its_deadline() {
    let (h, wait, last) = stuck();
    let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000));
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![wait, last]);
    assert!(r.summary.contains("stuck"), "{}", r.summary);
}

#[test]
fn stuck_waiter_is_not_judged_before_its_deadline() {
    let (h, _, _) = stuck();
    let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(40_000_000));
    assert!(v.ok, "{v}");
}

#[test]
fn expired_or_crashed_waiters_are_excused() {
    let (mut h, _, _) = stuck();
    h.session(2, SessionState::Expired);
    assert!(liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000)).ok);
    let (mut h, _, _) = stuck();
    h.fault(2, FaultKind::Crash);
    assert!(liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000)).ok);
}

/// A holder whose release was invoked and never answered: its library is stuck.
fn stuck_release() -> (Hb, usize, usize) {
    let mut h = Hb::new();
    h.at_ms(10_000);
    h.acquire(1, 1);
    let invoke = h.ev(1, EventKind::ReleaseInvoked);
    let last = h.op(1, ZkOp::Delete, &crate::testkit::node(1, 1)) + 1;
    (h, invoke, last)
}

#[test]
fn a_release_never_answered_is_a_stuck_release_once_the_run_outlives_its_deadline() {
    let (h, invoke, last) = stuck_release();
    let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000));
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![invoke, last]);
    assert!(r.summary.contains("stuck release"), "{}", r.summary);
    // Not before its deadline.
    let (h, _, _) = stuck_release();
    let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(40_000_000));
    assert!(v.ok, "{v}");
}

#[test]
fn a_release_answered_or_cut_by_a_crash_is_not_stuck() {
    for answer in [
        EventKind::Released,
        EventKind::ReleaseFailed {
            reason: "connection loss".into(),
        },
    ] {
        let (mut h, _, _) = stuck_release();
        h.ev(1, answer);
        h.ev(1, EventKind::Done);
        let v = liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000));
        assert!(v.ok, "{v}");
    }
    // Its session's expiry does not excuse it: a release returns, whatever the session.
    let (mut h, _, _) = stuck_release();
    h.session(1, SessionState::Expired);
    assert!(!liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000)).ok);
    let (mut h, _, _) = stuck_release();
    h.fault(1, FaultKind::Crash);
    assert!(liveness_after_heal::check(&h.build(), &cfg().with_run_end_us(100_000_000)).ok);
}

/// A create whose reply was lost, retried without guid recovery: an orphan node.
fn orphan_run() -> (Hb, usize) {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Exclusive);
    let lost = h.next();
    h.op_fail(
        1,
        ZkOp::Create,
        &format!("{DIR}/_c_1-0-lock-"),
        ZkError::ConnectionLoss,
    );
    h.fault(1, FaultKind::LostCreateResponse);
    h.op(1, ZkOp::Create, &format!("{DIR}/_c_1-1-lock-"));
    h.acquired(1, 1);
    h.release(1, 1);
    h.ev(1, EventKind::Done);
    (h, lost)
}

#[test]
fn orphan_node_when_all_are_done_is_caught() {
    let (mut h, lost_create) = orphan_run();
    let done = h.ev(2, EventKind::Done);
    // Client 2 never acquired: only clients that tried count as workload clients.
    let cfg = cfg().with_final_children(vec!["_c_1-0-lock-0000000000".into()]);
    let v = liveness_after_heal::check(&h.build(), &cfg);
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert!(
        r.summary.contains("_c_1-0-lock-0000000000"),
        "{}",
        r.summary
    );
    assert_eq!(r.event_indices(), vec![lost_create, done]);
}

#[test]
fn no_orphan_check_until_everyone_is_done() {
    let (mut h, _) = orphan_run();
    h.invoke_acquire(2, LockRole::Exclusive);
    h.fault(2, FaultKind::Crash);
    let cfg = cfg().with_final_children(vec!["_c_1-0-lock-0000000000".into()]);
    assert!(liveness_after_heal::check(&h.build(), &cfg).ok);
    assert!(liveness_after_heal::check(&orphan_run().0.build(), &super::cfg()).ok);
}
