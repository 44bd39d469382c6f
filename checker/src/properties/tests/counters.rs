use crate::properties::{Counters, count};
use crate::testkit::{DIR, Hb};
use zklock_recipe::history::{EventKind, FaultKind, LockRole, ZkOp};
use zklock_recipe::{SessionState, ZkError};

#[test]
fn counts_contention_handover_and_recovery() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.invoke_acquire(2, LockRole::Exclusive);
    h.op_fail(
        2,
        ZkOp::Create,
        &format!("{DIR}/_c_2-0-lock-"),
        ZkError::ConnectionLoss,
    );
    h.fault(2, FaultKind::LostCreateResponse);
    h.op(2, ZkOp::GetChildren, DIR);
    h.fault(1, FaultKind::Partition { duration_ms: 9000 });
    h.session(1, SessionState::Expired);
    h.ev(
        1,
        EventKind::Lost {
            reason: "expired".into(),
        },
    );
    h.acquired(2, 2);
    h.write(2, 2, true, false, false);
    h.write(1, 1, false, false, true);
    h.release(2, 2);
    h.invoke_acquire(3, LockRole::Exclusive);
    h.ev(
        3,
        EventKind::AcquireFailed {
            reason: "try".into(),
        },
    );
    let n = count(&h.build());
    assert_eq!(n.acquisitions, 2);
    assert_eq!(n.contended_acquisitions, 1);
    assert_eq!(n.handovers_after_expiry, 1);
    assert_eq!(n.recoveries_after_lost_create, 1);
    assert_eq!((n.acquire_failures, n.releases, n.lost), (1, 1, 1));
    assert_eq!((n.fenced_rejections, n.unfenced_lost_updates), (1, 1));
    assert_eq!(n.faults.get("lost_create_response"), Some(&1));
    assert_eq!(n.faults.get("partition"), Some(&1));
    assert_eq!(n.total_faults(), 2);

    let mut sum = Counters::default();
    sum.merge(&n);
    sum.merge(&n);
    assert_eq!(sum.acquisitions, 4);
    assert_eq!(sum.faults.get("partition"), Some(&2));
    let json = serde_json::to_string(&sum).unwrap();
    assert_eq!(serde_json::from_str::<Counters>(&json).unwrap(), sum);
}

#[test]
fn an_uncontended_acquire_is_not_contended() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.release(1, 1);
    h.acquire(2, 2);
    let n = count(&h.build());
    assert_eq!((n.acquisitions, n.contended_acquisitions), (2, 0));
    assert_eq!(n.handovers_after_expiry, 0);
}
