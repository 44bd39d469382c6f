//! A digest of the whole simulated state, for explorers that prune revisited states.
//!
//! Soundness: an actor draws no randomness and reads time only from the world, so its
//! local state is a deterministic function of the sequence of values the world delivered
//! to it. Each client's actor folds those deliveries into `obs`. The world's own state
//! (tree, sessions, connections, queues, timers, resource, faults used) plus every
//! client's `obs` therefore determines every continuation: two schedules that reach equal
//! digests have the same futures, and exploring one of them suffices. Epoch counters are
//! included as they are (sound, if it merges a little less). Hashing uses two independent
//! 64-bit hashes; a collision could hide a state with probability about 2^-128 per pair.

use super::World;
use std::hash::{DefaultHasher, Hash, Hasher};

fn fold(h: &mut DefaultHasher, v: &impl std::fmt::Debug) {
    format!("{v:?}").hash(h);
}

impl World {
    /// Folds a value delivered to client `c` into its observation digest (only when an
    /// explorer asked for digests: it costs a format per delivery).
    pub(crate) fn observe(&mut self, c: usize, v: &impl std::fmt::Debug) {
        if !self.digesting {
            return;
        }
        let Some(cl) = self.clients.get_mut(c) else {
            return;
        };
        let mut h = DefaultHasher::new();
        cl.obs.hash(&mut h);
        fold(&mut h, v);
        cl.obs = h.finish();
    }

    /// The digest of the current state (see the module docs).
    pub(crate) fn digest(&self) -> u128 {
        let mut a = DefaultHasher::new();
        let mut b = DefaultHasher::new();
        0x5a5a_u16.hash(&mut b);
        for h in [&mut a, &mut b] {
            self.now_us.hash(h);
            fold(h, &self.tree);
            for cl in &self.clients {
                cl.obs.hash(h);
                fold(h, &(cl.conn, cl.state, cl.conn_epoch));
                fold(
                    h,
                    &(cl.frozen_until, cl.partitioned_until, cl.delayed_until),
                );
                fold(h, &(cl.lose_next_create, cl.crashed, cl.conn_broken));
                // Whether a reply goes to the actor or to the background cleanup matters
                // to what follows, as does the cleanup still queued.
                for o in &cl.outbound {
                    fold(h, &(&o.req, o.reply.is_detached()));
                }
                for i in &cl.inbound {
                    match i {
                        super::Inbound::Reply {
                            result,
                            watch,
                            reply,
                            ..
                        } => fold(h, &(result, watch, reply.is_detached())),
                        super::Inbound::Event(ev) => fold(h, ev),
                    }
                }
                fold(h, &cl.detached);
                fold(
                    h,
                    &cl.data_watchers
                        .iter()
                        .map(|(k, v)| (k, v.len()))
                        .collect::<Vec<_>>(),
                );
                fold(
                    h,
                    &cl.child_watchers
                        .iter()
                        .map(|(k, v)| (k, v.len()))
                        .collect::<Vec<_>>(),
                );
            }
            for (id, s) in &self.sessions {
                fold(h, &(id, s.alive, s.hears, s.expiry_epoch));
            }
            for ((at, _), t) in &self.timers {
                at.hash(h);
                fold(h, &super::timer_shape(t));
            }
            fold(h, &self.resource);
            fold(h, &self.faults.as_ref().map(|f| f.injected));
        }
        ((a.finish() as u128) << 64) | b.finish() as u128
    }
}
