//! eventually: `queue_items_completed`: once the run is over (the faults healed, the
//! consumers done and every dead session expired), every item produced (or seen
//! processed) was completed exactly once, the queue directory is empty and no item
//! lock node is left.
//!
//! A completion whose reply was lost (or never came: its consumer stopped believing at a
//! Disconnected and dropped it) cannot be told applied or not by its consumer, so it
//! records no `ProcessEnd`: an item whose only
//! completion is such a delete, and which is gone from the queue, counts as completed
//! (the note counts them). So does an item whose processing consumer's delete of it was
//! answered ok, though its completion then failed (the item lock's delete that follows
//! outlived the session) or was dropped at a Disconnected: the item's delete is its
//! completion. A delete of an item its client was not processing completes nothing.
//!
//! Completing needs a consumer: when none lived to the end (every client that produced
//! nothing crashed, as a crash is final in the simulation), an item still in the queue
//! is not held against the recipe, and the note says how many were left so. Everything
//! else is still judged: an item completed twice or gone uncompleted, and any item lock
//! left behind, which a crashed consumer's expired session must not leave.

use super::QueueFacts;
use crate::properties::{Verdict, Violation};
use std::collections::{BTreeMap, BTreeSet};
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "queue_items_completed";

#[derive(Default)]
struct Item {
    /// Its `ItemProduced` or first `ProcessStart`.
    first: Option<usize>,
    completions: Vec<usize>,
    /// A delete of the item whose outcome was unknown.
    unknown_delete: Option<usize>,
    /// A delete of the item by the consumer processing it, answered ok.
    completing_delete: Option<usize>,
}

/// The verdict on `history`, with the run's final children in `facts`.
pub fn check(history: &History, facts: &QueueFacts) -> Verdict {
    let mut items: BTreeMap<&str, Item> = BTreeMap::new();
    let prefix = format!("{}/", facts.paths.queue);
    // Deletes of items in flight, by op id, and whether its client was processing it.
    let mut deletes: BTreeMap<u64, (&str, bool)> = BTreeMap::new();
    // By client: the item it processes, from its `ProcessStart` to its `ProcessEnd`,
    // `Lost` or `Done`.
    let mut processing: BTreeMap<u32, &str> = BTreeMap::new();
    // Clients that produced, and clients whose workload ended without a crash.
    let mut producers = BTreeSet::new();
    let mut done = BTreeSet::new();
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::Done => {
                done.insert(e.client);
                processing.remove(&e.client);
            }
            EventKind::Lost { .. } => {
                processing.remove(&e.client);
            }
            EventKind::ItemProduced { item } => {
                producers.insert(e.client);
                items.entry(item).or_default().first.get_or_insert(i);
            }
            EventKind::ProcessStart { item, .. } => {
                items.entry(item).or_default().first.get_or_insert(i);
                processing.insert(e.client, item);
            }
            EventKind::ProcessEnd { item } => {
                processing.remove(&e.client);
                let it = items.entry(item).or_default();
                it.first.get_or_insert(i);
                it.completions.push(i);
            }
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Delete,
                path,
                ..
            } => {
                if let Some(item) = path.strip_prefix(prefix.as_str()) {
                    let completing = processing.get(&e.client) == Some(&item);
                    deletes.insert(*op_id, (item, completing));
                }
            }
            EventKind::OpUnknown { op_id } => {
                if let Some((item, _)) = deletes.remove(op_id) {
                    items
                        .entry(item)
                        .or_default()
                        .unknown_delete
                        .get_or_insert(i);
                }
            }
            EventKind::OpOk { op_id } => {
                if let Some((item, true)) = deletes.remove(op_id) {
                    let it = items.entry(item).or_default();
                    it.completing_delete.get_or_insert(i);
                }
            }
            EventKind::OpFail { op_id, .. } => {
                deletes.remove(op_id);
            }
            _ => {}
        }
    }
    // A delete never answered (its consumer dropped it at a Disconnected) is unknown too.
    for (i, (item, _)) in deletes.values().enumerate() {
        items
            .entry(item)
            .or_default()
            .unknown_delete
            .get_or_insert(i);
    }
    let consumer_lived = done.difference(&producers).next().is_some();
    let mut by_unknown = 0;
    let mut by_delete = 0;
    let mut unconsumed = 0;
    for (name, it) in &items {
        if it.completions.len() > 1 {
            let proof = [
                (it.completions[0], "the item is completed"),
                (it.completions[1], "and completed again"),
            ];
            let summary = format!("item {name} was completed twice");
            return Verdict::from_violation(
                NAME,
                Some(Violation::new(NAME, history, summary, &proof)),
            );
        }
        if it.completions.is_empty() {
            let gone = !facts.final_items.iter().any(|n| n == name);
            if gone && it.unknown_delete.is_some() {
                by_unknown += 1;
                continue;
            }
            if gone && it.completing_delete.is_some() {
                by_delete += 1;
                continue;
            }
            if !gone && !consumer_lived {
                unconsumed += 1;
                continue;
            }
            let first = it.first.expect("an item is recorded by an event");
            let summary = if gone {
                format!("item {name} left the queue without being completed")
            } else {
                format!("item {name} was never completed: it is still in the queue")
            };
            let proof = [(first, "the item is produced (or first processed)")];
            return Verdict::from_violation(
                NAME,
                Some(Violation::new(NAME, history, summary, &proof)),
            );
        }
    }
    if let Some(left) = facts.final_items.first().filter(|_| consumer_lived) {
        let summary = format!(
            "{} items left in the queue at the end, {left} first",
            facts.final_items.len()
        );
        return Verdict::from_violation(NAME, Some(Violation::new(NAME, history, summary, &[])));
    }
    if let Some(left) = facts.final_locks.first() {
        let summary = format!(
            "{} item lock nodes left at the end, {}/{left} first",
            facts.final_locks.len(),
            facts.paths.locks
        );
        let proof: Vec<(usize, &str)> = items
            .get(left.as_str())
            .and_then(|it| it.first)
            .map(|i| (i, "the item whose lock is left"))
            .into_iter()
            .collect();
        return Verdict::from_violation(NAME, Some(Violation::new(NAME, history, summary, &proof)));
    }
    let mut v = Verdict::from_violation(NAME, None);
    v.note = Some(if consumer_lived {
        format!(
            "{} items completed once each ({by_unknown} by a delete whose reply was lost, \
             {by_delete} by a delete whose completion failed after it)",
            items.len()
        )
    } else {
        format!(
            "{} items completed once each ({by_unknown} by a delete whose reply was lost, \
             {by_delete} by a delete whose completion failed after it); no consumer lived \
             to the end, so {unconsumed} items left in the queue are not judged",
            items.len() - unconsumed
        )
    });
    v
}
