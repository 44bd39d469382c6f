//! Events of a real run that were concurrent, and the order the history happens to give them.
//!
//! A real history is ordered by one lock (zklock-real's recorder), but
//! clients run in parallel: between taking in a reply and sending its next request, a
//! client computes for a few microseconds, and another client's event can land in between.
//! A simulated client takes that step atomically (the world acts only at quiescent points),
//! and the checker's `no_herd` reads such a gap as "blocked on a watch": a waiter whose
//! listing was just answered, caught by a release before it sends the watch on its
//! predecessor, looks woken by that release. This module recognises that mid-step pattern
//! and moves the waiter's request back to where a simulated client would have sent it,
//! so a caller can re-judge a history whose events are only reordered within
//! [`CONCURRENCY_TOLERANCE_US`].

use crate::properties::{CheckConfig, Report, check_all, no_herd};
use zklock_recipe::history::{EventKind, History, ZkOp};

/// The largest gap, in µs, between a release's delete and a waiter's request for the
/// two to count as concurrent.
pub const CONCURRENCY_TOLERANCE_US: u64 = 2_000;

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `woken`, a request the `no_herd` check counted as woken by the delete at index
/// `delete`, was instead the next step of a waiter mid-acquire: a read of a node other
/// than the deleted one (the waiter setting its watch on its own predecessor), right after
/// its listing of `lock_path` was answered, within [`CONCURRENCY_TOLERANCE_US`] of the
/// delete. A woken waiter lists the directory again instead.
pub fn mid_step_request(history: &History, delete: usize, woken: usize, lock_path: &str) -> bool {
    let events = &history.events;
    let (Some(d), Some(w)) = (events.get(delete), events.get(woken)) else {
        return false;
    };
    let EventKind::OpInvoke {
        op: ZkOp::Delete,
        path: deleted,
        ..
    } = &d.kind
    else {
        return false;
    };
    let EventKind::OpInvoke {
        op: ZkOp::GetData | ZkOp::Exists,
        path: read,
        ..
    } = &w.kind
    else {
        return false;
    };
    if basename(read) == basename(deleted)
        || woken <= delete
        || w.time_us.saturating_sub(d.time_us) > CONCURRENCY_TOLERANCE_US
    {
        return false;
    }
    // The waiter's last event before the request: its listing answered ok, before the delete.
    let Some(last) = events[..woken].iter().rposition(|e| e.client == w.client) else {
        return false;
    };
    let EventKind::OpOk { op_id } = events[last].kind else {
        return false;
    };
    last < delete
        && events[..last].iter().any(|e| {
            e.client == w.client
                && matches!(&e.kind, EventKind::OpInvoke { op_id: id, op: ZkOp::GetChildren, path, .. }
                    if *id == op_id && path.trim_end_matches('/') == lock_path.trim_end_matches('/'))
        })
}

/// Moves event `event` to just before event `before`, stamped with that event's time, as
/// if its client had sent it a moment earlier.
pub fn hoist_before(history: &mut History, event: usize, before: usize) {
    if event <= before || event >= history.events.len() {
        return;
    }
    let mut moved = history.events.remove(event);
    moved.time_us = history.events[before].time_us;
    history.events.insert(before, moved);
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_recipe::SessionId;
    use zklock_recipe::history::Event;

    fn ev(time_us: u64, client: u32, kind: EventKind) -> Event {
        Event {
            time_us,
            client,
            session: SessionId(i64::from(client)),
            kind,
        }
    }

    fn invoke(op_id: u64, op: ZkOp, path: &str) -> EventKind {
        EventKind::OpInvoke {
            op_id,
            op,
            path: path.into(),
            watch: false,
        }
    }

    fn history(read: &str, gap_us: u64) -> History {
        History {
            events: vec![
                ev(10, 3, invoke(1, ZkOp::GetChildren, "/l")),
                ev(20, 3, EventKind::OpOk { op_id: 1 }),
                ev(30, 1, invoke(2, ZkOp::Delete, "/l/a-0000000001")),
                ev(30 + gap_us, 3, invoke(3, ZkOp::GetData, read)),
            ],
        }
    }

    #[test]
    fn a_waiter_watching_its_own_predecessor_mid_step_is_recognised_and_hoisted() {
        let mut h = history("/l/b-0000000002", 14);
        assert!(mid_step_request(&h, 2, 3, "/l"));
        hoist_before(&mut h, 3, 2);
        assert_eq!(h.events[2].client, 3);
        assert_eq!(h.events[2].time_us, 30);
        assert!(matches!(
            h.events[3].kind,
            EventKind::OpInvoke {
                op: ZkOp::Delete,
                ..
            }
        ));
    }

    #[test]
    fn a_read_of_the_deleted_node_or_a_late_one_is_a_real_wake() {
        assert!(!mid_step_request(
            &history("/l/a-0000000001", 14),
            2,
            3,
            "/l"
        ));
        assert!(!mid_step_request(
            &history("/l/b-0000000002", CONCURRENCY_TOLERANCE_US + 1),
            2,
            3,
            "/l"
        ));
    }
}

/// A verdict on a parallel runner's history: `history` is the one judged, the recorded
/// one with `reordered` mid-step requests moved back.
#[derive(Debug)]
pub struct Judged {
    pub report: Report,
    pub history: History,
    pub reordered: usize,
}

/// The most mid-step requests [`judge_parallel`] moves before it takes the verdict as it is.
pub const REORDERED_MAX: usize = 1_000;

/// Runs every property on a history recorded by parallel clients. A `no_herd` violation
/// whose extra wake is only a waiter caught mid-step (see the module docs) is re-judged
/// with that request moved back, at most [`CONCURRENCY_TOLERANCE_US`].
pub fn judge_parallel(history: &History, cfg: &CheckConfig) -> Judged {
    rejudge_mid_steps(history, &[cfg.lock_path.as_str()], |h| check_all(h, cfg))
}

/// The re-judge loop of every parallel judge: `check` judges `history`; while its
/// `no_herd` violation's extra wake is a waiter caught mid-step in one of `lock_paths`,
/// that request is moved back before the delete and the history judged again, at most
/// [`REORDERED_MAX`] times.
pub(crate) fn rejudge_mid_steps(
    history: &History,
    lock_paths: &[&str],
    check: impl Fn(&History) -> Report,
) -> Judged {
    let mut history = history.clone();
    let mut reordered = 0;
    loop {
        let report = check(&history);
        // A report names events of the whole history, per lock or not.
        let mid_step = report
            .verdict(no_herd::NAME)
            .filter(|v| !v.ok)
            .and_then(|v| v.report.as_ref())
            .and_then(|v| {
                let delete = v.events.first()?.index;
                v.events[1..].iter().map(|e| e.index).find_map(|w| {
                    lock_paths
                        .iter()
                        .any(|path| mid_step_request(&history, delete, w, path))
                        .then_some((w, delete))
                })
            });
        match mid_step {
            Some((woken, delete)) if reordered < REORDERED_MAX => {
                hoist_before(&mut history, woken, delete);
                reordered += 1;
            }
            _ => {
                return Judged {
                    report,
                    history,
                    reordered,
                };
            }
        }
    }
}
