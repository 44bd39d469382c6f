//! Lock throughput and handoff latency on a real server, the measurements behind the real
//! part of `zklock bench`.
//!
//! A *cell* is one lock implementation ([`Contender`]) with `clients` contending clients,
//! each on its own session, each repeating acquire → release (no hold) in a tight loop
//! through one measurement window of fixed wall duration. All clients start together at
//! the window's start; a client starts no acquisition after the window's end, finishes the
//! one under way, and stops. Every hold is stamped on one monotonic clock (the run clock of
//! [`monotonic_now`]): when the acquire returned and when the release was invoked.
//! [`summarize`] then counts the acquisitions inside the window and measures each
//! *handoff*: from a release's invocation to the next hold's acquisition, by whichever
//! client (with one client, its own next acquisition), in grant order.
//!
//! * [`recipe_cell`]: the shipped recipe, [`zklock_recipe::lock::Lock`] over [`ZkClient`],
//!   in two ways of releasing ([`RecipeRelease`]): `release_in_background` (the delete is
//!   sent at once and its reply awaited by a background task; the next acquire starts at
//!   once) and `release().await` (the next acquire starts once the delete is answered).
//!   The guard's lost signal is not awaited (the other two locks have none), so the
//!   recipe sends Curator's requests: create with the listing right behind it, the
//!   predecessor's watch when contended, the listing again, delete.
//! * [`zookeeper_client_cell`]: zookeeper-client's own `Client::lock` (Curator prefix);
//!   its release is dropping the guard, which deletes the node in the background, as that
//!   library designs it: the like-for-like peer of `release_in_background`.
//! * [`kazoo_cell`]: Kazoo's `Lock`, one `/usr/bin/python3` process per client running
//!   [`KAZOO_SCRIPT`], each with its own `KazooClient`. Its `release()` waits for the
//!   delete: the like-for-like peer of `release().await`. Python stamps with
//!   `time.monotonic()` (CLOCK_MONOTONIC, the clock of Rust's `Instant` on Linux); the
//!   stamps are put on the run clock by reading both clocks at one instant.
//! * [`raw_write_rate`]: the server's write rate with many setData requests in flight on
//!   one zookeeper-client session, the limit to compare lock rates with (an acquisition
//!   costs at least two writes: the create and the delete).
//!
//! Benchmarks are figures, not tests: nothing here judges a rate.

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use zklock_real::{RealError, ZkClient, monotonic_now};
use zklock_recipe::Coordination;
use zklock_recipe::lock::{Lock, LockOptions, RetryPolicy, ensure_path};
use zookeeper_client as zk;

mod curator;
mod floor;
mod process;
pub use curator::{CURATOR_SOURCE, curator_cell, curator_classpath};
pub use floor::{Floor, FloorResult, floor_cell};

/// The Kazoo contender, run as `python3 -c KAZOO_SCRIPT ...` (kept in
/// `bench/drivers/kazoo_bench.py`, which documents its protocol).
pub const KAZOO_SCRIPT: &str = include_str!("../drivers/kazoo_bench.py");
/// Overrides the Python that runs Kazoo, here as for Kazoo's driver (default `/usr/bin/python3`).
pub const PYTHON_ENV: &str = zklock_real::driver::locate::PYTHON_ENV;

/// A lock implementation under measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contender {
    /// zklock's shipped recipe over [`ZkClient`], released with `release_in_background`.
    RecipeBackground,
    /// zklock's shipped recipe over [`ZkClient`], released with `release().await`.
    RecipeAwaited,
    /// zookeeper-client's built-in `Client::lock` with a Curator prefix.
    ZookeeperClient,
    /// Kazoo's `kazoo.recipe.lock.Lock`.
    Kazoo,
    /// Curator's `InterProcessMutex`, in one JVM.
    Curator,
}

impl Contender {
    pub const ALL: [Contender; 5] = [
        Contender::RecipeBackground,
        Contender::RecipeAwaited,
        Contender::ZookeeperClient,
        Contender::Kazoo,
        Contender::Curator,
    ];

    /// A short stable name, for JSON keys, table columns, `--real-locks` and lock paths.
    pub fn key(self) -> &'static str {
        match self {
            Contender::RecipeBackground => "zklock",
            Contender::RecipeAwaited => "zklock-awaited",
            Contender::ZookeeperClient => "zookeeper-client",
            Contender::Kazoo => "kazoo",
            Contender::Curator => "curator",
        }
    }

    /// The contender whose [`key`](Contender::key) is `key`.
    pub fn from_key(key: &str) -> Option<Contender> {
        Contender::ALL.into_iter().find(|c| c.key() == key)
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Contender::RecipeBackground => {
                "zklock recipe (Lock over ZkClient), release_in_background"
            }
            Contender::RecipeAwaited => "zklock recipe (Lock over ZkClient), release().await",
            Contender::ZookeeperClient => "zookeeper-client Client::lock (Curator prefix)",
            Contender::Kazoo => "Kazoo Lock (python3)",
            Contender::Curator => "Curator InterProcessMutex (one JVM)",
        })
    }
}

/// How the recipe's cell releases each hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecipeRelease {
    /// `release_in_background`: the delete is sent, the next acquire starts at once.
    InBackground,
    /// `release().await`: the next acquire starts once the delete is answered.
    Awaited,
}

impl RecipeRelease {
    /// The contender this way of releasing is measured as.
    pub fn contender(self) -> Contender {
        match self {
            RecipeRelease::InBackground => Contender::RecipeBackground,
            RecipeRelease::Awaited => Contender::RecipeAwaited,
        }
    }
}

/// What went wrong in a measurement.
#[derive(Debug)]
pub struct BenchError(String);

impl BenchError {
    fn new(what: impl Into<String>) -> BenchError {
        BenchError(what.into())
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl From<RealError> for BenchError {
    fn from(e: RealError) -> Self {
        BenchError(e.to_string())
    }
}

/// One cell's settings.
#[derive(Clone, Debug)]
pub struct CellConfig {
    /// Contending clients, each on its own session.
    pub clients: u32,
    /// The measurement window.
    pub duration: Duration,
    /// The lock directory (created, with its parents, before the window).
    pub lock_path: String,
    pub session_timeout_ms: u64,
    pub connect_timeout_ms: u64,
    /// A client stops after this many holds even inside the window (a bound on memory;
    /// far above what a client reaches against a real server in a few seconds).
    pub max_acquisitions_per_client: u64,
    /// How long after the window's end the clients may take to finish and stop (and, for
    /// Kazoo, how long the processes may take to start); past it the cell fails.
    pub stop_timeout: Duration,
}

impl CellConfig {
    /// `clients` clients for `duration` on `lock_path`; 10 s sessions, 1,000,000 holds per
    /// client at most, 60 s to start and to stop.
    pub fn new(clients: u32, duration: Duration, lock_path: &str) -> CellConfig {
        CellConfig {
            clients,
            duration,
            lock_path: lock_path.to_owned(),
            session_timeout_ms: 10_000,
            connect_timeout_ms: 10_000,
            max_acquisitions_per_client: 1_000_000,
            stop_timeout: Duration::from_secs(60),
        }
    }

    fn check(&self) -> Result<(), BenchError> {
        if self.clients == 0 || self.clients > 256 {
            return Err(BenchError::new(format!(
                "a cell needs 1 to 256 clients, not {}",
                self.clients
            )));
        }
        if self.duration.is_zero() {
            return Err(BenchError::new("a cell needs a non-zero duration"));
        }
        Ok(())
    }
}

/// One hold, on the run clock ([`monotonic_now`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    pub client: u32,
    /// When the acquire returned.
    pub acquired: Duration,
    /// When the release was invoked (the hold ends here).
    pub release_invoked: Duration,
}

/// A cell's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct CellResult {
    pub contender: Contender,
    pub clients: u32,
    /// The measurement window, in seconds (summed over pooled rounds).
    pub window_s: f64,
    /// Holds acquired inside the window.
    pub acquisitions: u64,
    pub acquisitions_per_s: f64,
    /// Handoff latencies, ns, sorted: one per pair of consecutive holds both acquired
    /// inside the window.
    pub handoff_ns: Vec<u64>,
    /// Acquisitions inside the window per client (index: client).
    pub per_client: Vec<u64>,
    /// Holds acquired before the previous hold's release was invoked: mutual exclusion
    /// broken, or clocks misaligned. Always 0 for a correct lock on one clock.
    pub overlaps: u64,
    /// The client side's CPU cost, for locks whose clients run in this process; `None`
    /// for Kazoo and Curator (other processes).
    pub client_cpu: Option<ClientCpu>,
}

/// CPU time of this process (all threads) while a cell's clients ran, from the window's
/// start until the last client stopped, and the holds acquired meanwhile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientCpu {
    pub cpu_s: f64,
    pub holds: u64,
}

impl ClientCpu {
    /// CPU µs per acquisition (with its release); `None` without holds.
    pub fn per_acquisition_us(&self) -> Option<f64> {
        (self.holds > 0).then(|| self.cpu_s * 1e6 / self.holds as f64)
    }
}

/// CPU time this process has used so far, all threads together.
fn process_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Awaits the clients of a cell whose window starts at `start`, measuring this process's
/// CPU time from `start` until they all stopped.
async fn join_measured<F: Future<Output = Result<Vec<Hold>, String>>>(
    clients: Vec<F>,
    start: Duration,
    deadline: Duration,
    what: &str,
) -> Result<(Vec<Hold>, ClientCpu), BenchError> {
    sleep_until_run_time(start).await;
    let before = process_cpu();
    let holds = join_clients(clients, deadline, what).await?;
    let cpu = ClientCpu {
        cpu_s: process_cpu().saturating_sub(before).as_secs_f64(),
        holds: holds.len() as u64,
    };
    Ok((holds, cpu))
}

impl CellResult {
    /// Handoff latency percentile `p` (nearest rank), µs; `None` without handoffs.
    pub fn handoff_us(&self, p: f64) -> Option<f64> {
        percentile(&self.handoff_ns, p).map(|ns| ns as f64 / 1000.0)
    }

    pub fn handoff_p50_us(&self) -> Option<f64> {
        self.handoff_us(50.0)
    }

    pub fn handoff_p99_us(&self) -> Option<f64> {
        self.handoff_us(99.0)
    }

    /// The fewest and the most acquisitions of one client (fairness).
    pub fn per_client_range(&self) -> (u64, u64) {
        let min = self.per_client.iter().copied().min().unwrap_or(0);
        let max = self.per_client.iter().copied().max().unwrap_or(0);
        (min, max)
    }

    /// Several rounds of one cell (same lock, same clients) as one: windows, counts and
    /// latencies added up. `None` if `rounds` is empty or mixes cells.
    pub fn pool(rounds: &[CellResult]) -> Option<CellResult> {
        let first = rounds.first()?;
        if rounds
            .iter()
            .any(|r| r.contender != first.contender || r.clients != first.clients)
        {
            return None;
        }
        let mut pooled = CellResult {
            contender: first.contender,
            clients: first.clients,
            window_s: 0.0,
            acquisitions: 0,
            acquisitions_per_s: 0.0,
            handoff_ns: Vec::new(),
            per_client: vec![0; first.per_client.len()],
            overlaps: 0,
            client_cpu: first.client_cpu.map(|_| ClientCpu {
                cpu_s: 0.0,
                holds: 0,
            }),
        };
        for r in rounds {
            pooled.window_s += r.window_s;
            pooled.acquisitions += r.acquisitions;
            pooled.handoff_ns.extend_from_slice(&r.handoff_ns);
            for (sum, n) in pooled.per_client.iter_mut().zip(&r.per_client) {
                *sum += n;
            }
            pooled.overlaps += r.overlaps;
            pooled.client_cpu = pooled
                .client_cpu
                .zip(r.client_cpu)
                .map(|(sum, c)| ClientCpu {
                    cpu_s: sum.cpu_s + c.cpu_s,
                    holds: sum.holds + c.holds,
                });
        }
        pooled.handoff_ns.sort_unstable();
        pooled.acquisitions_per_s = rate(pooled.acquisitions, pooled.window_s);
        Some(pooled)
    }
}

fn rate(count: u64, secs: f64) -> f64 {
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// Nearest-rank percentile `p` (0 < p <= 100) of sorted values; `None` if empty.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The figures of `holds` (any order) over the window `[start, end)` of the run clock.
pub fn summarize(
    contender: Contender,
    clients: u32,
    holds: &[Hold],
    start: Duration,
    end: Duration,
) -> CellResult {
    let mut inside: Vec<Hold> = holds
        .iter()
        .copied()
        .filter(|h| h.acquired >= start && h.acquired < end)
        .collect();
    inside.sort_by_key(|h| (h.acquired, h.client));
    let mut per_client = vec![0u64; clients as usize];
    for h in &inside {
        if let Some(n) = per_client.get_mut(h.client as usize) {
            *n += 1;
        }
    }
    let mut overlaps = 0;
    let mut handoff_ns: Vec<u64> = inside
        .windows(2)
        .map(|pair| {
            let (before, next) = (pair[0], pair[1]);
            match next.acquired.checked_sub(before.release_invoked) {
                Some(gap) => u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX),
                None => {
                    overlaps += 1;
                    0
                }
            }
        })
        .collect();
    handoff_ns.sort_unstable();
    let window_s = end.saturating_sub(start).as_secs_f64();
    let acquisitions = inside.len() as u64;
    CellResult {
        contender,
        clients,
        window_s,
        acquisitions,
        acquisitions_per_s: rate(acquisitions, window_s),
        handoff_ns,
        per_client,
        overlaps,
        client_cpu: None,
    }
}

/// The window: starts shortly after now (so that every client, and every Kazoo process
/// reading its GO line, is ready), on the run clock.
fn window(duration: Duration) -> (Duration, Duration) {
    let start = monotonic_now() + Duration::from_millis(100);
    (start, start + duration)
}

async fn sleep_until_run_time(t: Duration) {
    tokio::time::sleep(t.saturating_sub(monotonic_now())).await;
}

/// Runs every client to its end, failing if one fails or they outlast `deadline`. The
/// clients are polled by the caller's task, so they run wherever it runs (with
/// [`reactor::block_on`](crate::reactor::block_on), on the thread of zookeeper-client's IO).
async fn join_clients<F>(
    clients: Vec<F>,
    deadline: Duration,
    what: &str,
) -> Result<Vec<Hold>, BenchError>
where
    F: Future<Output = Result<Vec<Hold>, String>>,
{
    let mut running: FuturesUnordered<F> = clients.into_iter().collect();
    let mut holds = Vec::new();
    let joined = tokio::time::timeout(deadline.saturating_sub(monotonic_now()), async {
        while let Some(done) = running.next().await {
            match done {
                Ok(mut h) => holds.append(&mut h),
                Err(e) => return Err(BenchError::new(format!("{what}: {e}"))),
            }
        }
        Ok(())
    })
    .await;
    match joined {
        Ok(r) => r.map(|()| holds),
        // Dropping the futures stops the clients still running.
        Err(_) => Err(BenchError::new(format!(
            "{what}: the clients did not stop in time"
        ))),
    }
}

/// The shipped recipe: `cfg.clients` [`ZkClient`] sessions, one [`Lock`] each, releasing
/// as `release` says.
pub async fn recipe_cell(
    addr: &str,
    cfg: &CellConfig,
    release: RecipeRelease,
) -> Result<CellResult, BenchError> {
    cfg.check()?;
    let mut clients = Vec::new();
    for _ in 0..cfg.clients {
        let client =
            ZkClient::connect(addr, cfg.session_timeout_ms, cfg.connect_timeout_ms).await?;
        clients.push(Arc::new(client));
    }
    ensure_path(&*clients[0], &RetryPolicy::default(), &cfg.lock_path)
        .await
        .map_err(|e| BenchError::new(format!("creating {}: {e}", cfg.lock_path)))?;
    let (start, end) = window(cfg.duration);
    let max = cfg.max_acquisitions_per_client;
    let mut runs = Vec::new();
    for (index, client) in (0u32..).zip(&clients) {
        let lock = Lock::new(Arc::clone(client), &cfg.lock_path, LockOptions::default())
            .map_err(|e| BenchError::new(e.to_string()))?;
        runs.push(async move {
            sleep_until_run_time(start).await;
            let mut holds = Vec::new();
            while (holds.len() as u64) < max && monotonic_now() < end {
                let guard = lock.acquire().await.map_err(|e| e.to_string())?;
                let acquired = monotonic_now();
                let release_invoked = monotonic_now();
                match release {
                    RecipeRelease::InBackground => guard.release_in_background(),
                    RecipeRelease::Awaited => guard.release().await.map_err(|e| e.to_string())?,
                }
                holds.push(Hold {
                    client: index,
                    acquired,
                    release_invoked,
                });
            }
            Ok(holds)
        });
    }
    let contender = release.contender();
    let joined = join_measured(runs, start, end + cfg.stop_timeout, contender.key()).await;
    // Background deletes still under way keep their session until they are answered.
    for client in &clients {
        let _ = client.close().await;
    }
    let (holds, cpu) = joined?;
    Ok(CellResult {
        client_cpu: Some(cpu),
        ..summarize(contender, cfg.clients, &holds, start, end)
    })
}

async fn zk_connect(addr: &str, cfg: &CellConfig) -> Result<zk::Client, BenchError> {
    let connect = zk::Client::connector()
        .with_session_timeout(Duration::from_millis(cfg.session_timeout_ms))
        .connect(addr);
    match tokio::time::timeout(Duration::from_millis(cfg.connect_timeout_ms), connect).await {
        Ok(Ok(client)) => {
            // Like for like: zklock's client sets TCP_NODELAY, so this one gets it too.
            let _ = zklock_real::set_nodelay_on_connections_to(addr);
            Ok(client)
        }
        Ok(Err(e)) => Err(BenchError::new(format!(
            "zookeeper-client cannot connect to {addr}: {e}"
        ))),
        Err(_) => Err(BenchError::new(format!(
            "zookeeper-client cannot connect to {addr} in time"
        ))),
    }
}

async fn zk_ensure_path(client: &zk::Client, path: &str) -> Result<(), BenchError> {
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let ancestors = path
        .char_indices()
        .skip(1)
        .filter(|&(_, c)| c == '/')
        .map(|(i, _)| &path[..i]);
    for node in ancestors.chain([path]) {
        match client.create(node, b"", &options).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(BenchError::new(format!("creating {node}: {e}"))),
        }
    }
    Ok(())
}

/// zookeeper-client's `Client::lock` with a Curator prefix (`<dir>/_c_<uuid>-lock-`):
/// `cfg.clients` sessions. Release is dropping the guard (a background delete).
pub async fn zookeeper_client_cell(addr: &str, cfg: &CellConfig) -> Result<CellResult, BenchError> {
    cfg.check()?;
    let mut clients = Vec::new();
    for _ in 0..cfg.clients {
        clients.push(zk_connect(addr, cfg).await?);
    }
    zk_ensure_path(&clients[0], &cfg.lock_path).await?;
    let (start, end) = window(cfg.duration);
    let max = cfg.max_acquisitions_per_client;
    let mut runs = Vec::new();
    for (index, client) in (0u32..).zip(clients) {
        let dir = cfg.lock_path.clone();
        runs.push(async move {
            sleep_until_run_time(start).await;
            let mut holds = Vec::new();
            while (holds.len() as u64) < max && monotonic_now() < end {
                let prefix =
                    zk::LockPrefix::new_curator(&dir, "lock-").map_err(|e| e.to_string())?;
                let options = zk::LockOptions::new(zk::Acls::anyone_all());
                let held = client
                    .lock(prefix, b"", options)
                    .await
                    .map_err(|e| format!("Client::lock: {e}"))?;
                let acquired = monotonic_now();
                let release_invoked = monotonic_now();
                drop(held);
                holds.push(Hold {
                    client: index,
                    acquired,
                    release_invoked,
                });
            }
            // Dropping the client closes the session once the background deletes are done.
            Ok(holds)
        });
    }
    let (holds, cpu) =
        join_measured(runs, start, end + cfg.stop_timeout, "zookeeper-client").await?;
    Ok(CellResult {
        client_cpu: Some(cpu),
        ..summarize(Contender::ZookeeperClient, cfg.clients, &holds, start, end)
    })
}

/// The Python that has Kazoo ([`PYTHON_ENV`] or `/usr/bin/python3`) and Kazoo's version,
/// or why not, naming what to install.
pub fn kazoo_python() -> Result<(PathBuf, String), String> {
    let python = zklock_real::driver::locate::python();
    let probe = Command::new(&python)
        .args([
            "-c",
            "import kazoo.recipe.lock, kazoo.version; print(kazoo.version.__version__)",
        ])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => {
            let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            Ok((python, version))
        }
        _ => Err(format!(
            "{} cannot import kazoo; install it with `apt-get install -y python3-kazoo` (or \
             set {PYTHON_ENV} to a Python that has Kazoo)",
            python.display()
        )),
    }
}

/// Kazoo's Lock: one Python process per client (each its own `KazooClient` session),
/// running [`KAZOO_SCRIPT`]. Blocks the calling thread (call it through `spawn_blocking`
/// or `block_in_place` from async code).
pub fn kazoo_cell(python: &Path, addr: &str, cfg: &CellConfig) -> Result<CellResult, BenchError> {
    cfg.check()?;
    let commands = (0..cfg.clients)
        .map(|index| {
            let mut c = Command::new(python);
            c.arg("-c").arg(KAZOO_SCRIPT).args([
                addr,
                &cfg.lock_path,
                &format!("kazoo-{index}"),
                &cfg.max_acquisitions_per_client.to_string(),
                &format!("{:.3}", cfg.session_timeout_ms as f64 / 1000.0),
            ]);
            c
        })
        .collect();
    process::run_cell(Contender::Kazoo, commands, false, cfg)
}

/// The server's write rate from one session.
#[derive(Clone, Debug, PartialEq)]
pub struct RawWrites {
    /// setData requests kept in flight.
    pub in_flight: usize,
    pub window_s: f64,
    /// Writes answered inside the window.
    pub writes: u64,
    pub writes_per_s: f64,
}

/// setData (16 bytes) on `in_flight.min(64)` nodes under `dir`, with `in_flight` requests
/// pipelined on one zookeeper-client session, for `duration`: writes answered per second.
pub async fn raw_write_rate(
    addr: &str,
    dir: &str,
    in_flight: usize,
    duration: Duration,
) -> Result<RawWrites, BenchError> {
    let in_flight = in_flight.max(1);
    let cfg = CellConfig::new(1, duration, dir);
    let client = zk_connect(addr, &cfg).await?;
    zk_ensure_path(&client, dir).await?;
    let nodes: Vec<String> = (0..in_flight.min(64))
        .map(|i| format!("{dir}/w-{i}"))
        .collect();
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for node in &nodes {
        match client.create(node, b"", &options).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(BenchError::new(format!("creating {node}: {e}"))),
        }
    }
    let data = [7u8; 16];
    // zookeeper-client sends a request when it is called, so the queue is the pipeline.
    let issue = |i: usize| Box::pin(client.set_data(&nodes[i % nodes.len()], &data, None));
    let (start, end) = window(duration);
    sleep_until_run_time(start).await;
    let mut queue = VecDeque::with_capacity(in_flight);
    let mut sent = 0;
    while sent < in_flight {
        queue.push_back(issue(sent));
        sent += 1;
    }
    let mut writes = 0u64;
    let bound = end + cfg.stop_timeout;
    while let Some(reply) = queue.pop_front() {
        match tokio::time::timeout(bound.saturating_sub(monotonic_now()), reply).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(BenchError::new(format!("raw writes: setData: {e}"))),
            Err(_) => {
                return Err(BenchError::new("raw writes: the server stopped answering"));
            }
        }
        let now = monotonic_now();
        if now < end {
            writes += 1;
            queue.push_back(issue(sent));
            sent += 1;
        }
    }
    let window_s = duration.as_secs_f64();
    Ok(RawWrites {
        in_flight,
        window_s,
        writes,
        writes_per_s: writes as f64 / window_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(client: u32, acquired_us: u64, release_us: u64) -> Hold {
        Hold {
            client,
            acquired: Duration::from_micros(acquired_us),
            release_invoked: Duration::from_micros(release_us),
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&[7], 1.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn handoffs_run_from_a_release_to_the_next_acquisition_in_the_window() {
        let holds = [
            hold(1, 300, 310),
            hold(0, 100, 110),
            hold(0, 500, 505),
            // Outside the window [100, 1000): neither counted nor a handoff.
            hold(1, 1_200, 1_210),
            hold(1, 50, 60),
        ];
        let r = summarize(
            Contender::RecipeBackground,
            3,
            &holds,
            Duration::from_micros(100),
            Duration::from_micros(1_000),
        );
        assert_eq!(r.acquisitions, 3);
        // 300 - 110 = 190, 500 - 310 = 190.
        assert_eq!(r.handoff_ns, vec![190_000, 190_000]);
        assert_eq!(r.handoff_p50_us(), Some(190.0));
        assert_eq!(r.handoff_p99_us(), Some(190.0));
        assert_eq!(r.per_client, vec![2, 1, 0]);
        assert_eq!(r.per_client_range(), (0, 2));
        assert_eq!(r.overlaps, 0);
        // 3 holds in a 900 µs window.
        assert!((r.acquisitions_per_s - 3.0 / 0.000_9).abs() < 1e-6);
    }

    #[test]
    fn rounds_pool_into_one_cell() {
        let window = |from: u64| {
            (
                Duration::from_micros(from),
                Duration::from_micros(from + 1_000),
            )
        };
        let (s1, e1) = window(0);
        let (s2, e2) = window(10_000);
        let one = summarize(
            Contender::RecipeBackground,
            2,
            &[hold(0, 100, 100), hold(1, 400, 400)],
            s1,
            e1,
        );
        let two = summarize(
            Contender::RecipeBackground,
            2,
            &[
                hold(1, 10_100, 10_100),
                hold(1, 10_200, 10_200),
                hold(1, 10_300, 10_300),
            ],
            s2,
            e2,
        );
        let pooled = CellResult::pool(&[one, two.clone()]).unwrap();
        assert_eq!(pooled.acquisitions, 5);
        assert!((pooled.window_s - 0.002).abs() < 1e-12);
        assert!((pooled.acquisitions_per_s - 2_500.0).abs() < 1e-6);
        assert_eq!(pooled.handoff_ns, vec![100_000, 100_000, 300_000]);
        assert_eq!(pooled.per_client, vec![1, 4]);
        let other = CellResult { clients: 3, ..two };
        assert_eq!(CellResult::pool(&[pooled, other]), None);
        assert_eq!(CellResult::pool(&[]), None);
    }

    #[test]
    fn client_cpu_pools_over_rounds_and_divides_by_the_holds() {
        let round = |cpu_s: f64, holds: u64| CellResult {
            client_cpu: Some(ClientCpu { cpu_s, holds }),
            ..summarize(
                Contender::ZookeeperClient,
                1,
                &[],
                Duration::ZERO,
                Duration::from_secs(1),
            )
        };
        let pooled = CellResult::pool(&[round(0.010, 2), round(0.020, 3)]).unwrap();
        let cpu = pooled.client_cpu.unwrap();
        assert_eq!(cpu.holds, 5);
        assert!((cpu.per_acquisition_us().unwrap() - 6_000.0).abs() < 1e-6);
        assert_eq!(
            ClientCpu {
                cpu_s: 1.0,
                holds: 0
            }
            .per_acquisition_us(),
            None
        );
        // Unmeasured in one round: unmeasured in all.
        let unmeasured = CellResult {
            client_cpu: None,
            ..round(0.0, 0)
        };
        let pooled = CellResult::pool(&[round(0.010, 2), unmeasured]).unwrap();
        assert_eq!(pooled.client_cpu, None);
    }

    #[test]
    fn an_acquisition_before_the_previous_release_is_an_overlap() {
        let holds = [hold(0, 100, 200), hold(1, 150, 160)];
        let r = summarize(
            Contender::Kazoo,
            2,
            &holds,
            Duration::ZERO,
            Duration::from_secs(1),
        );
        assert_eq!(r.overlaps, 1);
        assert_eq!(r.handoff_p50_us(), Some(0.0));
    }

    #[test]
    fn no_holds_no_percentiles() {
        let r = summarize(
            Contender::ZookeeperClient,
            1,
            &[],
            Duration::ZERO,
            Duration::from_secs(1),
        );
        assert_eq!(r.acquisitions, 0);
        assert_eq!(r.per_client, vec![0]);
        assert_eq!(r.handoff_p99_us(), None);
    }

    #[test]
    fn the_kazoo_script_speaks_the_protocol_documented_here() {
        for word in ["READY", "GO", "DONE", "time.monotonic()"] {
            assert!(KAZOO_SCRIPT.contains(word), "{word}");
        }
    }
}
