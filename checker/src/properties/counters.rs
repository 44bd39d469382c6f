//! Non-vacuity counters: how much a history exercised, so that a pass means something.

use super::CheckConfig;
use super::beliefs::Beliefs;
use super::slots::Slots;
use super::walk::{self, Judge, Step, Write};
use crate::holds::timed_deadline_us;
use crate::timeline::fault_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History, LockRole, ZkOp};

/// Counts over one history, or summed over many with [`Counters::merge`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// `Acquired` events.
    pub acquisitions: u64,
    /// Acquisitions that had to wait: another client held at some point between the
    /// `AcquireInvoked` and the `Acquired`.
    pub contended_acquisitions: u64,
    /// Acquisitions whose previous grant went to another client that then lost the lock,
    /// had its session expire, or crashed: the lock was handed over after an expiry.
    pub handovers_after_expiry: u64,
    /// Acquisitions by a client that suffered a lost create response during that
    /// acquire: the recipe recovered its node (or made a new one).
    pub recoveries_after_lost_create: u64,
    /// `AcquireFailed` events (try and timeout modes, errors).
    pub acquire_failures: u64,
    /// `AcquireFailed` events by reason, at most
    /// [`FAILURE_REASONS_MAX`] reasons (see
    /// [`Exercised`](crate::exercised::Exercised)).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub acquire_failures_by_reason: BTreeMap<String, u64>,
    /// Timed acquires that ran to their deadline (ended at or after it, either way):
    /// those whose return `timed_acquire_in_time` weighs against its allowance.
    pub timed_to_deadline: u64,
    /// `Released` events.
    pub releases: u64,
    /// `Lost` events.
    pub lost: u64,
    /// Writes the fenced resource rejected as stale.
    pub fenced_rejections: u64,
    /// Lost updates the unfenced resource suffered: what fencing prevented.
    pub unfenced_lost_updates: u64,
    /// Faults injected, by kind (`connection_loss`, `pause`, ...).
    pub faults: BTreeMap<String, u64>,
    /// `RevokeRequested` events: a revoker asked a holder to give up (a run with
    /// revokers).
    #[serde(skip_serializing_if = "is_zero")]
    pub revoke_requests: u64,
    /// `RevokeObserved` events: holds given up when asked.
    #[serde(skip_serializing_if = "is_zero")]
    pub revocations: u64,
    /// A work queue's run: its own figures, shown in place of the lock's. `None` for a
    /// lock's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueCounters>,
}

/// A work queue's figures over one run, or summed over many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueCounters {
    /// `ItemProduced` events.
    pub items_produced: u64,
    /// `ProcessEnd` events: items completed.
    pub items_completed: u64,
    /// `ProcessStart` events: items taken for processing (again after a lost trust).
    pub items_taken: u64,
    /// getChildren requests.
    pub listings: u64,
    /// Watch notifications.
    pub notifications: u64,
}

impl QueueCounters {
    /// Counts one history.
    pub fn of(history: &History) -> QueueCounters {
        let mut q = QueueCounters::default();
        for e in &history.events {
            match &e.kind {
                EventKind::ItemProduced { .. } => q.items_produced += 1,
                EventKind::ProcessStart { .. } => q.items_taken += 1,
                EventKind::ProcessEnd { .. } => q.items_completed += 1,
                EventKind::WatchEvent { .. } => q.notifications += 1,
                EventKind::OpInvoke {
                    op: ZkOp::GetChildren,
                    ..
                } => q.listings += 1,
                _ => {}
            }
        }
        q
    }

    fn merge(&mut self, other: &QueueCounters) {
        self.items_produced += other.items_produced;
        self.items_completed += other.items_completed;
        self.items_taken += other.items_taken;
        self.listings += other.listings;
        self.notifications += other.notifications;
    }

    /// `n` per completed item.
    fn per_item(&self, n: u64) -> f64 {
        n as f64 / self.items_completed.max(1) as f64
    }
}

impl Counters {
    /// Adds another history's counts (sweeps sum their runs).
    pub fn merge(&mut self, other: &Counters) {
        self.acquisitions += other.acquisitions;
        self.contended_acquisitions += other.contended_acquisitions;
        self.handovers_after_expiry += other.handovers_after_expiry;
        self.recoveries_after_lost_create += other.recoveries_after_lost_create;
        self.acquire_failures += other.acquire_failures;
        for (reason, n) in &other.acquire_failures_by_reason {
            add_failure(&mut self.acquire_failures_by_reason, reason, *n);
        }
        self.timed_to_deadline += other.timed_to_deadline;
        self.releases += other.releases;
        self.lost += other.lost;
        self.fenced_rejections += other.fenced_rejections;
        self.unfenced_lost_updates += other.unfenced_lost_updates;
        self.revoke_requests += other.revoke_requests;
        self.revocations += other.revocations;
        for (k, n) in &other.faults {
            *self.faults.entry(k.clone()).or_default() += n;
        }
        match (&mut self.queue, &other.queue) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, Some(theirs)) => *mine = Some(*theirs),
            (_, None) => {}
        }
    }

    /// What a run checked, for a rate: (count, what it counts). A queue's completed
    /// items, a lock's acquisitions.
    pub fn checked(&self) -> (u64, &'static str) {
        match &self.queue {
            Some(q) => (q.items_completed, "completed items"),
            None => (self.acquisitions, "acquisitions"),
        }
    }

    /// All faults injected.
    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }
}

/// Per-client state while counting.
#[derive(Clone, Copy, Debug, Default)]
struct ClientState {
    waiting: bool,
    contended: bool,
    lost_create: bool,
    /// Lost, expired or crashed since its last grant.
    broken_since_grant: bool,
    /// The deadline of its timed acquire under way, in µs.
    deadline_us: Option<u64>,
}

/// Every fault kind, one of each, in a fixed order: faults are tallied by position in
/// an array and named once at the end.
const FAULT_KINDS: [FaultKind; 8] = [
    FaultKind::ConnectionLoss,
    FaultKind::LostCreateResponse,
    FaultKind::ForcedExpiry,
    FaultKind::Partition { duration_ms: 0 },
    FaultKind::Pause { duration_ms: 0 },
    FaultKind::Crash,
    FaultKind::DelayedDelivery { delay_ms: 0 },
    FaultKind::LocalExpiry,
];

/// The position of a fault's kind in [`FAULT_KINDS`].
pub(crate) fn fault_slot(fault: FaultKind) -> usize {
    match fault {
        FaultKind::ConnectionLoss => 0,
        FaultKind::LostCreateResponse => 1,
        FaultKind::ForcedExpiry => 2,
        FaultKind::Partition { .. } => 3,
        FaultKind::Pause { .. } => 4,
        FaultKind::Crash => 5,
        FaultKind::DelayedDelivery { .. } => 6,
        FaultKind::LocalExpiry => 7,
    }
}

/// Counts one history.
pub fn count(history: &History) -> Counters {
    walk::alone::<Counting>(history, &CheckConfig::default(), &Slots::new(history))
}

/// The counters' state.
#[derive(Debug)]
pub(crate) struct Counting {
    n: Counters,
    faults: [u64; FAULT_KINDS.len()],
    clients: Vec<ClientState>,
    /// The slot of the client granted last.
    last_grant: Option<usize>,
}

impl<'h> Judge<'h> for Counting {
    type Output = Counters;

    fn new(_: &'h History, _: &'h CheckConfig, slots: &'h Slots) -> Self {
        Counting {
            n: Counters::default(),
            faults: [0; FAULT_KINDS.len()],
            clients: slots.table(),
            last_grant: None,
        }
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, _: LockRole, beliefs: &Beliefs<'h>) {
        let st = &mut self.clients[step.slot];
        st.waiting = true;
        st.lost_create = false;
        // Contention: someone else believes they hold while a client waits. Holders only
        // appear at `Acquired`, so it is enough to look when a wait starts and when
        // anyone acquires.
        st.contended = beliefs.held_by_other_than(step.slot);
        st.deadline_us = timed_deadline_us(step.event);
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, _: i64, _: &'h str, _: &Beliefs<'h>) {
        self.ended(step);
        self.grant(step.slot);
    }

    #[inline]
    fn acquire_failed(&mut self, step: Step<'h>) {
        self.ended(step);
        self.n.acquire_failures += 1;
        if let EventKind::AcquireFailed { reason } = &step.event.kind {
            add_failure(&mut self.n.acquire_failures_by_reason, reason, 1);
        }
        self.clients[step.slot].waiting = false;
    }

    #[inline]
    fn released(&mut self, _: Step<'h>) {
        self.n.releases += 1;
    }

    #[inline]
    fn lost(&mut self, step: Step<'h>) {
        self.n.lost += 1;
        self.clients[step.slot].broken_since_grant = true;
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        if state == SessionState::Expired {
            self.clients[step.slot].broken_since_grant = true;
        }
    }

    #[inline]
    fn resource_write(&mut self, _: Step<'h>, write: Write, _: &Beliefs<'h>) {
        self.n.fenced_rejections += u64::from(!write.fenced_accepted);
        self.n.unfenced_lost_updates += u64::from(write.unfenced_overwrote);
    }

    #[inline]
    fn revoke_requested(&mut self, _: Step<'h>) {
        self.n.revoke_requests += 1;
    }

    #[inline]
    fn revoke_observed(&mut self, _: Step<'h>) {
        self.n.revocations += 1;
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        self.faults[fault_slot(fault)] += 1;
        let st = &mut self.clients[step.slot];
        if fault == FaultKind::LostCreateResponse && st.waiting {
            st.lost_create = true;
        }
        if fault == FaultKind::Crash {
            st.broken_since_grant = true;
        }
    }

    fn finish(mut self) -> Counters {
        for (kind, k) in FAULT_KINDS.into_iter().zip(self.faults) {
            if k > 0 {
                self.n.faults.insert(fault_name(kind).to_owned(), k);
            }
        }
        self.n
    }
}

impl Counting {
    /// An acquire of `step`'s client ended: counted if timed and at its deadline.
    fn ended(&mut self, step: Step<'_>) {
        let deadline = self.clients[step.slot].deadline_us.take();
        self.n.timed_to_deadline += u64::from(deadline.is_some_and(|d| step.event.time_us >= d));
    }

    /// A grant to the client in slot `c`.
    fn grant(&mut self, c: usize) {
        let prev_broken = self
            .last_grant
            .filter(|p| *p != c)
            .is_some_and(|p| self.clients[p].broken_since_grant);
        let n = &mut self.n;
        let st = &mut self.clients[c];
        n.acquisitions += 1;
        n.contended_acquisitions += u64::from(st.contended);
        n.recoveries_after_lost_create += u64::from(st.lost_create);
        st.waiting = false;
        st.broken_since_grant = false;
        n.handovers_after_expiry += u64::from(prev_broken);
        self.last_grant = Some(c);
        // Everyone else still waiting now waits on a holder.
        for (slot, s) in self.clients.iter_mut().enumerate() {
            if s.waiting && slot != c {
                s.contended = true;
            }
        }
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(q) = &self.queue {
            writeln!(
                f,
                "items produced {}, completed {} (taken {}, trust lost while processing {}); \
                 per completed item: {:.2} getChildren listings, {:.2} watch notifications",
                q.items_produced,
                q.items_completed,
                q.items_taken,
                self.lost,
                q.per_item(q.listings),
                q.per_item(q.notifications)
            )?;
            return self.fmt_faults(f);
        }
        writeln!(
            f,
            "acquisitions {} (contended {}, handed over after expiry {}, recovered after \
             lost create {}), acquire failures {}, timed acquires run to their deadline {}, \
             releases {}, lost {}",
            self.acquisitions,
            self.contended_acquisitions,
            self.handovers_after_expiry,
            self.recoveries_after_lost_create,
            self.acquire_failures,
            self.timed_to_deadline,
            self.releases,
            self.lost
        )?;
        writeln!(
            f,
            "resource: fenced rejections {}, unfenced lost updates {}",
            self.fenced_rejections, self.unfenced_lost_updates
        )?;
        if self.revoke_requests > 0 {
            writeln!(
                f,
                "revocation: {} requests, {} holds given up when asked",
                self.revoke_requests, self.revocations
            )?;
        }
        self.fmt_faults(f)
    }
}

impl Counters {
    /// The faults line.
    fn fmt_faults(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(
            f,
            "faults: {} ({})",
            self.total_faults(),
            if faults.is_empty() {
                "none".to_owned()
            } else {
                faults.join(", ")
            }
        )
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Distinct failure reasons kept, each with its count; the rest are counted under
/// [`OTHER_REASONS`]. A recipe's error text may carry a path or a session id, which
/// would otherwise make every failure a reason of its own.
pub const FAILURE_REASONS_MAX: usize = 16;

/// Where failures past [`FAILURE_REASONS_MAX`] distinct reasons are counted.
pub const OTHER_REASONS: &str = "(other reasons)";

/// Counts `n` failures of `reason`, within the cap.
pub(crate) fn add_failure(failures: &mut BTreeMap<String, u64>, reason: &str, n: u64) {
    if failures.contains_key(reason) || failures.len() < FAILURE_REASONS_MAX {
        *failures.entry(reason.to_owned()).or_default() += n;
    } else {
        *failures.entry(OTHER_REASONS.to_owned()).or_default() += n;
    }
}

#[cfg(test)]
mod tests {
    use super::{FAULT_KINDS, fault_slot};

    #[test]
    fn every_fault_kind_is_tallied_at_its_own_position() {
        for (i, kind) in FAULT_KINDS.into_iter().enumerate() {
            assert_eq!(fault_slot(kind), i, "{kind:?}");
        }
    }
}
