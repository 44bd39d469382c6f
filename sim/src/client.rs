//! [`SimClient`]: the `Coordination` trait on the simulated ZooKeeper.

use crate::sim::Shared;
use crate::world::delivery::Delivered;
use crate::world::request::{Answer, Reply, Request};
use crate::world::{ClientId, Staged};
use std::sync::Arc;
use std::time::Duration;
use zklock_recipe::{
    Coordination, CreateMode, DetachedCleanup, Op, OpResult, SessionEvents, SessionId,
    SessionState, Stat, Watch, ZkError,
};

/// One client of the simulated ZooKeeper, with its own session. Cheap to clone; clones
/// share the session.
#[derive(Clone)]
pub struct SimClient {
    shared: Arc<Shared>,
    id: ClientId,
    session: SessionId,
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
        }
    }

    /// This client's index in its world, in creation order from 0.
    pub fn index(&self) -> ClientId {
        self.id
    }

    async fn call(&self, req: Request) -> Reply {
        let reply = self.shared.awaited(|reply| Staged::Request {
            client: self.id,
            req,
            reply,
        });
        match reply.await {
            Delivered::Reply(r) => r,
            other => unreachable!("a request was answered with {other:?}"),
        }
    }
}

fn unexpected(a: Answer) -> ! {
    panic!("simulated server answered a request with the wrong kind of answer: {a:?}")
}

impl Coordination for SimClient {
    fn session_id(&self) -> SessionId {
        self.session
    }

    fn session_state(&self) -> SessionState {
        self.shared.world().clients[self.id].state
    }

    fn session_events(&self) -> SessionEvents {
        self.shared.world().subscribe(self.id)
    }

    fn now(&self) -> Duration {
        Duration::from_micros(self.shared.world().now_us)
    }

    async fn sleep(&self, duration: Duration) {
        self.shared
            .awaited(|done| Staged::Sleep {
                client: self.id,
                duration_us: duration.as_micros() as u64,
                done,
            })
            .await;
    }

    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        let req = Request::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            mode,
        };
        match self.call(req).await? {
            Answer::Created(p, s) => Ok((p, s)),
            a => unexpected(a),
        }
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        let req = Request::Delete {
            path: path.to_owned(),
            version,
        };
        match self.call(req).await? {
            Answer::Done => Ok(()),
            a => unexpected(a),
        }
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        let req = Request::Exists {
            path: path.to_owned(),
            watch: false,
        };
        match self.call(req).await? {
            Answer::Exists(s, _) => Ok(s),
            a => unexpected(a),
        }
    }

    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), ZkError> {
        let req = Request::Exists {
            path: path.to_owned(),
            watch: true,
        };
        match self.call(req).await? {
            Answer::Exists(s, Some(w)) => Ok((s, w)),
            a => unexpected(a),
        }
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        let req = Request::GetData {
            path: path.to_owned(),
            watch: false,
        };
        match self.call(req).await? {
            Answer::Data(d, s, _) => Ok((d, s)),
            a => unexpected(a),
        }
    }

    async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), ZkError> {
        let req = Request::GetData {
            path: path.to_owned(),
            watch: true,
        };
        match self.call(req).await? {
            Answer::Data(d, s, Some(w)) => Ok((d, s, w)),
            a => unexpected(a),
        }
    }

    async fn get_children(&self, path: &str) -> Result<Vec<String>, ZkError> {
        let req = Request::GetChildren {
            path: path.to_owned(),
            watch: false,
        };
        match self.call(req).await? {
            Answer::Children(c, _) => Ok(c),
            a => unexpected(a),
        }
    }

    async fn get_children_watch(&self, path: &str) -> Result<(Vec<String>, Watch), ZkError> {
        let req = Request::GetChildren {
            path: path.to_owned(),
            watch: true,
        };
        match self.call(req).await? {
            Answer::Children(c, Some(w)) => Ok((c, w)),
            a => unexpected(a),
        }
    }

    async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, ZkError> {
        let req = Request::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version,
        };
        match self.call(req).await? {
            Answer::Stat(s) => Ok(s),
            a => unexpected(a),
        }
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        match self.call(Request::Multi(ops)).await? {
            Answer::Multi(r) => Ok(r),
            a => unexpected(a),
        }
    }

    async fn close(&self) -> Result<(), ZkError> {
        match self.call(Request::Close).await? {
            Answer::Done => Ok(()),
            a => unexpected(a),
        }
    }

    /// Staged like a request, so it takes its place among this actor's requests; the
    /// world then runs it as the client library's own work (no actor is spawned, so actor
    /// ids stay as they were). See the world's `detached` module.
    fn cleanup_detached(&self, what: DetachedCleanup) {
        self.shared.stage_from_drop(Staged::Detached {
            client: self.id,
            what,
        });
    }
}
