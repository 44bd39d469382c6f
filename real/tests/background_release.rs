//! `LockGuard::release_in_background` on a real server: the delete is sent at the call,
//! ahead of the client's next requests, so a client that acquires again at once never
//! sees its own previous node. Both clients are covered: `ZkClient` (its background work
//! runs on zookeeper-client's raw handle) and `RecordingClient` (through the recorder).
//!
//! Needs Java and ZooKeeper (`apt-get install -y zookeeper`); without them each test prints
//! "skipping: ..." and passes, except under `CI=true`, where it fails.

use crate::common::zookeeper_available;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::block_in_place;
use tokio::time::timeout;
use zklock_real::harness::TestServer;
use zklock_real::recorder::Recorder;
use zklock_real::recording::RecordingClient;
use zklock_real::{ZkClient, reactor};
use zklock_recipe::history::{EventKind, ZkOp};
use zklock_recipe::{
    Children, Coordination, CreateMode, DetachedCleanup, Lock, LockOptions, Op, OpResult,
    SessionEvents, SessionId, SessionState, Stat, Watch, ZkError,
};

const SESSION_MS: u64 = 5_000;
const CONNECT_MS: u64 = 10_000;
/// Bound for anything that should happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(120);
/// Acquire → release_in_background cycles per client.
const CYCLES: usize = 200;

/// A client that keeps every listing it returns, to show what the recipe saw.
#[derive(Clone, Debug)]
struct Listings<C> {
    inner: C,
    seen: Arc<Mutex<Vec<Vec<String>>>>,
}

impl<C> Listings<C> {
    fn new(inner: C) -> Listings<C> {
        Listings {
            inner,
            seen: Arc::default(),
        }
    }

    /// The listings returned since the last call.
    fn take(&self) -> Vec<Vec<String>> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }

    fn keep(&self, children: &Children) {
        self.seen.lock().unwrap().push(children.to_vec());
    }
}

impl<C: Coordination> Coordination for Listings<C> {
    fn session_id(&self) -> SessionId {
        self.inner.session_id()
    }
    fn session_state(&self) -> SessionState {
        self.inner.session_state()
    }
    fn session_events(&self) -> SessionEvents {
        self.inner.session_events()
    }
    fn now(&self) -> Duration {
        self.inner.now()
    }
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        self.inner.sleep(duration)
    }
    fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> impl Future<Output = Result<(String, Stat), ZkError>> + Send {
        self.inner.create(path, data, mode)
    }
    fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), ZkError>> + Send {
        self.inner.delete(path, version)
    }
    fn exists(&self, path: &str) -> impl Future<Output = Result<Option<Stat>, ZkError>> + Send {
        self.inner.exists(path)
    }
    fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, Watch), ZkError>> + Send {
        self.inner.exists_watch(path)
    }
    fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), ZkError>> + Send {
        self.inner.get_data(path)
    }
    fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Watch), ZkError>> + Send {
        self.inner.get_data_watch(path)
    }
    async fn get_children(&self, path: &str) -> Result<Children, ZkError> {
        let children = self.inner.get_children(path).await?;
        self.keep(&children);
        Ok(children)
    }
    async fn get_children_watch(&self, path: &str) -> Result<(Children, Watch), ZkError> {
        let (children, watch) = self.inner.get_children_watch(path).await?;
        self.keep(&children);
        Ok((children, watch))
    }
    fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, ZkError>> + Send {
        self.inner.set_data(path, data, version)
    }
    fn multi(&self, ops: Vec<Op>) -> impl Future<Output = Result<Vec<OpResult>, ZkError>> + Send {
        self.inner.multi(ops)
    }
    fn close(&self) -> impl Future<Output = Result<(), ZkError>> + Send {
        self.inner.close()
    }
    fn cleanup_detached(&self, what: DetachedCleanup) {
        self.inner.cleanup_detached(what)
    }
}

/// Acquires on `dir`, then `CYCLES` times releases in the background and acquires again
/// at once, asserting that every listing the recipe got shows only the node it then held.
/// Ends with an awaited release, leaving no node.
async fn acquire_again_at_once<C: Coordination + Clone + 'static>(client: C, dir: &str) {
    let client = Listings::new(client);
    let lock = Lock::new(client.clone(), dir, LockOptions::default()).unwrap();
    let mut guard = timeout(SOON, lock.acquire()).await.unwrap().unwrap();
    client.take();
    for cycle in 0..CYCLES {
        let previous = guard.node().name.clone();
        guard.release_in_background();
        guard = timeout(SOON, lock.acquire()).await.unwrap().unwrap();
        let listings = client.take();
        // One listing, right behind the create; a second one would mean the recipe saw
        // a node ahead of its own and waited for it.
        assert_eq!(
            listings,
            [vec![guard.node().name.clone()]],
            "cycle {cycle}: the previous node was {previous}"
        );
    }
    guard.release().await.unwrap();
    let left = client.get_children(dir).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_acquiring_again_at_once_never_sees_its_previous_node() {
    if !zookeeper_available() {
        return;
    }
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let addr = server.connect_string();
    let zk = ZkClient::connect(&addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    acquire_again_at_once(Arc::new(zk), "/locks/background").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_client_acquiring_again_at_once_records_each_delete_before_the_next_create() {
    if !zookeeper_available() {
        return;
    }
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let addr = server.connect_string();
    let zk = ZkClient::connect(&addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    let recorder = Arc::new(Recorder::new(100_000));
    let client = RecordingClient::new(Arc::new(zk), 0, Arc::clone(&recorder));
    acquire_again_at_once(client, "/locks/background-recorded").await;

    // The history shows each cycle as the recipe sent it: the delete first, answered ok.
    // A background delete's answer is recorded by its task on tokio's workers, which a
    // loaded machine may run after this task comes here: wait until each one is in.
    let deadline = tokio::time::Instant::now() + SOON;
    let events = loop {
        let events = recorder.history().events;
        if every_delete_answered(&events) || tokio::time::Instant::now() >= deadline {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let invoked: Vec<(u64, ZkOp)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::OpInvoke { op_id, op, .. } => Some((*op_id, *op)),
            _ => None,
        })
        .collect();
    let cycles: Vec<&[(u64, ZkOp)]> = invoked
        .windows(3)
        .filter(|w| w[0].1 == ZkOp::Delete && w[1].1 == ZkOp::Create)
        .collect();
    assert_eq!(cycles.len(), CYCLES, "{invoked:?}");
    for cycle in cycles {
        assert_eq!(cycle[2].1, ZkOp::GetChildren, "{cycle:?}");
        let delete = cycle[0].0;
        assert!(
            events
                .iter()
                .any(|e| e.kind == EventKind::OpOk { op_id: delete }),
            "delete {delete} not answered ok"
        );
    }
}

/// Whether every delete invoked in `events` has its outcome recorded.
fn every_delete_answered(events: &[zklock_recipe::history::Event]) -> bool {
    let outcome_of = |id: u64| {
        events.iter().any(|e| {
            matches!(e.kind,
                EventKind::OpOk { op_id }
                | EventKind::OpFail { op_id, .. }
                | EventKind::OpUnknown { op_id } if op_id == id)
        })
    };
    events.iter().all(|e| match e.kind {
        EventKind::OpInvoke {
            op_id,
            op: ZkOp::Delete,
            ..
        } => outcome_of(op_id),
        _ => true,
    })
}

/// The same through `reactor::block_on`, where a client connected inside also awaits its
/// background deletes' replies (on the calling thread, next to its session task).
#[test]
fn on_the_reactor_thread_a_client_acquiring_again_at_once_never_sees_its_previous_node() {
    if !zookeeper_available() {
        return;
    }
    let server = TestServer::start().expect("ZooKeeper server starts");
    let addr = server.connect_string();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    reactor::block_on(&runtime, async {
        let zk = Arc::new(
            ZkClient::connect(&addr, SESSION_MS, CONNECT_MS)
                .await
                .expect("client connects"),
        );
        acquire_again_at_once(Arc::clone(&zk), "/locks/background-reactor").await;
        zk.close().await.unwrap();
    });
}
