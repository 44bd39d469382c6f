use super::cfg;
use crate::properties::fenced_resource;
use crate::testkit::Hb;

#[test]
fn token_order_passes_and_counts_what_fencing_prevented() {
    let mut h = Hb::new();
    h.write(1, 1, true, false, false);
    h.write(1, 1, true, false, false);
    h.write(2, 2, true, false, false);
    // A stale holder: the fenced resource rejects it, the unfenced one loses an update.
    h.write(1, 1, false, false, true);
    h.write(3, 3, true, false, false);
    let v = fenced_resource::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
    let note = v.note.unwrap();
    assert!(note.contains("fencing prevented 1 lost update"), "{note}");
}

#[test]
fn accepted_lower_token_is_caught() {
    let mut h = Hb::new();
    h.write(1, 1, true, false, false);
    let hi = h.write(2, 5, true, false, false);
    let lo = h.write(1, 3, true, false, true);
    let v = fenced_resource::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![hi, lo]);
    assert_eq!(r.events[1].token, Some(3));
    assert!(r.summary.contains("token 3") && r.summary.contains("token 5"));
}

#[test]
fn accepted_lost_update_is_caught() {
    let mut h = Hb::new();
    let first = h.write(1, 1, true, false, false);
    let lost = h.write(2, 2, true, true, true);
    let v = fenced_resource::check(&h.build(), &cfg());
    assert!(!v.ok);
    assert_eq!(v.report.unwrap().event_indices(), vec![first, lost]);
}

#[test]
fn readers_writes_are_not_judged() {
    use zklock_recipe::history::LockRole;
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Write);
    h.write(1, 5, true, false, false);
    h.invoke_acquire(2, LockRole::Read);
    h.write(2, 3, true, true, true);
    let v = fenced_resource::check(&h.build(), &cfg());
    assert!(v.ok, "{v}");
}
