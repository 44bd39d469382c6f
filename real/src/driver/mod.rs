//! Locks in other processes and libraries (Apache Curator in a JVM, Kazoo in Python, ...),
//! driven through zklock's lock-under-test protocol and judged by the same checker as the
//! shipped lock. This module is the only code that knows drivers exist.
//!
//! A driver is a small program in its library's own language (`drivers/<library>/` in the
//! repository, embedded in zklock and written to a cache directory, or compiled there with
//! `javac` on first use; see [`locate`]). zklock starts one per client session, connected
//! through the client's fault proxies, and speaks the protocol of [`protocol`]
//! (docs/drivers.md): it sends acquire (blocking, try, timed), release and cancel, and the
//! driver reports hello, acquired (with the lock node's czxid as its token), released,
//! lost, its session's changes and errors. zklock records each on its own clock, as it
//! records its own lock; the workload and the checker cannot tell the difference.
//!
//! Faults act on the driver's connections (the proxies: cuts, black holes, lost create
//! replies), on its session (a forced expiry expires it with the client's recording
//! session) and on its process: a pause stops it (SIGSTOP, then SIGCONT), a crash kills it
//! (SIGKILL). A client that opens a new session (after an expiry, a crash, a local expiry
//! of its recording session) goes on with a new driver process; processes are started one
//! ahead, so a JVM's start does not count against a timed acquire.
//!
//! `zookeeper-client`'s `Client::lock` speaks the same protocol in process (a task behind
//! an in-memory pipe).

mod conn;
pub mod locate;
pub mod mixed;
pub mod pool;
pub mod protocol;
mod zkclient;

use crate::error::RealError;
use crate::recording::RecordingClient;
use crate::workload::{RealRecipe, RunStart};
use conn::{Conn, Outcome, Sink};
use locate::Launcher;
use pool::DriverPool;
use protocol::{LockObject, Mode, Request};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;
use zklock_recipe::history::LockRole;
use zklock_recipe::{Coordination, LockUnderTest};

/// A lock zklock drives through the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DriverKind {
    /// Kazoo's `Lock`.
    KazooLock,
    /// Kazoo's `ReadLock` (readers) and `WriteLock` (writers; everyone without readers).
    KazooRw,
    /// Kazoo's `Semaphore` with one lease.
    KazooSemaphore,
    /// Curator's `InterProcessMutex`.
    CuratorMutex,
    /// Curator's `InterProcessReadWriteLock`: its read lock for readers, its write lock
    /// for writers (and for everyone without readers).
    CuratorRw,
    /// Curator's `InterProcessSemaphoreMutex`.
    CuratorSemaphoreMutex,
    /// zookeeper-client's `Client::lock` (in process).
    ZkclientLock,
    /// ZooKeeper's own contrib lock, `org.apache.zookeeper.recipes.lock.WriteLock`
    /// (zookeeper-recipes-lock).
    ZookeeperWriteLock,
    /// Kazoo's `Election`, each hold a term of leadership.
    KazooElection,
    /// Curator's `LeaderLatch`, each hold a term of leadership.
    CuratorLeaderLatch,
    /// Curator's `LeaderSelector`, each hold a term of leadership (one `takeLeadership`).
    CuratorLeaderSelector,
    /// ZooKeeper's own contrib election,
    /// `org.apache.zookeeper.recipes.leader.LeaderElectionSupport`
    /// (zookeeper-recipes-election), each hold a term of leadership.
    ZookeeperElection,
}

impl DriverKind {
    pub const ALL: [DriverKind; 12] = [
        DriverKind::CuratorMutex,
        DriverKind::CuratorRw,
        DriverKind::CuratorSemaphoreMutex,
        DriverKind::KazooLock,
        DriverKind::KazooRw,
        DriverKind::KazooSemaphore,
        DriverKind::ZkclientLock,
        DriverKind::ZookeeperWriteLock,
        DriverKind::KazooElection,
        DriverKind::CuratorLeaderLatch,
        DriverKind::CuratorLeaderSelector,
        DriverKind::ZookeeperElection,
    ];

    /// The name `zklock real --lock` takes.
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::KazooLock => "kazoo-lock",
            DriverKind::KazooRw => "kazoo-rw",
            DriverKind::KazooSemaphore => "kazoo-semaphore",
            DriverKind::CuratorMutex => "curator-mutex",
            DriverKind::CuratorRw => "curator-rw",
            DriverKind::CuratorSemaphoreMutex => "curator-semaphore-mutex",
            DriverKind::ZkclientLock => "zkclient-lock",
            DriverKind::ZookeeperWriteLock => "zookeeper-writelock",
            DriverKind::KazooElection => "kazoo-election",
            DriverKind::CuratorLeaderLatch => "curator-leader-latch",
            DriverKind::CuratorLeaderSelector => "curator-leader-selector",
            DriverKind::ZookeeperElection => "zookeeper-election",
        }
    }

    /// Whether its driver runs in zklock's own process (zookeeper-client's, a Rust
    /// crate): no process to start, keep or warm up.
    pub fn runs_in_process(self) -> bool {
        matches!(self, DriverKind::ZkclientLock)
    }

    /// The kind named `name`, or the list of names.
    pub fn parse(name: &str) -> Result<DriverKind, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown lock {name:?}; the drivers are {}",
                    names.join(", ")
                )
            })
    }

    /// Whether it is a leader election, driven as a lock: an acquire joins the election
    /// and waits to lead, a hold is a term, a release leaves the election.
    pub fn is_election(self) -> bool {
        matches!(
            self,
            DriverKind::KazooElection
                | DriverKind::CuratorLeaderLatch
                | DriverKind::CuratorLeaderSelector
                | DriverKind::ZookeeperElection
        )
    }

    /// Whether it has a read side.
    pub fn has_readers(self) -> bool {
        matches!(self, DriverKind::KazooRw | DriverKind::CuratorRw)
    }

    /// The KIND argument of the driver program for a client in `role`; `mixed`: in a
    /// mixed run (see [`mixed`]), where Kazoo's Lock also counts `-lock-` nodes.
    fn program_kind(self, role: LockRole, mixed: bool) -> &'static str {
        match (self, role) {
            (DriverKind::KazooLock, _) if mixed => "lock-interop",
            (DriverKind::KazooLock, _) => "lock",
            (DriverKind::KazooSemaphore, _) => "semaphore",
            (DriverKind::CuratorMutex, _) => "mutex",
            (DriverKind::CuratorSemaphoreMutex, _) => "semaphore-mutex",
            (DriverKind::KazooRw | DriverKind::CuratorRw, LockRole::Read) => "read",
            (DriverKind::KazooRw | DriverKind::CuratorRw, _) => "write",
            (DriverKind::ZkclientLock, _) => "lock",
            (DriverKind::ZookeeperWriteLock, _) => "writelock",
            (DriverKind::KazooElection, _) => "election",
            (DriverKind::CuratorLeaderLatch, _) => "leader-latch",
            (DriverKind::CuratorLeaderSelector, _) => "leader-selector",
            (DriverKind::ZookeeperElection, _) => "election",
        }
    }
}

impl std::fmt::Display for DriverKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How long a driver may take to start and say hello: a JVM on a loaded machine is slow,
/// so only a hang reaches it.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(120);

/// What every lock of a run shares.
#[derive(Debug)]
struct RunInfo {
    start: RunStart,
}

/// A [`RealRecipe`] whose locks are drivers of `kind`: `zklock real --lock NAME`.
#[derive(Debug)]
pub struct DriverRecipe {
    kind: DriverKind,
    launcher: Launcher,
    run: OnceLock<RunInfo>,
    /// Per client: the next driver process, started ahead.
    spares: Mutex<Vec<Option<Arc<Conn>>>>,
    /// Whether a client's next process starts ahead, as soon as its current one is
    /// taken ([`DriverRecipe::with_spares`]).
    spare_ahead: bool,
    fatal: Arc<Mutex<Option<String>>>,
    /// What the drivers said in their hello (library, version, lock).
    hello: Arc<Mutex<Option<String>>>,
    /// In a mixed run: which slots of the round-robin (client i is slot i mod len) this
    /// driver serves; empty: every client.
    slots: Vec<bool>,
    /// Where processes come from and go back to between runs, if anywhere.
    pool: Option<Arc<DriverPool>>,
}

/// A handle on a run's driver failure, kept before the recipe is handed to the run (of
/// every driver of a mixed run).
#[derive(Clone, Debug)]
pub struct DriverStatus {
    parts: Vec<(Shared, Shared)>,
}

/// A driver's failure or hello, shared with its recipe.
type Shared = Arc<Mutex<Option<String>>>;

impl DriverStatus {
    /// The first protocol break, crash at start or hang of a driver, if any: the run's
    /// verdict does not stand then.
    pub fn failure(&self) -> Option<String> {
        self.parts
            .iter()
            .find_map(|(fatal, _)| fatal.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// The library, version and lock the drivers named in their hello ("; " between the
    /// drivers of a mixed run).
    pub fn hello(&self) -> Option<String> {
        let said: Vec<String> = self
            .parts
            .iter()
            .filter_map(|(_, hello)| hello.lock().unwrap_or_else(PoisonError::into_inner).clone())
            .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Every part of `others` too.
    pub(crate) fn with(mut self, others: DriverStatus) -> DriverStatus {
        self.parts.extend(others.parts);
        self
    }
}

impl DriverRecipe {
    /// Locates (or builds) the driver of `kind`: fails, naming what to install, when its
    /// library is missing. Blocks while `javac` compiles Curator's driver on first use.
    pub fn prepare(kind: DriverKind) -> Result<DriverRecipe, RealError> {
        Self::prepare_for(kind, Vec::new())
    }

    /// As [`prepare`](Self::prepare), serving only the clients of `slots` (see
    /// [`mixed`]).
    pub(crate) fn prepare_for(
        kind: DriverKind,
        slots: Vec<bool>,
    ) -> Result<DriverRecipe, RealError> {
        Ok(DriverRecipe {
            kind,
            launcher: Launcher::prepare(kind)?,
            run: OnceLock::new(),
            spares: Mutex::new(Vec::new()),
            spare_ahead: true,
            fatal: Arc::default(),
            hello: Arc::default(),
            slots,
            pool: None,
        })
    }

    /// Its driver processes are taken from `pool` where it keeps one, and go back to it
    /// (reset) when the run is done with them: a search's runs share one pool, and most
    /// of them start no process. Without, every session has a process of its own.
    pub fn with_pool(mut self, pool: Arc<DriverPool>) -> DriverRecipe {
        self.pool = Some(pool);
        self
    }

    /// Whether each client's next driver process starts ahead, ready for its next
    /// session (default: yes). A new session's lock then need not wait for a process
    /// to start (a JVM's second or so), which would count in its acquire's time. A run
    /// whose faults end no session (no expiry, pause or crash) needs none: without, a
    /// client's next process starts when its next session comes, if one does. A search
    /// runs most of its points so, and starts half the processes.
    pub fn with_spares(mut self, ahead: bool) -> DriverRecipe {
        self.spare_ahead = ahead;
        self
    }

    /// Whether client `index` runs this driver.
    fn serves(&self, index: usize) -> bool {
        self.slots.is_empty() || self.slots[index % self.slots.len()]
    }

    pub fn kind(&self) -> DriverKind {
        self.kind
    }

    /// The run's driver failures and hello, readable after the run.
    pub fn status(&self) -> DriverStatus {
        DriverStatus {
            parts: vec![(Arc::clone(&self.fatal), Arc::clone(&self.hello))],
        }
    }

    fn spawn(&self, index: usize) -> Result<Arc<Conn>, String> {
        let info = self
            .run
            .get()
            .ok_or("the run did not start the driver recipe")?;
        let start = &info.start;
        let role = start
            .roles
            .get(index)
            .copied()
            .unwrap_or(LockRole::Exclusive);
        self.launcher
            .spawn(
                self.kind,
                locate::SessionArgs {
                    program_kind: self.kind.program_kind(role, !self.slots.is_empty()),
                    connect: &start.connect[index],
                    lock_path: &start.lock_path,
                    session_timeout_ms: start.session_timeout_ms,
                },
                Arc::clone(&self.fatal),
                self.pool.as_ref(),
            )
            .map(Arc::new)
    }

    fn spares(&self) -> std::sync::MutexGuard<'_, Vec<Option<Arc<Conn>>>> {
        self.spares.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RealRecipe for DriverRecipe {
    type Lock = DriverLock;

    fn lock(&self, client: RecordingClient, _role: LockRole, _path: &str) -> DriverLock {
        let index = client.index() as usize;
        let taken = self.spares().get_mut(index).and_then(Option::take);
        let conn = taken.map_or_else(|| self.spawn(index), Ok);
        // The next process starts now, ready for this client's next session.
        if self.spare_ahead
            && let Ok(spare) = self.spawn(index)
            && let Some(slot) = self.spares().get_mut(index)
        {
            *slot = Some(spare);
        }
        let control = self
            .run
            .get()
            .and_then(|info| info.start.processes.get(index).cloned());
        if let Ok(conn) = &conn {
            conn.attach(Sink {
                recorder: Arc::clone(client.recorder()),
                index: client.index(),
                session: client.zk().session_id(),
                control,
            });
        }
        DriverLock {
            conn: conn.inspect_err(|e| conn::set_fatal(&self.fatal, e)),
            next_id: Arc::new(AtomicU64::new(1)),
            cancelled: Arc::default(),
            hello: Arc::clone(&self.hello),
            fresh: AtomicBool::new(false),
        }
    }

    async fn retire(&self, lock: &DriverLock) {
        lock.retire().await;
    }

    fn fresh_lock(
        &self,
        current: &DriverLock,
        _client: RecordingClient,
        _role: LockRole,
        _path: &str,
    ) -> DriverLock {
        current.fresh_object()
    }

    /// The protocol's token is the lock node's czxid.
    fn tokens_are_czxids(&self) -> bool {
        true
    }

    fn nodes_dir(&self, lock_path: &str) -> String {
        match self.kind {
            // InterProcessSemaphoreV2 keeps its leases (the holds) in `leases` and its
            // internal mutex in `locks`: the orphan check reads the leases.
            DriverKind::CuratorSemaphoreMutex => format!("{lock_path}/leases"),
            _ => lock_path.to_owned(),
        }
    }

    async fn start(&self, run: &RunStart) -> Result<(), RealError> {
        let info = RunInfo {
            start: RunStart {
                connect: run.connect.clone(),
                processes: run.processes.clone(),
                roles: run.roles.clone(),
                lock_path: run.lock_path.clone(),
                session_timeout_ms: run.session_timeout_ms,
                recorder: Arc::clone(&run.recorder),
            },
        };
        if self.run.set(info).is_err() {
            return Err(self.error("a driver recipe runs once".into()));
        }
        let mut spares = Vec::with_capacity(run.connect.len());
        for index in 0..run.connect.len() {
            let spare = match self.serves(index) {
                true => Some(self.spawn(index).map_err(|e| self.error(e))?),
                false => None,
            };
            spares.push(spare);
        }
        // Every client's first driver is ready before the clock of any acquire starts.
        for conn in spares.iter().flatten() {
            let hello = conn.hello(HELLO_TIMEOUT).await.map_err(|e| self.error(e))?;
            *self.hello.lock().unwrap_or_else(PoisonError::into_inner) = Some(hello);
        }
        *self.spares() = spares;
        Ok(())
    }
}

impl DriverRecipe {
    fn error(&self, reason: String) -> RealError {
        RealError::Driver {
            driver: self.kind.name().into(),
            reason,
        }
    }
}

/// A hold of a driver's lock: the acquire's id, its token and node.
#[derive(Debug)]
pub struct DriverHold {
    id: u64,
    token: i64,
    node: String,
}

/// One client session's lock, in a driver process. A fresh lock object of the same
/// session ([`RealRecipe::fresh_lock`]) shares the process, its request ids and its
/// cancelled acquires.
#[derive(Debug)]
pub struct DriverLock {
    conn: Result<Arc<Conn>, String>,
    next_id: Arc<AtomicU64>,
    /// Acquires dropped while under way, whose outcome is still to come.
    cancelled: Arc<Mutex<Vec<u64>>>,
    hello: Arc<Mutex<Option<String>>>,
    /// Its next acquire asks the driver for a new library lock object.
    fresh: AtomicBool,
}

/// Sends a cancel for an acquire whose future is dropped before its outcome came.
struct CancelOnDrop<'a> {
    lock: &'a DriverLock,
    conn: &'a Conn,
    id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.send(&Request::Cancel { id: self.id });
            self.lock
                .cancelled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.id);
        }
    }
}

impl DriverLock {
    fn conn(&self) -> Result<&Conn, String> {
        self.conn.as_deref().map_err(Clone::clone)
    }

    /// A new lock object of the same driver: its first acquire uses a new library lock
    /// object ([`LockObject::Fresh`]).
    fn fresh_object(&self) -> DriverLock {
        DriverLock {
            conn: self.conn.clone(),
            next_id: Arc::clone(&self.next_id),
            cancelled: Arc::clone(&self.cancelled),
            hello: Arc::clone(&self.hello),
            fresh: AtomicBool::new(true),
        }
    }

    /// [`RealRecipe::retire`]: gives back what the acquires cancelled before took after
    /// all. A failure here is the driver's, and its next request would report it.
    async fn retire(&self) {
        if let Ok(conn) = self.conn() {
            let _ = self.settle_cancelled(conn).await;
        }
    }

    /// Settles the acquires cancelled before: one that took the lock after all is
    /// released (the library held it without the workload ever believing so).
    /// Cancel-safe: an acquire leaves the list once settled, so a settle cut short (see
    /// [`RealRecipe::retire`] before an idle) is taken up by the next.
    async fn settle_cancelled(&self, conn: &Conn) -> Result<(), String> {
        let pending = || {
            self.cancelled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .first()
                .copied()
        };
        while let Some(id) = pending() {
            // Cut short in the release's answer, the next settle takes that answer
            // (Released) as the acquire's outcome, and drops it.
            let outcome = answer(conn, id).await?;
            if let Outcome::Acquired { .. } = outcome {
                conn.send(&Request::Release { id });
                match answer(conn, id).await? {
                    Outcome::Released => {}
                    Outcome::Error { message } => return Err(message),
                    other => return Err(format!("{other:?} in answer to a release")),
                }
            }
            self.cancelled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|&pending| pending != id);
        }
        Ok(())
    }

    async fn acquire_as(
        &self,
        mode: Mode,
        timeout: Duration,
    ) -> Result<Option<DriverHold>, String> {
        let conn = self.conn()?;
        let hello = conn.hello(HELLO_TIMEOUT).await?;
        *self.hello.lock().unwrap_or_else(PoisonError::into_inner) = Some(hello);
        self.settle_cancelled(conn).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut guard = CancelOnDrop {
            lock: self,
            conn,
            id,
            armed: true,
        };
        let object = match self.fresh.swap(false, Ordering::AcqRel) {
            true => LockObject::Fresh,
            false => LockObject::Same,
        };
        conn.send(&Request::Acquire {
            id,
            mode,
            timeout_ms: timeout.as_millis().min(u128::from(u64::MAX)) as u64,
            object,
        });
        let outcome = conn.outcome(id).await;
        guard.armed = false;
        match outcome? {
            Outcome::Acquired { token, node } => Ok(Some(DriverHold { id, token, node })),
            Outcome::NotAcquired { .. } => Ok(None),
            Outcome::Error { message } => Err(message),
            Outcome::Released => Err("released in answer to an acquire".into()),
        }
    }
}

/// Request `id`'s outcome. No bound here: a library that never answers is stuck, not a
/// broken driver, and the workload gives the call up past its liveness deadline so that
/// the checker judges it (`liveness_after_heal`).
async fn answer(conn: &Conn, id: u64) -> Result<Outcome, String> {
    conn.outcome(id).await
}

impl LockUnderTest for DriverLock {
    type Guard = DriverHold;

    async fn acquire(&self) -> Result<DriverHold, String> {
        match self.acquire_as(Mode::Blocking, Duration::ZERO).await? {
            Some(hold) => Ok(hold),
            None => Err("a blocking acquire ended without the lock".into()),
        }
    }

    async fn try_acquire(&self) -> Result<Option<DriverHold>, String> {
        self.acquire_as(Mode::Try, Duration::ZERO).await
    }

    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<DriverHold>, String> {
        self.acquire_as(Mode::Timed, timeout).await
    }

    fn token(&self, hold: &DriverHold) -> i64 {
        hold.token
    }

    fn node(&self, hold: &DriverHold) -> String {
        hold.node.clone()
    }

    async fn lost<'a>(&'a self, hold: &'a DriverHold) -> String {
        match self.conn() {
            Ok(conn) => conn.lost(hold.id).await,
            Err(e) => e,
        }
    }

    async fn release(&self, hold: DriverHold) -> Result<(), String> {
        let conn = self.conn()?;
        conn.send(&Request::Release { id: hold.id });
        match answer(conn, hold.id).await? {
            Outcome::Released => Ok(()),
            Outcome::Error { message } => Err(message),
            other => Err(format!("{other:?} in answer to a release")),
        }
    }
}
