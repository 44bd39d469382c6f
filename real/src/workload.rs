//! A real run: the simulation's workload on real servers, recorded in the same history
//! format for the same checker.
//!
//! `clients` clients, each with its own session (and, when faults need them, its own
//! proxies), repeat acquire → read the resource → hold → write the resource with the
//! fencing token → release, with the acquire modes cycling blocking, try, timeout and the
//! lost signal raced against the hold, as `zklock_sim`'s scenario runner does. A client
//! whose session ended opens a new session and goes on with a new lock, as a real process
//! would (and as a simulated client does). New acquisitions start until `duration_ms`, and
//! on past it until what the run is for has happened (`until`: a count, an event), so that
//! a slow machine makes the same run as a fast one, only longer; a blocking acquire still
//! waiting `drain_timeout_ms` after the later of its start and `duration_ms` is cancelled
//! (and shows up as late to the checker). Faults (see [`crate::faults`]) strike from one
//! task until the heal time, which waits for `FaultConfig::strikes_min` strikes; a heal
//! that came late moves the rest of the run with it.
//!
//! When every client is done, the lock directory's children are read from the server while
//! the sessions are still open (waiting for dead sessions to expire), so any node left is a
//! true orphan; then the sessions are closed.

mod locks;
pub mod queue;
mod semaphore;

pub use crate::goal::RunGoal;
pub use locks::{MAX_LOCKS, lock_of, lock_paths};
pub use queue::{QueueWorkload, run_queue};
pub use semaphore::SemaphoreRealRecipe;

use crate::client::ZkClient;
use crate::error::RealError;
use crate::faults::{
    ClientLink, FaultConfig, FaultCounts, FaultTargets, LiveSessions, NOT_HEALED, RealFault,
};
use crate::plan::AimedAction;
use crate::process::{Pausable, ProcessControl};
use crate::recorder::{DEFAULT_MAX_EVENTS, Recorder};
use crate::recording::RecordingClient;
use crate::servers::Servers;
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use zklock_recipe::history::{
    AcquireMode, EventKind, FaultKind, History, LockRole, NodeLife, NodeLives, RunFacts,
};
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::ShippedLock;
use zklock_recipe::{Coordination, LockUnderTest, SessionId, ZkError};

/// The most clients a run may have: each is a session and up to one proxy per server.
pub const MAX_CLIENTS: u32 = 64;
/// The longest duration of any kind a run accepts, in ms (an hour): the run's duration,
/// its sessions' timeout, holds, timeouts and backoffs.
pub const MAX_DURATION_MS: u64 = 3_600_000;
/// The shortest session timeout a run accepts (the harness servers grant 400 ms and up).
pub const MIN_SESSION_TIMEOUT_MS: u64 = 400;

/// A real run's workload. Durations are in milliseconds.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// Contending clients, each on its own session. 1 to [`MAX_CLIENTS`].
    pub clients: u32,
    /// How many of the clients take the read lock (the rest write). 0: an exclusive lock.
    pub readers: u32,
    /// New acquisitions start until this much run time has passed.
    pub duration_ms: u64,
    /// The lock's directory (created with its parents).
    pub lock_path: String,
    /// Lock directories, 1 to [`MAX_LOCKS`] (default 1): above 1 the run takes
    /// `<lock_path>-0` to `<lock_path>-N-1` ([`lock_paths`]), each acquisition the lock
    /// [`lock_of`] picks from `lock_seed`, each lock guarding a resource of its own.
    pub locks: u32,
    /// The seed of each acquisition's lock in a run of several locks (`zklock real` gives
    /// it the run's `--seed`). Default 0.
    pub lock_seed: u64,
    /// Session timeout every client asks for.
    pub session_timeout_ms: u64,
    /// How long connecting a session may take before the run (or a reconnect) gives up.
    pub connect_timeout_ms: u64,
    /// Time in the critical section, between reading and writing the resource.
    pub hold_ms: u64,
    /// Timeout of the timed acquire mode.
    pub acquire_timeout_ms: u64,
    /// Every `drop_every`-th attempt of a client is a blocking acquire whose future is
    /// dropped after a delay unless it finished first, as the simulation's. 0: never.
    pub drop_every: u32,
    /// Longest delay before a dropped acquire is dropped; the delays are spread over
    /// `0..=drop_after_ms_max` (the simulation's chooser draws them).
    pub drop_after_ms_max: u64,
    /// Where each client's attempts start in the mix of modes, as the simulation's
    /// `Scenario::mix_offset`: attempt `k` takes the mode of `k + mix_offset`. At 2, the
    /// first attempt is timed. Default 0.
    pub mix_offset: u32,
    /// How long after `duration_ms` a blocking acquire may still wait before it is
    /// cancelled, so a stuck lock ends the run instead of hanging it.
    pub drain_timeout_ms: u64,
    /// Pause after an acquire that failed with an error.
    pub error_backoff_ms: u64,
    /// A contender that gives up (its try found the lock held, its timed acquire timed
    /// out, its acquire was dropped) stays connected and idle this long before its next
    /// attempt: a node its attempt left behind then outlives it, instead of being picked
    /// up again at once by the next attempt. 0 (the default): it goes on at once.
    pub idle_after_give_up_ms: u64,
    /// Every `long_hold_every`-th attempt of a client that acquires holds for
    /// `long_hold_ms` instead of `hold_ms` (a hold past the session timeout, when
    /// `long_hold_ms` is longer). 0 (the default): every hold is `hold_ms`.
    pub long_hold_every: u32,
    /// See [`long_hold_every`](WorkloadConfig::long_hold_every); positive when it is.
    pub long_hold_ms: u64,
    /// Every `fresh_lock_every`-th attempt of a client uses a new lock object of its
    /// session ([`RealRecipe::fresh_lock`]), which the later attempts then use; 1: every
    /// attempt. 0 (the default): one lock object per session, reused.
    pub fresh_lock_every: u32,
    /// Client `i` starts its first attempt `i × start_stagger_ms` after the workers start
    /// (every session connected), so that
    /// contenders queue in the order of their index (a lock's clients; a work queue's
    /// start at once). At most an hour. 0 (the default): every client at once.
    pub start_stagger_ms: u64,
    /// Soft cap on history events: past it, no new acquisition starts.
    pub max_history_events: usize,
    /// What the run must have seen before it ends: past `duration_ms` (and as long past
    /// the heal as `duration_ms` is past the planned heal), new acquisitions go on until
    /// this holds of the history so far, checked every 100 ms. None (the default): the run
    /// ends at `duration_ms`. Tests use it to wait for what they need (contention, a
    /// handover) instead of hoping a fixed time is enough.
    pub until: Option<RunGoal>,
    /// How long, in run time, a run may go on chasing `until` or a late heal: a bound only
    /// a hang reaches. Default 600,000 (10 minutes).
    pub goal_deadline_ms: u64,
    /// Each client's attempts, then it is done: a fixed script, as the fault-point search
    /// runs it, so that a run's requests line up with another's. The run ends once every
    /// client is done (or at `goal_deadline_ms`). 0 (the default): attempts go on until
    /// `duration_ms`.
    pub attempts_per_client: u32,
    /// Set it (from a Ctrl-C handler, say) to cut the run short: faults heal at once, no
    /// new acquisition starts, and the run ends as usual with what it recorded
    /// ([`RealRun::interrupted`]). None: the run cannot be interrupted this way.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// How long a node may outlive the attempt that made it (failed, timed out,
    /// cancelled, released) while its session lives, in ms, before the checker's
    /// `node_outlives_attempt` calls it a leak. 0 (the default): the liveness bound,
    /// twice the session timeout plus 1 s ([`WorkloadConfig::liveness_bound_ms`]).
    pub leak_bound_ms: u64,
}

impl Default for WorkloadConfig {
    /// 5 clients for 30 s on `/zklock/lock`, 4 s sessions, 5 ms holds, 3 s timed acquires,
    /// every 4th acquire dropped within 20 ms, the mix starting with a blocking acquire.
    fn default() -> Self {
        WorkloadConfig {
            clients: 5,
            readers: 0,
            duration_ms: 30_000,
            lock_path: "/zklock/lock".into(),
            locks: 1,
            lock_seed: 0,
            session_timeout_ms: 4_000,
            connect_timeout_ms: 10_000,
            hold_ms: 5,
            acquire_timeout_ms: 3_000,
            drop_every: 4,
            drop_after_ms_max: 20,
            mix_offset: 0,
            drain_timeout_ms: 10_000,
            error_backoff_ms: 10,
            idle_after_give_up_ms: 0,
            start_stagger_ms: 0,
            long_hold_every: 0,
            long_hold_ms: 0,
            fresh_lock_every: 0,
            max_history_events: DEFAULT_MAX_EVENTS,
            until: None,
            goal_deadline_ms: 600_000,
            attempts_per_client: 0,
            interrupt: None,
            leak_bound_ms: 0,
        }
    }
}

impl WorkloadConfig {
    /// After the heal, every live waiter must be served within this bound: twice the
    /// session timeout (a dead holder's session expiring, then a reconnect) plus 1 s, as
    /// the simulation's default.
    pub fn liveness_bound_ms(&self) -> u64 {
        self.session_timeout_ms
            .saturating_mul(2)
            .saturating_add(1_000)
    }

    /// The leak bound in force: [`leak_bound_ms`](WorkloadConfig::leak_bound_ms), or
    /// the liveness bound when it is 0.
    pub fn leak_bound_in_force_ms(&self) -> u64 {
        match self.leak_bound_ms {
            0 => self.liveness_bound_ms(),
            ms => ms,
        }
    }

    /// Checks the bounds; the error says which one.
    pub fn validate(&self) -> Result<(), RealError> {
        let bad = |reason: String| Err(RealError::Config { reason });
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return bad(format!(
                "clients must be 1 to {MAX_CLIENTS}, got {}",
                self.clients
            ));
        }
        if self.readers > self.clients {
            return bad(format!(
                "readers ({}) cannot exceed clients ({})",
                self.readers, self.clients
            ));
        }
        if self.session_timeout_ms < MIN_SESSION_TIMEOUT_MS {
            return bad(format!(
                "session_timeout_ms must be at least {MIN_SESSION_TIMEOUT_MS}, got {}",
                self.session_timeout_ms
            ));
        }
        if self.duration_ms == 0 || self.connect_timeout_ms == 0 {
            return bad("duration_ms and connect_timeout_ms must be positive".into());
        }
        for (name, ms) in [
            ("duration_ms", self.duration_ms),
            ("session_timeout_ms", self.session_timeout_ms),
            ("connect_timeout_ms", self.connect_timeout_ms),
            ("hold_ms", self.hold_ms),
            ("acquire_timeout_ms", self.acquire_timeout_ms),
            ("drain_timeout_ms", self.drain_timeout_ms),
            ("error_backoff_ms", self.error_backoff_ms),
            ("idle_after_give_up_ms", self.idle_after_give_up_ms),
            ("start_stagger_ms", self.start_stagger_ms),
            ("long_hold_ms", self.long_hold_ms),
            ("leak_bound_ms", self.leak_bound_ms),
        ] {
            if ms > MAX_DURATION_MS {
                return bad(format!(
                    "{name} must be at most {MAX_DURATION_MS} (an hour), got {ms}"
                ));
            }
        }
        if self.long_hold_every > 0 && self.long_hold_ms == 0 {
            return bad("long_hold_ms must be positive when long_hold_every is".into());
        }
        if self.drop_after_ms_max > MAX_DROP_AFTER_MS {
            return bad(format!(
                "drop_after_ms_max must be at most {MAX_DROP_AFTER_MS}, got {}",
                self.drop_after_ms_max
            ));
        }
        if let Err(e) = zklock_recipe::path::validate_path(&self.lock_path, false) {
            return bad(format!("lock path {:?}: {e}", self.lock_path));
        }
        if !(1..=MAX_LOCKS).contains(&self.locks) {
            return bad(format!(
                "locks must be 1 to {MAX_LOCKS}, got {}",
                self.locks
            ));
        }
        for path in self.lock_paths() {
            if let Err(e) = zklock_recipe::path::validate_path(&path, false) {
                return bad(format!("lock path {path:?}: {e}"));
            }
        }
        Ok(())
    }

    /// The run's lock directories ([`lock_paths`]).
    pub fn lock_paths(&self) -> Vec<String> {
        lock_paths(&self.lock_path, self.locks)
    }
}

/// Everything a real run produced.
#[derive(Debug)]
pub struct RealRun {
    pub history: History,
    /// Children of the lock directory once every client was done and dead sessions had
    /// expired (read before the live ones were closed): a node left here is an orphan. In
    /// a run of several locks, the first lock's.
    pub final_lock_children: Vec<String>,
    /// Every lock directory of the run ([`WorkloadConfig::lock_paths`]) with its children
    /// read as `final_lock_children` is.
    pub final_children_by_lock: Vec<(String, Vec<String>)>,
    /// Every other directory the clients created nodes in, as their proxies saw the
    /// creates (a library's internal directories: Kazoo's `<path>-__lock__`, Curator's
    /// `locks`), with the ephemeral nodes left in it, read after the lock directories
    /// (and re-read while sessions that are ending expire, for as long). Only directories
    /// with nodes left are listed; empty when the run had no proxies.
    pub final_children_touched: Vec<(String, Vec<String>)>,
    /// The recipe's [`RealRecipe::leases`]: `Some(n)` for a semaphore of `n` leases.
    pub leases: Option<u32>,
    /// The recipe's [`RealRecipe::tokens_are_czxids`].
    pub tokens_are_czxids: bool,
    /// A work queue's run ([`run_queue`]): its directories, whose final children are the
    /// two of [`final_children_by_lock`](RealRun::final_children_by_lock) (the items',
    /// then the item locks'). `None` for a lock's run.
    pub queue: Option<zklock_recipe::work_queue::QueuePaths>,
    /// Run time when every client was done, in µs.
    pub run_end_us: u64,
    /// When faults stopped, in ms of run time.
    pub heal_ms: u64,
    /// The bound the checker should judge liveness with.
    pub liveness_bound_ms: u64,
    /// The clients' session timeout, in ms: what each fault adds to the time a timed
    /// acquire may take.
    pub session_timeout_ms: u64,
    pub lock_path: String,
    /// What the fault injector did.
    pub faults: FaultCounts,
    /// Process pauses were among the faults: judge the run as the simulation judges runs
    /// with pauses (`CheckConfig::pauses_on`), since a paused holder cannot notice its
    /// session expiring and no recipe keeps belief-based exclusion then.
    pub pauses_on: bool,
    /// Sessions opened by the clients (more than `clients` after expiries).
    pub sessions_opened: u64,
    /// The run was cut short by [`WorkloadConfig::interrupt`]: it was judged on what it
    /// had recorded by then.
    pub interrupted: bool,
    /// Per client, when it had proxies: every request it sent that an aim can match, in
    /// the order its proxies saw them (see [`ClientLink::requests_seen`]), and how many
    /// more came past the proxies' bound. Empty when the run had no proxies.
    pub requests: Vec<(Vec<crate::plan::SeenRequest>, u64)>,
    /// Requests aimed faults caught ([`FaultConfig::aimed`]), over every client.
    pub aimed_strikes: u64,
    /// Every ephemeral node the clients made, as their proxies saw the server's replies,
    /// with the run's leak bound ([`WorkloadConfig::leak_bound_ms`]), for the checker's
    /// `node_outlives_attempt`. `None` when the run had no proxies.
    pub nodes: Option<NodeLives>,
    /// The servers, still running (dropping harness-started ones stops them).
    pub servers: Servers,
}

impl RealRun {
    /// What the checker needs to know of this run besides its history:
    /// `CheckConfig::from(run.facts())`. A run of several locks, or a semaphore's, also
    /// needs its shape: [`final_children_by_lock`](RealRun::final_children_by_lock) and
    /// [`leases`](RealRun::leases) (`zklock_checker::real_judge::RunShape`).
    pub fn facts(&self) -> RunFacts {
        RunFacts {
            heal_ms: self.heal_ms,
            liveness_bound_ms: self.liveness_bound_ms,
            pauses_on: self.pauses_on,
            lock_path: self.lock_path.clone(),
            final_lock_children: self.final_lock_children.clone(),
            run_end_us: self.run_end_us,
            session_timeout_ms: self.session_timeout_ms,
            tokens_are_czxids: self.tokens_are_czxids,
        }
    }
}

/// Makes one lock per client session of a real run: the recipe under test, as
/// `zklock_sim::Recipe` makes them for simulated clients. Implement it for a recipe of
/// your own, or a changed copy of the shipped one, and [`run_recipe`] runs it on real
/// servers with the same workload and faults as the shipped recipe.
///
/// ```
/// use zklock_real::recording::RecordingClient;
/// use zklock_real::workload::RealRecipe;
/// use zklock_recipe::history::LockRole;
/// use zklock_recipe::lock::LockOptions;
/// use zklock_recipe::under_test::ShippedLock;
///
/// /// zklock's lock with options of your own.
/// struct Mine(LockOptions);
///
/// impl RealRecipe for Mine {
///     type Lock = ShippedLock<RecordingClient>;
///     fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
///         ShippedLock::new(client, role, path, self.0.clone()).expect("a valid path")
///     }
/// }
/// ```
pub trait RealRecipe: Send + Sync + 'static {
    type Lock: LockUnderTest;
    /// The lock object client `client` uses in role `role` on directory `path` (a valid
    /// path: the run checks it first). Called again with the new session's client when a
    /// client opens a new session after an expiry.
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock;

    /// A new lock object for the same client session as `current`, for an attempt that
    /// uses a fresh lock object ([`WorkloadConfig::fresh_lock_every`]): it knows nothing of
    /// what `current` left behind. Default: [`lock`](RealRecipe::lock) again. (A driver's
    /// lock asks its process for a new library lock object instead of a new process.)
    fn fresh_lock(
        &self,
        current: &Self::Lock,
        client: RecordingClient,
        role: LockRole,
        path: &str,
    ) -> Self::Lock {
        let _ = current;
        self.lock(client, role, path)
    }

    /// The directory whose children are the lock's nodes, read when the run ends for
    /// orphans. Default: the lock path itself. (Curator's semaphores keep their nodes in
    /// `<path>/leases` and `<path>/locks`.)
    fn nodes_dir(&self, lock_path: &str) -> String {
        lock_path.to_owned()
    }

    /// `Some(n)` for a counting semaphore of `n` leases (1 to
    /// `zklock_recipe::semaphore::LEASES_MAX`): every client then holds a lease as a reader
    /// of the resource, whatever its role, and the run is judged with `semaphore_leases`.
    /// Default `None`: a lock.
    fn leases(&self) -> Option<u32> {
        None
    }

    /// The tokens its locks report are their nodes' czxids, as the shipped recipes' and
    /// the drivers' are: the checker's `fifo` then tells a node made earlier by its token,
    /// so that a directory ZooKeeper deleted and made again mid-run (an empty container,
    /// such as Curator's) is not read as a node passed over. Default `false`: sequence
    /// order alone.
    fn tokens_are_czxids(&self) -> bool {
        false
    }

    /// Called with each of a client's lock objects when the client is done with its
    /// script, before the objects are kept, idle, until the run has been read, and with
    /// the lock of an attempt that gave up before the client idles
    /// ([`WorkloadConfig::idle_after_give_up_ms`]): what its cancelled acquires may still
    /// hold is given back here, as its next acquire would have. It may be cut short (at
    /// the idle's end): a later call, or the next acquire, takes up what is left.
    /// Default: nothing. (A driver's lock releases a hold its library took after the
    /// acquire was cancelled.)
    fn retire(&self, lock: &Self::Lock) -> impl std::future::Future<Output = ()> + Send {
        let _ = lock;
        async {}
    }

    /// Called once before the clients start, with where each connects and its process's
    /// switches: a recipe whose locks run in processes of their own
    /// ([`crate::driver`]) starts them here. Default: nothing.
    fn start(
        &self,
        run: &RunStart,
    ) -> impl std::future::Future<Output = Result<(), RealError>> + Send {
        let _ = run;
        async { Ok(()) }
    }
}

/// A recipe behind an [`Arc`] runs as the recipe itself does: one registered recipe serves
/// every run of a search. Every method is forwarded; a method the trait gains is forwarded
/// here too, next to its definition, or the shared recipe would take its default.
impl<R: RealRecipe> RealRecipe for Arc<R> {
    type Lock = R::Lock;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        R::lock(self, client, role, path)
    }
    fn fresh_lock(
        &self,
        current: &Self::Lock,
        client: RecordingClient,
        role: LockRole,
        path: &str,
    ) -> Self::Lock {
        R::fresh_lock(self, current, client, role, path)
    }
    fn nodes_dir(&self, lock_path: &str) -> String {
        R::nodes_dir(self, lock_path)
    }
    fn leases(&self) -> Option<u32> {
        R::leases(self)
    }
    fn tokens_are_czxids(&self) -> bool {
        R::tokens_are_czxids(self)
    }
    fn retire(&self, lock: &Self::Lock) -> impl std::future::Future<Output = ()> + Send {
        R::retire(self, lock)
    }
    fn start(
        &self,
        run: &RunStart,
    ) -> impl std::future::Future<Output = Result<(), RealError>> + Send {
        R::start(self, run)
    }
}

/// What [`RealRecipe::start`] is given, per client (by index).
#[derive(Debug)]
pub struct RunStart {
    /// Where each client connects (its proxies, or the servers).
    pub connect: Vec<String>,
    /// Each client's process switches (pause, crash).
    pub processes: Vec<Arc<ProcessControl>>,
    /// Each client's role.
    pub roles: Vec<LockRole>,
    pub lock_path: String,
    pub session_timeout_ms: u64,
    pub recorder: Arc<Recorder>,
}

/// zklock's shipped lock on a real run: the exclusive lock, or the read/write lock's
/// sides for readers and writers.
#[derive(Clone, Debug, Default)]
pub struct ShippedRealRecipe {
    pub options: LockOptions,
}

impl RealRecipe for ShippedRealRecipe {
    type Lock = ShippedLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedLock::new(client, role, path, self.options.clone())
            .expect("the workload's lock path was validated")
    }
    fn tokens_are_czxids(&self) -> bool {
        true
    }
}

/// What each client of a run does, and what the run reads at its end: a lock's
/// acquisitions ([`LockWork`]) or a work queue's producers and consumers
/// ([`queue::QueueWork`]).
trait Work: Send + Sync + 'static {
    /// Client `index`'s loop from its first session; returns its last client, to be
    /// closed once the run is read (`None`: it gave up a stuck call).
    fn worker(
        self: Arc<Self>,
        shared: Arc<Shared>,
        index: usize,
        first: RecordingClient,
    ) -> BoxFuture<'static, Option<RecordingClient>>;
    /// Each directory whose children are read at the end: as reported, and as read.
    fn final_dirs(&self, config: &WorkloadConfig) -> Vec<(String, String)>;
    /// `Some(n)` for a semaphore of `n` leases.
    fn leases(&self) -> Option<u32>;
    /// See [`RealRecipe::tokens_are_czxids`].
    fn tokens_are_czxids(&self) -> bool {
        false
    }
    /// Called once before the clients start.
    fn start<'a>(&'a self, run: &'a RunStart) -> BoxFuture<'a, Result<(), RealError>>;
    /// Ends the run: sets [`Shared::over`] when no client should start anything new.
    fn watch_end<'a>(
        self: Arc<Self>,
        shared: &'a Shared,
        observer: &'a ZkClient,
        planned_heal_ms: u64,
        pauses_on: bool,
    ) -> BoxFuture<'a, ()>;
    /// The work queue's directories, for a queue's run.
    fn queue(&self) -> Option<zklock_recipe::work_queue::QueuePaths> {
        None
    }
}

/// A lock recipe's work: every client acquires and releases, until the run's end.
struct LockWork<R>(R);

impl<R: RealRecipe> Work for LockWork<R> {
    fn worker(
        self: Arc<Self>,
        shared: Arc<Shared>,
        index: usize,
        first: RecordingClient,
    ) -> BoxFuture<'static, Option<RecordingClient>> {
        Box::pin(worker(shared, self, index, first))
    }
    fn final_dirs(&self, config: &WorkloadConfig) -> Vec<(String, String)> {
        config
            .lock_paths()
            .into_iter()
            .map(|p| {
                let dir = self.0.nodes_dir(&p);
                (p, dir)
            })
            .collect()
    }
    fn leases(&self) -> Option<u32> {
        self.0.leases()
    }
    fn tokens_are_czxids(&self) -> bool {
        self.0.tokens_are_czxids()
    }
    fn start<'a>(&'a self, run: &'a RunStart) -> BoxFuture<'a, Result<(), RealError>> {
        Box::pin(self.0.start(run))
    }
    fn watch_end<'a>(
        self: Arc<Self>,
        shared: &'a Shared,
        _observer: &'a ZkClient,
        planned_heal_ms: u64,
        pauses_on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(watch_for_the_end(shared, planned_heal_ms, pauses_on))
    }
}

/// What every worker shares.
#[derive(Debug)]
struct Shared {
    config: WorkloadConfig,
    recorder: Arc<Recorder>,
    sessions: Arc<LiveSessions>,
    /// Per client: where it connects (its proxies, or the servers).
    connect: Vec<String>,
    /// Per client: its proxies, when the run has them (they see each node's life).
    links: Vec<Arc<ClientLink>>,
    /// Per client: its process's pause and crash switches.
    processes: Vec<Arc<ProcessControl>>,
    sessions_opened: AtomicU64,
    /// Set by [`watch_for_the_end`] when no new acquisition may start.
    over: AtomicBool,
    /// The heal's run time in ms, [`NOT_HEALED`] until it happens.
    healed_at_ms: Arc<AtomicU64>,
    /// The run's interrupt switch ([`WorkloadConfig::interrupt`], or one nobody sets).
    stop: Arc<AtomicBool>,
    /// How long after an aimed crash the client's new process starts
    /// ([`FaultConfig::crash_restart_ms`]).
    crash_restart_ms: u64,
    /// Run time in ms by which every aimed strike so far is over (a pause's end), and
    /// whether a window of aimed strikes is still open: a scripted run ends only after
    /// both, and judges liveness from the first.
    aims_over_at_ms: AtomicU64,
    aims_window_open: AtomicBool,
    /// Clients done with their script ([`WorkloadConfig::attempts_per_client`]).
    scripts_done: AtomicU64,
    /// Run time in ms when the workers started, every session connected: the origin of
    /// [`WorkloadConfig::start_stagger_ms`] (connecting may take longer than a stagger).
    workers_started_ms: AtomicU64,
    /// Clients inside a lock call past its liveness deadline (see [`unless_stuck`]): a
    /// scripted run ends without waiting for them.
    stuck_now: AtomicU64,
    /// Per client: it gave up a stuck call, and its session stays open until the history
    /// is read (closing it would record a close that excuses the stuck call).
    abandoned: Mutex<Vec<RecordingClient>>,
    /// The lock objects of clients done with their script, kept until the run has been
    /// read: a driver's process and session live as long as its objects, and a client
    /// done with its script stays connected, as an idle application does, so that what
    /// its attempts left behind stands while the run watches.
    retired: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
    /// [`RealRecipe::tokens_are_czxids`], for the facts a [`RunGoal`] reads.
    tokens_are_czxids: bool,
}

impl Shared {
    fn acquisitions_over(&self) -> bool {
        self.over.load(Ordering::Acquire) || self.recorder.is_full()
    }

    /// Keeps `client`, whose worker gave up a stuck call, open until the history is read.
    fn abandon(&self, client: RecordingClient) -> Option<RecordingClient> {
        self.abandoned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(client);
        None
    }

    /// The heal's run time in ms as the checker will take it (aimed strikes heal after
    /// their last), once the heal happened.
    fn heal_so_far_ms(&self) -> Option<u64> {
        let healed = self.healed_at_ms.load(Ordering::Acquire);
        (healed != NOT_HEALED).then(|| healed.max(self.aims_over_at_ms.load(Ordering::Acquire)))
    }

    /// Whether a lock call invoked at `since_us` has gone unanswered past its liveness
    /// deadline (the later of `since_us` and the heal, plus the liveness bound) by more
    /// than [`STUCK_MARGIN_MS`].
    fn past_liveness_deadline(&self, since_us: u64) -> bool {
        let Some(heal_ms) = self.heal_so_far_ms() else {
            return false;
        };
        let deadline_ms = (since_us / 1000)
            .max(heal_ms)
            .saturating_add(self.config.liveness_bound_ms())
            .saturating_add(STUCK_MARGIN_MS);
        self.recorder.now_us() / 1000 > deadline_ms
    }

    /// Where a blocking acquire starting now is cancelled: `drain_timeout_ms` past the later
    /// of now and `duration_ms`.
    fn drain_deadline(&self) -> Duration {
        Duration::from_millis(self.config.duration_ms)
            .max(self.recorder.elapsed())
            .saturating_add(Duration::from_millis(self.config.drain_timeout_ms))
    }

    /// The facts of the run so far, for [`RunGoal`]s.
    fn facts_so_far(&self, heal_ms: u64, pauses_on: bool) -> RunFacts {
        let c = &self.config;
        RunFacts {
            heal_ms,
            liveness_bound_ms: c.liveness_bound_ms(),
            pauses_on,
            lock_path: c.lock_path.clone(),
            final_lock_children: Vec::new(),
            run_end_us: self.recorder.now_us(),
            session_timeout_ms: c.session_timeout_ms,
            tokens_are_czxids: self.tokens_are_czxids,
        }
    }

    /// A new session for client `index`, whose session is gone for good, as a real process
    /// would open; `None` (after a backoff) if connecting failed, to be tried again.
    async fn renew(&self, index: usize) -> Option<RecordingClient> {
        let config = &self.config;
        self.sessions.set(index, None);
        // Before `duration_ms`, a connect gives up by then; past it, the run goes on only
        // for as long as it still needs, so a connect may take its full timeout.
        let left = Duration::from_millis(config.duration_ms)
            .saturating_sub(self.recorder.elapsed())
            .as_millis() as u64;
        let timeout_ms = match left {
            0 => config.connect_timeout_ms,
            left => config.connect_timeout_ms.min(left),
        };
        match self.connect(index, timeout_ms).await {
            Ok(fresh) => Some(fresh),
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(config.error_backoff_ms)).await;
                None
            }
        }
    }

    async fn connect(&self, index: usize, timeout_ms: u64) -> Result<RecordingClient, RealError> {
        let c = &self.config;
        let zk = ZkClient::connect(&self.connect[index], c.session_timeout_ms, timeout_ms).await?;
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
        let client = RecordingClient::new(Arc::new(zk), index as u32, Arc::clone(&self.recorder));
        self.sessions.set(index, Some(Arc::clone(client.zk())));
        Ok(client)
    }
}

/// Runs the workload with the shipped recipe on `servers` with `faults`, and hands the
/// servers back with the run: [`run_recipe`] with [`ShippedRealRecipe`].
pub async fn run_workload(
    servers: Servers,
    config: &WorkloadConfig,
    faults: &FaultConfig,
) -> Result<RealRun, RealError> {
    run_recipe(servers, config, faults, ShippedRealRecipe::default()).await
}

/// Runs the workload with `recipe` on `servers` with `faults`, and hands the servers back
/// with the run. Fails early, naming the address, if the servers cannot be reached within
/// the connect timeout. Needs a multi-threaded tokio runtime when faults kill servers
/// (restarts block a thread of their own).
pub async fn run_recipe<R: RealRecipe>(
    servers: Servers,
    config: &WorkloadConfig,
    faults: &FaultConfig,
    recipe: R,
) -> Result<RealRun, RealError> {
    run_work(servers, config, faults, Arc::new(LockWork(recipe))).await
}

/// Runs `work`'s clients on `servers` with `faults`: [`run_recipe`]'s run.
async fn run_work<W: Work>(
    servers: Servers,
    config: &WorkloadConfig,
    faults: &FaultConfig,
    work: Arc<W>,
) -> Result<RealRun, RealError> {
    config.validate()?;
    if let Some(n) = work.leases()
        && !(1..=zklock_recipe::semaphore::LEASES_MAX).contains(&n)
    {
        return Err(RealError::Config {
            reason: format!(
                "a semaphore takes 1 to {} leases, not {n}",
                zklock_recipe::semaphore::LEASES_MAX
            ),
        });
    }
    // Without faults there is nothing to heal: liveness is judged from the start.
    let no_faults;
    let faults = if faults.faults.is_empty() {
        no_faults = FaultConfig {
            heal_ms: 0,
            ..faults.clone()
        };
        &no_faults
    } else {
        faults
    };
    if faults.heal_ms > config.duration_ms {
        return Err(RealError::Config {
            reason: format!(
                "the heal ({} ms) must come before the end of the run ({} ms)",
                faults.heal_ms, config.duration_ms
            ),
        });
    }
    if faults.faults.contains(RealFault::KillLeader) && !servers.can_kill_leader() {
        return Err(RealError::Config {
            reason: "kill-leader needs a harness-started ensemble of at least 3 servers".into(),
        });
    }
    let server_connect = servers.connect_string();
    // A direct session first: an unreachable server fails here, naming its address.
    let observer = ZkClient::connect(
        &server_connect,
        config.session_timeout_ms,
        config.connect_timeout_ms,
    )
    .await?;
    let clients = config.clients as usize;
    let mut links = Vec::new();
    if faults.faults.needs_proxies() || !faults.aimed.is_empty() || faults.record_requests {
        let addrs = servers.addrs().await?;
        for _ in 0..clients {
            links.push(Arc::new(ClientLink::start(&addrs).await?));
        }
    }
    let connect = if links.is_empty() {
        vec![server_connect.clone(); clients]
    } else {
        links.iter().map(|l| l.connect_string()).collect()
    };
    let recorder = Arc::new(Recorder::new(config.max_history_events));
    let processes = (0..clients)
        .map(|i| {
            let link = links.get(i).cloned();
            Arc::new(ProcessControl::new(i as u32, link, Arc::clone(&recorder)))
        })
        .collect();
    let shared = Arc::new(Shared {
        config: config.clone(),
        recorder: Arc::clone(&recorder),
        sessions: Arc::new(LiveSessions::new(clients)),
        connect,
        links: links.clone(),
        processes,
        sessions_opened: AtomicU64::new(0),
        over: AtomicBool::new(false),
        stop: config.interrupt.clone().unwrap_or_default(),
        scripts_done: AtomicU64::new(0),
        workers_started_ms: AtomicU64::new(0),
        stuck_now: AtomicU64::new(0),
        abandoned: Mutex::new(Vec::new()),
        retired: Mutex::new(Vec::new()),
        tokens_are_czxids: work.tokens_are_czxids(),
        aims_over_at_ms: AtomicU64::new(0),
        aims_window_open: AtomicBool::new(false),
        crash_restart_ms: faults.crash_restart_ms,
        healed_at_ms: Arc::new(AtomicU64::new(if faults.faults.is_empty() {
            0
        } else {
            NOT_HEALED
        })),
    });
    work.start(&RunStart {
        connect: shared.connect.clone(),
        processes: shared.processes.clone(),
        roles: (0..clients)
            .map(|i| role_in(i, config, work.leases()))
            .collect(),
        lock_path: config.lock_path.clone(),
        session_timeout_ms: config.session_timeout_ms,
        recorder: Arc::clone(&recorder),
    })
    .await?;
    let mut firsts = Vec::with_capacity(clients);
    for i in 0..clients {
        firsts.push(shared.connect(i, config.connect_timeout_ms).await?);
    }
    let servers = Arc::new(Mutex::new(servers));
    let targets = FaultTargets {
        recorder: Arc::clone(&recorder),
        links,
        sessions: Arc::clone(&shared.sessions),
        processes: shared.processes.clone(),
        servers: Arc::clone(&servers),
        server_connect_string: server_connect,
        healed_at_ms: Arc::clone(&shared.healed_at_ms),
        stop: Arc::clone(&shared.stop),
        facts_so_far: {
            let shared = Arc::clone(&shared);
            let pauses_on = faults.pauses_on();
            crate::faults::FactsSoFar(Arc::new(move |heal_ms| {
                shared.facts_so_far(heal_ms, pauses_on)
            }))
        },
    };
    for (index, fault) in &faults.aimed {
        match targets.links.get(*index as usize) {
            Some(link) => link.aim(fault),
            None => {
                return Err(RealError::Config {
                    reason: format!("an aimed fault names client {index}, past the run's clients"),
                });
            }
        }
    }
    if !faults.aimed.is_empty() {
        tokio::spawn(record_aimed_strikes(
            targets.links.clone(),
            Arc::clone(&shared),
            targets.server_connect_string.clone(),
        ));
    }
    let started_ms = u64::try_from(recorder.elapsed().as_millis()).unwrap_or(u64::MAX);
    shared
        .workers_started_ms
        .store(started_ms, Ordering::Release);
    let workers: Vec<_> = firsts
        .into_iter()
        .enumerate()
        .map(|(i, first)| tokio::spawn(process(Arc::clone(&shared), Arc::clone(&work), i, first)))
        .collect();
    let join_workers = async {
        let mut finals = Vec::with_capacity(workers.len());
        for w in workers {
            // A worker that panicked, or a process that crashed and did not restart, leaves
            // no client to close; its events stay recorded.
            finals.push(w.await.ok().flatten());
        }
        finals
    };
    let pauses_on = faults.pauses_on();
    let (counts, finals, ()) = tokio::join!(
        crate::faults::inject(faults, &targets),
        join_workers,
        Arc::clone(&work).watch_end(&shared, &observer, faults.heal_ms, pauses_on)
    );
    let requests: Vec<_> = targets
        .links
        .iter()
        .map(|link| link.requests_seen())
        .collect();
    let aimed_strikes = targets
        .links
        .iter()
        .map(|link| link.caught_request_count() as u64)
        .sum();
    let nodes = (!targets.links.is_empty())
        .then(|| node_lives(&targets.links, &recorder, config.leak_bound_in_force_ms()));
    drop(targets);
    let run_end_us = recorder.now_us();
    let settle = Duration::from_millis(config.session_timeout_ms.saturating_add(1_000));
    // The same settle for every lock: the sessions expire while the first is read.
    let mut final_children_by_lock = Vec::new();
    for (path, nodes_dir) in work.final_dirs(config) {
        let children = settled_children(&observer, &nodes_dir, settle).await;
        final_children_by_lock.push((path, children));
    }
    let final_lock_children = final_children_by_lock[0].1.clone();
    let read: Vec<String> = work
        .final_dirs(config)
        .into_iter()
        .flat_map(|(path, dir)| [path, dir])
        .collect();
    let mut final_children_touched = Vec::new();
    for dir in touched_dirs(&requests, &read) {
        let left = settled_ephemerals(&observer, &dir, settle).await;
        if !left.is_empty() {
            final_children_touched.push((dir, left));
        }
    }
    for client in finals.into_iter().flatten() {
        let _ = tokio::time::timeout(settle, client.close()).await;
    }
    drop(std::mem::take(
        &mut *shared
            .retired
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    ));
    let _ = tokio::time::timeout(settle, observer.close()).await;
    let servers = match Arc::try_unwrap(servers) {
        Ok(m) => m.into_inner().unwrap_or_else(PoisonError::into_inner),
        // Unreachable (every clone was dropped above), but never worth a panic.
        Err(shared) => std::mem::replace(
            &mut *shared.lock().unwrap_or_else(PoisonError::into_inner),
            Servers::External {
                connect_string: String::new(),
            },
        ),
    };
    let leases = work.leases();
    Ok(RealRun {
        history: recorder.history(),
        final_lock_children,
        final_children_by_lock,
        final_children_touched,
        leases,
        tokens_are_czxids: shared.tokens_are_czxids,
        queue: work.queue(),
        run_end_us,
        // Aimed faults heal after their last strike (a pause, once it ended).
        heal_ms: if faults.faults.is_empty() {
            0
        } else {
            counts.healed_at_ms
        }
        .max(shared.aims_over_at_ms.load(Ordering::Acquire)),
        liveness_bound_ms: config.liveness_bound_ms(),
        session_timeout_ms: config.session_timeout_ms,
        lock_path: config.lock_path.clone(),
        faults: counts,
        pauses_on,
        sessions_opened: shared.sessions_opened.load(Ordering::Relaxed),
        interrupted: shared.stop.load(Ordering::Acquire),
        requests,
        aimed_strikes,
        nodes,
        servers,
    })
}

/// Each ephemeral node the clients' proxies saw created, with its delete (by any client)
/// and the last time the server answered its session, on `recorder`'s clock.
fn node_lives(links: &[Arc<ClientLink>], recorder: &Recorder, leak_bound_ms: u64) -> NodeLives {
    let mut answered: std::collections::HashMap<i64, Duration> = std::collections::HashMap::new();
    let mut changes = Vec::new();
    for (client, link) in links.iter().enumerate() {
        for (session, at) in link.sessions_answered() {
            let last = answered.entry(session).or_default();
            *last = (*last).max(at);
        }
        changes.extend(
            link.node_changes()
                .0
                .into_iter()
                .map(|c| (client as u32, c)),
        );
    }
    changes.sort_by_key(|(_, c)| c.at);
    let mut nodes: Vec<NodeLife> = Vec::new();
    for (client, change) in changes {
        let at_us = recorder.time_us_of(change.at);
        if change.deleted {
            // The node of that path standing then: the latest made and not yet deleted.
            if let Some(node) = nodes
                .iter_mut()
                .rev()
                .find(|n| n.path == change.path && n.deleted_us.is_none())
            {
                node.deleted_us = Some(at_us);
            }
        } else {
            let session_answered_us = answered
                .get(&change.session)
                .map_or(at_us, |&t| recorder.time_us_of(t));
            nodes.push(NodeLife {
                path: change.path,
                client,
                session: SessionId(change.session),
                created_us: at_us,
                deleted_us: None,
                session_answered_us,
            });
        }
    }
    NodeLives {
        nodes,
        leak_bound_ms,
    }
}

/// Ends the acquisitions: at `duration_ms`, or as long past a late heal as `duration_ms` is
/// past the planned `heal_ms`, once the run's goal (if any) holds; at the latest at
/// `goal_deadline_ms`, or when the history is full.
async fn watch_for_the_end(shared: &Shared, planned_heal_ms: u64, pauses_on: bool) {
    let c = &shared.config;
    let tail_ms = c.duration_ms.saturating_sub(planned_heal_ms);
    let deadline = Duration::from_millis(c.goal_deadline_ms.max(c.duration_ms));
    // When a scripted run's clients were first all done (see below).
    let mut scripts_done_at = None;
    loop {
        let now = shared.recorder.elapsed();
        if now >= deadline || shared.recorder.is_full() || shared.stop.load(Ordering::Acquire) {
            break;
        }
        let scripted = c.attempts_per_client > 0;
        if scripted
            && shared.scripts_done.load(Ordering::Acquire)
                + shared.stuck_now.load(Ordering::Acquire)
                >= u64::from(c.clients)
            && shared.healed_at_ms.load(Ordering::Acquire) != NOT_HEALED
            && !shared.aims_window_open.load(Ordering::Acquire)
            && now.as_millis() as u64 >= shared.aims_over_at_ms.load(Ordering::Acquire)
        {
            // A node a finished attempt left behind is a leak only once it has outlived
            // the leak bound, its session live: the run watches that long (and a session
            // timeout more, for the session's pings to be answered past the bound) while
            // such a node stands. A lock that leaves nothing ends here at once. The bound
            // runs again from a fault its client meets (`node_outlives_attempt`): the
            // watch, from the last aimed fault's end too.
            let last_aim = Duration::from_millis(shared.aims_over_at_ms.load(Ordering::Acquire));
            let since = (*scripts_done_at.get_or_insert(now)).max(last_aim);
            let watch = Duration::from_millis(
                c.leak_bound_in_force_ms()
                    .saturating_add(c.session_timeout_ms),
            );
            if now >= since + watch || !a_live_node_stands(shared) {
                break;
            }
        } else {
            scripts_done_at = None;
        }
        let healed_ms = shared.healed_at_ms.load(Ordering::Acquire);
        let end = Duration::from_millis(c.duration_ms.max(healed_ms.saturating_add(tail_ms)));
        if healed_ms != NOT_HEALED && now >= end {
            let reached = c.until.as_ref().is_none_or(|goal| {
                goal.reached(
                    &shared.recorder.history(),
                    &shared.facts_so_far(healed_ms, pauses_on),
                )
            });
            if reached {
                break;
            }
        }
        let wait = if healed_ms != NOT_HEALED && now < end {
            end - now
        } else {
            Duration::from_millis(GOAL_POLL_MS)
        };
        tokio::time::sleep(wait.min(Duration::from_millis(GOAL_POLL_MS))).await;
    }
    shared.over.store(true, Ordering::Release);
}

/// Whether an ephemeral node the proxies saw made, and saw no delete of, stands with its
/// session answered within the last session timeout (a session that expired or crashed
/// takes its nodes with it unseen). Without proxies: false.
fn a_live_node_stands(shared: &Shared) -> bool {
    let now_us = shared.recorder.now_us();
    let live_us = shared.config.session_timeout_ms.saturating_mul(1_000);
    node_lives(&shared.links, &shared.recorder, 0)
        .nodes
        .iter()
        .any(|n| n.deleted_us.is_none() && now_us.saturating_sub(n.session_answered_us) < live_us)
}

/// Records each aimed fault's strike (see [`FaultConfig::aimed`]) as a connection loss of
/// its client when the proxy reports it caught, and for
/// [`crate::proxy::AimedAction::Expire`] expires the session and records a forced expiry
/// once the server confirmed it; ends with the run.
async fn record_aimed_strikes(links: Vec<Arc<ClientLink>>, shared: Arc<Shared>, server: String) {
    // Per client, per proxy: the caught requests already recorded.
    let mut seen: Vec<Vec<usize>> = links.iter().map(|l| vec![0; l.proxies().len()]).collect();
    while !shared.acquisitions_over() {
        let open = links.iter().any(|l| l.window_open());
        shared.aims_window_open.store(open, Ordering::Release);
        for (index, link) in links.iter().enumerate() {
            for (p, proxy) in link.proxies().iter().enumerate() {
                for caught in proxy.caught_requests().into_iter().skip(seen[index][p]) {
                    seen[index][p] += 1;
                    let lasts_ms = match caught.action {
                        AimedAction::Pause { pause_ms } => pause_ms,
                        AimedAction::GiveUp => crate::plan::GIVE_UP_HOLD_MS,
                        _ => 0,
                    };
                    let over = shared.recorder.elapsed().as_millis() as u64 + lasts_ms;
                    shared.aims_over_at_ms.fetch_max(over, Ordering::AcqRel);
                    match caught.action {
                        AimedAction::Pause { pause_ms } => {
                            record_fault(
                                &shared,
                                index,
                                FaultKind::Pause {
                                    duration_ms: pause_ms,
                                },
                            );
                            shared.processes[index].pause_for(Duration::from_millis(pause_ms));
                            continue;
                        }
                        AimedAction::Crash => {
                            // The process records its crash; nothing of it after.
                            let restart = Duration::from_millis(shared.crash_restart_ms);
                            let crashed = shared
                                .sessions
                                .get(index)
                                .is_some_and(|c| shared.processes[index].crash(&c, restart));
                            // A client done with its script (a library's cleanup after
                            // it) has no session of the run's to crash: the proxy's drop
                            // and cut is all that struck, and the history says so.
                            if !crashed {
                                record_fault(&shared, index, FaultKind::ConnectionLoss);
                            }
                            continue;
                        }
                        AimedAction::GiveUp => {
                            // No fault of the server's: the history shows the attempt
                            // ending "given up" while its request is still held.
                            shared.processes[index].give_up();
                            continue;
                        }
                        _ => record_fault(&shared, index, FaultKind::ConnectionLoss),
                    }
                    if !crate::aimed::expires(caught.action) {
                        continue;
                    }
                    let (link, server) = (Arc::clone(link), server.clone());
                    let victim = shared.sessions.get(index);
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let closed = || record_fault(&shared, index, FaultKind::ForcedExpiry);
                        let expired = crate::aimed::expire_caught(
                            link,
                            caught.session,
                            victim,
                            server,
                            closed,
                        );
                        if let Err(e) = expired.await {
                            eprintln!("zklock: client {index}'s aimed expiry failed: {e}");
                        }
                    });
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(AIMED_POLL_MS)).await;
    }
}

/// Records `fault` on client `index`'s current session.
/// Records `fault` on client `index`'s current session, or, for a client done with its
/// script, on its last one.
fn record_fault(shared: &Shared, index: usize, fault: FaultKind) {
    let session = shared
        .sessions
        .last_session_id(index)
        .unwrap_or(zklock_recipe::SessionId(0));
    shared
        .recorder
        .record(index as u32, session, EventKind::Fault { fault });
}

/// How often aimed faults' strikes are looked for.
const AIMED_POLL_MS: u64 = 2;

/// How often [`watch_for_the_end`] looks again.
const GOAL_POLL_MS: u64 = 100;

/// The lock directory's children, read until none is left or `settle` has passed: nodes
/// of sessions that are ending vanish meanwhile, a live session's orphan stays. Connection
/// loss (a leader election) is retried.
pub async fn settled_children<C: Coordination>(
    observer: &C,
    lock_path: &str,
    settle: Duration,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + settle;
    loop {
        let read = observer.get_children(lock_path).await;
        let children = match read {
            Ok(children) => children.to_vec(),
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) if e.is_connection_loss() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
                continue;
            }
            // The observer's session is gone: report what cannot be read as nothing.
            Err(_) => Vec::new(),
        };
        if children.is_empty() || tokio::time::Instant::now() >= deadline {
            let mut children = children;
            children.sort();
            return children;
        }
        tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
    }
}

/// Every directory the clients created a node in (the parent of each create their
/// proxies saw), but those of `read`, their ancestors and the root, in order.
fn touched_dirs(requests: &[(Vec<crate::plan::SeenRequest>, u64)], read: &[String]) -> Vec<String> {
    let creates = crate::plan::op::by_name("create").unwrap_or(&[]);
    let dirs: std::collections::BTreeSet<String> = requests
        .iter()
        .flat_map(|(seen, _)| seen)
        .filter(|r| creates.contains(&r.op))
        .filter_map(|r| r.path.rfind('/').map(|slash| r.path[..slash].to_owned()))
        .filter(|dir| !dir.is_empty() && !read.contains(dir))
        // The lock directories' ancestors hold the run's own directories (and, on
        // someone else's servers, other runs'), not the library's nodes.
        .filter(|dir| !read.iter().any(|r| r.starts_with(&format!("{dir}/"))))
        .collect();
    dirs.into_iter().collect()
}

/// The ephemeral children of `dir`, read until none is left or `settle` has passed (as
/// [`settled_children`]); persistent ones (a library's directories) are not counted.
async fn settled_ephemerals(observer: &ZkClient, dir: &str, settle: Duration) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + settle;
    loop {
        let mut left = Vec::new();
        for name in settled_children(observer, dir, Duration::ZERO).await {
            let stat = observer.exists(&format!("{dir}/{name}")).await;
            if let Ok(Some(stat)) = stat
                && stat.ephemeral_owner != 0
            {
                left.push(name);
            }
        }
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(SETTLE_POLL_MS)).await;
    }
}

/// How often the final children are re-read while sessions expire.
const SETTLE_POLL_MS: u64 = 200;

/// The longest delay before a dropped acquire is dropped, as the simulation caps it.
pub const MAX_DROP_AFTER_MS: u64 = 65_535;

/// Client `index`'s role, as the simulation assigns them: the first `readers` read, the
/// rest write; with no readers, everyone takes the exclusive lock.
pub fn role_of(index: usize, config: &WorkloadConfig) -> LockRole {
    if (index as u32) < config.readers {
        LockRole::Read
    } else if config.readers > 0 {
        LockRole::Write
    } else {
        LockRole::Exclusive
    }
}

/// Client `index`'s role with a recipe of `leases` ([`RealRecipe::leases`]): a semaphore's
/// holders share the resource, as readers do; a lock's, [`role_of`].
pub fn role_in(index: usize, config: &WorkloadConfig, leases: Option<u32>) -> LockRole {
    if leases.is_some() {
        LockRole::Read
    } else {
        role_of(index, config)
    }
}

/// The acquire mode of client `index`'s `k`th attempt: the simulation's mix
/// ([`AcquireMode::of_attempt`]), with the delay of a dropped acquire spread over its
/// range by `index` and `k` (no chooser here).
pub fn mode_of(index: usize, k: u64, config: &WorkloadConfig) -> AcquireMode {
    let k = k.saturating_add(u64::from(config.mix_offset));
    let every = u64::from(config.drop_every.max(1));
    let spread = (k / every).wrapping_mul(7).wrapping_add(index as u64 * 3);
    let after_ms = spread % config.drop_after_ms_max.saturating_add(1);
    AcquireMode::of_attempt(k, config.drop_every, config.acquire_timeout_ms, after_ms)
}

/// One client's process: its worker, which a pause freezes, and after a crash, a new
/// process that starts with a new session a while later, as a supervisor would restart
/// it (none starts once acquisitions are over). Returns the last client to close, if any.
async fn process<W: Work>(
    shared: Arc<Shared>,
    work: Arc<W>,
    index: usize,
    first: RecordingClient,
) -> Option<RecordingClient> {
    let control = Arc::clone(&shared.processes[index]);
    loop {
        let task = Arc::clone(&work).worker(Arc::clone(&shared), index, first.clone());
        tokio::select! {
            last = Pausable::new(task, Arc::clone(&control)) => {
                shared.scripts_done.fetch_add(1, Ordering::AcqRel);
                return last;
            }
            // The task is dropped here, wherever it was.
            () = control.crashed() => {}
        }
        shared.sessions.set(index, None);
        tokio::time::sleep(control.restart_after()).await;
        if shared.acquisitions_over() {
            shared.scripts_done.fetch_add(1, Ordering::AcqRel);
            return None;
        }
        // The crashed session is over (its client reports Expired): the worker starts by
        // opening a new one.
        debug_assert!(first.session_state().is_terminal());
    }
}

/// How long the hold of a client's `k`th attempt (counted from 1) lasts:
/// [`WorkloadConfig::long_hold_ms`] every [`WorkloadConfig::long_hold_every`]-th attempt,
/// [`WorkloadConfig::hold_ms`] otherwise.
fn hold_of(k: u64, config: &WorkloadConfig) -> Duration {
    let every = u64::from(config.long_hold_every);
    let ms = match every > 0 && k.is_multiple_of(every) {
        true => config.long_hold_ms,
        false => config.hold_ms,
    };
    Duration::from_millis(ms)
}

/// How long past its liveness deadline a lock call may stay unanswered before its client
/// gives it up: the run then outlives the deadline, so the checker sees it stuck.
pub const STUCK_MARGIN_MS: u64 = 1_000;

/// How often a lock call in progress is looked at for [`unless_stuck`].
const STUCK_POLL_MS: u64 = 100;

/// `call`'s output, or `None` once the call is stuck: unanswered past its liveness deadline
/// ([`Shared::past_liveness_deadline`]) when no acquisition may start any more. A stuck
/// call lets a scripted run end without it; once given up, it stays unanswered in the
/// history, where `liveness_after_heal` judges it (a stuck lock, or a stuck release), and
/// its client does nothing more. Only a hang reaches it: a call answered late, but
/// answered, is recorded as it ended.
async fn unless_stuck<T>(
    shared: &Shared,
    since_us: u64,
    call: impl std::future::Future<Output = T>,
) -> Option<T> {
    /// Counts its client in [`Shared::stuck_now`] while set; uncounts it when dropped,
    /// also when a crash drops the call.
    struct Counted<'a>(&'a AtomicU64, bool);
    impl Counted<'_> {
        fn set(&mut self, on: bool) {
            if on != self.1 {
                match on {
                    true => self.0.fetch_add(1, Ordering::AcqRel),
                    false => self.0.fetch_sub(1, Ordering::AcqRel),
                };
                self.1 = on;
            }
        }
    }
    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.set(false);
        }
    }
    tokio::pin!(call);
    let mut counted = Counted(&shared.stuck_now, false);
    loop {
        tokio::select! {
            biased;
            out = &mut call => return Some(out),
            () = tokio::time::sleep(Duration::from_millis(STUCK_POLL_MS)) => {}
        }
        // Judged again each time: a later strike moves the heal, and the deadline with it.
        let past = shared.past_liveness_deadline(since_us);
        counted.set(past);
        if past && shared.acquisitions_over() {
            return None;
        }
    }
}

/// One client's loop. Returns its last client, to be closed once the run is read; `None`
/// when it gave up a stuck call (the client is kept open in [`Shared::abandoned`]).
async fn worker<R: RealRecipe>(
    shared: Arc<Shared>,
    work: Arc<LockWork<R>>,
    index: usize,
    first: RecordingClient,
) -> Option<RecordingClient> {
    let recipe = &work.0;
    let config = &shared.config;
    let role = role_in(index, config, recipe.leases());
    let paths = config.lock_paths();
    let locks_of = |client: &RecordingClient| -> Vec<R::Lock> {
        paths
            .iter()
            .map(|p| recipe.lock(client.clone(), role, p))
            .collect()
    };
    let mut client = first;
    let mut locks = locks_of(&client);
    // From the workers' start: a process restarted after a crash does not wait again.
    let start = Duration::from_millis(
        shared
            .workers_started_ms
            .load(Ordering::Acquire)
            .saturating_add(config.start_stagger_ms.saturating_mul(index as u64)),
    );
    let now = shared.recorder.elapsed();
    if start > now {
        tokio::time::sleep(start - now).await;
    }
    let mut k = 0u64;
    let script = u64::from(config.attempts_per_client);
    while !shared.acquisitions_over() && (script == 0 || k < script) {
        if client.session_state().is_terminal() {
            if let Some(fresh) = shared.renew(index).await {
                client = fresh;
                locks = locks_of(&client);
            }
            continue;
        }
        let mode = mode_of(index, k, config);
        let which = lock_of(config.lock_seed, index, k, config.locks);
        k += 1;
        let fresh_every = u64::from(config.fresh_lock_every);
        if fresh_every > 0 && k.is_multiple_of(fresh_every) {
            let fresh = recipe.fresh_lock(&locks[which], client.clone(), role, &paths[which]);
            locks[which] = fresh;
        }
        let lock = &locks[which];
        client.record(EventKind::AcquireInvoked {
            role,
            mode,
            // Named only in a run of several locks, as the simulation names it.
            lock: (config.locks > 1).then(|| paths[which].clone()),
        });
        let invoked_us = shared.recorder.now_us();
        // `None`: the call is stuck (see `unless_stuck`).
        let attempt = async {
            match mode {
                AcquireMode::Blocking => {
                    // The lock's own blocking acquire (its timed one may be another path),
                    // its future dropped at the drain, as `tokio::time::timeout` drops it,
                    // so that a stuck lock ends the run.
                    let drain = shared
                        .drain_deadline()
                        .saturating_sub(shared.recorder.elapsed());
                    Some(
                        tokio::time::timeout(drain, lock.acquire())
                            .await
                            .map_or(Ok(None), |got| got.map(Some)),
                    )
                }
                AcquireMode::Try => unless_stuck(&shared, invoked_us, lock.try_acquire()).await,
                AcquireMode::Timeout { timeout_ms } => {
                    let call = lock.acquire_timeout(Duration::from_millis(timeout_ms));
                    unless_stuck(&shared, invoked_us, call).await
                }
                AcquireMode::Dropped { after_ms } => Some(tokio::select! {
                    got = lock.acquire() => got.map(Some),
                    // The acquire's future is dropped here, wherever it was.
                    () = tokio::time::sleep(Duration::from_millis(after_ms)) => Ok(None),
                }),
            }
        };
        // An aimed give-up (see `record_aimed_strikes`) drops the attempt wherever it is.
        let (got, given_up) = tokio::select! {
            biased;
            got = attempt => (got, false),
            () = shared.processes[index].given_up() => (Some(Ok(None)), true),
        };
        let Some(got) = got else {
            return shared.abandon(client);
        };
        let guard = match got {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                let reason = match mode {
                    _ if given_up => "given up",
                    AcquireMode::Try => "held by another",
                    AcquireMode::Dropped { .. } => "dropped",
                    _ => "timed out",
                };
                client.record(EventKind::AcquireFailed {
                    reason: reason.into(),
                });
                if config.idle_after_give_up_ms > 0 {
                    let idle = Duration::from_millis(config.idle_after_give_up_ms);
                    let from = shared.recorder.elapsed();
                    // What a cancelled acquire took after all is given back first, as the
                    // next acquire would: idle, the client would keep a hold the workload
                    // never believed in, and its node would read as left behind. Bounded
                    // by the idle: a library stuck on the cancel is the next acquire's.
                    let _ = tokio::time::timeout(idle, recipe.retire(lock)).await;
                    let spent = shared.recorder.elapsed().saturating_sub(from);
                    client.sleep(idle.saturating_sub(spent)).await;
                }
                continue;
            }
            Err(reason) => {
                client.record(EventKind::AcquireFailed { reason });
                tokio::time::sleep(Duration::from_millis(config.error_backoff_ms)).await;
                continue;
            }
        };
        let token = lock.token(&guard);
        client.record(EventKind::Acquired {
            token,
            node: lock.node(&guard),
        });
        // The critical section: read, work, write value + 1 with the fencing token, unless
        // the lost signal fires first.
        let session = client.session_id();
        let read = shared
            .recorder
            .read_resource_of(which, index as u32, session, token);
        if shared.processes[index].strike_armed(client.zk()) {
            // Crashed: the process is dropped here, at its next await.
            std::future::pending::<()>().await;
        }
        let lost = tokio::select! {
            // The work first, as the simulation's runner: a process resuming from a pause
            // finishes the step it was on before it reads its mail.
            biased;
            () = client.sleep(hold_of(k, config)) => None,
            reason = lock.lost(&guard) => Some(reason),
        };
        match lost {
            // Readers only read: their holds are shared.
            None if role == LockRole::Read => {}
            None => {
                shared
                    .recorder
                    .write_resource_of(which, index as u32, session, token, read);
            }
            Some(reason) => client.record(EventKind::Lost { reason }),
        }
        client.record(EventKind::ReleaseInvoked);
        let invoked_us = shared.recorder.now_us();
        match unless_stuck(&shared, invoked_us, lock.release(guard)).await {
            Some(Ok(())) => client.record(EventKind::Released),
            Some(Err(reason)) => client.record(EventKind::ReleaseFailed { reason }),
            None => return shared.abandon(client),
        }
    }
    client.record(EventKind::Done);
    shared.sessions.set(index, None);
    // Bounded: a library that never answers must not keep the run from ending.
    let bound = Duration::from_millis(config.drain_timeout_ms);
    for lock in &locks {
        let _ = tokio::time::timeout(bound, recipe.retire(lock)).await;
    }
    shared
        .retired
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Box::new(locks));
    Some(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_offset_shifts_each_clients_attempts_through_the_mix() {
        let plain = WorkloadConfig::default();
        let modes = |config: &WorkloadConfig| -> Vec<AcquireMode> {
            (0..4).map(|k| mode_of(0, k, config)).collect()
        };
        let timed = AcquireMode::Timeout {
            timeout_ms: plain.acquire_timeout_ms,
        };
        let m = modes(&plain);
        assert_eq!(m[..3], [AcquireMode::Blocking, AcquireMode::Try, timed]);
        assert!(matches!(m[3], AcquireMode::Dropped { .. }), "{m:?}");
        // At 2, as `zklock real --mix-offset 2`: timed first, then the drop.
        let shifted = WorkloadConfig {
            mix_offset: 2,
            ..WorkloadConfig::default()
        };
        let m = modes(&shifted);
        assert_eq!(m[0], timed);
        assert!(matches!(m[1], AcquireMode::Dropped { .. }), "{m:?}");
        assert_eq!(m[2..], [AcquireMode::Try, timed]);
    }
}
