use super::*;
use crate::testkit::{Hb, node};
use zklock_recipe::history::{EventKind, FaultKind, ZkOp};

const BOUND_MS: u64 = 1000;

/// Client 1 asks the holder of client 0's node `seq` to give up; returns the index of
/// the request's acknowledgement.
fn ask(h: &mut Hb, seq: i32) -> usize {
    h.ev(1, EventKind::RevokeRequested { node: node(0, seq) });
    let id = h.invoke_plain(1, ZkOp::SetData, &node(0, seq));
    h.ok(1, id)
}

fn judge(h: &Hb) -> Vec<crate::properties::Verdict> {
    let history = h.build();
    let end = history.events.last().map_or(0, |e| e.time_us);
    check_revocation(&history, BOUND_MS, end)
}

#[test]
fn a_holder_that_gives_up_when_asked_passes_both() {
    let mut h = Hb::new();
    h.acquire(0, 1);
    ask(&mut h, 1);
    h.ev(0, EventKind::RevokeObserved);
    h.release(0, 1);
    let v = judge(&h);
    assert!(v.iter().all(|v| v.ok), "{v:?}");
    assert_eq!(
        v[0].note.as_deref(),
        Some("1 revoke requests, 1 applied, 1 holds asked to give up")
    );
    assert_eq!(v[1].note.as_deref(), Some("1 holds given up when asked"));
}

#[test]
fn a_holder_that_keeps_its_hold_past_the_bound_fails_honored() {
    let mut h = Hb::new();
    h.acquire(0, 1);
    let acked = ask(&mut h, 1);
    h.at_ms(2000);
    h.release(0, 1);
    let v = judge(&h);
    assert!(!v[0].ok, "{}", v[0]);
    let report = v[0].report.as_ref().expect("a report");
    assert!(report.events.iter().any(|e| e.index == acked), "{report}");
    assert!(v[1].ok, "{}", v[1]);
    // Within the bound it passes; and a hold still open at the run's end is judged too.
    let mut h = Hb::new();
    h.acquire(0, 1);
    ask(&mut h, 1);
    h.at_ms(900);
    h.release(0, 1);
    assert!(judge(&h)[0].ok);
    let mut h = Hb::new();
    h.acquire(0, 1);
    ask(&mut h, 1);
    h.at_ms(5000);
    h.ev(2, EventKind::Done);
    assert!(!judge(&h)[0].ok);
}

#[test]
fn a_fault_on_the_holder_excuses_a_late_release_but_one_on_another_client_does_not() {
    for (target, ok) in [(0, true), (2, false)] {
        let mut h = Hb::new();
        h.acquire(0, 1);
        ask(&mut h, 1);
        h.fault(target, FaultKind::Pause { duration_ms: 5000 });
        h.at_ms(5000);
        h.release(0, 1);
        assert_eq!(judge(&h)[0].ok, ok, "a fault on c{target}");
    }
}

#[test]
fn a_request_on_a_released_node_or_a_failed_one_asks_nobody() {
    let mut h = Hb::new();
    h.acquire(0, 1);
    h.release(0, 1);
    h.ev(1, EventKind::RevokeRequested { node: node(0, 1) });
    h.op_fail(
        1,
        ZkOp::SetData,
        &node(0, 1),
        zklock_recipe::ZkError::NoNode,
    );
    h.acquire(0, 2);
    h.at_ms(5000);
    h.release(0, 2);
    let v = judge(&h);
    assert!(v.iter().all(|v| v.ok), "{v:?}");
    // Giving up hold 2 on that request (for hold 1's node) is giving up unasked.
    let mut h = Hb::new();
    h.acquire(0, 1);
    h.release(0, 1);
    h.ev(1, EventKind::RevokeRequested { node: node(0, 1) });
    h.op_fail(
        1,
        ZkOp::SetData,
        &node(0, 1),
        zklock_recipe::ZkError::NoNode,
    );
    h.acquire(0, 2);
    let seen = h.ev(0, EventKind::RevokeObserved);
    h.release(0, 2);
    let v = judge(&h);
    assert!(!v[1].ok, "{}", v[1]);
    let report = v[1].report.as_ref().expect("a report");
    assert!(report.events.iter().any(|e| e.index == seen), "{report}");
}

#[test]
fn another_client_deleting_a_held_node_fails_only_given_up() {
    let mut h = Hb::new();
    h.acquire(0, 1);
    h.ev(1, EventKind::RevokeRequested { node: node(0, 1) });
    h.op(1, ZkOp::Delete, &node(0, 1));
    h.ev(
        0,
        EventKind::Lost {
            reason: "NodeDeleted".into(),
        },
    );
    h.release(0, 1);
    let v = judge(&h);
    assert!(!v[1].ok, "{}", v[1]);
    assert!(v[1].to_string().contains("c1 deleted"), "{}", v[1]);
    // The holder's own delete is its release.
    let mut h = Hb::new();
    h.acquire(0, 1);
    h.release(0, 1);
    assert!(judge(&h)[1].ok);
}

#[test]
fn a_set_data_a_revoker_did_not_name_is_no_request() {
    let mut h = Hb::new();
    h.acquire(0, 1);
    h.op(1, ZkOp::SetData, &node(0, 1));
    h.ev(0, EventKind::RevokeObserved);
    h.release(0, 1);
    assert!(!judge(&h)[1].ok);
}
