//! always: `queue_one_item_per_produce`: a produce call adds at most one item, except in
//! the queue's at-least-once window.
//!
//! A produce call runs from its `ProduceInvoked` to its `ItemProduced` or
//! `ProduceFailed` (or its client's crash, its `Done`, its next `ProduceInvoked`). Its
//! creates are the creates of a child of the queue directory its client sent in between;
//! their replies say what each did: an answered create made one item, a failed one none,
//! and one whose reply was lost (`OpUnknown`, or no reply before the call ended) made one
//! or none.
//!
//! Items are tied to creates by name: a create of `<queue>/P` makes `P` or, sequential,
//! `P` followed by ZooKeeper's sequence number. The items are every name the history
//! shows in the queue (produced, processed, completed, deleted by a delete answered ok)
//! and the queue's children at the end. An item is the call's when every create of the
//! run its name fits is the call's; one that fits creates of several calls (producers
//! that name items alike, with nothing of the call in the name) is tied to none, and such
//! a call is judged by its answered creates alone. A session's creates are applied in
//! the order sent, so the call's items, in sequence order, are made by its creates in
//! the order sent: every answered create made one, some of those whose reply was lost
//! made the rest.
//!
//! A second item is excused in one window only: it is the item of a create whose reply
//! was lost, and a delete of it (its completion) was sent before the producer's next
//! look was answered: the first getChildren of the queue directory the producer sent
//! after the loss and had answered (ok, or no node) before its next create. The producer
//! could not find an item gone before it looked, so it added another. Any other second
//! item is a violation: two answered creates, a create sent again without looking, or an
//! item that still stood when the producer looked.

use super::QueueFacts;
use crate::holds::is_crash;
use crate::properties::{Verdict, Violation};
use std::collections::{BTreeMap, HashMap};
use zklock_recipe::ZkError;
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "queue_one_item_per_produce";

/// How a request ended, with the index of the event that said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reply {
    /// None before the history ended.
    Pending,
    Ok(usize),
    /// A definite error: a create made nothing; a listing that found no directory looked.
    Fail(usize, bool),
    Unknown(usize),
}

#[derive(Debug)]
struct Op<'h> {
    invoke: usize,
    client: u32,
    op: ZkOp,
    /// The child of the queue directory it names, if it names one.
    child: Option<&'h str>,
    /// Whether it names the queue directory itself.
    on_queue: bool,
    reply: Reply,
}

#[derive(Debug)]
struct Call {
    client: u32,
    start: usize,
    /// The event that ended it, or the history's length.
    end: usize,
    /// Its creates in the queue directory, as indices into the ops, in the order sent.
    creates: Vec<usize>,
    /// Its items, as names, once tied.
    items: Vec<String>,
}

/// The verdict on `history`, with the queue's directory and final children in `facts`.
pub fn check(history: &History, facts: &QueueFacts) -> Verdict {
    let queue = facts.paths.queue.as_str();
    let child_of_queue = |path: &'_ str| -> Option<usize> {
        let rest = path.strip_prefix(queue)?.strip_prefix('/')?;
        (!rest.is_empty() && !rest.contains('/')).then_some(queue.len() + 1)
    };
    let mut ops: Vec<Op<'_>> = Vec::new();
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut open: BTreeMap<u32, usize> = BTreeMap::new();
    // Each item's first appearance, and when it was first completed.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut completed: HashMap<&str, usize> = HashMap::new();
    for (i, e) in history.events.iter().enumerate() {
        let ends_call = match &e.kind {
            EventKind::ProduceInvoked => {
                if let Some(c) = open.remove(&e.client) {
                    calls[c].end = i;
                }
                open.insert(e.client, calls.len());
                calls.push(Call {
                    client: e.client,
                    start: i,
                    end: history.events.len(),
                    creates: Vec::new(),
                    items: Vec::new(),
                });
                false
            }
            EventKind::ItemProduced { item } => {
                seen.entry(item).or_insert(i);
                true
            }
            EventKind::ProduceFailed { .. } | EventKind::Done => true,
            EventKind::ProcessStart { item, .. } => {
                seen.entry(item).or_insert(i);
                false
            }
            EventKind::ProcessEnd { item } => {
                seen.entry(item).or_insert(i);
                completed.entry(item).or_insert(i);
                false
            }
            EventKind::OpInvoke {
                op_id, op, path, ..
            } => {
                let child = child_of_queue(path).map(|at| &path[at..]);
                let at = ops.len();
                by_id.insert(*op_id, at);
                ops.push(Op {
                    invoke: i,
                    client: e.client,
                    op: *op,
                    child,
                    on_queue: **path == *queue,
                    reply: Reply::Pending,
                });
                // A create sent outside any call is nobody's: an item it may have made is
                // tied to no call.
                if *op == ZkOp::Create
                    && child.is_some()
                    && let Some(&c) = open.get(&e.client)
                {
                    calls[c].creates.push(at);
                }
                false
            }
            EventKind::OpOk { op_id } => {
                if let Some(&at) = by_id.get(op_id) {
                    let op = &mut ops[at];
                    op.reply = Reply::Ok(i);
                    if let (ZkOp::Delete, Some(item)) = (op.op, op.child) {
                        seen.entry(item).or_insert(i);
                    }
                }
                false
            }
            EventKind::OpFail { op_id, error } => {
                if let Some(&at) = by_id.get(op_id) {
                    ops[at].reply = Reply::Fail(i, *error == ZkError::NoNode);
                }
                false
            }
            EventKind::OpUnknown { op_id } => {
                if let Some(&at) = by_id.get(op_id) {
                    ops[at].reply = Reply::Unknown(i);
                }
                false
            }
            _ => is_crash(e),
        };
        if ends_call && let Some(c) = open.remove(&e.client) {
            calls[c].end = i;
        }
    }
    let end = history.events.len();
    for item in &facts.final_items {
        seen.entry(item).or_insert(end);
    }
    // When each item's removal was first asked for: a delete that did not fail, or its
    // completion.
    let mut deleted = completed;
    for op in &ops {
        if let (ZkOp::Delete, Some(item)) = (op.op, op.child)
            && !matches!(op.reply, Reply::Fail(..))
        {
            let at = deleted.entry(item).or_insert(op.invoke);
            *at = (*at).min(op.invoke);
        }
    }

    // Which call sent each create, and the creates by the name they make.
    let mut call_of: HashMap<usize, usize> = HashMap::new();
    for (c, call) in calls.iter().enumerate() {
        for &op in &call.creates {
            call_of.insert(op, c);
        }
    }
    let mut by_base: HashMap<&str, Vec<usize>> = HashMap::new();
    for (at, op) in ops.iter().enumerate() {
        if let (ZkOp::Create, Some(base)) = (op.op, op.child) {
            by_base.entry(base).or_default().push(at);
        }
    }
    let mut shared = 0u64;
    for &item in seen.keys() {
        let fits: Vec<usize> = bases(item)
            .filter_map(|b| by_base.get(b))
            .flatten()
            .copied()
            .collect();
        let mut owners = fits.iter().map(|op| call_of.get(op).copied());
        let Some(Some(first)) = owners.next() else {
            shared += u64::from(!fits.is_empty());
            continue;
        };
        if owners.all(|o| o == Some(first)) {
            calls[first].items.push(item.to_owned());
        } else {
            shared += 1;
        }
    }
    // Each client's listings of the queue directory: when sent, when answered.
    let mut looks: HashMap<u32, Vec<(usize, usize)>> = HashMap::new();
    for op in &ops {
        if let (ZkOp::GetChildren, true, Reply::Ok(i) | Reply::Fail(i, true)) =
            (op.op, op.on_queue, op.reply)
        {
            looks.entry(op.client).or_default().push((op.invoke, i));
        }
    }
    let judge = Judge {
        history,
        ops: &ops,
        deleted: &deleted,
        looks: &looks,
    };
    let mut excused = 0u64;
    let mut unplaced = 0u64;
    for call in &mut calls {
        sort_by_sequence(&mut call.items, &seen);
        match judge.call(call) {
            Judged::Fine { excused: n } => excused += n,
            Judged::Unplaced => unplaced += 1,
            Judged::Violated(v) => return Verdict::from_violation(NAME, Some(*v)),
        }
    }
    let mut v = Verdict::from_violation(NAME, None);
    v.note = Some(if calls.is_empty() {
        "no produce call recorded".into()
    } else {
        let mut note = format!(
            "{} produce calls; {excused} second items excused (a create whose reply was lost \
             made an item completed before the producer looked again)",
            calls.len()
        );
        if shared > 0 || unplaced > 0 {
            note.push_str(&format!(
                "; {shared} items tied to no one call (named alike by several calls' creates), \
                 {unplaced} calls whose items fit no order of their creates"
            ));
        }
        note
    });
    v
}

/// The names of the creates that may have made `item`: itself, and itself without a
/// sequence suffix (ten digits, or a wrapped counter's '-' and ten or nine).
fn bases(item: &str) -> impl Iterator<Item = &str> {
    let b = item.as_bytes();
    let digits = |from: usize| b[from..].iter().all(u8::is_ascii_digit);
    let cut = |len: usize, ok: &dyn Fn(usize) -> bool| {
        let at = b.len().checked_sub(len)?;
        (at > 0 && ok(at)).then(|| &item[..at])
    };
    let ten = cut(10, &|at| digits(at) || (b[at] == b'-' && digits(at + 1)));
    let wrapped = cut(11, &|at| b[at] == b'-' && digits(at + 1));
    std::iter::once(item).chain(ten).chain(wrapped)
}

/// The sequence number of `item` if it has one.
fn sequence(item: &str) -> Option<i64> {
    let base = bases(item).nth(1)?;
    item[base.len()..].parse().ok()
}

/// Orders a call's items as their creates were applied: by sequence (across the
/// counter's wrap, as distances from the first), else by first appearance.
fn sort_by_sequence(items: &mut [String], seen: &BTreeMap<&str, usize>) {
    let first = items.iter().find_map(|i| sequence(i));
    items.sort_by_key(|i| {
        let at = seen.get(i.as_str()).copied().unwrap_or(usize::MAX);
        match (sequence(i), first) {
            (Some(s), Some(f)) => (0, i64::from((s as i32).wrapping_sub(f as i32)), at),
            _ => (1, 0, at),
        }
    });
}

enum Judged {
    Fine {
        excused: u64,
    },
    /// The items seen cannot be laid on the call's creates in order (an answered
    /// create's item never seen, names that fit no order): not judged.
    Unplaced,
    Violated(Box<Violation>),
}

struct Judge<'a, 'h> {
    history: &'a History,
    ops: &'a [Op<'h>],
    deleted: &'a HashMap<&'h str, usize>,
    looks: &'a HashMap<u32, Vec<(usize, usize)>>,
}

/// A cell of the laying of items on creates: the fewest items not excused, and whether
/// the create took the item.
type Cell = Option<(u32, bool)>;

impl Judge<'_, '_> {
    fn call(&self, call: &Call) -> Judged {
        let answered: Vec<usize> = call
            .creates
            .iter()
            .copied()
            .filter(|&op| matches!(self.ops[op].reply, Reply::Ok(_)))
            .collect();
        if let [a, b, ..] = answered[..] {
            let reply = |op: usize| match self.ops[op].reply {
                Reply::Ok(i) => i,
                _ => self.ops[op].invoke,
            };
            let summary = format!(
                "c{}'s produce call made two items: two of its creates in the queue were answered",
                call.client
            );
            let proof = [
                (call.start, "the produce call starts"),
                (reply(a), "a create of the call makes an item"),
                (
                    reply(b),
                    "another create of the same call makes a second item",
                ),
            ];
            return Judged::Violated(Box::new(Violation::new(
                NAME,
                self.history,
                summary,
                &proof,
            )));
        }
        let n = call.items.len();
        if n < 2 {
            return Judged::Fine { excused: 0 };
        }
        // Lays the items, in order, on an ordered choice of the creates: every answered
        // create takes one, a failed one none, one whose reply was lost one or none; the
        // laying that leaves the fewest items unexcused is the call's best defence.
        let m = call.creates.len();
        let mut table: Vec<Vec<Cell>> = vec![vec![None; n + 1]; m + 1];
        table[0][0] = Some((0, false));
        for (k, &op) in call.creates.iter().enumerate() {
            for j in 0..=n {
                let Some((cost, _)) = table[k][j] else {
                    continue;
                };
                let reply = self.ops[op].reply;
                let skip = !matches!(reply, Reply::Ok(_));
                if skip {
                    better(&mut table[k + 1][j], cost, false);
                }
                let makes = !matches!(reply, Reply::Fail(..));
                if makes && j < n && self.fits(&call.items[j], op) {
                    let excused = self.excused(call, k, &call.items[j]).is_ok();
                    better(&mut table[k + 1][j + 1], cost + u32::from(!excused), true);
                }
            }
        }
        let Some((cost, _)) = table[m][n] else {
            return Judged::Unplaced;
        };
        if cost <= 1 {
            return Judged::Fine {
                excused: n as u64 - 1,
            };
        }
        // The best laying, back from its end: its first two unexcused items prove it.
        let mut laid: Vec<(usize, usize)> = Vec::new();
        let mut j = n;
        for k in (0..m).rev() {
            if let Some((_, true)) = table[k + 1][j] {
                j -= 1;
                laid.push((k, j));
            }
        }
        laid.reverse();
        let mut proof: Vec<(usize, &str)> = vec![(call.start, "the produce call starts")];
        let mut why = String::new();
        let mut unexcused = laid
            .iter()
            .filter_map(|&(k, j)| Some((k, j, self.excused(call, k, &call.items[j]).err()?)));
        let (k1, j1, first) = unexcused.next().expect("two items are unexcused");
        let (k2, j2, _) = unexcused.next().expect("two items are unexcused");
        let (a, b) = (&call.items[j1], &call.items[j2]);
        let op1 = &self.ops[call.creates[k1]];
        proof.push((op1.invoke, "a create of the call makes the first item"));
        match first {
            NotExcused::Answered => {
                why.push_str(&format!("the create of {a} was answered"));
            }
            NotExcused::NeverLooked(lost) => {
                proof.push((lost, "its reply is lost"));
                why.push_str(&format!(
                    "its create's reply was lost, and the producer created again without \
                     looking for {a}"
                ));
            }
            NotExcused::StillStood(lost, looked) => {
                proof.push((lost, "its reply is lost"));
                proof.push((looked, "the producer looks again while it still stands"));
                why.push_str(&format!(
                    "its create's reply was lost, and {a} still stood when the producer \
                     looked again"
                ));
            }
        }
        proof.push((
            self.ops[call.creates[k2]].invoke,
            "another create of the same call makes a second item",
        ));
        let summary = format!(
            "c{}'s produce call made two items, {a} and {b}: {why}",
            call.client
        );
        Judged::Violated(Box::new(Violation::new(
            NAME,
            self.history,
            summary,
            &proof,
        )))
    }

    /// Whether create `op` may have made `item`: its name is the create's, or the
    /// create's followed by a sequence number.
    fn fits(&self, item: &str, op: usize) -> bool {
        let base = self.ops[op].child.unwrap_or_default();
        bases(item).any(|b| b == base)
    }

    /// Whether `item`, made by the call's `k`th create, is excused, or why not.
    fn excused(&self, call: &Call, k: usize, item: &str) -> Result<(), NotExcused> {
        let op = &self.ops[call.creates[k]];
        let lost = match op.reply {
            Reply::Unknown(i) => i,
            // A call that ended (a crash) with the create in flight never looked again.
            Reply::Pending => return Err(NotExcused::NeverLooked(op.invoke)),
            Reply::Ok(_) | Reply::Fail(..) => return Err(NotExcused::Answered),
        };
        // The next look must be answered before the call's next create is sent.
        let before = call
            .creates
            .get(k + 1)
            .map_or(call.end, |&next| self.ops[next].invoke);
        let look = self
            .looks
            .get(&call.client)
            .into_iter()
            .flatten()
            .filter(|&&(sent, _)| sent > lost)
            .map(|&(_, answered)| answered)
            .min()
            .filter(|&i| i < before);
        let Some(looked) = look else {
            return Err(NotExcused::NeverLooked(lost));
        };
        match self.deleted.get(item) {
            Some(&gone) if gone < looked => Ok(()),
            _ => Err(NotExcused::StillStood(lost, looked)),
        }
    }
}

/// Why an item is not excused.
enum NotExcused {
    /// Its create was answered: the producer knew of it.
    Answered,
    /// Its create's reply was lost (at this event) and the producer did not look again
    /// before creating once more.
    NeverLooked(usize),
    /// Its create's reply was lost, and it still stood when the producer looked (the
    /// look's answer).
    StillStood(usize, usize),
}

fn better(cell: &mut Cell, cost: u32, took: bool) {
    if cell.is_none_or(|(c, _)| cost < c) {
        *cell = Some((cost, took));
    }
}

#[cfg(test)]
mod tests {
    use super::{NAME, check};
    use crate::properties::queue::QueueFacts;
    use crate::testkit::Hb;
    use zklock_recipe::ZkError;
    use zklock_recipe::history::{EventKind, History, ZkOp};

    const CREATE: &str = "/queue/item-g-";
    const FIRST: &str = "item-g-0000000000";
    const SECOND: &str = "item-g-0000000001";

    fn facts(final_items: &[&str]) -> QueueFacts {
        QueueFacts {
            paths: Default::default(),
            final_items: final_items.iter().map(|s| s.to_string()).collect(),
            final_locks: vec![],
        }
    }

    /// Producer c0 calls produce; its create's reply is lost, but the item was made.
    fn lost_first_create(h: &mut Hb) {
        h.ev(0, EventKind::ProduceInvoked);
        let id = h.invoke(0, ZkOp::Create, CREATE);
        h.ev(0, EventKind::OpUnknown { op_id: id });
    }

    /// Consumer c1 processes and completes `item`.
    fn complete(h: &mut Hb, item: &str) {
        let kind = |item: &str| EventKind::ProcessStart {
            item: item.into(),
            token: 1,
        };
        h.ev(1, kind(item));
        h.op(1, ZkOp::Delete, &format!("/queue/{item}"));
        h.ev(1, EventKind::ProcessEnd { item: item.into() });
    }

    /// The call creates again, answered, and returns the second item.
    fn create_second(h: &mut Hb) {
        h.op(0, ZkOp::Create, CREATE);
        h.ev(
            0,
            EventKind::ItemProduced {
                item: SECOND.into(),
            },
        );
    }

    fn verdict(h: &History) -> crate::properties::Verdict {
        let v = check(h, &facts(&[]));
        assert_eq!(v.property, NAME);
        v
    }

    #[test]
    fn a_second_item_after_the_first_was_completed_before_the_producer_looked_is_excused() {
        let mut h = Hb::new();
        lost_first_create(&mut h);
        complete(&mut h, FIRST);
        h.op(0, ZkOp::GetChildren, "/queue");
        create_second(&mut h);
        complete(&mut h, SECOND);
        let v = verdict(&h.build());
        assert!(v.ok, "{:?}", v.report);
        let note = v.note.unwrap();
        assert!(
            note.starts_with("1 produce calls; 1 second items excused"),
            "{note}"
        );
    }

    #[test]
    fn a_delete_sent_before_the_look_was_answered_excuses_the_second_item() {
        // The server may have applied the delete before it served the listing.
        let mut h = Hb::new();
        lost_first_create(&mut h);
        let look = h.invoke(0, ZkOp::GetChildren, "/queue");
        let delete = h.invoke(1, ZkOp::Delete, &format!("/queue/{FIRST}"));
        h.ok(0, look);
        h.ok(1, delete);
        create_second(&mut h);
        assert!(verdict(&h.build()).ok);
    }

    #[test]
    fn two_answered_creates_in_one_call_are_a_violation() {
        let mut h = Hb::new();
        h.ev(0, EventKind::ProduceInvoked);
        h.op(0, ZkOp::Create, CREATE);
        create_second(&mut h);
        let v = verdict(&h.build());
        assert!(!v.ok);
        let report = v.report.unwrap();
        assert!(report.summary.contains("two of its creates"), "{report}");
        assert_eq!(report.events.len(), 3, "{report}");
    }

    #[test]
    fn a_create_sent_again_without_looking_is_a_violation() {
        let mut h = Hb::new();
        lost_first_create(&mut h);
        create_second(&mut h);
        // Even completed before the second create: the producer never looked.
        let v = check(&h.build(), &facts(&[FIRST, SECOND]));
        assert!(!v.ok);
        let report = v.report.unwrap();
        assert!(
            report.summary.contains(FIRST)
                && report.summary.contains(SECOND)
                && report.summary.contains("without looking"),
            "{report}"
        );
    }

    #[test]
    fn a_second_item_while_the_first_still_stands_is_a_violation() {
        let mut h = Hb::new();
        lost_first_create(&mut h);
        let look = h.op(0, ZkOp::GetChildren, "/queue");
        create_second(&mut h);
        // Completed, but only after the producer looked.
        complete(&mut h, FIRST);
        complete(&mut h, SECOND);
        let v = verdict(&h.build());
        assert!(!v.ok);
        let report = v.report.unwrap();
        assert!(report.summary.contains("still stood"), "{report}");
        // The look's answer is among the proof.
        assert!(report.event_indices().contains(&(look + 1)), "{report}");
    }

    #[test]
    fn a_lost_create_that_made_nothing_leaves_one_item() {
        let mut h = Hb::new();
        lost_first_create(&mut h);
        h.op(0, ZkOp::GetChildren, "/queue");
        create_second(&mut h);
        complete(&mut h, SECOND);
        let v = verdict(&h.build());
        assert!(v.ok, "{:?}", v.report);
        assert!(v.note.unwrap().starts_with("1 produce calls; 0 second"));
    }

    #[test]
    fn each_lost_create_is_judged_by_the_look_that_followed_it() {
        // Two lost creates; the first made nothing, the second made the first item,
        // completed before the second look only: excused by that look.
        let mut h = Hb::new();
        lost_first_create(&mut h);
        h.op(0, ZkOp::GetChildren, "/queue");
        let id = h.invoke(0, ZkOp::Create, CREATE);
        h.ev(0, EventKind::OpUnknown { op_id: id });
        complete(&mut h, FIRST);
        h.op(0, ZkOp::GetChildren, "/queue");
        create_second(&mut h);
        assert!(verdict(&h.build()).ok);
    }

    #[test]
    fn a_failed_call_whose_lost_create_made_an_item_made_one() {
        let mut h = Hb::new();
        lost_first_create(&mut h);
        h.op_fail(0, ZkOp::GetChildren, "/queue", ZkError::SessionExpired);
        h.ev(
            0,
            EventKind::ProduceFailed {
                reason: "session expired".into(),
            },
        );
        complete(&mut h, FIRST);
        assert!(verdict(&h.build()).ok);
    }

    #[test]
    fn items_named_alike_by_several_calls_are_tied_to_none() {
        // Producers whose items carry nothing of the call: a name fits every create.
        let mut h = Hb::new();
        for _ in 0..2 {
            h.ev(0, EventKind::ProduceInvoked);
            h.op(0, ZkOp::Create, CREATE);
            h.ev(0, EventKind::ItemProduced { item: FIRST.into() });
        }
        let v = check(&h.build(), &facts(&[FIRST, SECOND]));
        assert!(v.ok, "{:?}", v.report);
        assert!(v.note.unwrap().contains("2 items tied to no one call"));
    }

    #[test]
    fn a_history_without_produce_calls_is_not_judged() {
        let mut h = Hb::new();
        h.op(0, ZkOp::Create, CREATE);
        h.op(0, ZkOp::Create, CREATE);
        let v = verdict(&h.build());
        assert!(v.ok);
        assert_eq!(v.note.as_deref(), Some("no produce call recorded"));
    }
}
