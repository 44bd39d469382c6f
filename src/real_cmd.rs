//! `zklock real`: the shipped recipe and the simulation's workload on real ZooKeeper
//! servers, with faults until a heal time, checked by the same checker.

use crate::Status;
use crate::cli::RealArgs;
use crate::explore::parse_duration_ms;
use crate::files::create_private_dir;
use crate::given::Given;
use crate::program::Program;
use crate::real_recipes::{QueueShape, RealPick, RealRecipes};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zklock_checker::concurrent::{CONCURRENCY_TOLERANCE_US, Judged};
use zklock_checker::exercised::Exercised;
use zklock_checker::timeline::{render_history_html, render_marked_timeline};
use zklock_checker::trace::SavedReport;
use zklock_real::ZkClient;
use zklock_real::driver::mixed::{LockName, MixedRecipe, check_mix, describe_mix};
use zklock_real::driver::pool::DriverPool;
use zklock_real::driver::{DriverKind, DriverRecipe};
use zklock_real::faults::{FaultConfig, FaultSet, RealFault};
use zklock_real::harness::{self, MAX_ENSEMBLE_SIZE, ServerOptions};
use zklock_real::plan::{
    AimedAction, AimedFault, BURST_CUTS_DEFAULT, BURST_CUTS_MAX, Repeat, op::by_name as op_by_name,
};
use zklock_real::servers::Servers;
use zklock_real::workload::queue::queue_paths;
use zklock_real::workload::{MAX_DURATION_MS, QueueWorkload, RealRun, WorkloadConfig, run_recipe};
use zklock_recipe::{Coordination, ZkError};
use zklock_search::judge::{judge, stuck_client_requests};

/// Faults stop at this fraction of the run (numerator, denominator), leaving the rest to
/// judge liveness.
const HEAL_FRACTION: (u64, u64) = (2, 3);
/// The first fault comes no earlier than this, nor later than a quarter of the heal time.
const FAULT_START_MS: u64 = 1_000;

mod closed;

/// Everything `zklock real` was asked for.
#[derive(Debug)]
struct RealOptions {
    workload: WorkloadConfig,
    faults: FaultConfig,
    /// Servers the harness starts (1: standalone); ignored with `connect`.
    ensemble_size: usize,
    /// The harness's servers' container check interval (`None`: ZooKeeper's).
    container_check_interval_ms: Option<u32>,
    /// Someone else's servers, instead of the harness's.
    connect: Option<String>,
    /// On `connect`'s servers, the tree this run works under, removed at its end.
    run_root: Option<String>,
    /// Where a failing run's timeline goes.
    out_dir: PathBuf,
    /// A released library's lock, through its driver; None: `recipe`.
    driver: Option<DriverKind>,
    /// The recipe to run (without a driver): zklock's, or the program's own.
    recipe: RealPick,
    /// A mix of locks on one directory, client i on the (i mod n)-th (`--lock A,B,...`).
    mix: Option<Vec<LockName>>,
    allow_foreign_naming: bool,
    /// A work queue's roles and item count (used by a queue's run only).
    queue: QueueShape,
    /// Fault-free runs of the script on the drivers before the judged run (`--warm-up-runs`).
    warm_up_runs: u32,
}

/// The most warm-up runs `--warm-up-runs` takes.
const WARM_UP_RUNS_MAX: u32 = 10;

fn parse(a: RealArgs, given: &Given, recipes: &RealRecipes) -> Result<RealOptions> {
    let mut workload = workload_of(&a)?;
    let mut faults = faults_of(&a)?;
    let faults_given = a.faults != "all";
    // Each acquisition's lock comes from the run's seed, as its faults do.
    workload.lock_seed = faults.seed;
    let recipe = recipes
        .parse(&a.recipe)
        .map_err(|e| anyhow::anyhow!("--recipe: {e}"))?;
    let queue = QueueShape {
        producers: a.producers,
        items_per_producer: a.items,
    };
    refuse_queue_shape(&recipe, &queue, &workload)?;
    if workload.readers > 0 && !recipe.has_readers() {
        bail!("--readers: the {recipe} recipe has no read side");
    }
    if workload.revokers > 0 && (a.lock != "zklock" || !recipe.is_revocable()) {
        bail!(
            "--revokers: only zklock's lock can be asked to give up (--recipe zklock, --lock \
             zklock); this run's is --recipe {recipe}, --lock {}",
            a.lock
        );
    }
    let mix = parse_mix(&a.lock, a.allow_foreign_naming)?;
    refuse_inapplicable(&a, given, &recipe, mix.is_some(), &faults.faults)?;
    let driver = driver_of(&a, &workload, mix.as_deref())?;
    if a.aim.len() > MAX_AIMED {
        bail!(
            "--aim: at most {MAX_AIMED} aimed faults, got {}",
            a.aim.len()
        );
    }
    // Longer than the session timeout: the server expires the session in the pause.
    let default_pause_ms = workload.session_timeout_ms.saturating_mul(2);
    for spec in &a.aim {
        faults
            .aimed
            .push(parse_aim(spec, workload.clients, default_pause_ms)?);
    }
    // Where a failing run's timelines go, checked before any server starts.
    crate::files::check_out_dir("--out", &a.out)?;
    let (ensemble_size, connect, out_dir) = (a.ensemble, a.connect, a.out);
    if !(1..=MAX_ENSEMBLE_SIZE).contains(&ensemble_size) {
        bail!("--ensemble must be 1 to {MAX_ENSEMBLE_SIZE}, got {ensemble_size}");
    }
    if workload.duration_ms == 0 || workload.duration_ms > MAX_DURATION_MS {
        bail!(
            "--duration must be positive and at most {} s",
            MAX_DURATION_MS / 1000
        );
    }
    let leader_killable = connect.is_none() && ensemble_size >= 3;
    if faults.faults.contains(RealFault::KillLeader) && !leader_killable {
        if faults_given && faults.faults != FaultSet::all() {
            bail!(
                "--faults kill-leader needs an ensemble the run starts itself: --ensemble 3 \
                 (and no --connect)"
            );
        }
        // `all` means every fault this setup can have.
        faults.faults.remove(RealFault::KillLeader);
    }
    let run_root = match &connect {
        Some(c) => Some(run_root_on(c, &mut workload)?),
        None => None,
    };
    // Bounded first, so that the arithmetic below cannot overflow.
    workload.validate().map_err(anyhow::Error::new)?;
    faults.heal_ms = workload.duration_ms * HEAL_FRACTION.0 / HEAL_FRACTION.1;
    faults.start_ms = FAULT_START_MS.min(faults.heal_ms / 4);
    // Some black holes and pauses outlast the session (the server expires it), most do not.
    faults.black_hole_ms_max = workload.session_timeout_ms * 2;
    faults.pause_ms_max = workload.session_timeout_ms * 2;
    workload.validate().map_err(anyhow::Error::new)?;
    Ok(RealOptions {
        workload,
        faults,
        ensemble_size,
        container_check_interval_ms: a.container_check_interval_ms,
        connect,
        run_root,
        out_dir,
        driver,
        recipe,
        mix,
        allow_foreign_naming: a.allow_foreign_naming,
        queue,
        warm_up_runs: a.warm_up_runs,
    })
}

/// The workload's configuration from the flags; validated by the caller once the rest
/// of the run is known.
fn workload_of(a: &RealArgs) -> Result<WorkloadConfig> {
    Ok(a.workload.apply(WorkloadConfig {
        clients: a.clients,
        readers: a.readers,
        revokers: a.revokers,
        duration_ms: parse_duration_ms("--duration", &a.duration)?,
        start_stagger_ms: a.start_stagger_ms,
        mix_offset: a.mix_offset,
        drain_timeout_ms: a.drain_timeout_ms,
        connect_timeout_ms: a.connect_timeout_ms,
        locks: a.locks,
        attempts_per_client: a.attempts,
        ..WorkloadConfig::default()
    }))
}

/// The faults from the flags; their times are set once the run's duration is known.
fn faults_of(a: &RealArgs) -> Result<FaultConfig> {
    Ok(FaultConfig {
        faults: a
            .faults
            .parse()
            .map_err(|e: String| anyhow::anyhow!("--faults: {e}"))?,
        seed: a.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        }),
        restart_killed_leader: a.restart_killed_leader,
        // Every client behind its proxies, even without a fault: they see each node's
        // life, which `node_outlives_attempt` judges.
        record_requests: true,
        ..FaultConfig::default()
    })
}

/// Refuses a work queue's roles that its clients cannot fill, and a queue run on more
/// than one lock directory.
fn refuse_queue_shape(
    recipe: &RealPick,
    queue: &QueueShape,
    workload: &WorkloadConfig,
) -> Result<()> {
    if recipe.is_queue() {
        let spec = QueueWorkload {
            producers: queue.producers,
            items_per_producer: queue.items_per_producer,
            ..QueueWorkload::herd_free()
        };
        spec.validate(workload.clients)
            .map_err(|e| anyhow::anyhow!("--producers/--items/--clients: {e}"))?;
        if workload.locks > 1 {
            bail!("--locks: a work queue's run has one queue");
        }
    }
    Ok(())
}

/// The released library's driver `--lock` names (None: zklock's own lock, or a mix),
/// with the flags it cannot take refused.
fn driver_of(
    a: &RealArgs,
    workload: &WorkloadConfig,
    mix: Option<&[LockName]>,
) -> Result<Option<DriverKind>> {
    if mix.is_some() && workload.readers > 0 {
        bail!("--readers: a mix of locks has no read side (its locks are exclusive)");
    }
    let single = match mix {
        Some(_) => "zklock",
        None => a.lock.split(',').next().unwrap_or_default(),
    };
    let driver = match single {
        "zklock" => None,
        name => {
            Some(DriverKind::parse(name).map_err(|e| anyhow::anyhow!("--lock: {e}, or zklock"))?)
        }
    };
    if let Some(kind) = driver
        && workload.readers > 0
        && !kind.has_readers()
    {
        bail!("--readers: the lock {kind} has no read side (curator-rw and kazoo-rw have)");
    }
    if a.warm_up_runs > WARM_UP_RUNS_MAX {
        bail!(
            "--warm-up-runs: 0 to {WARM_UP_RUNS_MAX}, got {}",
            a.warm_up_runs
        );
    }
    if a.warm_up_runs > 0 && driver.is_none() {
        bail!(
            "--warm-up-runs: warms a released library's driver processes (--lock NAME); \
             zklock's own lock runs in this process"
        );
    }
    if (driver.is_some() || mix.is_some()) && workload.locks > 1 {
        bail!(
            "--locks: a library's driver runs one lock directory; --locks takes zklock's recipes"
        );
    }
    Ok(driver)
}

/// On someone else's servers (`--connect`), which may hold earlier runs' nodes: a fresh
/// directory for this run, its lock under it.
fn run_root_on(connect: &str, workload: &mut WorkloadConfig) -> Result<String> {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    workload.lock_path = format!("{RUN_ROOT_PREFIX}{stamp}/lock");
    if connect.trim().is_empty() {
        bail!("--connect needs HOST:PORT[,HOST:PORT...]");
    }
    Ok(format!("{RUN_ROOT_PREFIX}{stamp}"))
}

/// Refuses the flags given that this run would ignore: a work queue's flags on a lock,
/// a lock's on a work queue, a mix's without one, a started ensemble's with --connect.
fn refuse_inapplicable(
    a: &RealArgs,
    given: &Given,
    recipe: &RealPick,
    mixed: bool,
    faults: &FaultSet,
) -> Result<()> {
    let driver = a.lock != "zklock" && !mixed;
    if driver || mixed || !recipe.is_queue() {
        let what = if driver || mixed {
            format!("--lock {}", a.lock)
        } else {
            format!("the {recipe} recipe")
        };
        given.refuse(
            &["producers", "items"],
            &what,
            "only a work queue's run has producers and items (--recipe queue, queue-naive or \
             a queue canary)",
        )?;
    } else {
        given.refuse(
            &[
                "drop_every",
                "mix_offset",
                "acquire_timeout_ms",
                "idle_after_give_up_ms",
                "start_stagger_ms",
                "long_hold_every",
                "long_hold_ms",
                "fresh_lock_every",
            ],
            &format!("the work queue {recipe}"),
            "its clients produce and consume items, they make no acquire attempts",
        )?;
    }
    if !mixed {
        given.refuse(
            &["allow_foreign_naming"],
            &format!("--lock {}", a.lock),
            "it allows a mix of locks (--lock A,B), and this is one lock",
        )?;
    }
    if a.connect.is_some() {
        given.refuse(
            &["ensemble"],
            "a run on --connect's servers",
            "--ensemble sets the servers the run starts itself",
        )?;
    }
    // `all` drops kill-leader where the setup has no leader to kill.
    let leader_killed =
        faults.contains(RealFault::KillLeader) && a.connect.is_none() && a.ensemble >= 3;
    if !leader_killed {
        given.refuse(
            &["restart_killed_leader"],
            "a run that kills no leader",
            "it restarts a leader the kill-leader fault killed (--faults kill-leader or all, \
             with --ensemble 3 or more)",
        )?;
    }
    Ok(())
}

/// `--lock A,B,...`: the mix, checked (see `zklock_real::driver::mixed`); None for one
/// lock (a list naming one lock only is that lock).
fn parse_mix(list: &str, allow_foreign: bool) -> Result<Option<Vec<LockName>>> {
    if !list.contains(',') {
        return Ok(None);
    }
    let mut locks = Vec::new();
    for name in list.split(',') {
        let lock =
            LockName::parse(name.trim()).map_err(|e| anyhow::anyhow!("--lock: {e}, or zklock"))?;
        locks.push(lock);
    }
    if locks.iter().all(|&l| l == locks[0]) {
        return Ok(None);
    }
    check_mix(&locks, allow_foreign).map_err(|e| anyhow::anyhow!("--lock: {e}"))?;
    Ok(Some(locks))
}

/// The most `--aim` faults a run takes.
const MAX_AIMED: usize = 64;

/// `CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]]`, see `--aim`; a pause without a duration
/// lasts `default_pause_ms`.
pub(crate) fn parse_aim(
    spec: &str,
    clients: u32,
    default_pause_ms: u64,
) -> Result<(u32, AimedFault)> {
    let usage = "--aim takes CLIENT:ACTION:OP:PATH[:NTH[:REPEAT]], e.g. \
                 0:withhold-reply:delete:/zklock/lock/ or 1:drop-request:delete:/zklock/lock/:2:3000ms";
    let mut parts = spec.splitn(4, ':');
    let (Some(client), Some(action), Some(op), Some(rest)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("{usage}; got {spec:?}");
    };
    let client: u32 = client
        .parse()
        .ok()
        .filter(|&c| c < clients)
        .with_context(|| format!("--aim {spec:?}: the client must be 0 to {}", clients - 1))?;
    let action = match action {
        "withhold-reply" => AimedAction::WithholdReply,
        "drop-request" => AimedAction::DropRequest,
        "expire" => AimedAction::Expire,
        "crash" => AimedAction::Crash,
        "give-up" => AimedAction::GiveUp,
        "pause" => AimedAction::Pause {
            pause_ms: default_pause_ms,
        },
        "outage" => AimedAction::Outage {
            down_ms: default_pause_ms,
        },
        "isolate" => AimedAction::Isolate {
            isolated_ms: default_pause_ms,
        },
        "burst" => AimedAction::Burst {
            cuts: BURST_CUTS_DEFAULT,
        },
        other => {
            let timed = |prefix: &str| {
                (other.strip_prefix(prefix))
                    .map(|d| parse_duration_ms("--aim's duration", d))
                    .and_then(Result::ok)
                    .filter(|ms| (1..=MAX_DURATION_MS).contains(ms))
            };
            let cuts = (other.strip_prefix("burst-"))
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| (1..=BURST_CUTS_MAX).contains(n));
            match (timed("pause-"), timed("outage-"), timed("isolate-"), cuts) {
                (Some(pause_ms), ..) => AimedAction::Pause { pause_ms },
                (_, Some(down_ms), ..) => AimedAction::Outage { down_ms },
                (_, _, Some(isolated_ms), _) => AimedAction::Isolate { isolated_ms },
                (.., Some(cuts)) => AimedAction::Burst { cuts },
                _ => bail!(
                    "--aim {spec:?}: unknown action {other:?} (withhold-reply, drop-request, \
                     expire, crash, give-up, pause, pause-DURATION such as pause-9000ms, \
                     outage, outage-DURATION, isolate or isolate-DURATION, each at most an \
                     hour, burst or burst-N, N 1 to {BURST_CUTS_MAX})"
                ),
            }
        }
    };
    let ops = op_by_name(op).with_context(|| {
        format!(
            "--aim {spec:?}: unknown operation {op:?} (create, delete, exists, get-data, \
             set-data, get-children)"
        )
    })?;
    // Trailing fields are numbers (NTH) or a count or duration (REPEAT); a path may hold
    // colons of its own.
    let mut fields: Vec<&str> = rest.split(':').collect();
    let mut tail = Vec::new();
    while fields.len() > 1 && tail.len() < 2 {
        let last = fields[fields.len() - 1];
        if last.is_empty()
            || !last
                .trim_end_matches("ms")
                .chars()
                .all(|c| c.is_ascii_digit())
        {
            break;
        }
        tail.insert(0, last);
        fields.pop();
    }
    let under = fields.join(":");
    if !under.starts_with('/') || under.len() > 1_024 {
        bail!("--aim {spec:?}: the path must start with / and be at most 1,024 bytes");
    }
    let mut fault = AimedFault::new(ops, under, action);
    if let Some(nth) = tail.first() {
        let nth: u32 = nth
            .parse()
            .ok()
            .filter(|&n| (1..=MAX_AIM_NTH).contains(&n))
            .with_context(|| format!("--aim {spec:?}: NTH must be 1 to {MAX_AIM_NTH}"))?;
        fault.skip = nth - 1;
    }
    if let Some(repeat) = tail.get(1) {
        fault.repeat = match repeat.strip_suffix("ms") {
            Some(ms) => match ms.parse::<u64>() {
                Ok(ms) if (1..=MAX_DURATION_MS).contains(&ms) => Repeat::WindowMs(ms),
                _ => bail!("--aim {spec:?}: a window must be 1 to {MAX_DURATION_MS} ms"),
            },
            None => match repeat.parse::<u32>() {
                Ok(n) if (1..=MAX_AIM_NTH).contains(&n) => Repeat::Next(n),
                _ => bail!(
                    "--aim {spec:?}: REPEAT must be 1 to {MAX_AIM_NTH} requests, or a window such as 3000ms"
                ),
            },
        };
    }
    Ok((client, fault))
}

/// The highest ordinal (NTH) and repeat count an `--aim` takes.
const MAX_AIM_NTH: u32 = 100_000;

/// Where a run on someone else's servers works: `/zklock/real-<ms since the epoch>`.
const RUN_ROOT_PREFIX: &str = "/zklock/real-";

/// The most times a removal looks again at a node that gained children meanwhile.
const REMOVE_RETRIES_MAX: u32 = 100;

/// Removes the tree at `path`, children first, as far as it exists; the count of nodes
/// removed.
async fn remove_tree(zk: &ZkClient, path: &str) -> Result<u64, ZkError> {
    // An explicit stack: async recursion would need boxing.
    let (mut removed, mut retries) = (0, 0);
    let mut stack = vec![(path.to_owned(), false)];
    while let Some((p, expanded)) = stack.pop() {
        if !expanded {
            match zk.get_children(&p).await {
                Ok(children) => {
                    stack.push((p.clone(), true));
                    for c in children.iter() {
                        stack.push((format!("{p}/{c}"), false));
                    }
                }
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        match zk.delete(&p, None).await {
            Ok(()) => removed += 1,
            Err(ZkError::NoNode) => {}
            // A child created since the listing (a client's session still at work).
            Err(ZkError::NotEmpty) if retries < REMOVE_RETRIES_MAX => {
                retries += 1;
                stack.push((p, false));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// Removes the trees under `/zklock` named by `which` on `connect`'s servers, through a
/// session of zklock's own; what it removed, in words.
async fn remove_runs(
    connect: &str,
    w: &WorkloadConfig,
    which: impl Fn(&str) -> bool,
) -> Result<Vec<String>> {
    let zk = ZkClient::connect(connect, w.session_timeout_ms, w.connect_timeout_ms)
        .await
        .map_err(anyhow::Error::new)?;
    let parent = RUN_ROOT_PREFIX.rsplit_once('/').map_or("/", |(p, _)| p);
    let names = match zk.get_children(parent).await {
        Ok(c) => c.iter().map(str::to_owned).collect(),
        Err(ZkError::NoNode) => Vec::new(),
        Err(e) => bail!("listing {parent} on {connect}: {e}"),
    };
    let mut done = Vec::new();
    for name in names {
        let path = format!("{parent}/{name}");
        if !path.starts_with(RUN_ROOT_PREFIX) || !which(&path) {
            continue;
        }
        let n = remove_tree(&zk, &path)
            .await
            .map_err(|e| anyhow::anyhow!("removing {path} on {connect}: {e}"))?;
        done.push(format!("{path} ({n} nodes)"));
    }
    Ok(done)
}

pub fn run(a: RealArgs, given: &Given, program: &Program, recipes: &RealRecipes) -> Result<Status> {
    if a.clean {
        return clean(a, given);
    }
    let opts = parse(a, given, recipes)?;
    if let Some(c) = &opts.connect {
        closed::refuse_if_closed(c, opts.workload.connect_timeout_ms)?;
    }
    // Located (and built, the first time) before any server starts.
    let driver = match opts.driver {
        Some(kind) => Some(DriverRecipe::prepare(kind).map_err(anyhow::Error::new)?),
        None => None,
    };
    let mixed = match &opts.mix {
        Some(locks) => Some(
            MixedRecipe::prepare(locks.clone(), opts.allow_foreign_naming)
                .map_err(anyhow::Error::new)?,
        ),
        None => None,
    };
    let servers = start_servers(&opts)?;
    print_plan(&opts, driver.as_ref(), mixed.is_some(), &servers);
    let mut workload = opts.workload.clone();
    workload.interrupt = Some(crate::interrupt::for_real_run());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    // The warm-up runs before the judged run's clock.
    let (driver, servers) = match driver {
        Some(recipe) if opts.warm_up_runs > 0 => {
            let pool = Arc::new(DriverPool::default());
            let servers = warm_up(
                &runtime,
                servers,
                &workload,
                &recipe,
                &pool,
                opts.warm_up_runs,
            )?;
            (Some(recipe.with_pool(pool)), servers)
        }
        other => (other, servers),
    };
    let started = Instant::now();
    let mut status = driver.as_ref().map(DriverRecipe::status);
    if let Some(m) = &mixed {
        outln!("{}", mix_line(m.locks(), opts.workload.clients));
        status = m.status();
    }
    let run = match (driver, mixed) {
        (_, Some(mix)) => runtime.block_on(run_recipe(servers, &workload, &opts.faults, mix)),
        (Some(recipe), None) => {
            runtime.block_on(run_recipe(servers, &workload, &opts.faults, recipe))
        }
        (None, None) => {
            runtime.block_on(
                opts.recipe
                    .run(servers, &workload, &opts.faults, &opts.queue),
            )
        }
    }
    .map_err(anyhow::Error::new)?;
    let elapsed = started.elapsed();
    if let Some(status) = &status {
        if let Some(hello) = status.hello() {
            outln!("driver: {hello}");
        }
        // A driver that broke the protocol leaves no verdict to trust. (One whose library
        // hangs is judged: the run gives its call up, and the checker reports it stuck.)
        if let Some(why) = status.failure() {
            drop(run);
            runtime.shutdown_timeout(Duration::from_secs(1));
            bail!("the run's driver failed: {why}");
        }
    }
    let status = report(&run, &opts, elapsed)?;
    // Stop the servers (dropping them) while the runtime still runs their clients' tasks.
    drop(run);
    remove_run_root(&runtime, &opts, program);
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(status)
}

/// The servers the run works on: someone else's (`--connect`), or the harness's.
fn start_servers(opts: &RealOptions) -> Result<Servers> {
    Ok(match &opts.connect {
        Some(c) => Servers::External {
            connect_string: c.clone(),
        },
        None => {
            harness::availability().map_err(anyhow::Error::new)?;
            let what = if opts.ensemble_size == 1 {
                "a ZooKeeper server".to_owned()
            } else {
                format!("a ZooKeeper ensemble of {}", opts.ensemble_size)
            };
            eprintln!("starting {what}...");
            let options = match opts.container_check_interval_ms {
                Some(ms) => ServerOptions::default().with_container_check_interval_ms(ms),
                None => ServerOptions::default(),
            };
            Servers::start(opts.ensemble_size, options)
                .with_context(|| format!("starting {what}"))?
        }
    })
}

/// The lines that say what the run is about to do.
fn print_plan(opts: &RealOptions, driver: Option<&DriverRecipe>, mixed: bool, servers: &Servers) {
    let w = &opts.workload;
    if let (None, Some(property)) = (driver, opts.recipe.must_violate()) {
        outln!(
            "canary {}: a known bug; the run catches it if it violates {property}",
            opts.recipe
        );
    }
    if opts.recipe.is_queue() && driver.is_none() {
        let paths = queue_paths(&w.lock_path);
        outln!(
            "zklock real: {} {} clients for at least {} ms on {}, faults {} from {} until {} \
             ms, seed {}",
            opts.recipe,
            w.clients,
            w.duration_ms,
            describe(servers),
            opts.faults.faults,
            opts.faults.start_ms,
            opts.faults.heal_ms,
            opts.faults.seed,
        );
        outln!(
            "queue: {} producer(s) of {} items each, spread over the first half of the run, \
             and {} consumers, on {} (item locks in {}); the run ends once every item is \
             completed after the heal, or --drain-timeout-ms after the heal and the last \
             produce",
            opts.queue.producers,
            opts.queue.items_per_producer,
            w.clients - opts.queue.producers,
            paths.queue,
            paths.locks
        );
    } else {
        outln!(
            "zklock real: {} {} clients ({} readers{}) for {} ms on {} (lock {}), faults {} \
             from {} until {} ms, seed {}, --drop-every {} --mix-offset {} --acquire-timeout-ms {}",
            match (mixed, driver) {
                (true, _) => "mixed".to_owned(),
                (false, d) => d.map_or(opts.recipe.name(), |d| d.kind().name()).to_owned(),
            },
            w.clients,
            w.readers,
            match w.revokers {
                0 => String::new(),
                n => format!(
                    ", {n} revokers: a holder gives up within {} ms",
                    w.revoke_bound_ms
                ),
            },
            w.duration_ms,
            describe(servers),
            match w.lock_paths().as_slice() {
                [one] => one.clone(),
                [first, .., last] => format!("{first} to {last}, by the seed"),
                [] => String::new(),
            },
            opts.faults.faults,
            opts.faults.start_ms,
            opts.faults.heal_ms,
            opts.faults.seed,
            w.drop_every,
            w.mix_offset,
            w.acquire_timeout_ms
        );
    }
}

/// What the run created on someone else's servers goes, interrupted or not; a failure
/// to remove it changes no verdict, and says how to remove it later.
fn remove_run_root(runtime: &tokio::runtime::Runtime, opts: &RealOptions, program: &Program) {
    if let (Some(connect), Some(root)) = (&opts.connect, &opts.run_root) {
        let removed =
            runtime.block_on(remove_runs(connect, &opts.workload, |p| p == root.as_str()));
        match removed {
            Ok(done) if done.is_empty() => {}
            Ok(done) => outln!("removed from {connect}: {}", done.join(", ")),
            Err(e) => eprintln!(
                "warning: {e:#}; `{}` removes it later",
                program.line(&format!("real --connect {connect} --clean"))
            ),
        }
    }
}

/// `--warm-up-runs`: `runs` fault-free runs of the script on drivers of `recipe`'s kind,
/// kept in `pool` between them, under a lock path of their own (removed after); the
/// servers back, with every kept process reset, for the judged run.
fn warm_up(
    runtime: &tokio::runtime::Runtime,
    mut servers: Servers,
    workload: &WorkloadConfig,
    recipe: &DriverRecipe,
    pool: &Arc<DriverPool>,
    runs: u32,
) -> Result<Servers> {
    let mut warm = workload.clone();
    warm.lock_path = format!("{}-warm-up", workload.lock_path);
    eprintln!(
        "warming the drivers up: {runs} fault-free run(s) under {}...",
        warm.lock_path
    );
    for _ in 0..runs {
        let drivers = DriverRecipe::prepare(recipe.kind())
            .map_err(anyhow::Error::new)?
            .with_pool(Arc::clone(pool));
        let status = drivers.status();
        let run = runtime
            .block_on(run_recipe(servers, &warm, &FaultConfig::default(), drivers))
            .map_err(anyhow::Error::new)?;
        if let Some(why) = status.failure() {
            bail!("a warm-up run's driver failed: {why}");
        }
        let RealRun { servers: back, .. } = run;
        servers = back;
    }
    let connect = servers.connect_string();
    runtime
        .block_on(harness::delete_tree(
            &connect,
            &warm.lock_path,
            WARM_UP_CLEAR_TIMEOUT,
        ))
        .map_err(anyhow::Error::new)
        .context("removing the warm-up runs' lock directory")?;
    // The processes are reset in the background: the judged run takes them once every
    // reset is answered.
    let deadline = Instant::now() + WARM_UP_CLEAR_TIMEOUT;
    while pool.resetting() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("warm: {} driver process(es) kept for the run", pool.idle());
    Ok(servers)
}

/// How long removing the warm-up's directory, or its drivers' resets, may take: only a
/// hang reaches it.
const WARM_UP_CLEAR_TIMEOUT: Duration = Duration::from_secs(60);

/// A real run's exit status: a violation fails it; a run interrupted, or one that
/// checked nothing (no acquisition, no item completed: [`Exercised::verdict`], the rule
/// every entry point judges by), held nothing and is inconclusive.
fn verdict(ok: bool, interrupted: bool, exercised: &Exercised) -> Status {
    match (ok, interrupted, exercised.verdict()) {
        (false, _, _) => Status::Violated,
        (true, true, _) | (true, false, Err(_)) => Status::Inconclusive,
        (true, false, Ok(())) => Status::Held,
    }
}

/// `zklock real --connect SERVERS --clean`: removes every `/zklock/real-*` tree there,
/// left by runs killed before their end, and runs nothing.
fn clean(a: RealArgs, given: &Given) -> Result<Status> {
    given.refuse(
        &[
            "clients",
            "readers",
            "duration",
            "ensemble",
            "faults",
            "seed",
            "lock",
            "recipe",
            "locks",
            "aim",
            "producers",
            "items",
        ],
        "--clean",
        "it removes what killed runs left, and runs nothing",
    )?;
    let connect = a.connect.clone().context("--clean needs --connect")?;
    let w = WorkloadConfig {
        session_timeout_ms: a.workload.session_timeout_ms,
        connect_timeout_ms: a.connect_timeout_ms,
        ..WorkloadConfig::default()
    };
    w.validate().map_err(anyhow::Error::new)?;
    closed::refuse_if_closed(&connect, w.connect_timeout_ms)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let done = runtime.block_on(remove_runs(&connect, &w, |_| true))?;
    match done.as_slice() {
        [] => outln!("nothing to remove: no {RUN_ROOT_PREFIX}* on {connect}"),
        _ => outln!("removed from {connect}: {}", done.join(", ")),
    }
    Ok(Status::Held)
}

/// "locks: client 0 zklock, client 1 curator-mutex, ..." of a mixed run.
fn mix_line(locks: &[LockName], clients: u32) -> String {
    format!("locks: {}", describe_mix(locks, clients))
}

fn describe(servers: &Servers) -> String {
    match servers {
        Servers::Single(s) => format!("a harness server at {}", s.connect_string()),
        Servers::Ensemble(c) => {
            format!("a harness ensemble of {} ({})", c.len(), c.connect_string())
        }
        Servers::External { connect_string } => connect_string.clone(),
    }
}

/// Checks the run, prints the verdict, and writes the timelines of a run that did not
/// pass.
fn report(run: &RealRun, opts: &RealOptions, elapsed: Duration) -> Result<Status> {
    let judged = judge(run);
    let Judged {
        report,
        history,
        reordered,
    } = judged;
    out!("{report}");
    let stuck = stuck_client_requests(run, &report);
    if let Some(line) = &stuck {
        outln!("{line}");
    }
    print_run_figures(run, &history);
    if let (None, Some(property)) = (opts.driver, opts.recipe.must_violate()) {
        if report.violated().contains(&property) {
            outln!(
                "canary {}: caught ({property} violated, as it must be)",
                opts.recipe
            );
        } else {
            outln!(
                "canary {}: NOT caught in this run ({property} held: the schedule that \
                 shows the bug did not happen)",
                opts.recipe
            );
        }
    }
    if reordered > 0 {
        outln!(
            "note: {reordered} request(s) of waiters caught mid-step were judged at the \
             release they raced (within {CONCURRENCY_TOLERANCE_US} µs)"
        );
    }
    let (checked, what) = report.counters.checked();
    let exercised = Exercised::of_counters(&report.counters, 1);
    let status = verdict(report.ok(), run.interrupted, &exercised);
    if status == Status::Held {
        outln!(
            "ok: every property held ({:.1} s, {checked} checked {what})",
            elapsed.as_secs_f64(),
        );
        return Ok(status);
    }
    let (path, html) = write_timelines(opts, &report, &history, stuck.as_deref())?;
    if status == Status::Inconclusive {
        let why = if run.interrupted {
            format!(
                "every property held on what ran ({:.1} s, {checked} checked {what}), but \
                 the run was interrupted (faults healed then)",
                elapsed.as_secs_f64()
            )
        } else {
            let nothing = exercised.verdict().err().map(|n| n.to_string());
            format!(
                "the run checked nothing ({}) in {:.1} s; give it a longer --duration, or \
                 see why its acquires failed",
                nothing.unwrap_or_default(),
                elapsed.as_secs_f64()
            )
        };
        outln!(
            "inconclusive: {why}; the run's timelines: {} and {}",
            path.display(),
            html.display()
        );
        return Ok(status);
    }
    outln!(
        "FAILED: {} (seed {}); the run's timelines: {} and {}",
        report.violated().join(", "),
        opts.faults.seed,
        path.display(),
        html.display()
    );
    Ok(status)
}

/// The run's faults, sessions, events and the nodes it left.
fn print_run_figures(run: &RealRun, history: &zklock_recipe::history::History) {
    outln!("{}", run.faults);
    let left: Vec<usize> = run
        .final_children_by_lock
        .iter()
        .map(|(_, left)| left.len())
        .collect();
    match run.queue {
        Some(_) => outln!(
            "sessions opened {}, {} events, items left {}, item lock nodes left {}",
            run.sessions_opened,
            history.events.len(),
            left.first().copied().unwrap_or(0),
            left.get(1).copied().unwrap_or(0)
        ),
        None => outln!(
            "sessions opened {}, {} events, lock nodes left {}",
            run.sessions_opened,
            history.events.len(),
            left.iter().sum::<usize>()
        ),
    }
}

/// A failing run's timelines, or an interrupted one's, text and HTML: what it recorded
/// is kept. Their paths.
fn write_timelines(
    opts: &RealOptions,
    report: &zklock_checker::Report,
    history: &zklock_recipe::history::History,
    stuck: Option<&str>,
) -> Result<(PathBuf, PathBuf)> {
    create_private_dir(&opts.out_dir)?;
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = opts.out_dir.join(format!("real-{stamp}.timeline.txt"));
    let saved = SavedReport::of_report(report);
    let mut text = render_marked_timeline(history, &saved.marks());
    if let Some(line) = stuck {
        text.insert_str(0, &format!("{line}\n"));
    }
    let locks = opts
        .mix
        .as_ref()
        .map(|m| mix_line(m, opts.workload.clients));
    if let Some(line) = &locks {
        text.insert_str(0, &format!("{line}\n"));
    }
    crate::files::write_private(&path, text.as_bytes(), false)?;
    let page = render_history_html(
        &format!(
            "zklock real run, fault seed {}{}",
            opts.faults.seed,
            locks.map(|l| format!("; {l}")).unwrap_or_default()
        ),
        history,
        &saved,
    );
    let html = opts.out_dir.join(format!("real-{stamp}.timeline.html"));
    crate::files::write_private(&html, page.as_bytes(), false)?;
    Ok((path, html))
}

#[cfg(test)]
mod tests;
