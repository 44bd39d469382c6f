//! The simulated world: one ZooKeeper server, its sessions, the clients' connections, the
//! timers, and the step function the driver calls at every quiescent point.
//!
//! Every decision is drawn from the [`Chooser`]; everything else is a pure function of the
//! state. Requests and controls that actors issue between quiescent points are staged and
//! then applied in (actor, sequence) order, so madsim's task order never matters.

mod apply;
mod cached_tree;
mod client_digest;
mod conn;
pub(crate) mod delivery;
mod detached;
mod digest;
mod faults;
pub(crate) mod folds;
pub(crate) mod footprint;
mod hash128;
mod kept;
mod priorities;
#[cfg(test)]
mod recorder;
mod remembered;
mod renaming;
pub(crate) mod request;
mod resource;
mod route;
mod server_ctl;
mod step;
mod symmetry;
mod timers;
mod watches;

use crate::chooser::{ChoiceKind, Chooser};
use crate::config::{ClientConfig, SimConfig};
use crate::tree::{DataTree, Notification};
use apply::*;
use cached_tree::CachedTree;
pub use delivery::ResourceReply;
use delivery::{Delivered, SlotId, Slots};
use detached::Detached;
use digest::Seen;
pub(crate) use faults::FaultPlan;
use footprint::{Footprint, Offer};
pub(crate) use priorities::PriorityOrder;
use request::{Answer, REQUEST_BYTES_MAX, Reply, Request, RequestKind, WatchKind};
pub(crate) use resource::{ResourceOp, ResourceState};
pub use server_ctl::{SYSTEM_SESSION, ServerCtl};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use timers::Timers;
use watches::ClientWatches;
use zklock_recipe::history::{Event, EventKind, ZkOp};
use zklock_recipe::{
    CreateMode, DetachedCleanup, OpResult, SessionBroadcast, SessionEvents, SessionId,
    SessionState, Stat, WatchedEvent, ZkError,
};

/// Index of a client in its world, in creation order.
pub type ClientId = usize;

/// What an actor asked of the world between two quiescent points.
pub(crate) enum Staged {
    Request {
        client: ClientId,
        /// The session of the handle that sent it: a handle left on an ended session
        /// (see `renew_session`) is answered at once and never reaches the new one.
        session: SessionId,
        req: Request,
        reply: SlotId,
    },
    Sleep {
        client: ClientId,
        duration_us: u64,
        done: SlotId,
    },
    Control(Control),
    /// A history event from the workload (acquire, release, lost...).
    Record {
        client: ClientId,
        kind: EventKind,
    },
    Resource {
        client: ClientId,
        op: ResourceOp,
        reply: SlotId,
    },
    /// Resolves when the client crashes.
    CrashWatch {
        client: ClientId,
        done: futures_channel::oneshot::Sender<()>,
    },
    /// Background cleanup for the client library (see `detached`).
    Detached {
        client: ClientId,
        session: SessionId,
        what: DetachedCleanup,
    },
    /// A new session for a client whose session ended (see `renew_session`).
    Renew {
        client: ClientId,
        reply: SlotId,
    },
    /// The client's workload is over: no code of its will run again (see `digest`).
    Finished {
        client: ClientId,
    },
    /// A decision of the workload (such as when to drop an acquire), drawn from the
    /// chooser in `0..n` like the world's own, so that replay and the explorer see it.
    Choose {
        client: ClientId,
        kind: ChoiceKind,
        n: usize,
        reply: SlotId,
    },
}

/// A scripted fault or hook.
pub(crate) enum Control {
    Disconnect(ClientId),
    Expire(ClientId),
    ExpireLocally(ClientId),
    Partition(ClientId, u64),
    Pause(ClientId, u64),
    Crash(ClientId),
    Delay(ClientId, u64),
    LoseNextCreateResponse(ClientId),
    BeforeNext(ClientId, RequestKind, Hook),
}

pub(crate) type Hook = Box<dyn FnOnce(&mut ServerCtl<'_>) + Send>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Conn {
    Connected,
    Disconnected,
    Expired,
    Closed,
}

/// Who awaits a request's reply.
pub(crate) enum ReplyTo {
    /// The actor awaiting this slot.
    Actor(SlotId),
    /// The client library's background cleanup: the world consumes the reply.
    Detached,
}

impl ReplyTo {
    pub(crate) fn is_detached(&self) -> bool {
        matches!(self, ReplyTo::Detached)
    }
}

pub(crate) struct Outbound {
    pub(crate) op_id: u64,
    pub(crate) req: Request,
    pub(crate) reply: ReplyTo,
}

pub(crate) enum Inbound {
    Reply {
        op_id: u64,
        reply: ReplyTo,
        result: Reply,
        watch: Option<(Arc<str>, WatchKind)>,
    },
    Event(WatchedEvent),
}

pub(crate) struct ClientState {
    pub(crate) session: SessionId,
    pub(crate) timeout_us: u64,
    pub(crate) conn: Conn,
    /// Bumped on every connection change; timers carry the epoch they were set in.
    pub(crate) conn_epoch: u64,
    /// Paused until this time (u64::MAX: crashed).
    pub(crate) frozen_until: Option<u64>,
    pub(crate) frozen_since: u64,
    pub(crate) partitioned_until: Option<u64>,
    /// Replies and events to this client are held until this time (a slow link).
    pub(crate) delayed_until: Option<u64>,
    /// The connection broke while the client was frozen (the server closed it at a forced
    /// expiry, or a partition outlasted the read timeout): the client notices at resume.
    pub(crate) conn_broken: bool,
    pub(crate) outbound: VecDeque<Outbound>,
    pub(crate) inbound: VecDeque<Inbound>,
    pub(crate) watches: ClientWatches,
    pub(crate) broadcast: SessionBroadcast,
    pub(crate) state: SessionState,
    pub(crate) lose_next_create: bool,
    /// Sleeps that ended while the client was frozen; they end at resume.
    pub(crate) deferred_sleeps: Vec<SlotId>,
    /// Resource operations issued while frozen; they happen at resume.
    pub(crate) deferred_resource: Vec<(ResourceOp, SlotId)>,
    pub(crate) crash_watchers: Vec<futures_channel::oneshot::Sender<()>>,
    pub(crate) crashed: bool,
    /// The client's workload returned: no code reads what it is given any more, so its
    /// fold leaves the digest (see `digest`).
    pub(crate) finished: bool,
    /// Background cleanup the client library still has to do.
    pub(crate) detached: Detached,
    /// Digest of everything delivered to this client's actor (see `digest`).
    pub(crate) obs: u64,
    /// The same under each permutation of the world's symmetry (see `symmetry`).
    pub(crate) obs_sym: Vec<u64>,
    /// The same through its neutral renaming, for its signature (see `symmetry`).
    pub(crate) obs_sig: u64,
    /// Its folds before the last reply folded, while `keep_only` may replace that reply
    /// (see `kept`).
    pub(crate) before_reply: kept::BeforeReply,
    /// The client's earlier sessions and how each ended, oldest first (see
    /// `renew_session`).
    pub(crate) ended: Vec<(SessionId, SessionState)>,
}

impl ClientState {
    /// The fold `obs` of what the client was given, as a digest holds it: none once the
    /// client's workload is over, since no code of the client's reads it any more.
    pub(crate) fn live_fold(&self, obs: u64) -> Option<u64> {
        (!self.finished).then_some(obs)
    }

    /// Whether this client has given `session` up: it crashed, its library declared the
    /// session over on its own (a local expiry, or a close the server may not have
    /// heard), or it went on with a new session. The server holds such a session until it
    /// has heard nothing from it for a session timeout.
    pub(crate) fn abandoned(&self, session: SessionId) -> bool {
        session != self.session || self.crashed || matches!(self.conn, Conn::Expired | Conn::Closed)
    }

    /// The state of `session` as a handle on it sees it: the current state for the
    /// client's current session, else how that earlier session ended.
    pub(crate) fn state_of(&self, session: SessionId) -> SessionState {
        if session == self.session {
            return self.state;
        }
        self.ended
            .iter()
            .find(|(s, _)| *s == session)
            .map_or(SessionState::Expired, |(_, state)| *state)
    }

    /// What a request on the ended `session` fails with.
    fn ended_error(&self, session: SessionId) -> ZkError {
        match self.state_of(session) {
            SessionState::Closed => ZkError::SessionClosed,
            _ => ZkError::SessionExpired,
        }
    }

    /// Whether the client can take `item` off its connection now: not while frozen,
    /// partitioned or delayed, and no watch event while disconnected (it waits for the
    /// reconnect).
    fn can_take(&self, item: &Inbound) -> bool {
        match item {
            Inbound::Reply { .. } => self.can_take_reply(),
            Inbound::Event(_) => self.can_take_event(),
        }
    }

    fn can_take_reply(&self) -> bool {
        self.frozen_until.is_none()
            && self.partitioned_until.is_none()
            && self.delayed_until.is_none()
    }

    fn can_take_event(&self) -> bool {
        self.can_take_reply() && self.conn == Conn::Connected
    }
}

pub(crate) struct ServerSession {
    pub(crate) client: ClientId,
    pub(crate) alive: bool,
    /// Whether the server currently hears from the client (pings arrive).
    pub(crate) hears: bool,
    /// Bumped whenever hearing resumes, cancelling a pending expiry.
    pub(crate) expiry_epoch: u64,
}

pub(crate) enum Timer {
    Sleep(ClientId, SlotId),
    Expire { session: SessionId, epoch: u64 },
    Reconnect { client: ClientId, epoch: u64 },
    DetectDisconnect { client: ClientId, epoch: u64 },
    Resume { client: ClientId, at: u64 },
    Heal { client: ClientId, at: u64 },
    Undelay { client: ClientId, at: u64 },
}

/// The outcome of one step.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Progress,
    /// Nothing can ever happen again: no request can be applied and no timer is set.
    Idle,
    OutOfTime,
    OutOfSteps,
    /// The explorer has seen this state before.
    Pruned,
}

pub(crate) struct World {
    pub(crate) cfg: SimConfig,
    pub(crate) now_us: u64,
    pub(crate) steps: u64,
    pub(crate) tree: CachedTree,
    /// What actors await (see `delivery`).
    pub(crate) slots: Slots,
    chooser: Box<dyn Chooser>,
    /// Every choice made, in order: with the scenario and seed, a replayable schedule.
    pub(crate) choices: Vec<u32>,
    pub(crate) clients: Vec<ClientState>,
    pub(crate) sessions: BTreeMap<SessionId, ServerSession>,
    timers: Timers,
    staged: Vec<((usize, usize), Staged)>,
    /// Scratch list of `route`, kept to spare an allocation per write.
    touched: Vec<ClientId>,
    /// Scratch list of `execute`'s notifications, kept for the same reason.
    notes: Vec<Notification>,
    /// `staged`'s other buffer (see `flush_staged`).
    staged_spare: Vec<((usize, usize), Staged)>,
    hooks: Vec<(ClientId, RequestKind, Hook)>,
    next_session: i64,
    /// Every event so far, in order.
    pub(crate) history: Vec<Event>,
    next_op: u64,
    pub(crate) resource: ResourceState,
    /// The resources of locks 1, 2, ... in a run of several locks (the first lock's is
    /// `resource`), made as each is first used.
    pub(crate) more_resources: Vec<ResourceState>,
    /// Random faults, when a scenario switched them on.
    pub(crate) faults: Option<FaultPlan>,
    /// The order of requests by client priorities, when a scenario asks for it
    /// ([`Scenario::priorities`](crate::Scenario::priorities)).
    pub(crate) priorities: Option<priorities::PriorityOrder>,
    /// Clients with background cleanup pending, so a step need not scan every client.
    detached_clients: usize,
    /// Sequence of items staged from outside any actor (see `stage_outside`).
    outside_seq: usize,
    /// Whether the chooser wants state digests (then deliveries are folded into `obs`).
    pub(crate) digesting: bool,
    /// Whether the chooser wants symmetric digests (see `symmetry`), and whether it
    /// prunes by them.
    symmetric_wanted: bool,
    prunes_by_symmetry: bool,
    /// The clients' permutations that keep roles, once `set_roles` named the roles and
    /// the chooser wants symmetric digests.
    symmetry: Option<symmetry::Symmetry>,
    /// The sessions' renaming under each of its permutations (see `symmetry`).
    renamings: Arc<[renaming::Renaming]>,
    /// The clock of the madsim runtime hosting the run, if any (see `Sim::run`).
    #[cfg(madsim)]
    pub(crate) madsim_clock: Option<madsim::time::TimeHandle>,
    /// Scratch space of `digest`, kept to spare an allocation per step.
    digest_buf: Vec<u8>,
    /// Whether the chooser reduces by partial order: then it hears the requests on
    /// offer and what each request transition touched (see `footprint`).
    partial_order: bool,
    /// The request transition under way since the last state, if one is.
    transition: Option<Footprint>,
    /// Scratch list of `offer_requests`, kept to spare an allocation per step.
    offers: Vec<Offer>,
    /// Folds taken over from an earlier run (see `folds`).
    reuse: folds::Reuse,
    /// Digest of every clock read outside any client's handle (see `digest`).
    outside_obs: u64,
    /// Whether `keep_only` replaces replies in folds (see `kept`).
    honours_keep_only: bool,
    /// The wait an actor took last since the last choice (see `kept`).
    last_taken: Option<delivery::SlotId>,
}

impl World {
    pub(crate) fn new(cfg: SimConfig, mut chooser: Box<dyn Chooser>) -> Self {
        let digesting = chooser.wants_digests();
        let reuse = folds::Reuse::new(&mut *chooser, digesting);
        let symmetric_wanted = digesting && chooser.wants_symmetry();
        let prunes_by_symmetry = symmetric_wanted && chooser.prunes_by_symmetry();
        let partial_order = digesting && chooser.wants_partial_order();
        let honours_keep_only = digesting && chooser.honours_keep_only();
        World {
            cfg,
            now_us: 0,
            steps: 0,
            tree: CachedTree::default(),
            slots: Slots::default(),
            chooser,
            choices: Vec::new(),
            clients: Vec::new(),
            sessions: BTreeMap::new(),
            timers: Timers::default(),
            staged: Vec::new(),
            staged_spare: Vec::new(),
            touched: Vec::new(),
            notes: Vec::new(),
            hooks: Vec::new(),
            next_session: 0x1000,
            history: Vec::new(),
            next_op: 0,
            resource: ResourceState::default(),
            more_resources: Vec::new(),
            faults: None,
            priorities: None,
            detached_clients: 0,
            outside_seq: 0,
            digesting,
            symmetric_wanted,
            prunes_by_symmetry,
            symmetry: None,
            renamings: Arc::default(),
            #[cfg(madsim)]
            madsim_clock: None,
            digest_buf: Vec::new(),
            partial_order,
            transition: None,
            offers: Vec::new(),
            reuse,
            outside_obs: 0,
            honours_keep_only,
            last_taken: None,
        }
    }

    /// Something happened that a request transition under way cannot commute with.
    #[inline]
    pub(crate) fn touch_global(&mut self) {
        if let Some(t) = &mut self.transition {
            t.global = true;
        }
    }

    /// Code read the clock or the server's state directly, outside any request: what it
    /// does next may depend on when, so no transition under way commutes.
    pub(crate) fn outside_read(&mut self) -> &mut Self {
        self.touch_global();
        self
    }

    /// Something was delivered to, or queued for, client `c`.
    #[inline]
    fn touch_client(&mut self, c: ClientId) {
        if let Some(t) = &mut self.transition {
            t.touch(c);
        }
    }

    /// Draws a choice in `0..n`. A forced choice (n <= 1) is not drawn or recorded.
    pub(crate) fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        if self.digesting {
            self.folds_at_choice();
            self.forget_every_before_reply();
        }
        let c = self.chooser.choose(kind, n);
        assert!(c < n, "chooser answered {c} for a choice among {n}");
        self.choices.push(c as u32);
        c
    }

    pub(crate) fn add_client(&mut self, cc: &ClientConfig) -> Option<(ClientId, SessionId)> {
        if self.clients.len() >= self.cfg.clients_max {
            return None;
        }
        let id = self.clients.len();
        let session = self.open_session(id);
        let timeout_ms = cc.session_timeout_ms.unwrap_or(self.cfg.session_timeout_ms);
        self.clients.push(ClientState {
            session,
            timeout_us: timeout_ms * 1000,
            conn: Conn::Connected,
            conn_epoch: 0,
            frozen_until: None,
            frozen_since: 0,
            partitioned_until: None,
            delayed_until: None,
            conn_broken: false,
            outbound: VecDeque::new(),
            inbound: VecDeque::new(),
            watches: ClientWatches::default(),
            broadcast: SessionBroadcast::default(),
            state: SessionState::Connected,
            lose_next_create: false,
            deferred_sleeps: Vec::new(),
            deferred_resource: Vec::new(),
            crash_watchers: Vec::new(),
            crashed: false,
            finished: false,
            detached: Detached::default(),
            obs: 0,
            obs_sym: vec![0; self.symmetry.as_ref().map_or(0, |s| s.perms.len())],
            obs_sig: 0,
            before_reply: kept::BeforeReply::default(),
            ended: Vec::new(),
        });
        Some((id, session))
    }

    /// The server opens a new session for client `c`: the next id, alive and heard.
    fn open_session(&mut self, c: ClientId) -> SessionId {
        self.next_session += 1;
        let session = SessionId(self.next_session);
        let server_side = ServerSession {
            client: c,
            alive: true,
            hears: true,
            expiry_epoch: 0,
        };
        self.sessions.insert(session, server_side);
        session
    }

    /// Names each client's role (clients 0, 1, ... in order; equal roles are
    /// interchangeable), for symmetric digests: before any client is added.
    pub(crate) fn set_roles(&mut self, roles: &[u32]) {
        if self.symmetric_wanted && self.clients.is_empty() {
            self.symmetry = Some(symmetry::Symmetry::new(roles));
        }
    }

    /// Tells the chooser the digest of the state a run ended in: symmetric when it wants
    /// those, else plain. No actor runs after the end, so what each was given is left
    /// out, as a finished client's is from every digest: the final state is the world's.
    pub(crate) fn report_final_state(&mut self) {
        if !self.digesting {
            return;
        }
        self.assert_folds_known();
        let finished: Vec<bool> = self.clients.iter().map(|cl| cl.finished).collect();
        for cl in &mut self.clients {
            cl.finished = true;
        }
        let d = match self.symmetry.is_some() {
            true => self.digest_sym(true).unwrap_or_else(|| self.digest()),
            false => self.digest(),
        };
        for (cl, f) in self.clients.iter_mut().zip(finished) {
            cl.finished = f;
        }
        self.chooser.at_end(d);
    }

    pub(crate) fn subscribe(&mut self, c: ClientId) -> SessionEvents {
        self.clients[c].broadcast.subscribe()
    }

    #[inline]
    pub(crate) fn stage(&mut self, order: (usize, usize), s: Staged) {
        self.staged.push((order, s));
    }

    /// Stages an item that comes from outside any actor: a `Drop` run by code around
    /// the simulation, such as a guard dropped after `run` returned. It sorts after every
    /// actor's items of the same batch, in arrival order. Actors dropped by abort or at
    /// the end of a run stage as themselves (see the `actor` module), so only code outside the
    /// simulation's schedule comes here.
    pub(crate) fn stage_outside(&mut self, s: Staged) {
        self.outside_seq += 1;
        self.staged.push(((usize::MAX, self.outside_seq), s));
    }

    pub(crate) fn record(&mut self, c: ClientId, kind: EventKind) {
        let session = self.clients.get(c).map_or(SessionId(0), |cl| cl.session);
        self.history.push(Event {
            time_us: self.now_us,
            client: c as u32,
            session,
            kind,
        });
    }

    fn set_timer(&mut self, at: u64, t: Timer) {
        self.touch_global();
        self.timers.set(at, t);
    }

    /// Sends a request of the client library's background cleanup.
    pub(crate) fn submit_detached(&mut self, c: ClientId, req: Request) {
        self.touch_global();
        self.submit(c, req, ReplyTo::Detached);
    }

    /// Hands a reply to whoever awaits it. Inlined, as `execute` is: a reply then moves
    /// fewer times on its way.
    #[inline]
    pub(crate) fn answer(&mut self, c: ClientId, to: ReplyTo, result: Reply) {
        match to {
            // The receiver may be gone: the actor stopped caring.
            ReplyTo::Actor(slot) => self.slots.fill(slot, Delivered::Reply(result)),
            ReplyTo::Detached => {
                self.touch_global();
                self.detached_reply(c, result)
            }
        }
    }

    fn submit(&mut self, c: ClientId, req: Request, reply: ReplyTo) {
        self.next_op += 1;
        let op_id = self.next_op;
        let (op, path, watch) = describe(&req);
        self.record(
            c,
            EventKind::OpInvoke {
                op_id,
                op,
                path,
                watch,
            },
        );
        let cl = &mut self.clients[c];
        // The client library fails requests at once while it has no connection, after
        // its own check of their paths. Connected, the server judges the paths of
        // single requests (the same errors; checking here too would cost every request
        // a pass over its path), and of a multi's ops before any op (see
        // `DataTree::multi`).
        let refused = match cl.conn {
            Conn::Connected => None,
            Conn::Disconnected => Some(req.refused_by_client().unwrap_or(ZkError::ConnectionLoss)),
            Conn::Expired => Some(req.refused_by_client().unwrap_or(ZkError::SessionExpired)),
            Conn::Closed => Some(req.refused_by_client().unwrap_or(ZkError::SessionClosed)),
        };
        match refused {
            Some(e) => {
                self.touch_global();
                self.answer(c, reply, Err(e.clone()));
                self.record(c, EventKind::OpFail { op_id, error: e });
            }
            None => cl.outbound.push_back(Outbound { op_id, req, reply }),
        }
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Disconnect(c) => {
                self.record_fault(c, zklock_recipe::history::FaultKind::ConnectionLoss);
                if self.clients[c].conn == Conn::Connected && self.clients[c].frozen_until.is_none()
                {
                    self.drop_connection(c);
                }
            }
            Control::Expire(c) => {
                self.record_fault(c, zklock_recipe::history::FaultKind::ForcedExpiry);
                self.force_expire(c)
            }
            Control::ExpireLocally(c) => {
                self.record_fault(c, zklock_recipe::history::FaultKind::LocalExpiry);
                if self.clients[c].conn == Conn::Connected && self.clients[c].frozen_until.is_none()
                {
                    self.expire_locally(c);
                }
            }
            Control::Partition(c, d) => {
                let f = zklock_recipe::history::FaultKind::Partition {
                    duration_ms: d / 1000,
                };
                self.record_fault(c, f);
                self.partition(c, d)
            }
            Control::Pause(c, d) => {
                let f = zklock_recipe::history::FaultKind::Pause {
                    duration_ms: d / 1000,
                };
                self.record_fault(c, f);
                self.pause(c, d)
            }
            Control::Crash(c) => {
                self.record_fault(c, zklock_recipe::history::FaultKind::Crash);
                self.crash(c)
            }
            Control::Delay(c, d) => {
                let f = zklock_recipe::history::FaultKind::DelayedDelivery { delay_ms: d / 1000 };
                self.record_fault(c, f);
                self.delay_delivery(c, d)
            }
            Control::LoseNextCreateResponse(c) => {
                self.record_fault(c, zklock_recipe::history::FaultKind::LostCreateResponse);
                self.clients[c].lose_next_create = true
            }
            Control::BeforeNext(c, k, h) => self.hooks.push((c, k, h)),
        }
    }

    /// Clients with a request to apply, in id order.
    fn ready_clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        (0..self.clients.len())
            .filter(|&c| !self.clients[c].outbound.is_empty() && self.can_reach_server(c))
    }

    /// Whether client `c`'s requests currently reach the server.
    fn can_reach_server(&self, c: ClientId) -> bool {
        let cl = &self.clients[c];
        cl.conn == Conn::Connected && cl.frozen_until.is_none() && cl.partitioned_until.is_none()
    }

    fn fire(&mut self, t: Timer) {
        self.touch_global();
        match t {
            Timer::Sleep(c, done) => {
                if self
                    .clients
                    .get(c)
                    .is_some_and(|cl| cl.frozen_until.is_some())
                {
                    self.clients[c].deferred_sleeps.push(done);
                } else {
                    self.observe(c, Seen::Woke);
                    self.slots.fill(done, Delivered::Woke);
                }
            }
            Timer::Expire { session, epoch } => self.expire_timer(session, epoch),
            Timer::Reconnect { client, epoch } => self.reconnect(client, epoch),
            Timer::DetectDisconnect { client, epoch } => {
                let cl = &mut self.clients[client];
                if cl.conn_epoch == epoch && cl.conn == Conn::Connected {
                    if cl.frozen_until.is_some() {
                        // A paused library notices the silence when it resumes; a crashed
                        // one never does, and its code never hears of it.
                        cl.conn_broken = true;
                    } else {
                        self.drop_connection(client);
                    }
                }
            }
            Timer::Resume { client, at } => {
                if self.clients[client].frozen_until == Some(at) {
                    self.resume(client);
                }
            }
            Timer::Heal { client, at } => {
                if self.clients[client].partitioned_until == Some(at) {
                    self.heal(client);
                }
            }
            Timer::Undelay { client, at } => {
                if self.clients[client].delayed_until == Some(at) {
                    self.clients[client].delayed_until = None;
                    self.pump(client);
                }
            }
        }
    }

    /// Holds replies and watch events to `c` for `duration_us`, keeping their order.
    pub(crate) fn delay_delivery(&mut self, c: ClientId, duration_us: u64) {
        let at = self.now_us + duration_us;
        self.clients[c].delayed_until = Some(at);
        self.set_timer(at, Timer::Undelay { client: c, at });
    }

    /// The number of actors' requests still waiting to be applied, for stuck reports.
    pub(crate) fn outbound_total(&self) -> usize {
        self.clients.iter().map(|c| c.outbound.len()).sum()
    }
}

/// A timer without its channels, for digests.
pub(crate) fn timer_shape(t: &Timer) -> (u8, u64, u64) {
    match t {
        Timer::Sleep(c, _) => (0, *c as u64, 0),
        Timer::Expire { session, epoch } => (1, session.0 as u64, *epoch),
        Timer::Reconnect { client, epoch } => (2, *client as u64, *epoch),
        Timer::DetectDisconnect { client, epoch } => (3, *client as u64, *epoch),
        Timer::Resume { client, at } => (4, *client as u64, *at),
        Timer::Heal { client, at } => (5, *client as u64, *at),
        Timer::Undelay { client, at } => (6, *client as u64, *at),
    }
}

/// The stat a client reads for a create inside a multi: ZooKeeper's clients send it as a
/// plain create, whose reply has a path and no stat, and zookeeper-client fills in this
/// placeholder (zxids, version and cversion -1, the rest 0).
pub const MULTI_CREATE_STAT: Stat = Stat {
    czxid: -1,
    mzxid: -1,
    pzxid: -1,
    version: -1,
    cversion: -1,
    ephemeral_owner: 0,
    num_children: 0,
    data_length: 0,
};
