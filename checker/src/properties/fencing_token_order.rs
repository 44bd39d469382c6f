//! always: `fencing_token_order`. Fencing promises that every holder's token is greater
//! than the token of every earlier holder of the same lock: a writer's (exclusive or
//! write hold) than every earlier hold's, a reader's than every earlier writer's (readers
//! share the lock, so their tokens owe each other no order). A lock is the directory of
//! its holds' nodes; holds are ordered by their `Acquired` events.
//!
//! Tokens that are unique but not ordered pass `fenced_resource`, which judges only the
//! writes the fenced resource accepted: the resource then refuses the rightful holder's
//! writes and accepts a stale holder's. This property catches the tokens themselves.
//!
//! Under process pauses a client paused during its acquire may resume and believe in a
//! grant the server has since taken back, recording it after a later holder's: its lower
//! token is then reported as the known, unavoidable class (the fence refuses its writes,
//! as it must).

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::is_writer;
use zklock_recipe::history::{FaultKind, History, LockRole};

pub const NAME: &str = "fencing_token_order";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<FencingTokenOrder<'_>>(history, cfg, &Slots::new(history))
}

/// (index of the `Acquired`, token) of the hold with the highest token so far.
type Highest = Option<(usize, i64)>;

/// One lock's holds so far.
#[derive(Clone, Copy, Debug)]
struct Lock<'h> {
    dir: &'h str,
    writers: Highest,
    readers: Highest,
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct FencingTokenOrder<'h> {
    history: &'h History,
    cfg: &'h CheckConfig,
    /// Every lock seen, in order of first hold (a run has one or a few).
    locks: Vec<Lock<'h>>,
    /// Per slot: a pause struck the client since its latest `AcquireInvoked`.
    paused_in_acquire: Vec<bool>,
    violation: Option<Violation>,
    /// The first lower token of a client paused in its acquire, under pauses.
    unavoidable: Option<Violation>,
}

impl<'h> Judge<'h> for FencingTokenOrder<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self {
        FencingTokenOrder {
            history,
            cfg,
            locks: Vec::new(),
            paused_in_acquire: slots.table(),
            violation: None,
            unavoidable: None,
        }
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, _: LockRole, _: &Beliefs<'h>) {
        self.paused_in_acquire[step.slot] = false;
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        if matches!(fault, FaultKind::Pause { .. }) {
            self.paused_in_acquire[step.slot] = true;
        }
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        if self.violation.is_some() {
            return;
        }
        let role = beliefs.opening_role(step.slot);
        let dir = node.rsplit_once('/').map_or("", |(dir, _)| dir);
        let k = match self.locks.iter().position(|l| l.dir == dir) {
            Some(k) => k,
            None => {
                self.locks.push(Lock {
                    dir,
                    writers: None,
                    readers: None,
                });
                self.locks.len() - 1
            }
        };
        let lock = &mut self.locks[k];
        let excluded = if is_writer(role) {
            higher(lock.writers, lock.readers)
        } else {
            lock.writers
        };
        let own = if is_writer(role) {
            &mut lock.writers
        } else {
            &mut lock.readers
        };
        *own = higher(*own, Some((step.index, token)));
        if let Some((earlier, earlier_token)) = excluded.filter(|&(_, t)| token <= t) {
            self.out_of_order(step, token, earlier, earlier_token);
        }
    }

    fn finish(self) -> Verdict {
        Verdict::from_violation(NAME, self.violation.or(self.unavoidable))
    }
}

impl FencingTokenOrder<'_> {
    /// The hold acquired at `step` has a token no greater than that of the hold acquired
    /// at `earlier`, which it excludes.
    fn out_of_order(&mut self, step: Step<'_>, token: i64, earlier: usize, earlier_token: i64) {
        let history = self.history;
        let paused = self.cfg.pauses_on && self.paused_in_acquire[step.slot];
        if paused && self.unavoidable.is_some() {
            return;
        }
        let (c, e) = (step.event.client, history.events[earlier].client);
        let summary = format!(
            "c{c} acquired with token {token} at {}, not greater than token {earlier_token} \
             of c{e}, which acquired the same lock before it at {}",
            at(history, step.index),
            at(history, earlier)
        );
        let proof = [
            (earlier, "earlier holder, with the higher token"),
            (step.index, "later holder, with a token not greater"),
        ];
        let mut v = Violation::new(NAME, history, summary, &proof);
        if paused {
            v.known_unavoidable = true;
            v.explanation = Some(
                "process pauses were on and the later holder was paused during its acquire: \
                 it may have resumed believing in a grant the server had since taken back, \
                 a stale hold whose writes the fence must refuse (Kleppmann, \"How to do \
                 distributed locking\", 2016)."
                    .into(),
            );
            self.unavoidable = Some(v);
        } else {
            self.violation = Some(v);
        }
    }
}

/// The higher of two (index, token) pairs by token; the earlier on a tie.
fn higher(a: Highest, b: Highest) -> Highest {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.1 > x.1 { y } else { x }),
        (x, y) => x.or(y),
    }
}
