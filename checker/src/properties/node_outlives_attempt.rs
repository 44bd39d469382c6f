//! `always: node_outlives_attempt` (real runs only): no ephemeral node outlives the
//! attempt that made it by more than the run's leak bound while its session lives.
//!
//! An attempt runs from a client's `AcquireInvoked` to its end: `AcquireFailed` (try held,
//! timed out, cancelled, an error), or, once acquired, `Released` or `ReleaseFailed`
//! (`Lost` when no release followed, the client's next `AcquireInvoked` when nothing
//! did). The node's attempt is the client's last attempt whose `Acquired` names it (a
//! library may take up a node an earlier attempt left), else the client's last attempt
//! invoked before the node was made. By its attempt's end plus
//! [`NodeLives::leak_bound_ms`] (or its creation plus the bound, if made later), the node
//! must be deleted, unless the server stopped answering its session by then (expired or
//! closed: the node went with it). A fault its client meets before that deadline (a
//! connection loss, its session leaving Connected, a pause for the pause's length) pushes
//! the deadline to the bound after it, as liveness counts from the heal: a client cut off
//! cannot delete, and a leak is a bound's time without a fault that the node stood. The proxies' replies say when a node was made and
//! deleted and until when the server held its session ([`NodeLife`]), so a node reported
//! here stood, its session live, past the bound: a node the library leaked while the run
//! went on, blocking or misleading every later contender. An attempt still running when
//! the run ends is not judged; the end-of-run orphan check (`liveness_after_heal`) covers
//! what is left then.

use super::verdict::{Verdict, Violation};
use crate::timeline::format_ms;
use zklock_recipe::history::{EventKind, FaultKind, History, NodeLife, NodeLives};
use zklock_recipe::{SessionId, SessionState};

pub const NAME: &str = "node_outlives_attempt";

/// One attempt of a client: its `AcquireInvoked`, its end, and the node it acquired with.
#[derive(Debug)]
struct Attempt {
    invoked: usize,
    invoked_us: u64,
    end: Option<usize>,
    /// A `Lost` after the acquire: the end, unless a release follows.
    lost: Option<usize>,
    node: Option<String>,
}

impl Attempt {
    fn end(&self) -> Option<usize> {
        self.end.or(self.lost)
    }
}

/// Every client's attempts, in order.
fn attempts(history: &History) -> Vec<Vec<Attempt>> {
    let mut by_client: Vec<Vec<Attempt>> = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        let c = e.client as usize;
        if by_client.len() <= c {
            by_client.resize_with(c + 1, Vec::new);
        }
        let list = &mut by_client[c];
        let open = list.last_mut().filter(|a| a.end.is_none());
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                if let Some(a) = open {
                    a.end = Some(a.lost.unwrap_or(i));
                }
                list.push(Attempt {
                    invoked: i,
                    invoked_us: e.time_us,
                    end: None,
                    lost: None,
                    node: None,
                });
            }
            EventKind::Acquired { node, .. } => {
                if let Some(a) = open {
                    a.node = Some(node.clone());
                }
            }
            EventKind::AcquireFailed { .. }
            | EventKind::Released
            | EventKind::ReleaseFailed { .. } => {
                if let Some(a) = open {
                    a.end = Some(i);
                }
            }
            EventKind::Lost { .. } => {
                if let Some(a) = open.filter(|a| a.node.is_some()) {
                    a.lost.get_or_insert(i);
                }
            }
            _ => {}
        }
    }
    by_client
}

/// Whether an `Acquired` event's `node` (a full path or a name) is `path`.
fn names(node: &str, path: &str) -> bool {
    node == path
        || path
            .strip_suffix(node)
            .is_some_and(|parent| parent.ends_with('/'))
}

/// The node's attempt, by the rule of the module docs.
fn attempt_of<'a>(attempts: &'a [Attempt], node: &NodeLife) -> Option<&'a Attempt> {
    attempts
        .iter()
        .rev()
        .find(|a| a.node.as_deref().is_some_and(|n| names(n, &node.path)))
        .or_else(|| {
            attempts
                .iter()
                .rev()
                .find(|a| a.invoked_us <= node.created_us)
        })
}

/// When a node its client's attempt left must be gone: `bound_us` after `from_us`, pushed
/// on by each fault the client meets (from event `after` on) before the deadline, to the
/// bound after the fault's end (see the module docs).
fn deadline_us(history: &History, client: u32, after: usize, from_us: u64, bound_us: u64) -> u64 {
    let mut deadline = from_us.saturating_add(bound_us);
    for e in &history.events[after..] {
        if e.time_us > deadline {
            break;
        }
        if e.client != client {
            continue;
        }
        let lasting_ms = match &e.kind {
            EventKind::Fault {
                fault:
                    FaultKind::Pause { duration_ms }
                    | FaultKind::Partition { duration_ms }
                    | FaultKind::DelayedDelivery {
                        delay_ms: duration_ms,
                    },
            } => *duration_ms,
            EventKind::Fault { .. } => 0,
            EventKind::Session { state } if *state != SessionState::Connected => 0,
            _ => continue,
        };
        let over = e.time_us.saturating_add(lasting_ms.saturating_mul(1_000));
        deadline = deadline.max(over.saturating_add(bound_us));
    }
    deadline
}

/// The node's session, as the server knows it (its ephemeral owner, from the proxies),
/// and the session its client's events are recorded under where that differs: a driver's
/// library opens a session of its own beside the client's recording session, and a
/// reader of the history would look for the node's owner among the client's events.
fn sessions(node: &NodeLife, events_session: SessionId) -> String {
    if events_session == node.session {
        format!("session {}", node.session)
    } else {
        format!(
            "session {}, the library's own; the client's events are under session {}",
            node.session, events_session
        )
    }
}

/// The verdict: the first node (by its deadline) that outlived its attempt, and how many
/// did.
pub fn check(history: &History, lives: &NodeLives) -> Verdict {
    let attempts = attempts(history);
    let bound_us = lives.leak_bound_ms.saturating_mul(1_000);
    let mut leaks: Vec<(u64, &NodeLife, &Attempt, usize)> = Vec::new();
    for node in &lives.nodes {
        let Some(list) = attempts.get(node.client as usize) else {
            continue;
        };
        let Some(attempt) = attempt_of(list, node) else {
            continue;
        };
        let Some(end) = attempt.end() else {
            continue;
        };
        let end_us = history.events[end].time_us;
        let deadline_us = deadline_us(
            history,
            node.client,
            end,
            end_us.max(node.created_us),
            bound_us,
        );
        let stood = node.deleted_us.is_none_or(|d| d > deadline_us);
        if stood && node.session_answered_us > deadline_us {
            leaks.push((deadline_us, node, attempt, end));
        }
    }
    leaks.sort_by_key(|(deadline, ..)| *deadline);
    let violation = leaks.first().map(|&(deadline_us, node, attempt, end)| {
        let fate = match node.deleted_us {
            Some(d) => format!("deleted only at {} ms", format_ms(d)),
            None => "never deleted while the run watched".to_owned(),
        };
        let more = match leaks.len() {
            1 => String::new(),
            n => format!("; {} more nodes outlived their attempts", n - 1),
        };
        let summary = format!(
            "node {} of client {} ({}), made at {} ms, outlived its attempt (ended at \
             {} ms) by more than the leak bound of {} ms (until {} ms): {fate}, while the \
             server answered its session until {} ms{more}",
            node.path,
            node.client,
            sessions(node, history.events[attempt.invoked].session),
            format_ms(node.created_us),
            format_ms(history.events[end].time_us),
            lives.leak_bound_ms,
            format_ms(deadline_us),
            format_ms(node.session_answered_us),
        );
        Violation::new(
            NAME,
            history,
            summary,
            &[
                (attempt.invoked, "the attempt that made the node starts"),
                (end, "the attempt ends; the node should go within the bound"),
            ],
        )
    });
    Verdict::from_violation(NAME, violation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_recipe::history::{AcquireMode, Event, LockRole};

    fn event(time_ms: u64, client: u32, kind: EventKind) -> Event {
        Event {
            time_us: time_ms * 1_000,
            client,
            session: SessionId(7),
            kind,
        }
    }

    fn invoked() -> EventKind {
        EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode: AcquireMode::Try,
            lock: None,
        }
    }

    fn failed() -> EventKind {
        EventKind::AcquireFailed {
            reason: "held".into(),
        }
    }

    fn node(path: &str, created_ms: u64, deleted_ms: Option<u64>, answered_ms: u64) -> NodeLife {
        NodeLife {
            path: path.into(),
            client: 0,
            session: SessionId(7),
            created_us: created_ms * 1_000,
            deleted_us: deleted_ms.map(|d| d * 1_000),
            session_answered_us: answered_ms * 1_000,
        }
    }

    /// A try that failed at 100 ms, then a second attempt that acquires and releases.
    fn history() -> History {
        History {
            events: vec![
                event(0, 0, invoked()),
                event(100, 0, failed()),
                event(200, 0, invoked()),
                event(
                    300,
                    0,
                    EventKind::Acquired {
                        token: 1,
                        node: "/l/_c_b-lock-0000000002".into(),
                    },
                ),
                event(400, 0, EventKind::ReleaseInvoked),
                event(450, 0, EventKind::Released),
            ],
        }
    }

    fn judged(nodes: Vec<NodeLife>) -> Verdict {
        check(
            &history(),
            &NodeLives {
                nodes,
                leak_bound_ms: 1_000,
            },
        )
    }

    #[test]
    fn a_leak_report_names_the_nodes_session_and_the_clients_when_they_differ() {
        // The client's events are under session 7 (its recording session).
        let v = judged(vec![node("/l/_c_a-lock-0000000001", 10, None, 5_000)]);
        let summary = v.report.unwrap().summary;
        assert!(summary.contains("(session 0x7)"), "{summary}");
        assert!(!summary.contains("the library's own"), "{summary}");
        // A driver's library made the node in a session of its own: the report names both.
        let v = judged(vec![NodeLife {
            session: SessionId(0x10000591c490001),
            ..node("/l/_c_a-lock-0000000001", 10, None, 5_000)
        }]);
        let summary = v.report.unwrap().summary;
        assert!(
            summary.contains(
                "(session 0x10000591c490001, the library's own; the client's events are \
                 under session 0x7)"
            ),
            "{summary}"
        );
    }

    #[test]
    fn a_failed_attempts_node_standing_past_the_bound_while_its_session_lives_is_a_leak() {
        let v = judged(vec![node("/l/_c_a-lock-0000000001", 10, None, 5_000)]);
        assert!(!v.ok);
        let report = v.report.unwrap();
        assert_eq!(report.event_indices(), [0, 1]);
        assert!(
            report.summary.contains("never deleted"),
            "{}",
            report.summary
        );
        // Deleted, but late: the same.
        let v = judged(vec![node(
            "/l/_c_a-lock-0000000001",
            10,
            Some(1_200),
            5_000,
        )]);
        assert!(!v.ok);
    }

    #[test]
    fn a_node_deleted_within_the_bound_or_gone_with_its_session_holds() {
        for n in [
            // Deleted 900 ms after its attempt failed: within 1 s.
            node("/l/_c_a-lock-0000000001", 10, Some(1_000), 5_000),
            // Never deleted, but the server stopped answering its session by the deadline:
            // it expired, and the node went with it.
            node("/l/_c_a-lock-0000000001", 10, None, 1_100),
        ] {
            let v = judged(vec![n]);
            assert!(v.ok && v.report.is_none(), "{v}");
        }
        // Made by an attempt still running at the run's end: not judged.
        let mut h = history();
        h.events.push(event(500, 0, invoked()));
        let v = check(
            &h,
            &NodeLives {
                nodes: vec![node("/l/_c_c-lock-0000000003", 510, None, 9_000)],
                leak_bound_ms: 1_000,
            },
        );
        assert!(v.ok, "{v}");
    }

    /// A client cut off after its attempt cannot delete: the bound runs again from each
    /// fault it meets before the deadline, so a node deleted within the bound of the
    /// last one holds, and one standing a bound past it is a leak.
    #[test]
    fn the_bound_runs_from_the_last_fault_its_client_met_before_the_deadline() {
        let cut = || EventKind::Fault {
            fault: FaultKind::ConnectionLoss,
        };
        let mut h = history();
        // The try failed at 100 ms; its client is cut off at 900 ms and disconnected at
        // 1,800 ms, each within the bound of the one before. Another client's fault does
        // not count, nor one after the deadline.
        h.events.extend([
            event(900, 0, cut()),
            event(
                1_800,
                0,
                EventKind::Session {
                    state: SessionState::Disconnected,
                },
            ),
            event(2_700, 1, cut()),
            event(2_900, 0, cut()),
        ]);
        let judge = |h: &History, deleted_ms| {
            let n = node("/l/_c_a-lock-0000000001", 10, Some(deleted_ms), 9_000);
            check(
                h,
                &NodeLives {
                    nodes: vec![n],
                    leak_bound_ms: 1_000,
                },
            )
        };
        assert!(
            judge(&h, 2_700).ok,
            "deleted within the bound of the disconnect"
        );
        let v = judge(&h, 2_850);
        assert!(
            !v.ok,
            "deleted past the bound of the last fault that counts"
        );
        assert!(v.report.unwrap().summary.contains("until 2800"));
        // A pause holds the client up for its length, then the bound.
        let mut h = history();
        h.events.push(event(
            500,
            0,
            EventKind::Fault {
                fault: FaultKind::Pause { duration_ms: 4_000 },
            },
        ));
        let v = judge(&h, 5_400);
        assert!(v.ok, "{v}");
    }

    #[test]
    fn a_node_an_acquire_names_belongs_to_that_attempt_and_ends_with_its_release() {
        // Made in the first attempt, taken up by the second, deleted at its release.
        let n = node("/l/_c_b-lock-0000000002", 10, Some(440), 5_000);
        assert!(judged(vec![n.clone()]).ok);
        // Left standing after the release: a leak, judged from the release.
        let v = judged(vec![node("/l/_c_b-lock-0000000002", 10, None, 5_000)]);
        let report = v.report.unwrap();
        assert_eq!(report.event_indices(), [2, 5]);
        assert!(report.summary.contains("until 1450"), "{}", report.summary);
    }
}
