//! always: `timed_acquire_in_time`. A timed acquire returns by its deadline, give or
//! take what its own client went through.
//!
//! Precisely: an `AcquireInvoked` with mode `Timeout { timeout_ms }` at `t0` must end
//! (`Acquired` or `AcquireFailed` of the same client) by `t0 + timeout_ms +
//! timed_grace_ms + allowance`. The grace covers the cleanup a recipe does at the
//! deadline (deleting its node: a round trip or two). The allowance is what its client
//! went through while the attempt ran, since a frozen or cut-off client cannot return on
//! time and a recipe rightly retries its cleanup through a connection loss: each pause,
//! partition or delayed delivery adds its duration, and each of those and every other
//! fault on the client, or session change away from Connected, adds one session timeout
//! (the time to learn the session's fate and reconnect). A fault met before the attempt
//! started adds what was left of that when it started. A crashed client's attempt is
//! not judged, nor one that never ends (liveness judges waiters that are never served).
//!
//! Caught: a recipe that checks its deadline only when something wakes it, so that a
//! waiter behind a long hold returns long after its timeout; retries that run on past
//! the deadline once the client could have given up. Timed lock acquires that returned
//! far too late have shipped: CURATOR-559 (nested retry loops made a lock's acquire give
//! up far later than its retry policy said) and spring-projects/spring-integration#1863
//! (`tryLock(2, SECONDS)` hung). Both overran while the server was unreachable, which
//! this property allows for, as it must (a recipe rightly retries its cleanup through an
//! outage); it catches what overruns beyond what the client itself went through.

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{timed_acquire_ms, timed_deadline_us};
use crate::timeline::format_ms;
use zklock_recipe::SessionState;
use zklock_recipe::history::{FaultKind, History, LockRole};

pub const NAME: &str = "timed_acquire_in_time";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<TimedAcquire<'_>>(history, cfg, &Slots::new(history))
}

/// A timed attempt under way.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Index of its `AcquireInvoked`.
    index: usize,
    /// When it must have ended without any allowance, in µs.
    due_us: u64,
    /// What its client went through so far, in µs.
    allowance_us: u64,
}

/// An attempt that ended late.
#[derive(Clone, Copy, Debug)]
struct Late {
    open: Open,
    /// Index of the event that ended it.
    end: usize,
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct TimedAcquire<'h> {
    history: &'h History,
    grace_us: u64,
    session_timeout_us: u64,
    /// By client slot: its timed attempt under way.
    open: Vec<Option<Open>>,
    /// By client slot: until when, in µs, the faults it met so far may hold it up (each
    /// one's duration plus a session timeout). An attempt that starts before then is
    /// allowed the rest.
    held_up_until_us: Vec<u64>,
    /// The first attempt that ended late.
    found: Option<Late>,
}

impl TimedAcquire<'_> {
    /// A fault or session change on `slot` at `now_us` that may hold it up for `us`.
    fn held_up(&mut self, slot: usize, now_us: u64, us: u64) {
        let until = &mut self.held_up_until_us[slot];
        *until = (*until).max(now_us.saturating_add(us));
        if let Some(o) = &mut self.open[slot] {
            o.allowance_us = o.allowance_us.saturating_add(us);
        }
    }

    fn end(&mut self, step: Step<'_>) {
        let Some(open) = self.open[step.slot].take() else {
            return;
        };
        let allowed = open.due_us.saturating_add(open.allowance_us);
        if step.event.time_us > allowed && self.found.is_none() {
            self.found = Some(Late {
                open,
                end: step.index,
            });
        }
    }
}

impl<'h> Judge<'h> for TimedAcquire<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self {
        TimedAcquire {
            history,
            grace_us: cfg.timed_grace_ms.saturating_mul(1000),
            session_timeout_us: cfg.session_timeout_ms.saturating_mul(1000),
            open: slots.table(),
            held_up_until_us: slots.table(),
            found: None,
        }
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, _: LockRole, _: &Beliefs<'h>) {
        let e = step.event;
        self.open[step.slot] = timed_deadline_us(e).map(|deadline_us| Open {
            index: step.index,
            due_us: deadline_us.saturating_add(self.grace_us),
            // Faults met before it may still hold its client up.
            allowance_us: self.held_up_until_us[step.slot].saturating_sub(e.time_us),
        });
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, _: i64, _: &'h str, _: &Beliefs<'h>) {
        self.end(step);
    }

    #[inline]
    fn acquire_failed(&mut self, step: Step<'h>) {
        self.end(step);
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        if state != SessionState::Connected {
            self.held_up(step.slot, step.event.time_us, self.session_timeout_us);
        }
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        let lasting_ms = match fault {
            FaultKind::Crash => {
                self.open[step.slot] = None;
                return;
            }
            FaultKind::Pause { duration_ms }
            | FaultKind::Partition { duration_ms }
            | FaultKind::DelayedDelivery {
                delay_ms: duration_ms,
            } => duration_ms,
            FaultKind::ConnectionLoss
            | FaultKind::LostCreateResponse
            | FaultKind::ForcedExpiry
            | FaultKind::LocalExpiry => 0,
        };
        let us = lasting_ms
            .saturating_mul(1000)
            .saturating_add(self.session_timeout_us);
        self.held_up(step.slot, step.event.time_us, us);
    }

    fn finish(self) -> Verdict {
        let violation = self.found.map(|late| report(self.history, late));
        Verdict::from_violation(NAME, violation)
    }
}

fn report(history: &History, late: Late) -> Violation {
    let (invoke, end) = (late.open.index, late.end);
    let e = &history.events[invoke];
    let timeout_ms = timed_acquire_ms(e).expect("a timed attempt starts at a timed AcquireInvoked");
    let took_us = history.events[end].time_us.saturating_sub(e.time_us);
    let allowed_us = late
        .open
        .due_us
        .saturating_add(late.open.allowance_us)
        .saturating_sub(e.time_us);
    let summary = format!(
        "c{}'s acquire with a timeout of {timeout_ms} ms, invoked at {}, returned at {}: it \
         took {} ms, where {} ms were allowed (the timeout, the grace, and what its client \
         went through)",
        e.client,
        at(history, invoke),
        at(history, end),
        format_ms(took_us),
        format_ms(allowed_us),
    );
    let proof = [
        (invoke, "the timed acquire starts"),
        (end, "it returns, past its deadline"),
    ];
    Violation::new(NAME, history, summary, &proof)
}
