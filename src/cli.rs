//! The command line's grammar (clap derive): every subcommand, flag, default and help
//! text, in one place. Numeric flags take negative numbers as values, so that `-1` is
//! refused as out of range for its flag rather than as an unknown argument.

use crate::numbers::{ANY, count, whole, within};
use clap::{Args, CommandFactory, Parser, Subcommand};
use clap_complete::Shell;
use std::path::PathBuf;
use std::sync::OnceLock;
use zklock_checker::registry::SHIPPED_NAME;
use zklock_checker::{Bounds, ShrinkLimits, ZKLOCK_COMMIT};
#[cfg(feature = "real")]
use zklock_real::workload::WorkloadConfig;

/// What each exit status means, shown under every `--help`.
pub const EXIT_STATUS: &str = "\
Exit status:
  0  every property held (replay: on the recorded history; shrink: the shrunk trace was
     written)
  1  a property was violated, a simulated run did not finish within its virtual time or
     step limit, or a replay's history differs from the one its trace recorded
  2  usage error or bad input: an unknown flag, subcommand or recipe, a flag that does
     not apply to the recipe, a value out of range, an unreadable, corrupt or non-failing trace, a file that exists already
     (without --force), a server that cannot be reached or started
  3  inconclusive: nothing was violated, but the check did not finish (an exhaustive
     search stopped by --schedules-max, --time-limit-s or Ctrl-C; a sweep stopped by
     --time-limit-s or Ctrl-C before its last seed; a merge lacking any seed of the
     sweep or any shard of the check, which it names; a sweep or real run that checked nothing, no acquisition
     made or item completed, as real --duration 1ms)";

/// zklock: deterministic simulator and model checker for ZooKeeper lock recipes.
///
/// With no subcommand, the program explores: it runs the lock on the simulated ZooKeeper
/// with every fault on, over a range of seeds on every core, and checks every property;
/// a failing seed is written as a trace, shrunk, and its replay command printed.
#[derive(Debug, Parser)]
#[command(
    name = "zklock",
    args_conflicts_with_subcommands = true,
    after_help = EXIT_STATUS
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub explore: ExploreArgs,
}

/// The grammar, with the version (and the commit it was built from).
pub fn command() -> clap::Command {
    static VERSION: OnceLock<String> = OnceLock::new();
    let version = VERSION.get_or_init(|| match ZKLOCK_COMMIT {
        "" => env!("CARGO_PKG_VERSION").to_owned(),
        c => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
    });
    Cli::command().version(version.as_str())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Seed sweep on the simulated ZooKeeper, every fault on, every property checked (the
    /// default job)
    ///
    /// Stops at the first violation, writes its trace under --out, shrinks it, and prints
    /// the command that replays it.
    #[command(after_help = EXIT_STATUS)]
    Explore(ExploreArgs),
    /// Bounded exhaustive model checking: every interleaving and fault placement of a
    /// small configuration
    #[command(after_help = EXIT_STATUS)]
    Check(CheckArgs),
    /// Re-run a trace's exact schedule with the recipe it recorded, compare the history
    /// with the recorded one, print the timeline and the verdict
    #[command(after_help = EXIT_STATUS)]
    Replay(ReplayArgs),
    /// Minimize a failing trace: fewer clients, acquisitions, faults and choices, the
    /// same violated property
    #[command(after_help = EXIT_STATUS)]
    Shrink(ShrinkArgs),
    /// Draw a trace as one self-contained HTML page: a lane per client and session,
    /// holds, requests, watch events and faults, the violation's events ringed
    #[command(after_help = EXIT_STATUS)]
    Timeline(TimelineArgs),
    /// Merge the JSON summaries of an explore sweep's or a check's shards (--shard K/N
    /// --summary FILE)
    #[command(after_help = EXIT_STATUS)]
    Merge(MergeArgs),
    /// The shipped recipe and the same workload on real ZooKeeper servers, with faults
    /// until 2/3 of the run, the history checked
    #[cfg(feature = "real")]
    #[command(after_help = EXIT_STATUS)]
    Real(RealArgs),
    /// Left out of this build: zklock's cargo feature `real` is off
    #[cfg(not(feature = "real"))]
    #[command(hide = true, disable_help_flag = true)]
    Real(Absent),
    /// Search for the fault that breaks a lock on a real server: a reference run of a
    /// fixed script records every request each client sends, then one run per request ×
    /// action (drop, withheld reply, expiry, pause, crash; repeated drops and withheld
    /// replies), and at --k 2 per pair; each violation with the `real` line that
    /// reproduces it
    #[cfg(feature = "real")]
    #[command(
        after_help = EXIT_STATUS,
        mut_arg("session_timeout_ms", |a| a.default_value(crate::workload_args::SEARCH_SESSION_TIMEOUT_MS)),
        mut_arg("acquire_timeout_ms", |a| a.default_value(crate::workload_args::SEARCH_ACQUIRE_TIMEOUT_MS)),
    )]
    Search(SearchArgs),
    /// Left out of this build: zklock's cargo feature `real` is off
    #[cfg(not(feature = "real"))]
    #[command(hide = true, disable_help_flag = true)]
    Search(Absent),
    /// Export a finding of a finished search from its journal as a reproduction a
    /// maintainer runs without zklock: for Kazoo's locks, one Python file (Python and
    /// Kazoo alone), for Curator's locks and LeaderLatch and ZooKeeper's WriteLock and
    /// LeaderElectionSupport one Java file (the jars alone), shrunk, and verified here
    /// before it is written
    #[cfg(feature = "real")]
    #[command(after_help = EXIT_STATUS)]
    Export(ExportArgs),
    /// Left out of this build: zklock's cargo feature `real` is off
    #[cfg(not(feature = "real"))]
    #[command(hide = true, disable_help_flag = true)]
    Export(Absent),
    /// Benchmark figures, printed and written to target/zklock-bench/bench.json
    ///
    /// Simulation against its madsim ceiling, exhaustive schedules/states per second,
    /// real lock throughput and handoff latency against zookeeper-client's lock, Kazoo's
    /// and Curator's, each also as a fraction of the floor (the requests a lock cannot
    /// avoid, timed alone on the same server). The real part starts its own ZooKeeper
    /// server (Java and Debian's zookeeper package), runs Kazoo with /usr/bin/python3
    /// (python3-kazoo) and Curator with Debian's jars (libcurator-recipes-java, compiled
    /// with javac from openjdk-17-jdk-headless); without them it is skipped with a notice
    /// saying what to install, except under CI=true, where that is an error.
    #[cfg(feature = "bench")]
    #[command(after_help = EXIT_STATUS)]
    Bench(BenchArgs),
    /// Left out of this build: zklock's cargo feature `bench` is off
    #[cfg(not(feature = "bench"))]
    #[command(hide = true, disable_help_flag = true)]
    Bench(Absent),
    /// List the recipes --recipe takes, and traces may record
    Recipes,
    /// Print shell completions: `completions bash`, written to /etc/bash_completion.d/ under
    /// the program's name
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// The arguments of a subcommand this build leaves out (its cargo feature is off), all
/// taken as they come, so that the subcommand is refused by name, not for a flag.
#[derive(Debug, Args)]
pub struct Absent {
    #[arg(
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        hide = true
    )]
    pub args: Vec<std::ffi::OsString>,
}

/// `K/N`: the K-th of N shards (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u64,
    pub count: u64,
}

fn parse_shard(v: &str) -> Result<Shard, String> {
    v.split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)))
        .filter(|&(k, n)| n >= 1 && (1..=n).contains(&k))
        .map(|(k, n)| Shard {
            index: k - 1,
            count: n,
        })
        .ok_or_else(|| format!("{v:?} is not K/N with 1 <= K <= N"))
}

fn parse_check_shard(v: &str) -> Result<zklock_checker::shard::Shard, String> {
    v.parse()
        .map_err(|e: zklock_checker::shard::ShardError| e.to_string())
}

#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// The recipe to run (the `recipes` subcommand lists them)
    #[arg(long, value_name = "NAME", default_value = SHIPPED_NAME)]
    pub recipe: String,
    /// Seeds in the range [default: 10000, a few seconds on two cores; with --for, as
    /// many as the time allows]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u64, 1, ANY>)]
    pub seeds: Option<u64>,
    /// Run for this long (wall clock): 10m, 90s, 1500ms, or a number of seconds, at most
    /// 30 days. Seeds from --seed-start on until the time is up (or --seeds have run);
    /// the seeds under way finish, and a sweep that ran out of time with every property
    /// held exits 0
    #[arg(long = "for", value_name = "D", conflicts_with = "time_limit_s")]
    pub for_: Option<String>,
    /// First seed
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "S",
        default_value_t = 0,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub seed_start: u64,
    // `clients`, `acquisitions` and `drop_every` are not among the shared scenario flags
    // (`ScenarioArgs`): check bounds its clients 1 to 4 and takes its sizes from its
    // bounds (`Bounds::default()`, a small search), not from the recipe's scenario, and
    // takes no --drop-every (it keeps the recipe's).
    /// Contending clients, 1 to 64 [default: the recipe's; 5 for most; the `recipes`
    /// subcommand names the others]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = count::<1, 64>)]
    pub clients: Option<u32>,
    /// Acquisitions per client [default: the recipe's; 20 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 1, ANY>)]
    pub acquisitions: Option<u32>,
    #[command(flatten)]
    pub scenario: crate::scenario_args::ScenarioArgs,
    /// Drop every N-th acquire of a client after a delay the chooser draws in 0..=20 ms,
    /// as tokio::time::timeout does (0: never) [default: the recipe's; 4 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, ANY>)]
    pub drop_every: Option<u32>,
    /// Where failing traces go (a trace already there is never replaced: the new one is
    /// written beside it, seed-N-2.json, unless --force)
    #[arg(long, value_name = "DIR", default_value = "traces/failures")]
    pub out: PathBuf,
    /// Worker threads [default: every core]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<usize, 1, ANY>)]
    pub threads: Option<usize>,
    /// Start no new seed after S seconds (wall clock)
    #[arg(long, allow_negative_numbers = true, value_name = "S", value_parser = whole::<u64, 0, ANY>)]
    pub time_limit_s: Option<u64>,
    /// Run only the seeds with seed % N == K-1, to spread a sweep over jobs
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Write the sweep's summary as JSON (merge shards with the `merge` subcommand); an existing
    /// file is refused unless --force
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// The scenario each seed runs in: swarm, each seed in one of its own drawn from the
    /// seed (a subset of the fault kinds at higher rates, fewer clients, longer holds);
    /// aimed, swarm with every fault aimed at one operation's requests in flight on half
    /// the seeds; pct, aimed with requests applied in an order of client priorities on
    /// half the seeds; coverage, aimed with half of each generation's seeds near a
    /// scenario whose run reached a new (recipe step, fault) pair; uniform, every seed in
    /// the scenario the flags give (docs/cli.md)
    #[arg(long, value_enum, value_name = "NAME", default_value = "aimed")]
    pub strategy: StrategyArg,
    /// The regressions file: seeds a sweep of this recipe and strategy found are recorded
    /// there and replayed first by every later sweep, as proptest's regressions files
    /// are [default: OUT/regressions.txt]. Commit it to keep its seeds
    #[arg(long, value_name = "FILE", conflicts_with = "no_regressions")]
    pub regressions: Option<PathBuf>,
    /// Neither replay nor record regression seeds
    #[arg(long)]
    pub no_regressions: bool,
    /// Do not shrink a failing trace
    #[arg(long)]
    pub no_shrink: bool,
    /// Replace existing files (the summary, a failing seed's trace and timeline)
    #[arg(long)]
    pub force: bool,
}

/// `--strategy`: [`zklock_checker::Strategy`] by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    Uniform,
    Swarm,
    Aimed,
    Pct,
    Coverage,
}

impl From<StrategyArg> for zklock_checker::Strategy {
    fn from(s: StrategyArg) -> Self {
        match s {
            StrategyArg::Uniform => zklock_checker::Strategy::Uniform,
            StrategyArg::Swarm => zklock_checker::Strategy::Swarm,
            StrategyArg::Aimed => zklock_checker::Strategy::Aimed,
            StrategyArg::Pct => zklock_checker::Strategy::Pct,
            StrategyArg::Coverage => zklock_checker::Strategy::Coverage,
        }
    }
}

/// A switch given as `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The recipe to check (the `recipes` subcommand lists them)
    #[arg(long, value_name = "NAME", default_value = SHIPPED_NAME)]
    pub recipe: String,
    // Explore's own `clients` and `acquisitions` default to the recipe's scenario and
    // take 1 to 64 clients: not shared (see `ExploreArgs`).
    /// Clients, 1 to 4 (the search grows fast)
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = count::<1, 4>, default_value_t = Bounds::default().clients)]
    pub clients: u32,
    /// Faults per schedule at most, 0 to 3
    #[arg(long, allow_negative_numbers = true, value_name = "K", default_value_t = Bounds::default().faults_max, value_parser = whole::<u32, 0, 3>)]
    pub faults_max: u32,
    /// Acquisitions per client
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = Bounds::default().acquisitions_per_client, value_parser = whole::<u32, 1, ANY>)]
    pub acquisitions: u32,
    #[command(flatten)]
    pub scenario: crate::scenario_args::ScenarioArgs,
    /// Schedules at most; past them the check is incomplete (exit status 3)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = Bounds::default().schedules_max, value_parser = whole::<u64, 0, ANY>)]
    pub schedules_max: u64,
    /// Wall time at most, in seconds; past it the check is incomplete (exit status 3)
    #[arg(long, allow_negative_numbers = true, value_name = "S", default_value_t = Bounds::default().time_limit_ms / 1000, value_parser = whole::<u64, 0, ANY>)]
    pub time_limit_s: u64,
    /// Do not prune revisited states
    #[arg(long)]
    pub no_prune: bool,
    /// Treat states that differ only by a permutation of clients of one role as one
    /// (symmetry reduction), for a recipe that declares itself symmetric; off searches
    /// every permutation
    #[arg(long, value_name = "ON|OFF", default_value = "on")]
    pub symmetry: OnOff,
    /// Treat states that differ only in what a recipe says it does not keep of a reply
    /// as one (the shipped lock keeps only its place in a listing); off tells apart
    /// everything the recipe was given
    #[arg(long, value_name = "ON|OFF", default_value = "on")]
    pub keep_only: OnOff,
    /// Run only one order of requests of different clients that commute (partial-order
    /// reduction by sleep sets): the same states, fewer schedules; not with --checkpoint
    #[arg(long, value_name = "ON|OFF", default_value = "off")]
    pub partial_order: OnOff,
    /// Threads searching at once, 1 to 1024 [default: every core; 1 with --partial-order
    /// on]. Any number reports the same verdict and violation; the
    /// schedule counts include work a thread did in vain and vary between runs
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = within::<usize, 1, { zklock_checker::limits::THREADS_MAX as u64 }>)]
    pub threads: Option<usize>,
    /// Virtual time each request takes, in microseconds, 0 to 1000000. At 0 the clock
    /// moves only to the next timer, once no request is ready, so schedules that differ
    /// only in how many requests came before a fault meet as one state; explore's
    /// simulation takes 100
    #[arg(long, allow_negative_numbers = true, value_name = "US", default_value_t = Bounds::default().request_time_us, value_parser = whole::<u64, 0, 1000000>)]
    pub request_time_us: u64,
    /// Where a violating schedule's trace goes (written beside an existing one unless
    /// --force)
    #[arg(long, value_name = "DIR", default_value = "traces/failures")]
    pub out: PathBuf,
    /// Replace an existing trace of the same name
    #[arg(long)]
    pub force: bool,
    /// Resume the check from FILE if it exists (a checkpoint of this very check, else
    /// refused), and write FILE when a limit or Ctrl-C stops the check before the end
    /// (replacing only the checkpoint it resumed from); on any number of threads
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Search only shard K of N of the check (1 <= K <= N <= 1024): the schedules whose
    /// first fault is of the i-th kind are shard i % N + 1's, those without a fault every
    /// shard's, so up to as many shards as fault kinds divide the work. Each shard writes
    /// --summary FILE; the `merge` subcommand combines them, green only when every
    /// shard completed. Not with --partial-order on
    #[arg(long, value_name = "K/N", value_parser = parse_check_shard)]
    pub shard: Option<zklock_checker::shard::Shard>,
    /// Write the shard's summary as JSON, for the `merge` subcommand (with --shard); an existing
    /// file is refused unless --force
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    #[command(flatten)]
    pub shape: crate::shape_args::ShapeArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace file (replayed with the recipe it recorded)
    pub trace: PathBuf,
    /// Also write the replayed run as a trace in this zklock's format, with the checker's
    /// report and its timelines (text and HTML) beside it; an existing file is refused
    /// unless --force. The trace's own file may be given, with --force, to bring it up
    /// to date.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Replace an existing --save file
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// The trace file
    pub trace: PathBuf,
    /// Where the page goes [default: TRACE with .timeline.html appended]; an existing
    /// file is refused unless --force
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing output file
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// The failing trace (shrunk with the recipe it recorded)
    pub trace: PathBuf,
    /// Where the shrunk trace goes [default: TRACE with the extension .min.json]; an
    /// existing file is refused unless --force
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Candidate runs at most
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = ShrinkLimits::default().runs_max, value_parser = whole::<u64, 0, ANY>)]
    pub runs_max: u64,
    /// Wall time at most, in seconds
    #[arg(long, allow_negative_numbers = true, value_name = "S", default_value_t = ShrinkLimits::default().time_limit_ms / 1000, value_parser = whole::<u64, 0, ANY>)]
    pub time_limit_s: u64,
    /// Seeds tried per smaller client or acquisition count (0: none)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = ShrinkLimits::default().fresh_seeds_max, value_parser = whole::<u64, 0, ANY>)]
    pub fresh_seeds: u64,
    /// Schedules of the exhaustive search of the smaller sizes (at most 3 clients x 2
    /// acquisitions, 1 fault; 0: none)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = ShrinkLimits::default().exhaustive_schedules_max, value_parser = whole::<u64, 0, ANY>)]
    pub exhaustive_schedules: u64,
    /// Replace an existing output file
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' summaries (explore --summary, or check --shard K/N --summary), each
    /// shard once
    #[arg(required = true, value_name = "SUMMARY")]
    pub summaries: Vec<PathBuf>,
}

#[cfg(feature = "real")]
#[derive(Debug, Args)]
pub struct RealArgs {
    // Real's `clients`, `drop_every` and `attempts` are not the simulation's
    // (`ScenarioArgs`): they size a run on real servers, with defaults from
    // `WorkloadConfig`; search's size one scripted run of a search, 1 to 8 clients.
    /// Contending clients, 1 to 64
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = count::<1, 64>, default_value_t = WorkloadConfig::default().clients)]
    pub clients: u32,
    /// Clients taking the read lock, the rest write
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().readers, value_parser = whole::<u32, 0, ANY>)]
    pub readers: u32,
    /// Clients that ask holders to give up instead of holding (the last N; each lists
    /// the lock's directory every half hold and asks the holder of one node), 0 to 63,
    /// fewer than --clients with --readers leaving a writer; zklock's lock only (--recipe
    /// zklock, --lock zklock): the run is judged by revocation_honored and
    /// revocation_only_given_up too (a holder gives up within 1000 ms)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().revokers, value_parser = whole::<u32, 0, 63>)]
    pub revokers: u32,
    /// How long the workload runs: 30s, 1500ms, 2m, or a number of seconds; at most 1 h
    #[arg(long, value_name = "D", default_value = "30s")]
    pub duration: String,
    /// Servers the run starts: 1 (standalone) to 7 (an ensemble; 3 or more can have
    /// its leader killed)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 1,
        value_parser = whole::<usize, 1, 7>,
    )]
    pub ensemble: usize,
    /// none, all, or a list of cut, lost-create, expire, black-hole, local-expire,
    /// pause, crash, kill-leader (all: every fault the setup can have)
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub faults: String,
    /// Someone else's servers, instead of starting them; the run works under
    /// /zklock/real-<ms> there, and removes it at its end
    #[arg(long, value_name = "HOST:PORT[,...]")]
    pub connect: Option<String>,
    /// How often the servers the run starts delete their empty container nodes, in ms, 1
    /// to 2147483647 (ZooKeeper's znode.container.checkIntervalMs; default: ZooKeeper's
    /// 60 s): short, a recipe's container directories (Curator's) vanish whenever empty
    #[arg(
        long,
        conflicts_with = "connect",
        allow_negative_numbers = true,
        value_name = "MS",
        value_parser = within::<u32, 1, 2_147_483_647>,
    )]
    pub container_check_interval_ms: Option<u32>,

    /// With --connect: remove what runs killed before their end left on those servers
    /// (every /zklock/real-* tree), and run nothing; not while another zklock real runs
    /// on them
    #[arg(long, requires = "connect")]
    pub clean: bool,
    /// The faults' seed [default: from the clock, printed]
    #[arg(long, allow_negative_numbers = true, value_name = "S", value_parser = whole::<u64, 0, ANY>)]
    pub seed: Option<u64>,
    /// Restart a killed leader (off: it stays down, as ZooKeeper 3.8.0 can keep an
    /// uncommitted transaction when it rejoins)
    #[arg(long)]
    pub restart_killed_leader: bool,
    /// How long a client waits for its first connection, in ms
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().connect_timeout_ms, value_parser = whole::<u64, 1, 3600000>)]
    pub connect_timeout_ms: u64,
    /// Client i starts its first attempt i × this after every session connected, in ms,
    /// so that the contenders queue in the order of their index (0: all at once)
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().start_stagger_ms, value_parser = whole::<u64, 0, 3600000>)]
    pub start_stagger_ms: u64,
    /// For a released library's lock: run the script this many times without a fault
    /// first, on the same driver processes (reset between), so that the judged run's
    /// drivers are warm, as a search's are; 0 to 10 (0: every driver starts cold)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        value_parser = whole::<u32, 0, 10>,
    )]
    pub warm_up_runs: u32,
    /// Start each client's acquires at the N-th of the mix of modes: 2 starts with the
    /// timed one
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().mix_offset, value_parser = whole::<u32, 0, ANY>)]
    pub mix_offset: u32,
    /// Where a failing run's timelines go (text and HTML)
    #[arg(long, value_name = "DIR", default_value = "traces/failures")]
    pub out: PathBuf,
    /// The lock under test: zklock (the shipped lock), or a released library's lock
    /// through its driver (docs/drivers.md): curator-mutex, curator-rw,
    /// curator-semaphore-mutex, kazoo-lock, kazoo-rw, kazoo-semaphore, zkclient-lock,
    /// zookeeper-writelock; or an election, each hold a term of leadership:
    /// kazoo-election, curator-leader-latch, curator-leader-selector, zookeeper-election. A
    /// comma-separated list mixes locks on one directory, assigned to the clients
    /// round-robin (client i takes the (i mod n)-th): only locks whose node names
    /// interoperate (zklock, curator-mutex, zkclient-lock; kazoo-lock with zklock)
    #[arg(long, value_name = "NAME[,NAME...]", default_value = "zklock")]
    pub lock: String,
    /// Allow a mix of locks whose node names do not interoperate, to show what happens
    #[arg(long)]
    pub allow_foreign_naming: bool,
    /// A scripted fault aimed at requests (repeatable, at most 64):
    /// CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]], e.g. 0:withhold-reply:delete:/zklock/lock/
    /// withholds the reply to client 0's first delete under that path and cuts its
    /// connection; ACTION withhold-reply, drop-request (never reaches the server), expire
    /// (dropped, and the session that sent it expired at the server), crash (dropped, the
    /// process crashed there), give-up (held a second while the client's caller gives up
    /// its acquire, then sent), pause or pause-DURATION (held, the process paused for twice
    /// the session timeout or DURATION), outage or outage-DURATION (dropped, and every
    /// server killed there and restarted on its data as long after, the sessions restored
    /// with fresh timeouts; servers the run started only), isolate or isolate-DURATION
    /// (dropped, and the session cut off for twice the session timeout or DURATION while
    /// the server is kept holding it: a library that declares its session lost on its own
    /// meanwhile leaves its nodes standing); OP create, delete, exists, get-data, set-data or
    /// get-children; NTH strikes the client's NTH matching request (default 1); REPEAT the
    /// next N matching requests, or every one for a window such as 3000ms
    #[arg(long, value_name = "C:ACTION:OP:PATH[:NTH[:REPEAT]]")]
    pub aim: Vec<String>,
    /// Each client's attempts, then it is done, and the run ends once every client is
    /// (--duration then bounds the run): a fixed script, as the `search` subcommand runs it
    /// (0: attempts go on for --duration)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        value_parser = whole::<u32, 0, ANY>,
    )]
    pub attempts: u32,
    /// The recipe to run, by the name the `recipes` subcommand gives it: zklock (the lock),
    /// semaphore (the counting semaphore of 2 leases, judged with semaphore_leases),
    /// queue or queue-naive (the work queue, judged with the queue's properties),
    /// election-latch (the leader latch, each hold a term, judged with the election's
    /// properties too), a canary (the run says which property it must violate), or one of
    /// this program's own (an unknown name lists them all)
    #[arg(long, value_name = "NAME", default_value = SHIPPED_NAME, conflicts_with = "lock")]
    pub recipe: String,
    /// Lock directories, 1 to 64: each acquisition takes the one the run's seed picks, and
    /// every property is judged per lock (1: the one lock)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().locks, value_parser = whole::<u32, 1, 64>)]
    pub locks: u32,
    /// How long past the run's end a blocking acquire may still wait before it is
    /// cancelled; in a work queue's run, how long past the heal and the last produce the
    /// consumers may take to complete every item before the run ends without them; in ms,
    /// at most an hour
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().drain_timeout_ms, value_parser = whole::<u64, 0, 3600000>)]
    pub drain_timeout_ms: u64,
    /// A work queue's run (--recipe queue, queue-naive or a queue canary): producers among
    /// the clients, 1 to clients - 1; the rest consume
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 1,
        value_parser = whole::<u32, 1, 63>,
    )]
    pub producers: u32,
    /// A work queue's run: items each producer adds, 1 to 10000, spread over the first
    /// half of --duration
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 20,
        value_parser = whole::<u32, 1, 10000>,
    )]
    pub items: u32,
    #[command(flatten)]
    pub workload: crate::workload_args::WorkloadArgs,
}

#[cfg(feature = "real")]
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The lock under search: zklock (the shipped lock), another recipe `real --recipe`
    /// runs (a work queue's aside), or a released library's lock through its driver:
    /// curator-mutex, curator-rw, curator-semaphore-mutex, kazoo-lock, kazoo-rw,
    /// kazoo-semaphore, zkclient-lock, zookeeper-writelock, kazoo-election,
    /// curator-leader-latch, curator-leader-selector, zookeeper-election
    #[arg(long, value_name = "NAME", default_value = "zklock")]
    pub lock: String,
    /// Contending clients, 1 to 8
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        value_parser = count::<1, 8>,
        default_value_t = 2
    )]
    pub clients: u32,
    /// Each client's attempts in the script, 1 to 32; their modes cycle blocking, try,
    /// timed, and every --drop-every-th a dropped (cancelled) acquire
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 4,
        value_parser = whole::<u32, 1, 32>,
    )]
    pub attempts: u32,
    /// Of the clients, how many take the read side (the first N; the rest write): for
    /// a lock with readers (zklock, kazoo-rw, curator-rw). 0: every client takes the
    /// exclusive (or write) lock. Default: 1 for a read/write lock (kazoo-rw,
    /// curator-rw), so that its script has both sides; 0 for the others
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, ANY>)]
    pub readers: Option<u32>,
    /// Of the clients, how many ask holders to give up instead of holding (the last N;
    /// each lists the lock's directory every half hold and asks the holder of one node,
    /// once for each attempt of each holder), 0 to 63: their requests are points too,
    /// and every run is judged by revocation_honored and revocation_only_given_up;
    /// zklock's lock only (--lock zklock). Default 0
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 0, value_parser = whole::<u32, 0, 63>)]
    pub revokers: u32,
    /// Points per run: 1 (single faults) or 2 (pairs, after dynamic reduction); 0: no
    /// point, the reference run and the workload shapes only
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "K",
        default_value_t = 1,
        value_parser = whole::<u32, 0, 2>,
    )]
    pub k: u32,
    /// The most points (and, at --k 2, pairs) queued; the rest are counted as left out
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 2_000,
        value_parser = whole::<usize, 0, ANY>,
    )]
    pub max_points: usize,
    /// The most new ordinals of one client's (operation, path class) a faulted run adds
    /// to the frontier, each with its points, and none more than N past the reference
    /// run's last of that kind; the rest count as seen and their points as left out (a
    /// library stuck polling sends a new one at every turn)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = zklock_search::frontier::FOLLOW_ON_REPEATS_MAX_DEFAULT,
        value_parser = whole::<u32, 0, ANY>,
    )]
    pub follow_on_repeats_max: u32,
    /// The N of the repeated points: a client's first N matching requests (0: none)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 4,
        value_parser = whole::<u32, 0, ANY>,
    )]
    pub repeat_next: u32,
    /// The window of the repeated points: every matching request for this long from the
    /// first, in ms (0: none)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "MS",
        default_value_t = 3_000,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub repeat_window_ms: u64,
    /// The actions tried at each request, comma-separated (default: every one but
    /// outage): drop-request, withhold-reply, expire, pause, crash, give-up, isolate (the
    /// session cut off for the pause's length while the server is kept holding it), and
    /// outage (every server killed at the request and restarted on its data after the
    /// pause's length, tried only when named); the repeated points come with drop-request
    /// and withhold-reply
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub actions: Vec<String>,
    /// The workload shapes run once each, without a fault, before the points,
    /// comma-separated (default: every one): timed-queue, fresh-objects,
    /// idle-after-give-up, long-holds, crowd; none for no shape. A shape the script has
    /// already (crowd at 5 clients or more) is not run: the reference run is that run
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// The longest a run may take, in ms (a run ends once its script is done; a
    /// blocking acquire still waiting three session timeouts past this is cancelled)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "MS",
        default_value_t = 30_000,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub run_limit_ms: u64,
    /// Where the violations' timelines go
    #[arg(long, value_name = "DIR", default_value = "traces/failures")]
    pub out: PathBuf,
    /// Runs at once, each on a ZooKeeper server of its own (0: eight per core, at most
    /// 16, for a released library's lock with its drivers kept; else four per core, at
    /// most 8)
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, ANY>, default_value_t = 0)]
    pub jobs: u32,
    /// Write each judged point's result to FILE as it is judged (JSON lines), so that a
    /// search stopped by Ctrl-C or --max-runs can go on with --resume
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Go on with the search --journal FILE saved: its reference run and every point it
    /// judged are taken from it, not run again; what follows is appended to it
    #[arg(long, requires = "journal")]
    pub resume: bool,
    /// Stop after this many runs of points (0: no limit), as Ctrl-C does: what ran is
    /// kept, and --resume goes on from there
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u64, 0, ANY>, default_value_t = 0)]
    pub max_runs: u64,
    /// A control run, the script without a fault, after every N runs of points (0:
    /// none; at most 100,000). A violation a fault-free run (the reference run or a
    /// control run) showed too, at the same attempts, is marked "as without a fault"
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        value_parser = whole::<u64, 0, 100_000>,
        default_value_t = zklock_search::fault_free::CONTROL_EVERY_DEFAULT
    )]
    pub control_every: u64,
    /// Start a driver process for every session, as the `real` subcommand does, every driver
    /// cold. By default a released library's driver process is kept for a later run
    /// (reset between, protocol 3): a quarter of the CPU, drivers warm as in a
    /// long-running application, and the violations' lines carry `--warm-up-runs 3`
    #[arg(long)]
    pub fresh_drivers: bool,
    /// How often the search's servers delete their empty container nodes, in ms, 1
    /// to 2147483647 (ZooKeeper's znode.container.checkIntervalMs; default: ZooKeeper's
    /// 60 s): short, a recipe's container directories (Curator's) vanish whenever empty
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "MS",
        value_parser = within::<u32, 1, 2_147_483_647>,
    )]
    pub container_check_interval_ms: Option<u32>,

    #[command(flatten)]
    pub export: crate::export_args::ExportFlags,
    #[command(flatten)]
    pub workload: crate::workload_args::WorkloadArgs,
}

#[cfg(feature = "real")]
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The journal of a finished search (`search --journal FILE`)
    #[arg(required_unless_present = "against")]
    pub journal: Option<PathBuf>,
    /// Run the export in DIR (its repro.py) against Kazoo's releases from the package
    /// registry instead, each installed with pip into a virtual environment cached under
    /// the drivers' cache directory, and say which fail
    #[arg(long, value_name = "DIR", conflicts_with_all = ["journal", "point"])]
    pub against: Option<PathBuf>,
    /// With --against: the releases, comma-separated (default: every one from 2.8.0 to
    /// the newest the registry serves)
    #[arg(
        long,
        value_name = "VERSION[,VERSION...]",
        value_delimiter = ',',
        requires = "against"
    )]
    pub versions: Vec<String>,
    /// Which of the journal's violating runs, counted from 1 in the journal's order
    /// (without it, the runs are listed)
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<usize, 1, ANY>)]
    pub point: Option<usize>,
    /// The directory the export goes in, as a new directory of its own (an existing one
    /// is refused)
    #[arg(long, value_name = "DIR", default_value = "findings")]
    pub to: PathBuf,
    #[command(flatten)]
    pub verify: crate::export_args::VerifyFlags,
}

#[cfg(feature = "bench")]
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Simulation seeds per sweep, all rounds together
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 2000,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub seeds: u64,
    /// Rounds the sweeps are split into, interleaved, 1 to 100
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 5,
        value_parser = whole::<u32, 1, 100>,
    )]
    pub sim_rounds: u32,
    /// Drop every N-th acquire, as the default workload does with 4 (0: none, the
    /// standard figures)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 0,
        value_parser = whole::<u32, 0, ANY>,
    )]
    pub sim_drop_every: u32,
    /// Time limit of each exhaustive configuration, in seconds
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "S",
        default_value_t = 60,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub exhaustive_limit_s: u64,
    /// Count the instructions per state of `check --clients N --faults-max 1 --threads
    /// 1` under valgrind's cachegrind (no hardware counters needed), 0 to 4 (0: not
    /// counted; 3 takes about a minute, 4 about half an hour)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 3,
        value_parser = whole::<u32, 0, 4>,
    )]
    pub instructions_clients: u32,
    /// Only the search figures: for every canary, the seeds and seconds each strategy
    /// (uniform, swarm) takes to its first failure, side by side (docs/figures.md)
    #[arg(long, conflicts_with_all = ["sim_only", "real_only"])]
    pub search: bool,
    /// With --search: starting seeds per canary and strategy, 1 to 1000
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 20,
        value_parser = whole::<u64, 1, 1000>,
    )]
    pub search_starts: u64,
    /// With --search: seeds a search runs at most before it counts as not caught
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 100_000,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub search_seeds: u64,
    /// With --search: each canary in its own scenario (own), or all in the default one
    /// (default), as a user's plain `explore` runs them
    #[arg(long, value_name = "own|default", default_value = "own", value_parser = ["own", "default"])]
    pub search_in: String,
    /// With --search: only these canaries, comma-separated [default: every canary]
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub search_recipes: Option<Vec<String>>,
    /// With --search: only these strategies, comma-separated, in the order given
    /// [default: every strategy]
    #[arg(long, value_enum, value_name = "NAME,...", value_delimiter = ',')]
    pub search_strategies: Option<Vec<StrategyArg>>,
    /// With --search: seeds of the shipped lock each strategy's per-core rate is measured on
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 2000,
        value_parser = whole::<u64, 0, ANY>,
    )]
    pub search_rate_seeds: u64,
    /// Only the simulation and exhaustive parts
    #[arg(long, conflicts_with = "real_only")]
    pub sim_only: bool,
    /// Only the real-ZooKeeper part
    #[arg(long)]
    pub real_only: bool,
    /// Measured seconds per real cell, all rounds together (0 < S <= 3600)
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "S",
        default_value_t = 3.0
    )]
    pub real_cell_s: f64,
    /// Rounds each real cell is split into, interleaved, 1 to 100
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        default_value_t = 3,
        value_parser = whole::<u32, 1, 100>,
    )]
    pub real_rounds: u32,
    /// Contending client counts, each 1 to 256
    #[arg(long, value_name = "N,N,...", default_value = "1,4,16")]
    pub real_clients: String,
    /// Locks to measure [default: all]: zklock (release_in_background), zklock-awaited
    /// (release().await), zookeeper-client, kazoo, curator
    #[arg(long, value_name = "L,L,...")]
    pub real_locks: Option<String>,
    /// Where the Rust clients are polled: reactor, on the thread of async-io's reactor
    /// (zookeeper-client's IO); tokio, by tokio's block_on, each reply crossing threads
    #[arg(long, value_name = "E", default_value = "reactor")]
    pub real_executor: String,
    /// Run the server on the JVM's quick JIT alone, as the test servers do (default: the
    /// optimizing JIT, as in production)
    #[arg(long)]
    pub real_quick_jit: bool,
    /// The server's forceSync setting(s) to measure on: on (every write fsynced before its
    /// reply, ZooKeeper's default), off (as test servers run), or both, one after the other
    #[arg(long, value_name = "on|off|both", default_value = "both")]
    pub real_force_sync: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_is_consistent() {
        command().debug_assert();
    }

    /// A user's binary on `main_with` has its own name: the help said "`zklock recipes`
    /// lists them" there. Every help text names a subcommand, not the program.
    #[test]
    fn no_help_text_names_the_program_zklock() {
        let mut cmd = command();
        let mut helps = vec![cmd.render_long_help().to_string()];
        for sub in cmd.get_subcommands_mut() {
            helps.push(sub.render_long_help().to_string());
        }
        assert!(helps.len() > 8);
        for help in helps {
            assert!(!help.contains("`zklock"), "{help}");
            assert!(!help.contains("zklock recipes"), "{help}");
        }
    }

    /// The help said `--ensemble 1|3` while 1 to 7 were accepted.
    #[cfg(feature = "real")]
    #[test]
    fn ensemble_help_names_the_range_the_check_accepts() {
        let max = zklock_real::harness::MAX_ENSEMBLE_SIZE;
        let mut cmd = command();
        let real = cmd.find_subcommand_mut("real").unwrap();
        let help = real.render_help().to_string();
        assert!(help.contains(&format!("1 (standalone) to {max}")), "{help}");
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;

    /// `--clients -3` said the range was `0..=4294967295`.
    #[test]
    fn a_negative_count_is_refused_in_the_words_of_its_range() {
        let err = Cli::try_parse_from(["zklock", "explore", "--clients", "-3"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("-3 is not a whole number from 1 to 64"),
            "{err}"
        );
        assert!(!err.contains("4294967295"), "{err}");
        let err = Cli::try_parse_from(["zklock", "check", "--clients", "-1"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("from 1 to 4"), "{err}");
        assert_eq!(count::<1, 64>("7"), Ok(7));
    }

    /// Every numeric flag of every subcommand refuses `-1` in the words of its own range:
    /// `--hold-ms -1` said `0..=18446744073709551615`, `--seeds -1` `0..=...` too.
    #[test]
    fn every_numeric_flag_refuses_a_negative_number_in_the_words_of_its_range() {
        let cmd = command();
        let mut tried = 0;
        for sub in cmd.get_subcommands() {
            for arg in sub.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                let numeric = arg
                    .get_value_names()
                    .is_some_and(|v| ["N", "MS", "S", "K", "US"].contains(&v[0].as_str()));
                if !numeric || !arg.get_action().takes_values() {
                    continue;
                }
                let flag = format!("--{long}");
                // A signed flag (--sequence-start) takes -1.
                let Err(err) = Cli::try_parse_from(["zklock", sub.get_name(), &flag, "-1"]) else {
                    continue;
                };
                let err = err.to_string();
                assert!(
                    err.contains("-1 is not a whole number"),
                    "{} {flag}: {err}",
                    sub.get_name()
                );
                assert!(
                    !err.contains("4294967295") && !err.contains("18446744073709551615"),
                    "{err}"
                );
                tried += 1;
            }
        }
        assert!(tried >= 30, "only {tried} numeric flags found");
        let err = Cli::try_parse_from(["zklock", "explore", "--hold-ms", "-1"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("-1 is not a whole number from 0 to 3600000"),
            "{err}"
        );
        let err = Cli::try_parse_from(["zklock", "explore", "--seeds", "x"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("x is not a whole number, 1 or more"), "{err}");
    }
}
