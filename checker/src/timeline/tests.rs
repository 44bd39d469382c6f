use super::{Describer, format_ms, render_timeline};
use crate::testkit::{DIR, Hb, node};
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind, History, LockRole, ZkOp};
use zklock_recipe::{SessionState, ZkError};

/// A small read/write run with a fault: c1 writes, c2 and c3 read, c4 tries and fails.
fn small_history() -> History {
    let mut h = Hb::new();
    h.at_ms(12);
    h.invoke_acquire(1, LockRole::Write);
    h.op(1, ZkOp::Create, &format!("{DIR}/_c_1-0-write-"));
    h.op(1, ZkOp::GetChildren, DIR);
    h.ev(
        1,
        EventKind::Acquired {
            token: 1,
            node: node(1, 1),
        },
    );
    h.ev(1, EventKind::ResourceRead { value: 0 });
    h.ev(
        2,
        EventKind::AcquireInvoked {
            role: LockRole::Read,
            mode: AcquireMode::Timeout { timeout_ms: 3000 },
            lock: None,
        },
    );
    let id = h.invoke(2, ZkOp::Create, &format!("{DIR}/_c_2-0-read-"));
    h.fault(2, FaultKind::ConnectionLoss);
    h.ev(2, EventKind::OpUnknown { op_id: id });
    h.session(2, SessionState::Disconnected);
    h.session(2, SessionState::Connected);
    h.op(2, ZkOp::GetChildren, DIR);
    h.op(2, ZkOp::Exists, &node(1, 1));
    h.write(1, 1, true, false, false);
    h.release(1, 1);
    h.op(2, ZkOp::GetChildren, DIR);
    h.ev(
        2,
        EventKind::Acquired {
            token: 2,
            node: node(2, 2),
        },
    );
    h.invoke_acquire(3, LockRole::Read);
    h.ev(
        3,
        EventKind::Acquired {
            token: 3,
            node: node(3, 3),
        },
    );
    h.ev(
        4,
        EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode: AcquireMode::Try,
            lock: None,
        },
    );
    h.op_fail(4, ZkOp::Delete, &node(4, 4), ZkError::NoNode);
    h.ev(
        4,
        EventKind::AcquireFailed {
            reason: "held by another".into(),
        },
    );
    h.fault(3, FaultKind::Pause { duration_ms: 7000 });
    h.ev(
        3,
        EventKind::Lost {
            reason: "session expired".into(),
        },
    );
    h.ev(2, EventKind::ReleaseInvoked);
    h.ev(2, EventKind::Released);
    h.ev(2, EventKind::Done);
    h.build()
}

#[test]
fn timeline_snapshot() {
    insta::assert_snapshot!(render_timeline(&small_history()));
}

#[test]
fn timeline_is_deterministic_and_starts_with_the_legend() {
    let h = small_history();
    let t = render_timeline(&h);
    assert_eq!(t, render_timeline(&h));
    assert!(t.starts_with("legend:"));
    // One line per event after the legend and its blank line.
    let (_, events) = t.split_once("\n\n").expect("a blank line after the legend");
    assert_eq!(events.lines().count(), h.events.len());
}

#[test]
fn holder_set_marks_readers_and_writers() {
    let t = render_timeline(&small_history());
    let holders: Vec<&str> = t
        .lines()
        .filter_map(|l| l.rsplit_once("holders ").map(|(_, h)| h))
        .collect();
    assert!(holders.contains(&"{w1}"));
    assert!(holders.contains(&"{r2, r3}"));
    assert_eq!(holders.last(), Some(&"{}"));
}

#[test]
fn milliseconds_have_three_decimals() {
    assert_eq!(format_ms(12_300), "12.300");
    assert_eq!(format_ms(7), "0.007");
    assert_eq!(format_ms(0), "0.000");
}

#[test]
fn a_sparse_describer_describes_as_the_indexed_one() {
    let mut history = small_history();
    // An op id used twice by one client, and once by another: the last request wins.
    let mut hb = Hb::new();
    let a = hb.invoke(1, ZkOp::Exists, "/x");
    hb.ok(1, a);
    hb.ev(
        2,
        EventKind::OpInvoke {
            op_id: a,
            op: ZkOp::Delete,
            path: "/y".into(),
            watch: false,
        },
    );
    hb.ev(
        1,
        EventKind::OpInvoke {
            op_id: a,
            op: ZkOp::GetData,
            path: "/z".into(),
            watch: true,
        },
    );
    hb.ev(2, EventKind::OpUnknown { op_id: a + 7 });
    history.events.extend(hb.build().events);
    let (indexed, sparse) = (Describer::new(&history), Describer::sparse(&history));
    for i in 0..history.events.len() {
        assert_eq!(indexed.line(i), sparse.line(i), "event {i}");
    }
}
