//! `zklock bench`: figures, side by side in one run, printed as a table and written as
//! JSON under target/zklock-bench/. Targets are judged by reading the figures, never by a
//! timed test.

use crate::BenchOptions;
use crate::cells::Contender;
use crate::instructions as bench_instructions;
use crate::real as bench_real;
use anyhow::{Context, Result, bail};
use bench_real::{Executor, RealFigures, RealOptions};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use zklock_checker::{Bounds, Budget, check_exhaustive, explore};
use zklock_recipe::history::EventKind;
use zklock_sim::{Scenario, ShippedRecipe, run_scenario};

/// The simulation's targets: checked acquisitions per second on one core, and that
/// figure as a share of the madsim ceiling.
const SIM_PER_CORE_TARGET: f64 = 250_000.0;
const SIM_CEILING_RATIO_TARGET: f64 = 0.25;

/// How this binary was compiled, stamped by build.rs.
const BUILD: &str = env!("ZKLOCK_BUILD");
/// Whether it was built by scripts/pgo-build, which runs the simulation about a tenth
/// faster than a plain release build.
const PROFILE_GUIDED: bool = !env!("ZKLOCK_PROFILE_GUIDED").is_empty();

/// Pooled over every round (total acquisitions over total time, as the real part pools
/// its rounds); the `*_per_round` lists show the spread the machine's load gave.
#[derive(Debug, Default, Serialize)]
pub struct SimFigures {
    /// Seeds of each sweep, all rounds together.
    pub seeds: u64,
    /// The scenario's `drop_every` (0: no dropped acquires, the standard figures).
    pub drop_every: u32,
    pub rounds: u32,
    pub checked_acquisitions_per_s_one_core: f64,
    pub one_core_per_round: Vec<f64>,
    pub checked_acquisitions_per_s_all_cores: f64,
    pub cores: usize,
    pub seeds_per_s_one_core: f64,
    pub seeds_per_s_all_cores: f64,
    pub madsim_round_trips_per_s: f64,
    pub round_trips_per_acquisition: f64,
    pub ceiling_acquisitions_per_s: f64,
    pub ratio_to_ceiling: f64,
    /// One core over the ceiling, each measured in the same round.
    pub ratio_per_round: Vec<f64>,
}

#[derive(Debug, Serialize)]
pub struct ExhaustiveFigures {
    pub config: String,
    /// Whether states were pruned up to a permutation of clients (`check --symmetry`).
    pub symmetry: bool,
    /// Distinct states without symmetry reduction per distinct state with it, when both
    /// searches of this configuration completed (on the row with symmetry).
    pub reduction: Option<f64>,
    /// Threads searching (`check --threads`).
    pub threads: usize,
    /// States per second on every core per states per second on one thread, symmetry on
    /// both, measured one after the other (on the row of every core).
    pub speedup: Option<f64>,
    /// The project's target for this configuration, if it has one: complete within this
    /// many seconds (`None` within: complete at all).
    pub target: Option<Target>,
    pub schedules: u64,
    pub distinct_states: u64,
    pub complete: bool,
    /// The limit that stopped an incomplete search: "schedule limit" or "time limit".
    pub stopped_by: Option<&'static str>,
    pub total_s: f64,
    pub schedules_per_s: f64,
    pub states_per_s: f64,
}

/// A target of the exhaustive check's figures: what the search should reach on 2 cores.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Target {
    /// Complete within this many seconds; `None`: complete at all.
    pub within_s: Option<f64>,
}

impl Target {
    fn met(&self, e: &ExhaustiveFigures) -> bool {
        e.complete && self.within_s.is_none_or(|s| e.total_s <= s)
    }

    /// `ok`, `MISS`, or, when the cell's time limit stopped the search before the
    /// target's time (or the target has none), that the cell cannot tell: `zklock check`
    /// with a longer limit judges it.
    fn verdict(&self, e: &ExhaustiveFigures) -> &'static str {
        let cut_short =
            e.stopped_by == Some(TIME_LIMIT) && self.within_s.is_none_or(|s| e.total_s < s);
        if self.met(e) {
            "ok"
        } else if cut_short {
            "not judged within the cell's limit"
        } else {
            "MISS"
        }
    }
}

/// Why a cell's search stopped, when its time limit stopped it.
const TIME_LIMIT: &str = "time limit";
/// Why a cell's search stopped, when its count of schedules stopped it.
const SCHEDULE_LIMIT: &str = "schedule limit";

#[derive(Debug, Default, Serialize)]
pub struct Figures {
    pub machine: String,
    /// How this binary was compiled: the profile, and whether profile-guided
    /// (scripts/pgo-build), which moves the simulation's figures by about a tenth.
    pub build: String,
    /// `None` with `--real-only`.
    pub simulation: Option<SimFigures>,
    /// Empty with `--real-only`.
    pub exhaustive: Vec<ExhaustiveFigures>,
    /// Real ZooKeeper's figures; `None` with `--sim-only`.
    pub real: Option<RealFigures>,
    /// Instructions per state of the check (`--instructions-clients`); `None` with
    /// `--real-only` or `--instructions-clients 0`.
    pub instructions: Option<bench_instructions::InstructionFigures>,
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{cpu}, {cores} cores")
}

/// The seconds `n` raw request/response round trips between two madsim tasks take: their
/// rate is the most a simulation whose actors are madsim tasks could do per request.
/// zklock's actors run on the simulation's own executor instead (sim/src/actor.rs), so
/// this bounds what a simulation built the usual way on madsim could do, not zklock's.
/// Measured only where madsim runs its simulator (`--cfg madsim`, as this workspace
/// builds); elsewhere (zklock as a dependency of a user's crate, built without the flag)
/// it reads NaN, and so do the figures drawn from it.
#[cfg(not(madsim))]
fn madsim_round_trips(_n: u64) -> f64 {
    f64::NAN
}

/// See the other `madsim_round_trips`.
#[cfg(madsim)]
fn madsim_round_trips(n: u64) -> f64 {
    use futures_channel::{mpsc, oneshot};
    use futures_util::StreamExt;
    let rt = madsim::runtime::Runtime::with_seed_and_config(1, Default::default());
    // Timed from outside the runtime: inside it, madsim answers `Instant::now()` with
    // its virtual clock, which would make this figure the same on every machine.
    let t0 = Instant::now();
    let answered = rt.block_on(async move {
        let (tx, mut rx) = mpsc::unbounded::<(u64, oneshot::Sender<u64>)>();
        let server = madsim::task::spawn(async move {
            while let Some((v, reply)) = rx.next().await {
                let _ = reply.send(v + 1);
            }
        });
        let mut acc = 0;
        for i in 0..n {
            let (otx, orx) = oneshot::channel();
            tx.unbounded_send((i, otx)).expect("server alive");
            acc += orx.await.expect("reply");
        }
        drop(tx);
        let _ = server.await;
        acc
    });
    let secs = t0.elapsed().as_secs_f64();
    assert!(answered >= n, "every request answered");
    secs
}

/// Madsim round trips timed in each round: enough to be well above the clock's noise.
const MADSIM_ROUND_TRIPS_PER_ROUND: u64 = 300_000;

/// Sums of one measurement over rounds, and its rate in each round.
#[derive(Default)]
struct Pooled {
    count: f64,
    secs: f64,
    per_round: Vec<f64>,
}

impl Pooled {
    fn add(&mut self, count: f64, secs: f64) {
        let secs = secs.max(1e-9);
        self.count += count;
        self.secs += secs;
        self.per_round.push(count / secs);
    }
    fn rate(&self) -> f64 {
        self.count / self.secs.max(1e-9)
    }
}

/// The sweeps run in `rounds` interleaved rounds of `seeds / rounds` seeds each (the same
/// seeds every round, so rounds differ only by the machine): one core, all cores, then
/// the madsim ceiling. A shared machine's speed drifts by tens of percent within a minute,
/// so the ratio is taken within each round, not across minutes.
fn sim_figures(seeds: u64, rounds: u32, drop_every: u32) -> SimFigures {
    let sc = Scenario {
        drop_every,
        ..Scenario::default()
    };
    let recipe = ShippedRecipe::default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_round = (seeds / u64::from(rounds)).max(1);
    let sweep = |threads: usize| {
        let budget = Budget {
            seeds: per_round,
            threads,
            ..Budget::default()
        };
        let t0 = Instant::now();
        let e = explore(&sc, &recipe, &budget, &|_, _| {})
            .expect("the bench's sweep is within the bounds");
        let secs = t0.elapsed().as_secs_f64();
        (
            e.summary.counters.acquisitions as f64,
            e.summary.seeds_run as f64,
            secs,
        )
    };
    let mut one = Pooled::default();
    let mut all = Pooled::default();
    // Seeds run by each sweep, timed by its acquisitions' Pooled.
    let (mut one_seeds, mut all_seeds) = (0.0, 0.0);
    let mut trips_s = Pooled::default();
    for round in 1..=rounds {
        eprintln!(
            "simulation: round {round}/{rounds}: {per_round} seeds on one core, on {cores} \
             cores, then madsim"
        );
        let (acq, run, secs) = sweep(1);
        one.add(acq, secs);
        one_seeds += run;
        let (acq, run, secs) = sweep(cores);
        all.add(acq, secs);
        all_seeds += run;
        trips_s.add(
            MADSIM_ROUND_TRIPS_PER_ROUND as f64,
            madsim_round_trips(MADSIM_ROUND_TRIPS_PER_ROUND),
        );
    }
    let per_acq = round_trips_per_acquisition(&sc, &recipe);
    let ceiling = trips_s.rate() / per_acq;
    SimFigures {
        seeds: per_round * u64::from(rounds),
        drop_every,
        rounds,
        checked_acquisitions_per_s_one_core: one.rate(),
        ratio_per_round: one
            .per_round
            .iter()
            .zip(&trips_s.per_round)
            .map(|(acq, trips)| acq / (trips / per_acq))
            .collect(),
        one_core_per_round: std::mem::take(&mut one.per_round),
        checked_acquisitions_per_s_all_cores: all.rate(),
        cores,
        seeds_per_s_one_core: one_seeds / one.secs,
        seeds_per_s_all_cores: all_seeds / all.secs,
        madsim_round_trips_per_s: trips_s.rate(),
        round_trips_per_acquisition: per_acq,
        ceiling_acquisitions_per_s: ceiling,
        ratio_to_ceiling: one.rate() / ceiling,
    }
}

/// Round trips one acquisition needs: ZooKeeper requests plus resource operations.
fn round_trips_per_acquisition(sc: &Scenario, recipe: &ShippedRecipe) -> f64 {
    let (mut trips, mut acquired) = (0u64, 0u64);
    for seed in 0..20 {
        for e in run_scenario(sc, seed, recipe).history.events {
            match e.kind {
                EventKind::OpInvoke { .. }
                | EventKind::ResourceRead { .. }
                | EventKind::ResourceWrite { .. } => trips += 1,
                EventKind::Acquired { .. } => acquired += 1,
                _ => {}
            }
        }
    }
    trips as f64 / acquired.max(1) as f64
}

fn exhaustive_figures(
    clients: u32,
    faults_max: u32,
    symmetry: bool,
    threads: usize,
    time_limit_s: u64,
) -> ExhaustiveFigures {
    let bounds = Bounds {
        clients,
        faults_max,
        symmetry,
        threads,
        time_limit_ms: time_limit_s.saturating_mul(1000),
        // The time limit, not a count of schedules, bounds each cell.
        schedules_max: u64::MAX,
        ..Bounds::default()
    };
    // The targets: 3 clients complete with 1 fault within 10 s and with 2 within
    // 60 s; 4 clients with 1 fault complete.
    let target = match (clients, faults_max) {
        (3, 1) => Some(Target {
            within_s: Some(10.0),
        }),
        (3, 2) => Some(Target {
            within_s: Some(60.0),
        }),
        (4, 1) => Some(Target { within_s: None }),
        _ => None,
    };
    let config = format!("{clients} clients, {faults_max} faults");
    search_figures(&bounds, config, target.filter(|_| symmetry))
}

/// The search the check made before it had any reduction, for its states per second per
/// core: 3 clients with 1 fault, requests of 100 µs, no symmetry reduction, every reply
/// told apart whole (no `keep_only`), one thread,
/// the first 2,000,000 schedules (its default bound then). The same search, schedule for
/// schedule, as `zklock check --clients 3 --faults-max 1` of that version, so that their
/// rates compare the engines (docs/figures.md).
fn first_search_figures(time_limit_s: u64) -> ExhaustiveFigures {
    let bounds = Bounds {
        clients: 3,
        faults_max: 1,
        symmetry: false,
        keep_only: false,
        threads: 1,
        request_time_us: FIRST_SEARCH_REQUEST_TIME_US,
        schedules_max: FIRST_SEARCH_SCHEDULES,
        time_limit_ms: time_limit_s.saturating_mul(1000),
        ..Bounds::default()
    };
    search_figures(&bounds, "3 clients, 1 fault, 100 us".to_owned(), None)
}

/// The request time and the schedules of [`first_search_figures`].
const FIRST_SEARCH_REQUEST_TIME_US: u64 = 100;
const FIRST_SEARCH_SCHEDULES: u64 = 2_000_000;

fn search_figures(bounds: &Bounds, config: String, target: Option<Target>) -> ExhaustiveFigures {
    let r = check_exhaustive(&Scenario::default(), &ShippedRecipe::default(), bounds)
        .expect("the bench's bounds are within the limits (its time limit is checked)");
    let secs = (r.wall_ms as f64 / 1000.0).max(1e-9);
    ExhaustiveFigures {
        config,
        symmetry: r.symmetry,
        reduction: None,
        threads: r.threads,
        speedup: None,
        target,
        schedules: r.schedules,
        distinct_states: r.distinct_states,
        complete: r.complete,
        stopped_by: (!r.complete).then_some(if r.schedules >= bounds.schedules_max {
            SCHEDULE_LIMIT
        } else {
            TIME_LIMIT
        }),
        total_s: secs,
        schedules_per_s: r.schedules as f64 / secs,
        states_per_s: r.distinct_states as f64 / secs,
    }
}

/// The most seeds a bench sweep takes per round: some hours on one core.
const BENCH_SEEDS_MAX: u64 = 100_000_000;

/// Every figure `a` asks for, printed as a table and written to
/// target/zklock-bench/bench.json (under `CARGO_TARGET_DIR` if set).
pub fn run(a: &BenchOptions) -> Result<()> {
    let (seeds, sim_rounds, exhaustive_limit_s) = (a.seeds, a.sim_rounds, a.exhaustive_limit_s);
    // Past the checker's bound, the exhaustive parts would refuse to run.
    zklock_checker::limits::wall_time_ms_from_s("--exhaustive-limit-s", exhaustive_limit_s)?;
    // The standard figures were defined on 5 clients × 20 acquisitions with all faults
    // on, before dropped acquires joined the default workload; a dropped attempt mostly
    // acquires nothing, so by default they stay out and the figures stay comparable.
    let sim_drop_every = a.sim_drop_every;
    let (sim, real) = (!a.real_only, !a.sim_only);
    if !(1..=BENCH_SEEDS_MAX).contains(&seeds) {
        bail!("--seeds must be 1 to {BENCH_SEEDS_MAX}, got {seeds}");
    }
    if !(1..=100).contains(&sim_rounds) {
        bail!("--sim-rounds: {sim_rounds} is not 1 to 100");
    }
    if a.instructions_clients > INSTRUCTIONS_CLIENTS_MAX {
        bail!(
            "--instructions-clients: {} is not 0 to {INSTRUCTIONS_CLIENTS_MAX}",
            a.instructions_clients
        );
    }
    let mut real_opts = RealOptions::default();
    let s = a.real_cell_s;
    if !(s.is_finite() && s > 0.0 && s <= 3600.0) {
        bail!("--real-cell-s: {s} is not a duration in seconds (0 < S <= 3600)");
    }
    real_opts.cell = Duration::from_secs_f64(s);
    real_opts.rounds = a.real_rounds;
    if !(1..=100).contains(&real_opts.rounds) {
        bail!("--real-rounds: {} is not 1 to 100", real_opts.rounds);
    }
    real_opts.clients = a
        .real_clients
        .split(',')
        .map(|c| match c.trim().parse::<u32>() {
            Ok(n) if (1..=256).contains(&n) => Ok(n),
            _ => bail!("--real-clients: {c:?} is not a client count (1 to 256)"),
        })
        .collect::<Result<_>>()?;
    if let Some(list) = &a.real_locks {
        real_opts.locks = list
            .split(',')
            .map(|l| {
                Contender::from_key(l.trim()).with_context(|| {
                    let keys: Vec<&str> = Contender::ALL.into_iter().map(Contender::key).collect();
                    format!("--real-locks: {l:?} is not one of {}", keys.join(", "))
                })
            })
            .collect::<Result<_>>()?;
    }
    real_opts.executor = Executor::from_key(&a.real_executor).with_context(|| {
        format!(
            "--real-executor: {:?} is not one of reactor, tokio",
            a.real_executor
        )
    })?;
    real_opts.quick_jit = a.real_quick_jit;
    real_opts.force_sync = match a.real_force_sync.as_str() {
        "on" => vec![true],
        "off" => vec![false],
        "both" => vec![true, false],
        other => bail!("--real-force-sync: {other:?} is not one of on, off, both"),
    };
    if real {
        bench_real::preflight(&real_opts)?;
    }
    let mut f = Figures {
        machine: machine(),
        build: BUILD.to_owned(),
        ..Figures::default()
    };
    if sim {
        f.simulation = Some(sim_figures(seeds, sim_rounds, sim_drop_every));
        // Each configuration without symmetry reduction, then with it, on one thread,
        // then with it on every core: the largest do not complete without it, but their
        // states per second compare the digests, and the threads' rates the cores.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for (c, k, both) in [
            (2, 1, true),
            (3, 0, true),
            (3, 1, true),
            (3, 2, true),
            (4, 1, true),
        ] {
            let unreduced = both.then(|| {
                eprintln!("exhaustive: {c} clients, {k} faults, symmetry off...");
                exhaustive_figures(c, k, false, 1, exhaustive_limit_s)
            });
            eprintln!("exhaustive: {c} clients, {k} faults, symmetry on...");
            let mut reduced = exhaustive_figures(c, k, true, 1, exhaustive_limit_s);
            if let Some(u) = unreduced {
                if u.complete && reduced.complete {
                    let states = reduced.distinct_states.max(1) as f64;
                    reduced.reduction = Some(u.distinct_states as f64 / states);
                }
                f.exhaustive.push(u);
            }
            let every_core = (cores > 1).then(|| {
                eprintln!("exhaustive: {c} clients, {k} faults, symmetry on, {cores} threads...");
                let mut e = exhaustive_figures(c, k, true, cores, exhaustive_limit_s);
                e.speedup = Some(e.states_per_s / reduced.states_per_s.max(1e-9));
                e
            });
            // The targets are for the search on every core.
            if every_core.is_some() {
                reduced.target = None;
            }
            f.exhaustive.push(reduced);
            f.exhaustive.extend(every_core);
        }
        eprintln!("exhaustive: the first search (3 clients, 1 fault, requests of 100 us)...");
        f.exhaustive.push(first_search_figures(exhaustive_limit_s));
        if a.instructions_clients > 0 {
            f.instructions = Some(instruction_figures(a.instructions_clients)?);
        }
    }
    if real {
        f.real = Some(bench_real::run(&real_opts)?);
    }
    print_table(&f);
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| PathBuf::from("target"), PathBuf::from)
        .join("zklock-bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("bench.json");
    std::fs::write(&path, serde_json::to_string_pretty(&f)?)
        .with_context(|| format!("writing {}", path.display()))?;
    outln!("\nfigures: {}", path.display());
    Ok(())
}

/// The most clients `--instructions-clients` takes: 4 clients with a fault run about
/// half an hour under cachegrind.
const INSTRUCTIONS_CLIENTS_MAX: u32 = 4;

/// Instructions per state of the check at `clients` clients with a fault, counted by
/// cachegrind on this binary; without valgrind, the reason in place of the figure.
fn instruction_figures(clients: u32) -> Result<bench_instructions::InstructionFigures> {
    let exe = std::env::current_exe().context("locating this binary for cachegrind")?;
    let Some(valgrind) = bench_instructions::find_valgrind() else {
        return Ok(bench_instructions::InstructionFigures::not_measured(
            clients,
            "valgrind is not on PATH (apt-get install valgrind); this machine's hardware \
             counters are not used",
        ));
    };
    eprintln!(
        "exhaustive: instructions per state ({clients} clients, 1 fault) under cachegrind..."
    );
    Ok(bench_instructions::measure(&valgrind, &exe, clients))
}

fn print_table(f: &Figures) {
    outln!("machine: {}", f.machine);
    outln!("build: {}", f.build);
    if let Some(s) = &f.simulation {
        print_sim_table(s, &f.exhaustive);
    }
    if let Some(i) = &f.instructions {
        match (i.per_state, i.instructions, i.distinct_states) {
            (Some(per), Some(n), Some(states)) => outln!(
                "  instructions per state ({}, cachegrind): {per:.0} ({n} instructions, {states} states)",
                i.config
            ),
            _ => outln!(
                "  instructions per state ({}): not measured: {}",
                i.config,
                i.not_measured.as_deref().unwrap_or("no reason recorded")
            ),
        }
    }
    if let Some(real) = &f.real {
        bench_real::print_table(real);
    }
}

fn print_sim_table(s: &SimFigures, exhaustive: &[ExhaustiveFigures]) {
    outln!();
    let drops = match s.drop_every {
        0 => "no dropped acquires".to_owned(),
        n => format!("one acquire in {n} dropped"),
    };
    outln!("simulation (5 clients x 20 acquisitions, all faults on, {drops}, every run checked)");
    outln!(
        "  {} seeds per sweep in {} interleaved rounds; pooled, then per round lowest-highest",
        s.seeds,
        s.rounds
    );
    // (what, pooled figure, each round's lowest-highest where kept)
    let rows = [
        (
            "checked acquisitions/s, one core".to_owned(),
            format!("{:.0}", s.checked_acquisitions_per_s_one_core),
            bench_real::range(&s.one_core_per_round, 0),
        ),
        (
            format!("checked acquisitions/s, {} cores", s.cores),
            format!("{:.0}", s.checked_acquisitions_per_s_all_cores),
            String::new(),
        ),
        (
            "seeds/s, one core".to_owned(),
            format!("{:.1}", s.seeds_per_s_one_core),
            String::new(),
        ),
        (
            "seeds/s, all cores".to_owned(),
            format!("{:.1}", s.seeds_per_s_all_cores),
            String::new(),
        ),
        (
            "madsim raw round trips/s".to_owned(),
            format!("{:.0}", s.madsim_round_trips_per_s),
            String::new(),
        ),
        (
            "round trips per acquisition".to_owned(),
            format!("{:.1}", s.round_trips_per_acquisition),
            String::new(),
        ),
        (
            "ceiling: acquisitions/s".to_owned(),
            format!("{:.0}", s.ceiling_acquisitions_per_s),
            String::new(),
        ),
        (
            "one core / ceiling".to_owned(),
            format!("{:.3}", s.ratio_to_ceiling),
            bench_real::range(&s.ratio_per_round, 3),
        ),
    ];
    for (what, pooled, spread) in rows {
        let line = format!("  {what:<36} {pooled:>12} {spread:>17}");
        outln!("{}", line.trim_end());
    }
    let per_core = s.checked_acquisitions_per_s_one_core;
    outln!(
        "  targets: one core >= {SIM_PER_CORE_TARGET:.0}/s: {}; one core / ceiling >= \
         {SIM_CEILING_RATIO_TARGET}: {}",
        if per_core >= SIM_PER_CORE_TARGET {
            "ok".to_string()
        } else {
            format!(
                "MISS ({:.1}x short{})",
                SIM_PER_CORE_TARGET / per_core.max(1.0),
                if PROFILE_GUIDED {
                    ""
                } else {
                    "; this build is not profile-guided, see scripts/pgo-build"
                }
            )
        },
        if s.ratio_to_ceiling >= SIM_CEILING_RATIO_TARGET {
            "ok"
        } else {
            "MISS"
        }
    );
    outln!("\nexhaustive (shipped recipe, 1 acquisition per client)");
    outln!(
        "  {:<22} {:>8} {:>7} {:>10} {:>12} {:>9} {:>13} {:>12} {:>9} {:>8}",
        "config",
        "symmetry",
        "threads",
        "schedules",
        "states",
        "time s",
        "schedules/s",
        "states/s",
        "reduction",
        "speed-up"
    );
    for e in exhaustive {
        let target = e.target.map_or(String::new(), |t| {
            let within = t
                .within_s
                .map_or("complete".to_owned(), |s| format!("<= {s:.0} s"));
            format!("  target {within}: {}", t.verdict(e))
        });
        outln!(
            "  {:<22} {:>8} {:>7} {:>10} {:>12} {:>9.2} {:>13.0} {:>12.0} {:>9} {:>8}{}{}",
            e.config,
            if e.symmetry { "on" } else { "off" },
            e.threads,
            e.schedules,
            e.distinct_states,
            e.total_s,
            e.schedules_per_s,
            e.states_per_s,
            e.reduction.map_or("-".to_owned(), |r| format!("{r:.2}x")),
            e.speedup.map_or("-".to_owned(), |r| format!("{r:.2}x")),
            e.stopped_by
                .map_or(String::new(), |limit| format!("  (incomplete: {limit})")),
            target
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(complete: bool, stopped_by: Option<&'static str>, total_s: f64) -> ExhaustiveFigures {
        ExhaustiveFigures {
            config: "3 clients, 1 faults".into(),
            symmetry: true,
            reduction: None,
            threads: 2,
            speedup: None,
            target: None,
            schedules: 1,
            distinct_states: 1,
            complete,
            stopped_by,
            total_s,
            schedules_per_s: 1.0,
            states_per_s: 1.0,
        }
    }

    #[test]
    fn a_cell_cut_short_by_its_limit_does_not_judge_a_target_it_could_still_meet() {
        let within_10 = Target {
            within_s: Some(10.0),
        };
        let complete = Target { within_s: None };
        assert_eq!(within_10.verdict(&cell(true, None, 9.0)), "ok");
        assert_eq!(within_10.verdict(&cell(true, None, 11.0)), "MISS");
        // Stopped at the target's time or past it: missed.
        assert_eq!(
            within_10.verdict(&cell(false, Some(TIME_LIMIT), 10.0)),
            "MISS"
        );
        // Stopped before it: the cell cannot tell.
        let short = "not judged within the cell's limit";
        assert_eq!(
            within_10.verdict(&cell(false, Some(TIME_LIMIT), 2.0)),
            short
        );
        assert_eq!(
            complete.verdict(&cell(false, Some(TIME_LIMIT), 60.0)),
            short
        );
        assert_eq!(complete.verdict(&cell(true, None, 600.0)), "ok");
        // A schedule limit is a bound of the cell's own choosing: missed.
        let schedules = cell(false, Some(SCHEDULE_LIMIT), 2.0);
        assert_eq!(complete.verdict(&schedules), "MISS");
    }
}
