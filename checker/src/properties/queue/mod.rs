//! The work queue's properties, judged on a run of the work-queue workload
//! (`zklock_sim::Recipe::work_queue`) instead of the lock's:
//!
//! | name | kind | holds when |
//! |---|---|---|
//! | `queue_item_exclusive` | always | no item is processed by two consumers at once |
//! | `queue_no_process_after_complete` | always | no consumer starts processing an item once it was completed (and deleted) |
//! | `queue_items_completed` | eventually | every item produced is completed exactly once, the queue is empty and no item lock node is left |
//! | `queue_one_item_per_produce` | always | a produce call adds at most one item, but for an item whose create's reply was lost and which was completed before the producer looked for it again |
//! | `queue_no_herd` | always | no change of the queue wakes more than [`herd::WOKEN_PER_CHANGE_MAX`] consumers; notifications and listings per completed item reported |
//!
//! Processing is judged by belief, as `mutual_exclusion` judges a hold: a consumer
//! processes item X from its `ProcessStart` until its `ProcessEnd`, its `Lost`, its
//! crash, its next `ProcessStart` or its `Done`. A conflict involving a consumer paused
//! since it began to take the item is, under process pauses, the known, unavoidable class
//! (it wakes believing in a lock its expired session no longer holds).

pub mod completed;
pub mod herd;
pub mod item_exclusive;
pub mod no_process_after_complete;
pub mod one_item_per_produce;
mod processing;

pub use herd::Changes;

use super::{CheckConfig, QueueCounters, Report, count};
use zklock_recipe::history::History;
use zklock_recipe::work_queue::QueuePaths;

/// The queue's property names, in the order [`check_queue`] reports them.
pub const QUEUE_PROPERTY_NAMES: [&str; 5] = [
    item_exclusive::NAME,
    no_process_after_complete::NAME,
    completed::NAME,
    one_item_per_produce::NAME,
    herd::NAME,
];

/// What the queue's properties need besides the history: its directories and their
/// children on the server once the run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueFacts {
    pub paths: QueuePaths,
    /// The queue directory's children at the end: items never completed.
    pub final_items: Vec<String>,
    /// The item locks' directory's children at the end: lock nodes left behind.
    pub final_locks: Vec<String>,
}

/// Every queue property on a simulated run's `history`, with the run's counters.
pub fn check_queue(history: &History, cfg: &CheckConfig, facts: &QueueFacts) -> Report {
    check_queue_with(history, cfg, facts, Changes::Instant)
}

/// Every queue property on `history`, its queue's changes grouped as `changes` says
/// ([`Changes::Parallel`] for a real run), with the run's counters.
pub fn check_queue_with(
    history: &History,
    cfg: &CheckConfig,
    facts: &QueueFacts,
    changes: Changes,
) -> Report {
    let mut counters = count(history);
    counters.queue = Some(QueueCounters::of(history));
    Report {
        verdicts: vec![
            item_exclusive::check(history, cfg.pauses_on),
            no_process_after_complete::check(history, cfg.pauses_on),
            completed::check(history, facts),
            one_item_per_produce::check(history, facts),
            herd::check_with(history, &facts.paths.queue, changes),
        ],
        counters,
    }
}
