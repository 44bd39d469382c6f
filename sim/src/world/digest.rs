//! A digest of the whole simulated state, for explorers that prune revisited states.
//!
//! Soundness: an actor draws no randomness and reads time only from the world, so its
//! local state is a deterministic function of the sequence of values the world delivered
//! to it. Each client's actor folds those deliveries into `obs`. The world's own state
//! (tree, sessions, connections, queues, timers, resource, faults used) plus every
//! client's `obs` therefore determines every continuation: two schedules that reach equal
//! digests have the same futures, and exploring one of them suffices. Epoch counters are
//! included as they are (sound, if it merges a little less). The encoding is hashed to 128
//! bits in one pass ([`hash128`]); a collision could hide a state with a chance of about
//! 2^-128 per pair.
//!
//! The state is encoded through `Hash` (every sequence with its length, so the encoding
//! is unambiguous), never through `Debug` text: formatting the world cost more than
//! simulating it. Two states encode alike exactly when their `Debug` renderings agree
//! (up to a collision of the tree's own digest, which stands in for the tree: see
//! `CachedTree`).

use super::hash128::hash128;
use super::request::Reply;
use super::resource::ResourceReply;
use super::{Inbound, World, timer_shape};
use std::hash::{Hash, Hasher};
use zklock_recipe::{SessionId, SessionState, WatchedEvent};

/// A value delivered to a client's actor. The variant keeps kinds apart, as their `Debug`
/// texts were.
#[derive(Hash)]
pub(crate) enum Seen<'a> {
    Reply(&'a Reply),
    Event(&'a WatchedEvent),
    Session(SessionState),
    Resource(&'a ResourceReply),
    /// A sleep ended.
    Woke,
    /// A workload's decision.
    Chosen(usize),
    /// The new session opened, if one was: the actor's handle carries its id.
    Renewed(Option<SessionId>),
}

/// Collects what `Hash` feeds it as bytes, little-endian whatever the machine, so the
/// whole state is hashed in one pass over one buffer.
pub(super) struct Bytes<'a>(pub(super) &'a mut Vec<u8>);

impl Hasher for Bytes<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
    fn write_u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn write_u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn write_u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn write_u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        unreachable!("an encoder, never asked for a hash")
    }
}

impl World {
    /// Folds a value delivered to client `c` into its observation digest (only when an
    /// explorer asked for digests).
    pub(crate) fn observe(&mut self, c: usize, v: Seen<'_>) {
        self.touch_client(c);
        if !self.digesting || !self.folding() {
            return;
        }
        if self.symmetry.is_some() && c < self.clients.len() {
            self.observe_sym(c, &v);
        }
        let Some(cl) = self.clients.get_mut(c) else {
            return;
        };
        let buf = &mut self.digest_buf;
        buf.clear();
        cl.obs.hash(&mut Bytes(buf));
        v.hash(&mut Bytes(buf));
        cl.obs = hash128(buf) as u64;
    }

    /// The digest of the current state (see the module docs).
    pub(crate) fn digest(&mut self) -> u128 {
        let mut buf = std::mem::take(&mut self.digest_buf);
        // The tree enters as its own digest, recomputed only when it may have changed.
        let tree = self.tree.digest(&mut buf);
        buf.clear();
        self.encode(tree, &mut Bytes(&mut buf));
        let digest = hash128(&buf);
        self.digest_buf = buf;
        digest
    }

    fn encode(&self, tree: u128, h: &mut impl Hasher) {
        self.now_us.hash(h);
        tree.hash(h);
        self.clients.len().hash(h);
        for cl in &self.clients {
            cl.obs.hash(h);
            (cl.session, cl.conn, cl.state, cl.conn_epoch).hash(h);
            (cl.frozen_until, cl.partitioned_until, cl.delayed_until).hash(h);
            (cl.lose_next_create, cl.crashed, cl.conn_broken).hash(h);
            // Whether a reply goes to the actor or to the background cleanup matters
            // to what follows, as does the cleanup still queued.
            cl.outbound.len().hash(h);
            for o in &cl.outbound {
                (&o.req, o.reply.is_detached()).hash(h);
            }
            cl.inbound.len().hash(h);
            for i in &cl.inbound {
                match i {
                    Inbound::Reply {
                        result,
                        watch,
                        reply,
                        ..
                    } => (0u8, result, watch, reply.is_detached()).hash(h),
                    Inbound::Event(ev) => (1u8, ev).hash(h),
                }
            }
            cl.detached.hash(h);
            cl.watches.hash_shape(h);
            cl.ended.hash(h);
        }
        self.sessions.len().hash(h);
        for (id, s) in &self.sessions {
            (id, s.alive, s.hears, s.expiry_epoch).hash(h);
        }
        self.timers.len().hash(h);
        for (at, t) in self.timers.iter() {
            (at, timer_shape(t)).hash(h);
        }
        self.resource.hash(h);
        // Hashed only when there are some, so that a run of one lock digests as before.
        if !self.more_resources.is_empty() {
            self.more_resources.hash(h);
        }
        self.faults.as_ref().map(|f| f.injected).hash(h);
    }
}
