use super::cfg;
use crate::properties::rightful_write_accepted;
use crate::testkit::Hb;
use zklock_recipe::SessionState;
use zklock_recipe::history::FaultKind;

#[test]
fn a_stale_holder_may_be_refused() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.read(1);
    h.fault(1, FaultKind::Pause { duration_ms: 9000 });
    h.acquire(2, 2);
    h.read(2);
    h.write(2, 2, true, false, false);
    h.write(1, 1, false, false, true);
    let v = rightful_write_accepted::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
}

#[test]
fn a_rightful_holder_refused_is_caught() {
    let mut h = Hb::new();
    h.acquire(1, 5);
    // The holder's read teaches the fence its token, before its write.
    let taught = h.read(1);
    h.write(1, 5, true, false, false);
    h.release(1, 5);
    let hold = h.acquire(2, 3);
    h.read(2);
    let refused = h.write(2, 3, false, false, false);
    let v = rightful_write_accepted::check(&h.build(), &cfg());
    assert!(!v.ok, "{v}");
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![taught, hold, refused]);
    assert!(r.summary.contains("c2") && r.summary.contains("token 3"));
}

#[test]
fn a_refusal_after_the_session_left_connected_is_not_judged() {
    let mut h = Hb::new();
    h.acquire(1, 5);
    h.read(1);
    h.release(1, 5);
    h.acquire(2, 3);
    h.session(2, SessionState::Disconnected);
    h.session(2, SessionState::Connected);
    h.write(2, 3, false, false, false);
    let v = rightful_write_accepted::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
}

/// A slowed link leaves the server hearing the holder: its hold stays valid.
#[test]
fn a_slowed_link_does_not_excuse_a_refusal() {
    let mut h = Hb::new();
    h.acquire(1, 5);
    h.read(1);
    h.release(1, 5);
    h.acquire(2, 3);
    h.fault(2, FaultKind::DelayedDelivery { delay_ms: 50 });
    h.write(2, 3, false, false, false);
    let v = rightful_write_accepted::check(&h.build(), &cfg());
    assert!(!v.ok, "{v}");
}
