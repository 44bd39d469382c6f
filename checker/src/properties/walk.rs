//! One pass over a history feeds every property: each event is read once, its client's
//! slot found once, its kind matched once, and belief kept once for all of them.
//!
//! A property is a [`Judge`]: a state machine with one hook per kind of event (each
//! property implements only those it reads), asked for its outcome at the end. A pair of
//! judges is a judge, so [`super::check_all`] walks all of them together.

use super::CheckConfig;
use super::beliefs::Beliefs;
use super::slots::Slots;
pub(crate) use super::slots::Step;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History, LockRole, ZkOp};

/// A `ResourceWrite`, as the resources judged it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write {
    pub token: i64,
    pub fenced_accepted: bool,
    pub fenced_lost_update: bool,
    pub unfenced_overwrote: bool,
}

/// A property (or the counters) as a state machine over one history. Each hook is one
/// kind of event; where given, `beliefs` are as they stood just before it.
#[allow(unused_variables)]
pub(crate) trait Judge<'h> {
    type Output;

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self;

    /// `OpInvoke`; `watch`: the request leaves a watch.
    fn request(&mut self, step: Step<'h>, op_id: u64, op: ZkOp, path: &'h str, watch: bool) {}
    /// `OpOk` (`ok`), `OpFail` or `OpUnknown`.
    fn reply(&mut self, step: Step<'h>, op_id: u64, ok: bool) {}
    fn acquire_invoked(&mut self, step: Step<'h>, role: LockRole, beliefs: &Beliefs<'h>) {}
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {}
    fn acquire_failed(&mut self, step: Step<'h>) {}
    fn release_invoked(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {}
    fn released(&mut self, step: Step<'h>) {}
    fn release_failed(&mut self, step: Step<'h>) {}
    fn lost(&mut self, step: Step<'h>) {}
    fn session(&mut self, step: Step<'h>, state: SessionState) {}
    fn resource_write(&mut self, step: Step<'h>, write: Write, beliefs: &Beliefs<'h>) {}
    /// A `ResourceRead`: the client read with its hold's token (see `beliefs`).
    fn resource_read(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {}
    /// A fault; the event's client is its target.
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {}
    fn done(&mut self, step: Step<'h>) {}
    /// A revoker's `RevokeRequested`.
    fn revoke_requested(&mut self, step: Step<'h>) {}
    /// A holder's `RevokeObserved`.
    fn revoke_observed(&mut self, step: Step<'h>) {}

    /// The outcome, once every event was read.
    fn finish(self) -> Self::Output;
}

/// Two judges fed the same events, in order. The hooks are always inlined, so that the
/// walk over all the judges is one loop, with no call per event and judge.
impl<'h, A: Judge<'h>, B: Judge<'h>> Judge<'h> for (A, B) {
    type Output = (A::Output, B::Output);

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self {
        (A::new(history, cfg, slots), B::new(history, cfg, slots))
    }
    #[inline(always)]
    fn request(&mut self, step: Step<'h>, op_id: u64, op: ZkOp, path: &'h str, watch: bool) {
        self.0.request(step, op_id, op, path, watch);
        self.1.request(step, op_id, op, path, watch);
    }
    #[inline(always)]
    fn reply(&mut self, step: Step<'h>, op_id: u64, ok: bool) {
        self.0.reply(step, op_id, ok);
        self.1.reply(step, op_id, ok);
    }
    #[inline(always)]
    fn acquire_invoked(&mut self, step: Step<'h>, role: LockRole, beliefs: &Beliefs<'h>) {
        self.0.acquire_invoked(step, role, beliefs);
        self.1.acquire_invoked(step, role, beliefs);
    }
    #[inline(always)]
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        self.0.acquired(step, token, node, beliefs);
        self.1.acquired(step, token, node, beliefs);
    }
    #[inline(always)]
    fn acquire_failed(&mut self, step: Step<'h>) {
        self.0.acquire_failed(step);
        self.1.acquire_failed(step);
    }
    #[inline(always)]
    fn release_invoked(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {
        self.0.release_invoked(step, beliefs);
        self.1.release_invoked(step, beliefs);
    }
    #[inline(always)]
    fn released(&mut self, step: Step<'h>) {
        self.0.released(step);
        self.1.released(step);
    }
    #[inline(always)]
    fn release_failed(&mut self, step: Step<'h>) {
        self.0.release_failed(step);
        self.1.release_failed(step);
    }
    #[inline(always)]
    fn lost(&mut self, step: Step<'h>) {
        self.0.lost(step);
        self.1.lost(step);
    }
    #[inline(always)]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        self.0.session(step, state);
        self.1.session(step, state);
    }
    #[inline(always)]
    fn resource_write(&mut self, step: Step<'h>, write: Write, beliefs: &Beliefs<'h>) {
        self.0.resource_write(step, write, beliefs);
        self.1.resource_write(step, write, beliefs);
    }
    #[inline(always)]
    fn resource_read(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {
        self.0.resource_read(step, beliefs);
        self.1.resource_read(step, beliefs);
    }
    #[inline(always)]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        self.0.fault(step, fault);
        self.1.fault(step, fault);
    }
    #[inline(always)]
    fn done(&mut self, step: Step<'h>) {
        self.0.done(step);
        self.1.done(step);
    }
    #[inline(always)]
    fn revoke_requested(&mut self, step: Step<'h>) {
        self.0.revoke_requested(step);
        self.1.revoke_requested(step);
    }
    #[inline(always)]
    fn revoke_observed(&mut self, step: Step<'h>) {
        self.0.revoke_observed(step);
        self.1.revoke_observed(step);
    }

    fn finish(self) -> Self::Output {
        (self.0.finish(), self.1.finish())
    }
}

/// Feeds every event of `history` (whose `slots` they are) to `judge`, keeping belief.
pub(crate) fn walk<'h, J: Judge<'h>>(history: &'h History, slots: &'h Slots, judge: &mut J) {
    // The usual ids, 0..n, get a loop of their own, where the slot is the id.
    if slots.is_identity() {
        walk_by(history, slots, judge, |client| client as usize);
    } else {
        walk_by(history, slots, judge, |client| slots.of(client));
    }
}

/// [`walk`], with `slot_of` giving each client's slot.
#[inline(always)]
fn walk_by<'h, J: Judge<'h>>(
    history: &'h History,
    slots: &'h Slots,
    judge: &mut J,
    slot_of: impl Fn(u32) -> usize,
) {
    let mut beliefs = Beliefs::new(slots);
    for (index, event) in history.events.iter().enumerate() {
        let step = Step {
            index,
            event,
            slot: slot_of(event.client),
        };
        match &event.kind {
            EventKind::OpInvoke {
                op_id,
                op,
                path,
                watch,
            } => judge.request(step, *op_id, *op, path, *watch),
            EventKind::OpOk { op_id } => judge.reply(step, *op_id, true),
            EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
                judge.reply(step, *op_id, false);
            }
            EventKind::AcquireInvoked { role, .. } => {
                judge.acquire_invoked(step, *role, &beliefs);
                beliefs.acquire_invoked(step.slot, *role);
            }
            EventKind::Acquired { token, node } => {
                judge.acquired(step, *token, node, &beliefs);
                beliefs.acquired(step, *token, node);
            }
            EventKind::AcquireFailed { .. } => judge.acquire_failed(step),
            EventKind::ReleaseInvoked => {
                judge.release_invoked(step, &beliefs);
                beliefs.stop(step.slot);
            }
            EventKind::Released => judge.released(step),
            EventKind::ReleaseFailed { .. } => judge.release_failed(step),
            EventKind::Lost { .. } => {
                judge.lost(step);
                beliefs.stop(step.slot);
            }
            EventKind::Session { state } => judge.session(step, *state),
            EventKind::ResourceWrite {
                token,
                fenced_accepted,
                fenced_lost_update,
                unfenced_overwrote,
                ..
            } => {
                let write = Write {
                    token: *token,
                    fenced_accepted: *fenced_accepted,
                    fenced_lost_update: *fenced_lost_update,
                    unfenced_overwrote: *unfenced_overwrote,
                };
                judge.resource_write(step, write, &beliefs);
            }
            EventKind::ResourceRead { .. } => judge.resource_read(step, &beliefs),
            EventKind::Fault { fault } => {
                judge.fault(step, *fault);
                if *fault == FaultKind::Crash {
                    beliefs.crash(step.slot);
                }
            }
            EventKind::Done => judge.done(step),
            EventKind::RevokeRequested { .. } => judge.revoke_requested(step),
            EventKind::RevokeObserved => judge.revoke_observed(step),
            // No property reads the others.
            _ => {}
        }
    }
}

/// Runs one judge alone over `history` (whose `slots` they are): what each property's
/// own `check` does.
pub(crate) fn alone<'h, J: Judge<'h>>(
    history: &'h History,
    cfg: &'h CheckConfig,
    slots: &'h Slots,
) -> J::Output {
    let mut judge = J::new(history, cfg, slots);
    walk(history, slots, &mut judge);
    judge.finish()
}
