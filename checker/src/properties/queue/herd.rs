//! always: `queue_no_herd`: no change of the queue wakes more than
//! [`WOKEN_PER_CHANGE_MAX`] consumers; the watch notifications and getChildren listings
//! per completed item are reported beside it.
//!
//! A change is a watch event's type and path at one instant: every watcher of a node is
//! told of its change at once (a delayed delivery splits a change, which only makes the
//! measure lenient). A herd-free consumer wakes one consumer per change: only the take
//! lock's holder watches the queue and the oldest locked item, and each take-lock waiter
//! watches its own predecessor. The bound is 2, not 1, because a watch is one-shot and
//! cannot be withdrawn: a holder woken by the oldest locked item's lock leaves its queue
//! watch standing, and that watch may fire with the next holder's. A naive consumer
//! wakes every idle consumer at every produce and every completion: with three consumers
//! or more idle at once, over the bound. The per-item figures depend on how often
//! consumers are idle (the producer's pace), so they are reported, not judged; the
//! figures of both shipped consumers are in docs/recipes.md.

use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "queue_no_herd";

/// Most consumers one change may wake that is not a herd.
pub const WOKEN_PER_CHANGE_MAX: usize = 2;

/// The verdict on `history`.
pub fn check(history: &History) -> Verdict {
    let (mut notifications, mut listings, mut completed) = (0u64, 0u64, 0u64);
    // Each change (instant, path, type): the events that told a consumer of it.
    let mut changes: BTreeMap<(u64, &str, String), Vec<usize>> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::WatchEvent { event_type, path } => {
                notifications += 1;
                let told = changes
                    .entry((e.time_us, path.as_str(), format!("{event_type:?}")))
                    .or_default();
                if !told.iter().any(|&j| history.events[j].client == e.client) {
                    told.push(i);
                }
            }
            EventKind::OpInvoke {
                op: ZkOp::GetChildren,
                ..
            } => listings += 1,
            EventKind::ProcessEnd { .. } => completed += 1,
            _ => {}
        }
    }
    let per = |n: u64| n as f64 / completed.max(1) as f64;
    let widest = changes.values().max_by_key(|t| t.len());
    let most = widest.map_or(0, Vec::len);
    let note = format!(
        "at most {most} consumers woken by one change (a herd above {WOKEN_PER_CHANGE_MAX}); \
         {:.2} watch notifications and {:.2} getChildren listings per completed item \
         ({notifications} and {listings} for {completed} items)",
        per(notifications),
        per(listings)
    );
    let violation = widest
        .filter(|t| t.len() > WOKEN_PER_CHANGE_MAX)
        .map(|told| {
            let summary = format!(
                "one change of the queue woke {} consumers, over {WOKEN_PER_CHANGE_MAX}",
                told.len()
            );
            let proof: Vec<(usize, &str)> = told.iter().map(|&i| (i, "a consumer woken")).collect();
            Violation::new(NAME, history, summary, &proof)
        });
    let mut v = Verdict::from_violation(NAME, violation);
    v.note = Some(note);
    v
}
