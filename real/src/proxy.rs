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

mod messages;

use crate::error::RealError;
use messages::*;
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
    /// Connections an aimed burst still cuts after their handshake, and how many it cut.
    burst_left: u32,
    burst_cuts: u64,
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
                burst_left: 0,
                burst_cuts: 0,
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

    /// How many connections aimed bursts ([`AimedAction::Burst`]) cut after their
    /// handshake so far.
    pub fn burst_cuts(&self) -> u64 {
        self.shared.state().burst_cuts
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
                        Some(
                            AimedAction::DropRequest
                            | AimedAction::Crash
                            | AimedAction::Outage { .. },
                        ) => return,
                        Some(AimedAction::Burst { cuts }) => {
                            shared.state().burst_left = cuts;
                            return;
                        }
                        Some(AimedAction::Expire | AimedAction::Isolate { .. }) => {
                            // Whoever aimed it expires the session, or keeps it at the
                            // server, and lifts the refusal.
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
        let handshake = first && way == Way::ToClient;
        first = false;
        if to.write_all(&frame).await.is_err() {
            return;
        }
        if handshake && burst_cut(shared) {
            return;
        }
        if way == Way::ToServer {
            note_sent(shared, id, body);
        }
    }
}

/// Whether an aimed burst cuts this connection, its handshake just passed on.
fn burst_cut(shared: &Shared) -> bool {
    let mut state = shared.state();
    if state.burst_left == 0 {
        return false;
    }
    state.burst_left -= 1;
    state.burst_cuts += 1;
    true
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
mod tests;
