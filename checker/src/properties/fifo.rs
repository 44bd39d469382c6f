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

use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{is_writer, sequence_of};
use std::collections::{BTreeMap, BTreeSet};
use zklock_recipe::SessionId;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, History, LockRole};

pub const NAME: &str = "fifo";

#[derive(Clone, Copy, Debug)]
struct Grant {
    index: usize,
    seq: u64,
    writer: bool,
}

pub fn check(history: &History, _cfg: &CheckConfig) -> Verdict {
    Verdict::from_violation(NAME, first_out_of_order(history))
}

fn first_out_of_order(history: &History) -> Option<Violation> {
    let mut roles: BTreeMap<u32, LockRole> = BTreeMap::new();
    let mut ended_sessions: BTreeSet<(u32, SessionId)> = BTreeSet::new();
    let mut grants: Vec<Grant> = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::AcquireInvoked { role, .. } => {
                roles.insert(e.client, *role);
            }
            EventKind::Session {
                state: SessionState::Expired | SessionState::Closed,
            } => {
                ended_sessions.insert((e.client, e.session));
            }
            EventKind::Acquired { node, .. } => {
                let Some(seq) = sequence_of(node) else {
                    continue;
                };
                if ended_sessions.contains(&(e.client, e.session)) {
                    continue;
                }
                let writer =
                    is_writer(roles.get(&e.client).copied().unwrap_or(LockRole::Exclusive));
                let grant = Grant {
                    index: i,
                    seq,
                    writer,
                };
                // The earlier grant furthest ahead of this one that it must not follow.
                let passed = grants
                    .iter()
                    .filter(|g| g.seq > seq && (g.writer || writer))
                    .max_by_key(|g| (g.seq, g.index));
                if let Some(g) = passed {
                    return Some(report(history, *g, grant));
                }
                grants.push(grant);
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
