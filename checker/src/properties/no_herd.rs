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

use super::beliefs::{Beliefs, HoldRef};
use super::index::HistoryIndex;
use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{basename, has_basename, is_crash, is_writer};
use zklock_recipe::SessionState;
use zklock_recipe::history::{Event, EventKind, History, LockRole, ZkOp};

pub const NAME: &str = "no_herd";

/// A client in the middle of an acquire. Paths are borrowed from the history, and a
/// waiter's lists are cleared rather than dropped, so following waiters allocates only
/// while the lists first grow.
#[derive(Clone, Debug, Default)]
struct Waiter<'h> {
    /// Whether the client is acquiring at all; the rest is stale when not.
    active: bool,
    role: Option<LockRole>,
    /// Paths answered ok since its last listing of the lock directory: the node watches
    /// it may be blocked on.
    watched: Vec<&'h str>,
    /// Whether its last request answered ok was the listing itself: then it waits on a
    /// watch of the whole directory (every listing is followed by a node watch in a
    /// recipe that watches its predecessor).
    watches_dir: bool,
    /// Requests in flight: op id, whether it is on the lock directory, and its path.
    in_flight: Vec<(u64, bool, &'h str)>,
    /// Its last request failed: it is backing off to retry, not waiting on a watch.
    last_failed: bool,
    /// Disconnected, or its session ended: whatever it does next is recovery.
    unsettled: bool,
}

impl<'h> Waiter<'h> {
    fn start(&mut self, role: LockRole) {
        self.active = true;
        self.role = Some(role);
        self.watched.clear();
        self.watches_dir = false;
        self.in_flight.clear();
        self.last_failed = false;
        self.unsettled = false;
    }

    fn blocked_on_watch(&self) -> bool {
        self.in_flight.is_empty() && !self.last_failed && !self.unsettled
    }

    fn is_writer(&self) -> bool {
        self.role.is_some_and(is_writer)
    }

    fn take_in_flight(&mut self, op_id: u64) -> Option<(bool, &'h str)> {
        let at = self.in_flight.iter().position(|(id, ..)| *id == op_id)?;
        let (_, on_dir, path) = self.in_flight.swap_remove(at);
        Some((on_dir, path))
    }

    /// Records a request; a reused op id replaces the earlier one (as a map would).
    fn put_in_flight(&mut self, op_id: u64, on_dir: bool, path: &'h str) {
        match self.in_flight.iter_mut().find(|(id, ..)| *id == op_id) {
            Some(entry) => *entry = (op_id, on_dir, path),
            None => self.in_flight.push((op_id, on_dir, path)),
        }
    }
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Verdict {
    Verdict::from_violation(NAME, first_herd(index, cfg))
}

/// Whether `client`'s request `op_id` was answered ok anywhere in the history. The answer
/// usually comes a few events after `from`, so the search starts there.
fn answered_ok(history: &History, client: u32, op_id: u64, from: usize) -> bool {
    let is_ok = |e: &Event| {
        e.client == client && matches!(e.kind, EventKind::OpOk { op_id: id } if id == op_id)
    };
    history.events[from..].iter().any(is_ok) || history.events[..from].iter().any(is_ok)
}

fn first_herd(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Option<Violation> {
    let history = index.history;
    let dir = cfg.lock_path.trim_end_matches('/');
    let mut beliefs = Beliefs::new(&index.slots);
    let mut releasing: Vec<Option<HoldRef<'_>>> = index.slots.table();
    let mut waiters: Vec<Waiter<'_>> = index.slots.table();
    let mut wake = Wake::default();
    for (i, e) in history.events.iter().enumerate() {
        let s = index.slots.of(e.client);
        match &e.kind {
            EventKind::ReleaseInvoked => {
                if let Some(h) = beliefs.hold_of(s) {
                    releasing[s] = Some(*h);
                }
            }
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Delete,
                path,
            } if releasing[s].is_some_and(|h| has_basename(path, basename(h.node)))
                && answered_ok(history, e.client, *op_id, i) =>
            {
                let released = releasing[s].take().expect("checked above");
                let woken = wake.woken_by(index, i, dir, path, &released, &waiters);
                if woken.len() > 1 {
                    return Some(report(history, i, &released, woken));
                }
            }
            _ => {}
        }
        beliefs.observe(i, e, s);
        track_waiter(&mut waiters[s], e, dir);
    }
    None
}

fn track_waiter<'h>(w: &mut Waiter<'h>, e: &'h Event, dir: &str) {
    if let EventKind::AcquireInvoked { role, .. } = &e.kind {
        w.start(*role);
        return;
    }
    if !w.active {
        return;
    }
    match &e.kind {
        EventKind::Acquired { .. } | EventKind::AcquireFailed { .. } => w.active = false,
        EventKind::OpInvoke { op_id, op, path } => {
            let path = path.trim_end_matches('/');
            let on_dir = path == dir;
            if *op == ZkOp::GetChildren && on_dir {
                w.watched.clear();
            }
            w.put_in_flight(*op_id, on_dir, path);
        }
        EventKind::OpOk { op_id } => {
            if let Some((on_dir, path)) = w.take_in_flight(*op_id) {
                w.watches_dir = on_dir;
                if !on_dir && !w.watched.contains(&path) {
                    w.watched.push(path);
                }
            }
            w.last_failed = false;
        }
        EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
            w.take_in_flight(*op_id);
            w.last_failed = true;
        }
        EventKind::Session { state } => w.unsettled = *state != SessionState::Connected,
        _ if is_crash(e) => w.active = false,
        _ => {}
    }
}

/// Working space for judging each release, kept across releases.
#[derive(Debug, Default)]
struct Wake {
    /// By client slot: blocked on a watch the delete fired, first request not yet seen.
    pending: Vec<bool>,
    /// The waiters woken, with the index of each one's first request after the delete.
    woken: Vec<(u32, usize)>,
}

impl Wake {
    /// The waiters the delete at `at` woke, with the index of each one's first request
    /// after.
    fn woken_by(
        &mut self,
        index: &HistoryIndex<'_>,
        at: usize,
        dir: &str,
        deleted: &str,
        released: &HoldRef<'_>,
        waiters: &[Waiter<'_>],
    ) -> &[(u32, usize)] {
        let deleted = basename(deleted);
        // A woken waiter's first move is to look again: list the directory, or touch the
        // node that went (re-create it, in a one-node lock). A waiter caught between its
        // listing and its watch (real, parallel histories) sends a request on its
        // predecessor instead: that is the step it was already taking, not a wake.
        let wake_request = |op: ZkOp, p: &str| {
            let p = p.trim_end_matches('/');
            (op == ZkOp::GetChildren && p == dir) || has_basename(p, deleted)
        };
        // A writer's release frees the readers queued behind it: they may all wake.
        let excused = |w: &Waiter<'_>| released.is_writer() && !w.is_writer();
        let watched_released =
            |w: &Waiter<'_>| w.watches_dir || w.watched.iter().any(|p| has_basename(p, deleted));
        self.pending.clear();
        self.pending
            .extend(waiters.iter().enumerate().map(|(s, w)| {
                w.active
                    && index.slots.id(s) != released.client
                    && w.blocked_on_watch()
                    && watched_released(w)
                    && !excused(w)
            }));
        let mut pending = self.pending.iter().filter(|p| **p).count();
        self.woken.clear();
        for (j, e) in index.history.events.iter().enumerate().skip(at + 1) {
            if pending == 0 {
                break;
            }
            match &e.kind {
                EventKind::OpInvoke {
                    op: ZkOp::Delete, ..
                }
                | EventKind::Fault { .. } => break,
                EventKind::OpInvoke { op, path, .. } => {
                    // Only a waiter's first request after the delete tells whether it woke.
                    let first = std::mem::take(&mut self.pending[index.slots.of(e.client)]);
                    pending -= usize::from(first);
                    if first && wake_request(*op, path) {
                        self.woken.push((e.client, j));
                    }
                }
                EventKind::Session { .. } => {
                    // Reconnection work is not a wake.
                    let first = std::mem::take(&mut self.pending[index.slots.of(e.client)]);
                    pending -= usize::from(first);
                }
                _ => {}
            }
        }
        &self.woken
    }
}

fn report(
    history: &History,
    delete: usize,
    released: &HoldRef<'_>,
    woken: &[(u32, usize)],
) -> Violation {
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
