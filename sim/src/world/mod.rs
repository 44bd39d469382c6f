//! The simulated world: one ZooKeeper server, its sessions, the clients' connections, the
//! timers, and the step function the driver calls at every quiescent point.
//!
//! Every decision is drawn from the [`Chooser`]; everything else is a pure function of the
//! state. Requests and controls that actors issue between quiescent points are staged and
//! then applied in (actor, sequence) order, so madsim's task order never matters.

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
mod symmetry;
mod timers;
mod watches;

use crate::chooser::{ChoiceKind, Chooser};
use crate::config::{ClientConfig, SimConfig};
use crate::tree::{DataTree, Notification};
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

    /// One step of the world, taken at a quiescent point; `woken` tells whether an actor
    /// is ready to run again.
    pub(crate) fn step(&mut self, woken: impl Fn() -> bool) -> Step {
        // Applying what actors staged is a step of its own, and may wake actors at once (a
        // resource reply, a refused request): then they run first. If it woke none, the
        // run loop would only find them all still blocked, so the next step follows here.
        if self.flush_staged() {
            if let Some(stop) = self.count_step() {
                return stop;
            }
            if woken() {
                return Step::Progress;
            }
        }
        if let Some(stop) = self.count_step() {
            return stop;
        }
        // Due timers first, in (time, creation) order.
        if let Some(t) = self.timers.pop_due(self.now_us) {
            self.fire(t);
            return Step::Progress;
        }
        // Background cleanup sends its next request (after a reconnect, or the reply to
        // the previous one) before anything is chosen, so faults can meet it in flight.
        self.kick_all_detached();
        // An explorer may prune a state it has seen (never a due timer: that is forced).
        if self.partial_order {
            let t = self.transition.take().map(|mut t| {
                t.finish();
                t
            });
            self.chooser.after_transition(t.as_ref());
        }
        if self.digesting {
            let needed = self.chooser.needs_digest();
            if needed {
                self.assert_folds_known();
            }
            let d = match (needed, self.prunes_by_symmetry) {
                (false, _) => 0,
                (true, true) => self.digest_sym(false).unwrap_or_else(|| self.digest()),
                (true, false) => self.digest(),
            };
            if !self.chooser.at_state(d) {
                return Step::Pruned;
            }
        }
        // A random fault may strike (only while a scenario's faults are on).
        if self.faults.is_some() && self.maybe_fault() {
            return Step::Progress;
        }
        // Then one pending request, from a client the chooser picks.
        // Counted, then the i-th found again unless it is the first: no list is built at
        // every step.
        let (n, first) = self.ready_clients().fold((0, 0), |(n, first), c| {
            (n + 1, if n == 0 { c } else { first })
        });
        if n > 0 {
            if self.partial_order && !self.offer_requests() {
                return Step::Pruned;
            }
            let i = if self.priorities.is_some() {
                self.by_priority()
            } else {
                self.choose(ChoiceKind::NextRequest, n)
            };
            let c = match i {
                0 => first,
                _ => self.ready_clients().nth(i).expect("i < n"),
            };
            self.advance_to(self.now_us + self.cfg.request_time_us);
            if self.partial_order {
                self.transition = Some(Footprint::new(c));
            }
            self.apply_next(c);
            return Step::Progress;
        }
        // Otherwise time moves on to the next timer.
        match self.timers.next_at() {
            Some(at) => {
                self.advance_to(at);
                Step::Progress
            }
            None => Step::Idle,
        }
    }

    /// Tells a reducing chooser the requests on offer, in choice order; `false` when it
    /// prunes the run here (every one of them is asleep).
    fn offer_requests(&mut self) -> bool {
        let mut offers = std::mem::take(&mut self.offers);
        offers.clear();
        offers.extend(self.ready_clients().map(|c| {
            let o = self.clients[c].outbound.front().expect("a ready client");
            Offer {
                client: c as u32,
                fingerprint: footprint::fingerprint(&(&o.req, o.reply.is_detached())),
            }
        }));
        let go_on = self.chooser.offer_requests(&offers);
        self.offers = offers;
        go_on
    }

    /// Counts a step; `Some` when a limit stops the world.
    fn count_step(&mut self) -> Option<Step> {
        self.steps += 1;
        if self.steps > self.cfg.steps_max {
            return Some(Step::OutOfSteps);
        }
        if self.now_us > self.cfg.time_limit_ms.saturating_mul(1000) {
            return Some(Step::OutOfTime);
        }
        None
    }

    fn advance_to(&mut self, at: u64) {
        if at > self.now_us {
            // Keep madsim's clock in step, so code reading madsim's time sees ours.
            #[cfg(madsim)]
            if let Some(clock) = &self.madsim_clock {
                clock.advance(std::time::Duration::from_micros(at - self.now_us));
            }
            self.now_us = at;
        }
    }

    /// Applies everything actors staged since the last step, in (actor, sequence) order.
    fn flush_staged(&mut self) -> bool {
        if self.staged.is_empty() {
            return false;
        }
        // Swapped with a spare vector and back, so staging never allocates once warm.
        let mut staged =
            std::mem::replace(&mut self.staged, std::mem::take(&mut self.staged_spare));
        // Usually in order already: one round polls actors in id order.
        if !staged.is_sorted_by_key(|(order, _)| *order) {
            staged.sort_by_key(|(order, _)| *order);
        }
        for (_, s) in staged.drain(..) {
            // An actor's requests are a transition's own; anything else it asks is not.
            if !matches!(s, Staged::Request { .. }) {
                self.touch_global();
            }
            match s {
                Staged::Request {
                    client,
                    session,
                    req,
                    reply,
                } => {
                    if session == self.clients[client].session {
                        self.submit(client, req, ReplyTo::Actor(reply));
                    } else {
                        self.touch_global();
                        let failed = Err(self.clients[client].ended_error(session));
                        self.observe(client, Seen::Reply(&failed));
                        self.slots.fill(reply, Delivered::Reply(failed));
                    }
                }
                Staged::Sleep {
                    client,
                    duration_us,
                    done,
                } => self.set_timer(self.now_us + duration_us, Timer::Sleep(client, done)),
                Staged::Control(c) => self.control(c),
                Staged::Record { client, kind } => self.record(client, kind),
                Staged::Resource { client, op, reply } => {
                    if self.clients[client].frozen_until.is_some() {
                        self.clients[client].deferred_resource.push((op, reply));
                    } else {
                        self.resource_op(client, op, reply);
                    }
                }
                Staged::CrashWatch { client, done } => {
                    if self.clients[client].crashed {
                        let _ = done.send(());
                    } else {
                        self.clients[client].crash_watchers.push(done);
                    }
                }
                Staged::Detached {
                    client,
                    session,
                    what,
                } => {
                    // An ended session's nodes went with it.
                    if session == self.clients[client].session {
                        self.add_detached(client, what);
                    }
                }
                Staged::Finished { client } => self.clients[client].finished = true,
                Staged::Renew { client, reply } => {
                    let renewed = self.renew_session(client);
                    self.observe(client, Seen::Renewed(renewed));
                    self.slots.fill(reply, Delivered::Renewed(renewed));
                }
                Staged::Choose {
                    client,
                    kind,
                    n,
                    reply,
                } => {
                    let v = self.choose(kind, n);
                    self.observe(client, Seen::Chosen(v));
                    self.slots.fill(reply, Delivered::Chosen(v));
                }
            }
        }
        self.staged_spare = staged;
        true
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

    fn apply_next(&mut self, c: ClientId) {
        let kind = self.clients[c].outbound.front().map(|o| o.req.kind());
        if let Some(kind) = kind
            && let Some(i) = self
                .hooks
                .iter()
                .position(|(hc, hk, _)| *hc == c && *hk == kind)
        {
            self.touch_global();
            let (_, _, hook) = self.hooks.remove(i);
            hook(&mut ServerCtl { world: self });
            // The hook may have cut this client off; then the request is in-flight
            // and was handled with the connection.
            if !self.can_reach_server(c) || self.clients[c].outbound.is_empty() {
                return;
            }
        }
        let Some(out) = self.clients[c].outbound.pop_front() else {
            return;
        };
        if out.req.wire_bytes() > REQUEST_BYTES_MAX {
            self.touch_global();
            self.refuse_oversized(c, out);
            return;
        }
        let lose = matches!(out.req, Request::Create { .. }) && self.clients[c].lose_next_create;
        let op_id = out.op_id;
        let closing = matches!(out.req, Request::Close);
        let (result, watch) = self.execute(c, out.req);
        if lose {
            self.touch_global();
            // The create is applied, but its reply never arrives: the connection breaks.
            self.clients[c].lose_next_create = false;
            self.answer(c, out.reply, Err(ZkError::ConnectionLoss));
            self.record(c, EventKind::OpUnknown { op_id });
            self.drop_connection(c);
        } else {
            self.send_reply(c, op_id, out.reply, result, watch);
            if closing {
                self.mark_closed(c);
            }
        }
    }

    /// Applies a request at the server. Watch notifications go out before the reply, as
    /// ZooKeeper's server sends them.
    #[inline]
    fn execute(&mut self, c: ClientId, req: Request) -> (Reply, Option<(Arc<str>, WatchKind)>) {
        let session = self.clients[c].session;
        if self.transition.is_some() {
            self.note_footprint(&req);
        }
        let mut notes = std::mem::take(&mut self.notes);
        let mut watch = None;
        let result = match req {
            Request::Create { path, data, mode } => self
                .tree
                .create(session, &path, &data, mode, &mut notes)
                .map(|(p, s)| Answer::Created(p, s)),
            Request::Delete { path, version } => self
                .tree
                .delete(&path, version, &mut notes)
                .map(|()| Answer::Done),
            Request::SetData {
                path,
                data,
                version,
            } => self
                .tree
                .set_data(&path, &data, version, &mut notes)
                .map(Answer::Stat),
            Request::Multi(ops) => self
                .tree
                .multi(session, &ops, &mut notes)
                .map(|results| Answer::Multi(results.into_iter().map(as_sent).collect())),
            Request::Exists { path, watch: w } => {
                let r = self.tree.exists(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Data));
                }
                r.map(|s| Answer::Exists(s, None))
            }
            Request::GetData { path, watch: w } => {
                let r = self.tree.get_data(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Data));
                }
                r.map(|(d, s)| Answer::Data(d, s, None))
            }
            Request::GetChildren { path, watch: w } => {
                let r = self.tree.get_children(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Child));
                }
                r.map(|ch| Answer::Children(ch, None))
            }
            Request::Close => {
                self.tree.close_session(session, &mut notes);
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.alive = false;
                }
                Ok(Answer::Done)
            }
        };
        if let (Some(t), Ok(Answer::Created(p, _))) = (&mut self.transition, &result) {
            // A sequential node's own name is known only now.
            t.write(p);
        }
        self.route(&mut notes);
        self.notes = notes;
        (result, watch)
    }

    /// What a request applied in a transition reads and writes of the tree (see
    /// `footprint`): a write as written whether or not it succeeds, conservatively.
    fn note_footprint(&mut self, req: &Request) {
        let Some(t) = &mut self.transition else {
            return;
        };
        match req {
            Request::Create { path, .. } => t.read_with_parent(path),
            Request::Delete { path, .. } | Request::SetData { path, .. } => {
                t.read_with_parent(path);
                t.write(path);
            }
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => {
                t.read(path);
                if *watch {
                    t.watch(path);
                }
            }
            Request::Multi(_) | Request::Close => t.global = true,
        }
    }

    /// A request frame larger than the server reads: it closes the connection, so
    /// neither this request nor any the client sent after it is applied; all fail with
    /// ConnectionLoss (the client cannot know their fate), and the client reconnects.
    fn refuse_oversized(&mut self, c: ClientId, out: Outbound) {
        let mut lost = vec![out];
        lost.extend(self.clients[c].outbound.drain(..));
        for out in lost {
            self.answer(c, out.reply, Err(ZkError::ConnectionLoss));
            self.record(c, EventKind::OpUnknown { op_id: out.op_id });
        }
        self.drop_connection(c);
    }

    /// Queues watch notifications on their clients' connections, leaving `notes` empty.
    pub(crate) fn route(&mut self, notes: &mut Vec<Notification>) {
        if notes.is_empty() {
            return;
        }
        let mut touched = std::mem::take(&mut self.touched);
        for n in notes.drain(..) {
            if let Some(s) = self.sessions.get(&n.session) {
                let c = s.client;
                if let Some(t) = &mut self.transition {
                    t.touch(c);
                }
                let cl = &mut self.clients[c];
                if cl.session != n.session {
                    // A session the client library gave up on while the server still
                    // holds it: its connection is closed, so its events go nowhere.
                    continue;
                }
                // Straight to a client with nothing queued, as `send_reply` does. Clients
                // then hear in notification order rather than by id, which nothing
                // observes: an event only fires a watch, and wakes are taken in id order.
                if cl.inbound.is_empty() && cl.can_take_event() {
                    self.deliver_event(c, n.event);
                    continue;
                }
                cl.inbound.push_back(Inbound::Event(n.event));
                if !touched.contains(&c) {
                    touched.push(c);
                }
            }
        }
        touched.sort_unstable();
        for &c in &touched {
            self.pump(c);
        }
        touched.clear();
        self.touched = touched;
    }

    /// Sends a reply down the client's connection: delivered at once when nothing is
    /// queued ahead of it and the client can take it, else queued. The same as queueing
    /// then pumping, without building the queue's item.
    fn send_reply(
        &mut self,
        c: ClientId,
        op_id: u64,
        reply: ReplyTo,
        result: Reply,
        watch: Option<(Arc<str>, WatchKind)>,
    ) {
        self.touch_client(c);
        let cl = &mut self.clients[c];
        if cl.inbound.is_empty() && cl.can_take_reply() {
            self.deliver_reply(c, op_id, reply, result, watch);
        } else {
            cl.inbound.push_back(Inbound::Reply {
                op_id,
                reply,
                result,
                watch,
            });
        }
        // Pumping an empty queue does nothing; the check spares the call on every reply.
        if !self.clients[c].inbound.is_empty() {
            self.pump(c);
        }
    }

    /// Delivers what the client's connection holds, in order, unless the client cannot
    /// receive now (frozen, partitioned, or disconnected: events wait for the reconnect).
    pub(crate) fn pump(&mut self, c: ClientId) {
        loop {
            let cl = &mut self.clients[c];
            match cl.inbound.front() {
                Some(front) if cl.can_take(front) => {}
                _ => return,
            }
            let item = cl.inbound.pop_front().expect("front exists");
            self.deliver(c, item);
        }
    }

    /// Hands one item of the connection to the client.
    fn deliver(&mut self, c: ClientId, item: Inbound) {
        match item {
            Inbound::Reply {
                op_id,
                reply,
                result,
                watch,
            } => self.deliver_reply(c, op_id, reply, result, watch),
            Inbound::Event(ev) => self.deliver_event(c, ev),
        }
    }

    fn deliver_event(&mut self, c: ClientId, ev: WatchedEvent) {
        self.observe(c, Seen::Event(&ev));
        // Recorded as the client library hands it over; the history is written only,
        // never read by the world, so recording it changes no decision.
        self.record(
            c,
            EventKind::WatchEvent {
                event_type: ev.event_type,
                path: ev.path.clone(),
            },
        );
        self.clients[c].watches.fire(ev);
    }

    /// Hands a reply to the client: its watch registers now, as the client library's does.
    fn deliver_reply(
        &mut self,
        c: ClientId,
        op_id: u64,
        reply: ReplyTo,
        mut result: Reply,
        watch: Option<(Arc<str>, WatchKind)>,
    ) {
        if let (Ok(answer), Some((path, kind))) = (&mut result, watch) {
            let (tx, w) = zklock_recipe::Watch::channel();
            self.clients[c].watches.add(kind, path, tx);
            answer.attach_watch(w);
        }
        let kind = match &result {
            Ok(_) => EventKind::OpOk { op_id },
            Err(e) => EventKind::OpFail {
                op_id,
                error: e.clone(),
            },
        };
        if let ReplyTo::Actor(slot) = &reply {
            self.before_reply(c);
            self.observe(c, Seen::Reply(&result));
            self.arm_before_reply(c, *slot);
        } else {
            self.observe(c, Seen::Reply(&result));
        }
        self.answer(c, reply, result);
        self.record(c, kind);
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

/// A request's kind, path and whether it leaves a watch, as the history records them.
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

/// A multi's result as the client reads it (see [`MULTI_CREATE_STAT`]).
fn as_sent(result: OpResult) -> OpResult {
    match result {
        OpResult::Create { path, .. } => OpResult::Create {
            path,
            stat: MULTI_CREATE_STAT,
        },
        other => other,
    }
}

fn describe(req: &Request) -> (ZkOp, Arc<str>, bool) {
    let (path, watch) = match req {
        Request::Create { path, .. }
        | Request::Delete { path, .. }
        | Request::SetData { path, .. } => (Arc::clone(path), false),
        Request::Exists { path, watch }
        | Request::GetData { path, watch }
        | Request::GetChildren { path, watch } => (Arc::clone(path), *watch),
        Request::Multi(ops) => (
            ops.first().map_or_else(|| "".into(), |o| o.path().into()),
            false,
        ),
        Request::Close => ("".into(), false),
    };
    (req.kind(), path, watch)
}

/// Direct access to the server for scenario hooks: writes as a system session, expiry.
pub struct ServerCtl<'a> {
    world: &'a mut World,
}

impl std::fmt::Debug for ServerCtl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCtl")
            .field("now_us", &self.world.now_us)
            .finish()
    }
}

/// The session the server-side hooks write as: it owns no ephemerals.
pub const SYSTEM_SESSION: SessionId = SessionId(0);

impl ServerCtl<'_> {
    /// Creates a persistent node (the system session owns no ephemerals).
    pub fn create(&mut self, path: &str, data: &[u8], mode: CreateMode) -> Result<String, ZkError> {
        if mode.is_ephemeral() {
            return Err(ZkError::BadArguments(
                "server hooks create persistent nodes only".into(),
            ));
        }
        let mut notes = Vec::new();
        let r = self
            .world
            .tree
            .create(SYSTEM_SESSION, path, data, mode, &mut notes);
        self.world.route(&mut notes);
        r.map(|(p, _)| p)
    }
    pub fn delete(&mut self, path: &str) -> Result<(), ZkError> {
        let mut notes = Vec::new();
        let r = self.world.tree.delete(path, None, &mut notes);
        self.world.route(&mut notes);
        r
    }
    pub fn set_data(&mut self, path: &str, data: &[u8]) -> Result<Stat, ZkError> {
        let mut notes = Vec::new();
        let r = self.world.tree.set_data(path, data, None, &mut notes);
        self.world.route(&mut notes);
        r
    }
    /// Expires a session at the server now, as Curator's KillSession.
    pub fn expire(&mut self, session: SessionId) {
        if let Some(c) = self.world.sessions.get(&session).map(|s| s.client) {
            self.world.force_expire(c);
        }
    }
    /// Breaks the connection of a session's client now, as a connection loss: its
    /// requests in flight, the one about to be applied included, fail with
    /// ConnectionLoss, and the client reconnects to the same session.
    pub fn disconnect(&mut self, session: SessionId) {
        if let Some(c) = self.world.sessions.get(&session).map(|s| s.client) {
            self.world.control(Control::Disconnect(c));
        }
    }
    pub fn tree(&self) -> &DataTree {
        &self.world.tree
    }
    pub fn now_us(&self) -> u64 {
        self.world.now_us
    }
}
