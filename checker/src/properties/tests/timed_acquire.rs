use super::cfg;
use crate::properties::timed_acquire;
use crate::testkit::Hb;
use zklock_recipe::SessionState;
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind, LockRole};

/// c`client` starts an exclusive acquire with a timeout of `timeout_ms` at `at_ms`.
fn timed(h: &mut Hb, client: u32, timeout_ms: u64, at_ms: u64) -> usize {
    h.at_ms(at_ms);
    h.ev(
        client,
        EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode: AcquireMode::Timeout { timeout_ms },
            lock: None,
        },
    )
}

fn timed_out(h: &mut Hb, client: u32, at_ms: u64) -> usize {
    h.at_ms(at_ms);
    h.ev(
        client,
        EventKind::AcquireFailed {
            reason: "timed out".into(),
        },
    )
}

#[test]
fn a_timed_acquire_that_returns_at_its_deadline_or_within_the_grace_passes() {
    let mut h = Hb::new();
    timed(&mut h, 1, 3000, 0);
    timed_out(&mut h, 1, 3000);
    timed(&mut h, 2, 3000, 10_000);
    // The grace (1000 ms) covers deleting the node at the deadline.
    timed_out(&mut h, 2, 13_900);
    timed(&mut h, 3, 3000, 20_000);
    h.acquired(3, 1);
    assert!(timed_acquire::check(&h.build(), &cfg()).ok);
}

#[test]
fn a_timed_acquire_that_returns_long_after_its_deadline_is_caught() {
    let mut h = Hb::new();
    let start = timed(&mut h, 1, 3000, 0);
    // Another client's faults do not excuse this one.
    h.fault(2, FaultKind::Partition { duration_ms: 9000 });
    let end = timed_out(&mut h, 1, 9000);
    let v = timed_acquire::check(&h.build(), &cfg());
    assert!(!v.ok);
    let r = v.report.unwrap();
    assert_eq!(r.event_indices(), vec![start, end]);
    assert!(
        r.summary.contains("timeout of 3000 ms") && r.summary.contains("took 9000"),
        "{}",
        r.summary
    );
}

#[test]
fn an_acquire_that_wins_late_is_caught_too() {
    let mut h = Hb::new();
    timed(&mut h, 1, 3000, 0);
    h.at_ms(7000);
    h.acquired(1, 1);
    assert!(!timed_acquire::check(&h.build(), &cfg()).ok);
}

/// Whether c1's timed acquire (3000 ms, from `start_ms`), with `before` done to the
/// history at 0 ms and `during` just after the start, passes when it returns at `end_ms`.
fn passes(before: impl Fn(&mut Hb), start_ms: u64, during: impl Fn(&mut Hb), end_ms: u64) -> bool {
    let mut h = Hb::new();
    h.at_ms(0);
    before(&mut h);
    timed(&mut h, 1, 3000, start_ms);
    during(&mut h);
    timed_out(&mut h, 1, end_ms);
    timed_acquire::check(&h.build(), &cfg()).ok
}

#[test]
fn the_clients_own_faults_and_disconnects_are_allowed_for() {
    // A partition of 5 s during the attempt: its duration and a session timeout (6 s).
    let partition = |h: &mut Hb| {
        h.fault(1, FaultKind::Partition { duration_ms: 5000 });
    };
    assert!(passes(|_| {}, 0, partition, 14_900));
    assert!(!passes(|_| {}, 0, partition, 15_100));
    // A disconnect: a session timeout.
    let disconnect = |h: &mut Hb| {
        h.session(1, SessionState::Disconnected);
    };
    assert!(passes(|_| {}, 0, disconnect, 9900));
    assert!(!passes(|_| {}, 0, disconnect, 10_100));
}

#[test]
fn a_fault_met_before_the_attempt_is_allowed_for_what_was_left_of_it() {
    // Partitioned for 10 s at 0; the attempt starts at 1 s, when 9 s + 6 s are left.
    let partition = |h: &mut Hb| {
        h.fault(
            1,
            FaultKind::Partition {
                duration_ms: 10_000,
            },
        );
    };
    assert!(passes(partition, 1000, |_| {}, 19_900));
    assert!(!passes(partition, 1000, |_| {}, 20_200));
}

#[test]
fn blocking_acquires_and_crashed_clients_are_not_judged() {
    let mut h = Hb::new();
    h.invoke_acquire(1, LockRole::Exclusive);
    h.at_ms(60_000);
    h.acquired(1, 1);
    timed(&mut h, 2, 3000, 0);
    h.fault(2, FaultKind::Crash);
    timed_out(&mut h, 2, 60_000);
    assert!(timed_acquire::check(&h.build(), &cfg()).ok);
}
