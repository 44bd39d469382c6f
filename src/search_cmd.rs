//! `zklock search`: the fault-point search over real runs (`zklock_real::search`). A
//! reference run of a fixed script records every request each client sends; then one run
//! per point (each request × each action, and repetitions) and, at `--k 2`, per pair whose
//! second request the first point's run reached. Each run is judged by the checker; each
//! violation is printed with the `real` line that reproduces it, naming the program as
//! invoked (a user's binary on `zklock::CommandLine` is not `zklock`).

use crate::Status;
use crate::cli::SearchArgs;
use crate::files::create_private_dir;
use crate::program::Program;
use crate::real_recipes::{QueueShape, RealPick, RealRecipeKind, RealRecipes};
use crate::search_fault_free::{CONTROL_EVERY_MAX, Controls, FaultFree, signatures};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};
use zklock_checker::concurrent::Judged;
use zklock_checker::timeline::render_marked_timeline;
use zklock_checker::trace::SavedReport;
use zklock_real::RealError;
use zklock_real::driver::pool::DriverPool;
use zklock_real::driver::{DriverKind, DriverRecipe};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::{self, ServerOptions};
use zklock_real::plan::SeenRequest;
use zklock_real::search::{Actions, Frontier, Point, second_points};
use zklock_real::servers::Servers;
use zklock_real::shapes::Shape;
use zklock_real::workload::{RealRun, WorkloadConfig, run_recipe};

/// What one run of the search saw.
struct Outcome {
    /// Properties violated (a driver that broke the protocol is `driver_failed`).
    violated: Vec<String>,
    /// Whether an aimed fault caught a request.
    struck: bool,
    requests: Vec<Vec<SeenRequest>>,
    /// The timeline, for a violation.
    timeline: Option<String>,
    /// How long the run took, in ms (0 in a journal written before it was kept).
    run_ms: u64,
    /// What each violation names ([`signatures`]); a journal written before they were
    /// kept gives the property names.
    signatures: Vec<String>,
}

/// A run the workers make: the points of a plan, or, with `control`, the script without
/// a fault (the control run of that index; its plan is empty).
struct Job {
    plan: Vec<Point>,
    control: Option<u64>,
}

impl Job {
    fn point(plan: Vec<Point>) -> Job {
        Job {
            plan,
            control: None,
        }
    }

    /// Its name in a journal.
    fn key(&self) -> String {
        match self.control {
            Some(i) => format!("{CONTROL_KEY_PREFIX}{i}"),
            None => plan_key(&self.plan),
        }
    }
}

/// The lock under search: one of zklock's recipes (the lock, the semaphore, a canary) or
/// the program's own, or a released library's through its driver.
#[derive(Clone, Debug)]
enum Lock {
    Recipe(RealPick),
    Driver(DriverKind),
}

/// The lock under search and the script every run follows.
#[derive(Clone)]
struct Setup {
    lock: Lock,
    workload: WorkloadConfig,
    actions: Actions,
    /// The program, as its reproduction lines name it.
    program: Program,
    /// The workload shapes run before the points (`--shapes`).
    shapes: Vec<Shape>,
    /// Driver processes kept from one run for the next (a driver's lock only); None:
    /// `--fresh-drivers`, a process for every session.
    drivers: Option<Arc<DriverPool>>,
}

impl Setup {
    fn lock_name(&self) -> &str {
        match &self.lock {
            Lock::Recipe(pick) => pick.name(),
            Lock::Driver(kind) => kind.name(),
        }
    }

    /// The flag that names the lock to `real`.
    fn lock_flag(&self) -> String {
        match &self.lock {
            Lock::Recipe(RealPick::Shipped(RealRecipeKind::Shipped)) => "--lock zklock".into(),
            Lock::Recipe(pick) => format!("--recipe {}", pick.name()),
            Lock::Driver(kind) => format!("--lock {}", kind.name()),
        }
    }

    /// What a journal's search must share with this one: the script and the actions.
    /// Written as `zklock real ...` whatever the program's name, so that a journal resumes
    /// however the program is invoked.
    fn journal_line(&self) -> String {
        let a = &self.actions;
        let mut line = format!(
            "zklock {} (pause {} ms, next {}, window {} ms)",
            self.real_args(&[]),
            a.pause_ms,
            a.repeat_next,
            a.repeat_window_ms
        );
        // Said only when narrowed, so that a journal of every action reads as before.
        if !a.only.is_empty() {
            line.push_str(&format!(" (actions {})", a.only.join(",")));
        }
        line
    }

    /// This search with its script in `shape`.
    fn shaped(&self, shape: Shape) -> Setup {
        Setup {
            workload: shape.script(&self.workload),
            shapes: Vec::new(),
            ..self.clone()
        }
    }

    /// The command line that runs `points` on this script, with this program.
    fn repro(&self, points: &[Point]) -> String {
        self.program.line(&self.real_args(points))
    }

    /// `real` and its flags that run `points` on this script.
    fn real_args(&self, points: &[Point]) -> String {
        let w = &self.workload;
        let mut line = format!(
            "real {} --clients {} --attempts {} --session-timeout-ms {} \
             --hold-ms {} --drop-every {} --acquire-timeout-ms {} --duration {}ms --faults none",
            self.lock_flag(),
            w.clients,
            w.attempts_per_client,
            w.session_timeout_ms,
            w.hold_ms,
            w.drop_every,
            w.acquire_timeout_ms,
            w.duration_ms
        );
        if w.readers > 0 {
            line.push_str(&format!(" --readers {}", w.readers));
        }
        if w.mix_offset > 0 {
            line.push_str(&format!(" --mix-offset {}", w.mix_offset));
        }
        if w.start_stagger_ms > 0 {
            line.push_str(&format!(" --start-stagger-ms {}", w.start_stagger_ms));
        }
        if w.idle_after_give_up_ms > 0 {
            line.push_str(&format!(
                " --idle-after-give-up-ms {}",
                w.idle_after_give_up_ms
            ));
        }
        if w.leak_bound_ms > 0 {
            line.push_str(&format!(" --leak-bound-ms {}", w.leak_bound_ms));
        }
        if w.fresh_lock_every > 0 {
            line.push_str(&format!(" --fresh-lock-every {}", w.fresh_lock_every));
        }
        if w.long_hold_every > 0 {
            line.push_str(&format!(
                " --long-hold-every {} --long-hold-ms {}",
                w.long_hold_every, w.long_hold_ms
            ));
        }
        if self.drivers.is_some()
            && matches!(self.lock, Lock::Driver(kind) if !kind.runs_in_process())
        {
            // The search's drivers were warm: so are the line's, as far as a few runs go.
            line.push_str(&format!(" --warm-up-runs {REPRO_WARM_UP_RUNS}"));
        }
        for p in points {
            line.push_str(&format!(" --aim {}", p.aim_arg()));
        }
        line
    }

    /// One run with `points` aimed, on `servers`, judged; hands the servers back.
    fn run(
        &self,
        runtime: &tokio::runtime::Runtime,
        servers: Servers,
        points: &[Point],
        stop: &Arc<AtomicBool>,
    ) -> Result<(Outcome, Servers)> {
        let faults = FaultConfig {
            aimed: points.iter().map(Point::aimed).collect(),
            record_requests: true,
            ..FaultConfig::default()
        };
        let started = Instant::now();
        let mut workload = self.workload.clone();
        workload.interrupt = Some(Arc::clone(stop));
        let (run, failed) = match &self.lock {
            Lock::Recipe(pick) => {
                let queue = QueueShape {
                    producers: 1,
                    items_per_producer: 1,
                };
                let run = pick.run(servers, &workload, &faults, &queue);
                (runtime.block_on(run), None)
            }
            Lock::Driver(kind) => {
                // A client's next driver process is started ahead only where a point
                // may end its session: most points need none.
                let ends_sessions = points.iter().any(|p| p.action.ends_sessions());
                let mut recipe = DriverRecipe::prepare(*kind)
                    .map_err(anyhow::Error::new)?
                    .with_spares(ends_sessions);
                if let Some(pool) = &self.drivers {
                    recipe = recipe.with_pool(Arc::clone(pool));
                }
                let status = recipe.status();
                let run = runtime.block_on(run_recipe(servers, &workload, &faults, recipe));
                (run, status.failure())
            }
        };
        let run = match run {
            Ok(run) => run,
            // A driver that broke the protocol ends its run with no history to judge: the
            // point is `driver_failed`, as a failure found after the run is, and the
            // search goes on, on a new server (the run took its servers down).
            Err(e @ RealError::Driver { .. }) => {
                let outcome = Outcome {
                    violated: vec!["driver_failed".into()],
                    struck: false,
                    requests: Vec::new(),
                    timeline: Some(format!("the driver failed: {e}\n")),
                    run_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    signatures: vec!["driver_failed".into()],
                };
                let servers = Servers::start(1, ServerOptions::default())
                    .context("starting a ZooKeeper server after a driver failed")?;
                return Ok((outcome, servers));
            }
            Err(e) => return Err(anyhow::Error::new(e)),
        };
        let mut outcome = judge(&run, failed);
        outcome.run_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let servers = clear(runtime, run)?;
        Ok((outcome, servers))
    }
}

/// The run's verdict. A library that stopped answering is judged by the checker (a stuck
/// lock or release, `liveness_after_heal`, with the stuck client's last requests); a
/// driver that broke the protocol is `driver_failed`, its verdict not to be trusted.
fn judge(run: &RealRun, failed: Option<String>) -> Outcome {
    let Judged {
        report, history, ..
    } = crate::real_cmd::judge(run);
    let mut violated: Vec<String> = report.violated().iter().map(|p| p.to_string()).collect();
    let mut signatures = signatures(&report, &history);
    let mut timeline = crate::real_cmd::stuck_client_requests(run, &report).map(|l| l + "\n");
    if let Some(why) = &failed {
        violated.push("driver_failed".into());
        signatures.push("driver_failed".into());
        timeline = Some(format!("the driver failed: {why}\n"));
    }
    if !violated.is_empty() {
        let saved = SavedReport::of_report(&report);
        let text = render_marked_timeline(&history, &saved.marks());
        timeline = Some(timeline.unwrap_or_default() + &text);
    }
    Outcome {
        violated,
        struck: run.aimed_strikes > 0,
        requests: run.requests.iter().map(|(r, _)| r.clone()).collect(),
        timeline,
        run_ms: 0,
        signatures,
    }
}

/// Takes the servers back from `run`, with the lock's directories deleted, so that the
/// next run starts as the first did.
fn clear(runtime: &tokio::runtime::Runtime, run: RealRun) -> Result<Servers> {
    let RealRun { servers, .. } = run;
    let connect = servers.connect_string();
    runtime
        .block_on(harness::delete_tree(&connect, ZKLOCK_ROOT, CLEAR_TIMEOUT))
        .map_err(anyhow::Error::new)
        .context("clearing the lock's directories between runs")?;
    Ok(servers)
}

/// The warm-up runs the reproduction lines of a search that kept its drivers ask for.
const REPRO_WARM_UP_RUNS: u32 = 3;

/// Where every lock of a search lives (the default lock path's root).
const ZKLOCK_ROOT: &str = "/zklock";
/// How long clearing the tree between runs may take: only a hang reaches it.
const CLEAR_TIMEOUT: Duration = Duration::from_secs(60);

/// One violation: the line that reproduces it, its properties and where its timeline
/// went.
struct Finding {
    repro: String,
    violated: Vec<String>,
    /// What each violation names ([`signatures`]).
    signatures: Vec<String>,
    origin: Origin,
    timeline: Option<PathBuf>,
}

/// Which run a finding came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// A run of points.
    Point,
    /// The reference run: the script, without a fault.
    Reference,
    /// A control run: the script again, without a fault, later in the search.
    Control(u64),
    /// A workload shape's run (another script, without a fault).
    Shape,
}

#[derive(Default)]
struct Tally {
    tried: u64,
    struck: u64,
    findings: Vec<Finding>,
    /// The reference run and the control runs, and what they violated.
    fault_free: FaultFree,
    /// Each shape run, with the properties it violated.
    shapes: Vec<(Shape, Vec<String>)>,
}

pub fn run(a: SearchArgs, program: &Program, recipes: &RealRecipes) -> Result<Status> {
    let setup = Arc::new(parse(&a, recipes, program)?);
    let mut journal = Journal::open(a.journal.as_deref(), a.resume, &setup.journal_line())?;
    if let Lock::Driver(kind) = &setup.lock {
        // Located (and built, the first time) before any server starts.
        DriverRecipe::prepare(*kind).map_err(anyhow::Error::new)?;
    }
    harness::availability().map_err(anyhow::Error::new)?;
    let (per_core, most) = match (&setup.lock, &setup.drivers) {
        (Lock::Driver(_), Some(_)) => (KEPT_JOBS_PER_CORE, KEPT_JOBS_MAX),
        _ => (DEFAULT_JOBS_PER_CORE, DEFAULT_JOBS_MAX),
    };
    let jobs = match a.jobs {
        0 => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .saturating_mul(per_core)
            .min(most),
        n => n as usize,
    };
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the tokio runtime")?,
    );
    eprintln!("starting {jobs} ZooKeeper server(s)...");
    let mut servers = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        servers.push(
            Servers::start(1, ServerOptions::default()).context("starting a ZooKeeper server")?,
        );
    }
    let stop = crate::interrupt::for_real_run();
    let started = Instant::now();
    let w = &setup.workload;
    let only = &setup.actions.only;
    outln!(
        "zklock search: {} with {} clients ({} readers), {} attempts each (drop every {}, \
         session {} ms), k = {}, {jobs} at once, actions: {}",
        setup.lock_name(),
        w.clients,
        w.readers,
        w.attempts_per_client,
        w.drop_every,
        w.session_timeout_ms,
        a.k,
        match only.is_empty() {
            true => "all".to_owned(),
            false => only.join(","),
        }
    );
    let reference = match journal.reference.take() {
        Some(saved) => {
            outln!("resumed from {}", journal.describe());
            saved
        }
        None => {
            let first = servers.pop().context("no server")?;
            let run = setup.run(&runtime, first, &[], &stop);
            // Cut short, the reference run is not the script's: nothing to search from,
            // and nothing to save (--resume runs it again).
            if stop.load(Ordering::Acquire) {
                outln!("interrupted in the reference run: no point was tried");
                if let Some(path) = &a.journal {
                    outln!(
                        "go on with: the same command with --journal {} --resume",
                        path.display()
                    );
                }
                return Ok(Status::Inconclusive);
            }
            let (reference, back) = run?;
            servers.push(back);
            journal.write_reference(&reference)?;
            reference
        }
    };
    let mut tally = Tally::default();
    tally
        .fault_free
        .add(&reference.violated, &reference.signatures);
    if !reference.violated.is_empty() {
        record_found(
            &a.out,
            &setup,
            &mut tally,
            &[],
            &reference,
            Origin::Reference,
        )?;
    }
    run_shapes(
        &setup,
        &runtime,
        &stop,
        &mut servers,
        &mut journal,
        &a.out,
        &mut tally,
    )
    .map_err(|e| kept_in(e, a.journal.as_deref()))?;
    let frontier = RefCell::new(Frontier::with_follow_on_repeats_max(
        a.follow_on_repeats_max,
    ));
    frontier_add(
        &frontier,
        &[],
        &reference.requests,
        &setup.actions,
        a.max_points,
    );
    outln!(
        "reference run: {} requests, {} points",
        frontier.borrow().keys_seen(),
        frontier_queued(&frontier)
    );
    let bar = ProgressBar::new(frontier_queued(&frontier) as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} points, {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let limit = Limit {
        stop: &stop,
        max_runs: a.max_runs,
        runs: Cell::new(0),
    };
    // The single points that struck, with the requests their runs saw (for k = 2).
    let mut singles = Vec::new();
    let mut reached: Vec<Vec<Vec<SeenRequest>>> = Vec::new();
    let mut pool = Pool::new(&setup, &runtime, &stop, servers);
    let controls = RefCell::new(Controls::new(a.control_every));
    let mut control_due = None;
    // At k = 0, no point: the reference run and the shapes only.
    pool.drive(
        &limit,
        &mut journal,
        || match a.k {
            0 => None,
            _ => with_controls(&controls, &mut control_due, || frontier_pop(&frontier)),
        },
        |job, outcome| -> Result<()> {
            if let Some(i) = job.control {
                return control_judged(&a.out, &setup, &mut tally, i, &outcome, &bar);
            }
            let plan = &job.plan[..];
            tally.tried += 1;
            tally.struck += u64::from(outcome.struck);
            if !outcome.violated.is_empty() {
                let at = plan
                    .iter()
                    .map(Point::to_string)
                    .collect::<Vec<_>>()
                    .join(" then ");
                bar.suspend(|| outln!("violated {} at {at}", outcome.violated.join(", ")));
                record_found(&a.out, &setup, &mut tally, plan, &outcome, Origin::Point)?;
            }
            frontier_add(
                &frontier,
                plan,
                &outcome.requests,
                &setup.actions,
                a.max_points,
            );
            bar.set_length(frontier_queued(&frontier) as u64);
            bar.inc(1);
            bar.set_message(format!("{} violations", tally.findings.len()));
            if let ([point], true) = (plan, outcome.struck) {
                singles.push(point.clone());
                reached.push(outcome.requests);
            }
            Ok(())
        },
    )
    .map_err(|e| kept_in(e, a.journal.as_deref()))?;
    let mut pairs_tried = 0u64;
    if a.k >= 2 && !limit.reached() {
        let mut pairs: VecDeque<Vec<Point>> = VecDeque::new();
        for (first, seen) in singles.iter().zip(&reached) {
            for second in second_points(first, seen, &singles) {
                if first < second && pairs.len() < a.max_points {
                    pairs.push_back(vec![first.clone(), second.clone()]);
                }
            }
        }
        outln!("k = 2: {} pairs after dynamic reduction", pairs.len());
        bar.set_length(bar.position() + pairs.len() as u64);
        let pairs = RefCell::new(pairs);
        pool.drive(
            &limit,
            &mut journal,
            || {
                with_controls(&controls, &mut control_due, || {
                    pairs.borrow_mut().pop_front()
                })
            },
            |job, outcome| -> Result<()> {
                if let Some(i) = job.control {
                    return control_judged(&a.out, &setup, &mut tally, i, &outcome, &bar);
                }
                let points = &job.plan[..];
                pairs_tried += 1;
                tally.tried += 1;
                tally.struck += u64::from(outcome.struck);
                if !outcome.violated.is_empty() {
                    bar.suspend(|| {
                        outln!(
                            "violated {} at {} and {}",
                            outcome.violated.join(", "),
                            points[0],
                            points[1]
                        )
                    });
                    record_found(&a.out, &setup, &mut tally, points, &outcome, Origin::Point)?;
                }
                bar.inc(1);
                bar.set_message(format!("{} violations", tally.findings.len()));
                Ok(())
            },
        )
        .map_err(|e| kept_in(e, a.journal.as_deref()))?;
    }
    bar.finish_and_clear();
    drop(pool);
    // zookeeper-client's driver runs in zklock's process: no process to count.
    if let Some(pool) = &setup.drivers
        && let Lock::Driver(_) = &setup.lock
        && pool.started() > 0
    {
        eprintln!(
            "driver processes: {} started, {} sessions opened on a kept one",
            pool.started(),
            pool.reused()
        );
    }
    if let Ok(runtime) = Arc::try_unwrap(runtime) {
        runtime.shutdown_timeout(Duration::from_secs(1));
    }
    let interrupted = limit.reached();
    let frontier = frontier.into_inner();
    print_table(
        &setup,
        &tally,
        &frontier,
        pairs_tried,
        a.control_every,
        started.elapsed(),
        interrupted,
    );
    if interrupted && let Some(path) = &a.journal {
        outln!(
            "go on with: the same command with --journal {} --resume",
            path.display()
        );
    }
    Ok(match (tally.findings.is_empty(), interrupted) {
        (false, _) => Status::Violated,
        (true, true) => Status::Inconclusive,
        (true, false) => Status::Held,
    })
}

/// Runs each of the search's workload shapes once, without a fault, as many at once as
/// there are servers: a shape's script is the search's own with a few knobs changed
/// ([`Shape::script`]), and its verdict is recorded as a point's is, with the `real`
/// line of that script. A shape the journal judged already is not run again.
fn run_shapes(
    setup: &Setup,
    runtime: &tokio::runtime::Runtime,
    stop: &Arc<AtomicBool>,
    servers: &mut Vec<Servers>,
    journal: &mut Journal,
    out: &Path,
    tally: &mut Tally,
) -> Result<()> {
    let mut todo = Vec::new();
    for &shape in &setup.shapes {
        match journal.judged_shape(shape) {
            Some(outcome) => shape_judged(out, setup, tally, shape, outcome)?,
            None => todo.push(shape),
        }
    }
    if !todo.is_empty() {
        outln!(
            "workload shapes: {} runs without a fault ({})",
            todo.len(),
            todo.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
        );
    }
    let at_once = servers.len().max(1);
    for batch in todo.chunks(at_once) {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let results: Vec<(Shape, Result<(Outcome, Servers)>)> = std::thread::scope(|scope| {
            let runs: Vec<_> = batch
                .iter()
                .filter_map(|&shape| {
                    let these = servers.pop()?;
                    let shaped = setup.shaped(shape);
                    Some((
                        shape,
                        scope.spawn(move || shaped.run(runtime, these, &[], stop)),
                    ))
                })
                .collect();
            runs.into_iter()
                .map(|(shape, run)| {
                    let result = run.join().unwrap_or_else(|_| {
                        Err(anyhow::anyhow!("the run of shape {shape} panicked"))
                    });
                    (shape, result)
                })
                .collect()
        });
        for (shape, result) in results {
            // Cut short by Ctrl-C or SIGTERM: its verdict says nothing, as a point's.
            if stop.load(Ordering::Acquire) {
                if let Ok((_, back)) = result {
                    servers.push(back);
                }
                continue;
            }
            let (outcome, back) = result.with_context(|| format!("running shape {shape}"))?;
            servers.push(back);
            journal.write_shape(shape, &outcome)?;
            shape_judged(out, setup, tally, shape, outcome)?;
        }
    }
    Ok(())
}

/// Keeps a shape's verdict, and its violation with the `real` line of its script.
fn shape_judged(
    out: &Path,
    setup: &Setup,
    tally: &mut Tally,
    shape: Shape,
    outcome: Outcome,
) -> Result<()> {
    match outcome.violated.is_empty() {
        true => outln!("shape {shape}: every property held"),
        false => {
            outln!("violated {} in shape {shape}", outcome.violated.join(", "));
            record_found(
                out,
                &setup.shaped(shape),
                tally,
                &[],
                &outcome,
                Origin::Shape,
            )?;
        }
    }
    tally.shapes.push((shape, outcome.violated));
    Ok(())
}

/// A search's error, with where its judged points are kept: nothing that ran is lost.
fn kept_in(e: anyhow::Error, journal: Option<&Path>) -> anyhow::Error {
    match journal {
        Some(path) => e.context(format!(
            "the search stopped; {} keeps every point judged: go on with the same command \
             and --resume",
            path.display()
        )),
        None => e,
    }
}

/// Runs at once by default, per core: a run mostly waits (on session timeouts, pauses,
/// the server), so more runs than cores pay. On a 2-core machine, the machine otherwise
/// idle: Curator's mutex took 939 s at 4 runs at once and 795 s at 6; Kazoo's
/// Semaphore 943 s at 6 and 829 s at 8 (docs/libraries.md).
const DEFAULT_JOBS_PER_CORE: usize = 4;
/// The most runs at once by default: each brings its own server's JVM and its clients'
/// drivers.
const DEFAULT_JOBS_MAX: usize = 8;
/// The same, for a driver's lock whose processes are kept between runs: the JVMs' starts
/// no longer fill the cores. Curator's semaphore mutex, complete on this 2-core machine,
/// alone: 561 s at 16 runs at once (380 s of CPU); a process per session at 8: 902 s
/// (1,536 s of CPU).
const KEPT_JOBS_PER_CORE: usize = 8;
const KEPT_JOBS_MAX: usize = 16;

fn frontier_pop(f: &RefCell<Frontier>) -> Option<Vec<Point>> {
    f.borrow_mut().pop()
}

fn frontier_add(
    f: &RefCell<Frontier>,
    plan: &[Point],
    requests: &[Vec<SeenRequest>],
    actions: &Actions,
    max_points: usize,
) {
    f.borrow_mut().add_run(plan, requests, actions, max_points);
}

fn frontier_queued(f: &RefCell<Frontier>) -> usize {
    f.borrow().queued()
}

/// When a search stops dispatching: Ctrl-C, or `--max-runs` runs done.
struct Limit<'a> {
    stop: &'a Arc<AtomicBool>,
    max_runs: u64,
    runs: Cell<u64>,
}

impl Limit<'_> {
    fn reached(&self) -> bool {
        self.stop.load(Ordering::Acquire) || (self.max_runs > 0 && self.runs.get() >= self.max_runs)
    }
}

/// A job and its run's outcome (or the run's error), from a worker.
type Done = (Job, Result<Outcome>);

/// The workers: each runs one plan at a time on a server of its own.
struct Pool {
    plans: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Done>,
    workers: Vec<std::thread::JoinHandle<()>>,
    jobs: usize,
}

impl Pool {
    /// One worker per server in `servers`.
    fn new(
        setup: &Arc<Setup>,
        runtime: &Arc<tokio::runtime::Runtime>,
        stop: &Arc<AtomicBool>,
        servers: Vec<Servers>,
    ) -> Pool {
        let (plans, plan_rx) = mpsc::channel::<Job>();
        let plan_rx = Arc::new(Mutex::new(plan_rx));
        let (done_tx, done) = mpsc::channel();
        let jobs = servers.len();
        let workers = servers
            .into_iter()
            .map(|first| {
                let (setup, runtime, stop) =
                    (Arc::clone(setup), Arc::clone(runtime), Arc::clone(stop));
                let (plan_rx, done_tx) = (Arc::clone(&plan_rx), done_tx.clone());
                std::thread::spawn(move || {
                    let mut servers = Some(first);
                    loop {
                        let next = plan_rx
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .recv();
                        let (Ok(job), Some(these)) = (next, servers.take()) else {
                            return;
                        };
                        let result = match setup.run(&runtime, these, &job.plan, &stop) {
                            Ok((outcome, back)) => {
                                servers = Some(back);
                                Ok(outcome)
                            }
                            Err(e) => Err(e),
                        };
                        if done_tx.send((job, result)).is_err() || servers.is_none() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Pool {
            plans: Some(plans),
            done,
            workers,
            jobs,
        }
    }

    /// Runs the jobs `next` hands out, `jobs` at once, until it has none or `limit` is
    /// reached; each result goes to the journal, then to `on_result`. A job the journal
    /// judged already is not run: its saved outcome goes to `on_result`.
    fn drive(
        &mut self,
        limit: &Limit<'_>,
        journal: &mut Journal,
        mut next: impl FnMut() -> Option<Job>,
        mut on_result: impl FnMut(&Job, Outcome) -> Result<()>,
    ) -> Result<()> {
        let mut in_flight = 0;
        loop {
            while in_flight < self.jobs && !limit.reached() {
                let Some(job) = next() else {
                    break;
                };
                if let Some(outcome) = journal.judged(&job) {
                    on_result(&job, outcome)?;
                    continue;
                }
                let plans = self.plans.as_ref().context("the search's workers ended")?;
                plans
                    .send(job)
                    .map_err(|_| anyhow::anyhow!("the search's workers ended"))?;
                in_flight += 1;
                limit.runs.set(limit.runs.get() + 1);
            }
            if in_flight == 0 {
                return Ok(());
            }
            let (job, outcome) = self.done.recv().context("the search's workers ended")?;
            in_flight -= 1;
            // A run cut short by Ctrl-C or SIGTERM healed early: its verdict says nothing
            // of its point. Nor does its failure: the signal may have reached its server
            // or driver too (a CI runner's cancel signals every process of the job).
            if limit.stop.load(Ordering::Acquire) {
                continue;
            }
            let outcome = outcome?;
            journal.write(&job, &outcome)?;
            on_result(&job, outcome)?;
        }
    }
}

impl Drop for Pool {
    /// Lets each worker finish its run, and its servers stop.
    fn drop(&mut self) {
        self.plans = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// The results of a search, saved as they come (`--journal`), one JSON object a line: the
/// setup (the script and the actions, which a resumed search must share), the reference
/// run's outcome, then each judged plan's.
#[derive(Default)]
struct Journal {
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    reference: Option<Outcome>,
    /// Saved outcomes not yet replayed, by [`plan_key`].
    judged: HashMap<String, Outcome>,
    /// How many points, and how many shapes, the saved journal had judged.
    resumed_points: usize,
    resumed_shapes: usize,
}

/// A plan's name in a journal: its points as `--aim` takes them.
fn plan_key(plan: &[Point]) -> String {
    plan.iter()
        .map(Point::aim_arg)
        .collect::<Vec<_>>()
        .join(" ")
}

const SHAPE_KEY_PREFIX: &str = "shape:";
/// A control run's name in a journal: this, then its index.
const CONTROL_KEY_PREFIX: &str = "control:";

/// A shape's run's name in a journal (a plan's starts with a client's number).
fn shape_key(shape: Shape) -> String {
    format!("{SHAPE_KEY_PREFIX}{shape}")
}

impl Journal {
    fn open(path: Option<&Path>, resume: bool, setup: &str) -> Result<Journal> {
        let Some(path) = path else {
            return Ok(Journal::default());
        };
        let mut journal = Journal {
            path: Some(path.to_owned()),
            ..Journal::default()
        };
        if !resume {
            if path.exists() {
                bail!(
                    "--journal {}: the file exists; add --resume to go on with its search, or name another",
                    path.display()
                );
            }
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("creating the journal {}", path.display()))?;
            writeln!(file, "{}", serde_json::json!({ "setup": setup }))?;
            journal.file = Some(file);
            return Ok(journal);
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the journal {}", path.display()))?;
        let bad = |line: usize, why: &str| {
            anyhow::anyhow!("--resume: {} line {}: {why}", path.display(), line + 1)
        };
        for (n, line) in text.lines().enumerate() {
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(n, &e.to_string()))?;
            if let Some(saved) = v.get("setup") {
                if saved.as_str() != Some(setup) {
                    return Err(bad(
                        n,
                        &format!("it was saved by another script or actions: {saved}"),
                    ));
                }
            } else if let Some(r) = v.get("reference") {
                journal.reference = Some(outcome_of(r).ok_or_else(|| bad(n, "a bad outcome"))?);
            } else if let (Some(key), Some(o)) =
                (v.get("plan").and_then(|k| k.as_str()), v.get("outcome"))
            {
                let outcome = outcome_of(o).ok_or_else(|| bad(n, "a bad outcome"))?;
                journal.judged.insert(key.to_owned(), outcome);
            } else {
                return Err(bad(n, "neither setup, reference nor plan"));
            }
        }
        if journal.reference.is_none() && !journal.judged.is_empty() {
            bail!("--resume: {} has no reference run", path.display());
        }
        // Shapes are saved beside the points, under keys of their own.
        journal.resumed_shapes = (journal.judged.keys())
            .filter(|k| k.starts_with(SHAPE_KEY_PREFIX))
            .count();
        let controls = (journal.judged.keys())
            .filter(|k| k.starts_with(CONTROL_KEY_PREFIX))
            .count();
        journal.resumed_points = journal.judged.len() - journal.resumed_shapes - controls;
        journal.file = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open(path)
                .with_context(|| format!("opening the journal {}", path.display()))?,
        );
        Ok(journal)
    }

    fn describe(&self) -> String {
        let path = self.path.as_deref().unwrap_or(Path::new("-"));
        let shapes = match self.resumed_shapes {
            0 => String::new(),
            n => format!(", {n} shape(s)"),
        };
        format!(
            "{} ({} points judged{shapes})",
            path.display(),
            self.resumed_points
        )
    }

    fn write_line(&mut self, v: serde_json::Value) -> Result<()> {
        if let Some(file) = &mut self.file {
            // One write per line, so a search killed mid-write loses that line only.
            file.write_all(format!("{v}\n").as_bytes())
                .context("writing the journal")?;
        }
        Ok(())
    }

    fn write_reference(&mut self, outcome: &Outcome) -> Result<()> {
        self.write_line(serde_json::json!({ "reference": outcome_json(outcome) }))
    }

    fn write(&mut self, job: &Job, outcome: &Outcome) -> Result<()> {
        self.write_line(serde_json::json!({
            "plan": job.key(),
            "outcome": outcome_json(outcome),
        }))
    }

    /// The saved outcome of `job`, once.
    fn judged(&mut self, job: &Job) -> Option<Outcome> {
        self.judged.remove(&job.key())
    }

    fn write_shape(&mut self, shape: Shape, outcome: &Outcome) -> Result<()> {
        self.write_line(serde_json::json!({
            "plan": shape_key(shape),
            "outcome": outcome_json(outcome),
        }))
    }

    /// The saved outcome of `shape`'s run, once.
    fn judged_shape(&mut self, shape: Shape) -> Option<Outcome> {
        self.judged.remove(&shape_key(shape))
    }
}

fn outcome_json(o: &Outcome) -> serde_json::Value {
    let requests: Vec<Vec<(i32, &str)>> = o
        .requests
        .iter()
        .map(|r| r.iter().map(|s| (s.op, s.path.as_str())).collect())
        .collect();
    serde_json::json!({
        "violated": o.violated,
        "struck": o.struck,
        "requests": requests,
        "timeline": o.timeline,
        "run_ms": o.run_ms,
        "signatures": o.signatures,
    })
}

fn outcome_of(v: &serde_json::Value) -> Option<Outcome> {
    let strings = |v: &serde_json::Value| {
        v.as_array()?
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
    };
    let violated = strings(v.get("violated")?)?;
    let signatures = match v.get("signatures") {
        Some(s) => strings(s)?,
        None => violated.clone(),
    };
    let requests = v
        .get("requests")?
        .as_array()?
        .iter()
        .map(|client| {
            client
                .as_array()?
                .iter()
                .map(|r| {
                    Some(SeenRequest {
                        op: i32::try_from(r.get(0)?.as_i64()?).ok()?,
                        path: r.get(1)?.as_str()?.to_owned(),
                    })
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Outcome {
        violated,
        struck: v.get("struck")?.as_bool()?,
        requests,
        timeline: v
            .get("timeline")
            .and_then(|t| t.as_str())
            .map(str::to_owned),
        run_ms: v.get("run_ms").and_then(|t| t.as_u64()).unwrap_or(0),
        signatures,
    })
}

/// Keeps a run's violation, writing its timeline under `out`.
fn record_found(
    out: &Path,
    setup: &Setup,
    tally: &mut Tally,
    points: &[Point],
    outcome: &Outcome,
    origin: Origin,
) -> Result<()> {
    let path = match &outcome.timeline {
        Some(text) => {
            create_private_dir(out)?;
            let name = format!(
                "search-{}-{}.timeline.txt",
                setup.lock_name(),
                tally.findings.len() + 1
            );
            let path = out.join(name);
            let header = format!("{}\n", setup.repro(points));
            crate::files::write_private(&path, (header + text).as_bytes(), true)?;
            Some(path)
        }
        None => None,
    };
    tally.findings.push(Finding {
        repro: setup.repro(points),
        violated: outcome.violated.clone(),
        signatures: outcome.signatures.clone(),
        origin,
        timeline: path,
    });
    Ok(())
}

/// Hands out the next job: a control run when one is due, else the next plan of `pop`
/// (a control run follows every `--control-every` plans).
fn with_controls(
    controls: &RefCell<Controls>,
    due: &mut Option<u64>,
    pop: impl FnOnce() -> Option<Vec<Point>>,
) -> Option<Job> {
    if let Some(i) = due.take() {
        return Some(Job {
            plan: Vec::new(),
            control: Some(i),
        });
    }
    let plan = pop()?;
    *due = controls.borrow_mut().after_point();
    Some(Job::point(plan))
}

/// Counts a control run among the fault-free runs; its violation is listed when it
/// names something no fault-free run showed before (the rest are counted only).
fn control_judged(
    out: &Path,
    setup: &Setup,
    tally: &mut Tally,
    index: u64,
    outcome: &Outcome,
    bar: &ProgressBar,
) -> Result<()> {
    let new = tally.fault_free.add(&outcome.violated, &outcome.signatures);
    if new && !outcome.violated.is_empty() {
        bar.suspend(|| {
            outln!(
                "violated {} without a fault (control run {})",
                outcome.violated.join(", "),
                index + 1
            )
        });
        record_found(out, setup, tally, &[], outcome, Origin::Control(index))?;
    }
    Ok(())
}

fn print_table(
    setup: &Setup,
    tally: &Tally,
    frontier: &Frontier,
    pairs_tried: u64,
    control_every: u64,
    elapsed: Duration,
    interrupted: bool,
) {
    let mut by_property: BTreeMap<&str, u64> = BTreeMap::new();
    for f in &tally.findings {
        for p in &f.violated {
            *by_property.entry(p.as_str()).or_default() += 1;
        }
    }
    let violations = if by_property.is_empty() {
        "none".to_owned()
    } else {
        by_property
            .iter()
            .map(|(p, n)| format!("{p} ({n})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!();
    outln!("| lock | requests seen | points tried (k=2 pairs) | points that struck | violations |");
    outln!("|---|---|---|---|---|");
    let w = &setup.workload;
    let lock = match w.readers {
        0 => setup.lock_name().to_owned(),
        r => format!("{} ({r} of {} clients read)", setup.lock_name(), w.clients),
    };
    outln!(
        "| {lock} | {} | {} ({pairs_tried}) | {} | {violations} |",
        frontier.keys_seen(),
        tally.tried,
        tally.struck,
    );
    if frontier.left_out > 0 {
        outln!(
            "{} points were left out: past --max-points, or a third point in a chain \
             (a request first seen after a fault first seen after a fault)",
            frontier.left_out
        );
    }
    if frontier.left_out_by_repeats > 0 {
        outln!(
            "{} points were left out past --follow-on-repeats-max {n}: a faulted run's new \
             requests of one client's operation and path class beyond its first {n} \
             (a library polling while stuck sends one at every turn)",
            frontier.left_out_by_repeats,
            n = frontier.follow_on_repeats_max()
        );
    }
    if !tally.shapes.is_empty() {
        let runs: Vec<String> = tally
            .shapes
            .iter()
            .map(|(shape, violated)| match violated.is_empty() {
                true => format!("{shape} held"),
                false => format!("{shape} violated {}", violated.join(", ")),
            })
            .collect();
        outln!(
            "workload shapes, each run once without a fault: {}",
            runs.join("; ")
        );
    }
    let ff = &tally.fault_free;
    let controls = ff.runs.saturating_sub(1);
    outln!(
        "fault-free runs: {} (the reference run{}): {}",
        ff.runs,
        match (controls, control_every) {
            (0, _) => String::new(),
            (n, every) =>
                format!(" and {n} control run(s), one after every {every} runs of points"),
        },
        ff.describe()
    );
    let explained = |f: &Finding| f.origin == Origin::Point && ff.explains(&f.signatures);
    let at_points = tally.findings.iter().filter(|f| f.origin == Origin::Point);
    let (violating, as_fault_free) =
        at_points.fold((0, 0), |(n, e), f| (n + 1, e + u64::from(explained(f))));
    if as_fault_free > 0 {
        outln!(
            "{as_fault_free} of the {violating} violating runs of points violated only what a \
             fault-free run violated too, at the same attempts: marked \"as without a fault\" \
             below (their fault is perhaps not the cause)"
        );
    }
    for f in &tally.findings {
        outln!();
        let origin = match f.origin {
            Origin::Reference => " (without a fault: the reference run)".to_owned(),
            Origin::Control(i) => format!(" (without a fault: control run {})", i + 1),
            Origin::Point if explained(f) => " (as without a fault)".to_owned(),
            Origin::Point | Origin::Shape => String::new(),
        };
        outln!("{}{origin}:", f.violated.join(", "));
        outln!("  {}", f.repro);
        if let Some(path) = &f.timeline {
            outln!("  timeline: {}", path.display());
        }
    }
    outln!();
    outln!(
        "{} in {:.0} s",
        if interrupted {
            "interrupted (what ran is above)"
        } else {
            "searched"
        },
        elapsed.as_secs_f64()
    );
}

fn parse(a: &SearchArgs, recipes: &RealRecipes, program: &Program) -> Result<Setup> {
    let lock = match recipes.parse(&a.lock) {
        Ok(pick) if pick.is_queue() => bail!("--lock: a work queue is not a lock to search"),
        Ok(pick) => Lock::Recipe(pick),
        Err(_) => Lock::Driver(DriverKind::parse(&a.lock).map_err(|e| {
            // The work queues are no locks to search: not offered.
            let locks: Vec<&str> = recipes
                .names()
                .into_iter()
                .filter(|n| recipes.parse(n).is_ok_and(|p| !p.is_queue()))
                .collect();
            anyhow::anyhow!("--lock: {e}, or a recipe ({})", locks.join(", "))
        })?),
    };
    if a.k > 2 {
        bail!("--k must be 0, 1 or 2, got {}", a.k);
    }
    if !(1..=MAX_SEARCH_CLIENTS).contains(&a.clients) {
        bail!(
            "--clients must be 1 to {MAX_SEARCH_CLIENTS}, got {}",
            a.clients
        );
    }
    if !(1..=MAX_SEARCH_ATTEMPTS).contains(&a.attempts) {
        bail!(
            "--attempts must be 1 to {MAX_SEARCH_ATTEMPTS}, got {}",
            a.attempts
        );
    }
    if a.max_points == 0 {
        bail!("--max-points must be positive");
    }
    if a.control_every > CONTROL_EVERY_MAX {
        bail!(
            "--control-every must be at most {CONTROL_EVERY_MAX} (0: no control run), got {}",
            a.control_every
        );
    }
    // A read/write lock searched with writers only would leave its read side untried.
    let readers = a.readers.unwrap_or(match &lock {
        Lock::Driver(kind) if kind.has_readers() => 1,
        _ => 0,
    });
    if readers > 0 {
        let has_readers = match &lock {
            Lock::Recipe(pick) => pick.has_readers(),
            Lock::Driver(kind) => kind.has_readers(),
        };
        if !has_readers {
            bail!(
                "--readers: the lock {} has no read side (zklock, kazoo-rw and curator-rw have)",
                a.lock
            );
        }
        if readers > a.clients {
            bail!(
                "--readers must be at most --clients ({}), got {readers}",
                a.clients
            );
        }
    }
    let workload = WorkloadConfig {
        clients: a.clients,
        readers,
        attempts_per_client: a.attempts,
        session_timeout_ms: a.session_timeout_ms,
        hold_ms: a.hold_ms,
        drop_every: a.drop_every,
        idle_after_give_up_ms: a.idle_after_give_up_ms,
        leak_bound_ms: a.leak_bound_ms,
        long_hold_every: a.long_hold_every,
        fresh_lock_every: a.fresh_lock_every,
        long_hold_ms: crate::real_cmd::long_hold_ms(a.long_hold_ms, a.session_timeout_ms),
        acquire_timeout_ms: a.acquire_timeout_ms,
        // A bound on each run only: a run ends once its script is done.
        duration_ms: a.run_limit_ms,
        drain_timeout_ms: a.session_timeout_ms.saturating_mul(3),
        ..WorkloadConfig::default()
    };
    workload.validate().map_err(anyhow::Error::new)?;
    let mut only = Vec::new();
    for name in &a.actions {
        let Some(&known) = Actions::NAMES.iter().find(|&&n| n == name) else {
            bail!(
                "--actions: unknown action {name:?} (drop-request, withhold-reply, expire, \
                 pause, crash, give-up)"
            );
        };
        if !only.contains(&known) {
            only.push(known);
        }
    }
    let mut shapes = parse_shapes(&a.shapes)?;
    // A shape that changes nothing in this script would only run the reference again.
    shapes.retain(|s| format!("{:?}", s.script(&workload)) != format!("{workload:?}"));
    Ok(Setup {
        lock,
        program: program.clone(),
        shapes,
        drivers: (!a.fresh_drivers).then(Arc::default),
        actions: Actions {
            // Past the session timeout: the server expires the session in the pause.
            pause_ms: a.session_timeout_ms.saturating_mul(2),
            repeat_next: a.repeat_next,
            repeat_window_ms: a.repeat_window_ms,
            only,
        },
        workload,
    })
}

/// `--shapes`: every shape when none is named; `none` alone for no shape.
fn parse_shapes(names: &[String]) -> Result<Vec<Shape>> {
    if names.is_empty() {
        return Ok(Shape::ALL.to_vec());
    }
    if names.iter().any(|n| n == "none") {
        if names.len() > 1 {
            bail!("--shapes: none names no shape, and goes alone");
        }
        return Ok(Vec::new());
    }
    let mut shapes = Vec::new();
    for name in names {
        let Some(shape) = Shape::parse(name) else {
            let known: Vec<&str> = Shape::ALL.iter().map(|s| s.name()).collect();
            bail!(
                "--shapes: unknown shape {name:?} ({}, or none)",
                known.join(", ")
            );
        };
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    Ok(shapes)
}

/// The most clients a search takes: each point is tried on each client's requests.
const MAX_SEARCH_CLIENTS: u32 = 8;
/// The most attempts a client's script takes.
const MAX_SEARCH_ATTEMPTS: u32 = 32;
