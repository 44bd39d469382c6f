//! Overlapping holds, shared by the two belief properties.

use super::CheckConfig;
use super::beliefs::HoldRef;
use super::index::HistoryIndex;
use super::verdict::{Violation, at};
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// The first pair of overlapping holds of different clients that `conflict` accepts:
/// `(earlier, later)`, where the later one's `Acquired` came while the earlier was still
/// believed. History order is time order, so overlap is judged by event index.
pub(crate) fn first_overlap<'a, 'h>(
    holds: &'a [HoldRef<'h>],
    conflict: impl Fn(&HoldRef<'h>, &HoldRef<'h>) -> bool,
) -> Option<(&'a HoldRef<'h>, &'a HoldRef<'h>)> {
    // Holds come ordered by start, and a hold no longer believed at one start is not at
    // any later one: the earlier candidates are the holds still open, kept in start order.
    let mut open: Vec<&'a HoldRef<'h>> = Vec::new();
    for later in holds {
        open.retain(|a| a.open_at(later.start));
        if let Some(earlier) = open
            .iter()
            .find(|a| a.client != later.client && conflict(a, later))
        {
            return Some((earlier, later));
        }
        open.push(later);
    }
    None
}

/// Checks the holds for a conflicting overlap and reports it; under pauses a violation
/// involving a paused client is the known, unavoidable class.
pub(crate) fn check(
    property: &'static str,
    what: &str,
    index: &HistoryIndex<'_>,
    cfg: &CheckConfig,
    conflict: impl Fn(&HoldRef<'_>, &HoldRef<'_>) -> bool,
) -> Option<Violation> {
    let (a, b) = first_overlap(index.holds(), conflict)?;
    Some(report(property, what, index.history, cfg, a, b))
}

fn report(
    property: &'static str,
    what: &str,
    history: &History,
    cfg: &CheckConfig,
    a: &HoldRef<'_>,
    b: &HoldRef<'_>,
) -> Violation {
    let (ca, cb) = (a.label(), b.label());
    let summary = format!(
        "{ca} (session {}, token {}) and {cb} (session {}, token {}) {what} at {}",
        a.session,
        a.token,
        b.session,
        b.token,
        at(history, b.start)
    );
    let first = format!("{ca} acquires");
    let second = format!("{cb} acquires while {ca} still believes it holds");
    let mut proof: Vec<(usize, String)> = vec![(a.start, first), (b.start, second)];
    // Why the first holder kept believing: its session ended under it.
    if let Some(i) = (a.start..b.start).find(|&i| {
        let e = &history.events[i];
        e.client == a.client
            && matches!(
                e.kind,
                EventKind::Session {
                    state: SessionState::Expired | SessionState::Closed
                }
            )
    }) {
        proof.push((i, format!("{ca}'s session ended, yet it kept believing")));
    }
    if let Some(end) = a.end {
        proof.push((end, format!("{ca} stops believing")));
    }
    let refs: Vec<(usize, &str)> = proof.iter().map(|(i, r)| (*i, r.as_str())).collect();
    let mut v = Violation::new_at(property, history, summary, &refs, Some(b.start));
    let paused = history.events[..b.start].iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Fault {
                fault: FaultKind::Pause { .. }
            }
        ) && (e.client == a.client || e.client == b.client)
    });
    if cfg.pauses_on && paused {
        v.known_unavoidable = true;
        v.explanation = Some(
            "process pauses were on and one of these clients was paused: a paused holder \
             cannot notice its session expiring, so no lock recipe can keep belief-based \
             exclusion (Kleppmann, \"How to do distributed locking\", 2016). This run is \
             judged by fenced_resource instead."
                .into(),
        );
    } else if cfg.pauses_on {
        v.explanation = Some(
            "process pauses were on, but neither client was paused before the overlap: \
             this is not the unavoidable class."
                .into(),
        );
    }
    v
}
