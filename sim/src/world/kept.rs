//! What an actor says it keeps of an answer ([`Coordination::keep_only`]).
//!
//! A digest holds, for each client, a fold of every value delivered to its actor (see
//! `digest`). A listing's every name is in it, though the lock recipe keeps only its
//! place in the queue: two schedules whose listings differ in a name that no longer
//! matters stay apart for good. An actor that calls `keep_only(kept)` right after taking
//! a reply says that from then on it acts on that reply only through `kept`; the world
//! then folds `kept` in the reply's place, and those schedules meet.
//!
//! The world honours the call only when it can tell which reply is meant: the last value
//! folded for the client is a reply to one of its actor's waits, that wait is the last
//! one any actor took (so the caller took it, with no await since), and no choice was
//! drawn in between (a run that replays a prefix takes its folds over at a choice, see
//! `folds`, and must fold as the run it replays). Otherwise the call does nothing and the
//! reply stays folded whole, which only keeps states apart.
//!
//! [`Coordination::keep_only`]: zklock_recipe::Coordination::keep_only

use super::delivery::SlotId;
use super::digest::Seen;
use super::{ClientId, World};

/// A client's folds before the last reply folded for it, while `keep_only` may still
/// replace that reply.
#[derive(Default)]
pub(crate) struct BeforeReply {
    /// The wait the reply went to; `None` when there is nothing to replace.
    slot: Option<SlotId>,
    obs: u64,
    obs_sig: u64,
    obs_sym: Vec<u64>,
}

impl World {
    /// A reply is about to be folded for client `c`: remembers the folds before it.
    pub(super) fn before_reply(&mut self, c: ClientId) {
        if !self.honours_keep_only {
            return;
        }
        let Some(cl) = self.clients.get_mut(c) else {
            return;
        };
        let b = &mut cl.before_reply;
        b.obs = cl.obs;
        b.obs_sig = cl.obs_sig;
        b.obs_sym.clone_from(&cl.obs_sym);
    }

    /// The reply just folded for client `c` went to its actor's wait `slot`: `keep_only`
    /// may replace it.
    pub(super) fn arm_before_reply(&mut self, c: ClientId, slot: SlotId) {
        if self.honours_keep_only
            && let Some(cl) = self.clients.get_mut(c)
        {
            cl.before_reply.slot = Some(slot);
        }
    }

    /// Something else was folded for client `c`: its last reply can no longer be replaced.
    pub(super) fn forget_before_reply(&mut self, c: ClientId) {
        if let Some(cl) = self.clients.get_mut(c) {
            cl.before_reply.slot = None;
        }
    }

    /// A choice is drawn: no reply folded before it may be replaced after it.
    pub(super) fn forget_every_before_reply(&mut self) {
        for cl in &mut self.clients {
            cl.before_reply.slot = None;
        }
        self.last_taken = None;
    }

    /// An actor took what was delivered to its wait `slot`.
    pub(crate) fn took(&mut self, slot: SlotId) {
        self.last_taken = Some(slot);
    }

    /// Client `c`'s actor keeps only `kept` of the reply it took last (see the module
    /// docs).
    pub(crate) fn keep_only(&mut self, c: ClientId, kept: &[u8]) {
        if !self.digesting || !self.folding() || !self.honours_keep_only {
            return;
        }
        let Some(cl) = self.clients.get_mut(c) else {
            return;
        };
        let Some(slot) = cl.before_reply.slot.take() else {
            return;
        };
        if self.last_taken != Some(slot) {
            return;
        }
        cl.obs = cl.before_reply.obs;
        cl.obs_sig = cl.before_reply.obs_sig;
        cl.obs_sym.clone_from(&cl.before_reply.obs_sym);
        self.observe(c, Seen::Kept(kept));
    }
}

#[cfg(test)]
mod tests {
    use crate::sim::complete;
    use crate::world::recorder::Recorder;
    use crate::{Sim, SimConfig};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use zklock_recipe::{Coordination, CreateMode};

    /// What the actor does after taking the listing.
    #[derive(Clone, Copy)]
    enum Then {
        Keep,
        /// Awaits a sleep, then calls `keep_only`: too late.
        SleepThenKeep,
        Nothing,
    }

    /// The actor's fold after it listed a directory holding `child`, and `then`.
    fn fold_after(child: &'static str, then: Then) -> u64 {
        let recorder = Arc::new(Mutex::new(Recorder::default()));
        let sim = Sim::with_chooser(SimConfig::with_seed(1), Box::new(recorder));
        // The lister is given the listing only; another client makes the nodes.
        let (c, maker) = (sim.client(), sim.client());
        complete(sim.run(async move {
            maker
                .create("/d", b"", CreateMode::Persistent)
                .await
                .unwrap();
            maker
                .create(&format!("/d/{child}"), b"", CreateMode::Persistent)
                .await
                .unwrap();
            let listing = c.get_children("/d").await.unwrap();
            assert_eq!(listing.len(), 1);
            match then {
                Then::Keep => c.keep_only(b"one child"),
                Then::SleepThenKeep => {
                    c.sleep(Duration::from_millis(1)).await;
                    c.keep_only(b"one child");
                }
                Then::Nothing => {}
            }
            // The fold was taken at a quiescent point: step once more.
            c.sleep(Duration::from_millis(1)).await;
        }))
        .unwrap();
        let w = sim.shared.world();
        w.clients[0].obs
    }

    #[test]
    fn a_reply_kept_only_in_part_is_folded_as_that_part() {
        // Apart whole, one when only the count of children is kept.
        assert_ne!(
            fold_after("a", Then::Nothing),
            fold_after("b", Then::Nothing)
        );
        assert_eq!(fold_after("a", Then::Keep), fold_after("b", Then::Keep));
        assert_ne!(fold_after("a", Then::Keep), fold_after("a", Then::Nothing));
    }

    #[test]
    fn keep_only_after_another_await_keeps_the_reply_whole() {
        assert_ne!(
            fold_after("a", Then::SleepThenKeep),
            fold_after("b", Then::SleepThenKeep)
        );
    }
}
