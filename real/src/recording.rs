//! [`RecordingClient`]: a [`ZkClient`] that writes every request and session change into a
//! run's [`Recorder`], so a real run's history has the same op events as a simulated one.
//!
//! Watch events are recorded as zookeeper-client delivers them (see
//! [`ZkClient::on_watch_event`]). Each request is recorded as `OpInvoke` when it is issued (its future's first poll, which
//! is also when [`ZkClient`] sends it), then `OpOk`, `OpFail` with the error, or `OpUnknown`
//! for connection loss: the client cannot know whether the server applied it. Session
//! states are recorded by a task that follows the client's session events. Background
//! cleanup ([`Coordination::cleanup_detached`]) runs through the recording client too, so
//! its requests are in the history like any other, as in the simulation. Its first
//! request is sent at the call (see `crate::detached`), and recorded as issued then.

use crate::client::ZkClient;
use crate::detached::{self, CleanupHome, CleanupOps};
use crate::recorder::Recorder;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use zklock_recipe::history::{EventKind, ZkOp};
use zklock_recipe::{
    Children, Coordination, CreateMode, DetachedCleanup, Op, OpResult, SessionEvents, SessionId,
    SessionState, Stat, Watch, ZkError,
};

#[derive(Debug)]
struct Inner {
    client: Arc<ZkClient>,
    index: u32,
    recorder: Arc<Recorder>,
    /// Where background cleanup runs: it may be handed over from a `Drop` outside any task.
    cleanup_home: CleanupHome,
}

/// A client of a real run: [`Coordination`] over a [`ZkClient`], recording into a shared
/// [`Recorder`] as client number `index`. Cheap to clone; clones share the session.
#[derive(Clone, Debug)]
pub struct RecordingClient {
    inner: Arc<Inner>,
}

impl RecordingClient {
    /// Wraps `client` as client `index` of `recorder`'s run. Records the session's current
    /// state now (a new session shows up in the history as `Connected`), then every change
    /// until the session ends. Must run inside a tokio runtime.
    pub fn new(client: Arc<ZkClient>, index: u32, recorder: Arc<Recorder>) -> RecordingClient {
        let session = client.session_id();
        // Subscribe before reading the state, so no change falls between the two.
        let mut events = client.session_events();
        recorder.record(
            index,
            session,
            EventKind::Session {
                state: client.session_state(),
            },
        );
        let watch_recorder = Arc::clone(&recorder);
        client.on_watch_event(move |event| {
            watch_recorder.record(
                index,
                session,
                EventKind::WatchEvent {
                    event_type: event.event_type,
                    path: event.path.clone(),
                },
            );
        });
        let task_recorder = Arc::clone(&recorder);
        // Ends by itself: the client's broadcast closes after a terminal state or when the
        // client is dropped.
        tokio::spawn(async move {
            while let Some(state) = events.next().await {
                task_recorder.record(index, session, EventKind::Session { state });
            }
        });
        RecordingClient {
            inner: Arc::new(Inner {
                client,
                index,
                recorder,
                // The recorder's tasks run on tokio's workers, so its cleanup does too.
                cleanup_home: CleanupHome::workers(),
            }),
        }
    }

    /// The wrapped client (e.g. to force its session to expire through the harness).
    pub fn zk(&self) -> &Arc<ZkClient> {
        &self.inner.client
    }

    /// This client's number in the history.
    pub fn index(&self) -> u32 {
        self.inner.index
    }

    /// The run's recorder.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.inner.recorder
    }

    /// Records `kind` for this client and session, stamped now.
    pub fn record(&self, kind: EventKind) {
        let i = &self.inner;
        i.recorder.record(i.index, i.client.session_id(), kind);
    }

    /// Runs one request between its invoke and completion events.
    async fn op<T, F>(&self, op: ZkOp, path: &str, watch: bool, request: F) -> Result<T, ZkError>
    where
        F: Future<Output = Result<T, ZkError>>,
    {
        let i = &self.inner;
        let session = i.client.session_id();
        let op_id = i.recorder.invoke(i.index, session, op, path, watch);
        let result = request.await;
        i.record_outcome(session, op_id, &result);
        result
    }
}

/// A request recorded as issued, whose outcome is still to be recorded.
struct Invoked {
    inner: Arc<Inner>,
    session: SessionId,
    op_id: u64,
}

impl Invoked {
    /// Records the invoke of `op` on `path` now: send the request right after.
    fn now(client: &RecordingClient, op: ZkOp, path: &str, watch: bool) -> Invoked {
        let inner = Arc::clone(&client.inner);
        let session = inner.client.session_id();
        let op_id = inner.recorder.invoke(inner.index, session, op, path, watch);
        Invoked {
            inner,
            session,
            op_id,
        }
    }

    /// Awaits the reply of the request sent and records its outcome.
    async fn outcome<T>(
        self,
        reply: impl Future<Output = Result<T, ZkError>>,
    ) -> Result<T, ZkError> {
        let result = reply.await;
        self.inner.record_outcome(self.session, self.op_id, &result);
        result
    }
}

impl Inner {
    fn record_outcome<T>(&self, session: SessionId, op_id: u64, result: &Result<T, ZkError>) {
        let kind = match result {
            Ok(_) => EventKind::OpOk { op_id },
            Err(e) if e.is_connection_loss() => EventKind::OpUnknown { op_id },
            // After a local expiry a request that was sent may have been applied: its
            // SessionExpired says nothing of that.
            Err(ZkError::SessionExpired) if self.client.expired_locally() => {
                EventKind::OpUnknown { op_id }
            }
            Err(e) => EventKind::OpFail {
                op_id,
                error: e.clone(),
            },
        };
        self.recorder.record(self.index, session, kind);
    }
}

/// Background cleanup through the recording client, so each request is in the history.
impl CleanupOps for RecordingClient {
    fn delete(&self, path: &str) -> impl Future<Output = Result<(), ZkError>> + Send + use<> {
        let invoked = Invoked::now(self, ZkOp::Delete, path, false);
        invoked.outcome(self.inner.client.delete_now(path, None))
    }
    fn children(
        &self,
        dir: &str,
    ) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send + use<> {
        let invoked = Invoked::now(self, ZkOp::GetChildren, dir, false);
        invoked.outcome(self.inner.client.get_children_now(dir))
    }
    async fn owner(&self, path: &str) -> Result<Option<i64>, ZkError> {
        Ok(self.exists(path).await?.map(|s| s.ephemeral_owner))
    }
    fn session(&self) -> SessionId {
        self.session_id()
    }
    fn pause(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        self.sleep(duration)
    }
}

impl Coordination for RecordingClient {
    fn session_id(&self) -> SessionId {
        self.inner.client.session_id()
    }

    fn next_object_number(&self) -> u64 {
        self.inner.client.next_object_number()
    }

    fn session_state(&self) -> SessionState {
        self.inner.client.session_state()
    }

    fn session_events(&self) -> SessionEvents {
        self.inner.client.session_events()
    }

    fn now(&self) -> Duration {
        self.inner.client.now()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        self.inner.client.sleep(duration)
    }

    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        let request = self.inner.client.create(path, data, mode);
        self.op(ZkOp::Create, path, false, request).await
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        let request = self.inner.client.delete(path, version);
        self.op(ZkOp::Delete, path, false, request).await
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        let request = self.inner.client.exists(path);
        self.op(ZkOp::Exists, path, false, request).await
    }

    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), ZkError> {
        let request = self.inner.client.exists_watch(path);
        self.op(ZkOp::Exists, path, true, request).await
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        let request = self.inner.client.get_data(path);
        self.op(ZkOp::GetData, path, false, request).await
    }

    async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), ZkError> {
        let request = self.inner.client.get_data_watch(path);
        self.op(ZkOp::GetData, path, true, request).await
    }

    async fn get_children(&self, path: &str) -> Result<Children, ZkError> {
        let request = self.inner.client.get_children(path);
        self.op(ZkOp::GetChildren, path, false, request).await
    }

    async fn get_children_watch(&self, path: &str) -> Result<(Children, Watch), ZkError> {
        let request = self.inner.client.get_children_watch(path);
        self.op(ZkOp::GetChildren, path, true, request).await
    }

    async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, ZkError> {
        let request = self.inner.client.set_data(path, data, version);
        self.op(ZkOp::SetData, path, false, request).await
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        // As the simulation: a multi is named by its first operation's path.
        let path = ops.first().map_or(String::new(), |o| o.path().to_owned());
        let request = self.inner.client.multi(ops);
        self.op(ZkOp::Multi, &path, false, request).await
    }

    async fn close(&self) -> Result<(), ZkError> {
        let request = self.inner.client.close();
        self.op(ZkOp::Close, "", false, request).await
    }

    fn cleanup_detached(&self, what: DetachedCleanup) {
        detached::start(&self.inner.cleanup_home, self.clone(), what);
    }
}
