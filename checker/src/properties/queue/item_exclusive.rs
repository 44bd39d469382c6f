//! always: `queue_item_exclusive`: no item is processed by two consumers at once, by
//! belief (see the [module](super)).

use super::processing::Tracker;
use crate::properties::{Verdict, Violation};
use zklock_recipe::history::{EventKind, History};

pub const NAME: &str = "queue_item_exclusive";

/// The verdict on `history`; `pauses_on`: process pauses were among the faults.
pub fn check(history: &History, pauses_on: bool) -> Verdict {
    let mut t = Tracker::default();
    let mut unavoidable: Option<Violation> = None;
    let mut starts = 0u64;
    for (i, e) in history.events.iter().enumerate() {
        if let EventKind::ProcessStart { item, .. } = &e.kind {
            starts += 1;
            let me_stale = t.paused_since_take(e.client);
            if let Some((other, p)) = t.others_on(e.client, item).next() {
                let summary = format!("c{other} and c{} both processed item {item}", e.client);
                let proof = [
                    (p.start, "first consumer starts processing"),
                    (i, "second consumer starts processing the same item"),
                ];
                let mut v = Violation::new(NAME, history, summary, &proof);
                if pauses_on && (p.stale || me_stale) {
                    v.known_unavoidable = true;
                    v.explanation = Some(
                        "a consumer was paused since it took the item: it woke believing in \
                         an item lock its expired session no longer held"
                            .into(),
                    );
                    unavoidable.get_or_insert(v);
                } else {
                    return Verdict::from_violation(NAME, Some(v));
                }
            }
        }
        t.observe(i, e);
    }
    let mut v = Verdict::from_violation(NAME, unavoidable);
    v.note = Some(format!("{starts} processings started"));
    v
}
