//! The one encoding of a client's own parts, for the plain state digest (`digest`) and
//! the symmetric one (`symmetry`).
//!
//! A client field one digest hashed and the other left out would make one of them merge
//! states with different futures, and pruning on it unsound without a sign. So both
//! call [`ClientState::encode`], which names every field of the struct (no `..`): a new
//! field does not compile until it is hashed or said here why not. The tests change
//! each hashed field in turn and check that both digests tell the states apart.

use super::request::Reply;
use super::{ClientState, Inbound};
use std::hash::{Hash, Hasher};

impl ClientState {
    /// Feeds client's parts to `h`, its fold of what it was given being `obs` (the plain
    /// fold, or one permutation's: see `symmetry`). Replies waiting in its inbound queue
    /// go through `reply` (the symmetric digest sorts a listing's renamed names).
    pub(super) fn encode<H: Hasher>(
        &self,
        obs: u64,
        h: &mut H,
        mut reply: impl FnMut(&Reply, &mut H),
    ) {
        let ClientState {
            session,
            conn,
            conn_epoch,
            frozen_until,
            partitioned_until,
            delayed_until,
            conn_broken,
            outbound,
            inbound,
            watches,
            state,
            lose_next_create,
            crashed,
            detached,
            ended,
            // In the fold's place below (`live_fold`).
            finished: _,
            // The folds: the caller passes the one this encoding is under as `obs`.
            obs: _,
            obs_sym: _,
            obs_sig: _,
            before_reply: _,
            // Set when the client is added and never changed: the same in every state of
            // a scenario.
            timeout_us: _,
            // What resume reads of a freeze's start, whether the pause outlasts the read
            // timeout, is hashed below (`pause_outlasts_read_timeout`): the session's
            // expiry timer holds the start only when the pause cut the session off, and
            // not when a partition had cut it off already.
            frozen_since: _,
            // Not hashed: the sleeps that ended and the resource operations issued while
            // frozen are those the actor awaits (its fold stands for it) whose timer is
            // gone and whose answer it has not been given, so the rest of the state
            // holds them.
            deferred_sleeps: _,
            deferred_resource: _,
            // Channels: to the session's listeners and to code awaiting a crash. Their
            // receivers live in actors, whose state the fold stands for.
            broadcast: _,
            crash_watchers: _,
        } = self;
        self.live_fold(obs).hash(h);
        (session, conn, state, conn_epoch).hash(h);
        (frozen_until, partitioned_until, delayed_until).hash(h);
        self.pause_outlasts_read_timeout().hash(h);
        (lose_next_create, crashed, conn_broken).hash(h);
        // Whether a reply goes to the actor or to the background cleanup matters to what
        // follows, as does the cleanup still queued.
        outbound.len().hash(h);
        for o in outbound {
            (&o.req, o.reply.is_detached()).hash(h);
        }
        inbound.len().hash(h);
        for item in inbound {
            match item {
                Inbound::Reply {
                    result,
                    watch,
                    reply: to,
                    op_id: _,
                } => {
                    0u8.hash(h);
                    reply(result, h);
                    (watch, to.is_detached()).hash(h);
                }
                Inbound::Event(ev) => (1u8, ev).hash(h),
            }
        }
        detached.hash(h);
        watches.hash_shape(h);
        ended.hash(h);
    }
}

impl ClientState {
    /// Whether the client, frozen, will find at resume (`frozen_until`, the only time it
    /// resumes) that it heard nothing for 2/3 of its timeout, and drop the connection.
    pub(super) fn pause_outlasts_read_timeout(&self) -> bool {
        self.frozen_until
            .is_some_and(|until| until.saturating_sub(self.frozen_since) >= self.timeout_us * 2 / 3)
    }
}

#[cfg(test)]
mod tests {
    use super::super::recorder::Recorder;
    use super::super::request::{Answer, Request, WatchKind};
    use super::super::{Conn, Inbound, Outbound, ReplyTo, World};
    use crate::{ClientConfig, SimConfig};
    use std::sync::{Arc, Mutex};
    use zklock_recipe::{DetachedCleanup, EventType, SessionId, SessionState, Watch, WatchedEvent};

    /// A world with two interchangeable clients, digesting plainly and symmetrically.
    fn world() -> World {
        let r = Arc::new(Mutex::new(Recorder {
            symmetry: true,
            ..Recorder::default()
        }));
        let mut w = World::new(SimConfig::with_seed(0), Box::new(r));
        w.set_roles(&[0, 0]);
        for _ in 0..2 {
            w.add_client(&ClientConfig::default())
                .expect("room for two");
        }
        w
    }

    fn digests(w: &mut World) -> (u128, u128) {
        let plain = w.digest();
        let sym = w.digest_sym(false).expect("a symmetric digest");
        (plain, sym)
    }

    /// Every field `encode` hashes, changed in turn in client 0: both digests must tell
    /// the changed state from the first, or a search pruning on either would take two
    /// states with different futures for one.
    #[test]
    fn each_hashed_client_field_splits_both_digests() {
        type Change = fn(&mut World);
        let changes: &[(&str, Change)] = &[
            ("session", |w| w.clients[0].session = SessionId(0x7777)),
            ("conn", |w| w.clients[0].conn = Conn::Disconnected),
            ("conn_epoch", |w| w.clients[0].conn_epoch = 1),
            ("frozen_until", |w| w.clients[0].frozen_until = Some(5)),
            ("partitioned_until", |w| {
                w.clients[0].partitioned_until = Some(5)
            }),
            ("delayed_until", |w| w.clients[0].delayed_until = Some(5)),
            ("conn_broken", |w| w.clients[0].conn_broken = true),
            ("outbound", |w| {
                w.clients[0].outbound.push_back(Outbound {
                    op_id: 0,
                    req: Request::Delete {
                        path: "/x".into(),
                        version: None,
                    },
                    reply: ReplyTo::Detached,
                })
            }),
            ("inbound reply", |w| {
                w.clients[0].inbound.push_back(Inbound::Reply {
                    op_id: 0,
                    reply: ReplyTo::Detached,
                    result: Ok(Answer::Done),
                    watch: None,
                })
            }),
            ("inbound event", |w| {
                w.clients[0].inbound.push_back(Inbound::Event(WatchedEvent {
                    event_type: EventType::NodeDeleted,
                    path: "/x".into(),
                }))
            }),
            ("watches", |w| {
                let (tx, _rx) = Watch::channel();
                w.clients[0].watches.add(WatchKind::Data, "/x".into(), tx)
            }),
            ("state", |w| w.clients[0].state = SessionState::Disconnected),
            ("lose_next_create", |w| w.clients[0].lose_next_create = true),
            ("crashed", |w| w.clients[0].crashed = true),
            ("ended", |w| {
                w.clients[0]
                    .ended
                    .push((SessionId(0x7777), SessionState::Expired))
            }),
            ("obs", |w| {
                let cl = &mut w.clients[0];
                cl.obs = 1;
                cl.obs_sym.iter_mut().for_each(|f| *f = 1);
                cl.obs_sig = 1;
            }),
            ("finished", |w| w.clients[0].finished = true),
        ];
        for (field, change) in changes {
            let mut w = world();
            let before = digests(&mut w);
            change(&mut w);
            let after = digests(&mut w);
            assert_ne!(before.0, after.0, "the plain digest ignores {field}");
            assert_ne!(before.1, after.1, "the symmetric digest ignores {field}");
        }
    }

    /// Client `c` (timeout 6 s: it drops a connection silent for 4 s) is cut off at 0 for
    /// 1.5 s and paused from `pause_at_ms` until 4.7 s; at 3 s client `b` sends a request.
    /// The first digest there (plain or `symmetric`), and whether `c` saw Disconnected by
    /// 5.5 s. The partition set the session's expiry timer before the pause, so the time
    /// the pause began is held only by `frozen_since`.
    fn pause_from(pause_at_ms: u64, symmetric: bool) -> (u128, bool) {
        use crate::Sim;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        use zklock_recipe::Coordination;
        use zklock_recipe::history::EventKind;
        let ms = Duration::from_millis;
        let armed = Arc::new(AtomicBool::new(false));
        let r = Arc::new(Mutex::new(Recorder {
            armed: Some(armed.clone()),
            symmetry: symmetric,
            ..Recorder::default()
        }));
        let sim = Sim::with_chooser(SimConfig::with_seed(0), Box::new(r.clone()));
        let s = sim.clone();
        let main = async move {
            let (c, b) = (s.client(), s.client());
            s.partition(&c, ms(1500));
            s.sleep(ms(pause_at_ms)).await;
            s.pause(&c, ms(4700 - pause_at_ms));
            s.sleep(ms(3000 - pause_at_ms)).await;
            armed.store(true, Ordering::SeqCst);
            b.create("/x", b"", zklock_recipe::CreateMode::Persistent)
                .await
                .expect("b is connected");
            s.sleep(ms(5500) - s.now()).await;
        };
        crate::sim::complete(sim.run(main)).expect("the run ends");
        let disconnected = sim.history().events.iter().any(|e| {
            e.client == 0
                && matches!(
                    e.kind,
                    EventKind::Session {
                        state: SessionState::Disconnected
                    }
                )
        });
        let first = r.lock().unwrap().digests.first().expect("a state").1;
        (first, disconnected)
    }

    /// Pauses that end at the same time but began 0.5 s apart (4.2 s and 3.7 s long) have
    /// different futures: the longer outlasts the read timeout and drops the connection
    /// at resume. Both digests must tell the states apart while the client is frozen.
    #[test]
    fn when_a_pause_began_splits_both_digests() {
        for symmetric in [false, true] {
            let (long, long_dropped) = pause_from(500, symmetric);
            let (short, short_dropped) = pause_from(1000, symmetric);
            assert!(long_dropped && !short_dropped, "different futures");
            assert_ne!(
                long, short,
                "pauses of different lengths merged (symmetric: {symmetric})"
            );
            assert_eq!(long, pause_from(500, symmetric).0, "deterministic");
        }
    }

    /// `detached`, the one field the table above cannot set directly (its queue is its
    /// module's): cleanup queued while disconnected, so that nothing else changes.
    #[test]
    fn queued_cleanup_splits_both_digests() {
        let mut w = world();
        w.clients[0].conn = Conn::Disconnected;
        w.clients[0].conn_epoch = 1;
        let before = digests(&mut w);
        w.add_detached(0, DetachedCleanup::Node("/x".into()));
        assert!(!w.clients[0].detached.is_empty(), "cleanup queued");
        assert!(
            w.clients[0].outbound.is_empty(),
            "nothing sent while disconnected"
        );
        let after = digests(&mut w);
        assert_ne!(before.0, after.0);
        assert_ne!(before.1, after.1);
    }
}
