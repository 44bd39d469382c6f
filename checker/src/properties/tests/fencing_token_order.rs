use super::cfg;
use crate::properties::{CheckConfig, fencing_token_order};
use crate::testkit::Hb;
use zklock_recipe::history::{EventKind, FaultKind, LockRole};

#[test]
fn tokens_that_grow_with_each_hold_pass() {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.release(1, 1);
    h.acquire(2, 2);
    h.release(2, 2);
    h.acquire(1, 7);
    let v = fencing_token_order::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
}

#[test]
fn a_later_holder_with_a_lower_token_is_caught() {
    let mut h = Hb::new();
    let first = h.acquire(1, 5);
    h.release(1, 5);
    let second = h.acquire(2, 3);
    let v = fencing_token_order::check(&h.build(), &cfg());
    assert!(!v.ok, "{v}");
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![first, second]);
    assert_eq!((r.events[0].token, r.events[1].token), (Some(5), Some(3)));
    assert!(r.summary.contains("token 3") && r.summary.contains("token 5"));
}

#[test]
fn a_token_used_twice_is_caught() {
    let mut h = Hb::new();
    h.acquire(1, 4);
    h.release(1, 4);
    h.acquire(1, 4);
    let v = fencing_token_order::check(&h.build(), &cfg());
    assert!(!v.ok, "{v}");
}

#[test]
fn readers_tokens_owe_each_other_no_order_but_writers_do() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Read);
    h.acquired(1, 4);
    h.invoke_acquire(2, LockRole::Read);
    h.acquired(2, 3);
    h.ev(1, EventKind::ReleaseInvoked);
    h.ev(2, EventKind::ReleaseInvoked);
    h.invoke_acquire(3, LockRole::Write);
    h.acquired(3, 6);
    h.ev(3, EventKind::ReleaseInvoked);
    let passing = h.build();
    let v = fencing_token_order::check(&passing, &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
    // A reader after the writer, with a token below the writer's.
    h.invoke_acquire(2, LockRole::Read);
    h.acquired(2, 5);
    let v = fencing_token_order::check(&h.build(), &cfg());
    assert!(!v.ok, "{v}");
}

#[test]
fn each_lock_path_has_its_own_order() {
    let mut h = Hb::new();
    h.acquire(1, 5);
    h.release(1, 5);
    h.invoke_acquire(2, LockRole::Exclusive);
    h.ev(
        2,
        EventKind::Acquired {
            token: 3,
            node: "/other/lock/_c_2-0-lock-0000000000".into(),
        },
    );
    let v = fencing_token_order::check(&h.build(), &cfg());
    assert!(v.ok && v.report.is_none(), "{v}");
}

/// A client paused in its acquire may resume believing in a grant the server took back.
#[test]
fn a_lower_token_after_a_pause_in_the_acquire_is_the_known_unavoidable_class() {
    let mut h = Hb::new();
    h.invoke_acquire(2, LockRole::Exclusive);
    h.fault(2, FaultKind::Pause { duration_ms: 9000 });
    h.acquire(1, 5);
    h.release(1, 5);
    h.acquired(2, 3);
    let history = h.build();
    let paused = CheckConfig {
        pauses_on: true,
        ..cfg()
    };
    let v = fencing_token_order::check(&history, &paused);
    assert!(v.ok && v.is_known_unavoidable(), "{v}");
    // Without pauses among the faults, nothing excuses it.
    let v = fencing_token_order::check(&history, &cfg());
    assert!(!v.ok, "{v}");
}
