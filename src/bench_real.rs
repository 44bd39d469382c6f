//! The real part of `zklock bench` (issue 7, item 3): lock throughput and handoff latency
//! on one freshly started ZooKeeper server (the harness's), for the shipped recipe,
//! zookeeper-client's `Client::lock` and Kazoo's `Lock`, at several client counts, with
//! the server's raw write rate as the limit. The measurements themselves are in
//! `zklock_real::bench`.
//!
//! Each cell (lock × client count) is measured for `--real-cell-s` seconds in all, split
//! into `--real-rounds` rounds; a round measures every cell once, in turn, so that drift
//! of the machine or the server spreads over all locks alike. A cell's figures pool its
//! rounds; the per-round rates show the spread.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zklock_real::bench::{
    CellConfig, CellResult, Contender, kazoo_cell, kazoo_python, raw_write_rate, recipe_cell,
    zookeeper_client_cell,
};
use zklock_real::harness::{self, TestServer};

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
}

impl Default for RealOptions {
    fn default() -> Self {
        RealOptions {
            cell: Duration::from_secs(3),
            rounds: 3,
            clients: vec![1, 4, 16],
            raw_in_flight: 256,
            locks: Contender::ALL.to_vec(),
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
}

impl RealCell {
    fn new(pooled: &CellResult, rounds: &[CellResult]) -> RealCell {
        let (min, max) = pooled.per_client_range();
        RealCell {
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
        }
    }
}

/// Per client count: the rates side by side and the targets' ratios (`None` where a lock
/// was not measured).
#[derive(Debug, Serialize)]
pub struct RealComparison {
    pub clients: u32,
    pub zklock_per_s: Option<f64>,
    pub zookeeper_client_per_s: Option<f64>,
    pub kazoo_per_s: Option<f64>,
    /// Target: >= 1.
    pub ours_over_zookeeper_client: Option<f64>,
    /// The same ratio in each round (the rounds are interleaved, so paired).
    pub ours_over_zookeeper_client_rounds: Vec<f64>,
    /// Target: >= 2.
    pub ours_over_kazoo: Option<f64>,
    pub ours_over_kazoo_rounds: Vec<f64>,
}

#[derive(Debug, Default, Serialize)]
pub struct RealFigures {
    /// Why the real part did not run (what to install), if it did not.
    pub skipped: Option<String>,
    /// Why Kazoo's cells did not run, if they did not.
    pub kazoo_skipped: Option<String>,
    pub server: String,
    /// Each cell's measured time, all rounds together.
    pub cell_s: f64,
    pub rounds: u32,
    pub warmup_s: f64,
    /// How the clients run.
    pub clients_note: String,
    pub kazoo: String,
    pub raw_writes: RawWriteFigures,
    pub cells: Vec<RealCell>,
    pub comparisons: Vec<RealComparison>,
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
        clients_note: "each client its own session, acquire -> release with no hold in a \
                       tight loop; the Rust clients are tasks on one multi-threaded tokio \
                       runtime; zklock's release awaits the delete, and its lost signal \
                       is not awaited (the other two have none), so it reads nothing of \
                       its own node"
            .into(),
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

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    eprintln!("real: starting a ZooKeeper server...");
    let server = TestServer::start().context("starting the ZooKeeper server")?;
    let addr = server.connect_string();
    f.server = format!(
        "ZooKeeper {}, one standalone server started by the harness at {addr} \
         (forceSync=no)",
        server_version(&server)
    );

    // Warm the server's JIT and caches; these figures are dropped.
    let warmup = opts.cell.min(Duration::from_secs(1));
    f.warmup_s = 3.0 * warmup.as_secs_f64();
    eprintln!("real: warming up...");
    rt.block_on(async {
        raw_write_rate(&addr, "/bench/warmup-raw", opts.raw_in_flight, warmup).await?;
        let cfg = CellConfig::new(4, warmup, "/bench/warmup-zklock");
        recipe_cell(&addr, &cfg).await?;
        let cfg = CellConfig::new(4, warmup, "/bench/warmup-zookeeper-client");
        zookeeper_client_cell(&addr, &cfg).await?;
        anyhow::Ok(())
    })
    .context("warm-up")?;

    eprintln!("real: raw write rate...");
    let raw_window = opts.cell.min(Duration::from_secs(3));
    let (pipelined, sequential) = rt.block_on(async {
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
    for round in 1..=rounds {
        for &clients in &opts.clients {
            for &contender in &opts.locks {
                let path = format!("/bench/{}-{clients}-r{round}", contender.key());
                let cfg = CellConfig::new(clients, per_round, &path);
                eprintln!("real: round {round}/{rounds}, {clients} client(s), {contender}...");
                let r = match contender {
                    Contender::Recipe => rt.block_on(recipe_cell(&addr, &cfg)),
                    Contender::ZookeeperClient => rt.block_on(zookeeper_client_cell(&addr, &cfg)),
                    Contender::Kazoo => match &kazoo {
                        Some(python) => kazoo_cell(python, &addr, &cfg),
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
        let ours = rate(Contender::Recipe);
        let ratio = |theirs: Option<f64>| Some(ours? / theirs?);
        let ratios = |theirs: Contender| -> Vec<f64> {
            per_round(Contender::Recipe)
                .iter()
                .zip(per_round(theirs))
                .map(|(o, t)| o / t)
                .collect()
        };
        f.comparisons.push(RealComparison {
            clients,
            zklock_per_s: ours,
            zookeeper_client_per_s: rate(Contender::ZookeeperClient),
            kazoo_per_s: rate(Contender::Kazoo),
            ours_over_zookeeper_client: ratio(rate(Contender::ZookeeperClient)),
            ours_over_zookeeper_client_rounds: ratios(Contender::ZookeeperClient),
            ours_over_kazoo: ratio(rate(Contender::Kazoo)),
            ours_over_kazoo_rounds: ratios(Contender::Kazoo),
        });
    }
    f.cells = pooled
        .iter()
        .map(|(k, p)| RealCell::new(p, &results[k]))
        .collect();
    f.total_s = t0.elapsed().as_secs_f64();
    Ok(f)
}

fn micros(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.0}"))
}

fn verdict(ratio: f64, target: f64) -> &'static str {
    if ratio >= target { "ok" } else { "MISS" }
}

fn range(values: &[f64], decimals: usize) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".into()
    } else {
        format!("{min:.decimals$}-{max:.decimals$}")
    }
}

pub fn print_table(f: &RealFigures) {
    println!("\nreal ZooKeeper");
    if let Some(why) = &f.skipped {
        println!("  skipped: {why}");
        return;
    }
    println!("  server: {}", f.server);
    println!(
        "  {:.1} s per cell in {} interleaved rounds, after {:.1} s of warm-up",
        f.cell_s, f.rounds, f.warmup_s
    );
    println!("  {}", f.clients_note);
    match &f.kazoo_skipped {
        Some(why) => println!("  Kazoo: skipped: {why}"),
        None if !f.kazoo.is_empty() => println!("  {}", f.kazoo),
        None => {}
    }
    let w = &f.raw_writes;
    println!(
        "  raw writes/s, setData pipelined ({} in flight, 1 session) {:>10.0}",
        w.pipelined_in_flight, w.pipelined_writes_per_s
    );
    println!(
        "  raw writes/s, one setData at a time (1 session)          {:>10.0}",
        w.sequential_writes_per_s
    );
    println!(
        "  limit: acquisitions/s at 2 writes each (pipelined / 2)   {:>10.0}",
        w.acquisition_limit_per_s
    );
    let row = |cols: [&str; 9]| {
        println!(
            "  {:>7}  {:>9} {:>9} {:>9}  {:>13} {:>13} {:>13}  {:>10} {:>10}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]
        );
    };
    println!(
        "\n  {:>7}  {:<29}  {:<41}  ours / theirs",
        "", "acquisitions/s", "handoff p50 / p99, us"
    );
    row([
        "clients",
        "zklock",
        "zk-client",
        "Kazoo",
        "zklock",
        "zk-client",
        "Kazoo",
        "zk-client",
        "Kazoo",
    ]);
    let find = |lock: &str, clients: u32| {
        f.cells
            .iter()
            .find(|c| c.lock == lock && c.clients == clients)
    };
    let vs = |ratio: Option<f64>, target: f64| {
        ratio.map_or("-".into(), |r| format!("{r:.2} {}", verdict(r, target)))
    };
    for cmp in &f.comparisons {
        let rate = |lock| {
            find(lock, cmp.clients).map_or("-".into(), |c| format!("{:.0}", c.acquisitions_per_s))
        };
        let lat = |lock| {
            find(lock, cmp.clients).map_or("-".into(), |c| {
                format!(
                    "{} / {}",
                    micros(c.handoff_p50_us),
                    micros(c.handoff_p99_us)
                )
            })
        };
        row([
            &cmp.clients.to_string(),
            &rate("zklock"),
            &rate("zookeeper-client"),
            &rate("kazoo"),
            &lat("zklock"),
            &lat("zookeeper-client"),
            &lat("kazoo"),
            &vs(cmp.ours_over_zookeeper_client, 1.0),
            &vs(cmp.ours_over_kazoo, 2.0),
        ]);
    }
    if f.rounds > 1 {
        println!("  per round, lowest-highest:");
        for cmp in &f.comparisons {
            let rounds =
                |lock| find(lock, cmp.clients).map_or("-".into(), |c| range(&c.rounds_per_s, 0));
            row([
                &cmp.clients.to_string(),
                &rounds("zklock"),
                &rounds("zookeeper-client"),
                &rounds("kazoo"),
                "",
                "",
                "",
                &range(&cmp.ours_over_zookeeper_client_rounds, 2),
                &range(&cmp.ours_over_kazoo_rounds, 2),
            ]);
        }
    }
    println!("  targets: ours >= 1.00 x zookeeper-client and >= 2.00 x Kazoo at every count");
    let overlaps: u64 = f.cells.iter().map(|c| c.overlaps).sum();
    if overlaps > 0 {
        println!("  WARNING: {overlaps} hold(s) acquired before the previous release (see JSON)");
    }
    println!(
        "  handoff: from a release's invocation to the next hold's acquisition (any client; \
         with 1 client its own next one), on one monotonic clock"
    );
    println!("  real part took {:.1} s", f.total_s);
}
