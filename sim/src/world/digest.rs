//! A digest of the whole simulated state, for explorers that prune revisited states.
//!
//! Soundness: an actor draws no randomness and learns nothing but from the world, so its
//! local state is a deterministic function of the sequence of values the world gave it:
//! replies, events, session states, resource answers, wake-ups, workload choices, new
//! sessions, and the time of every clock read (`Coordination::now`), which it may keep
//! (a timed wait's deadline) and which two schedules may give at different times. Each
//! client's actor folds those values into `obs`, a clock read included; a comparing read
//! (`SimClient::now_past`, `SimClient::now_at_least`: the work queue's stop rule) folds
//! only what it told, so that reads at different times that told the same stay one
//! state. Code outside any client's handle (the workload's main actor and its tasks)
//! draws on the world through `Sim`: its requests, sleeps and choices are the world's
//! (timers, queues, the choices folded into the client they are made for); its reads of
//! the clock (`Sim::now`) are folded into `outside_obs`, one fold for all of them, in the
//! order read.
//! The world's own state (tree, sessions, connections, queues, timers, resource, faults
//! used) plus every client's `obs` and `outside_obs` therefore determines every
//! continuation: two schedules that reach equal digests have the same futures, and
//! exploring one of them suffices. A client whose workload has returned (`Sim::finish`,
//! which the scenario runner calls when a client's worker returns; the recipe API has no
//! way to spawn code that outlives it) has no code left to read what it is given, so
//! its fold leaves the digest (`ClientState::live_fold`); the world's state of it stays,
//! since its session, connection, queues and background cleanup still act. A crashed
//! client's fold stays: the runner stops its worker only when it gets to it, so this
//! argument does not lean on the world never waking a crashed client's code.
//! Reads of the server's state outside any request
//! (`Sim::server_children` and the like: a work-queue consumer deciding to stop) are not
//! folded: this argument takes it that the code that makes them acts on what it read
//! before the world's next step, by what it stages (a request, a sleep), which the
//! world's state holds. Epoch counters are included as they are (sound, if it merges a
//! little less). The encoding is hashed to 128
//! bits in one pass ([`hash128`]); a collision could hide a state with a chance of about
//! 2^-128 per pair.
//!
//! The state is encoded through `Hash` (every sequence with its length, so the encoding
//! is unambiguous), never through `Debug` text: formatting the world cost more than
//! simulating it. Two states encode alike exactly when their `Debug` renderings agree
//! (up to a collision of the tree's own digest, which stands in for the tree: see
//! `CachedTree`).

use super::delivery::ResourceReply;
use super::hash128::hash128;
use super::request::Reply;
use super::{ClientId, World, timer_shape};
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
    /// The time a clock read gave, in microseconds: an actor may keep it (a deadline),
    /// and two schedules may give the same values at different times.
    Clock(u64),
    /// What a comparing clock read told: whether the clock had passed the time asked.
    Past(bool),
    /// A clock read bounded below told the bound: the clock had not passed it.
    NotPast,
    /// What the actor keeps of the reply it took last, in that reply's place (see
    /// `kept`).
    Kept(&'a [u8]),
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
        self.forget_before_reply(c);
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

    /// The clock, read by client `reader`'s actor through its handle, or (`None`) by code
    /// outside any client's handle (the workload's main actor and its tasks, through
    /// `Sim::now`): the read is folded into the reader's fold, or into the world's
    /// `outside_obs`, as what is delivered is.
    pub(crate) fn read_clock(&mut self, reader: Option<ClientId>) -> u64 {
        self.outside_read();
        let now_us = self.now_us;
        match reader {
            Some(c) => self.observe(c, Seen::Clock(now_us)),
            None if self.digesting && self.folding() => {
                let buf = &mut self.digest_buf;
                buf.clear();
                self.outside_obs.hash(&mut Bytes(buf));
                Seen::Clock(now_us).hash(&mut Bytes(buf));
                self.outside_obs = hash128(buf) as u64;
            }
            None => {}
        }
        now_us
    }

    /// Whether the clock has passed `t_us`, read by client `c`'s code: only the answer is
    /// folded, so schedules that reach the same state at different times before (or
    /// after) `t_us` stay one state.
    pub(crate) fn clock_past(&mut self, c: ClientId, t_us: u64) -> bool {
        self.outside_read();
        let past = self.now_us > t_us;
        self.observe(c, Seen::Past(past));
        past
    }

    /// The later of the clock and `floor_us`, read by client `c`'s code: the time is
    /// folded only when it is past the floor (the caller learns only the floor otherwise).
    pub(crate) fn clock_at_least(&mut self, c: ClientId, floor_us: u64) -> u64 {
        if self.now_us > floor_us {
            return self.read_clock(Some(c));
        }
        self.outside_read();
        self.observe(c, Seen::NotPast);
        floor_us
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
            cl.encode(cl.obs, h, |reply, h| reply.hash(h));
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
        // Hashed only when something outside any client read the clock, so that a run
        // where nothing did digests as before.
        if self.outside_obs != 0 {
            self.outside_obs.hash(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::world::recorder::Recorder;
    use crate::{Sim, SimConfig};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use zklock_recipe::{Coordination, CreateMode};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Runs `main` under a recorder armed by it; the digest of the first state after it
    /// armed, and when the run ended.
    fn first_digest_armed<F, Fut>(main: F) -> (u128, Duration)
    where
        F: FnOnce(Sim, Arc<AtomicBool>) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let armed = Arc::new(AtomicBool::new(false));
        let r = Arc::new(Mutex::new(Recorder {
            armed: Some(armed.clone()),
            ..Recorder::default()
        }));
        let sim = Sim::with_chooser(SimConfig::with_seed(0), Box::new(r.clone()));
        crate::sim::complete(sim.run(main(sim.clone(), armed))).expect("the run ends");
        let end = sim.now();
        let digests = &r.lock().unwrap().digests;
        (digests.first().expect("a state after arming").1, end)
    }

    /// A client's actor (or, `outside`, code outside any client's handle: a workload's
    /// main actor keeping the time for its clients, as the work queue's does) reads the
    /// clock at 1 ms or at 2 ms, then waits until 5 ms and the client sends a request:
    /// the same values delivered, the same world at 5 ms. What was read sets when the
    /// run stops: (first digest once armed, end time).
    fn read_then_meet(outside: bool, read_at_ms: u64) -> (u128, Duration) {
        first_digest_armed(move |sim, armed| async move {
            let c = sim.client();
            let now = || if outside { sim.now() } else { c.now() };
            sim.sleep(ms(read_at_ms)).await;
            let read = now();
            sim.sleep(ms(5) - read).await;
            armed.store(true, Ordering::SeqCst);
            c.create("/x", b"", CreateMode::Persistent).await.unwrap();
            let deadline = read + ms(10);
            sim.sleep(deadline - now()).await;
        })
    }

    /// The two states have different futures: their digests must differ, or an
    /// explorer would prune one of them as seen.
    #[test]
    fn clock_reads_are_part_of_the_state_digest() {
        for outside in [false, true] {
            let ((one, one_end), (two, two_end)) =
                (read_then_meet(outside, 1), read_then_meet(outside, 2));
            assert_eq!((one_end, two_end), (ms(11), ms(12)), "different futures");
            assert_ne!(
                one, two,
                "a state merged with one whose reader (outside: {outside}) read another time"
            );
            assert_eq!(
                one,
                read_then_meet(outside, 1).0,
                "digests are deterministic"
            );
        }
    }

    /// Client code reads the clock through `read` at `read_at_ms`, then the world meets
    /// at 5 ms (a request); the first digest there, and what was read.
    fn compare_then_meet(
        read_at_ms: u64,
        read: fn(&crate::SimClient) -> Duration,
    ) -> (u128, Duration) {
        let seen = Arc::new(Mutex::new(Duration::ZERO));
        let kept = seen.clone();
        let (digest, _) = first_digest_armed(move |sim, armed| async move {
            let c = sim.client();
            sim.sleep(ms(read_at_ms)).await;
            *kept.lock().unwrap() = read(&c);
            sim.sleep(ms(5 - read_at_ms)).await;
            armed.store(true, Ordering::SeqCst);
            c.create("/x", b"", CreateMode::Persistent).await.unwrap();
        });
        let read = *seen.lock().unwrap();
        (digest, read)
    }

    /// A stop rule's comparing read (`now_past`) and a bounded read (`now_at_least`) fold
    /// only what they tell: reads at different times that tell the same are one state,
    /// and reads that tell different things are two.
    #[test]
    fn comparing_clock_reads_fold_only_their_answer() {
        let past = |c: &crate::SimClient| ms(u64::from(c.now_past(ms(3))));
        let at_least = |c: &crate::SimClient| c.now_at_least(ms(3));
        for read in [past, at_least] {
            let (before_1, told_1) = compare_then_meet(1, read);
            let (before_2, told_2) = compare_then_meet(2, read);
            assert_eq!(told_1, told_2, "both reads come before 3 ms");
            assert_eq!(before_1, before_2, "reads that told the same split a state");
            let (after_4, told_4) = compare_then_meet(4, read);
            assert_ne!(told_1, told_4);
            assert_ne!(before_1, after_4, "reads that told apart were merged");
        }
        let (after_4, _) = compare_then_meet(4, at_least);
        let (after_5, told) = compare_then_meet(5, at_least);
        assert_eq!(told, ms(5));
        assert_ne!(after_4, after_5, "times past the floor were merged");
    }

    /// Client `a` reads the clock at `read_at_ms` (so its fold differs with the time),
    /// its workload ends there if `finished`, and at 5 ms client `b` sends a request: the
    /// first digest there.
    fn read_finish_then_meet(read_at_ms: u64, finished: bool) -> u128 {
        let (digest, _) = first_digest_armed(move |sim, armed| async move {
            let (a, b) = (sim.client(), sim.client());
            sim.sleep(ms(read_at_ms)).await;
            let _ = a.now();
            if finished {
                sim.finish(&a);
            }
            sim.sleep(ms(5 - read_at_ms)).await;
            armed.store(true, Ordering::SeqCst);
            b.create("/x", b"", CreateMode::Persistent).await.unwrap();
        });
        digest
    }

    /// Once a client's workload is over, nothing reads what it was given: states that
    /// differ only in that are one state. While it runs, they are two.
    #[test]
    fn a_finished_clients_fold_leaves_the_digest() {
        assert_ne!(
            read_finish_then_meet(1, false),
            read_finish_then_meet(2, false),
            "a running client's reads at different times were merged"
        );
        assert_eq!(
            read_finish_then_meet(1, true),
            read_finish_then_meet(2, true),
            "a finished client's fold split a state"
        );
        assert_ne!(
            read_finish_then_meet(1, true),
            read_finish_then_meet(1, false),
            "a finished client is merged with a running one"
        );
    }
}
