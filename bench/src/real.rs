//! The real part of `zklock bench`: lock throughput and handoff latency
//! on one freshly started ZooKeeper server (the harness's), for the shipped recipe,
//! zookeeper-client's `Client::lock` and Kazoo's `Lock`, at several client counts, with
//! the server's raw write rate as the limit. The measurements themselves are in
//! `zklock_bench::cells`.
//!
//! The recipe is measured twice, once per way of releasing, so that each target compares
//! like with like ([`TARGETS`]): `zklock` releases in the background, as zookeeper-client's
//! guard does when dropped; `zklock-awaited` awaits the delete, as Kazoo's `release()`
//! does.
//!
//! Each cell (lock × client count) is measured for `--real-cell-s` seconds in all, split
//! into `--real-rounds` rounds; a round measures every cell once, in turn, so that drift
//! of the machine or the server spreads over all locks alike. A cell's figures pool its
//! rounds; the per-round rates show the spread, and a target counts as met only where
//! every round meets it.
//!
//! Each round also times the floor (`crate::cells::Floor`): the chain of requests
//! a lock cannot avoid, alone, on the same server. Every lock's rate is given as a
//! fraction of it. The whole part runs once per server setting of `--real-force-sync`
//! (both by default: ZooKeeper's own default fsyncs every write, test servers do not).

use crate::cells::{
    CellConfig, CellResult, Contender, Floor, FloorResult, RecipeRelease, curator_cell,
    curator_classpath, floor_cell, kazoo_cell, kazoo_python, raw_write_rate, recipe_cell,
    zookeeper_client_cell,
};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zklock_real::harness::{self, ServerOptions, TestServer};
use zklock_real::reactor;

/// Settings of the real part.
#[derive(Clone, Debug)]
pub struct RealOptions {
    /// Each cell's total measurement time (over all rounds).
    pub cell: Duration,
    /// Rounds each cell's time is split into, interleaved across cells.
    pub rounds: u32,
    /// Contending client counts, one cell per count and lock.
    pub clients: Vec<u32>,
    /// setData requests in flight for the raw write rate.
    pub raw_in_flight: usize,
    /// The locks measured (all by default; fewer to profile one).
    pub locks: Vec<Contender>,
    /// Where the Rust clients are polled (default: the reactor's thread).
    pub executor: Executor,
    /// Run the server on the JVM's quick JIT alone, as the test servers do (default off:
    /// the optimizing JIT, as in production).
    pub quick_jit: bool,
    /// The server settings of `forceSync` to run the part on, in order (default: on, as
    /// ZooKeeper's own default, then off, as test servers run).
    pub force_sync: Vec<bool>,
}

/// Where the Rust clients of a cell are polled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// On the thread that drives async-io's reactor, where zookeeper-client does its
    /// socket IO ([`reactor::block_on`]).
    Reactor,
    /// By tokio's `block_on`: each reply crosses from async-io's reactor thread.
    Tokio,
}

impl Executor {
    pub fn from_key(key: &str) -> Option<Executor> {
        match key {
            "reactor" => Some(Executor::Reactor),
            "tokio" => Some(Executor::Tokio),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Executor::Reactor => {
                "the Rust clients are polled on one thread, the one that drives async-io's \
                 reactor where zookeeper-client does its socket IO (zklock_real::reactor)"
            }
            Executor::Tokio => {
                "the Rust clients are polled by tokio's block_on on one thread, each reply \
                 crossing from async-io's reactor thread (--real-executor tokio)"
            }
        }
    }

    fn block_on<F: std::future::Future>(self, rt: &tokio::runtime::Runtime, cell: F) -> F::Output {
        match self {
            Executor::Reactor => reactor::block_on(rt, cell),
            Executor::Tokio => rt.block_on(cell),
        }
    }
}

impl Default for RealOptions {
    fn default() -> Self {
        RealOptions {
            cell: Duration::from_secs(3),
            rounds: 3,
            clients: vec![1, 4, 16],
            raw_in_flight: 256,
            locks: Contender::ALL.to_vec(),
            executor: Executor::Reactor,
            quick_jit: false,
            force_sync: vec![true, false],
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct RawWriteFigures {
    /// setData requests kept in flight on one zookeeper-client session.
    pub pipelined_in_flight: usize,
    pub pipelined_writes_per_s: f64,
    /// One setData at a time on one session: 1 / (one write's round trip).
    pub sequential_writes_per_s: f64,
    /// An acquisition costs at least two writes (create, delete): pipelined rate / 2.
    pub acquisition_limit_per_s: f64,
    pub window_s: f64,
}

#[derive(Debug, Serialize)]
pub struct RealCell {
    /// "zklock", "zookeeper-client" or "kazoo".
    pub lock: String,
    pub clients: u32,
    /// Measured time, all rounds together.
    pub window_s: f64,
    pub acquisitions: u64,
    pub acquisitions_per_s: f64,
    /// Each round's rate, in order.
    pub rounds_per_s: Vec<f64>,
    pub handoffs: u64,
    pub handoff_p50_us: Option<f64>,
    pub handoff_p99_us: Option<f64>,
    pub handoff_max_us: Option<f64>,
    pub per_client_min_acquisitions: u64,
    pub per_client_max_acquisitions: u64,
    /// Holds acquired before the previous release was invoked; 0 for a correct lock.
    pub overlaps: u64,
    /// CPU time of the bench process (all threads) per acquisition while the cell's
    /// clients ran, µs: the client side's cost. `None` for Kazoo and Curator (other processes).
    pub client_cpu_us_per_acquisition: Option<f64>,
    /// The rate as a fraction of the floor's chain rate ([`floor_for`]), pooled, and in each round
    /// (paired with the floor measured in the same round).
    pub floor_fraction: Option<f64>,
    pub floor_fraction_rounds: Vec<f64>,
    /// The floor's median chain time over this cell's median handoff: 1 when a handoff
    /// takes no longer than the requests it cannot avoid.
    pub handoff_floor_fraction: Option<f64>,
}

/// The floor a cell of `clients` clients compares with: one client acquires after its own
/// create and listing; with more, each acquisition waits for a handoff.
pub fn floor_for(clients: u32) -> Floor {
    if clients <= 1 {
        Floor::Uncontended
    } else {
        Floor::Handoff
    }
}

impl RealCell {
    fn new(
        pooled: &CellResult,
        rounds: &[CellResult],
        floor: Option<(&FloorResult, &[FloorResult])>,
    ) -> RealCell {
        let (min, max) = pooled.per_client_range();
        let fraction = |cell: &CellResult, f: &FloorResult| {
            f.chain_per_s()
                .map(|floor_per_s| cell.acquisitions_per_s / floor_per_s)
        };
        RealCell {
            floor_fraction: floor.and_then(|(f, _)| fraction(pooled, f)),
            floor_fraction_rounds: floor.map_or_else(Vec::new, |(_, fr)| {
                rounds
                    .iter()
                    .zip(fr)
                    .filter_map(|(c, f)| fraction(c, f))
                    .collect()
            }),
            handoff_floor_fraction: floor.and_then(|(f, _)| {
                let cell_p50 = pooled.handoff_p50_us()?;
                (cell_p50 > 0.0).then(|| f.p50_us().map(|fp| fp / cell_p50))?
            }),
            lock: pooled.contender.key().to_owned(),
            clients: pooled.clients,
            window_s: pooled.window_s,
            acquisitions: pooled.acquisitions,
            acquisitions_per_s: pooled.acquisitions_per_s,
            rounds_per_s: rounds.iter().map(|r| r.acquisitions_per_s).collect(),
            handoffs: pooled.handoff_ns.len() as u64,
            handoff_p50_us: pooled.handoff_p50_us(),
            handoff_p99_us: pooled.handoff_p99_us(),
            handoff_max_us: pooled.handoff_us(100.0),
            per_client_min_acquisitions: min,
            per_client_max_acquisitions: max,
            overlaps: pooled.overlaps,
            client_cpu_us_per_acquisition: pooled.client_cpu.and_then(|c| c.per_acquisition_us()),
        }
    }
}

/// A target: ours over theirs, for a pair that releases alike.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub ours: Contender,
    pub theirs: Contender,
    /// The least acceptable ratio.
    pub at_least: f64,
    /// Why the pair is like for like.
    pub why: &'static str,
}

/// The longest warm-up of each of the three warm-up cells, seconds (shorter when the
/// cells are shorter): long enough for the server's optimizing JIT to compile the request
/// path before anything is measured.
const WARMUP_S_MAX: u64 = 2;

/// The targets, each on a like-for-like pair.
pub const TARGETS: [Target; 3] = [
    Target {
        ours: Contender::RecipeBackground,
        theirs: Contender::ZookeeperClient,
        at_least: 1.0,
        why: "both send the delete and start the next acquire without awaiting its reply",
    },
    Target {
        ours: Contender::RecipeAwaited,
        theirs: Contender::Kazoo,
        at_least: 2.0,
        why: "both start the next acquire once the delete is answered",
    },
    Target {
        ours: Contender::RecipeAwaited,
        theirs: Contender::Curator,
        at_least: 1.0,
        why: "both start the next acquire once the delete is answered (Curator's \
              release() deletes synchronously)",
    },
];

/// One target's ratio at one client count (`None` where a lock was not measured).
#[derive(Debug, Serialize)]
pub struct RealRatio {
    /// The numerator's lock key, e.g. "zklock".
    pub ours: String,
    /// The denominator's lock key, e.g. "zookeeper-client".
    pub theirs: String,
    /// Target: ratio >= this.
    pub target: f64,
    pub ratio: Option<f64>,
    /// The same ratio in each round (the rounds are interleaved, so paired).
    pub rounds: Vec<f64>,
    /// Met in every round: a lead the rounds support.
    pub met: Option<bool>,
    /// Met by the pooled ratio (possibly not in every round).
    pub met_pooled: Option<bool>,
}

/// Per client count: each lock's rate and each target's ratio.
#[derive(Debug, Serialize)]
pub struct RealComparison {
    pub clients: u32,
    /// Acquisitions per second by lock key; measured locks only.
    pub per_s: BTreeMap<String, f64>,
    pub ratios: Vec<RealRatio>,
}

/// A target in the JSON: which pair, the bound, and why the pair is like for like.
#[derive(Debug, Serialize)]
pub struct RealTarget {
    pub ours: String,
    pub theirs: String,
    pub at_least: f64,
    pub like_for_like: String,
}

/// A floor's figures on one server setting.
#[derive(Debug, Serialize)]
pub struct FloorFigure {
    /// "floor-uncontended" or "floor-handoff".
    pub floor: String,
    /// The chain of requests timed.
    pub chain: String,
    /// Chains run back to back inside the windows.
    pub chains: u64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// 1 / the mean chain time: chains per second, one after another.
    pub chain_per_s: Option<f64>,
    /// Each round's.
    pub rounds_chain_per_s: Vec<f64>,
}

/// The part's figures on one server setting.
#[derive(Debug, Default, Serialize)]
pub struct ServerRun {
    /// The server's `forceSync`: on, every write is fsynced before it is answered.
    pub force_sync: bool,
    pub server: String,
    pub warmup_s: f64,
    pub raw_writes: RawWriteFigures,
    pub floors: Vec<FloorFigure>,
    pub cells: Vec<RealCell>,
    pub comparisons: Vec<RealComparison>,
}

#[derive(Debug, Default, Serialize)]
pub struct RealFigures {
    /// Why the real part did not run (what to install), if it did not.
    pub skipped: Option<String>,
    /// Why Kazoo's cells did not run, if they did not.
    pub kazoo_skipped: Option<String>,
    /// Why Curator's cells did not run, if they did not.
    pub curator_skipped: Option<String>,
    /// Each cell's measured time, all rounds together.
    pub cell_s: f64,
    pub rounds: u32,
    /// How the clients run.
    pub clients_note: String,
    pub kazoo: String,
    pub curator: String,
    pub targets: Vec<RealTarget>,
    /// One per server setting, in the order run.
    pub runs: Vec<ServerRun>,
    pub total_s: f64,
}

fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

fn server_version(server: &TestServer) -> String {
    harness::four_letter_word(server.addr(), "srvr", Duration::from_secs(5))
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.strip_prefix("Zookeeper version: "))
                .map(|v| v.split([',', '-']).next().unwrap_or(v).trim().to_owned())
        })
        .unwrap_or_else(|| "?".into())
}

/// Under `CI=true`, fails at once if the real part could not run, before the simulation
/// spends minutes; otherwise does nothing (`run` then skips with a notice).
pub fn preflight(opts: &RealOptions) -> Result<()> {
    if !under_ci() {
        return Ok(());
    }
    if let Err(e) = harness::availability() {
        bail!("CI=true but the real benchmark cannot run: {e}");
    }
    if opts.locks.contains(&Contender::Kazoo)
        && let Err(why) = kazoo_python()
    {
        bail!("CI=true but Kazoo's benchmark cannot run: {why}");
    }
    if opts.locks.contains(&Contender::Curator)
        && let Err(why) = curator_classpath()
    {
        bail!("CI=true but Curator's benchmark cannot run: {why}");
    }
    Ok(())
}

/// Runs the real part. Without Java/ZooKeeper (or Kazoo) it says what to install and
/// skips it (or Kazoo's cells), except under `CI=true`, where that is an error.
pub fn run(opts: &RealOptions) -> Result<RealFigures> {
    let t0 = Instant::now();
    if let Err(e) = harness::availability() {
        if under_ci() {
            bail!("CI=true but the real benchmark cannot run: {e}");
        }
        eprintln!("real: skipped: {e}");
        return Ok(RealFigures {
            skipped: Some(e.to_string()),
            ..RealFigures::default()
        });
    }
    let mut f = RealFigures {
        cell_s: opts.cell.as_secs_f64(),
        rounds: opts.rounds,
        clients_note: format!(
            "each client its own session, acquire -> release with no hold in a tight loop; \
             {}, their connections with TCP_NODELAY (as Kazoo's; zookeeper-client leaves \
             Nagle on, zklock's client sets it). zklock: release_in_background sends the \
             delete and the next acquire starts at once (a background task awaits the \
             reply), as zookeeper-client's guard deletes on drop; zklock-awaited: \
             release().await waits for the delete's reply, as Kazoo's release() does. \
             zklock's lost signal is not awaited (the other two have none), so it reads \
             nothing of its own node",
            opts.executor.describe()
        ),
        targets: TARGETS
            .iter()
            .map(|t| RealTarget {
                ours: t.ours.key().to_owned(),
                theirs: t.theirs.key().to_owned(),
                at_least: t.at_least,
                like_for_like: t.why.to_owned(),
            })
            .collect(),
        ..RealFigures::default()
    };
    let kazoo = if opts.locks.contains(&Contender::Kazoo) {
        match kazoo_python() {
            Ok((python, version)) => {
                f.kazoo = format!(
                    "Kazoo {version}: one {} process per client, each its own KazooClient",
                    python.display()
                );
                Some(python)
            }
            Err(why) if under_ci() => {
                bail!("CI=true but Kazoo's benchmark cannot run: {why}")
            }
            Err(why) => {
                eprintln!("real: Kazoo's cells skipped: {why}");
                f.kazoo_skipped = Some(why);
                None
            }
        }
    } else {
        None
    };

    let curator = if opts.locks.contains(&Contender::Curator) {
        match curator_classpath() {
            Ok((classpath, version)) => {
                f.curator = format!(
                    "Curator {version}: InterProcessMutex, one JVM hosting every client of a \
                     cell (each its own CuratorFramework session), warmed up for 2 s before \
                     each window; its release() awaits the delete"
                );
                Some(classpath)
            }
            Err(why) if under_ci() => {
                bail!("CI=true but Curator's benchmark cannot run: {why}")
            }
            Err(why) => {
                eprintln!("real: Curator's cells skipped: {why}");
                f.curator_skipped = Some(why);
                None
            }
        }
    } else {
        None
    };

    for &force_sync in &opts.force_sync {
        let run = run_on_server(opts, force_sync, kazoo.as_deref(), curator.as_deref())?;
        f.runs.push(run);
    }
    f.total_s = t0.elapsed().as_secs_f64();
    Ok(f)
}

/// The part on one freshly started server with `forceSync` as given.
fn run_on_server(
    opts: &RealOptions,
    force_sync: bool,
    kazoo: Option<&std::path::Path>,
    curator: Option<&str>,
) -> Result<ServerRun> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let sync = if force_sync { "yes" } else { "no" };
    eprintln!("real: starting a ZooKeeper server (forceSync={sync})...");
    // As in production: the harness's quick-start JVM (C1 only) would spend the server's
    // CPU, which this machine's clients share, in slower code.
    let options = ServerOptions::default()
        .with_optimizing_jit(!opts.quick_jit)
        .with_force_sync(force_sync);
    let server = TestServer::start_with(options).context("starting the ZooKeeper server")?;
    let addr = server.connect_string();
    let mut f = ServerRun {
        force_sync,
        server: format!(
            "ZooKeeper {}, one standalone server started by the harness at {addr} \
             (forceSync={sync}, {})",
            server_version(&server),
            if opts.quick_jit {
                "the JVM's quick JIT alone (--real-quick-jit)"
            } else {
                "the JVM's optimizing JIT on"
            }
        ),
        ..ServerRun::default()
    };

    // Warm the server's JIT and caches; these figures are dropped.
    let warmup = opts.cell.min(Duration::from_secs(WARMUP_S_MAX));
    f.warmup_s = 3.0 * warmup.as_secs_f64();
    eprintln!("real: warming up...");
    let executor = opts.executor;
    executor
        .block_on(&rt, async {
            raw_write_rate(&addr, "/bench/warmup-raw", opts.raw_in_flight, warmup).await?;
            let cfg = CellConfig::new(4, warmup, "/bench/warmup-zklock");
            recipe_cell(&addr, &cfg, RecipeRelease::InBackground).await?;
            let cfg = CellConfig::new(4, warmup, "/bench/warmup-zookeeper-client");
            zookeeper_client_cell(&addr, &cfg).await?;
            anyhow::Ok(())
        })
        .context("warm-up")?;

    eprintln!("real: raw write rate...");
    let raw_window = opts.cell.min(Duration::from_secs(3));
    let (pipelined, sequential) = executor.block_on(&rt, async {
        let p = raw_write_rate(&addr, "/bench/raw", opts.raw_in_flight, raw_window).await?;
        let s = raw_write_rate(&addr, "/bench/raw-1", 1, raw_window).await?;
        anyhow::Ok((p, s))
    })?;
    f.raw_writes = RawWriteFigures {
        pipelined_in_flight: pipelined.in_flight,
        pipelined_writes_per_s: pipelined.writes_per_s,
        sequential_writes_per_s: sequential.writes_per_s,
        acquisition_limit_per_s: pipelined.writes_per_s / 2.0,
        window_s: raw_window.as_secs_f64(),
    };

    let rounds = opts.rounds.max(1);
    let per_round = opts.cell / rounds;
    let mut results: BTreeMap<(u32, Contender), Vec<CellResult>> = BTreeMap::new();
    let mut floors: BTreeMap<Floor, Vec<FloorResult>> = BTreeMap::new();
    for round in 1..=rounds {
        for floor in Floor::ALL {
            let dir = format!("/bench/{}-r{round}", floor.key());
            eprintln!("real: round {round}/{rounds}, {floor}...");
            let r = executor
                .block_on(&rt, floor_cell(&addr, &dir, floor, per_round))
                .with_context(|| format!("the floor: {floor}"))?;
            floors.entry(floor).or_default().push(r);
        }
        for &clients in &opts.clients {
            for &contender in &opts.locks {
                let path = format!("/bench/{}-{clients}-r{round}", contender.key());
                let cfg = CellConfig::new(clients, per_round, &path);
                eprintln!("real: round {round}/{rounds}, {clients} client(s), {contender}...");
                let r = match contender {
                    Contender::RecipeBackground => reactor::block_on(
                        &rt,
                        recipe_cell(&addr, &cfg, RecipeRelease::InBackground),
                    ),
                    Contender::RecipeAwaited => {
                        executor.block_on(&rt, recipe_cell(&addr, &cfg, RecipeRelease::Awaited))
                    }
                    Contender::ZookeeperClient => {
                        executor.block_on(&rt, zookeeper_client_cell(&addr, &cfg))
                    }
                    Contender::Kazoo => match kazoo {
                        Some(python) => kazoo_cell(python, &addr, &cfg),
                        None => continue,
                    },
                    Contender::Curator => match curator {
                        Some(classpath) => curator_cell(classpath, &addr, &cfg),
                        None => continue,
                    },
                }
                .with_context(|| format!("{clients} client(s), {contender}"))?;
                results.entry((clients, contender)).or_default().push(r);
            }
        }
    }
    drop(rt);
    drop(server);

    let pooled_floors: BTreeMap<Floor, FloorResult> = floors
        .iter()
        .filter_map(|(k, rounds)| Some((*k, FloorResult::pool(rounds)?)))
        .collect();
    f.floors = pooled_floors
        .iter()
        .map(|(k, p)| FloorFigure {
            floor: k.key().to_owned(),
            chain: k.to_string(),
            chains: p.samples_ns.len() as u64,
            p50_us: p.p50_us(),
            p99_us: crate::cells::percentile(&p.samples_ns, 99.0).map(|ns| ns as f64 / 1000.0),
            chain_per_s: p.chain_per_s(),
            rounds_chain_per_s: floors[k]
                .iter()
                .filter_map(FloorResult::chain_per_s)
                .collect(),
        })
        .collect();
    let pooled: BTreeMap<(u32, Contender), CellResult> = results
        .iter()
        .filter_map(|(k, rounds)| Some((*k, CellResult::pool(rounds)?)))
        .collect();
    for &clients in &opts.clients {
        let rate = |c: Contender| pooled.get(&(clients, c)).map(|r| r.acquisitions_per_s);
        let per_round = |c: Contender| -> Vec<f64> {
            results.get(&(clients, c)).map_or_else(Vec::new, |rs| {
                rs.iter().map(|r| r.acquisitions_per_s).collect()
            })
        };
        let ratios = TARGETS
            .iter()
            .map(|t| {
                let ratio = rate(t.ours).zip(rate(t.theirs)).map(|(o, t)| o / t);
                let rounds: Vec<f64> = per_round(t.ours)
                    .iter()
                    .zip(per_round(t.theirs))
                    .map(|(o, t)| o / t)
                    .collect();
                let every_round = !rounds.is_empty() && rounds.iter().all(|&r| r >= t.at_least);
                RealRatio {
                    ours: t.ours.key().to_owned(),
                    theirs: t.theirs.key().to_owned(),
                    target: t.at_least,
                    ratio,
                    rounds,
                    met: ratio.map(|r| r >= t.at_least && every_round),
                    met_pooled: ratio.map(|r| r >= t.at_least),
                }
            })
            .collect();
        f.comparisons.push(RealComparison {
            clients,
            per_s: Contender::ALL
                .into_iter()
                .filter_map(|c| Some((c.key().to_owned(), rate(c)?)))
                .collect(),
            ratios,
        });
    }
    f.cells = pooled
        .iter()
        .map(|(k, p)| {
            let floor = floor_for(k.0);
            let fl = pooled_floors
                .get(&floor)
                .map(|pf| (pf, floors[&floor].as_slice()));
            RealCell::new(p, &results[k], fl)
        })
        .collect();
    Ok(f)
}

fn micros(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.0}"))
}

pub(super) fn range(values: &[f64], decimals: usize) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".into()
    } else {
        format!("{min:.decimals$}-{max:.decimals$}")
    }
}

pub fn print_table(f: &RealFigures) {
    outln!("\nreal ZooKeeper");
    if let Some(why) = &f.skipped {
        outln!("  skipped: {why}");
        return;
    }
    outln!(
        "  {:.1} s per cell in {} interleaved rounds, on each server setting",
        f.cell_s,
        f.rounds
    );
    outln!("  {}", f.clients_note);
    match &f.kazoo_skipped {
        Some(why) => outln!("  Kazoo: skipped: {why}"),
        None if !f.kazoo.is_empty() => outln!("  {}", f.kazoo),
        None => {}
    }
    match &f.curator_skipped {
        Some(why) => outln!("  Curator: skipped: {why}"),
        None if !f.curator.is_empty() => outln!("  {}", f.curator),
        None => {}
    }
    for run in &f.runs {
        print_run(f, run);
    }
    for t in &TARGETS {
        outln!(
            "  target: {} / {} >= {:.2}: {}",
            t.ours.key(),
            t.theirs.key(),
            t.at_least,
            t.why
        );
    }
    outln!(
        "  ok: met in every round; pooled only: the pooled ratio meets it, some round does \
         not, so the rounds do not support the lead; MISS: the pooled ratio misses it"
    );
    outln!(
        "  handoff: from a release's invocation to the next hold's acquisition (any client; \
         with 1 client its own next one), on one monotonic clock"
    );
    outln!(
        "  floor: the chain of requests a lock cannot avoid, timed alone on the same server \
         in the same rounds; a lock's fraction of it is its rate over the floor's (1 client: \
         create -> getChildren; more: delete -> watch event -> getChildren)"
    );
    outln!("  real part took {:.1} s", f.total_s);
}

fn print_run(f: &RealFigures, run: &ServerRun) {
    outln!("\n  server: {}", run.server);
    outln!("  after {:.1} s of warm-up", run.warmup_s);
    let w = &run.raw_writes;
    outln!(
        "  raw writes/s, setData pipelined ({} in flight, 1 session) {:>10.0}",
        w.pipelined_in_flight,
        w.pipelined_writes_per_s
    );
    outln!(
        "  raw writes/s, one setData at a time (1 session)          {:>10.0}",
        w.sequential_writes_per_s
    );
    outln!(
        "  limit: acquisitions/s at 2 writes each (pipelined / 2)   {:>10.0}",
        w.acquisition_limit_per_s
    );
    for fl in &run.floors {
        outln!(
            "  {}: {}: p50 {} us, p99 {} us, {} /s back to back at the mean (per round {})",
            fl.floor,
            fl.chain,
            micros(fl.p50_us),
            micros(fl.p99_us),
            micros(fl.chain_per_s),
            range(&fl.rounds_chain_per_s, 0)
        );
    }
    let find = |lock: Contender, clients: u32| {
        run.cells
            .iter()
            .find(|c| c.lock == lock.key() && c.clients == clients)
    };
    let locks_row = |first: &str, cell: &dyn Fn(Contender) -> String| {
        let cols: Vec<String> = Contender::ALL
            .into_iter()
            .map(|c| format!("{:>24}", cell(c)))
            .collect();
        outln!("  {first:>7}{}", cols.concat());
    };
    outln!("\n  acquisitions/s");
    locks_row("clients", &|c| c.key().to_owned());
    for cmp in &run.comparisons {
        locks_row(&cmp.clients.to_string(), &|c| {
            find(c, cmp.clients).map_or("-".into(), |r| format!("{:.0}", r.acquisitions_per_s))
        });
    }
    if f.rounds > 1 {
        outln!("  per round, lowest-highest:");
        for cmp in &run.comparisons {
            locks_row(&cmp.clients.to_string(), &|c| {
                find(c, cmp.clients).map_or("-".into(), |r| range(&r.rounds_per_s, 0))
            });
        }
    }

    outln!("\n  fraction of the floor (per round, lowest-highest)");
    locks_row("clients", &|c| c.key().to_owned());
    for cmp in &run.comparisons {
        locks_row(&cmp.clients.to_string(), &|c| {
            find(c, cmp.clients).map_or("-".into(), |r| match r.floor_fraction {
                Some(x) => format!("{x:.2} ({})", range(&r.floor_fraction_rounds, 2)),
                None => "-".into(),
            })
        });
    }

    outln!("\n  like for like, ours / theirs (per round, lowest-highest)");
    let pair = |t: &Target| format!("{} / {}", t.ours.key(), t.theirs.key());
    let header: Vec<String> = TARGETS.iter().map(|t| format!("{:>38}", pair(t))).collect();
    outln!("  {:>7}{}", "clients", header.concat());
    for cmp in &run.comparisons {
        let cols: Vec<String> = cmp
            .ratios
            .iter()
            .map(|r| {
                let text = match (r.ratio, r.met, r.met_pooled) {
                    (Some(ratio), Some(met), Some(pooled)) => format!(
                        "{ratio:.2} {} ({})",
                        match (met, pooled) {
                            (true, _) => "ok",
                            (false, true) => "pooled only",
                            (false, false) => "MISS",
                        },
                        range(&r.rounds, 2)
                    ),
                    _ => "-".into(),
                };
                format!("{text:>38}")
            })
            .collect();
        outln!("  {:>7}{}", cmp.clients, cols.concat());
    }

    outln!("\n  handoff p50 / p99, us (the floor's p50 over the handoff's)");
    locks_row("clients", &|c| c.key().to_owned());
    for cmp in &run.comparisons {
        locks_row(&cmp.clients.to_string(), &|c| {
            find(c, cmp.clients).map_or("-".into(), |r| {
                format!(
                    "{} / {} ({})",
                    micros(r.handoff_p50_us),
                    micros(r.handoff_p99_us),
                    r.handoff_floor_fraction
                        .map_or_else(|| "-".into(), |x| format!("{x:.2}"))
                )
            })
        });
    }

    outln!("\n  client CPU per acquisition, us (this process, all threads)");
    locks_row("clients", &|c| c.key().to_owned());
    for cmp in &run.comparisons {
        locks_row(&cmp.clients.to_string(), &|c| {
            micros(find(c, cmp.clients).and_then(|r| r.client_cpu_us_per_acquisition))
        });
    }
    let overlaps: u64 = run.cells.iter().map(|c| c.overlaps).sum();
    if overlaps > 0 {
        outln!("  WARNING: {overlaps} hold(s) acquired before the previous release (see JSON)");
    }
}
