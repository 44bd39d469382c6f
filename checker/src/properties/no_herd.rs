//! always: `no_herd`. Each release wakes at most one waiter, or, for a writer's release,
//! the run of readers directly behind it.
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
//! released node. A writer's (or exclusive holder's) release may also wake the readers
//! queued directly behind it, as the read/write recipe wants; those are not counted. A
//! woken reader with another write node still ahead of its own node is not in that run,
//! and is counted. The history records no listing's children and no create's reply, so
//! the property counts such a reader only on this proof, drawn from the whole history:
//!
//! - its own node: the one contender of the lock directory that the history names
//!   (a request's path or an `Acquired` node) with the name its acquire's last create
//!   asked for, every create of that name having been sent by its client during this
//!   acquire and answered before the release's delete was sent. That node was created
//!   before the delete;
//! - a write node (write or exclusive), other than the released one, whose sequence
//!   comes before the reader's ([`sequence_precedes`], across the counter's wrap): it
//!   was created before the reader's node, so before the delete;
//! - a delete, getData or setData of that write node, sent after the release's delete
//!   was answered, and answered ok (`exists` answers ok on a missing node, so it proves
//!   nothing): the node still stood after the delete, so it stood when the delete took
//!   effect (a sequential name is never created twice).
//!
//! A reader whose node or whose writer ahead the history does not show so is not counted:
//! every herd reported is proved by the history.

use super::beliefs::{Beliefs, HoldRef};
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{basename, is_writer, same_basename};
use std::collections::BTreeMap;
use zklock_recipe::SessionState;
use zklock_recipe::history::{Event, EventKind, FaultKind, History, LockRole, ZkOp};
use zklock_recipe::lock::naming::{LockNode, sequence_precedes};

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
    /// The readers among them woken by a writer's release with another writer still
    /// ahead of them, and that writer's node.
    ahead: Vec<(u32, &'h str)>,
    answers: Answers,
    /// The lock directory's nodes as the history shows them; gathered on first need.
    nodes: Option<Nodes<'h>>,
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
    /// The readers among them with another writer ahead, and that writer's node.
    ahead: Vec<(u32, &'h str)>,
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
            ahead: Vec::new(),
            answers: Answers::default(),
            nodes: None,
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
        self.waiters[step.slot].start(role, step.index);
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
                ahead: self.ahead.clone(),
            });
        }
    }

    /// Whether the release (the delete of `step`, of the node `deleted`) woke more
    /// than one waiter (a herd), kept in `woken` with the index of each one's first
    /// request after, the readers a writer's release may wake left out. Once no herd is
    /// possible any more (fewer than two waiters woken or still to be seen), the search
    /// stops.
    fn herd_woken_by(&mut self, step: Step<'h>, deleted: &str, released: &HoldRef<'_>) -> bool {
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
            let blocked = w.active && s != step.slot && w.blocked_on_watch();
            let woken_if_looks =
                blocked && (w.watches_dir || w.watched.iter().any(|p| same_basename(p, deleted)));
            self.pending[s] = woken_if_looks;
            pending += usize::from(woken_if_looks);
        }
        self.woken.clear();
        self.ahead.clear();
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
        if self.woken.len() > 1 && released.is_writer() {
            self.excuse_readers_behind(step, deleted);
        }
        self.woken.len() > 1
    }

    /// Leaves out of `woken` the readers that a writer's release (the delete of `step`,
    /// of the node `deleted`) may wake: all but those the history proves had another
    /// write node ahead of their own (see the module's docs).
    fn excuse_readers_behind(&mut self, step: Step<'h>, deleted: &str) {
        if self
            .woken
            .iter()
            .all(|&(c, _)| self.waiters[self.slots.of(c)].is_writer())
        {
            return;
        }
        let answered = answer_index(self.history, step);
        let nodes = self
            .nodes
            .get_or_insert_with(|| Nodes::gather(self.history, self.slots, self.dir));
        let (waiters, slots, ahead) = (&self.waiters, self.slots, &mut self.ahead);
        self.woken.retain(|&(c, _)| {
            let w = &waiters[slots.of(c)];
            if w.is_writer() {
                return true;
            }
            let writer = w.own_create.and_then(|create| {
                nodes.writer_ahead(c, create, w.since, deleted, step.index, answered)
            });
            ahead.extend(writer.map(|n| (c, n)));
            writer.is_some()
        });
    }
}

/// The index of the answer ok to the request of `step` (a delete), or the history's
/// length if it has none.
fn answer_index(history: &History, step: Step<'_>) -> usize {
    let EventKind::OpInvoke { op_id, .. } = step.event.kind else {
        return step.index;
    };
    let client = step.event.client;
    let is_answer = |e: &Event| {
        e.client == client && matches!(e.kind, EventKind::OpOk { op_id: id } if id == op_id)
    };
    let after = history.events[step.index..].iter().position(is_answer);
    after.map_or(history.events.len(), |at| step.index + at)
}

/// What the history shows of the lock directory's nodes: what [`NoHerd`] needs to place
/// a woken reader behind another writer. Gathered in one pass, at the first writer's
/// release that wakes a reader and someone else.
#[derive(Debug, Default)]
struct Nodes<'h> {
    /// Each contender of the directory the history names, once.
    named: Vec<Named<'h>>,
    /// Each create in the directory: its client, the name it asked for (the node's name
    /// but for its sequence), when it was sent, and when answered (if ever).
    creates: Vec<Create<'h>>,
}

#[derive(Debug)]
struct Named<'h> {
    name: &'h str,
    sequence: i32,
    writer: bool,
    /// The latest index at which a request that shows the node standing (a delete,
    /// getData or setData answered ok) was sent.
    stood_at: Option<usize>,
}

#[derive(Debug)]
struct Create<'h> {
    client: u32,
    name: &'h str,
    sent: usize,
    answered: Option<usize>,
}

/// A request whose answer [`Nodes::gather`] waits for.
#[derive(Clone, Copy, Debug)]
enum Asked {
    /// A delete, getData or setData of the named node of this index.
    Stands(usize),
    /// The create of this index in `creates`.
    Create(usize),
}

impl<'h> Nodes<'h> {
    fn gather(history: &'h History, slots: &Slots, dir: &str) -> Nodes<'h> {
        let mut nodes = Nodes::default();
        let mut by_name: BTreeMap<&'h str, Option<usize>> = BTreeMap::new();
        let mut asked: BTreeMap<(usize, u64), (Asked, usize)> = BTreeMap::new();
        for (i, e) in history.events.iter().enumerate() {
            let slot = || slots.of(e.client);
            match &e.kind {
                EventKind::OpInvoke {
                    op_id, op, path, ..
                } => {
                    let Some(name) = child_of(trim_slashes(path), dir) else {
                        continue;
                    };
                    if *op == ZkOp::Create {
                        nodes.creates.push(Create {
                            client: e.client,
                            name,
                            sent: i,
                            answered: None,
                        });
                        let at = nodes.creates.len() - 1;
                        asked.insert((slot(), *op_id), (Asked::Create(at), i));
                        continue;
                    }
                    let Some(at) = nodes.name(&mut by_name, name) else {
                        continue;
                    };
                    if matches!(op, ZkOp::Delete | ZkOp::GetData | ZkOp::SetData) {
                        asked.insert((slot(), *op_id), (Asked::Stands(at), i));
                    }
                }
                EventKind::Acquired { node, .. } => {
                    // A node is recorded by its path, or by its name alone.
                    let name = match node.contains('/') {
                        true => child_of(trim_slashes(node), dir),
                        false => Some(node.as_str()),
                    };
                    if let Some(name) = name {
                        nodes.name(&mut by_name, name);
                    }
                }
                EventKind::OpOk { op_id }
                | EventKind::OpFail { op_id, .. }
                | EventKind::OpUnknown { op_id } => {
                    let Some((what, sent)) = asked.remove(&(slot(), *op_id)) else {
                        continue;
                    };
                    let ok = matches!(e.kind, EventKind::OpOk { .. });
                    match what {
                        Asked::Create(at) => nodes.creates[at].answered = Some(i),
                        Asked::Stands(at) if ok => {
                            let stood = &mut nodes.named[at].stood_at;
                            *stood = (*stood).max(Some(sent));
                        }
                        Asked::Stands(_) => {}
                    }
                }
                _ => {}
            }
        }
        nodes
    }

    /// The index in `named` of the contender `name`, added if new; `None` if the name is
    /// no contender's.
    fn name(
        &mut self,
        by_name: &mut BTreeMap<&'h str, Option<usize>>,
        name: &'h str,
    ) -> Option<usize> {
        *by_name.entry(name).or_insert_with(|| {
            let node = LockNode::parse(name)?;
            self.named.push(Named {
                name,
                sequence: node.sequence,
                writer: node.kind.is_writer(),
                stood_at: None,
            });
            Some(self.named.len() - 1)
        })
    }

    /// The write node, other than `released`, that the history proves stood ahead of
    /// the node of `client`'s acquire (begun at `since`, its last create in the directory
    /// asking for `create`) when the release's delete, sent at `sent` and answered at
    /// `answered`, took effect, if any. See the module's docs.
    fn writer_ahead(
        &self,
        client: u32,
        create: &str,
        since: usize,
        released: &str,
        sent: usize,
        answered: usize,
    ) -> Option<&'h str> {
        let asked = basename(create);
        // Every node of that name came from this acquire, before the delete.
        let ours = |c: &Create<'_>| {
            c.client == client && c.sent >= since && c.answered.is_some_and(|a| a < sent)
        };
        if !self.creates.iter().filter(|c| c.name == asked).all(ours) {
            return None;
        }
        let mut own = self.named.iter().filter(|n| is_named_by(n.name, asked));
        let (Some(own), None) = (own.next(), own.next()) else {
            return None;
        };
        let ahead = self.named.iter().find(|n| {
            n.writer
                && !same_basename(n.name, released)
                && sequence_precedes(n.sequence, own.sequence)
                && n.stood_at.is_some_and(|at| at > answered)
        });
        ahead.map(|n| n.name)
    }
}

/// The name of `path` if it is a child of `dir`.
fn child_of<'p>(path: &'p str, dir: &str) -> Option<&'p str> {
    let name = path.strip_prefix(dir)?.strip_prefix('/')?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// Whether `name` is what a sequential create asking for `asked` makes: `asked` and the
/// counter's ten digits, or, once it wrapped, '-' and nine or ten.
fn is_named_by(name: &str, asked: &str) -> bool {
    let Some(suffix) = name.strip_prefix(asked) else {
        return false;
    };
    let digits = suffix.strip_prefix('-').unwrap_or(suffix);
    matches!(suffix.len(), 10 | 11)
        && matches!(digits.len(), 9 | 10)
        && digits.bytes().all(|b| b.is_ascii_digit())
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
    /// The path of its last create in the lock directory: where a writer's release
    /// looks for the node it queued with.
    own_create: Option<&'h str>,
    /// The index of its `AcquireInvoked`.
    since: usize,
}

impl<'h> Waiter<'h> {
    fn start(&mut self, role: LockRole, since: usize) {
        self.active = true;
        self.since = since;
        self.own_create = None;
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
        if op == ZkOp::Create && child_of(path, dir).is_some() {
            self.own_create = Some(path);
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
        .map(|(c, j)| match herd.ahead.iter().find(|(r, _)| r == c) {
            Some((_, writer)) => (*j, format!("c{c} woken, with writer {writer} still ahead")),
            None => (*j, format!("c{c} woken")),
        })
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
