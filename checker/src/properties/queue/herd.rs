//! always: `queue_no_herd`: no change of the queue wakes more than
//! [`WOKEN_PER_CHANGE_MAX`] consumer; the watch notifications and getChildren listings
//! per completed item are reported beside it.
//!
//! A consumer is woken by a notification when it was waiting on its watches and acts on
//! it: its last request before the notification was a watching request, answered ok, it
//! had nothing in flight, and its first request after is a listing of the queue
//! directory or a request on the notified path. A notification that reaches a consumer
//! busy elsewhere (processing an item, queued on the take lock) wakes nobody: a watch is
//! one-shot and cannot be withdrawn, so a consumer that stopped waiting by another watch
//! leaves this one standing, and it fires later for nothing. Such notifications are
//! counted in the figures, not judged.
//!
//! In a simulated run, a change is a watch event's type and path at one instant, in one
//! run of notifications with no other event between: every watcher of a node is told of
//! its change at once, in the step that applies it (a delayed delivery splits a change,
//! which only makes the measure lenient). In a run of parallel clients (a real server),
//! each client hears of a change at its own instant, so a notification is charged to the
//! write that caused it ([`Changes::Parallel`]): the one write on the watched path
//! (a create or delete of a child, a delete, create or setData of the node) whose
//! request was in flight between the client's last watching request on that path and the
//! notification. Where no write or several fit (a session's expiry deleting an
//! ephemeral, writes racing), the notification is a change of its own: lenient again,
//! never a herd that did not happen.
//!
//! The bound is what the herd-free consumer documents: only the take lock's holder waits
//! on the queue and the oldest locked item, so a change wakes one consumer. A naive
//! consumer wakes every idle consumer at every produce and every completion: with two
//! consumers or more idle at once, over the bound. The per-item figures depend on how
//! often consumers are idle (the producer's pace), so they are reported, not judged; the
//! figures of both shipped consumers are in docs/recipes.md.

use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::EventType;
use zklock_recipe::history::{EventKind, History, ZkOp};
use zklock_recipe::path::parent;

pub const NAME: &str = "queue_no_herd";

/// Most consumers one change may wake that is not a herd.
pub const WOKEN_PER_CHANGE_MAX: usize = 1;

/// How a history's notifications are grouped into changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changes {
    /// By instant, path and type: a simulated run, whose watchers hear of a change at once.
    Instant,
    /// By the write that caused each: a run of parallel clients (see the module's docs).
    Parallel,
}

/// A change: its cause (a write's index, or the instant it was heard of and the node's
/// incarnation then), path and type.
type ChangeKey<'h> = (Cause, &'h str, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    Write(usize),
    /// The instant, how many writes that make a new incarnation of the path had been sent
    /// by then ([`Incarnations`]): two deletes of one path at one instant, of two nodes
    /// created there one after the other, are two changes; and, in a simulated run, the
    /// last event before the notification that is not one. The simulated server tells
    /// every watcher of a change in the step that applies it, so its notifications come
    /// one after another; a watcher of the next change set its watch after this one, and
    /// the reply that set it lies between. So two writes applied at one instant (an
    /// exhaustive check's requests take no time) are two changes, not one herd.
    Instant(u64, usize, usize),
}

/// The run's figures: notifications, listings and completed items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueFigures {
    pub notifications: u64,
    pub listings: u64,
    pub completed: u64,
}

/// Counts notifications, listings and completions in `history`.
pub fn figures(history: &History) -> QueueFigures {
    let mut f = QueueFigures::default();
    for e in &history.events {
        match &e.kind {
            EventKind::WatchEvent { .. } => f.notifications += 1,
            EventKind::OpInvoke {
                op: ZkOp::GetChildren,
                ..
            } => f.listings += 1,
            EventKind::ProcessEnd { .. } => f.completed += 1,
            _ => {}
        }
    }
    f
}

/// The verdict on a simulated run's `history` of the queue in directory `queue`.
pub fn check(history: &History, queue: &str) -> Verdict {
    check_with(history, queue, Changes::Instant)
}

/// The verdict on `history` of the queue in directory `queue`, its changes grouped as
/// `changes` says.
pub fn check_with(history: &History, queue: &str, changes: Changes) -> Verdict {
    let queue = trim(queue);
    let QueueFigures {
        notifications,
        listings,
        completed,
    } = figures(history);
    let writes = match changes {
        Changes::Instant => None,
        Changes::Parallel => Some(Writes::of(history)),
    };
    // Each change: the events that woke a consumer.
    let mut told_by_change: BTreeMap<ChangeKey<'_>, Vec<usize>> = BTreeMap::new();
    // By client and path: its last watching request there.
    let mut watched_from: BTreeMap<(u32, &str), usize> = BTreeMap::new();
    let waits = Waits::of(history);
    let incarnations = Incarnations::of(history);
    // The last event before this one that is not a notification: the notifications of
    // one change come one after another (see `Cause::Instant`).
    let mut block = 0;
    for (i, e) in history.events.iter().enumerate() {
        let (event_type, path) = match &e.kind {
            EventKind::OpInvoke {
                path, watch: true, ..
            } => {
                watched_from.insert((e.client, &**path), i);
                block = i;
                continue;
            }
            EventKind::WatchEvent { event_type, path } => (event_type, path),
            _ => {
                block = i;
                continue;
            }
        };
        if !waits.woken(history, i, e.client, path, queue) {
            continue;
        }
        let from = watched_from
            .get(&(e.client, path.as_str()))
            .copied()
            .unwrap_or(0);
        let cause = writes
            .as_ref()
            .and_then(|w| w.cause(i, from, *event_type, path))
            .map_or_else(
                || {
                    let block = match changes {
                        Changes::Instant => block,
                        Changes::Parallel => 0,
                    };
                    Cause::Instant(e.time_us, incarnations.at(i, *event_type, path), block)
                },
                Cause::Write,
            );
        let told = told_by_change
            .entry((cause, path.as_str(), format!("{event_type:?}")))
            .or_default();
        if !told.iter().any(|&j| history.events[j].client == e.client) {
            told.push(i);
        }
    }
    let per = |n: u64| n as f64 / completed.max(1) as f64;
    let widest = told_by_change.values().max_by_key(|t| t.len());
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

/// Where each path got a new incarnation: a node's creates that succeeded, and a
/// directory's children's creates and deletes that succeeded, by the index they were
/// sent at.
struct Incarnations<'h> {
    nodes: BTreeMap<&'h str, Vec<usize>>,
    dirs: BTreeMap<&'h str, Vec<usize>>,
}

impl<'h> Incarnations<'h> {
    fn of(history: &'h History) -> Incarnations<'h> {
        let mut sent: BTreeMap<u64, (usize, ZkOp, &'h str)> = BTreeMap::new();
        let mut inc = Incarnations {
            nodes: BTreeMap::new(),
            dirs: BTreeMap::new(),
        };
        for (i, e) in history.events.iter().enumerate() {
            match &e.kind {
                EventKind::OpInvoke {
                    op_id, op, path, ..
                } if matches!(op, ZkOp::Create | ZkOp::Delete) => {
                    sent.insert(*op_id, (i, *op, path));
                }
                EventKind::OpOk { op_id } => {
                    let Some((at, op, path)) = sent.remove(op_id) else {
                        continue;
                    };
                    if op == ZkOp::Create {
                        inc.nodes.entry(path).or_default().push(at);
                    }
                    if let Some(dir) = parent(path) {
                        inc.dirs.entry(dir).or_default().push(at);
                    }
                }
                EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
                    sent.remove(op_id);
                }
                _ => {}
            }
        }
        for list in inc.nodes.values_mut().chain(inc.dirs.values_mut()) {
            list.sort_unstable();
        }
        inc
    }

    /// How many incarnations `path` had been sent before the notification at `at`.
    fn at(&self, at: usize, event_type: EventType, path: &str) -> usize {
        let list = match event_type {
            EventType::NodeChildrenChanged => self.dirs.get(path),
            _ => self.nodes.get(path),
        };
        list.map_or(0, |l| l.partition_point(|&j| j < at))
    }
}

/// Each client's requests in order, to tell whether a notification found it waiting.
struct Waits {
    /// By client: the indices of its `OpInvoke` events, in order.
    invokes: BTreeMap<u32, Vec<usize>>,
    /// By op id: where it was answered (ok, failed or of unknown fate), and whether ok.
    answers: BTreeMap<u64, (usize, bool)>,
}

impl Waits {
    fn of(history: &History) -> Waits {
        let mut invokes: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        let mut answers = BTreeMap::new();
        for (i, e) in history.events.iter().enumerate() {
            match &e.kind {
                EventKind::OpInvoke { .. } => invokes.entry(e.client).or_default().push(i),
                EventKind::OpOk { op_id } => {
                    answers.insert(*op_id, (i, true));
                }
                EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
                    answers.insert(*op_id, (i, false));
                }
                _ => {}
            }
        }
        Waits { invokes, answers }
    }

    /// Whether the notification at `at` to `client` on `path` woke it: it was waiting
    /// on its watches (its last request a watching one, answered ok before `at`) and its
    /// next request looks again (lists the queue directory, or touches `path`).
    fn woken(&self, history: &History, at: usize, client: u32, path: &str, queue: &str) -> bool {
        let Some(invokes) = self.invokes.get(&client) else {
            return false;
        };
        let after = invokes.partition_point(|&j| j < at);
        let Some(&last) = after.checked_sub(1).and_then(|k| invokes.get(k)) else {
            return false;
        };
        let EventKind::OpInvoke { op_id, watch, .. } = &history.events[last].kind else {
            return false;
        };
        let answered_ok = self.answers.get(op_id).is_some_and(|&(a, ok)| ok && a < at);
        if !(*watch && answered_ok) {
            return false;
        }
        let Some(&next) = invokes.get(after) else {
            return false;
        };
        let EventKind::OpInvoke {
            op,
            path: next_path,
            ..
        } = &history.events[next].kind
        else {
            return false;
        };
        **next_path == *path || (*op == ZkOp::GetChildren && trim(next_path) == queue)
    }
}

fn trim(path: &str) -> &str {
    match path.trim_end_matches('/') {
        "" => "/",
        p => p,
    }
}

/// Every write request of a history: its op, path, and where it was invoked and answered.
struct Writes<'h> {
    list: Vec<Write<'h>>,
}

struct Write<'h> {
    op: ZkOp,
    path: &'h str,
    invoked: usize,
    /// Where its answer (or its unknown fate) was recorded; `None`: never.
    answered: Option<usize>,
}

impl<'h> Writes<'h> {
    fn of(history: &'h History) -> Writes<'h> {
        let mut list: Vec<Write<'h>> = Vec::new();
        let mut open: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, e) in history.events.iter().enumerate() {
            match &e.kind {
                EventKind::OpInvoke {
                    op_id, op, path, ..
                } if matches!(op, ZkOp::Create | ZkOp::Delete | ZkOp::SetData) => {
                    open.insert(*op_id, list.len());
                    list.push(Write {
                        op: *op,
                        path,
                        invoked: i,
                        answered: None,
                    });
                }
                // A request of unknown fate is taken as settled when its client learns so:
                // the server applies what it received before the connection broke.
                EventKind::OpOk { op_id }
                | EventKind::OpFail { op_id, .. }
                | EventKind::OpUnknown { op_id } => {
                    if let Some(w) = open.remove(op_id) {
                        list[w].answered = Some(i);
                    }
                }
                _ => {}
            }
        }
        Writes { list }
    }

    /// The one write that can have caused the notification at `at` of a watch left by the
    /// request at `watched_from`, if exactly one can.
    fn cause(
        &self,
        at: usize,
        watched_from: usize,
        event_type: EventType,
        path: &str,
    ) -> Option<usize> {
        let mut fits = self.list.iter().filter(|w| {
            w.invoked < at
                && w.answered.is_none_or(|a| a > watched_from)
                && touches(w, event_type, path)
        });
        let first = fits.next()?;
        fits.next().is_none().then_some(first.invoked)
    }
}

/// Whether write `w` fires a watch of `event_type` on `path`. A sequential create's path
/// is its prefix, whose parent is the directory all the same.
fn touches(w: &Write<'_>, event_type: EventType, path: &str) -> bool {
    match event_type {
        EventType::NodeChildrenChanged => {
            matches!(w.op, ZkOp::Create | ZkOp::Delete) && parent(w.path) == Some(path)
        }
        EventType::NodeDeleted => w.op == ZkOp::Delete && w.path == path,
        EventType::NodeCreated => w.op == ZkOp::Create && w.path == path,
        EventType::NodeDataChanged => w.op == ZkOp::SetData && w.path == path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Hb;

    const QUEUE: &str = "/queue";

    /// Tells `client` of a change of the queue's children; a consumer waiting on it then
    /// lists the queue again.
    fn notify(h: &mut Hb, client: u32) -> usize {
        h.ev(
            client,
            EventKind::WatchEvent {
                event_type: EventType::NodeChildrenChanged,
                path: QUEUE.into(),
            },
        )
    }

    /// Consumers 1 to 3 watch the queue; client 0's create of an item tells each of them
    /// at an instant of its own, as a real server's clients hear it, and each lists the
    /// queue again.
    fn one_produce_heard_by_three() -> Hb {
        let mut h = Hb::new();
        for c in 1..=3 {
            h.op(c, ZkOp::GetChildren, QUEUE);
        }
        let create = h.invoke(0, ZkOp::Create, "/queue/item-");
        notify(&mut h, 1);
        h.ok(0, create);
        notify(&mut h, 2);
        notify(&mut h, 3);
        for c in 1..=3 {
            h.op(c, ZkOp::GetChildren, QUEUE);
        }
        h
    }

    #[test]
    fn a_real_runs_notifications_of_one_write_are_one_change() {
        let h = one_produce_heard_by_three().build();
        let v = check_with(&h, QUEUE, Changes::Parallel);
        assert!(!v.ok, "{v:?}");
        let summary = &v.report.as_ref().expect("a violation").summary;
        assert!(summary.contains("woke 3 consumers"), "{summary}");
        // By instant, as a simulated run is judged, each is a change of its own.
        assert!(check(&h, QUEUE).ok);
    }

    #[test]
    fn notifications_two_racing_writes_could_have_caused_are_not_charged_to_either() {
        let mut h = Hb::new();
        for c in 1..=3 {
            h.op(c, ZkOp::GetChildren, QUEUE);
        }
        let create = h.invoke(0, ZkOp::Create, "/queue/item-");
        let delete = h.invoke(4, ZkOp::Delete, "/queue/item-x-0000000001");
        for c in 1..=3 {
            notify(&mut h, c);
        }
        h.ok(0, create);
        h.ok(4, delete);
        for c in 1..=3 {
            h.op(c, ZkOp::GetChildren, QUEUE);
        }
        let v = check_with(&h.build(), QUEUE, Changes::Parallel);
        assert!(v.ok, "lenient where the cause is ambiguous: {v:?}");
    }

    #[test]
    fn a_write_answered_before_a_consumer_watched_again_did_not_wake_it() {
        let mut h = one_produce_heard_by_three();
        // Consumers 1 and 2 watched again with their listings; a second produce wakes
        // both: two consumers, one change.
        let create = h.invoke(0, ZkOp::Create, "/queue/item-");
        h.ok(0, create);
        notify(&mut h, 1);
        notify(&mut h, 2);
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::GetChildren, QUEUE);
        let v = check_with(&h.build(), QUEUE, Changes::Parallel);
        // The first produce's three wakes are the widest change, not five.
        let summary = &v.report.as_ref().expect("a violation").summary;
        assert!(summary.contains("woke 3 consumers"), "{summary}");
    }

    /// Consumers 1 and 2 watched the queue; consumer 2 then stopped waiting (it took an
    /// item: its lock's create is its last request) and its watch stands. A produce tells
    /// both, at one instant.
    fn a_standing_watch_and_a_waiter() -> Hb {
        let mut h = Hb::new();
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::Create, "/queue_lock/item-x-0000000001");
        h.op(0, ZkOp::Create, "/queue/item-");
        // One instant: `ev` advances the clock by 0.1 ms, so each is set back to 5 ms.
        h.at_ms(5);
        notify(&mut h, 1);
        h.at_ms(5);
        notify(&mut h, 2);
        h.at_ms(6);
        h.op(1, ZkOp::GetChildren, QUEUE);
        h
    }

    #[test]
    fn a_notification_to_a_consumer_busy_elsewhere_wakes_nobody() {
        let mut h = a_standing_watch_and_a_waiter();
        // Consumer 2 completes its item: its next request is no look at the queue.
        h.op(2, ZkOp::Delete, "/queue/item-x-0000000001");
        let v = check(&h.build(), QUEUE);
        assert!(v.ok, "{v:?}");
        let note = v.note.expect("the figures");
        assert!(note.starts_with("at most 1 consumers woken"), "{note}");
    }

    #[test]
    fn two_waiting_consumers_woken_by_one_change_are_a_herd() {
        let mut h = Hb::new();
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::GetChildren, QUEUE);
        h.op(0, ZkOp::Create, "/queue/item-");
        // One instant: `ev` advances the clock by 0.1 ms, so each is set back to 5 ms.
        h.at_ms(5);
        notify(&mut h, 1);
        h.at_ms(5);
        notify(&mut h, 2);
        h.at_ms(6);
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::GetChildren, QUEUE);
        let v = check(&h.build(), QUEUE);
        assert!(!v.ok, "{v:?}");
        let summary = &v.report.as_ref().expect("a violation").summary;
        assert!(summary.contains("woke 2 consumers, over 1"), "{summary}");
    }

    #[test]
    fn deletes_of_two_nodes_created_one_after_the_other_at_one_path_are_two_changes() {
        const LOCK: &str = "/queue_lock/item-x-0000000001";
        let deleted = |h: &mut Hb, client: u32| {
            h.at_ms(5);
            h.ev(
                client,
                EventKind::WatchEvent {
                    event_type: EventType::NodeDeleted,
                    path: LOCK.into(),
                },
            );
        };
        let mut h = Hb::new();
        // Consumer 3 holds the item's first lock; consumer 1 waits on it.
        h.op(3, ZkOp::Create, LOCK);
        h.op(1, ZkOp::Exists, LOCK);
        h.op(3, ZkOp::Delete, LOCK);
        deleted(&mut h, 1);
        h.op(1, ZkOp::GetChildren, QUEUE);
        // Consumer 1 takes the item's lock anew; consumer 2 waits on that one, which
        // goes with consumer 1's session, at the same instant.
        h.op(1, ZkOp::Create, LOCK);
        h.op(2, ZkOp::Exists, LOCK);
        deleted(&mut h, 2);
        h.op(2, ZkOp::GetChildren, QUEUE);
        let v = check(&h.build(), QUEUE);
        assert!(v.ok, "{v:?}");
    }

    /// Regression: `zklock check --recipe queue --clients 4 --acquisitions 2 --faults-max
    /// 1` reported the shipped queue's herd-free consumers as a herd. Two deletes of items
    /// were applied one after the other at one instant (the check's requests take no
    /// time), and each woke the one consumer then waiting on the queue: the second
    /// watched after the first delete's notification. Two changes, one consumer each.
    #[test]
    fn two_writes_applied_at_one_instant_each_waking_one_consumer_are_no_herd() {
        let mut h = Hb::new();
        h.op(3, ZkOp::GetChildren, QUEUE);
        let first = h.invoke(1, ZkOp::Delete, "/queue/item-x-0000000000");
        let second = h.invoke(2, ZkOp::Delete, "/queue/item-x-0000000001");
        h.at_ms(5);
        notify(&mut h, 3);
        h.at_ms(5);
        h.ok(1, first);
        h.at_ms(5);
        h.op(3, ZkOp::GetChildren, QUEUE);
        h.at_ms(5);
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.at_ms(5);
        notify(&mut h, 1);
        h.at_ms(5);
        h.ok(2, second);
        h.at_ms(5);
        h.op(1, ZkOp::GetChildren, QUEUE);
        let v = check(&h.build(), QUEUE);
        assert!(v.ok, "{v:?}");
        let note = v.note.expect("the figures");
        assert!(note.starts_with("at most 1 consumers woken"), "{note}");
    }
}
