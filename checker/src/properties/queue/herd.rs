//! always: `queue_no_herd`: no change of the queue wakes more than
//! [`WOKEN_PER_CHANGE_MAX`] consumers; the watch notifications and getChildren listings
//! per completed item are reported beside it.
//!
//! In a simulated run, a change is a watch event's type and path at one instant: every
//! watcher of a node is told of its change at once (a delayed delivery splits a change,
//! which only makes the measure lenient). In a run of parallel clients (a real server),
//! each client hears of a change at its own instant, so a notification is charged to the
//! write that caused it ([`Changes::Parallel`]): the one write on the watched path
//! (a create or delete of a child, a delete, create or setData of the node) whose
//! request was in flight between the client's last watching request on that path and the
//! notification. Where no write or several fit (a session's expiry deleting an
//! ephemeral, writes racing), the notification is a change of its own: lenient again,
//! never a herd that did not happen.
//!
//! A herd-free consumer wakes one consumer per change: only the take lock's holder
//! watches the queue and the oldest locked item, and each take-lock waiter watches its
//! own predecessor. The bound is 2, not 1, because a watch is one-shot and cannot be
//! withdrawn: a holder woken by the oldest locked item's lock leaves its queue watch
//! standing, and that watch may fire with the next holder's. A naive consumer wakes
//! every idle consumer at every produce and every completion: with three consumers or
//! more idle at once, over the bound. The per-item figures depend on how often consumers
//! are idle (the producer's pace), so they are reported, not judged; the figures of both
//! shipped consumers are in docs/recipes.md.

use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::EventType;
use zklock_recipe::history::{EventKind, History, ZkOp};
use zklock_recipe::path::parent;

pub const NAME: &str = "queue_no_herd";

/// Most consumers one change may wake that is not a herd.
pub const WOKEN_PER_CHANGE_MAX: usize = 2;

/// How a history's notifications are grouped into changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changes {
    /// By instant, path and type: a simulated run, whose watchers hear of a change at once.
    Instant,
    /// By the write that caused each: a run of parallel clients (see the module's docs).
    Parallel,
}

/// A change: its cause (a write's index, or the instant it was heard of), path and type.
type ChangeKey<'h> = (Cause, &'h str, String);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    Write(usize),
    Instant(u64),
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

/// The verdict on a simulated run's `history`.
pub fn check(history: &History) -> Verdict {
    check_with(history, Changes::Instant)
}

/// The verdict on `history`, its changes grouped as `changes` says.
pub fn check_with(history: &History, changes: Changes) -> Verdict {
    let QueueFigures {
        notifications,
        listings,
        completed,
    } = figures(history);
    let writes = match changes {
        Changes::Instant => None,
        Changes::Parallel => Some(Writes::of(history)),
    };
    // Each change: the events that told a consumer of it.
    let mut told_by_change: BTreeMap<ChangeKey<'_>, Vec<usize>> = BTreeMap::new();
    // By client and path: its last watching request there.
    let mut watched_from: BTreeMap<(u32, &str), usize> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        let (event_type, path) = match &e.kind {
            EventKind::OpInvoke {
                path, watch: true, ..
            } => {
                watched_from.insert((e.client, &**path), i);
                continue;
            }
            EventKind::WatchEvent { event_type, path } => (event_type, path),
            _ => continue,
        };
        let from = watched_from
            .get(&(e.client, path.as_str()))
            .copied()
            .unwrap_or(0);
        let cause = writes
            .as_ref()
            .and_then(|w| w.cause(i, from, *event_type, path))
            .map_or(Cause::Instant(e.time_us), Cause::Write);
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
    /// at an instant of its own, as a real server's clients hear it.
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
        h
    }

    #[test]
    fn a_real_runs_notifications_of_one_write_are_one_change() {
        let h = one_produce_heard_by_three().build();
        let v = check_with(&h, Changes::Parallel);
        assert!(!v.ok, "{v:?}");
        let summary = &v.report.as_ref().expect("a violation").summary;
        assert!(summary.contains("woke 3 consumers"), "{summary}");
        // By instant, as a simulated run is judged, each is a change of its own.
        assert!(check(&h).ok);
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
        let v = check_with(&h.build(), Changes::Parallel);
        assert!(v.ok, "lenient where the cause is ambiguous: {v:?}");
    }

    #[test]
    fn a_write_answered_before_a_consumer_watched_again_did_not_wake_it() {
        let mut h = one_produce_heard_by_three();
        // Consumer 1 watches again; a second produce tells it and consumer 2 (who also
        // watched again): two consumers, one change.
        h.op(1, ZkOp::GetChildren, QUEUE);
        h.op(2, ZkOp::GetChildren, QUEUE);
        let create = h.invoke(0, ZkOp::Create, "/queue/item-");
        h.ok(0, create);
        notify(&mut h, 1);
        notify(&mut h, 2);
        let v = check_with(&h.build(), Changes::Parallel);
        // The first produce's three wakes are the widest change, not five.
        let summary = &v.report.as_ref().expect("a violation").summary;
        assert!(summary.contains("woke 3 consumers"), "{summary}");
    }
}
