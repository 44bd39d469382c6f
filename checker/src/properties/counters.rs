//! Non-vacuity counters: how much a history exercised, so that a pass means something.

use super::beliefs::Beliefs;
use super::index::HistoryIndex;
use crate::holds::is_crash;
use crate::timeline::fault_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History};

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
}

impl Counters {
    /// Adds another history's counts (sweeps sum their runs).
    pub fn merge(&mut self, other: &Counters) {
        self.acquisitions += other.acquisitions;
        self.contended_acquisitions += other.contended_acquisitions;
        self.handovers_after_expiry += other.handovers_after_expiry;
        self.recoveries_after_lost_create += other.recoveries_after_lost_create;
        self.acquire_failures += other.acquire_failures;
        self.releases += other.releases;
        self.lost += other.lost;
        self.fenced_rejections += other.fenced_rejections;
        self.unfenced_lost_updates += other.unfenced_lost_updates;
        for (k, n) in &other.faults {
            *self.faults.entry(k.clone()).or_default() += n;
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
}

/// Every fault kind, one of each, in a fixed order: faults are tallied by position in
/// an array and named once at the end.
const FAULT_KINDS: [FaultKind; 7] = [
    FaultKind::ConnectionLoss,
    FaultKind::LostCreateResponse,
    FaultKind::ForcedExpiry,
    FaultKind::Partition { duration_ms: 0 },
    FaultKind::Pause { duration_ms: 0 },
    FaultKind::Crash,
    FaultKind::DelayedDelivery { delay_ms: 0 },
];

/// The position of a fault's kind in [`FAULT_KINDS`].
fn fault_slot(fault: FaultKind) -> usize {
    match fault {
        FaultKind::ConnectionLoss => 0,
        FaultKind::LostCreateResponse => 1,
        FaultKind::ForcedExpiry => 2,
        FaultKind::Partition { .. } => 3,
        FaultKind::Pause { .. } => 4,
        FaultKind::Crash => 5,
        FaultKind::DelayedDelivery { .. } => 6,
    }
}

/// Counts one history.
pub fn count(history: &History) -> Counters {
    count_indexed(&HistoryIndex::new(history))
}

pub(crate) fn count_indexed(index: &HistoryIndex<'_>) -> Counters {
    let history = index.history;
    let mut n = Counters::default();
    let mut faults = [0u64; FAULT_KINDS.len()];
    let mut beliefs = Beliefs::new(&index.slots);
    let mut clients: Vec<ClientState> = index.slots.table();
    let mut last_grant: Option<usize> = None;
    for (i, e) in history.events.iter().enumerate() {
        let c = index.slots.of(e.client);
        let prev_broken = last_grant
            .filter(|p| *p != c)
            .is_some_and(|p| clients[p].broken_since_grant);
        let st = &mut clients[c];
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                st.waiting = true;
                st.contended = false;
                st.lost_create = false;
            }
            EventKind::Acquired { .. } => {
                n.acquisitions += 1;
                n.contended_acquisitions += u64::from(st.contended);
                n.recoveries_after_lost_create += u64::from(st.lost_create);
                st.waiting = false;
                st.broken_since_grant = false;
                n.handovers_after_expiry += u64::from(prev_broken);
                last_grant = Some(c);
            }
            EventKind::AcquireFailed { .. } => {
                n.acquire_failures += 1;
                st.waiting = false;
            }
            EventKind::Released => n.releases += 1,
            EventKind::Lost { .. } => {
                n.lost += 1;
                st.broken_since_grant = true;
            }
            EventKind::Session {
                state: SessionState::Expired,
            } => st.broken_since_grant = true,
            EventKind::ResourceWrite {
                fenced_accepted,
                unfenced_overwrote,
                ..
            } => {
                n.fenced_rejections += u64::from(!*fenced_accepted);
                n.unfenced_lost_updates += u64::from(*unfenced_overwrote);
            }
            EventKind::Fault { fault } => {
                faults[fault_slot(*fault)] += 1;
                if *fault == FaultKind::LostCreateResponse && st.waiting {
                    st.lost_create = true;
                }
                if is_crash(e) {
                    st.broken_since_grant = true;
                }
            }
            _ => {}
        }
        beliefs.observe(i, e, c);
        // Contention: someone else believes they hold while a client waits. Holders only
        // appear at `Acquired`, so it is enough to look when a wait starts and when anyone
        // acquires.
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                clients[c].contended |= beliefs.held_by_other_than(c);
            }
            EventKind::Acquired { .. } => {
                for (slot, s) in clients.iter_mut().enumerate() {
                    if s.waiting && slot != c {
                        s.contended = true;
                    }
                }
            }
            _ => {}
        }
    }
    for (kind, k) in FAULT_KINDS.into_iter().zip(faults) {
        if k > 0 {
            n.faults.insert(fault_name(kind).to_owned(), k);
        }
    }
    n
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "acquisitions {} (contended {}, handed over after expiry {}, recovered after \
             lost create {}), acquire failures {}, releases {}, lost {}",
            self.acquisitions,
            self.contended_acquisitions,
            self.handovers_after_expiry,
            self.recoveries_after_lost_create,
            self.acquire_failures,
            self.releases,
            self.lost
        )?;
        writeln!(
            f,
            "resource: fenced rejections {}, unfenced lost updates {}",
            self.fenced_rejections, self.unfenced_lost_updates
        )?;
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
