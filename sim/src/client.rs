//! [`SimClient`]: the `Coordination` trait on the simulated ZooKeeper.

use crate::shared::Shared;
use crate::world::delivery::Delivered;
use crate::world::request::{Answer, Request};
use crate::world::{ClientId, Staged};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use zklock_recipe::{
    Children, Coordination, CreateMode, DetachedCleanup, Op, OpResult, SessionBroadcast,
    SessionEvents, SessionId, SessionState, Stat, Watch, ZkError,
};

/// One client of the simulated ZooKeeper, with its own session. Cheap to clone; clones
/// share the session. A handle stays on its session for good: once that session ended,
/// [`Sim::renew_session`](crate::Sim::renew_session) gives a new handle on a new one, as
/// a process opens a new ZooKeeper client, while the old handle's requests fail with
/// SessionExpired (or SessionClosed) and its background cleanup is dropped.
#[derive(Clone)]
pub struct SimClient {
    shared: Arc<Shared>,
    id: ClientId,
    session: SessionId,
    /// Lock objects numbered so far ([`Coordination::next_object_number`]), shared by
    /// the session's clones. Outside the world's state: it only renames what later
    /// objects create, never how they behave.
    objects: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for SimClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClient")
            .field("index", &self.id)
            .field("session", &self.session)
            .finish()
    }
}

impl SimClient {
    pub(crate) fn new(shared: Arc<Shared>, id: ClientId, session: SessionId) -> Self {
        SimClient {
            shared,
            id,
            session,
            objects: Arc::default(),
        }
    }

    /// This client's index in its world, in creation order from 0.
    pub fn index(&self) -> ClientId {
        self.id
    }

    /// Whether the virtual clock has passed `t`. Only the answer becomes part of the
    /// state an exhaustive check tells apart, where [`Coordination::now`]'s whole time
    /// does: a stop rule that compares the clock with a deadline should ask this.
    pub fn now_past(&self, t: Duration) -> bool {
        let t_us = u64::try_from(t.as_micros()).unwrap_or(u64::MAX);
        self.shared.world().clock_past(self.id, t_us)
    }

    /// The later of the virtual clock and `floor`. The time is part of the state an
    /// exhaustive check tells apart only when it is past `floor`.
    pub fn now_at_least(&self, floor: Duration) -> Duration {
        let floor_us = u64::try_from(floor.as_micros()).unwrap_or(u64::MAX);
        Duration::from_micros(self.shared.world().clock_at_least(self.id, floor_us))
    }

    /// Sends `req` and awaits its reply; `read` takes the expected answer apart (or
    /// hands back an unexpected one). A plain future rather than an `async fn` around the
    /// wait, as are the methods below: requests are the simulation's busiest await.
    fn call<T>(
        &self,
        req: Request,
        read: impl Fn(Answer) -> Result<T, Answer> + Send + Unpin + 'static,
    ) -> impl Future<Output = Result<T, ZkError>> + Send + '_ {
        let (client, session) = (self.id, self.session);
        self.shared.awaited(
            move |reply| Staged::Request {
                client,
                session,
                req,
                reply,
            },
            move |d| match d {
                Delivered::Reply(r) => r.map(|a| read(a).unwrap_or_else(|a| unexpected(a))),
                other => unreachable!("a request was answered with {other:?}"),
            },
        )
    }
}

fn unexpected(a: Answer) -> ! {
    panic!("simulated server answered a request with the wrong kind of answer: {a:?}")
}

impl Coordination for SimClient {
    fn session_id(&self) -> SessionId {
        self.session
    }

    fn next_object_number(&self) -> u64 {
        self.objects
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn session_state(&self) -> SessionState {
        self.shared.world().clients[self.id].state_of(self.session)
    }

    fn session_events(&self) -> SessionEvents {
        let mut w = self.shared.world();
        if w.clients[self.id].session == self.session {
            w.subscribe(self.id)
        } else {
            // The session ended: no change will come.
            let mut ended = SessionBroadcast::default();
            ended.close();
            ended.subscribe()
        }
    }

    fn now(&self) -> Duration {
        Duration::from_micros(self.shared.world().read_clock(Some(self.id)))
    }

    fn keep_only(&self, kept: &[u8]) {
        self.shared.world().keep_only(self.id, kept)
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        let client = self.id;
        self.shared.awaited(
            move |done| Staged::Sleep {
                client,
                duration_us: duration.as_micros() as u64,
                done,
            },
            drop,
        )
    }

    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<(String, Stat), ZkError>> + Send {
        let req = Request::Create {
            path: path.into(),
            data: data.to_vec(),
            mode,
        };
        self.call(req, |a| match a {
            Answer::Created(p, s) => Ok((p, s)),
            a => Err(a),
        })
    }

    fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), ZkError>> + Send {
        let req = Request::Delete {
            path: path.into(),
            version,
        };
        self.call(req, |a| match a {
            Answer::Done => Ok(()),
            a => Err(a),
        })
    }

    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send {
        let req = Request::Exists {
            path: path.into(),
            watch: false,
        };
        self.call(req, |a| match a {
            Answer::Exists(s, _) => Ok(s),
            a => Err(a),
        })
    }

    fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watch), ZkError>> + Send {
        let req = Request::Exists {
            path: path.into(),
            watch: true,
        };
        self.call(req, |a| match a {
            Answer::Exists(s, Some(w)) => Ok((s, w)),
            a => Err(a),
        })
    }

    fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send {
        let req = Request::GetData {
            path: path.into(),
            watch: false,
        };
        self.call(req, |a| match a {
            Answer::Data(d, s, _) => Ok((d, s)),
            a => Err(a),
        })
    }

    fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch), ZkError>> + Send {
        let req = Request::GetData {
            path: path.into(),
            watch: true,
        };
        self.call(req, |a| match a {
            Answer::Data(d, s, Some(w)) => Ok((d, s, w)),
            a => Err(a),
        })
    }

    fn get_children(&self, path: &str) -> impl Future<Output = Result<Children, ZkError>> + Send {
        let req = Request::GetChildren {
            path: path.into(),
            watch: false,
        };
        self.call(req, |a| match a {
            Answer::Children(c, _) => Ok(c),
            a => Err(a),
        })
    }

    fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Children, Watch), ZkError>> + Send {
        let req = Request::GetChildren {
            path: path.into(),
            watch: true,
        };
        self.call(req, |a| match a {
            Answer::Children(c, Some(w)) => Ok((c, w)),
            a => Err(a),
        })
    }

    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send {
        let req = Request::SetData {
            path: path.into(),
            data: data.to_vec(),
            version,
        };
        self.call(req, |a| match a {
            Answer::Stat(s) => Ok(s),
            a => Err(a),
        })
    }

    fn multi(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>, ZkError>> + Send {
        self.call(Request::Multi(ops), |a| match a {
            Answer::Multi(r) => Ok(r),
            a => Err(a),
        })
    }

    fn close(&self) -> impl Future<Output = Result<(), ZkError>> + Send {
        self.call(Request::Close, |a| match a {
            Answer::Done => Ok(()),
            a => Err(a),
        })
    }

    /// Staged like a request, so it takes its place among this actor's requests; the
    /// world then runs it as the client library's own work (no actor is spawned, so actor
    /// ids stay as they were). See the world's `detached` module.
    fn cleanup_detached(&self, what: DetachedCleanup) {
        self.shared.stage_from_drop(Staged::Detached {
            client: self.id,
            session: self.session,
            what,
        });
    }
}
