use super::cfg;
use crate::properties::{PROPERTY_NAMES, check_all};
use crate::testkit::Hb;
use zklock_recipe::SessionState;
use zklock_recipe::history::FaultKind;

#[test]
fn a_clean_history_passes_every_property() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.release(1, 1);
    let report = check_all(&h.build(), &cfg());
    assert!(report.ok(), "{report}");
    let names: Vec<&str> = report.verdicts.iter().map(|v| v.property).collect();
    assert_eq!(names, PROPERTY_NAMES);
    assert!(report.first_failure().is_none());
}

#[test]
fn report_names_the_violated_property_and_its_events() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.write(1, 1, true, false, false);
    h.fault(1, FaultKind::ForcedExpiry);
    h.session(1, SessionState::Expired);
    h.acquire(2, 2);
    h.write(2, 2, true, false, false);
    h.write(1, 1, false, false, true);
    let report = check_all(&h.build(), &cfg());
    assert_eq!(report.violated(), vec!["mutual_exclusion"]);
    assert_eq!(report.first_failure().unwrap().property, "mutual_exclusion");
    insta::assert_snapshot!(report.to_string());
}
