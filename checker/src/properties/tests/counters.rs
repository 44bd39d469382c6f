use crate::properties::{Counters, count};
use crate::testkit::{DIR, Hb};
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind, LockRole, ZkOp};
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

#[test]
fn counts_timed_acquires_that_ran_to_their_deadline() {
    let timed = |h: &mut Hb, c: u32| {
        h.ev(
            c,
            EventKind::AcquireInvoked {
                role: LockRole::Exclusive,
                mode: AcquireMode::Timeout { timeout_ms: 3000 },
                lock: None,
            },
        )
    };
    let timed_out = EventKind::AcquireFailed {
        reason: "timed out".into(),
    };
    let mut h = Hb::new();
    // Acquired at once: not at its deadline.
    h.at_ms(0);
    timed(&mut h, 1);
    h.acquired(1, 1);
    // Timed out at its deadline, and acquired just after it.
    h.at_ms(1000);
    timed(&mut h, 2);
    h.at_ms(4000);
    h.ev(2, timed_out);
    timed(&mut h, 3);
    h.at_ms(7100);
    h.acquired(3, 3);
    // A blocking acquire is never timed.
    h.invoke_acquire(4, LockRole::Exclusive);
    h.at_ms(60_000);
    h.acquired(4, 4);
    let n = count(&h.build());
    assert_eq!(n.timed_to_deadline, 2);
    let mut sum = Counters::default();
    sum.merge(&n);
    sum.merge(&n);
    assert_eq!(sum.timed_to_deadline, 4);
}

/// A work queue's run shows its own figures in place of the lock's, and sweeps sum them.
#[test]
fn a_queue_runs_counters_are_the_queues() {
    use crate::properties::queue::{QueueFacts, check_queue};
    let mut h = Hb::new();
    h.ev(
        0,
        EventKind::ItemProduced {
            item: "item-a-0000000000".into(),
        },
    );
    h.op(1, ZkOp::GetChildren, "/queue");
    h.ev(
        1,
        EventKind::ProcessStart {
            item: "item-a-0000000000".into(),
            token: 3,
        },
    );
    h.ev(
        1,
        EventKind::ProcessEnd {
            item: "item-a-0000000000".into(),
        },
    );
    let facts = QueueFacts {
        paths: Default::default(),
        final_items: vec![],
        final_locks: vec![],
    };
    let report = check_queue(&h.build(), &Default::default(), &facts);
    let q = report.counters.queue.expect("a queue's counters");
    assert_eq!(
        (
            q.items_produced,
            q.items_completed,
            q.items_taken,
            q.listings
        ),
        (1, 1, 1, 1)
    );
    let text = report.counters.to_string();
    assert!(
        text.starts_with("items produced 1, completed 1 (taken 1, trust lost while processing 0)"),
        "{text}"
    );
    assert!(!text.contains("acquisitions"), "{text}");
    assert_eq!(report.counters.checked(), (1, "completed items"));
    let mut sum = Counters::default();
    sum.merge(&report.counters);
    sum.merge(&report.counters);
    assert_eq!(sum.queue.map(|q| q.items_completed), Some(2));
    // A lock's run has none.
    assert_eq!(count(&Hb::new().build()).queue, None);
}
