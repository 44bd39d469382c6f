//! always: `no_herd`. Each release wakes at most one waiter.
//!
//! A release is a holder's `Delete` of its own lock node after its `ReleaseInvoked`,
//! answered `OpOk`. A waiter is woken by it when, at the delete, it was blocked on a
//! watch this delete fires, and its first request after the delete is a listing of the
//! lock directory or a request on the released node itself. Blocked on such a watch means: acquiring, connected, its
//! session alive, no request in flight, its last request answered ok (not backing off
//! after a failure), and either that last request was a listing of the directory (a
//! directory watch, which every delete fires) or a request on the released node was
//! answered ok since its last listing (a watch on that node). The window closes at the next delete or
//! fault, so each wake is charged to the release that caused it.
//!
//! The grace: a correct recipe wakes exactly one waiter, the successor watching the
//! released node. A writer's release may also wake every reader queued behind it, as
//! the read/write recipe wants; those readers are not counted.

use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{BeliefTracker, Hold, basename, is_crash, is_writer};
use std::collections::{BTreeMap, BTreeSet};
use zklock_recipe::SessionState;
use zklock_recipe::history::{Event, EventKind, History, LockRole, ZkOp};

pub const NAME: &str = "no_herd";

/// A client in the middle of an acquire.
#[derive(Clone, Debug)]
struct Waiter {
    role: LockRole,
    /// Paths answered ok since its last listing of the lock directory: the node
    /// watches it may be blocked on.
    watched: BTreeSet<String>,
    /// Whether its last request answered ok was the listing itself: then it waits on a
    /// watch of the whole directory (every listing is followed by a node watch in a
    /// recipe that watches its predecessor).
    watches_dir: bool,
    /// Requests in flight, by op id, with their paths.
    in_flight: BTreeMap<u64, String>,
    /// Its last request failed: it is backing off to retry, not waiting on a watch.
    last_failed: bool,
    /// Disconnected, or its session ended: whatever it does next is recovery.
    unsettled: bool,
}

impl Waiter {
    fn blocked_on_watch(&self) -> bool {
        self.in_flight.is_empty() && !self.last_failed && !self.unsettled
    }
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    Verdict::from_violation(NAME, first_herd(history, cfg))
}

fn first_herd(history: &History, cfg: &CheckConfig) -> Option<Violation> {
    let dir = cfg.lock_path.trim_end_matches('/');
    let ok: BTreeSet<(u32, u64)> = history
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::OpOk { op_id } => Some((e.client, op_id)),
            _ => None,
        })
        .collect();
    let mut tracker = BeliefTracker::default();
    let mut releasing: BTreeMap<u32, Hold> = BTreeMap::new();
    let mut waiters: BTreeMap<u32, Waiter> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        let c = e.client;
        match &e.kind {
            EventKind::ReleaseInvoked => {
                if let Some(h) = tracker.hold_of(c) {
                    releasing.insert(c, h.clone());
                }
            }
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Delete,
                path,
            } if ok.contains(&(c, *op_id))
                && releasing
                    .get(&c)
                    .is_some_and(|h| basename(&h.node) == basename(path)) =>
            {
                let released = releasing.remove(&c).expect("checked above");
                let woken = woken_by(history, i, dir, path, &released, &waiters);
                if woken.len() > 1 {
                    return Some(report(history, i, &released, &woken));
                }
            }
            _ => {}
        }
        tracker.observe(i, e);
        track_waiters(&mut waiters, e, dir);
    }
    None
}

fn track_waiters(waiters: &mut BTreeMap<u32, Waiter>, e: &Event, dir: &str) {
    let c = e.client;
    if let EventKind::AcquireInvoked { role, .. } = &e.kind {
        waiters.insert(
            c,
            Waiter {
                role: *role,
                watched: BTreeSet::new(),
                watches_dir: false,
                in_flight: BTreeMap::new(),
                last_failed: false,
                unsettled: false,
            },
        );
        return;
    }
    let Some(w) = waiters.get_mut(&c) else {
        return;
    };
    match &e.kind {
        EventKind::Acquired { .. } | EventKind::AcquireFailed { .. } => {
            waiters.remove(&c);
        }
        EventKind::OpInvoke { op_id, op, path } => {
            let path = path.trim_end_matches('/').to_owned();
            if *op == ZkOp::GetChildren && path == dir {
                w.watched.clear();
            }
            w.in_flight.insert(*op_id, path);
        }
        EventKind::OpOk { op_id } => {
            if let Some(path) = w.in_flight.remove(op_id) {
                w.watches_dir = path == dir;
                if !w.watches_dir {
                    w.watched.insert(path);
                }
            }
            w.last_failed = false;
        }
        EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
            w.in_flight.remove(op_id);
            w.last_failed = true;
        }
        EventKind::Session { state } => w.unsettled = *state != SessionState::Connected,
        _ if is_crash(e) => {
            waiters.remove(&c);
        }
        _ => {}
    }
}

/// The waiters the delete at `at` woke, with the index of each one's first request after.
fn woken_by(
    history: &History,
    at: usize,
    dir: &str,
    deleted: &str,
    released: &Hold,
    waiters: &BTreeMap<u32, Waiter>,
) -> Vec<(u32, usize)> {
    // A woken waiter's first move is to look again: list the directory, or touch the node
    // that went (re-create it, in a one-node lock). A waiter caught between its listing
    // and its watch (real, parallel histories) sends a request on its predecessor
    // instead: that is the step it was already taking, not a wake.
    let wake_request = |op: ZkOp, p: &str| {
        let p = p.trim_end_matches('/');
        (op == ZkOp::GetChildren && p == dir) || basename(p) == basename(deleted)
    };
    // A writer's release frees the readers queued behind it: they may all wake.
    let excused = |w: &Waiter| released.is_writer() && !is_writer(w.role);
    let watched_released =
        |w: &Waiter| w.watches_dir || w.watched.iter().any(|p| basename(p) == basename(deleted));
    let mut pending: BTreeSet<u32> = waiters
        .iter()
        .filter(|(c, w)| {
            **c != released.client && w.blocked_on_watch() && watched_released(w) && !excused(w)
        })
        .map(|(c, _)| *c)
        .collect();
    let mut woken = Vec::new();
    for (j, e) in history.events.iter().enumerate().skip(at + 1) {
        if pending.is_empty() {
            break;
        }
        match &e.kind {
            EventKind::OpInvoke {
                op: ZkOp::Delete, ..
            }
            | EventKind::Fault { .. } => break,
            EventKind::OpInvoke { op, path, .. } => {
                // Only a waiter's first request after the delete tells whether it woke.
                let first = pending.remove(&e.client);
                if first && wake_request(*op, path) {
                    woken.push((e.client, j));
                }
            }
            EventKind::Session { .. } => {
                // Reconnection work is not a wake.
                pending.remove(&e.client);
            }
            _ => {}
        }
    }
    woken
}

fn report(history: &History, delete: usize, released: &Hold, woken: &[(u32, usize)]) -> Violation {
    let names: Vec<String> = woken.iter().map(|(c, _)| format!("c{c}")).collect();
    let summary = format!(
        "c{}'s release of {} (token {}) at {} woke {} waiters: {}",
        released.client,
        released.node,
        released.token,
        at(history, delete),
        woken.len(),
        names.join(", ")
    );
    let roles: Vec<(usize, String)> = woken
        .iter()
        .map(|(c, j)| (*j, format!("c{c} woken")))
        .collect();
    let mut proof: Vec<(usize, &str)> = vec![(delete, "the release deletes the holder's node")];
    proof.extend(roles.iter().map(|(j, r)| (*j, r.as_str())));
    Violation::new(NAME, history, summary, &proof)
}
