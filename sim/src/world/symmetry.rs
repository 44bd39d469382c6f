//! A state digest that is the same for two states that differ only by a permutation of
//! interchangeable clients (symmetry reduction, as in Murφ's scalarsets and TLC's
//! symmetry sets).
//!
//! Clients of one role (every client of a lock, or the readers and the writers of a
//! read/write lock, each a class) run the same workload. For each permutation π of the
//! clients that keeps every client in its class, the world encodes the state as π would
//! rename it:
//! - client `c`'s parts (connection, queues, watches, cleanup) go to position `π(c)`;
//!   timers name `π(c)`;
//! - every session is named by its owner and its place among the owner's sessions,
//!   `(π(owner), k)`, never by its number, which the server gives in creation order:
//!   in the sessions, the timers, the tree's ephemeral owners and watchers, and the
//!   values actors were given (stats, new sessions);
//! - a guid in a node's name (`_c_<session in hex>-…`, the only place a name carries a
//!   client's identity) names its session the same way, and the tree's nodes, their
//!   children and its watches are sorted after renaming, so that the names' order, which
//!   a permutation changes, does not show;
//! - what each actor was given is folded under each π from the start (`obs_sym`), since
//!   a fold cannot be renamed after the fact, and through the client's neutral renaming
//!   (`obs_sig`, for its signature, below).
//!
//! The digest is the least of these encodings' hashes over the permutations consistent
//! with the clients' signatures, not over all of them (n! encodings a state: 6 with 3
//! clients, 24 with 4). A client's signature hashes a summary of what is its own: its
//! fold of what it was given, its connection's and session's states and flags, the
//! lengths of its queues and of its past sessions, its sessions and the timers that name
//! it (with their places among all timers), through a neutral renaming in which its own
//! sessions are labelled by rank and every other client's session, guid included, is one
//! label. Nothing in it names a client's index or a session's number, so renaming the
//! state by a permutation σ within classes gives client `σ(c)` the signature `c` had. A
//! permutation π is consistent when, within each class, a client with a lesser signature
//! goes to a lesser position; clients of equal signatures go to their positions in every
//! order. The consistent permutations of the renamed state are therefore exactly the
//! `π ∘ σ⁻¹`, whose encodings of it are π's encodings of the state: the same set of
//! encodings, the same least hash. The digest is a function of the state up to renaming,
//! as the least over all n! permutations was, and (being the hash of one of the state's
//! renamed encodings) tells apart exactly the states that one did: a search prunes the
//! same states with either. The argument asks only that signatures be invariant, not
//! that they tell clients apart: a summary that ties two clients more often than their
//! whole parts would makes more permutations consistent, so more encodings, never another
//! set of states. The fold of what a client was given tells clients in distinct positions
//! apart nearly always (its queues and watches follow from it), so most states are
//! encoded once; only states whose clients look alike take more.
//!
//! Two states with equal digests are therefore one state renamed: their clients,
//! sessions and guids correspond one to one.
//!
//! **Why pruning on it is sound**, for a recipe that declares itself symmetric
//! (`Recipe::symmetric`): such a recipe uses a client's identity (its session id, its
//! guid, the names of other clients' nodes) only to compare it for equality, and orders
//! nodes by their sequence numbers, never by their names, so an actor given renamed values
//! ends in the renamed state. The world itself names nothing by a session's number except
//! the order of children in a listing and of watchers, which reach actors only as values
//! (covered above) or as deliveries to different clients, whose order nothing observes.
//! What remains is the world's tie-break by client index: actors woken at the same point
//! stage their requests in index order. Requests go to each client's own queue and reach
//! the server in an order the explorer chooses, sleeps become timers kept in creation
//! order (which the encoding keeps), and new sessions are named by owner, not by number;
//! only the shared resource applies two clients' operations in the order they were
//! staged, and a fenced resource may accept one and reject the other. The checker's
//! tests compare the reduced and the unreduced search on every configuration the latter
//! completes: verdicts, canaries and the set of final states up to renaming.
//!
//! Zxids are 64-bit integers like session ids and reach actors in the same values (a
//! stat), so while the last zxid could be mistaken for a session (from the first session's
//! number on) the digest falls back to the plain one, and no state is merged.

use super::digest::{Bytes, Seen};
use super::hash128::hash128;
use super::remembered;
use super::renaming::{Hex, Renamed, Renaming, find_guid};
use super::request::{Answer, Reply};
use super::{Timer, World};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use zklock_recipe::SessionId;

/// The permutations of clients that keep each client in its class: `perms[i][c]` is
/// client `c`'s position under the i-th (the first is the identity).
#[derive(Debug, Clone)]
pub(crate) struct Symmetry {
    pub(crate) perms: Arc<[Vec<usize>]>,
    /// Each client's class.
    roles: Arc<[u32]>,
}

thread_local! {
    /// The last symmetry made on this thread: every run of a search has the same roles,
    /// and working the permutations out again cost a fiftieth of a check.
    static LAST: std::cell::RefCell<Option<Symmetry>> = const { std::cell::RefCell::new(None) };
}

/// The first number a session label takes: above every session number the server gives
/// in a run of bounded steps, and formatted in hex as long as it is.
const LABEL_BASE: i64 = 0x5000_0000;
/// Sessions a client may have before labels would overlap; past it, no state is merged.
const SESSIONS_PER_CLIENT_MAX: usize = 0x100;
/// In a client's signature, the label of its own k-th session is `OWN_LABEL + k`, and
/// every other client's session is `OTHER_LABEL`: past every position's labels.
const OWN_LABEL: i64 = LABEL_BASE + (0xFE << 8);
const OTHER_LABEL: i64 = LABEL_BASE + (0xFF << 8);

impl Symmetry {
    /// The permutations within classes: clients with equal `roles[c]` are interchangeable.
    pub(crate) fn new(roles: &[u32]) -> Symmetry {
        LAST.with_borrow_mut(|last| match last {
            Some(s) if *s.roles == *roles => s.clone(),
            _ => last.insert(Symmetry::work_out(roles)).clone(),
        })
    }

    fn work_out(roles: &[u32]) -> Symmetry {
        let n = roles.len();
        let mut perms = Vec::new();
        let mut current: Vec<usize> = (0..n).collect();
        permutations(&mut current, 0, &mut |p| {
            if (0..n).all(|c| roles[p[c]] == roles[c]) {
                perms.push(p.to_vec());
            }
        });
        // The identity first, then the rest in a fixed order.
        perms.sort();
        Symmetry {
            perms: perms.into(),
            roles: roles.into(),
        }
    }

    /// Whether `perm` is consistent with the clients' signatures: within each class, a
    /// client with a lesser signature goes to a lesser position (equal signatures, any
    /// order among themselves).
    fn consistent(&self, perm: &[usize], sigs: &[u128]) -> bool {
        let n = perm.len();
        (0..n).all(|a| {
            (0..n)
                .all(|b| self.roles[a] != self.roles[b] || sigs[a] >= sigs[b] || perm[a] < perm[b])
        })
    }
}

/// Calls `f` with every permutation of `v[k..]` (v[..k] fixed).
fn permutations(v: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permutations(v, k + 1, f);
        v.swap(k, i);
    }
}

impl World {
    /// Whether the symmetric digest can tell sessions from other numbers now (see the
    /// module docs); when not, states are digested plainly.
    fn symmetric_now(&self) -> bool {
        let first_session = self.sessions.keys().next().map_or(i64::MAX, |s| s.0);
        self.tree.last_zxid() < first_session
            && self
                .clients
                .iter()
                .all(|cl| cl.ended.len() + 1 < SESSIONS_PER_CLIENT_MAX)
    }

    /// The renamings of sessions under each permutation, then each client's neutral
    /// renaming (see `neutral`), looked up again only when a session was opened (sessions
    /// are never forgotten, and their owners and ranks never change), and made only when
    /// no earlier run of this thread met the same sessions (`remembered`).
    fn renamings(&mut self, sym: &Symmetry) -> Arc<[Renaming]> {
        let cached = std::mem::take(&mut self.renamings);
        if cached.len() == sym.perms.len() + self.clients.len()
            && cached
                .first()
                .is_some_and(|r| r.sessions.len() == self.sessions.len())
        {
            return cached;
        }
        remembered::renamings(&sym.roles, self.owners().collect(), || {
            let mut made: Vec<Renaming> = sym.perms.iter().map(|p| self.renaming(p)).collect();
            made.extend((0..self.clients.len()).map(|c| self.neutral(c)));
            made
        })
    }

    /// Each session's owner and its place among the owner's sessions, by number.
    fn owners(&self) -> impl Iterator<Item = (i64, usize, i64)> + '_ {
        self.sessions.iter().map(|(id, s)| {
            let cl = &self.clients[s.client];
            let k = if *id == cl.session {
                cl.ended.len()
            } else {
                cl.ended
                    .iter()
                    .position(|(e, _)| e == id)
                    .unwrap_or(cl.ended.len())
            };
            (id.0, s.client, k as i64)
        })
    }

    /// The renaming of sessions under `perm`.
    fn renaming(&self, perm: &[usize]) -> Renaming {
        let sessions = self
            .owners()
            .map(|(id, owner, k)| {
                let label = LABEL_BASE + ((perm[owner] as i64) << 8) + k;
                (id, label, Hex::new(id), Hex::new(label))
            })
            .collect();
        Renaming::new(sessions)
    }

    /// Client `c`'s neutral renaming, for its signature: its own sessions by rank, every
    /// other client's session as one label, so that nothing depends on which client is
    /// which.
    fn neutral(&self, c: usize) -> Renaming {
        let sessions = self
            .owners()
            .map(|(id, owner, k)| {
                let label = if owner == c {
                    OWN_LABEL + k
                } else {
                    OTHER_LABEL
                };
                (id, label, Hex::new(id), Hex::new(label))
            })
            .collect();
        Renaming::new(sessions)
    }

    /// Folds a value delivered to client `c` into its folds under every permutation, and
    /// into its neutral fold (for its signature).
    pub(crate) fn observe_sym(&mut self, c: usize, v: &Seen<'_>) {
        let Some(sym) = self.symmetry.take() else {
            return;
        };
        let renamings = self.renamings(&sym);
        let mut buf = std::mem::take(&mut self.digest_buf);
        let n = sym.perms.len();
        // The value after an 8-byte place for the fold, encoded once under the first
        // renaming: when nothing in it names a session, every renaming encodes it alike.
        buf.clear();
        buf.extend_from_slice(&[0; 8]);
        let hit = encode_seen(v, &renamings[0], &mut buf);
        let cl = &mut self.clients[c];
        for i in 0..=n {
            let fold = cl.obs_sym.get(i).copied().unwrap_or(cl.obs_sig);
            if hit {
                let r = if i < n {
                    &renamings[i]
                } else {
                    &renamings[n + c]
                };
                buf.truncate(8);
                encode_seen(v, r, &mut buf);
            }
            buf[..8].copy_from_slice(&fold.to_le_bytes());
            let fold = hash128(&buf) as u64;
            match cl.obs_sym.get_mut(i) {
                Some(f) => *f = fold,
                None => cl.obs_sig = fold,
            }
        }
        self.digest_buf = buf;
        self.renamings = renamings;
        self.symmetry = Some(sym);
    }

    /// The symmetric digest (see the module docs) of the state, or of the state a run
    /// `ended` in; `None` when states are digested plainly.
    pub(crate) fn digest_sym(&mut self, ended: bool) -> Option<u128> {
        if !self.symmetric_now() {
            return None;
        }
        let sym = self.symmetry.take()?;
        let renamings = self.renamings(&sym);
        let n = sym.perms.len();
        self.tree.renamed.resize(n, None);
        let mut buf = std::mem::take(&mut self.digest_buf);
        let sigs: Vec<u128> = (0..self.clients.len())
            .map(|c| {
                buf.clear();
                self.encode_signature(c, &renamings[n + c], ended, &mut Bytes(&mut buf));
                hash128(&buf)
            })
            .collect();
        let mut best = u128::MAX;
        for (i, (perm, r)) in sym.perms.iter().zip(renamings.iter()).enumerate() {
            if !sym.consistent(perm, &sigs) {
                continue;
            }
            let tree = match self.tree.renamed[i] {
                Some(d) => d,
                None => {
                    let plain = self.tree.digest(&mut buf);
                    let d = remembered::renamed_tree(plain, r.key, || {
                        buf.clear();
                        encode_tree(self, r, &mut Bytes(&mut buf));
                        hash128(&buf)
                    });
                    self.tree.renamed[i] = Some(d);
                    d
                }
            };
            buf.clear();
            self.encode_renamed(i, perm, r, tree, ended, &mut Bytes(&mut buf));
            best = best.min(hash128(&buf));
        }
        self.digest_buf = buf;
        self.renamings = renamings;
        self.symmetry = Some(sym);
        Some(best)
    }

    /// Client `c`'s signature: a summary of what is its own (its neutral fold, states,
    /// flags, queues' lengths, sessions, and the timers that name it, with their places
    /// among all timers), through its neutral renaming, so that it does not depend on
    /// which client is which or on session numbers. Its queues' contents and watches are
    /// left to the encoding: hashing them here cost a tenth of a check, and a summary
    /// only has to be invariant (see the module docs).
    fn encode_signature(&self, c: usize, r: &Renaming, ended: bool, out: &mut Bytes<'_>) {
        let mut h = Renamed {
            inner: out,
            r,
            scratch: Vec::new(),
            hit: false,
        };
        let cl = &self.clients[c];
        cl.live_fold(cl.obs_sig).hash(&mut h);
        (cl.conn, cl.state, cl.conn_epoch).hash(&mut h);
        (cl.frozen_until, cl.partitioned_until, cl.delayed_until).hash(&mut h);
        (cl.lose_next_create, cl.crashed, cl.conn_broken).hash(&mut h);
        (cl.outbound.len(), cl.inbound.len(), cl.ended.len()).hash(&mut h);
        let mut sessions: Vec<_> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.client == c)
            .map(|(id, s)| (r.session(id.0), s.alive, s.hears, s.expiry_epoch))
            .collect();
        sessions.sort_unstable();
        sessions.hash(&mut h);
        // Only this client's timers: the others' name no client here (-1 would do, but
        // leaving them out is cheaper and as invariant).
        let own = |t: &Timer| match t {
            Timer::Sleep(cl, _)
            | Timer::Reconnect { client: cl, .. }
            | Timer::DetectDisconnect { client: cl, .. }
            | Timer::Resume { client: cl, .. }
            | Timer::Heal { client: cl, .. }
            | Timer::Undelay { client: cl, .. } => *cl == c,
            Timer::Expire { session, .. } => {
                self.sessions.get(session).is_some_and(|s| s.client == c)
            }
        };
        // Every timer left names this client: position 0.
        let mut perm = vec![1; self.clients.len()];
        perm[c] = 0;
        let mut timers: Vec<_> = self
            .timers
            .iter()
            .enumerate()
            .filter(|(_, (_, t))| own(t))
            .map(|(place, (at, t))| (place, at, renamed_timer(t, &perm, r)))
            .collect();
        // As in the state's encoding, a final state is compared without the timers'
        // creation order.
        if ended {
            timers.iter_mut().for_each(|t| t.0 = 0);
            timers.sort_unstable();
        }
        timers.hash(&mut h);
    }

    fn encode_renamed(
        &self,
        i: usize,
        perm: &[usize],
        r: &Renaming,
        tree: u128,
        ended: bool,
        out: &mut Bytes<'_>,
    ) {
        // Apart from the plain encoding, whatever its bytes.
        0xA5u8.hash(out);
        self.now_us.hash(out);
        tree.hash(out);
        let mut at = vec![0; perm.len()];
        for (c, &p) in perm.iter().enumerate() {
            at[p] = c;
        }
        let mut h = Renamed {
            inner: out,
            r,
            scratch: Vec::new(),
            hit: false,
        };
        self.clients.len().hash(&mut h);
        for &c in &at {
            let cl = &self.clients[c];
            cl.encode(cl.obs_sym[i], &mut h, hash_reply);
        }
        let mut sessions: Vec<_> = self
            .sessions
            .iter()
            .map(|(id, s)| (r.session(id.0), s.alive, s.hears, s.expiry_epoch))
            .collect();
        sessions.sort_unstable();
        sessions.hash(&mut h);
        let mut timers: Vec<_> = self
            .timers
            .iter()
            .map(|(at, t)| (at, renamed_timer(t, perm, r)))
            .collect();
        // Which of two timers due at once fires first matters to what follows; once the
        // run has ended it does not, and a final state is compared without it.
        if ended {
            timers.sort_unstable();
        }
        timers.hash(&mut h);
        self.resource.hash(&mut h);
        if !self.more_resources.is_empty() {
            self.more_resources.hash(&mut h);
        }
        self.faults.as_ref().map(|f| f.injected).hash(&mut h);
        // Times name no client: the same under every permutation.
        if self.outside_obs != 0 {
            self.outside_obs.hash(&mut h);
        }
    }
}

/// A value delivered to an actor, renamed by `r`, appended to `buf`; whether anything
/// in it may name a session.
fn encode_seen(v: &Seen<'_>, r: &Renaming, buf: &mut Vec<u8>) -> bool {
    let mut h = Renamed {
        inner: &mut Bytes(buf),
        r,
        scratch: Vec::new(),
        hit: false,
    };
    std::mem::discriminant(v).hash(&mut h);
    match v {
        Seen::Reply(reply) => hash_reply(reply, &mut h),
        other => other.hash(&mut h),
    }
    h.hit
}

/// A reply, a listing's names renamed and sorted: a symmetric recipe does not depend on
/// a listing's order, which renaming changes (the server lists in name order).
fn hash_reply<H: Hasher>(reply: &Reply, h: &mut Renamed<'_, H>) {
    let Ok(Answer::Children(names, watch)) = reply else {
        reply.hash(h);
        return;
    };
    // Apart from `Result`'s own discriminants (0 and 1).
    0xC1usize.hash(h);
    h.hit |= names.iter().any(|n| find_guid(n.as_bytes()).is_some());
    // The renamed names in one buffer, their spans sorted: no allocation per name.
    let mut text = std::mem::take(&mut h.scratch);
    text.clear();
    let mut spans: Vec<std::ops::Range<usize>> = Vec::with_capacity(names.len());
    for n in names.iter() {
        let from = text.len();
        h.r.rename_text(n.as_bytes(), &mut text);
        spans.push(from..text.len());
    }
    spans.sort_unstable_by(|a, b| text[a.clone()].cmp(&text[b.clone()]));
    spans.len().hash(h.inner);
    for s in &spans {
        s.len().hash(h.inner);
        h.inner.write(&text[s.clone()]);
    }
    h.scratch = text;
    watch.is_some().hash(h);
}

/// A timer without its channels, its client and session renamed.
fn renamed_timer(t: &Timer, perm: &[usize], r: &Renaming) -> (u8, i64, u64) {
    // The main actor's sleeps name no client (an index past the clients).
    let c = |c: &usize| perm.get(*c).map_or(-1, |&p| p as i64);
    match t {
        Timer::Sleep(cl, _) => (0, c(cl), 0),
        Timer::Expire { session, epoch } => (1, r.session(session.0), *epoch),
        Timer::Reconnect { client, epoch } => (2, c(client), *epoch),
        Timer::DetectDisconnect { client, epoch } => (3, c(client), *epoch),
        Timer::Resume { client, at } => (4, c(client), *at),
        Timer::Heal { client, at } => (5, c(client), *at),
        Timer::Undelay { client, at } => (6, c(client), *at),
    }
}

/// The tree renamed: each node's encoding (renamed path, data, stat, counter, renamed
/// children sorted), sorted; then the last zxid; then each kind of watch as (renamed
/// path, renamed sessions sorted), sorted.
fn encode_tree(w: &World, r: &Renaming, out: &mut Bytes<'_>) {
    // Each node's encoding goes to one buffer, its children's to another, and spans of
    // them are sorted: no allocation per node.
    let mut nodes = Vec::with_capacity(1024);
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    let mut children = Vec::with_capacity(256);
    let mut child_spans: Vec<std::ops::Range<usize>> = Vec::new();
    let mut scratch = Vec::new();
    for n in w.tree.node_views() {
        let start = nodes.len();
        let mut h = Renamed {
            inner: &mut Bytes(&mut nodes),
            r,
            scratch: std::mem::take(&mut scratch),
            hit: false,
        };
        (n.path, n.data, n.stat, n.child_creates).hash(&mut h);
        children.clear();
        child_spans.clear();
        for c in &n.children {
            let from = children.len();
            h.r.rename_text(c.as_bytes(), &mut children);
            child_spans.push(from..children.len());
        }
        scratch = h.scratch;
        // As the encoding of a `Vec<Vec<u8>>` of the renamed names (a `str` hashes as its
        // bytes then 0xff), in the names' order.
        child_spans.sort_unstable_by(|a, b| children[a.clone()].cmp(&children[b.clone()]));
        let mut b = Bytes(&mut nodes);
        child_spans.len().hash(&mut b);
        for s in &child_spans {
            (s.len() + 1).hash(&mut b);
            b.write(&children[s.clone()]);
            b.write_u8(0xff);
        }
        spans.push(start..nodes.len());
    }
    spans.sort_unstable_by(|a, b| nodes[a.clone()].cmp(&nodes[b.clone()]));
    spans.len().hash(out);
    for s in &spans {
        s.len().hash(out);
        out.write(&nodes[s.clone()]);
    }
    w.tree.last_zxid().hash(out);
    let one = |f: &mut dyn FnMut(&mut Renamed<'_, Bytes<'_>>)| {
        let mut buf = Vec::new();
        let mut bytes = Bytes(&mut buf);
        let mut h = Renamed {
            inner: &mut bytes,
            r,
            scratch: Vec::new(),
            hit: false,
        };
        f(&mut h);
        buf
    };
    for data in [true, false] {
        let mut watches: Vec<Vec<u8>> = w
            .tree
            .watch_views(data)
            .into_iter()
            .map(|(path, sessions)| {
                let mut ids: Vec<i64> = sessions
                    .iter()
                    .map(|s: &SessionId| r.session(s.0))
                    .collect();
                ids.sort_unstable();
                one(&mut |h| (path, &ids).hash(h))
            })
            .collect();
        watches.sort_unstable();
        watches.hash(out);
    }
}
