//! zookeeper-client's `Client::lock` as a driver, in process: a task that speaks the same
//! protocol over an in-memory pipe, so that the rest of zklock drives it as any other
//! driver. Its node is named as Curator's (`<dir>/_c_<uuid>-lock-<seq>`), its token is the
//! node's czxid. The crate has neither a try nor a timed acquire, so the driver times the
//! lock's future out (try: after no time) and drops it, which is how the crate cancels.
//! Releasing drops the lock guard, which deletes the node in the background, as the crate
//! does. After an expiry (terminal in zookeeper-client) it connects a new session.
//!
//! Process faults (pause, crash) do not reach into the task: its connections get them
//! (the proxies hold or cut its traffic), and a crash ends the task with the client's.

use super::conn::Conn;
use super::protocol::LINE_BYTES_MAX;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use zookeeper_client as zk;

/// Starts the driver task; the connection zklock speaks to it through.
pub(super) fn spawn(
    name: &str,
    connect: &str,
    lock_path: &str,
    session_timeout_ms: u64,
    fatal: Arc<Mutex<Option<String>>>,
) -> Conn {
    let (ours, theirs) = tokio::io::duplex(2 * LINE_BYTES_MAX);
    let (our_read, our_write) = tokio::io::split(ours);
    let (their_read, their_write) = tokio::io::split(theirs);
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let mut w = their_write;
        while let Some(v) = rx.recv().await {
            let line = format!("{v}\n");
            if w.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let driver = Driver {
        tx,
        state: Arc::new(Mutex::new(State {
            params: Params {
                connect: connect.to_owned(),
                dir: lock_path.to_owned(),
                session_timeout: Duration::from_millis(session_timeout_ms),
            },
            client: None,
            holds: HashMap::new(),
            acquiring: HashMap::new(),
            follow: None,
        })),
    };
    let task = tokio::spawn(driver.serve(their_read));
    let conn = Conn::new(name.to_owned(), our_read, our_write, None, fatal);
    // The task ends with the connection: dropping the conn closes the pipe, and `serve`
    // returns at its end; abort-on-drop is not needed.
    drop(task);
    conn
}

/// What a session is opened with: the command line's, or an `open`'s.
#[derive(Clone)]
struct Params {
    connect: String,
    dir: String,
    session_timeout: Duration,
}

struct State {
    params: Params,
    /// The session's client; None between a reset and an open.
    client: Option<Arc<zk::Client>>,
    holds: HashMap<u64, zk::OwnedLockClient>,
    acquiring: HashMap<u64, tokio::task::AbortHandle>,
    /// The task following the session's state (it holds the client).
    follow: Option<tokio::task::AbortHandle>,
}

/// Between two attempts to connect a new session after an expiry.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);
/// How long opening a session may keep trying before the driver says it could not.
const OPEN_DEADLINE: Duration = Duration::from_secs(30);

struct Driver {
    tx: mpsc::UnboundedSender<Value>,
    state: Arc<Mutex<State>>,
}

impl Driver {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, v: Value) {
        let _ = self.tx.send(v);
    }

    async fn connect(&self) -> Result<Arc<zk::Client>, String> {
        let params = self.state().params.clone();
        let client = zk::Client::connector()
            .with_session_timeout(params.session_timeout)
            .connect(&params.connect)
            .await
            .map_err(|e| format!("connecting: {e}"))?;
        let _ = crate::nodelay::set_on_connections_to(&params.connect);
        let client = Arc::new(client);
        self.state().client = Some(Arc::clone(&client));
        self.emit(
            json!({"event": "session", "state": "connected", "session_id": client.session_id().0}),
        );
        Ok(client)
    }

    /// Follows `client`'s session: reports its changes and the loss of every hold, and
    /// connects a new session after an expiry.
    fn follow(self: &Arc<Self>, client: Arc<zk::Client>) {
        let me = Arc::clone(self);
        let task = tokio::spawn(async move {
            let mut states = client.state_watcher();
            loop {
                let state = states.changed().await;
                if !me.is_current(&client) {
                    // Reset: nothing of the old session is reported.
                    return;
                }
                let (name, terminal) = match state {
                    zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                        ("connected", false)
                    }
                    zk::SessionState::Disconnected => ("disconnected", false),
                    zk::SessionState::Expired => ("expired", true),
                    _ => ("expired", true),
                };
                me.emit(
                    json!({"event": "session", "state": name, "session_id": client.session_id().0}),
                );
                if name != "connected" {
                    let held: Vec<u64> = me.state().holds.keys().copied().collect();
                    for id in held {
                        me.emit(json!({"event": "lost", "id": id, "reason": format!("zookeeper-client {state:?}")}));
                    }
                }
                if terminal {
                    break;
                }
            }
            // An application connects again until it can: the proxy may still hold the
            // traffic (a pause past the session timeout ends in the expiry), and a
            // connect that times out then is no broken driver. A reset aborts this task.
            while me.is_current(&client) {
                match me.connect().await {
                    Ok(next) => {
                        me.follow(next);
                        break;
                    }
                    Err(_) => tokio::time::sleep(RECONNECT_PAUSE).await,
                }
            }
        });
        // It holds the client: a reset ends it, or the old session would stay open.
        self.state().follow = Some(task.abort_handle());
    }

    /// Whether `client` is the session's client (not one a reset closed).
    fn is_current(&self, client: &Arc<zk::Client>) -> bool {
        self.state()
            .client
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, client))
    }

    /// Opens a session with the current params and says hello; false if it could not.
    /// A connect that times out is tried again, until [`OPEN_DEADLINE`]: a spare driver
    /// opens its session while its client's proxy may still hold the traffic (a pause).
    async fn open(self: &Arc<Self>) -> bool {
        let deadline = tokio::time::Instant::now() + OPEN_DEADLINE;
        let client = loop {
            match self.connect().await {
                Ok(c) => break c,
                Err(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(RECONNECT_PAUSE).await
                }
                Err(e) => {
                    self.emit(json!({"event": "error", "id": null, "message": e}));
                    return false;
                }
            }
        };
        self.follow(Arc::clone(&client));
        self.emit(json!({
            "event": "hello", "protocol": super::protocol::PROTOCOL_VERSION,
            "library": "zookeeper-client", "version": "0.11", "lock": "Client::lock",
            "session_id": client.session_id().0,
        }));
        true
    }

    /// Ends the session: its acquires aborted, its holds dropped, its client closed.
    fn end_session(&self) {
        let client = {
            let mut s = self.state();
            for (_, task) in s.acquiring.drain() {
                task.abort();
            }
            if let Some(task) = s.follow.take() {
                task.abort();
            }
            s.holds.clear();
            s.client.take()
        };
        drop(client);
    }

    async fn serve(self, requests: tokio::io::ReadHalf<tokio::io::DuplexStream>) {
        let me = Arc::new(self);
        if !me.open().await {
            return;
        }
        let mut lines = BufReader::new(requests).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(req) = serde_json::from_str::<Value>(&line) else {
                me.emit(json!({"event": "error", "id": null, "message": "unreadable request"}));
                continue;
            };
            let id = req["id"].as_u64().unwrap_or(0);
            let op = req["op"].as_str();
            let in_session = me.state().client.is_some();
            match op {
                Some("reset") => {
                    me.end_session();
                    me.emit(json!({"event": "reset"}));
                    continue;
                }
                Some("open") if !in_session => {
                    let (Some(kind), Some(connect), Some(dir), Some(timeout)) = (
                        req["kind"].as_str(),
                        req["connect"].as_str(),
                        req["lock_path"].as_str(),
                        req["session_timeout_ms"].as_u64(),
                    ) else {
                        me.emit(json!({"event": "error", "id": null, "message": "bad open"}));
                        continue;
                    };
                    let _ = kind; // one lock, whatever the role
                    me.state().params = Params {
                        connect: connect.to_owned(),
                        dir: dir.to_owned(),
                        session_timeout: Duration::from_millis(timeout),
                    };
                    if !me.open().await {
                        return;
                    }
                    continue;
                }
                Some("open") => {
                    me.emit(json!({"event": "error", "id": null, "message": "open without a reset before it"}));
                    continue;
                }
                Some("close") => break,
                Some(other) if !in_session => {
                    let message = format!("no session: {other} after a reset, before an open");
                    me.emit(json!({"event": "error", "id": id, "message": message}));
                    continue;
                }
                _ => {}
            }
            match op {
                Some("acquire") => {
                    // zookeeper-client's lock is a call, not an object: every acquire is
                    // made afresh, so `same` and `fresh` are one.
                    if !matches!(req["object"].as_str(), None | Some("same" | "fresh")) {
                        me.emit(
                            json!({"event": "error", "id": id, "message": "bad acquire: object"}),
                        );
                        continue;
                    }
                    let timeout = match req["mode"].as_str() {
                        Some("blocking") => None,
                        _ => Some(Duration::from_millis(
                            req["timeout_ms"].as_u64().unwrap_or(0),
                        )),
                    };
                    let task = tokio::spawn(Arc::clone(&me).acquire(id, timeout));
                    me.state().acquiring.insert(id, task.abort_handle());
                }
                Some("release") => {
                    // Dropping the guard deletes the node in the background.
                    let hold = me.state().holds.remove(&id);
                    match hold {
                        Some(hold) => {
                            drop(hold);
                            me.emit(json!({"event": "released", "id": id}));
                        }
                        None => {
                            me.emit(json!({"event": "error", "id": id, "message": "no such hold"}))
                        }
                    }
                }
                Some("cancel") => {
                    let pending = me.state().acquiring.remove(&id);
                    if let Some(task) = pending {
                        task.abort();
                        me.emit(json!({"event": "not_acquired", "id": id, "reason": "cancelled"}));
                    }
                }
                _ => me.emit(json!({"event": "error", "id": id, "message": "unknown op"})),
            }
        }
        me.end_session();
    }

    async fn acquire(self: Arc<Self>, id: u64, timeout: Option<Duration>) {
        let Some(client) = self.state().client.clone() else {
            self.emit(json!({"event": "error", "id": id, "message": "no session"}));
            return;
        };
        let dir = self.state().params.dir.clone();
        let lock = async {
            let prefix = zk::LockPrefix::new_curator(&dir, "lock-").map_err(|e| e.to_string())?;
            // The lock's directory and its parents are created as needed, as Curator and
            // Kazoo do.
            let options = zk::LockOptions::new(zk::Acls::anyone_all())
                .with_ancestor_options(zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()))
                .map_err(|e| e.to_string())?;
            client
                .lock(prefix, b"", options)
                .await
                .map(zk::LockClient::into_owned)
                .map_err(|e| e.to_string())
        };
        let got = match timeout {
            None => Some(lock.await),
            Some(t) => tokio::time::timeout(t, lock).await.ok(),
        };
        // Taken out first: a cancel that comes now finds nothing to abort.
        if self.state().acquiring.remove(&id).is_none() {
            return;
        }
        match got {
            None => self.emit(json!({"event": "not_acquired", "id": id, "reason": if timeout == Some(Duration::ZERO) { "held" } else { "timeout" }})),
            Some(Err(e)) => self.emit(json!({"event": "error", "id": id, "message": e})),
            Some(Ok(hold)) => {
                let path = hold.lock_path().to_owned();
                let token = match client.check_stat(&path).await {
                    Ok(Some(stat)) => stat.czxid,
                    // No node: -1, a grant the checker judges.
                    Ok(None) => -1,
                    Err(e) => {
                        // Held, but the token cannot be read: the hold is given back (its
                        // drop deletes the node) and the acquire reported as failed.
                        drop(hold);
                        let message =
                            format!("acquired, but its token could not be read ({e}); released");
                        self.emit(json!({"event": "error", "id": id, "message": message}));
                        return;
                    }
                };
                let node = path.rsplit('/').next().unwrap_or_default().to_owned();
                self.state().holds.insert(id, hold);
                self.emit(json!({"event": "acquired", "id": id, "token": token, "node": node}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::conn::Outcome;
    use super::super::protocol::{LockObject, Mode, Request};
    use super::*;

    fn acquire(id: u64) -> Request {
        Request::Acquire {
            id,
            mode: Mode::Blocking,
            timeout_ms: 0,
            object: LockObject::Same,
        }
    }

    /// Protocol 3 in process, as Kazoo's and Curator's drivers speak it: after a reset
    /// nothing is served until an open, and the open's session starts afresh (its ids
    /// again from 1; the old session's hold gone with it, or the new blocking acquire
    /// would wait forever).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reset_ends_the_session_and_an_open_starts_the_next() {
        if !crate::harness::available_for_tests() {
            return;
        }
        let servers =
            crate::servers::Servers::start(1, crate::harness::ServerOptions::default()).unwrap();
        let connect = servers.connect_string();
        let conn = spawn(
            "zkclient-lock",
            &connect,
            "/zklock/lock",
            4_000,
            Arc::default(),
        );
        conn.hello(Duration::from_secs(60)).await.unwrap();
        conn.send(&acquire(1));
        assert!(matches!(
            conn.outcome(1).await,
            Ok(Outcome::Acquired { .. })
        ));
        conn.send(&Request::Reset);
        conn.reset_answered().await.unwrap();
        conn.send(&acquire(2));
        match conn.outcome(2).await {
            Ok(Outcome::Error { message }) => assert!(message.contains("no session"), "{message}"),
            other => panic!("{other:?} before an open"),
        }
        conn.send(&Request::Open {
            kind: "lock".into(),
            connect,
            lock_path: "/zklock/lock".into(),
            session_timeout_ms: 4_000,
        });
        conn.send(&acquire(1));
        let got = tokio::time::timeout(Duration::from_secs(120), conn.outcome(1)).await;
        assert!(
            matches!(got, Ok(Ok(Outcome::Acquired { .. }))),
            "{got:?}: the old session's hold outlived its reset"
        );
    }
}
