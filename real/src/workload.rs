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

mod config;
mod election;
mod locks;
mod nodes;
mod outcome;
pub mod queue;
mod recipe;
mod script;
mod semaphore;
mod worker;

pub use crate::goal::RunGoal;
pub use config::*;
pub use election::{LatchLock, LatchRealRecipe, Leadership, MakeLatch};
pub use locks::{MAX_LOCKS, lock_of, lock_paths};
pub use nodes::settled_children;
use nodes::*;
pub use outcome::*;
pub use queue::{QueueWorkload, run_queue};
pub use recipe::*;
pub use script::*;
pub use semaphore::SemaphoreRealRecipe;
pub use worker::STUCK_MARGIN_MS;
use worker::*;

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
    /// See [`RealRecipe::election`].
    fn election(&self) -> bool {
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
    fn election(&self) -> bool {
        self.0.election()
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
    /// Run time in ms until which a hold under way lasts at least (see
    /// [`hold_through_kept_sessions`]): 0 until an isolation or an outage strikes.
    holds_through_ms: AtomicU64,
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
    let outage =
        |(_, a): &(u32, crate::plan::AimedFault)| matches!(a.action, AimedAction::Outage { .. });
    if faults.aimed.iter().any(outage) && !servers.can_kill_all() {
        return Err(RealError::Config {
            reason: "an aimed outage kills every server and restarts it on its data: it needs \
                     servers the harness started, not --connect's"
                .into(),
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
        holds_through_ms: AtomicU64::new(0),
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
            Arc::clone(&targets.servers),
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
        election: work.election(),
        revoke_bound_ms: (config.revokers > 0).then_some(config.revoke_bound_ms),
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
/// once the server confirmed it, for [`crate::proxy::AimedAction::Isolate`] keeps the
/// session at the server while its client is cut off, and for
/// [`crate::proxy::AimedAction::Outage`] takes every server down and back up; ends with
/// the run.
async fn record_aimed_strikes(
    links: Vec<Arc<ClientLink>>,
    shared: Arc<Shared>,
    server: String,
    servers: Arc<Mutex<Servers>>,
) {
    // Per client, per proxy: the caught requests already recorded.
    let mut seen: Vec<Vec<usize>> = links.iter().map(|l| vec![0; l.proxies().len()]).collect();
    // Per client, per proxy: the cuts of bursts already recorded.
    let mut cuts_seen: Vec<Vec<u64>> = links.iter().map(|l| vec![0; l.proxies().len()]).collect();
    while !shared.acquisitions_over() {
        let open = links.iter().any(|l| l.window_open());
        shared.aims_window_open.store(open, Ordering::Release);
        for (index, link) in links.iter().enumerate() {
            for (p, proxy) in link.proxies().iter().enumerate() {
                // Each cut of a burst is a connection loss of its own, and the burst is
                // over only after its last.
                let cuts = proxy.burst_cuts();
                for _ in cuts_seen[index][p]..cuts {
                    record_fault(&shared, index, FaultKind::ConnectionLoss);
                    let now_ms = shared.recorder.elapsed().as_millis() as u64;
                    shared.aims_over_at_ms.fetch_max(now_ms, Ordering::AcqRel);
                }
                cuts_seen[index][p] = cuts;
                for caught in proxy.caught_requests().into_iter().skip(seen[index][p]) {
                    seen[index][p] += 1;
                    let lasts_ms = caught.action.lasts_ms();
                    let over = shared.recorder.elapsed().as_millis() as u64 + lasts_ms;
                    shared.aims_over_at_ms.fetch_max(over, Ordering::AcqRel);
                    match caught.action {
                        AimedAction::Outage { down_ms } => {
                            // Every session is cut; the run waits for the service.
                            for client in 0..links.len() {
                                record_fault(&shared, client, FaultKind::ConnectionLoss);
                            }
                            let before = (shared.aims_over_at_ms)
                                .fetch_max(OUTAGE_UNDER_WAY_MS, Ordering::AcqRel);
                            (shared.holds_through_ms)
                                .fetch_max(OUTAGE_UNDER_WAY_MS, Ordering::AcqRel);
                            let (shared, servers) = (Arc::clone(&shared), Arc::clone(&servers));
                            tokio::spawn(outage(shared, servers, down_ms, before));
                            continue;
                        }
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
                        AimedAction::Isolate { isolated_ms } => {
                            hold_through_kept_sessions(&shared, over);
                            // Cut off as by a partition, while the server keeps the
                            // session: the history cannot tell the two apart, nor need to.
                            record_fault(
                                &shared,
                                index,
                                FaultKind::Partition {
                                    duration_ms: isolated_ms,
                                },
                            );
                            let isolated = crate::aimed::isolate_caught(
                                Arc::clone(link),
                                caught.session,
                                server.clone(),
                                isolated_ms,
                                shared.config.session_timeout_ms,
                            );
                            tokio::spawn(async move {
                                if let Err(e) = isolated.await {
                                    eprintln!(
                                        "zklock: client {index}'s aimed isolation failed: {e}"
                                    );
                                }
                            });
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

/// While an outage is under way, the aimed faults' end: the run waits for the service.
const OUTAGE_UNDER_WAY_MS: u64 = u64::MAX / 4;

/// An aimed outage: every server killed, down for `down_ms`, restarted on its data. Its
/// end is the aimed faults' end (`before` is theirs without it), and every client meets
/// a fault there, when the service is back: liveness is judged from then.
async fn outage(shared: Arc<Shared>, servers: Arc<Mutex<Servers>>, down_ms: u64, before: u64) {
    let on_servers = |what: fn(&mut Servers) -> Result<(), RealError>| {
        let servers = Arc::clone(&servers);
        // A poisoned lock is a panicked fault task's: the servers are still there.
        tokio::task::spawn_blocking(move || {
            what(&mut servers.lock().unwrap_or_else(PoisonError::into_inner))
        })
    };
    match on_servers(Servers::kill_all).await {
        Ok(Ok(())) => {
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            match on_servers(Servers::restart_all).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("zklock: the aimed outage's restart failed: {e}"),
                Err(e) => eprintln!("zklock: the aimed outage's restart task failed: {e}"),
            }
        }
        Ok(Err(e)) => eprintln!("zklock: the aimed outage could not kill the servers: {e}"),
        Err(e) => eprintln!("zklock: the aimed outage's kill task failed: {e}"),
    }
    for client in 0..shared.sessions.len() {
        record_fault(&shared, client, FaultKind::ConnectionLoss);
    }
    let back_ms = shared.recorder.elapsed().as_millis() as u64;
    shared
        .aims_over_at_ms
        .store(before.max(back_ms), Ordering::Release);
    // Down from "under way" to the restored sessions' end.
    shared.holds_through_ms.store(0, Ordering::Release);
    hold_through_kept_sessions(&shared, back_ms);
}

/// Holds under way, or begun before then, last until two session timeouts after
/// `kept_until_ms`, when a session the server kept for a client that gave it up (an
/// isolation's, one an outage restored) has expired and its nodes are gone, with a
/// timeout to spare: a term then spans the moment its node may vanish under it, where a
/// library that took leadership again on its old session's node meets a second leader
/// (CURATOR-696). The aimed faults are over only then: liveness is judged from there.
fn hold_through_kept_sessions(shared: &Shared, kept_until_ms: u64) {
    let timeout_ms = shared.config.session_timeout_ms;
    let through = kept_until_ms.saturating_add(timeout_ms.saturating_mul(2));
    shared.holds_through_ms.fetch_max(through, Ordering::AcqRel);
    shared.aims_over_at_ms.fetch_max(through, Ordering::AcqRel);
}

/// A hold of `hold`, lasting on while [`Shared::holds_through_ms`] says (a pause freezes
/// it as it freezes any sleep of the client's).
async fn hold_for<C: Coordination>(client: &C, shared: &Shared, hold: Duration) {
    client.sleep(hold).await;
    loop {
        let now_ms = shared.recorder.elapsed().as_millis() as u64;
        let through_ms = shared.holds_through_ms.load(Ordering::Acquire);
        if now_ms >= through_ms || shared.acquisitions_over() {
            return;
        }
        let left_ms = (through_ms - now_ms).min(HOLD_THROUGH_POLL_MS);
        client.sleep(Duration::from_millis(left_ms)).await;
    }
}

/// How often a hold lasting on looks again (an outage's end lowers its deadline).
const HOLD_THROUGH_POLL_MS: u64 = 50;

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
