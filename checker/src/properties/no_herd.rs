//! always: `no_herd`. Each release wakes at most one waiter.
//!
//! A release is a holder's `Delete` of its own lock node after its `ReleaseInvoked`,
//! answered `OpOk`. A waiter is woken by it when, at the delete, it was blocked on a
//! watch this delete fires, and its first request after the delete is a listing of the
//! lock directory or a request on the released node itself. Blocked on such a watch
//! means: acquiring, connected, its session alive, no request in flight, its last request
//! answered ok (not backing off after a failure), and either that last request was a
//! watching listing of the directory (a directory watch, which every delete fires) or a
//! watching request on the released node was answered ok since its last listing (a watch
//! on that node). Requests that leave no watch wait on nothing. The window closes at the
//! next delete or fault, so each wake is charged to the release that caused it.
//!
//! The grace: a correct recipe wakes exactly one waiter, the successor watching the
//! released node. A writer's release may also wake every reader queued behind it, as
//! the read/write recipe wants; those readers are not counted.

use super::beliefs::{Beliefs, HoldRef};
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{is_writer, same_basename};
use zklock_recipe::SessionState;
use zklock_recipe::history::{Event, EventKind, FaultKind, History, LockRole, ZkOp};

pub const NAME: &str = "no_herd";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<NoHerd<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct NoHerd<'h> {
    history: &'h History,
    slots: &'h Slots,
    /// The lock directory, without a trailing '/'.
    dir: &'h str,
    /// By client slot: the hold it is releasing, from its `ReleaseInvoked` to its delete.
    releasing: Vec<Option<HoldRef<'h>>>,
    waiters: Vec<Waiter<'h>>,
    /// Working space for each release, kept across releases: by client slot, whether
    /// the waiter is woken if its first request after the delete looks again.
    pending: Vec<bool>,
    /// The waiters a release woke, with the index of each one's first request after.
    woken: Vec<(u32, usize)>,
    answers: Answers,
    /// The first release that woke more than one waiter.
    found: Option<Herd<'h>>,
}

/// A release that woke a herd.
#[derive(Debug)]
struct Herd<'h> {
    /// The index of the delete.
    delete: usize,
    released: HoldRef<'h>,
    /// The waiters woken, with the index of each one's first request after the delete.
    woken: Vec<(u32, usize)>,
}

impl<'h> Judge<'h> for NoHerd<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self {
        NoHerd {
            history,
            slots,
            dir: cfg.lock_path.trim_end_matches('/'),
            releasing: slots.table(),
            waiters: slots.table(),
            pending: slots.table(),
            woken: Vec::new(),
            answers: Answers::default(),
            found: None,
        }
    }

    #[inline(always)]
    fn request(&mut self, step: Step<'h>, op_id: u64, op: ZkOp, path: &'h str, watch: bool) {
        if self.found.is_some() {
            return;
        }
        if op == ZkOp::Delete && self.releasing[step.slot].is_some() {
            self.delete(step, op_id, path);
            if self.found.is_some() {
                return;
            }
        }
        self.waiters[step.slot].request(op_id, op, path, watch, self.dir);
    }

    #[inline]
    fn reply(&mut self, step: Step<'h>, op_id: u64, ok: bool) {
        self.waiters[step.slot].reply(op_id, ok);
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, role: LockRole, _: &Beliefs<'h>) {
        self.waiters[step.slot].start(role);
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, _: i64, _: &'h str, _: &Beliefs<'h>) {
        self.waiters[step.slot].active = false;
    }

    #[inline]
    fn acquire_failed(&mut self, step: Step<'h>) {
        self.waiters[step.slot].active = false;
    }

    #[inline]
    fn release_invoked(&mut self, step: Step<'h>, beliefs: &Beliefs<'h>) {
        if let Some(h) = beliefs.hold_of(step.slot) {
            self.releasing[step.slot] = Some(*h);
        }
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        let w = &mut self.waiters[step.slot];
        if w.active {
            w.unsettled = state != SessionState::Connected;
        }
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        if fault == FaultKind::Crash {
            self.waiters[step.slot].active = false;
        }
    }

    fn finish(self) -> Verdict {
        let violation = self.found.map(|herd| report(self.history, &herd));
        Verdict::from_violation(NAME, violation)
    }
}

impl<'h> NoHerd<'h> {
    /// A delete by a client releasing a hold: when it deletes that hold's node and is
    /// answered ok, it is the release, and the waiters it woke are counted. Kept out of
    /// the walk's loop: once per release, not per event.
    #[inline(never)]
    fn delete(&mut self, step: Step<'h>, op_id: u64, path: &'h str) {
        let s = step.slot;
        let Some(node) = self.releasing[s].map(|h| h.node) else {
            return;
        };
        if !(same_basename(path, node)
            && self
                .answers
                .answered_ok(self.history, self.slots, step, op_id))
        {
            return;
        }
        let released = self.releasing[s].take().expect("checked above");
        if self.herd_woken_by(step, node, &released) {
            self.found = Some(Herd {
                delete: step.index,
                released,
                woken: self.woken.clone(),
            });
        }
    }

    /// Whether the release (the delete of `step`, of the node `deleted`) woke more
    /// than one waiter (a herd), kept in `woken` with the index of each one's first
    /// request after. Once no herd is possible any more (fewer than two waiters woken or
    /// still to be seen), the search stops.
    fn herd_woken_by(&mut self, step: Step<'_>, deleted: &str, released: &HoldRef<'_>) -> bool {
        let dir = self.dir;
        // A woken waiter's first move is to look again: list the directory, or touch the
        // node that went (re-create it, in a one-node lock). A waiter caught between its
        // listing and its watch (real, parallel histories) sends a request on its
        // predecessor instead: that is the step it was already taking, not a wake.
        let wake_request = |op: ZkOp, p: &str| {
            let p = trim_slashes(p);
            (op == ZkOp::GetChildren && p == dir) || same_basename(p, deleted)
        };
        let mut pending = 0;
        for (s, w) in self.waiters.iter().enumerate() {
            // A writer's release frees the readers queued behind it: they may all wake.
            let excused = released.is_writer() && !w.is_writer();
            let blocked = w.active && s != step.slot && w.blocked_on_watch() && !excused;
            let woken_if_looks =
                blocked && (w.watches_dir || w.watched.iter().any(|p| same_basename(p, deleted)));
            self.pending[s] = woken_if_looks;
            pending += usize::from(woken_if_looks);
        }
        self.woken.clear();
        for (j, e) in self.history.events.iter().enumerate().skip(step.index + 1) {
            if self.woken.len() + pending < 2 {
                return false;
            }
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
                    let first = std::mem::take(&mut self.pending[self.slots.of(e.client)]);
                    pending -= usize::from(first);
                    if first && wake_request(*op, path) {
                        self.woken.push((e.client, j));
                    }
                }
                EventKind::Session { .. } => {
                    // Reconnection work is not a wake.
                    let first = std::mem::take(&mut self.pending[self.slots.of(e.client)]);
                    pending -= usize::from(first);
                }
                _ => {}
            }
        }
        self.woken.len() > 1
    }
}

/// A client in the middle of an acquire. Paths are borrowed from the history, and a
/// waiter's lists are cleared rather than dropped, so following waiters allocates only
/// while the lists first grow.
#[derive(Clone, Debug, Default)]
struct Waiter<'h> {
    /// Whether the client is acquiring at all; the rest is stale when not.
    active: bool,
    role: Option<LockRole>,
    /// Paths of watching requests answered ok since its last listing of the lock
    /// directory: the node watches it may be blocked on.
    watched: Vec<&'h str>,
    /// Whether its last request answered ok was a watching listing of the directory: then
    /// it waits on a watch of the whole directory.
    watches_dir: bool,
    /// Requests in flight: op id, whether it is on the lock directory, whether it leaves
    /// a watch, and its path.
    in_flight: Vec<(u64, bool, bool, &'h str)>,
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

    fn take_in_flight(&mut self, op_id: u64) -> Option<(bool, bool, &'h str)> {
        let at = self.in_flight.iter().position(|(id, ..)| *id == op_id)?;
        let (_, on_dir, watch, path) = self.in_flight.swap_remove(at);
        Some((on_dir, watch, path))
    }

    /// Records a request; a reused op id replaces the earlier one (as a map would).
    fn put_in_flight(&mut self, op_id: u64, on_dir: bool, watch: bool, path: &'h str) {
        match self.in_flight.iter_mut().find(|(id, ..)| *id == op_id) {
            Some(entry) => *entry = (op_id, on_dir, watch, path),
            None => self.in_flight.push((op_id, on_dir, watch, path)),
        }
    }

    /// A request sent.
    #[inline]
    fn request(&mut self, op_id: u64, op: ZkOp, path: &'h str, watch: bool, dir: &str) {
        if !self.active {
            return;
        }
        let path = trim_slashes(path);
        let on_dir = path == dir;
        if op == ZkOp::GetChildren && on_dir {
            self.watched.clear();
        }
        self.put_in_flight(op_id, on_dir, watch, path);
    }

    /// A request answered: ok, or failed (or its fate unknown).
    #[inline]
    fn reply(&mut self, op_id: u64, ok: bool) {
        if !self.active {
            return;
        }
        let sent = self.take_in_flight(op_id);
        if !ok {
            self.last_failed = true;
            return;
        }
        if let Some((on_dir, watch, path)) = sent {
            // A request that leaves no watch (a listing to find a node after a lost
            // reply, the background cleanup's reads) waits on nothing.
            self.watches_dir = on_dir && watch;
            // A path watched twice is kept twice: only whether any watched path is the
            // released node is ever asked.
            if !on_dir && watch {
                self.watched.push(path);
            }
        }
        self.last_failed = false;
    }
}

/// Which requests were answered ok, anywhere in the history.
#[derive(Debug, Default)]
struct Answers {
    /// By client slot, the op ids answered ok; gathered on first need.
    ok: Option<Vec<Vec<u64>>>,
    /// Events looked at past the near window so far, while nothing was gathered.
    scanned: usize,
}

impl Answers {
    /// How far after a request its answer is looked for before the whole history is.
    const NEAR: usize = 16;
    /// Op ids each client's list of answers first has room for (under 1 KiB).
    const ROOM: usize = 120;

    /// Whether the request `op_id` of `step`'s client was answered ok anywhere in the
    /// history. The answer usually comes a few events after the request, so it is looked
    /// for there first, then further on. A request never answered ok would cost a look at
    /// every event, so once the looks further on add up to the history's length, or one
    /// finds nothing, every answer of the history is gathered, once: at most two passes
    /// in all.
    fn answered_ok(
        &mut self,
        history: &History,
        slots: &Slots,
        step: Step<'_>,
        op_id: u64,
    ) -> bool {
        let client = step.event.client;
        let is_answer = |e: &Event| {
            e.client == client && matches!(e.kind, EventKind::OpOk { op_id: id } if id == op_id)
        };
        let near = &history.events[step.index..];
        if near.iter().take(Self::NEAR).any(is_answer) {
            return true;
        }
        if self.ok.is_none() {
            let far = near.get(Self::NEAR..).unwrap_or_default();
            let look = far
                .len()
                .min(history.events.len().saturating_sub(self.scanned));
            if let Some(at) = far[..look].iter().position(is_answer) {
                self.scanned += at + 1;
                return true;
            }
            self.scanned += look;
        }
        let ok = self.ok.get_or_insert_with(|| {
            // Room for a client's answers in a typical run, in a block small enough for
            // the allocator's quick lists (large blocks cost it a search).
            let mut ok: Vec<Vec<u64>> = (0..slots.len())
                .map(|_| Vec::with_capacity(Self::ROOM))
                .collect();
            for e in &history.events {
                if let EventKind::OpOk { op_id } = e.kind {
                    ok[slots.of(e.client)].push(op_id);
                }
            }
            ok
        });
        ok[step.slot].contains(&op_id)
    }
}

/// `path.trim_end_matches('/')`, after a look at the last byte (paths seldom end in '/').
#[inline]
fn trim_slashes(path: &str) -> &str {
    if path.ends_with('/') {
        path.trim_end_matches('/')
    } else {
        path
    }
}

fn report(history: &History, herd: &Herd<'_>) -> Violation {
    let (delete, released, woken) = (herd.delete, &herd.released, &herd.woken);
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

#[cfg(test)]
mod tests {
    use super::trim_slashes;

    #[test]
    fn trim_slashes_agrees_with_trim_end_matches() {
        for p in ["", "/", "//", "/a", "/a/", "/a//", "a", "/zklock/lock/"] {
            assert_eq!(trim_slashes(p), p.trim_end_matches('/'), "{p:?}");
        }
    }
}
