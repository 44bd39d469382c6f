//! always: `semaphore_leases`: a counting semaphore of N leases never has more than N
//! holders, judged by belief (a holder holds from `Acquired` until `ReleaseInvoked`,
//! `Lost` or its crash), N being the count the semaphore stores in its node.
//!
//! Under process pauses no recipe can keep this, as no lock can keep mutual exclusion: a
//! holder paused past its session wakes believing while its lease is gone and another
//! took it. An excess that involves a holder paused since its acquire was invoked is
//! reported as that known, unavoidable class.

use super::{Verdict, Violation};
use crate::holds::BeliefTracker;
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// The property's name.
pub const NAME: &str = "semaphore_leases";

/// The verdict on `history` of a semaphore of `leases` leases; `pauses_on`: process
/// pauses were among the faults.
pub fn check(history: &History, leases: u32, pauses_on: bool) -> Verdict {
    let mut beliefs = BeliefTracker::default();
    // Each client's latest acquire invocation, and its latest pause.
    let mut invoked: BTreeMap<u32, usize> = BTreeMap::new();
    let mut paused: BTreeMap<u32, usize> = BTreeMap::new();
    let mut most = 0;
    let mut unavoidable: Option<Violation> = None;
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                invoked.insert(e.client, i);
            }
            EventKind::Fault {
                fault: FaultKind::Pause { .. },
            } => {
                paused.insert(e.client, i);
            }
            _ => {}
        }
        beliefs.observe(i, e);
        if !matches!(e.kind, EventKind::Acquired { .. }) {
            continue;
        }
        let open: Vec<_> = beliefs.open().collect();
        most = most.max(open.len());
        if open.len() <= leases as usize {
            continue;
        }
        let stale = open.iter().any(|h| {
            let since = invoked
                .get(&h.client)
                .copied()
                .unwrap_or(h.start)
                .min(h.start);
            paused.get(&h.client).is_some_and(|&p| p >= since)
        });
        let roles: Vec<(usize, String)> = open
            .iter()
            .map(|h| (h.start, format!("c{} holds a lease", h.client)))
            .collect();
        let proof: Vec<(usize, &str)> = roles.iter().map(|(i, r)| (*i, r.as_str())).collect();
        let summary = format!(
            "{} clients believed they held one of the semaphore's {leases} leases at once",
            open.len()
        );
        let mut v = Violation::new(NAME, history, summary, &proof);
        if stale && pauses_on {
            v.known_unavoidable = true;
            v.explanation = Some(
                "a holder was paused since its acquire: it woke believing in a lease the \
                 server had ended"
                    .into(),
            );
            unavoidable.get_or_insert(v);
            continue;
        }
        let mut verdict = Verdict::from_violation(NAME, Some(v));
        verdict.note = Some(format!("at most {most} holders at once"));
        return verdict;
    }
    let mut verdict = Verdict::from_violation(NAME, unavoidable);
    verdict.note = Some(format!("at most {most} of {leases} leases held at once"));
    verdict
}
