//! always: `rightful_write_accepted`. The fenced resource refuses no write of a holder
//! whose hold is still valid on the server. The history proves a hold valid at a write
//! when, from the holder's `AcquireInvoked` to the write, the holder neither released nor
//! lost it, its session stayed the same and reported nothing but Connected, and no fault
//! struck its client but those that leave the server hearing it (a slowed link, a lost
//! create reply, whose connection loss would show as Disconnected). The server then heard
//! from the session all along: it still held the session, and the node its grant was
//! read from. A refusal means the fence was taught a higher token by a hold that came
//! after, or beside, a rightful one: the tokens do not follow the order of holding.
//!
//! A stale holder (paused, cut off, expired) may be refused: that is the fence's work,
//! and `fenced_resource` counts it. Only writer-role clients' writes are judged, as in
//! `fenced_resource`.

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step, Write};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::is_writer;
use zklock_recipe::SessionState;
use zklock_recipe::history::{FaultKind, History, LockRole};

pub const NAME: &str = "rightful_write_accepted";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<RightfulWriteAccepted<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct RightfulWriteAccepted<'h> {
    history: &'h History,
    /// Per slot: nothing since the client's latest `AcquireInvoked` could have cut its
    /// session off from the server.
    untroubled: Vec<bool>,
    /// (index, token) of the read or accepted write with the highest token so far: what
    /// taught the fence its highest token.
    highest: Option<(usize, i64)>,
    violation: Option<Violation>,
}

impl<'h> Judge<'h> for RightfulWriteAccepted<'h> {
    type Output = Verdict;

    fn new(history: &'h History, _: &'h CheckConfig, slots: &'h Slots) -> Self {
        RightfulWriteAccepted {
            history,
            untroubled: slots.table(),
            highest: None,
            violation: None,
        }
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, _: LockRole, _: &Beliefs<'h>) {
        self.untroubled[step.slot] = true;
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        if state != SessionState::Connected {
            self.untroubled[step.slot] = false;
        }
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        let server_hears = matches!(
            fault,
            FaultKind::DelayedDelivery { .. } | FaultKind::LostCreateResponse
        );
        if !server_hears {
            self.untroubled[step.slot] = false;
        }
    }

    #[inline]
    fn resource_read(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {
        if let Some(h) = beliefs.hold_of(step.slot) {
            self.taught(step.index, h.token);
        }
    }

    #[inline]
    fn resource_write(&mut self, step: Step<'h>, write: Write, beliefs: &Beliefs<'h>) {
        if beliefs.role_of(step.slot).is_some_and(|r| !is_writer(r)) {
            return;
        }
        if write.fenced_accepted {
            self.taught(step.index, write.token);
            return;
        }
        if self.violation.is_some() || !self.untroubled[step.slot] {
            return;
        }
        let Some(hold) = beliefs.hold_of(step.slot) else {
            return;
        };
        if hold.token != write.token || hold.session != step.event.session {
            return;
        }
        let (history, i) = (self.history, step.index);
        let summary = format!(
            "the fenced resource refused c{}'s write with token {} at {}, though its hold \
             (acquired at {}) was still valid on the server",
            step.event.client,
            write.token,
            at(history, i),
            at(history, hold.start)
        );
        let mut proof = vec![
            (hold.start, "rightful holder acquires"),
            (i, "its write refused"),
        ];
        if let Some((hi, _)) = self.highest.filter(|&(_, t)| t > write.token) {
            proof.push((hi, "the fence learned a higher token here"));
        }
        self.violation = Some(Violation::new(NAME, history, summary, &proof));
    }

    fn finish(self) -> Verdict {
        Verdict::from_violation(NAME, self.violation)
    }
}

impl RightfulWriteAccepted<'_> {
    /// The fence saw `token` at event `index`.
    fn taught(&mut self, index: usize, token: i64) {
        if self.highest.is_none_or(|(_, t)| token > t) {
            self.highest = Some((index, token));
        }
    }
}
