//! A fault-injecting TCP proxy for ZooKeeper's client protocol, on loopback.
//!
//! Put a [`Proxy`] between a client and one server (connect the client to
//! [`Proxy::connect_string`]) and it can:
//!
//! * cut every current connection ([`Proxy::cut_all`]);
//! * lose a create response ([`Proxy::lose_next_create_response`]): the next create request
//!   reaches the server, which applies it, and its reply is withheld while the connection is
//!   cut, so the client gets `ConnectionLoss` for a create that happened;
//! * aim a fault at one request ([`Proxy::aim`]): the next request of some operations
//!   under a path either reaches the server and has its reply withheld while the
//!   connection is cut ([`AimedAction::WithholdReply`]: a delete or create applied whose
//!   client sees ConnectionLoss), or is dropped before the server sees it and the
//!   connection cut ([`AimedAction::DropRequest`]: a request never applied, which its
//!   client cannot tell from the other case);
//! * black-hole the client ([`Proxy::black_hole`], [`Proxy::black_hole_for`]): nothing is
//!   forwarded either way and nothing is closed, as in a partition, so the server expires
//!   the session once its timeout passes without a ping;
//! * refuse one session's reconnects ([`Proxy::refuse_session_for`]): with a cut, the server
//!   hears nothing more from that session while new sessions connect as usual, as when a
//!   client library declares its session expired on its own.
//!
//! The proxy understands ZooKeeper's framing: every message is a 4-byte big-endian length
//! and a body. After the first message each way (ConnectRequest / ConnectResponse, which
//! have no header), a request body starts with `xid: i32, type: i32` and a reply body with
//! `xid: i32, zxid: i64, err: i32`. It carries the client protocol only (four-letter words
//! are not framed and would be cut).

use crate::error::RealError;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// ZooKeeper's create op codes: create, create2, createContainer, createTTL.
pub const CREATE_OPS: [i32; 4] = op::CREATE_OPS;
/// How many requests [`Proxy::requests_seen`] remembers; later ones are counted only.
pub const MAX_SEEN_REQUESTS: usize = 10_000;
/// How many faults may be aimed at one proxy at once.
pub const MAX_AIMS: usize = 64;
/// How many withheld replies [`Proxy::lost_replies`] remembers (the oldest go first).
pub const MAX_RECORDED_LOST_REPLIES: usize = 64;
/// Bytes of a request header: xid and type.
const REQUEST_HEADER_BYTES: usize = 8;
/// Bytes of a reply header: xid, zxid and err.
const REPLY_HEADER_BYTES: usize = 16;
/// Bytes of the length prefix.
const LENGTH_BYTES: usize = 4;
/// Where a ConnectRequest carries the session it resumes (0 for a new session): after
/// protocolVersion (i32), lastZxidSeen (i64) and timeOut (i32).
const CONNECT_SESSION_AT: usize = 16;
/// How many refused sessions a proxy remembers (the oldest go first).
pub const MAX_REFUSED_SESSIONS: usize = 64;
/// How many node changes [`Proxy::node_changes`] remembers; later ones are counted only.
pub const MAX_NODE_CHANGES: usize = 20_000;
/// How many sessions [`Proxy::sessions_answered`] follows (the longest silent go first).
pub const MAX_SESSIONS_FOLLOWED: usize = 256;
/// How many creates and deletes awaiting their reply a proxy follows: one per request in
/// flight, so only a connection that never reads its replies reaches it.
const MAX_PENDING_CHANGES: usize = 1_024;
/// ZooKeeper's create flags of an ephemeral node: ephemeral, ephemeral sequential.
const EPHEMERAL_FLAGS: [i32; 2] = [1, 3];

/// Bounds on what a proxy holds.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ProxyLimits {
    /// Connections beyond this are accepted and closed at once.
    pub max_connections: usize,
    /// A bigger message is taken as garbage and its connection cut. ZooKeeper's own limit
    /// (`jute.maxbuffer`) is 1 MiB by default.
    pub max_frame_bytes: usize,
    /// How long connecting to the server may take before the client's connection is closed.
    pub upstream_connect_timeout: Duration,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        ProxyLimits {
            max_connections: 64,
            max_frame_bytes: 4 << 20,
            upstream_connect_timeout: Duration::from_secs(5),
        }
    }
}

/// A reply the proxy withheld (see [`Proxy::lose_next_create_response`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostReply {
    /// The request's xid.
    pub xid: i32,
    /// The request's op code (one of [`CREATE_OPS`]).
    pub op: i32,
    /// The zxid the server reported with the reply.
    pub zxid: i64,
    /// The server's error code for the request; 0 means the create was applied.
    pub err: i32,
}

pub use crate::plan::{AimedAction, AimedFault, GIVE_UP_HOLD_MS, Repeat, SeenRequest, op};

/// A request an aimed fault caught.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaughtRequest {
    pub op: i32,
    pub path: String,
    pub action: AimedAction,
    /// For a withheld reply: the server's error code (0: applied), once the reply came.
    pub err: Option<i32>,
    /// The session of the connection that sent it (from the server's ConnectResponse;
    /// 0 if none came).
    pub session: i64,
}

/// An aimed fault and how far it got.
#[derive(Clone, Debug)]
struct Armed {
    fault: AimedFault,
    /// Matching requests seen so far.
    seen: u32,
    struck: u32,
    first_strike: Option<tokio::time::Instant>,
}

impl Armed {
    /// Whether the request just counted is one to strike.
    fn due(&self, now: tokio::time::Instant) -> bool {
        if self.seen <= self.fault.skip {
            return false;
        }
        match self.fault.repeat {
            Repeat::Once => self.struck == 0,
            Repeat::Next(n) => self.struck < n.max(1),
            Repeat::WindowMs(_) => match (self.first_strike, self.fault.window()) {
                (Some(first), Some(window)) => now < first + window,
                _ => true,
            },
        }
    }
}

/// Where the lost-create-response fault stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoseCreate {
    Off,
    /// The next create request, on any connection, will have its reply withheld.
    Armed,
    /// This connection's request `xid` (of type `op`) went to the server; its reply is
    /// withheld.
    Withholding {
        conn: u64,
        xid: i32,
        op: i32,
    },
}

#[derive(Debug)]
struct State {
    lose_create: LoseCreate,
    /// While armed: only a create of a path starting with this is caught (`None`: any).
    lose_create_under: Option<String>,
    lost: VecDeque<LostReply>,
    next_conn: u64,
    open: usize,
    /// Bumped by every black-hole change, so a timed heal only ends its own black hole.
    black_hole_generation: u64,
    /// Sessions whose reconnects are refused, each until its deadline; oldest first.
    refused: VecDeque<(i64, tokio::time::Instant)>,
    /// Faults aimed at requests, in the order they were aimed (at most [`MAX_AIMS`]).
    aims: Vec<Armed>,
    /// Requests an aimed fault sent on whose replies it withholds: (connection, xid).
    withholding: Vec<(u64, i32)>,
    /// Requests aimed faults caught, oldest first (at most [`MAX_RECORDED_LOST_REPLIES`]).
    caught: VecDeque<CaughtRequest>,
    /// Every request of an op an aim can match, oldest first (at most
    /// [`MAX_SEEN_REQUESTS`]), and how many more came.
    seen: Vec<SeenRequest>,
    seen_beyond: u64,
    /// Creates of ephemeral nodes and deletes sent, awaiting their reply: (connection,
    /// xid) and what the request asks.
    pending: VecDeque<((u64, i32), Pending)>,
    /// Nodes the server said it created or deleted, oldest first (at most
    /// [`MAX_NODE_CHANGES`]), and how many more.
    changes: Vec<NodeChange>,
    changes_beyond: u64,
    /// Per session, the last time (the process's monotonic clock) the server sent it
    /// anything: a reply, a ping's, a notification. The session lived then.
    answered: Vec<(i64, Duration)>,
}

/// A create of an ephemeral node or a delete, awaiting its reply.
#[derive(Clone, Debug)]
struct Pending {
    delete: bool,
    /// The delete's path (a create's comes with its reply).
    path: String,
    session: i64,
    /// Whether it was sent on to the server.
    sent: bool,
}

/// A node the server created or deleted at a client's request, as its reply said: what a
/// run needs to tell how long each node outlived the attempt that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeChange {
    /// When the reply passed the proxy, on the process's monotonic clock
    /// (`crate::client::monotonic_now`).
    pub at: Duration,
    /// The node's path (a sequential create's, with its sequence).
    pub path: String,
    /// The session that sent the request.
    pub session: i64,
    /// An ephemeral node created, or a node deleted.
    pub deleted: bool,
}

#[derive(Debug)]
struct Shared {
    upstream: SocketAddr,
    limits: ProxyLimits,
    /// Bumped by `cut_all`; a connection dies when it changes from its value at accept.
    cut_epoch: watch::Sender<u64>,
    black_hole: watch::Sender<bool>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // Every update is a small assignment; a poisoned lock still holds consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A fault-injecting proxy in front of one ZooKeeper server. Dropping it closes every
/// connection it carries.
#[derive(Debug)]
pub struct Proxy {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
    accept_task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The accept task owns the connection tasks; aborting it drops (and so aborts) them.
        self.accept_task.abort();
    }
}

impl Proxy {
    /// Starts a proxy on a free loopback port, forwarding to `upstream`. Must run inside a
    /// tokio runtime, whose tasks carry the traffic.
    pub async fn start(upstream: SocketAddr) -> Result<Proxy, RealError> {
        Proxy::start_with(upstream, ProxyLimits::default()).await
    }

    /// As [`start`](Proxy::start), with explicit bounds.
    pub async fn start_with(upstream: SocketAddr, limits: ProxyLimits) -> Result<Proxy, RealError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| RealError::io("binding the proxy's loopback port", e))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| RealError::io("reading the proxy's address", e))?;
        let shared = Arc::new(Shared {
            upstream,
            limits,
            cut_epoch: watch::Sender::new(0),
            black_hole: watch::Sender::new(false),
            state: Mutex::new(State {
                lose_create: LoseCreate::Off,
                lose_create_under: None,
                lost: VecDeque::new(),
                next_conn: 0,
                open: 0,
                black_hole_generation: 0,
                refused: VecDeque::new(),
                aims: Vec::new(),
                withholding: Vec::new(),
                caught: VecDeque::new(),
                seen: Vec::new(),
                seen_beyond: 0,
                pending: VecDeque::new(),
                changes: Vec::new(),
                changes_beyond: 0,
                answered: Vec::new(),
            }),
        });
        let accept_task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Proxy {
            local_addr,
            shared,
            runtime: tokio::runtime::Handle::current(),
            accept_task,
        })
    }

    /// The proxy's own address; clients connect here.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The connect string for clients, `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> String {
        self.local_addr.to_string()
    }

    /// The server the proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// The number of client connections currently open.
    pub fn open_connections(&self) -> usize {
        self.shared.state().open
    }

    /// Closes every current connection, both ways. Connections made afterwards are not
    /// affected. Returns how many were open.
    pub fn cut_all(&self) -> usize {
        let open = self.shared.state().open;
        self.shared.cut_epoch.send_modify(|epoch| *epoch += 1);
        open
    }

    /// Arms the lost-response fault: the next create request (create, create2,
    /// createContainer or createTTL) on any connection is forwarded to the server, and when
    /// the server's reply comes it is withheld and that connection cut. The client sees
    /// `ConnectionLoss` while the server has applied the create. See
    /// [`lost_replies`](Proxy::lost_replies) for what was withheld.
    pub fn lose_next_create_response(&self) {
        self.arm_lost_create(None);
    }

    /// As [`lose_next_create_response`](Proxy::lose_next_create_response), for the next
    /// create of a path starting with `prefix` only (e.g. a lock directory's nodes, not
    /// the directory's own creates).
    pub fn lose_next_create_response_under(&self, prefix: &str) {
        self.arm_lost_create(Some(prefix.to_owned()));
    }

    fn arm_lost_create(&self, under: Option<String>) {
        let mut state = self.shared.state();
        if state.lose_create == LoseCreate::Off {
            state.lose_create = LoseCreate::Armed;
            state.lose_create_under = under;
        }
    }

    /// Disarms the lost-response fault if no create was caught yet. True if it was armed.
    pub fn disarm_lost_response(&self) -> bool {
        let mut state = self.shared.state();
        let armed = state.lose_create == LoseCreate::Armed;
        if armed {
            state.lose_create = LoseCreate::Off;
        }
        armed
    }

    /// Aims `fault` at matching requests, beside faults aimed before (each counts the
    /// requests it matches; the first due strikes). False, with nothing aimed, past
    /// [`MAX_AIMS`].
    pub fn aim(&self, fault: AimedFault) -> bool {
        let mut state = self.shared.state();
        if state.aims.len() >= MAX_AIMS {
            return false;
        }
        state.aims.push(Armed {
            fault,
            seen: 0,
            struck: 0,
            first_strike: None,
        });
        true
    }

    /// Disarms every aimed fault; true if one had not struck yet.
    pub fn disarm_aimed(&self) -> bool {
        let mut state = self.shared.state();
        let unstruck = state.aims.iter().any(|a| a.struck == 0);
        state.aims.clear();
        unstruck
    }

    /// Whether an aimed fault may still strike a request on its own schedule: a window
    /// that opened (its first strike came) and has not closed. The search's runs end only
    /// after, so that liveness is judged once the faults are over.
    pub fn window_open(&self) -> bool {
        let now = tokio::time::Instant::now();
        self.shared.state().aims.iter().any(|a| {
            matches!((a.first_strike, a.fault.window()), (Some(first), Some(w)) if now < first + w)
        })
    }

    /// Every request of an op an aim can match (see [`op::name_of`]) that reached the
    /// proxy, oldest first, at most [`MAX_SEEN_REQUESTS`]; and how many more came.
    pub fn requests_seen(&self) -> (Vec<SeenRequest>, u64) {
        let state = self.shared.state();
        (state.seen.clone(), state.seen_beyond)
    }

    /// Every ephemeral node the server created and every node it deleted at this
    /// proxy's clients' requests, as the replies said, oldest first; and how many more
    /// came past [`MAX_NODE_CHANGES`]. A reply the proxy withholds counts: the server
    /// applied the request.
    pub fn node_changes(&self) -> (Vec<NodeChange>, u64) {
        let state = self.shared.state();
        (state.changes.clone(), state.changes_beyond)
    }

    /// Per session seen, the last time the server sent it anything through this proxy
    /// (the process's monotonic clock): the server held the session then.
    pub fn sessions_answered(&self) -> Vec<(i64, Duration)> {
        self.shared.state().answered.clone()
    }

    /// The requests aimed faults caught so far, oldest first.
    pub fn caught_requests(&self) -> Vec<CaughtRequest> {
        self.shared.state().caught.iter().cloned().collect()
    }

    /// The replies withheld so far, oldest first (at most [`MAX_RECORDED_LOST_REPLIES`]).
    pub fn lost_replies(&self) -> Vec<LostReply> {
        self.shared.state().lost.iter().copied().collect()
    }

    /// Stops forwarding both ways, without closing anything, until [`heal`](Proxy::heal).
    /// New connections are accepted but not connected to the server. The server hears no
    /// pings, so it expires the session after its timeout.
    pub fn black_hole(&self) {
        self.shared.state().black_hole_generation += 1;
        self.shared.black_hole.send_replace(true);
    }

    /// As [`black_hole`](Proxy::black_hole), healing by itself after `duration` (unless
    /// another black hole or heal came in between).
    pub fn black_hole_for(&self, duration: Duration) {
        let _enter = self.runtime.enter();
        black_hole_for(&self.shared, duration);
    }

    /// Resumes forwarding. Messages held during the black hole go on in order; a side that
    /// closed meanwhile is closed on the other side now.
    pub fn heal(&self) {
        self.shared.state().black_hole_generation += 1;
        self.shared.black_hole.send_replace(false);
    }

    /// True while black-holed.
    pub fn is_black_holed(&self) -> bool {
        *self.shared.black_hole.borrow()
    }

    /// For `duration`, closes every new connection whose ConnectRequest resumes `session`,
    /// before anything of it reaches the server; connections already open are left (cut
    /// them with [`cut_all`](Proxy::cut_all) after this). The server then hears nothing
    /// more from the session, neither pings nor a CloseSession, and expires it once its
    /// timeout passes, while new sessions connect as usual: how a client library that
    /// declared its session expired on its own leaves it.
    pub fn refuse_session_for(&self, session: i64, duration: Duration) {
        refuse(&self.shared, session, duration);
    }

    /// Lets `session` reconnect again (see [`AimedAction::Expire`]).
    pub fn lift_refusal(&self, session: i64) {
        self.shared.state().refused.retain(|&(s, _)| s != session);
    }
}

/// Black-holes the proxy, healing by itself after `duration` unless another black hole or
/// heal came in between. Must run inside the proxy's runtime.
fn black_hole_for(shared: &Arc<Shared>, duration: Duration) {
    let generation = {
        let mut state = shared.state();
        state.black_hole_generation += 1;
        state.black_hole_generation
    };
    shared.black_hole.send_replace(true);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        tokio::time::sleep(duration).await;
        let state = shared.state();
        if state.black_hole_generation == generation {
            shared.black_hole.send_replace(false);
        }
    });
}

/// How long a session an [`AimedAction::Expire`] caught stays refused if nobody lifts
/// the refusal: only a hang reaches it.
const EXPIRE_REFUSAL: Duration = Duration::from_secs(600);

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connection tasks so the set stays bounded by the open count.
        while connections.try_join_next().is_some() {}
        let Ok((client, _)) = listener.accept().await else {
            // Accept errors (e.g. out of file descriptors) pass; back off briefly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let id = {
            let mut state = shared.state();
            if state.open >= shared.limits.max_connections {
                continue; // dropping `client` closes it
            }
            state.open += 1;
            state.next_conn += 1;
            state.next_conn
        };
        connections.spawn(connection(Arc::clone(&shared), client, id));
    }
}

/// Undoes a connection's bookkeeping however its task ends (also when aborted).
struct ConnectionGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.open -= 1;
        // A create caught on this connection whose reply never came: the fault did not
        // happen, so it stays armed for the next create.
        if matches!(state.lose_create, LoseCreate::Withholding { conn, .. } if conn == self.id) {
            state.lose_create = LoseCreate::Armed;
        }
        // An aimed request whose reply never came: it was caught (and recorded without an
        // error code); the connection's end is what its client sees either way.
        state.withholding.retain(|&(conn, _)| conn != self.id);
        // A delete sent on whose reply never came (its client closed the connection
        // first, as a client does after a held request times it out) may well have been
        // applied: counted as a deletion now, so that its node is never called leaked on
        // the proxy's word alone. A create's node is not known without its reply.
        let now = crate::client::monotonic_now();
        let mut unanswered = Vec::new();
        state.pending.retain(|&((conn, _), ref p)| {
            let ours = conn == self.id;
            if ours && p.delete && p.sent {
                unanswered.push((p.path.clone(), p.session));
            }
            !ours
        });
        for (path, session) in unanswered {
            push_change(
                &mut state,
                NodeChange {
                    at: now,
                    path,
                    session,
                    deleted: true,
                },
            );
        }
    }
}

fn push_change(state: &mut State, change: NodeChange) {
    if state.changes.len() < MAX_NODE_CHANGES {
        state.changes.push(change);
    } else {
        state.changes_beyond += 1;
    }
}

/// Marks a followed request ([`note_change_request`]) as sent on to the server.
fn note_sent(shared: &Shared, id: u64, body: &[u8]) {
    if body.len() < REQUEST_HEADER_BYTES {
        return;
    }
    let xid = be_i32(&body[0..4]);
    let mut state = shared.state();
    if let Some((_, p)) = state.pending.iter_mut().find(|(key, _)| *key == (id, xid)) {
        p.sent = true;
    }
}

async fn connection(shared: Arc<Shared>, client: TcpStream, id: u64) {
    let _guard = ConnectionGuard {
        shared: Arc::clone(&shared),
        id,
    };
    let mut cut = shared.cut_epoch.subscribe();
    let epoch = *cut.borrow_and_update();
    let work = async {
        // A black hole holds new connections too, or the client would reconnect around it.
        wait_open(&mut shared.black_hole.subscribe()).await;
        let connect = TcpStream::connect(shared.upstream);
        let Ok(Ok(server)) =
            tokio::time::timeout(shared.limits.upstream_connect_timeout, connect).await
        else {
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let session = AtomicI64::new(0);
        let ends = Ends {
            shared: &shared,
            id,
            epoch,
            session: &session,
        };
        // Whichever way ends first ends the connection: dropping the halves closes both.
        tokio::select! {
            _ = pump(Way::ToServer, client_read, server_write, ends) => {}
            _ = pump(Way::ToClient, server_read, client_write, ends) => {}
        }
    };
    tokio::select! {
        _ = wait_cut(&mut cut, epoch) => {}
        _ = work => {}
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    ToServer,
    ToClient,
}

/// What both ways of one connection share: the proxy, the connection's id and cut epoch,
/// and its session (once the server's ConnectResponse named it).
#[derive(Clone, Copy)]
struct Ends<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
    epoch: u64,
    session: &'a AtomicI64,
}

/// Forwards whole messages one way until either side fails, a reply is withheld, or the
/// connection of cut epoch `epoch` is cut.
async fn pump(way: Way, mut from: OwnedReadHalf, mut to: OwnedWriteHalf, ends: Ends<'_>) {
    let Ends {
        shared, id, epoch, ..
    } = ends;
    let mut black_hole = shared.black_hole.subscribe();
    let mut first = true;
    loop {
        let frame = read_frame(&mut from, shared.limits.max_frame_bytes).await;
        // Held here while black-holed: neither the message nor a close gets through.
        wait_open(&mut black_hole).await;
        // The connection's task drops this pump once it sees the cut, but a message read
        // meanwhile must not get through: what a client sends after its connection was
        // cut (the CloseSession of a session declared expired, or crashed) would
        // otherwise reach the server.
        if *shared.cut_epoch.borrow() != epoch {
            return;
        }
        let Ok(frame) = frame else {
            return;
        };
        let body = &frame[LENGTH_BYTES..];
        if first && way == Way::ToServer && refuses(shared, body) {
            return;
        }
        if first && way == Way::ToClient {
            // ConnectResponse: protocolVersion i32, timeOut i32, sessionId i64, ...
            if let Some(at) = body.get(8..16) {
                let session = i64::from_be_bytes(at.try_into().expect("8 bytes"));
                ends.session.store(session, Ordering::Release);
            }
        }
        if !first {
            match way {
                Way::ToServer => {
                    note_request(shared, id, body);
                    let session = ends.session.load(Ordering::Acquire);
                    note_change_request(shared, id, body, session);
                    match aim_at_request(shared, id, body, session) {
                        Some(AimedAction::DropRequest | AimedAction::Crash) => return,
                        Some(AimedAction::Expire) => {
                            refuse(shared, session, EXPIRE_REFUSAL);
                            return;
                        }
                        Some(AimedAction::Pause { pause_ms }) => {
                            // Held until the pause ends, then sent, as a paused process
                            // sends it when it resumes; the workload freezes the process.
                            black_hole_for(shared, Duration::from_millis(pause_ms));
                            wait_open(&mut black_hole).await;
                            if *shared.cut_epoch.borrow() != epoch {
                                return;
                            }
                        }
                        Some(AimedAction::GiveUp) => {
                            // Held while the workload gives up the acquire that sent it,
                            // then sent: the server applies what its caller gave up.
                            black_hole_for(shared, Duration::from_millis(GIVE_UP_HOLD_MS));
                            wait_open(&mut black_hole).await;
                            if *shared.cut_epoch.borrow() != epoch {
                                return;
                            }
                        }
                        Some(AimedAction::WithholdReply) | None => {}
                    }
                }
                Way::ToClient => {
                    // Before any withholding: the server applied what it answered.
                    note_reply(shared, id, body, ends.session.load(Ordering::Acquire));
                    if withhold_reply(shared, id, body) || withhold_aimed_reply(shared, id, body) {
                        return;
                    }
                }
            }
        }
        first = false;
        if to.write_all(&frame).await.is_err() {
            return;
        }
        if way == Way::ToServer {
            note_sent(shared, id, body);
        }
    }
}

fn be_i32(bytes: &[u8]) -> i32 {
    i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn refuse(shared: &Shared, session: i64, duration: Duration) {
    // Session 0 asks for a new session: never refused.
    if session == 0 {
        return;
    }
    let now = tokio::time::Instant::now();
    let mut state = shared.state();
    state.refused.retain(|&(_, until)| until > now);
    if state.refused.len() == MAX_REFUSED_SESSIONS {
        state.refused.pop_front();
    }
    state.refused.push_back((session, now + duration));
}

/// True if `connect` (a ConnectRequest's body) resumes a session refused now.
fn refuses(shared: &Shared, connect: &[u8]) -> bool {
    let Some(at) = connect.get(CONNECT_SESSION_AT..CONNECT_SESSION_AT + 8) else {
        return false;
    };
    let session = i64::from_be_bytes(at.try_into().expect("8 bytes"));
    let now = tokio::time::Instant::now();
    shared
        .state()
        .refused
        .iter()
        .any(|&(refused, until)| refused == session && until > now)
}

/// Catches the create request an armed fault waits for.
fn note_request(shared: &Shared, id: u64, body: &[u8]) {
    if body.len() < REQUEST_HEADER_BYTES {
        return;
    }
    let (xid, op) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    let mut state = shared.state();
    if state.lose_create == LoseCreate::Armed
        && CREATE_OPS.contains(&op)
        && state
            .lose_create_under
            .as_deref()
            .is_none_or(|prefix| created_path(body).is_some_and(|p| p.starts_with(prefix)))
    {
        state.lose_create = LoseCreate::Withholding { conn: id, xid, op };
    }
}

/// Follows a create of an ephemeral node, or a delete, until its reply.
fn note_change_request(shared: &Shared, id: u64, body: &[u8], session: i64) {
    if body.len() < REQUEST_HEADER_BYTES {
        return;
    }
    let (xid, code) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    let delete = code == op::DELETE;
    let ephemeral_create = CREATE_OPS.contains(&code) && create_is_ephemeral(body);
    if !(delete || ephemeral_create) {
        return;
    }
    let Some(path) = created_path(body) else {
        return;
    };
    let mut state = shared.state();
    if state.pending.len() == MAX_PENDING_CHANGES {
        state.pending.pop_front();
    }
    let path = path.to_owned();
    state.pending.push_back((
        (id, xid),
        Pending {
            delete,
            path,
            session,
            sent: false,
        },
    ));
}

/// Whether a create request asks for an ephemeral node: after the path come the data
/// (a length, -1 for none, and the bytes), the ACL (a count, then each entry's perms and
/// its scheme and id strings) and the flags.
fn create_is_ephemeral(body: &[u8]) -> bool {
    fn skip_bytes(body: &[u8], at: usize) -> Option<usize> {
        let len = be_i32(body.get(at..at + 4)?);
        Some(at + 4 + usize::try_from(len).unwrap_or(0))
    }
    let flags = (|| {
        let mut at = skip_bytes(body, REQUEST_HEADER_BYTES)?; // the path
        at = skip_bytes(body, at)?; // the data
        let entries = be_i32(body.get(at..at + 4)?);
        at += 4;
        for _ in 0..entries.max(0) {
            at = skip_bytes(body, at + 4)?; // perms, then the scheme
            at = skip_bytes(body, at)?; // the id
        }
        Some(be_i32(body.get(at..at + 4)?))
    })();
    flags.is_some_and(|f| EPHEMERAL_FLAGS.contains(&f))
}

/// Notes that the server still held `session`, and the node change a reply to a followed
/// create or delete reports.
fn note_reply(shared: &Shared, id: u64, body: &[u8], session: i64) {
    let now = crate::client::monotonic_now();
    let mut state = shared.state();
    if session != 0 {
        match state.answered.iter_mut().find(|(s, _)| *s == session) {
            Some(entry) => entry.1 = now,
            None => {
                if state.answered.len() == MAX_SESSIONS_FOLLOWED
                    && let Some(oldest) =
                        (0..state.answered.len()).min_by_key(|&i| state.answered[i].1)
                {
                    state.answered.swap_remove(oldest);
                }
                state.answered.push((session, now));
            }
        }
    }
    if body.len() < REPLY_HEADER_BYTES {
        return;
    }
    let xid = be_i32(&body[0..4]);
    let Some(at) = state.pending.iter().position(|(key, _)| *key == (id, xid)) else {
        return;
    };
    let Some((_, pending)) = state.pending.remove(at) else {
        return;
    };
    if be_i32(&body[12..16]) != 0 {
        return;
    }
    let path = if pending.delete {
        pending.path
    } else {
        // A create's reply names the node made (with its sequence), as a request does.
        let mut as_request = body[..REQUEST_HEADER_BYTES].to_vec();
        as_request.extend_from_slice(&body[REPLY_HEADER_BYTES..]);
        match created_path(&as_request) {
            Some(p) => p.to_owned(),
            None => return,
        }
    };
    push_change(
        &mut state,
        NodeChange {
            at: now,
            path,
            session: pending.session,
            deleted: pending.delete,
        },
    );
}

/// Notes the request among those seen, and catches it if an aimed fault is due; what
/// the fault does to it.
fn aim_at_request(shared: &Shared, id: u64, body: &[u8], session: i64) -> Option<AimedAction> {
    if body.len() < REQUEST_HEADER_BYTES {
        return None;
    }
    let (xid, op) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    op::name_of(op)?;
    let path = created_path(body)?;
    let mut state = shared.state();
    if state.seen.len() < MAX_SEEN_REQUESTS {
        state.seen.push(SeenRequest {
            op,
            path: path.to_owned(),
        });
    } else {
        state.seen_beyond += 1;
    }
    let now = tokio::time::Instant::now();
    let mut action = None;
    for aim in state.aims.iter_mut().filter(|a| a.fault.matches(op, path)) {
        aim.seen += 1;
        if action.is_none() && aim.due(now) {
            aim.struck += 1;
            aim.first_strike.get_or_insert(now);
            action = Some(aim.fault.action);
        }
    }
    let action = action?;
    if action == AimedAction::WithholdReply {
        state.withholding.push((id, xid));
    }
    if state.caught.len() == MAX_RECORDED_LOST_REPLIES {
        state.caught.pop_front();
    }
    state.caught.push_back(CaughtRequest {
        op,
        path: path.to_owned(),
        action,
        err: None,
        session,
    });
    Some(action)
}

/// True if this reply is one an aimed fault withholds; records its error code.
fn withhold_aimed_reply(shared: &Shared, id: u64, body: &[u8]) -> bool {
    if body.len() < REPLY_HEADER_BYTES {
        return false;
    }
    let xid = be_i32(&body[0..4]);
    let mut state = shared.state();
    let Some(at) = state.withholding.iter().position(|&w| w == (id, xid)) else {
        return false;
    };
    state.withholding.remove(at);
    let err = be_i32(&body[12..16]);
    if let Some(caught) = state
        .caught
        .iter_mut()
        .rev()
        .find(|c| c.action == AimedAction::WithholdReply && c.err.is_none())
    {
        caught.err = Some(err);
    }
    true
}

/// The path of a request's body (create, delete, exists, getData, setData, getChildren): after the header, a length (i32) and the bytes.
fn created_path(body: &[u8]) -> Option<&str> {
    let len_at = REQUEST_HEADER_BYTES;
    let len = usize::try_from(be_i32(body.get(len_at..len_at + 4)?)).ok()?;
    let path = body.get(len_at + 4..len_at + 4 + len)?;
    std::str::from_utf8(path).ok()
}

/// True if this reply is the one to withhold; records it.
fn withhold_reply(shared: &Shared, id: u64, body: &[u8]) -> bool {
    if body.len() < REPLY_HEADER_BYTES {
        return false;
    }
    let xid = be_i32(&body[0..4]);
    let mut state = shared.state();
    let LoseCreate::Withholding {
        conn,
        xid: wanted,
        op,
    } = state.lose_create
    else {
        return false;
    };
    if conn != id || xid != wanted {
        return false;
    }
    let mut zxid = [0; 8];
    zxid.copy_from_slice(&body[4..12]);
    let lost = LostReply {
        xid,
        op,
        zxid: i64::from_be_bytes(zxid),
        err: be_i32(&body[12..16]),
    };
    state.lose_create = LoseCreate::Off;
    if state.lost.len() == MAX_RECORDED_LOST_REPLIES {
        state.lost.pop_front();
    }
    state.lost.push_back(lost);
    true
}

/// One message, with its length prefix.
async fn read_frame(from: &mut OwnedReadHalf, max_frame_bytes: usize) -> std::io::Result<Vec<u8>> {
    let mut prefix = [0; LENGTH_BYTES];
    from.read_exact(&mut prefix).await?;
    let len = usize::try_from(i32::from_be_bytes(prefix))
        .ok()
        .filter(|&len| len <= max_frame_bytes)
        .ok_or_else(|| std::io::Error::other("message length out of bounds"))?;
    let mut frame = vec![0; LENGTH_BYTES + len];
    frame[..LENGTH_BYTES].copy_from_slice(&prefix);
    from.read_exact(&mut frame[LENGTH_BYTES..]).await?;
    Ok(frame)
}

/// Returns once not black-holed.
async fn wait_open(black_hole: &mut watch::Receiver<bool>) {
    // The sender lives as long as the proxy's tasks, so `wait_for` fails only at teardown.
    let _ = black_hole.wait_for(|holed| !holed).await;
}

/// Returns once `cut_all` was called after this connection was accepted.
async fn wait_cut(cut: &mut watch::Receiver<u64>, epoch: u64) {
    if cut.wait_for(|now| *now != epoch).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-prefixed message.
    fn frame(body: &[u8]) -> Vec<u8> {
        let mut out = (body.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    fn request(xid: i32, op: i32) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&op.to_be_bytes());
        body.extend_from_slice(b"payload");
        frame(&body)
    }

    fn reply(xid: i32, zxid: i64, err: i32) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&zxid.to_be_bytes());
        body.extend_from_slice(&err.to_be_bytes());
        frame(&body)
    }

    async fn read_one(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
        let len = stream.read_i32().await?;
        let mut body = vec![0; len as usize];
        stream.read_exact(&mut body).await?;
        Ok(frame(&body))
    }

    /// A fake server answering the connect frame with "hello" and each request with a reply
    /// carrying its xid and zxid 100 + xid. Returns its address.
    async fn fake_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    if read_one(&mut s).await.is_err() {
                        return;
                    }
                    s.write_all(&frame(b"hello")).await.unwrap();
                    while let Ok(req) = read_one(&mut s).await {
                        let xid = be_i32(&req[4..8]);
                        if s.write_all(&reply(xid, 100 + i64::from(xid), 0))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn connected(proxy: &Proxy) -> TcpStream {
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&frame(b"connect")).await.unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), frame(b"hello"));
        c
    }

    const STEP: Duration = Duration::from_secs(5);

    /// A ConnectRequest resuming `session` (0: a new session).
    fn connect_request(session: i64) -> Vec<u8> {
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend_from_slice(&0i64.to_be_bytes());
        body.extend_from_slice(&4_000i32.to_be_bytes());
        body.extend_from_slice(&session.to_be_bytes());
        body.extend_from_slice(&16i32.to_be_bytes());
        body.extend_from_slice(&[0; 17]);
        frame(&body)
    }

    /// Whether the fake server's answer to a ConnectRequest for `session` comes back.
    async fn answered(proxy: &Proxy, session: i64) -> bool {
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&connect_request(session)).await.unwrap();
        let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        answer.is_ok_and(|a| a == frame(b"hello"))
    }

    /// What a client sends after its connection was cut never reaches the server, though
    /// the connection's task may not have seen the cut yet when the message is read (a
    /// CloseSession slipping through would end the server's wait for a session declared
    /// expired or crashed).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nothing_sent_after_a_cut_reaches_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (heard, mut server_heard) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let heard = heard.clone();
                tokio::spawn(async move {
                    while let Ok(message) = read_one(&mut s).await {
                        let _ = heard.send(message);
                    }
                });
            }
        });
        let proxy = Proxy::start(addr).await.unwrap();
        for round in 0..200 {
            let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
            c.write_all(&frame(b"connect")).await.unwrap();
            let first = tokio::time::timeout(STEP, server_heard.recv()).await;
            assert_eq!(first.unwrap(), Some(frame(b"connect")));
            proxy.cut_all();
            // A CloseSession (op -11), sent once the cut was made.
            let _ = c.write_all(&request(round, -11)).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(
                server_heard.try_recv().is_err(),
                "round {round}: a message sent after the cut reached the server"
            );
        }
    }

    #[tokio::test]
    async fn forwards_requests_and_replies() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut c = connected(&proxy).await;
        c.write_all(&request(7, 4)).await.unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(7, 107, 0));
        assert_eq!(proxy.open_connections(), 1);
    }

    #[tokio::test]
    async fn withholds_the_next_create_reply_and_cuts() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut c = connected(&proxy).await;
        proxy.lose_next_create_response();
        // A non-create passes untouched.
        c.write_all(&request(1, 4)).await.unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
        c.write_all(&request(2, 15)).await.unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert!(end.is_err(), "expected the connection cut, got {end:?}");
        assert_eq!(
            proxy.lost_replies(),
            vec![LostReply {
                xid: 2,
                op: 15,
                zxid: 102,
                err: 0
            }]
        );
        // One-shot: the next connection's creates go through.
        let mut c = connected(&proxy).await;
        c.write_all(&request(3, 1)).await.unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(3, 103, 0));
    }

    /// A create2 request for `path`.
    fn create_request(xid: i32, path: &str) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&15i32.to_be_bytes());
        body.extend_from_slice(&(path.len() as i32).to_be_bytes());
        body.extend_from_slice(path.as_bytes());
        body.extend_from_slice(b"rest of the request");
        frame(&body)
    }

    #[tokio::test]
    async fn a_lost_create_under_a_prefix_lets_other_creates_pass() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut c = connected(&proxy).await;
        proxy.lose_next_create_response_under("/locks/");
        c.write_all(&create_request(1, "/locks")).await.unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
        c.write_all(&create_request(2, "/locks/n-")).await.unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert!(end.is_err(), "expected the connection cut, got {end:?}");
        assert_eq!(proxy.lost_replies().len(), 1);
        assert_eq!(proxy.lost_replies()[0].xid, 2);
    }

    /// A request of op `op` for `path`.
    fn path_request(xid: i32, op: i32, path: &str) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&op.to_be_bytes());
        body.extend_from_slice(&(path.len() as i32).to_be_bytes());
        body.extend_from_slice(path.as_bytes());
        body.extend_from_slice(&(-1i32).to_be_bytes());
        frame(&body)
    }

    #[tokio::test]
    async fn an_aimed_fault_withholds_the_next_delete_reply_under_its_path_and_cuts() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut c = connected(&proxy).await;
        proxy.aim(AimedFault::new(
            op::by_name("delete").unwrap(),
            "/locks/",
            AimedAction::WithholdReply,
        ));
        // Another op under the path, and a delete elsewhere, pass.
        c.write_all(&path_request(1, op::GET_CHILDREN2, "/locks/x"))
            .await
            .unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(1, 101, 0));
        c.write_all(&path_request(2, op::DELETE, "/other/x"))
            .await
            .unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(2, 102, 0));
        c.write_all(&path_request(3, op::DELETE, "/locks/n-0001"))
            .await
            .unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert!(end.is_err(), "expected the connection cut, got {end:?}");
        assert_eq!(
            proxy.caught_requests(),
            vec![CaughtRequest {
                op: op::DELETE,
                path: "/locks/n-0001".into(),
                action: AimedAction::WithholdReply,
                err: Some(0),
                session: 0,
            }]
        );
        // One-shot.
        let mut c = connected(&proxy).await;
        c.write_all(&path_request(4, op::DELETE, "/locks/n-0002"))
            .await
            .unwrap();
        assert_eq!(read_one(&mut c).await.unwrap(), reply(4, 104, 0));
    }

    #[tokio::test]
    async fn an_aimed_fault_skips_its_ordinal_then_strikes_the_next_n_and_logs_every_request() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut fault = AimedFault::new(
            op::by_name("delete").unwrap(),
            "/locks/",
            AimedAction::DropRequest,
        );
        fault.skip = 1;
        fault.repeat = Repeat::Next(2);
        proxy.aim(fault);
        let mut answered = Vec::new();
        for xid in 1..=4 {
            let mut c = connected(&proxy).await;
            c.write_all(&path_request(xid, op::DELETE, &format!("/locks/n-{xid}")))
                .await
                .unwrap();
            let got = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
            answered.push(got.is_ok());
        }
        // The first passes (skipped), the next two are dropped, the fourth passes.
        assert_eq!(answered, [true, false, false, true]);
        let (seen, beyond) = proxy.requests_seen();
        let paths: Vec<&str> = seen.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/locks/n-1", "/locks/n-2", "/locks/n-3", "/locks/n-4"]
        );
        assert_eq!(beyond, 0);
    }

    #[tokio::test]
    async fn an_aimed_drop_never_reaches_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (heard, mut server_heard) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let heard = heard.clone();
                tokio::spawn(async move {
                    while let Ok(message) = read_one(&mut s).await {
                        let _ = heard.send(message);
                    }
                });
            }
        });
        let proxy = Proxy::start(addr).await.unwrap();
        proxy.aim(AimedFault::new(
            op::by_name("create").unwrap(),
            "/locks/",
            AimedAction::DropRequest,
        ));
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&frame(b"connect")).await.unwrap();
        let first = tokio::time::timeout(STEP, server_heard.recv()).await;
        assert_eq!(first.unwrap(), Some(frame(b"connect")));
        c.write_all(&create_request(1, "/locks/n-")).await.unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert!(end.is_err(), "expected the connection cut, got {end:?}");
        assert!(
            server_heard.try_recv().is_err(),
            "the dropped create reached the server"
        );
        assert_eq!(proxy.caught_requests().len(), 1);
        assert_eq!(proxy.caught_requests()[0].err, None);
    }

    /// A fake server whose ConnectResponse names session `session`; it answers nothing
    /// else. Returns its address.
    async fn fake_server_of_session(session: i64) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if read_one(&mut s).await.is_err() {
                        return;
                    }
                    let mut body = 0i32.to_be_bytes().to_vec();
                    body.extend_from_slice(&4_000i32.to_be_bytes());
                    body.extend_from_slice(&session.to_be_bytes());
                    s.write_all(&frame(&body)).await.unwrap();
                    while read_one(&mut s).await.is_ok() {}
                });
            }
        });
        addr
    }

    /// A create request of `path` with `flags`, as ZooKeeper's client writes it: the path,
    /// the data, an ACL of one entry, the flags.
    fn create_with_flags(xid: i32, path: &str, flags: i32) -> Vec<u8> {
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&op::CREATE2.to_be_bytes());
        for bytes in [path.as_bytes(), b"data"] {
            body.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
            body.extend_from_slice(bytes);
        }
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&31i32.to_be_bytes());
        for text in ["world", "anyone"] {
            body.extend_from_slice(&(text.len() as i32).to_be_bytes());
            body.extend_from_slice(text.as_bytes());
        }
        body.extend_from_slice(&flags.to_be_bytes());
        frame(&body)
    }

    /// A server of session 9 that answers a create with the path asked plus a sequence,
    /// and anything else with an empty reply.
    async fn naming_server() -> SocketAddr {
        naming_server_answering_deletes(true).await.0
    }

    /// [`naming_server`], silent on deletes unless `deletes`; with the count of deletes
    /// it received.
    async fn naming_server_answering_deletes(
        deletes: bool,
    ) -> (SocketAddr, Arc<std::sync::atomic::AtomicU32>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = Arc::clone(&received);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    if read_one(&mut s).await.is_err() {
                        return;
                    }
                    let mut body = 0i32.to_be_bytes().to_vec();
                    body.extend_from_slice(&4_000i32.to_be_bytes());
                    body.extend_from_slice(&9i64.to_be_bytes());
                    s.write_all(&frame(&body)).await.unwrap();
                    while let Ok(req) = read_one(&mut s).await {
                        let xid = be_i32(&req[4..8]);
                        if be_i32(&req[8..12]) == op::DELETE {
                            count.fetch_add(1, Ordering::AcqRel);
                            if !deletes {
                                continue;
                            }
                        }
                        let mut body = reply(xid, 1, 0)[LENGTH_BYTES..].to_vec();
                        if be_i32(&req[8..12]) == op::CREATE2 {
                            let path = format!("{}0000000001", created_path(&req[4..]).unwrap());
                            body.extend_from_slice(&(path.len() as i32).to_be_bytes());
                            body.extend_from_slice(path.as_bytes());
                        }
                        if s.write_all(&frame(&body)).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, received)
    }

    /// A client connected through `proxy`, its session's handshake answered.
    async fn session_through(proxy: &Proxy) -> TcpStream {
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&connect_request(0)).await.unwrap();
        read_one(&mut c).await.unwrap();
        c
    }

    /// The proxy reads the node a create made from its reply, only for an ephemeral
    /// create, and each delete answered ok; each reply dates its session's last answer.
    #[tokio::test]
    async fn ephemeral_creates_and_deletes_are_seen_in_their_replies() {
        let proxy = Proxy::start(naming_server().await).await.unwrap();
        let mut c = session_through(&proxy).await;
        c.write_all(&create_with_flags(1, "/l/n-", 3))
            .await
            .unwrap();
        c.write_all(&create_with_flags(2, "/l/persistent-", 2))
            .await
            .unwrap();
        c.write_all(&path_request(3, op::DELETE, "/l/n-0000000001"))
            .await
            .unwrap();
        for _ in 0..3 {
            read_one(&mut c).await.unwrap();
        }
        let (changes, beyond) = proxy.node_changes();
        let seen: Vec<(&str, i64, bool)> = changes
            .iter()
            .map(|c| (c.path.as_str(), c.session, c.deleted))
            .collect();
        assert_eq!(
            seen,
            [("/l/n-0000000001", 9, false), ("/l/n-0000000001", 9, true)]
        );
        assert_eq!(beyond, 0);
        let answered = proxy.sessions_answered();
        assert_eq!(answered.len(), 1);
        assert_eq!(answered[0].0, 9);
        assert!(answered[0].1 >= changes[1].at);
    }

    /// A delete sent on whose reply never came (its client hung up first, as one does
    /// after a held request timed it out) counts as a deletion when the connection ends:
    /// the server may well have applied it, and a node is never called leaked on the
    /// proxy's word alone. A delete dropped before the server saw it does not count.
    #[tokio::test]
    async fn a_delete_sent_whose_reply_never_came_counts_as_a_deletion_a_dropped_one_not() {
        for dropped in [false, true] {
            let (server, received) = naming_server_answering_deletes(false).await;
            let proxy = Proxy::start(server).await.unwrap();
            if dropped {
                proxy.aim(AimedFault::new(
                    &[op::DELETE],
                    "/l/",
                    AimedAction::DropRequest,
                ));
            }
            let mut c = session_through(&proxy).await;
            c.write_all(&create_with_flags(1, "/l/n-", 3))
                .await
                .unwrap();
            read_one(&mut c).await.unwrap();
            c.write_all(&path_request(2, op::DELETE, "/l/n-0000000001"))
                .await
                .unwrap();
            // Until the server has the delete, or the proxy dropped it and cut.
            let deadline = tokio::time::Instant::now() + STEP;
            while received.load(Ordering::Acquire) == 0 && proxy.caught_requests().is_empty() {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the delete never came"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            drop(c);
            let deadline = tokio::time::Instant::now() + STEP;
            while proxy.open_connections() > 0 {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the connection never ended"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let seen: Vec<(String, bool)> = proxy
                .node_changes()
                .0
                .into_iter()
                .map(|c| (c.path, c.deleted))
                .collect();
            let made = ("/l/n-0000000001".to_owned(), false);
            let deleted = ("/l/n-0000000001".to_owned(), true);
            match dropped {
                false => assert_eq!(seen, [made, deleted]),
                true => assert_eq!(seen, [made], "a dropped delete counted"),
            }
        }
    }

    #[tokio::test]
    async fn an_aimed_expiry_drops_the_request_and_refuses_its_session_until_lifted() {
        let proxy = Proxy::start(fake_server_of_session(77).await)
            .await
            .unwrap();
        proxy.aim(AimedFault::new(
            op::by_name("get-children").unwrap(),
            "/locks",
            AimedAction::Expire,
        ));
        let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
        c.write_all(&connect_request(0)).await.unwrap();
        let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert_eq!(answer.unwrap().len(), 4 + 16);
        c.write_all(&path_request(1, op::GET_CHILDREN2, "/locks"))
            .await
            .unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
        assert!(end.is_err(), "expected the connection cut, got {end:?}");
        let caught = proxy.caught_requests();
        assert_eq!(caught.len(), 1);
        assert_eq!(
            (caught[0].action, caught[0].session, caught[0].err),
            (AimedAction::Expire, 77, None)
        );
        let addr = proxy.local_addr();
        let reconnect = |session: i64| async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(&connect_request(session)).await.unwrap();
            let answer = tokio::time::timeout(STEP, read_one(&mut c)).await.unwrap();
            answer.is_ok()
        };
        assert!(!reconnect(77).await, "the expired session reconnected");
        assert!(reconnect(0).await, "a new session was refused");
        proxy.lift_refusal(77);
        assert!(reconnect(77).await, "the refusal was not lifted");
    }

    #[tokio::test]
    async fn black_hole_holds_traffic_until_healed() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut c = connected(&proxy).await;
        proxy.black_hole();
        c.write_all(&request(1, 4)).await.unwrap();
        let held = tokio::time::timeout(Duration::from_millis(300), read_one(&mut c)).await;
        assert!(held.is_err(), "a reply crossed the black hole");
        proxy.heal();
        let reply_after = tokio::time::timeout(STEP, read_one(&mut c))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reply_after, reply(1, 101, 0));
    }

    #[tokio::test]
    async fn timed_black_hole_heals_by_itself() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        proxy.black_hole_for(Duration::from_millis(200));
        assert!(proxy.is_black_holed());
        // Connecting during the black hole waits for the heal.
        let c = tokio::time::timeout(STEP, connected(&proxy)).await.unwrap();
        drop(c);
        assert!(!proxy.is_black_holed());
    }

    #[tokio::test]
    async fn cut_all_closes_current_connections_only() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        let mut old = connected(&proxy).await;
        assert_eq!(proxy.cut_all(), 1);
        let end = tokio::time::timeout(STEP, read_one(&mut old))
            .await
            .unwrap();
        assert!(end.is_err());
        let mut new = connected(&proxy).await;
        new.write_all(&request(9, 3)).await.unwrap();
        assert_eq!(read_one(&mut new).await.unwrap(), reply(9, 109, 0));
    }

    #[tokio::test]
    async fn a_refused_session_cannot_reconnect_until_its_deadline() {
        let proxy = Proxy::start(fake_server().await).await.unwrap();
        proxy.refuse_session_for(0x1234, Duration::from_millis(400));
        proxy.refuse_session_for(0, STEP);
        assert!(
            !answered(&proxy, 0x1234).await,
            "a refused session got through"
        );
        assert!(answered(&proxy, 0x99).await, "another session was refused");
        assert!(answered(&proxy, 0).await, "a new session was refused");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(answered(&proxy, 0x1234).await, "refused past its deadline");
    }

    #[tokio::test]
    async fn oversized_frames_and_extra_connections_are_refused() {
        let limits = ProxyLimits {
            max_connections: 1,
            max_frame_bytes: 64,
            ..ProxyLimits::default()
        };
        let proxy = Proxy::start_with(fake_server().await, limits)
            .await
            .unwrap();
        let mut first = connected(&proxy).await;
        let mut second = TcpStream::connect(proxy.local_addr()).await.unwrap();
        let mut buf = [0; 1];
        let refused = tokio::time::timeout(STEP, second.read(&mut buf))
            .await
            .unwrap();
        assert!(
            matches!(refused, Ok(0) | Err(_)),
            "extra connection was served"
        );
        first.write_all(&frame(&[0; 65])).await.unwrap();
        let end = tokio::time::timeout(STEP, read_one(&mut first))
            .await
            .unwrap();
        assert!(end.is_err(), "oversized frame was forwarded");
    }
}
