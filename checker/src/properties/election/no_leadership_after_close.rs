//! always: `election_no_leadership_after_close`: no contender leads after it closed its
//! latch or cancelled its selector (its `Closed`), until it joins the election again (its
//! next `AcquireInvoked`). A latch whose wait outlives its close, or a selector that
//! queues again after a cancel that came in the middle of its task, leads after it.

use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, History};

pub const NAME: &str = "election_no_leadership_after_close";

/// The verdict on `history`.
pub fn check(history: &History) -> Verdict {
    // Each client's last close, while it has not joined again.
    let mut closed: BTreeMap<u32, usize> = BTreeMap::new();
    let mut closes = 0u64;
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::Closed => {
                closes += 1;
                closed.insert(e.client, i);
            }
            EventKind::AcquireInvoked { .. } => {
                closed.remove(&e.client);
            }
            EventKind::Acquired { .. } => {
                if let Some(&at) = closed.get(&e.client) {
                    let summary = format!("c{} leads after it closed its election", e.client);
                    let proof = [
                        (at, "the contender closes"),
                        (i, "it leads, without joining again"),
                    ];
                    let v = Violation::new(NAME, history, summary, &proof);
                    return Verdict::from_violation(NAME, Some(v));
                }
            }
            _ => {}
        }
    }
    let mut v = Verdict::from_violation(NAME, None);
    v.note = Some(format!("{closes} closes"));
    v
}
