//! The election's properties, judged on a run of the election workload
//! (`zklock_sim::Recipe::election`). Leadership is a hold: a contender leads from its
//! `Acquired` (token: the term's epoch) until its `Lost`, its `ReleaseInvoked`, its crash
//! or its next attempt, so the lock's properties judge an election as they judge a lock:
//!
//! | the election's property | judged by | kind |
//! |---|---|---|
//! | at most one contender believes it leads while its node is live and owned by its session (under pauses: the fenced resource) | `mutual_exclusion`, `fenced_resource` | always |
//! | the leadership epoch (the fencing token) strictly increases | `fencing_token_order` | always |
//! | after the heal, eventually a leader whenever a contender is live | `liveness_after_heal` | eventually |
//! | no herd | `no_herd` | always |
//!
//! and two of its own, after the lock's:
//!
//! | name | kind | holds when |
//! |---|---|---|
//! | `election_leader_owns_node` | always | every leader's node was created by the leader's own session |
//! | `election_no_leadership_after_close` | always | no contender leads after it closed its latch or cancelled its selector, until it joins again |

pub mod leader_owns_node;
pub mod no_leadership_after_close;

use super::{CheckConfig, Report, check_all};
use zklock_recipe::history::History;

/// The election's own property names, in the order [`check_election`] reports them
/// after the lock's.
pub const ELECTION_PROPERTY_NAMES: [&str; 2] =
    [leader_owns_node::NAME, no_leadership_after_close::NAME];

/// Every lock property on an election's `history`, then the election's own, with the
/// run's counters.
pub fn check_election(history: &History, cfg: &CheckConfig) -> Report {
    let mut report = check_all(history, cfg);
    report.verdicts.push(leader_owns_node::check(history));
    report
        .verdicts
        .push(no_leadership_after_close::check(history));
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{DIR, Hb, node};
    use zklock_recipe::SessionId;
    use zklock_recipe::history::{Event, EventKind, ZkOp};

    #[test]
    fn a_leader_on_its_own_sessions_node_holds_and_on_another_sessions_fails() {
        let mut h = Hb::new();
        h.acquire(0, 1);
        h.release(0, 1);
        let ok = leader_owns_node::check(&h.build());
        assert!(ok.ok, "{ok}");
        // Client 1 leads on client 0's node, never having created it.
        h.acquire(0, 2);
        h.invoke_acquire(1, zklock_recipe::history::LockRole::Exclusive);
        h.op(1, ZkOp::GetChildren, DIR);
        let stolen = h.ev(
            1,
            EventKind::Acquired {
                token: 2,
                node: node(0, 2),
            },
        );
        let v = leader_owns_node::check(&h.build());
        assert!(!v.ok, "{v}");
        let report = v.report.expect("a violation");
        assert_eq!(report.events[0].index, stolen);
    }

    #[test]
    fn a_node_made_by_an_earlier_session_of_the_same_client_is_not_the_leaders() {
        let mut h = Hb::new();
        h.acquire(0, 1);
        let mut history = h.build();
        // The same client, on a new session, leads on the old session's node.
        let last = history.events.last().expect("events").clone();
        history.events.push(Event {
            time_us: last.time_us + 100,
            session: SessionId(0x2000),
            ..last
        });
        assert!(!leader_owns_node::check(&history).ok);
    }

    #[test]
    fn a_create_whose_reply_was_lost_still_makes_the_node_its_sessions() {
        let mut h = Hb::new();
        h.invoke_acquire(0, zklock_recipe::history::LockRole::Exclusive);
        let id = h.invoke(0, ZkOp::Create, &format!("{DIR}/_c_0-0-lock-"));
        h.ev(0, EventKind::OpUnknown { op_id: id });
        h.op(0, ZkOp::GetChildren, DIR);
        h.acquired(0, 1);
        assert!(leader_owns_node::check(&h.build()).ok);
    }

    #[test]
    fn leading_after_close_fails_until_the_contender_joins_again() {
        let mut h = Hb::new();
        h.acquire(0, 1);
        h.ev(0, EventKind::ReleaseInvoked);
        h.ev(0, EventKind::Closed);
        h.ev(0, EventKind::Released);
        // Joining again, it may lead again.
        h.acquire(0, 2);
        let ok = no_leadership_after_close::check(&h.build());
        assert!(ok.ok, "{ok}");
        h.ev(0, EventKind::Closed);
        h.acquired(0, 3);
        let v = no_leadership_after_close::check(&h.build());
        assert!(!v.ok, "{v}");
    }

    #[test]
    fn an_elections_report_is_the_locks_then_its_own() {
        let mut h = Hb::new();
        h.acquire(0, 1);
        h.release(0, 1);
        let r = check_election(&h.build(), &CheckConfig::default());
        let names: Vec<_> = r.verdicts.iter().map(|v| v.property).collect();
        let mut want = crate::properties::PROPERTY_NAMES.to_vec();
        want.extend(ELECTION_PROPERTY_NAMES);
        assert_eq!(names, want);
    }
}
