//! always: `queue_no_process_after_complete`: no consumer starts processing an item
//! after a consumer completed it (processed it and deleted it from the queue). A consumer
//! that takes an item's lock without checking that the item still exists does this
//! whenever the item was completed between its listing and its lock.

use super::processing::Tracker;
use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, History};

pub const NAME: &str = "queue_no_process_after_complete";

/// The verdict on `history`; `pauses_on`: process pauses were among the faults.
pub fn check(history: &History, pauses_on: bool) -> Verdict {
    let mut t = Tracker::default();
    // Each completed item, and its completion's index.
    let mut completed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unavoidable: Option<Violation> = None;
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::ProcessEnd { item } => {
                completed.entry(item).or_insert(i);
            }
            EventKind::ProcessStart { item, .. } => {
                if let Some(&done) = completed.get(item.as_str()) {
                    let summary = format!(
                        "c{} started processing item {item}, completed and deleted before",
                        e.client
                    );
                    let proof = [
                        (done, "the item is completed"),
                        (i, "a consumer starts processing it again"),
                    ];
                    let mut v = Violation::new(NAME, history, summary, &proof);
                    if pauses_on && t.paused_since_take(e.client) {
                        v.known_unavoidable = true;
                        v.explanation =
                            Some("the consumer was paused since it took the item".into());
                        unavoidable.get_or_insert(v);
                    } else {
                        return Verdict::from_violation(NAME, Some(v));
                    }
                }
            }
            _ => {}
        }
        t.observe(i, e);
    }
    let mut v = Verdict::from_violation(NAME, unavoidable);
    v.note = Some(format!("{} items completed", completed.len()));
    v
}
