//! [`ZkClient`]: the `Coordination` trait over a real ZooKeeper session.

use crate::convert::{self, zk_error};
use crate::detached::{self, CleanupHome, Raw};
use crate::error::RealError;
use crate::watch::WatchForwarder;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use zklock_recipe::path::validate_path;
use zklock_recipe::{
    Children, Coordination, CreateMode, DetachedCleanup, Op, OpResult, SessionBroadcast,
    SessionEvents, SessionId, SessionState, Stat, Watch, WatchedEvent, ZkError,
};
use zookeeper_client as zk;

/// The process-wide epoch of [`monotonic_now`], so every client of one process (and the
/// history a real run records) shares one clock.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Monotonic time since the process-wide epoch (set by the first call, or the first
/// connect). This is what [`ZkClient::now`](Coordination::now) returns.
pub fn monotonic_now() -> Duration {
    EPOCH.get_or_init(Instant::now).elapsed()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a single assignment, so a poisoned lock still
    // holds consistent data.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Session state as the broadcast last reported it, with the subscribers.
#[derive(Debug)]
struct StateHub {
    state: SessionState,
    broadcast: SessionBroadcast,
}

impl StateHub {
    /// Moves to `state` and tells subscribers; a terminal state is final.
    fn advance(&mut self, state: SessionState) {
        if self.state == state || self.state.is_terminal() {
            return;
        }
        self.state = state;
        self.broadcast.send(state);
        if state.is_terminal() {
            self.broadcast.close();
        }
    }
}

/// A ZooKeeper session through the `zookeeper-client` crate, implementing [`Coordination`].
///
/// * Requests are sent when their future is first polled, in that order.
/// * Paths are checked before anything is sent, by
///   [`validate_path`](zklock_recipe::path::validate_path), as ZooKeeper's server
///   checks them (by UTF-16 code units: a character outside the Basic Multilingual Plane
///   is refused): an invalid one fails with BadArguments, connected or not. A multi with
///   one is refused whole, naming the first such op.
/// * A request whose frame exceeds the server's jute.maxbuffer (1,048,575 bytes by
///   default, `zklock_sim::REQUEST_BYTES_MAX`) makes the server drop the connection: it
///   fails with ConnectionLoss, unapplied, and the client reconnects.
/// * A create inside a multi answers with a placeholder stat (zxids, version and
///   cversion -1, the rest 0): zookeeper-client sends it as a plain create, whose reply
///   has no stat.
/// * While the client is disconnected, requests fail at once with
///   [`ZkError::ConnectionLoss`], as in zklock's simulation; zookeeper-client alone would
///   queue them until it reconnects.
/// * Session states come from zookeeper-client's state watcher, which keeps only the latest
///   state: a very short Disconnected may be coalesced into the Connected that followed it.
/// * Dropping the client closes its session in the background (zookeeper-client sends
///   CloseSession when its last handle goes); [`close`](Coordination::close) does it and
///   waits for the server's answer.
/// * [`cleanup_detached`](Coordination::cleanup_detached) sends its first request at the
///   call, on a clone of zookeeper-client's handle, so it goes out before any request this
///   client issues afterwards. A task spawned on the runtime the client was connected in
///   (a `Drop` may run outside any task), or on the calling thread for a client connected
///   inside [`reactor::block_on`](crate::reactor::block_on) when called there, awaits the
///   reply and does the rest: requests wait out a disconnect there, connection loss is
///   retried with backoff, and the task ends once the node or the session is gone. Until
///   then that handle keeps the session open even if this client is dropped.
///
/// All methods must run inside a tokio runtime. For the shortest round trips, run them
/// through [`reactor::block_on`](crate::reactor::block_on), which keeps a reply on the
/// thread that read it.
#[derive(Debug)]
pub struct ZkClient {
    /// `None` after `close`; every operation then fails. In an `Arc` so that a request
    /// takes a reference, not a clone of zookeeper-client's handle (which allocates).
    client: Mutex<Option<Arc<zk::Client>>>,
    session_id: SessionId,
    session_timeout: Duration,
    addr: String,
    hub: Arc<Mutex<StateHub>>,
    /// Set by [`expire_locally`](ZkClient::expire_locally): every failure since is
    /// SessionExpired.
    expired_locally: AtomicBool,
    /// Lock objects of this session numbered so far ([`Coordination::next_object_number`]).
    objects: AtomicU64,
    watches: WatchForwarder,
    state_task: tokio::task::JoinHandle<()>,
    /// Where background cleanup runs: it may be handed over from a `Drop` outside a task.
    cleanup_home: CleanupHome,
}

impl Drop for ZkClient {
    fn drop(&mut self) {
        self.state_task.abort();
    }
}

impl ZkClient {
    /// Connects to `addr` (`host:port[,host:port...]`), asking for a session timeout of
    /// `session_timeout_ms` (the server clamps it to its min/max). Fails with
    /// [`RealError::ConnectTimeout`] when no server establishes a session within
    /// `connect_timeout_ms`.
    pub async fn connect(
        addr: &str,
        session_timeout_ms: u64,
        connect_timeout_ms: u64,
    ) -> Result<ZkClient, RealError> {
        monotonic_now();
        let timeout = Duration::from_millis(connect_timeout_ms);
        let connector =
            zk::Client::connector().with_session_timeout(Duration::from_millis(session_timeout_ms));
        let started = std::time::Instant::now();
        let client = match tokio::time::timeout(timeout, connector.connect(addr)).await {
            // zookeeper-client gives up on its own after about a session timeout.
            Err(_) | Ok(Err(zk::Error::Timeout)) => {
                return Err(RealError::ConnectTimeout {
                    addr: addr.to_string(),
                    timeout,
                    waited: started.elapsed().min(timeout),
                });
            }
            Ok(Err(error)) => {
                return Err(RealError::Connect {
                    addr: addr.to_string(),
                    error: zk_error(error),
                });
            }
            Ok(Ok(client)) => client,
        };
        // Best effort: without it requests are slower, not wrong.
        let _ = crate::nodelay::set_on_connections_to(addr);
        Ok(ZkClient::from_client(client, addr))
    }

    fn from_client(client: zk::Client, addr: &str) -> ZkClient {
        // The watcher starts at the current state, so no change between here and the task
        // is lost.
        let mut states = client.state_watcher();
        let hub = Arc::new(Mutex::new(StateHub {
            state: convert::session_state(states.peek_state()),
            broadcast: SessionBroadcast::default(),
        }));
        let task_hub = Arc::clone(&hub);
        let connect_string = addr.to_string();
        let state_task = tokio::spawn(async move {
            loop {
                let state = convert::session_state(states.changed().await);
                if state == SessionState::Connected {
                    // A reconnect opened a new socket, with Nagle on again.
                    let _ = crate::nodelay::set_on_connections_to(&connect_string);
                }
                let mut hub = lock(&task_hub);
                hub.advance(state);
                // After a terminal state zookeeper-client reports nothing more.
                if hub.state.is_terminal() {
                    return;
                }
            }
        });
        ZkClient {
            session_id: SessionId(client.session_id().0),
            session_timeout: client.session_timeout(),
            client: Mutex::new(Some(Arc::new(client))),
            addr: addr.to_string(),
            hub,
            expired_locally: AtomicBool::new(false),
            objects: AtomicU64::new(0),
            watches: WatchForwarder::default(),
            state_task,
            cleanup_home: CleanupHome::here(),
        }
    }

    /// Calls `hook` with each watch event zookeeper-client delivers to a watch set from
    /// now on, as it arrives (before the reply to any later request is handed over).
    /// Events of watches the recipe dropped first are not delivered, so not told.
    pub fn on_watch_event(&self, hook: impl Fn(&WatchedEvent) + Send + Sync + 'static) {
        self.watches.set_hook(Arc::new(hook));
    }

    /// The connect string this client was created with.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The session timeout the server granted.
    pub fn negotiated_session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// The live client, or the error every request gets now. Fails fast while disconnected
    /// (see the type's docs).
    fn live(&self) -> Result<Arc<zk::Client>, ZkError> {
        let client = lock(&self.client).clone();
        let Some(client) = client else {
            return Err(match lock(&self.hub).state {
                SessionState::Expired => ZkError::SessionExpired,
                _ => ZkError::SessionClosed,
            });
        };
        match client.state() {
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => Ok(client),
            zk::SessionState::Disconnected => Err(ZkError::ConnectionLoss),
            zk::SessionState::Expired => Err(ZkError::SessionExpired),
            zk::SessionState::Closed | zk::SessionState::AuthFailed => Err(ZkError::SessionClosed),
        }
    }

    /// Hands a reply to the recipe, after any watch event that arrived before it.
    fn reply<T>(&self, result: Result<T, zk::Error>) -> Result<T, ZkError> {
        self.watches.flush();
        result.map_err(|e| self.failure(e))
    }

    /// A request's failure as the recipe sees it. After a local expiry every request
    /// still pending fails with SessionExpired, as ZooKeeper's client fails its pending
    /// packets once its handle is closed (zookeeper-client reports the cut connection).
    fn failure(&self, error: zk::Error) -> ZkError {
        if self.expired_locally.load(Ordering::Acquire) {
            ZkError::SessionExpired
        } else {
            zk_error(error)
        }
    }

    /// Declares the session expired on this side while the server still holds it, as
    /// Curator does by its own session timer (its default connection handling since 3.0)
    /// and in its KillSession (ZooKeeper's `injectSessionExpiration`). The client reports
    /// Expired at once; requests in flight and pending watches fail with SessionExpired,
    /// and so does every request after. The server keeps the session, and its ephemerals,
    /// until it has heard nothing from it for a session timeout: a session the process
    /// opens meanwhile sees them (CURATOR-498).
    ///
    /// `close_connection` runs after the client reports Expired and before it lets go of
    /// zookeeper-client's handle. It must keep the old session from reaching the server
    /// again, as [`ClientLink::expire_locally`](crate::faults::ClientLink::expire_locally)
    /// does: zookeeper-client would otherwise resume the session on a reconnect, or send
    /// CloseSession when its last handle goes, and either ends the server's wait. Returns
    /// false, without calling it, when the session was over already.
    pub fn expire_locally(&self, close_connection: impl FnOnce()) -> bool {
        let client = {
            let mut hub = lock(&self.hub);
            if hub.state.is_terminal() {
                return false;
            }
            let Some(client) = lock(&self.client).take() else {
                return false;
            };
            self.expired_locally.store(true, Ordering::Release);
            hub.advance(SessionState::Expired);
            client
        };
        self.watches.fail_all(&ZkError::SessionExpired);
        close_connection();
        // Requests in flight hold handles too; they fail with the cut connection.
        drop(client);
        true
    }

    /// Whether [`expire_locally`](ZkClient::expire_locally) ended this session.
    pub fn expired_locally(&self) -> bool {
        self.expired_locally.load(Ordering::Acquire)
    }

    /// Sends a delete at the call (where [`delete`](Coordination::delete) sends at its
    /// future's first poll); the future awaits the reply. For the client's background
    /// work: no recipe sees the reply, so no watch is flushed ahead of it.
    pub(crate) fn delete_now(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<(), ZkError>> + Send + use<> {
        let sent = validate_path(path, false)
            .and_then(|()| self.live())
            .map(|client| client.delete(path, version));
        async move { sent?.await.map_err(zk_error) }
    }

    /// Sends a listing at the call, as [`delete_now`](ZkClient::delete_now).
    pub(crate) fn get_children_now(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>, ZkError>> + Send + use<> {
        let sent = validate_path(path, false)
            .and_then(|()| self.live())
            .map(|client| client.get_children(path));
        async move {
            let (children, _) = sent?.await.map_err(zk_error)?;
            Ok(children)
        }
    }

    async fn do_multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        let failed_at = |index: usize, error: ZkError| ZkError::MultiFailed {
            index,
            error: Box::new(error),
        };
        for (index, op) in ops.iter().enumerate() {
            let sequential = matches!(op, Op::Create { mode, .. } if mode.is_sequential());
            validate_path(op.path(), sequential).map_err(|e| failed_at(index, e))?;
        }
        let client = self.live()?;
        let mut writer = client.new_multi_writer();
        for (index, op) in ops.iter().enumerate() {
            let added = match op {
                Op::Check { path, version } => writer.add_check_version(path, *version),
                Op::Create { path, data, mode } => {
                    let options = convert::create_mode(*mode).with_acls(zk::Acls::anyone_all());
                    writer.add_create(path, data, &options)
                }
                Op::Delete { path, version } => writer.add_delete(path, *version),
                Op::SetData {
                    path,
                    data,
                    version,
                } => writer.add_set_data(path, data, *version),
            };
            added.map_err(|e| failed_at(index, zk_error(e)))?;
        }
        let result = writer.commit().await;
        self.watches.flush();
        let results = result.map_err(|e| match e {
            zk::MultiWriteError::OperationFailed { index, source } => {
                failed_at(index, zk_error(source))
            }
            zk::MultiWriteError::RequestFailed { source } => self.failure(source),
        })?;
        results
            .into_iter()
            .map(|r| match r {
                zk::MultiWriteResult::Check => Ok(OpResult::Check),
                zk::MultiWriteResult::Delete => Ok(OpResult::Delete),
                zk::MultiWriteResult::Create { path, stat } => Ok(OpResult::Create {
                    path,
                    stat: convert::stat(&stat),
                }),
                zk::MultiWriteResult::SetData { stat } => Ok(OpResult::SetData {
                    stat: convert::stat(&stat),
                }),
                // The enum is non-exhaustive; only the four kinds above are ever sent.
                other => Err(ZkError::Other {
                    code: -1,
                    message: format!("unexpected multi result {other:?}"),
                }),
            })
            .collect()
    }

    async fn do_close(&self) -> Result<(), ZkError> {
        let client = self.live()?;
        let mut states = client.state_watcher();
        // zookeeper-client sends CloseSession once its last handle is gone.
        *lock(&self.client) = None;
        drop(client);
        let bound = self.session_timeout.max(Duration::from_secs(1)) * 2;
        let outcome = tokio::time::timeout(bound, async {
            loop {
                let state = states.changed().await;
                if state.is_terminated() {
                    return state;
                }
            }
        })
        .await;
        let mut hub = lock(&self.hub);
        match outcome {
            Ok(zk::SessionState::Expired) => {
                hub.advance(SessionState::Expired);
                Err(ZkError::SessionExpired)
            }
            Ok(_) => {
                hub.advance(SessionState::Closed);
                Ok(())
            }
            // The server never confirmed; the session closes or expires without us. Either
            // way this client is done with it.
            Err(_) => {
                hub.advance(SessionState::Closed);
                Err(ZkError::ConnectionLoss)
            }
        }
    }
}

impl Coordination for ZkClient {
    fn session_id(&self) -> SessionId {
        self.session_id
    }

    fn next_object_number(&self) -> u64 {
        self.objects.fetch_add(1, Ordering::Relaxed)
    }

    fn session_state(&self) -> SessionState {
        let reported = lock(&self.hub).state;
        if reported.is_terminal() {
            return reported;
        }
        // The library's own state may be ahead of the broadcast task.
        match lock(&self.client).as_ref() {
            Some(client) => convert::session_state(client.state()),
            None => reported,
        }
    }

    fn session_events(&self) -> SessionEvents {
        lock(&self.hub).broadcast.subscribe()
    }

    fn now(&self) -> Duration {
        monotonic_now()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }

    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<(String, Stat), ZkError> {
        validate_path(path, mode.is_sequential())?;
        let client = self.live()?;
        let options = convert::create_mode(mode).with_acls(zk::Acls::anyone_all());
        let result = client.create(path, data, &options).await;
        let (stat, sequence) = self.reply(result)?;
        let created = if mode.is_sequential() {
            format!("{path}{sequence}")
        } else {
            path.to_string()
        };
        Ok((created, convert::stat(&stat)))
    }

    async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.delete(path, version).await;
        self.reply(result)
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.check_stat(path).await;
        Ok(self.reply(result)?.as_ref().map(convert::stat))
    }

    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.check_and_watch_stat(path).await;
        let (stat, watcher) = self.reply(result)?;
        Ok((
            stat.as_ref().map(convert::stat),
            self.watches.forward(watcher),
        ))
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat), ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.get_data(path).await;
        let (data, stat) = self.reply(result)?;
        Ok((data, convert::stat(&stat)))
    }

    async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.get_and_watch_data(path).await;
        let (data, stat, watcher) = self.reply(result)?;
        Ok((data, convert::stat(&stat), self.watches.forward(watcher)))
    }

    async fn get_children(&self, path: &str) -> Result<Children, ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.list_children(path).await;
        self.reply(result).map(Children::from)
    }

    async fn get_children_watch(&self, path: &str) -> Result<(Children, Watch), ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.list_and_watch_children(path).await;
        let (children, watcher) = self.reply(result)?;
        Ok((children.into(), self.watches.forward(watcher)))
    }

    async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat, ZkError> {
        validate_path(path, false)?;
        let client = self.live()?;
        let result = client.set_data(path, data, version).await;
        Ok(convert::stat(&self.reply(result)?))
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, ZkError> {
        self.do_multi(ops).await
    }

    async fn close(&self) -> Result<(), ZkError> {
        self.do_close().await
    }

    fn cleanup_detached(&self, what: DetachedCleanup) {
        // After `close` there is no session left to clean.
        let Some(client) = lock(&self.client).clone() else {
            return;
        };
        let session = self.session_id;
        detached::start(&self.cleanup_home, Raw { client, session }, what);
    }
}
