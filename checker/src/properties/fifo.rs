//! always: `fifo`. Grants follow sequence order.
//!
//! Precisely: take the `Acquired` events in history order whose node ends in a 10-digit
//! sequence number. A pair of grants `g` before `h` violates fifo when `seq(h) < seq(g)`
//! and at least one of the two is a writer (exclusive or write): `h`'s node was created
//! before `g`'s (sequence numbers come from the parent's counter, which only grows, apart
//! from its wrap from 2147483647 to -2147483648, which `<` here counts across) and
//! still existed when `g` was granted (a node that vanished can never be granted under its
//! name again), so `h` was ahead in the queue yet served later. Readers queued together
//! may be granted in any order. A node that vanished (its session expired, or its owner
//! gave up) simply drops out of the queue and lets the next one go: that is not a
//! violation. A grant made after its own session expired or closed (the client believes
//! on a node that is gone) is skipped here; the belief properties judge it.
//!
//! When the tokens are the nodes' czxids ([`CheckConfig::tokens_are_czxids`], a real
//! run's), `h` was ahead only if its token is lower too: ZooKeeper deletes an empty
//! container directory and the next create starts its sequence over, so a node made
//! after `g` may have the lower sequence. A token that is not a czxid (0 or less: the
//! driver found no node) leaves the sequence alone to judge.

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{is_writer, sequence_of};
use zklock_recipe::SessionId;
use zklock_recipe::SessionState;
use zklock_recipe::history::{History, LockRole};

pub const NAME: &str = "fifo";

#[derive(Clone, Copy, Debug)]
struct Grant {
    index: usize,
    /// Where the node stands in the queue: its sequence, counted from the run's first
    /// grant across the counter's wrap (see [`Fifo::place`]).
    place: i64,
    /// The sequence as named, for the report.
    seq: i64,
    token: i64,
    writer: bool,
}

impl Grant {
    /// Keeps the grant with the highest `(seq, index)`; `self` is the later one.
    fn max_with(self, other: Option<Grant>) -> Grant {
        match other {
            Some(g) if g.place > self.place => g,
            _ => self,
        }
    }
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<Fifo<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct Fifo<'h> {
    history: &'h History,
    // Few sessions end in a run: a list is enough.
    ended_sessions: Vec<(u32, SessionId)>,
    // A grant is out of turn when an earlier one has a higher sequence (a writer's, if
    // it is a reader). The earlier grant reported is the one with the highest
    // `(seq, index)` among those, so only two need keeping: over all grants, and over
    // writers' grants.
    top: Option<Grant>,
    top_writer: Option<Grant>,
    /// The first sequence in the counter's range granted, which places the others (see
    /// [`Fifo::place`]).
    first_seq: Option<i32>,
    /// The first out-of-turn pair: (earlier, later).
    found: Option<(Grant, Grant)>,
    /// With [`CheckConfig::tokens_are_czxids`]: every grant so far, to find one both
    /// numbered and made after a grant that the two tops alone would flag.
    tokens_are_czxids: bool,
    grants: Vec<Grant>,
}

impl<'h> Judge<'h> for Fifo<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, _: &'h Slots) -> Self {
        Fifo {
            history,
            ended_sessions: Vec::new(),
            top: None,
            top_writer: None,
            first_seq: None,
            found: None,
            tokens_are_czxids: cfg.tokens_are_czxids,
            grants: Vec::new(),
        }
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        if matches!(state, SessionState::Expired | SessionState::Closed) {
            let e = step.event;
            self.ended_sessions.push((e.client, e.session));
        }
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        if self.found.is_none() {
            self.grant(step, token, node, beliefs);
        }
    }

    fn finish(self) -> Verdict {
        let violation = self
            .found
            .map(|(earlier, later)| report(self.history, earlier, later));
        Verdict::from_violation(NAME, violation)
    }
}

impl Fifo<'_> {
    /// A grant of `node`: was a node ahead of it in the queue passed over?
    fn grant(&mut self, step: Step<'_>, token: i64, node: &str, beliefs: &Beliefs<'_>) {
        let e = step.event;
        let Some(seq) = sequence_of(node) else {
            return;
        };
        if self.ended_sessions.contains(&(e.client, e.session)) {
            return;
        }
        // The role of the client's latest acquire.
        let role = beliefs.role_of(step.slot).unwrap_or(LockRole::Exclusive);
        let writer = is_writer(role);
        let grant = Grant {
            index: step.index,
            place: self.place(seq),
            seq,
            token,
            writer,
        };
        // The earlier grant furthest ahead of this one that it must not follow.
        let passed = if writer { self.top } else { self.top_writer };
        if let Some(g) = passed.filter(|g| g.place > grant.place) {
            let passed = if self.tokens_are_czxids {
                self.passed_by_age(grant)
            } else {
                Some(g)
            };
            if let Some(g) = passed {
                self.found = Some((g, grant));
                return;
            }
        }
        self.top = Some(grant.max_with(self.top));
        if writer {
            self.top_writer = Some(grant.max_with(self.top_writer));
        }
        if self.tokens_are_czxids {
            self.grants.push(grant);
        }
    }

    /// The earlier grant furthest ahead of `h` (a writer's, if `h` is a reader's) that
    /// was also made after `h`'s node, by the czxids; one made before it, with a higher
    /// sequence, was numbered by an older incarnation of the directory.
    fn passed_by_age(&self, h: Grant) -> Option<Grant> {
        let made_after = |g: &Grant| g.token <= 0 || h.token <= 0 || g.token > h.token;
        (self.grants.iter())
            .filter(|g| (h.writer || g.writer) && g.place > h.place && made_after(g))
            .max_by_key(|g| (g.place, g.index))
            .copied()
    }
}

impl Fifo<'_> {
    /// Where sequence `seq` stands in the queue. ZooKeeper's counter is a signed 32-bit
    /// int that wraps from 2147483647 to -2147483648, so sequences in its range count
    /// from the first such grant with wrapping arithmetic (a run spans far fewer than
    /// 2^31 creates); others (a recipe's own ten digits) stand as they are.
    fn place(&mut self, seq: i64) -> i64 {
        let Ok(s) = i32::try_from(seq) else {
            return seq;
        };
        let first = *self.first_seq.get_or_insert(s);
        i64::from(s.wrapping_sub(first))
    }
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
