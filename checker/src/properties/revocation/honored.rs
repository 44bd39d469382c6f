//! always: `revocation_honored`: a holder asked to give up begins its release (its
//! `ReleaseInvoked`, or its `Lost`) within the bound (`Scenario::revoke_bound_ms`) of the
//! later of the request's acknowledgement and its grant. A fault that strikes the holder
//! during its hold (a pause, a partition, a connection loss, a slowed link, a session
//! leaving Connected) excuses it: it may not hear the request until the fault is over, and then it has lost
//! the hold anyway. A hold still open when the run ends is judged against the run's end.

use super::{Request, is_node};
use crate::holds::all_holds;
use crate::properties::{Verdict, Violation};
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, History};

pub const NAME: &str = "revocation_honored";

/// The verdict on `history`.
pub(crate) fn check(
    history: &History,
    requests: &[Request<'_>],
    bound_ms: u64,
    run_end_us: u64,
) -> Verdict {
    let events = &history.events;
    let bound_us = bound_ms.saturating_mul(1000);
    let mut asked = 0u64;
    for hold in all_holds(history) {
        let end_us = hold.end.map_or(run_end_us, |e| events[e].time_us);
        // The first request known applied while the hold was open (or on its node
        // before the grant, which the holder reads when it starts watching).
        let Some((req, acked)) = requests.iter().find_map(|r| {
            let at = r.applied_at()?;
            (is_node(&hold.node, r.node) && hold.end.is_none_or(|e| at < e)).then_some((r, at))
        }) else {
            continue;
        };
        asked += 1;
        let from = acked.max(hold.start);
        let deadline_us = events[from].time_us.saturating_add(bound_us);
        if end_us <= deadline_us {
            continue;
        }
        // From the grant: a partition or a pause that began before the request may last
        // past it.
        let until = hold.end.unwrap_or(events.len());
        let excused = events[hold.start..until].iter().any(|e| {
            e.client == hold.client
                && match &e.kind {
                    EventKind::Fault { .. } => true,
                    EventKind::Session { state } => *state != SessionState::Connected,
                    _ => false,
                }
        });
        if excused {
            continue;
        }
        let summary = format!(
            "c{} was asked to give up {} and still held it {} ms later (bound {bound_ms} ms)",
            hold.client,
            hold.node,
            (end_us - events[from].time_us) / 1000
        );
        let mut proof = vec![
            (req.sent, "a revoker asks the holder to give up"),
            (acked, "the request is applied"),
            (hold.start, "the holder's grant"),
        ];
        proof.sort_by_key(|p| p.0);
        if let Some(e) = hold.end {
            proof.push((e, "the holder gives up only now"));
        }
        let v = Violation::new(NAME, history, summary, &proof);
        return Verdict::from_violation(NAME, Some(v));
    }
    let mut v = Verdict::from_violation(NAME, None);
    let applied = requests.iter().filter(|r| r.applied_at().is_some()).count();
    v.note = Some(format!(
        "{} revoke requests, {applied} applied, {asked} holds asked to give up",
        requests.len()
    ));
    v
}
