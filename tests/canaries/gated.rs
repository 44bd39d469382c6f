//! A recording client whose creates under a prefix wait at a gate: a scripted delay of
//! one client's request, for the real-server canaries.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use zklock_real::recording::RecordingClient;
use zklock_recipe::{
    Children, Coordination, CreateMode, DetachedCleanup, Op, OpResult, SessionEvents, SessionId,
    SessionState, Stat, Watch, ZkError,
};

/// Generous bound for anything that should happen "soon" on a loaded machine.
pub const SOON: Duration = Duration::from_secs(120);

/// Holds back every create under `prefix` until [`Gate::open`]: the scripted delay.
#[derive(Debug)]
pub struct Gate {
    prefix: String,
    reached: watch::Sender<bool>,
    open: watch::Sender<bool>,
}

impl Gate {
    pub fn new(prefix: &str) -> Arc<Gate> {
        Arc::new(Gate {
            prefix: prefix.to_owned(),
            reached: watch::Sender::new(false),
            open: watch::Sender::new(false),
        })
    }

    /// Waits until a create is held at the gate.
    pub async fn reached(&self) {
        let mut r = self.reached.subscribe();
        tokio::time::timeout(SOON, r.wait_for(|&held| held))
            .await
            .expect("the lease create reached the gate")
            .unwrap();
    }

    pub fn open(&self) {
        self.open.send_replace(true);
    }
}

/// A recording client whose creates under the gate's prefix wait for the gate.
#[derive(Clone, Debug)]
pub struct Gated {
    pub inner: RecordingClient,
    pub gate: Arc<Gate>,
}

impl Coordination for Gated {
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
    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        if path.starts_with(&self.gate.prefix) && !*self.gate.open.borrow() {
            self.gate.reached.send_replace(true);
            let mut open = self.gate.open.subscribe();
            let _ = open.wait_for(|&o| o).await;
        }
        self.inner.create(path, data, mode).await
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
    fn get_children(&self, path: &str) -> impl Future<Output = Result<Children, ZkError>> + Send {
        self.inner.get_children(path)
    }
    fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Children, Watch), ZkError>> + Send {
        self.inner.get_children_watch(path)
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
