use super::cfg;
use crate::properties::{mutual_exclusion, read_write_compat};
use crate::testkit::Hb;
use zklock_recipe::history::{EventKind, LockRole};

#[test]
fn readers_share_and_a_writer_waits() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Read);
    h.acquired(1, 1);
    h.invoke_acquire(2, LockRole::Read);
    h.acquired(2, 2);
    h.invoke_acquire(3, LockRole::Write);
    h.ev(1, EventKind::ReleaseInvoked);
    h.ev(2, EventKind::ReleaseInvoked);
    h.acquired(3, 3);
    let v = read_write_compat::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}

#[test]
fn writer_during_a_read_is_caught() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Read);
    let r = h.acquired(1, 1);
    h.invoke_acquire(2, LockRole::Write);
    let w = h.acquired(2, 2);
    let end = h.ev(1, EventKind::ReleaseInvoked);
    let v = read_write_compat::check(&h.build(), &cfg());
    assert!(!v.ok);
    let report = v.report.unwrap();
    assert_eq!(report.event_indices(), vec![r, w, end]);
    assert!(report.summary.contains("r1") && report.summary.contains("w2"));
}

#[test]
fn two_writers_are_mutual_exclusions_to_report() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Write);
    h.acquired(1, 1);
    h.invoke_acquire(2, LockRole::Write);
    h.acquired(2, 2);
    let history = h.build();
    assert!(read_write_compat::check(&history, &cfg()).ok);
    assert!(!mutual_exclusion::check(&history, &cfg()).ok);
}
