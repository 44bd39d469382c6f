use super::cfg;
use crate::properties::{CheckConfig, mutual_exclusion};
use crate::testkit::Hb;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, LockRole};

#[test]
fn handover_after_release_passes() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.invoke_acquire(2, LockRole::Exclusive);
    h.release(1, 1);
    h.acquired(2, 2);
    h.release(2, 2);
    let v = mutual_exclusion::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
}

#[test]
fn lost_and_crash_end_belief() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.ev(
        1,
        EventKind::Lost {
            reason: "expired".into(),
        },
    );
    h.acquire(2, 2);
    h.fault(2, FaultKind::Crash);
    h.acquire(3, 3);
    let v = mutual_exclusion::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}

/// The canary class "a holder that ignores Expired": two believers.
fn ignores_expiry() -> (Hb, [usize; 3]) {
    let mut h = Hb::new();
    let a = h.acquire(1, 1);
    h.fault(1, FaultKind::Partition { duration_ms: 9000 });
    let expired = h.session(1, SessionState::Expired);
    let b = h.acquire(2, 2);
    (h, [a, expired, b])
}

#[test]
fn holder_ignoring_expiry_is_caught() {
    let (h, proof) = ignores_expiry();
    let v = mutual_exclusion::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.expect("a report");
    assert!(!r.known_unavoidable);
    assert_eq!(r.event_indices(), proof.to_vec());
    assert_eq!(r.events[0].token, Some(1));
    assert_eq!(r.events[2].token, Some(2));
    assert_eq!((r.events[0].client, r.events[2].client), (1, 2));
    assert_eq!(r.faults_before.len(), 1);
    assert!(
        r.summary.contains("c1") && r.summary.contains("c2"),
        "{}",
        r.summary
    );
}

#[test]
fn readers_do_not_count() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Read);
    h.acquired(1, 1);
    h.invoke_acquire(2, LockRole::Read);
    h.acquired(2, 2);
    assert!(mutual_exclusion::check(&h.build(), &cfg()).ok);
}

#[test]
fn under_pauses_a_paused_holder_is_the_known_class() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.fault(1, FaultKind::Pause { duration_ms: 9000 });
    h.acquire(2, 2);
    let cfg = CheckConfig {
        pauses_on: true,
        ..cfg()
    };
    let v = mutual_exclusion::check(&h.build(), &cfg);
    assert!(v.ok, "known-unavoidable does not fail the run");
    assert!(v.is_known_unavoidable());
    let why = v.report.unwrap().explanation.unwrap();
    assert!(
        why.contains("Kleppmann") && why.contains("fenced_resource"),
        "{why}"
    );
}

#[test]
fn under_pauses_an_unpaused_overlap_still_fails() {
    let (h, _) = ignores_expiry();
    let cfg = CheckConfig {
        pauses_on: true,
        ..cfg()
    };
    let v = mutual_exclusion::check(&h.build(), &cfg);
    assert!(!v.ok && !v.is_known_unavoidable());
}
