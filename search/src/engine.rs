//! The search itself: its settings ([`Search`]), what it tells as it goes ([`Event`]),
//! and what it found ([`Findings`]).

use crate::error::SearchError;
use crate::fault_free::{CONTROL_EVERY_DEFAULT, CONTROL_EVERY_MAX, Controls, FaultFree};
use crate::frontier::{Actions, FOLLOW_ON_REPEATS_MAX_DEFAULT, Frontier, Point, second_points};
use crate::journal::Journal;
use crate::pool::{Job, Limit, Pool, with_controls};
use crate::setup::{Lock, Outcome, Setup};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use zklock_checker::exercised::Exercised;
use zklock_real::driver::DriverRecipe;
use zklock_real::harness;
use zklock_real::plan::SeenRequest;
use zklock_real::servers::Servers;
use zklock_real::shapes::Shape;
use zklock_real::workload::WorkloadConfig;

/// The most clients a search takes: each point is tried on each client's requests.
pub const MAX_SEARCH_CLIENTS: u32 = 8;
/// The most attempts a client's script takes.
pub const MAX_SEARCH_ATTEMPTS: u32 = 32;
/// The most points a run of the search injects (`k`): single points, or pairs.
pub const K_MAX: u32 = 2;
/// The most points (and pairs) queued by default; the rest are counted as left out.
pub const MAX_POINTS_DEFAULT: usize = 2_000;

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

/// The script `zklock search` runs by default for `lock`: 2 clients (one of them a
/// reader for a read/write library lock), 4 attempts each (every 4th dropped), a 2,000
/// ms session timeout, 5 ms holds, 1,000 ms timed acquires, each run at most 30,000 ms.
pub fn default_script(lock: &Lock) -> WorkloadConfig {
    let session_timeout_ms = 2_000;
    WorkloadConfig {
        clients: 2,
        readers: match lock {
            Lock::Driver(kind) if kind.has_readers() => 1,
            _ => 0,
        },
        attempts_per_client: 4,
        session_timeout_ms,
        hold_ms: 5,
        drop_every: 4,
        long_hold_ms: session_timeout_ms.saturating_mul(3) / 2,
        acquire_timeout_ms: 1_000,
        // A bound on each run only: a run ends once its script is done.
        duration_ms: 30_000,
        drain_timeout_ms: session_timeout_ms.saturating_mul(3),
        ..WorkloadConfig::default()
    }
}

/// The actions `zklock search` tries by default on `script`: every one, a pause twice the
/// session timeout (the server expires the session in it), repeated points at the first
/// 4 matching requests and for 3,000 ms.
pub fn default_actions(script: &WorkloadConfig) -> Actions {
    Actions {
        pause_ms: script.session_timeout_ms.saturating_mul(2),
        repeat_next: 4,
        repeat_window_ms: 3_000,
        only: Vec::new(),
    }
}

/// A fault-point search of a lock over real runs, as `zklock search` runs it: a reference
/// run of the script records every request each client sends; then one run per point
/// (each request × each action, and repetitions) and, at k = 2, per pair whose second
/// request the first point's run reached. Each run is judged by the checker.
///
/// Every setting has `zklock search`'s default ([`default_script`], [`default_actions`]);
/// [`Search::run`] starts the servers (a ZooKeeper and Java installed) and returns the
/// [`Findings`].
#[derive(Clone, Debug)]
pub struct Search {
    lock: Lock,
    script: WorkloadConfig,
    actions: Option<Actions>,
    k: u32,
    jobs: usize,
    journal: Option<(PathBuf, bool)>,
    shapes: Vec<Shape>,
    max_points: usize,
    max_runs: u64,
    control_every: u64,
    follow_on_repeats_max: u32,
    fresh_drivers: bool,
    container_check_interval_ms: Option<u32>,
    program: String,
    stop: Arc<AtomicBool>,
}

impl Search {
    /// A search of `lock` with `zklock search`'s defaults, and no workload shape.
    pub fn new(lock: Lock) -> Search {
        Search {
            script: default_script(&lock),
            lock,
            actions: None,
            k: 1,
            jobs: 0,
            journal: None,
            shapes: Vec::new(),
            max_points: MAX_POINTS_DEFAULT,
            max_runs: 0,
            control_every: CONTROL_EVERY_DEFAULT,
            follow_on_repeats_max: FOLLOW_ON_REPEATS_MAX_DEFAULT,
            fresh_drivers: false,
            container_check_interval_ms: None,
            program: "zklock".to_owned(),
            stop: Arc::default(),
        }
    }

    /// The script every run follows (clients 1 to [`MAX_SEARCH_CLIENTS`], attempts 1 to
    /// [`MAX_SEARCH_ATTEMPTS`], and [`WorkloadConfig::validate`]'s bounds).
    pub fn script(mut self, script: WorkloadConfig) -> Search {
        self.script = script;
        self
    }

    /// The actions tried at each request; default: [`default_actions`] of the script.
    pub fn actions(mut self, actions: Actions) -> Search {
        self.actions = Some(actions);
        self
    }

    /// Points per run: 1 (single faults, the default), 2 (pairs, after dynamic
    /// reduction), or 0 (the reference run and the workload shapes only).
    pub fn k(mut self, k: u32) -> Search {
        self.k = k;
        self
    }

    /// Runs at once, each on a ZooKeeper server of its own. 0 (the default): eight per
    /// core, at most 16, for a released library's lock with its drivers kept; else four
    /// per core, at most 8.
    pub fn jobs(mut self, jobs: usize) -> Search {
        self.jobs = jobs;
        self
    }

    /// Saves each judged run to `path` as it is judged (JSON lines). With `resume`, goes
    /// on with the search `path` saved (the same script and actions): what it judged is
    /// not run again. Without, `path` must not exist: nothing is overwritten.
    pub fn journal(mut self, path: impl Into<PathBuf>, resume: bool) -> Search {
        self.journal = Some((path.into(), resume));
        self
    }

    /// The workload shapes run once each, without a fault, before the points (default:
    /// none). A shape that changes nothing in the script is not run.
    pub fn shapes(mut self, shapes: Vec<Shape>) -> Search {
        self.shapes = shapes;
        self
    }

    /// The most points (and pairs) queued, at least 1 (default [`MAX_POINTS_DEFAULT`]).
    pub fn max_points(mut self, n: usize) -> Search {
        self.max_points = n;
        self
    }

    /// Stop after this many runs of points, as a stop does (0, the default: no limit).
    pub fn max_runs(mut self, n: u64) -> Search {
        self.max_runs = n;
        self
    }

    /// A control run, the script without a fault, after every `n` runs of points (0:
    /// none; at most [`CONTROL_EVERY_MAX`]; default [`CONTROL_EVERY_DEFAULT`]).
    pub fn control_every(mut self, n: u64) -> Search {
        self.control_every = n;
        self
    }

    /// The most new ordinals of one client's (operation, path class) a faulted run adds
    /// to the frontier (default [`FOLLOW_ON_REPEATS_MAX_DEFAULT`]).
    pub fn follow_on_repeats_max(mut self, n: u32) -> Search {
        self.follow_on_repeats_max = n;
        self
    }

    /// A driver process for every session, every driver cold, instead of processes kept
    /// from one run for the next (the default).
    pub fn fresh_drivers(mut self, fresh: bool) -> Search {
        self.fresh_drivers = fresh;
        self
    }

    /// How often the search's servers delete their empty container nodes, in ms (1 to
    /// 2^31 - 1; ZooKeeper's `znode.container.checkIntervalMs`). Default `None`:
    /// ZooKeeper's 60 s, which no run of the default script outlasts. Short, a recipe's
    /// container directories (Curator's) vanish whenever they are empty, and are made
    /// again: the reproduction lines carry it.
    pub fn container_check_interval_ms(mut self, ms: Option<u32>) -> Search {
        self.container_check_interval_ms = ms;
        self
    }

    /// The command the reproduction lines start with (default `zklock`): your own
    /// binary's, for your own lock.
    pub fn program(mut self, command: impl Into<String>) -> Search {
        self.program = command.into();
        self
    }

    /// A flag that stops the search when set (Ctrl-C's, say): the runs under way end
    /// early and are not judged; what was judged is kept, and the journal resumes.
    pub fn stop(mut self, stop: Arc<AtomicBool>) -> Search {
        self.stop = stop;
        self
    }

    /// The lock under search.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Runs the search quietly.
    pub fn run(&self) -> Result<Findings, SearchError> {
        self.run_with(&mut ())
    }

    /// Runs the search, telling `progress` what happens as it happens.
    pub fn run_with(&self, progress: &mut dyn Progress) -> Result<Findings, SearchError> {
        let setup = Arc::new(self.setup()?);
        let journal_line = setup.journal_line();
        let journal = match &self.journal {
            Some((path, resume)) => Journal::open(Some(path), *resume, &journal_line)?,
            None => Journal::default(),
        };
        if let Lock::Driver(kind) = &setup.lock {
            // Located (and built, the first time) before any server starts.
            DriverRecipe::prepare(*kind).map_err(|e| SearchError::real("", e))?;
        }
        harness::availability().map_err(|e| SearchError::real("", e))?;
        let jobs = self.jobs_at_once();
        let runtime = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| SearchError::workers(format!("starting the tokio runtime: {e}")))?,
        );
        tell(progress, Event::ServersStarting { jobs })?;
        let mut servers = Vec::with_capacity(jobs);
        for _ in 0..jobs {
            servers.push(
                Servers::start(1, setup.server_options())
                    .map_err(|e| SearchError::real("starting a ZooKeeper server", e))?,
            );
        }
        tell(progress, Event::Started { jobs })?;
        let mut run = Running {
            search: self,
            setup: &setup,
            runtime: &runtime,
            journal,
            progress,
            findings: Findings::new(self.follow_on_repeats_max, self.control_every),
        };
        let result = run.all(servers);
        let mut findings = run.findings;
        if let Ok(runtime) = Arc::try_unwrap(runtime) {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
        result?;
        if let Some(pool) = &setup.drivers
            && let Lock::Driver(_) = &setup.lock
            && pool.started() > 0
        {
            findings.driver_processes = Some((pool.started(), pool.reused()));
        }
        Ok(findings)
    }

    fn jobs_at_once(&self) -> usize {
        let kept = matches!(self.lock, Lock::Driver(_)) && !self.fresh_drivers;
        let (per_core, most) = match kept {
            true => (KEPT_JOBS_PER_CORE, KEPT_JOBS_MAX),
            false => (DEFAULT_JOBS_PER_CORE, DEFAULT_JOBS_MAX),
        };
        match self.jobs {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .saturating_mul(per_core)
                .min(most),
            n => n,
        }
    }

    /// The settings checked, as one search's setup.
    fn setup(&self) -> Result<Setup, SearchError> {
        let w = &self.script;
        if self.k > K_MAX {
            return Err(SearchError::invalid(format!(
                "--k must be 0, 1 or 2, got {}",
                self.k
            )));
        }
        if !(1..=MAX_SEARCH_CLIENTS).contains(&w.clients) {
            return Err(SearchError::invalid(format!(
                "--clients must be 1 to {MAX_SEARCH_CLIENTS}, got {}",
                w.clients
            )));
        }
        if !(1..=MAX_SEARCH_ATTEMPTS).contains(&w.attempts_per_client) {
            return Err(SearchError::invalid(format!(
                "--attempts must be 1 to {MAX_SEARCH_ATTEMPTS}, got {}",
                w.attempts_per_client
            )));
        }
        if self.max_points == 0 {
            return Err(SearchError::invalid("--max-points must be positive"));
        }
        if self.control_every > CONTROL_EVERY_MAX {
            return Err(SearchError::invalid(format!(
                "--control-every must be at most {CONTROL_EVERY_MAX} (0: no control run), got {}",
                self.control_every
            )));
        }
        if w.readers > 0 && !self.lock.has_readers() {
            return Err(SearchError::invalid(format!(
                "--readers: the lock {} has no read side (zklock, kazoo-rw and curator-rw have)",
                self.lock.name()
            )));
        }
        if w.revokers > 0 && !self.lock.is_revocable() {
            return Err(SearchError::invalid(format!(
                "--revokers: the lock {} cannot be asked to give up (zklock's lock can)",
                self.lock.name()
            )));
        }
        if w.readers > w.clients {
            return Err(SearchError::invalid(format!(
                "--readers must be at most --clients ({}), got {}",
                w.clients, w.readers
            )));
        }
        w.validate().map_err(|e| SearchError::real("", e))?;
        let mut shapes = self.shapes.clone();
        // A shape that changes nothing in this script would only run the reference again.
        shapes.retain(|s| format!("{:?}", s.script(w)) != format!("{w:?}"));
        Ok(Setup {
            lock: self.lock.clone(),
            workload: w.clone(),
            actions: self.actions.clone().unwrap_or_else(|| default_actions(w)),
            program: self.program.clone(),
            shapes,
            drivers: (!self.fresh_drivers).then(Arc::default),
            container_check_interval_ms: self.container_check_interval_ms,
        })
    }
}

/// What a search tells as it goes, for a progress bar or a log: nothing here needs an
/// answer.
#[non_exhaustive]
#[derive(Debug)]
pub enum Event<'a> {
    /// `jobs` servers are starting.
    ServersStarting { jobs: usize },
    /// The servers are up; `jobs` runs go at once.
    Started { jobs: usize },
    /// The reference run and what was judged came from the journal (as `journal`
    /// describes it: its path and how many points it had judged).
    Resumed { journal: String },
    /// The workload shapes about to run (the ones the journal has not judged).
    ShapesStarting { shapes: &'a [Shape] },
    /// A shape's run was judged: what it violated (none: every property held).
    ShapeJudged {
        shape: Shape,
        violated: &'a [String],
    },
    /// The reference run was judged: the requests it saw, and the points queued.
    Reference { requests: usize, points: usize },
    /// The pairs queued for k = 2.
    Pairs { pairs: usize },
    /// A run of points was judged; `queued`, where it changed, is the points queued now.
    Judged {
        queued: Option<usize>,
        violations: usize,
    },
    /// A violation, the `index`-th of [`Findings::findings`]; `in_pairs` at k = 2's pairs.
    Found {
        finding: &'a Finding,
        index: usize,
        in_pairs: bool,
    },
}

/// Where a search's [`Event`]s go. An error stops the search
/// ([`SearchError::Progress`]).
pub trait Progress {
    fn event(&mut self, event: Event<'_>) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// No progress: a quiet search.
impl Progress for () {
    fn event(&mut self, _: Event<'_>) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(())
    }
}

fn tell(progress: &mut dyn Progress, event: Event<'_>) -> Result<(), SearchError> {
    progress
        .event(event)
        .map_err(|source| SearchError::Progress { source })
}

/// Which run a finding came from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A run of points.
    Point,
    /// The reference run: the script, without a fault.
    Reference,
    /// A control run (its index, from 0): the script again, without a fault, later in
    /// the search.
    Control(u64),
    /// A workload shape's run (another script, without a fault).
    Shape(Shape),
}

/// One violating run.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Finding {
    /// The command line that runs it again (`real ... --aim ...`).
    pub repro: String,
    /// The points its run injected (none for a run without a fault).
    pub points: Vec<Point>,
    /// The properties it violated (`driver_failed` for a driver that broke the protocol).
    pub violated: Vec<String>,
    /// What each violation names: its property and the attempts its proof names.
    pub signatures: Vec<String>,
    pub origin: Origin,
    /// Its timeline, the violations marked (and a stuck client's last requests, or why a
    /// driver failed).
    pub timeline: Option<String>,
    /// The checker's explanation of each property's verdict.
    pub explanation: Option<String>,
    /// The timeline as an HTML page.
    pub html: Option<String>,
}

impl Finding {
    /// Its cause as far as a search can tell: the same violations (property and
    /// attempts) after the same kinds of fault. Findings of one cause differ only in
    /// where the fault struck.
    pub fn cause(&self) -> (Vec<String>, Vec<&'static str>) {
        let mut signatures = self.signatures.clone();
        signatures.sort();
        let actions = self.points.iter().map(|p| p.action.name()).collect();
        (signatures, actions)
    }
}

/// What a search found.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Findings {
    /// Whether the reference run finished: a search stopped in it tried nothing.
    pub reference_run: bool,
    /// The distinct requests seen over every run.
    pub requests_seen: usize,
    /// Runs of points judged (k = 2's pairs among them), and those whose aimed fault
    /// struck.
    pub tried: u64,
    pub struck: u64,
    pub pairs_tried: u64,
    /// Points left out: past `max_points`, or a third point in a chain.
    pub left_out: u64,
    /// Points left out past `follow_on_repeats_max` (given here).
    pub left_out_by_repeats: u64,
    pub follow_on_repeats_max: u32,
    /// The violations, in the order found.
    pub findings: Vec<Finding>,
    /// The reference run and the control runs, and what they violated.
    pub fault_free: FaultFree,
    pub control_every: u64,
    /// Each shape's run, with the properties it violated.
    pub shapes: Vec<(Shape, Vec<String>)>,
    /// Stopped (the stop flag, or `max_runs`) before its last point.
    pub interrupted: bool,
    /// Driver processes started, and sessions opened on a kept one (a driver's lock run
    /// out of process).
    pub driver_processes: Option<(u64, u64)>,
    /// The reference run's successful acquisitions (none from a journal written before
    /// they were kept), and its failed acquires by their error.
    pub reference_acquired: Option<u64>,
    pub reference_acquire_failures: BTreeMap<String, u64>,
}

impl Findings {
    fn new(follow_on_repeats_max: u32, control_every: u64) -> Findings {
        Findings {
            reference_run: false,
            requests_seen: 0,
            tried: 0,
            struck: 0,
            pairs_tried: 0,
            left_out: 0,
            left_out_by_repeats: 0,
            follow_on_repeats_max,
            findings: Vec::new(),
            fault_free: FaultFree::default(),
            control_every,
            shapes: Vec::new(),
            interrupted: false,
            driver_processes: None,
            reference_acquired: None,
            reference_acquire_failures: BTreeMap::new(),
        }
    }

    /// Why the search put no property to the test, if it did not: its reference run, the
    /// script without a fault, acquired the lock not once (every acquire failed, or none
    /// ended). Its points then only fault a lock that never works: such a search is
    /// inconclusive, whatever held. Names the commonest error and its count.
    pub fn nothing_exercised(&self) -> Option<String> {
        let acquired = self.reference_acquired?;
        let exercised = Exercised::of_acquires(acquired, &self.reference_acquire_failures);
        let nothing = exercised.verdict().err()?;
        Some(format!(
            "the reference run, the script without a fault: {nothing}"
        ))
    }

    /// The findings to list, by index, each with the later findings of its cause
    /// ([`Finding::cause`]): a run of points shares its entry with the first run of
    /// points of its cause; a run without a fault stands alone.
    pub fn by_cause(&self) -> BTreeMap<usize, Vec<usize>> {
        type Cause = (Vec<String>, Vec<&'static str>);
        let mut first: BTreeMap<Cause, usize> = BTreeMap::new();
        let mut listed: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, f) in self.findings.iter().enumerate() {
            if f.origin != Origin::Point {
                listed.insert(i, Vec::new());
                continue;
            }
            match first.get(&f.cause()) {
                Some(&j) => listed.entry(j).or_default().push(i),
                None => {
                    first.insert(f.cause(), i);
                    listed.insert(i, Vec::new());
                }
            }
        }
        listed
    }

    /// Whether a run of points violated only what a fault-free run violated too, at the
    /// same attempts (its fault is perhaps not the cause).
    pub fn as_without_a_fault(&self, f: &Finding) -> bool {
        f.origin == Origin::Point && self.fault_free.explains(&f.signatures)
    }
}

/// One search under way.
struct Running<'a> {
    search: &'a Search,
    setup: &'a Arc<Setup>,
    runtime: &'a Arc<tokio::runtime::Runtime>,
    journal: Journal,
    progress: &'a mut dyn Progress,
    findings: Findings,
}

impl Running<'_> {
    /// The reference run, the shapes, the single points, then the pairs.
    fn all(&mut self, mut servers: Vec<Servers>) -> Result<(), SearchError> {
        let stop = &self.search.stop;
        let reference = match self.journal.reference.take() {
            Some(saved) => {
                let journal = self.journal.describe();
                tell(self.progress, Event::Resumed { journal })?;
                saved
            }
            None => {
                let first = servers
                    .pop()
                    .ok_or_else(|| SearchError::workers("no server"))?;
                let run = self.setup.run(self.runtime, first, &[], stop);
                // Cut short, the reference run is not the script's: nothing to search
                // from, and nothing to save (a resume runs it again).
                if stop.load(Ordering::Acquire) {
                    self.findings.interrupted = true;
                    return Ok(());
                }
                let (reference, back) = run?;
                servers.push(back);
                self.journal.write_reference(&reference)?;
                reference
            }
        };
        self.findings.reference_run = true;
        self.findings.reference_acquired = reference.acquired;
        (self.findings.reference_acquire_failures).clone_from(&reference.acquire_failures);
        (self.findings.fault_free).add(&reference.violated, &reference.signatures);
        if !reference.violated.is_empty() {
            self.found(&[], &reference, Origin::Reference, false)?;
        }
        let rest = self.run_shapes(&mut servers).and_then(|()| {
            let pool = Pool::new(self.setup, self.runtime, stop, servers);
            self.points(pool, &reference)
        });
        // Nothing that ran is lost: the journal keeps every point judged.
        rest.map_err(|e| match &self.search.journal {
            Some((path, _)) => SearchError::Stopped {
                journal: path.clone(),
                source: Box::new(e),
            },
            None => e,
        })
    }

    /// Keeps a run's violation, and tells it.
    fn found(
        &mut self,
        points: &[Point],
        outcome: &Outcome,
        origin: Origin,
        in_pairs: bool,
    ) -> Result<(), SearchError> {
        let setup = match origin {
            Origin::Shape(shape) => self.setup.shaped(shape),
            _ => Setup::clone(self.setup),
        };
        let finding = Finding {
            repro: setup.repro(points),
            points: points.to_vec(),
            violated: outcome.violated.clone(),
            signatures: outcome.signatures.clone(),
            origin,
            timeline: outcome.timeline.clone(),
            explanation: outcome.explanation.clone(),
            html: outcome.html.clone(),
        };
        self.findings.findings.push(finding);
        let index = self.findings.findings.len() - 1;
        let finding = &self.findings.findings[index];
        tell(
            self.progress,
            Event::Found {
                finding,
                index,
                in_pairs,
            },
        )
    }

    /// Runs each of the search's workload shapes once, without a fault, as many at once
    /// as there are servers: a shape's script is the search's own with a few knobs
    /// changed ([`Shape::script`]), and its verdict is recorded as a point's is, with the
    /// `real` line of that script. A shape the journal judged already is not run again.
    fn run_shapes(&mut self, servers: &mut Vec<Servers>) -> Result<(), SearchError> {
        let mut todo = Vec::new();
        for &shape in &self.setup.shapes {
            match self.journal.judged_shape(shape) {
                Some(outcome) => self.shape_judged(shape, outcome)?,
                None => todo.push(shape),
            }
        }
        if !todo.is_empty() {
            tell(self.progress, Event::ShapesStarting { shapes: &todo })?;
        }
        let (setup, runtime, stop) = (self.setup, self.runtime, &self.search.stop);
        let at_once = servers.len().max(1);
        for batch in todo.chunks(at_once) {
            if stop.load(Ordering::Acquire) {
                break;
            }
            type Ran = Result<(Outcome, Servers), SearchError>;
            let results: Vec<(Shape, Ran)> = std::thread::scope(|scope| {
                let runs: Vec<_> = batch
                    .iter()
                    .filter_map(|&shape| {
                        let these = servers.pop()?;
                        let shaped = setup.shaped(shape);
                        let runtime: &tokio::runtime::Runtime = runtime;
                        let run = scope.spawn(move || shaped.run(runtime, these, &[], stop));
                        Some((shape, run))
                    })
                    .collect();
                runs.into_iter()
                    .map(|(shape, run)| {
                        let result = run.join().unwrap_or_else(|_| {
                            Err(SearchError::workers(format!(
                                "the run of shape {shape} panicked"
                            )))
                        });
                        (shape, result)
                    })
                    .collect()
            });
            for (shape, result) in results {
                // Cut short by a stop: its verdict says nothing, as a point's.
                if stop.load(Ordering::Acquire) {
                    if let Ok((_, back)) = result {
                        servers.push(back);
                    }
                    continue;
                }
                let (outcome, back) = result.map_err(|e| match e {
                    SearchError::Real { what, source } if what.is_empty() => {
                        SearchError::real(format!("running shape {shape}"), source)
                    }
                    e => e,
                })?;
                servers.push(back);
                self.journal.write_shape(shape, &outcome)?;
                self.shape_judged(shape, outcome)?;
            }
        }
        Ok(())
    }

    /// Keeps a shape's verdict, and its violation with the `real` line of its script.
    fn shape_judged(&mut self, shape: Shape, outcome: Outcome) -> Result<(), SearchError> {
        let violated = &outcome.violated;
        tell(self.progress, Event::ShapeJudged { shape, violated })?;
        if !outcome.violated.is_empty() {
            self.found(&[], &outcome, Origin::Shape(shape), false)?;
        }
        self.findings.shapes.push((shape, outcome.violated));
        Ok(())
    }

    /// Counts a control run among the fault-free runs; its violation is listed when it
    /// names something no fault-free run showed before (the rest are counted only).
    fn control_judged(&mut self, index: u64, outcome: &Outcome) -> Result<(), SearchError> {
        let new = (self.findings.fault_free).add(&outcome.violated, &outcome.signatures);
        if new && !outcome.violated.is_empty() {
            self.found(&[], outcome, Origin::Control(index), false)?;
        }
        Ok(())
    }

    /// A run of points judged: counted, and its violation kept.
    fn point_judged(
        &mut self,
        plan: &[Point],
        outcome: &Outcome,
        in_pairs: bool,
    ) -> Result<(), SearchError> {
        self.findings.tried += 1;
        self.findings.pairs_tried += u64::from(in_pairs);
        self.findings.struck += u64::from(outcome.struck);
        if !outcome.violated.is_empty() {
            self.found(plan, outcome, Origin::Point, in_pairs)?;
        }
        Ok(())
    }

    /// The single points (and the chains the frontier grows), then at k = 2 the pairs.
    /// One function of about 90 lines: both phases share the frontier, the control runs'
    /// schedule, the run limit and the journal, which closures over locals keep simple.
    fn points(&mut self, mut pool: Pool, reference: &Outcome) -> Result<(), SearchError> {
        let (s, setup) = (self.search, self.setup);
        let mut journal = std::mem::take(&mut self.journal);
        let frontier = RefCell::new(Frontier::with_follow_on_repeats_max(
            s.follow_on_repeats_max,
        ));
        let actions = &setup.actions;
        let grow = |plan: &[Point], requests: &[Vec<SeenRequest>]| {
            (frontier.borrow_mut()).add_run(plan, requests, actions, s.max_points);
        };
        grow(&[], &reference.requests);
        let (requests, points) = (frontier.borrow().keys_seen(), frontier.borrow().queued());
        tell(self.progress, Event::Reference { requests, points })?;
        let limit = Limit {
            stop: &s.stop,
            max_runs: s.max_runs,
            runs: Cell::new(0),
        };
        // The single points that struck, with the requests their runs saw (for k = 2).
        let mut singles = Vec::new();
        let mut reached: Vec<Vec<Vec<SeenRequest>>> = Vec::new();
        let controls = RefCell::new(Controls::new(s.control_every));
        let mut control_due = None;
        // At k = 0, no point: the reference run and the shapes only.
        pool.drive(
            &limit,
            &mut journal,
            || match s.k {
                0 => None,
                _ => with_controls(&controls, &mut control_due, || frontier.borrow_mut().pop()),
            },
            |job: &Job, outcome| {
                if let Some(i) = job.control {
                    return self.control_judged(i, &outcome);
                }
                self.point_judged(&job.plan, &outcome, false)?;
                grow(&job.plan, &outcome.requests);
                let queued = Some(frontier.borrow().queued());
                let violations = self.findings.findings.len();
                tell(self.progress, Event::Judged { queued, violations })?;
                if let ([point], true) = (&job.plan[..], outcome.struck) {
                    singles.push(point.clone());
                    reached.push(outcome.requests);
                }
                Ok(())
            },
        )?;
        if s.k >= 2 && !limit.reached() {
            let mut pairs: VecDeque<Vec<Point>> = VecDeque::new();
            for (first, seen) in singles.iter().zip(&reached) {
                for second in second_points(first, seen, &singles) {
                    if first < second && pairs.len() < s.max_points {
                        pairs.push_back(vec![first.clone(), second.clone()]);
                    }
                }
            }
            tell(self.progress, Event::Pairs { pairs: pairs.len() })?;
            let pairs = RefCell::new(pairs);
            pool.drive(
                &limit,
                &mut journal,
                || {
                    with_controls(&controls, &mut control_due, || {
                        pairs.borrow_mut().pop_front()
                    })
                },
                |job: &Job, outcome| {
                    if let Some(i) = job.control {
                        return self.control_judged(i, &outcome);
                    }
                    self.point_judged(&job.plan, &outcome, true)?;
                    let violations = self.findings.findings.len();
                    tell(
                        self.progress,
                        Event::Judged {
                            queued: None,
                            violations,
                        },
                    )
                },
            )?;
        }
        drop(pool);
        self.journal = journal;
        let frontier = frontier.into_inner();
        let f = &mut self.findings;
        f.requests_seen = frontier.keys_seen();
        f.left_out = frontier.left_out;
        f.left_out_by_repeats = frontier.left_out_by_repeats;
        f.interrupted = limit.reached();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_bounds_are_refused_before_any_server_starts() {
        let lock = Lock::driver("kazoo-lock").unwrap();
        let refused = |s: Search| match s.setup() {
            Err(SearchError::Invalid { reason }) => reason,
            other => panic!("not refused: {other:?}"),
        };
        assert!(refused(Search::new(lock.clone()).k(3)).contains("--k must be 0, 1 or 2"));
        let mut one = default_script(&lock);
        one.clients = MAX_SEARCH_CLIENTS + 1;
        assert!(refused(Search::new(lock.clone()).script(one)).contains("--clients"));
        assert!(refused(Search::new(lock.clone()).max_points(0)).contains("--max-points"));
        let mut readers = default_script(&lock);
        readers.readers = 1;
        assert!(refused(Search::new(lock).script(readers)).contains("has no read side"));
    }

    #[test]
    fn a_reproduction_line_runs_the_script_with_its_points_and_the_journal_line_ignores_the_program()
     {
        let lock = Lock::driver("kazoo-lock").unwrap();
        let a = Search::new(lock.clone()).program("my-cli").setup().unwrap();
        let b = Search::new(lock).setup().unwrap();
        let repro = a.repro(&[]);
        assert!(
            repro.starts_with("my-cli real --lock kazoo-lock --clients 2 --attempts 4"),
            "{repro}"
        );
        assert!(repro.ends_with("--faults none --warm-up-runs 3"), "{repro}");
        assert_eq!(a.journal_line(), b.journal_line());
        assert!(
            a.journal_line()
                .starts_with("zklock real --lock kazoo-lock")
        );
        // A container interval is the servers': the line carries it, and a journal of
        // another interval is another search.
        let c = Search::new(Lock::driver("kazoo-lock").unwrap())
            .container_check_interval_ms(Some(100))
            .setup()
            .unwrap();
        assert!(
            c.repro(&[])
                .ends_with("--warm-up-runs 3 --container-check-interval-ms 100"),
            "{}",
            c.repro(&[])
        );
        assert_ne!(c.journal_line(), b.journal_line());
        assert_eq!(c.server_options().container_check_interval_ms, Some(100));
    }

    use zklock_real::plan::AimedAction::{self, DropRequest, Expire};

    fn finding(
        signatures: &[&str],
        points: &[(u32, AimedAction, &'static str)],
        origin: Origin,
    ) -> Finding {
        let points = points.iter().map(|&(client, action, op)| Point {
            at: crate::frontier::RequestKey {
                client,
                op,
                class: "/zklock/lock/".to_owned(),
                nth: 1,
            },
            action,
            repeat: zklock_real::plan::Repeat::Once,
        });
        Finding {
            repro: String::new(),
            points: points.collect(),
            violated: Vec::new(),
            signatures: signatures.iter().map(|s| s.to_string()).collect(),
            origin,
            timeline: None,
            explanation: None,
            html: None,
        }
    }

    #[test]
    fn findings_of_one_cause_are_listed_once_and_a_fault_free_run_alone() {
        let mut all = Findings::new(8, 20);
        let leak = ["node_outlives_attempt at c0#2"];
        all.findings = vec![
            finding(&leak, &[(0, DropRequest, "delete")], Origin::Point),
            finding(&leak, &[], Origin::Reference),
            // The same violation after the same kind of fault, elsewhere: one cause.
            finding(&leak, &[(1, DropRequest, "create")], Origin::Point),
            // After another kind of fault, or another attempt: causes of their own.
            finding(&leak, &[(0, Expire, "delete")], Origin::Point),
            finding(
                &["node_outlives_attempt at c0#3"],
                &[(0, DropRequest, "delete")],
                Origin::Point,
            ),
            finding(&leak, &[(1, DropRequest, "getChildren")], Origin::Point),
        ];
        let listed: Vec<(usize, Vec<usize>)> = all.by_cause().into_iter().collect();
        assert_eq!(
            listed,
            [(0, vec![2, 5]), (1, vec![]), (3, vec![]), (4, vec![])]
        );
    }

    #[test]
    fn a_shape_that_changes_nothing_in_the_script_is_not_run() {
        let lock = Lock::driver("kazoo-lock").unwrap();
        let setup = Search::new(lock)
            .shapes(Shape::ALL.to_vec())
            .setup()
            .unwrap();
        assert!(!setup.shapes.is_empty());
        for s in &setup.shapes {
            assert_ne!(
                format!("{:?}", s.script(&setup.workload)),
                format!("{:?}", setup.workload)
            );
        }
    }
}
