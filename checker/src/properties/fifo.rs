//! always: `fifo`. Grants follow sequence order.
//!
//! Precisely: take the `Acquired` events in history order whose node ends in a 10-digit
//! sequence number. A pair of grants `g` before `h` violates fifo when `seq(h) < seq(g)`
//! and at least one of the two is a writer (exclusive or write): `h`'s node was created
//! before `g`'s (sequence numbers come from the parent's cversion, which only grows) and
//! still existed when `g` was granted (a node that vanished can never be granted under its
//! name again), so `h` was ahead in the queue yet served later. Readers queued together
//! may be granted in any order. A node that vanished (its session expired, or its owner
//! gave up) simply drops out of the queue and lets the next one go: that is not a
//! violation. A grant made after its own session expired or closed (the client believes
//! on a node that is gone) is skipped here; the belief properties judge it.

use super::index::HistoryIndex;
use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{is_writer, sequence_of};
use zklock_recipe::SessionId;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, History, LockRole};

pub const NAME: &str = "fifo";

#[derive(Clone, Copy, Debug)]
struct Grant {
    index: usize,
    seq: u64,
}

impl Grant {
    /// Keeps the grant with the highest `(seq, index)`; `self` is the later one.
    fn max_with(self, other: Option<Grant>) -> Grant {
        match other {
            Some(g) if g.seq > self.seq => g,
            _ => self,
        }
    }
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, _cfg: &CheckConfig) -> Verdict {
    Verdict::from_violation(NAME, first_out_of_order(index))
}

fn first_out_of_order(index: &HistoryIndex<'_>) -> Option<Violation> {
    let history = index.history;
    let mut roles: Vec<Option<LockRole>> = index.slots.table();
    // Few sessions end in a run: a list is enough.
    let mut ended_sessions: Vec<(u32, SessionId)> = Vec::new();
    // A grant is out of turn when an earlier one has a higher sequence (a writer's, if
    // it is a reader). The earlier grant reported is the one with the highest
    // `(seq, index)` among those, so only two need keeping: over all grants, and over
    // writers' grants.
    let mut top: Option<Grant> = None;
    let mut top_writer: Option<Grant> = None;
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::AcquireInvoked { role, .. } => {
                roles[index.slots.of(e.client)] = Some(*role);
            }
            EventKind::Session {
                state: SessionState::Expired | SessionState::Closed,
            } => {
                ended_sessions.push((e.client, e.session));
            }
            EventKind::Acquired { node, .. } => {
                let Some(seq) = sequence_of(node) else {
                    continue;
                };
                if ended_sessions.contains(&(e.client, e.session)) {
                    continue;
                }
                let role = roles[index.slots.of(e.client)].unwrap_or(LockRole::Exclusive);
                let writer = is_writer(role);
                let grant = Grant { index: i, seq };
                // The earlier grant furthest ahead of this one that it must not follow.
                let passed = if writer { top } else { top_writer };
                if let Some(g) = passed.filter(|g| g.seq > seq) {
                    return Some(report(history, g, grant));
                }
                top = Some(grant.max_with(top));
                if writer {
                    top_writer = Some(grant.max_with(top_writer));
                }
            }
            _ => {}
        }
    }
    None
}

fn report(history: &History, earlier: Grant, later: Grant) -> Violation {
    let (a, b) = (&history.events[earlier.index], &history.events[later.index]);
    let summary = format!(
        "c{} was granted sequence {} at {} before c{}'s earlier sequence {} (granted at {})",
        a.client,
        earlier.seq,
        at(history, earlier.index),
        b.client,
        later.seq,
        at(history, later.index)
    );
    Violation::new(
        NAME,
        history,
        summary,
        &[
            (earlier.index, "granted out of turn (higher sequence first)"),
            (later.index, "the node ahead of it, granted later"),
        ],
    )
}
