//! The lock under search, the script every run follows, and one run of it judged.

use crate::error::SearchError;
use crate::fault_free::signatures;
use crate::frontier::{Actions, Point};
use crate::judge::{judge, stuck_client_requests};
use crate::recipes::{QueueShape, RealPick, RealRecipeKind, RealRecipes};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use zklock_checker::concurrent::Judged;
use zklock_checker::timeline::{render_history_html, render_marked_timeline};
use zklock_checker::trace::SavedReport;
use zklock_real::RealError;
use zklock_real::driver::pool::DriverPool;
use zklock_real::driver::{DriverKind, DriverRecipe};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::{self, ServerOptions};
use zklock_real::plan::SeenRequest;
use zklock_real::servers::Servers;
use zklock_real::shapes::Shape;
use zklock_real::workload::{RealRecipe, RealRun, WorkloadConfig, run_recipe};
use zklock_recipe::history::EventKind;

/// What one run of the search saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Properties violated (a driver that broke the protocol is `driver_failed`).
    pub violated: Vec<String>,
    /// Whether an aimed fault caught a request.
    pub struck: bool,
    pub requests: Vec<Vec<SeenRequest>>,
    /// The timeline, for a violation.
    pub timeline: Option<String>,
    /// How long the run took, in ms (0 in a journal written before it was kept).
    pub run_ms: u64,
    /// What each violation names ([`signatures`]); a journal written before they were
    /// kept gives the property names.
    pub signatures: Vec<String>,
    /// For a violation: the checker's explanation, and the timeline as an HTML page
    /// (none in a journal written before they were kept).
    pub explanation: Option<String>,
    pub html: Option<String>,
    /// Acquisitions that succeeded (none in a journal written before they were kept),
    /// and the failed acquires by their error.
    pub acquired: Option<u64>,
    pub acquire_failures: BTreeMap<String, u64>,
}

/// The lock under search: one of zklock's recipes (the lock, the semaphore, a canary), a
/// program's own ([`RealRecipe`]), or a released library's through its driver.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum Lock {
    Recipe(RealPick),
    Driver(DriverKind),
}

impl Lock {
    /// A released library's lock, by its driver's name (`kazoo-lock`, `curator-mutex`, ...).
    pub fn driver(name: &str) -> Result<Lock, SearchError> {
        DriverKind::parse(name)
            .map(Lock::Driver)
            .map_err(SearchError::invalid)
    }

    /// Your own lock's real side, named `name` in the reproduction lines (the name your
    /// command line registers it under, so that they run it).
    pub fn recipe<R: RealRecipe>(name: impl Into<String>, recipe: R) -> Lock {
        Lock::Recipe(RealPick::user(name.into(), recipe))
    }

    /// The lock `name` names: a recipe of `recipes` (zklock's and the ones registered),
    /// else a driver's lock. A work queue is no lock to search.
    pub fn named(name: &str, recipes: &RealRecipes) -> Result<Lock, SearchError> {
        match recipes.parse(name) {
            Ok(pick) if pick.is_queue() => Err(SearchError::invalid(
                "--lock: a work queue is not a lock to search",
            )),
            Ok(pick) => Ok(Lock::Recipe(pick)),
            Err(_) => Lock::driver(name).map_err(|e| {
                // The work queues are no locks to search: not offered.
                let locks: Vec<&str> = recipes
                    .names()
                    .into_iter()
                    .filter(|n| recipes.parse(n).is_ok_and(|p| !p.is_queue()))
                    .collect();
                SearchError::invalid(format!("--lock: {e}, or a recipe ({})", locks.join(", ")))
            }),
        }
    }

    /// Its name, as the search's lines give it.
    pub fn name(&self) -> &str {
        match self {
            Lock::Recipe(pick) => pick.name(),
            Lock::Driver(kind) => kind.name(),
        }
    }

    /// Whether its holders can be asked to give up (`--revokers`): zklock's lock, or a
    /// user's lock (a run whose revokers saw no holder give up says so).
    pub fn is_revocable(&self) -> bool {
        match self {
            Lock::Recipe(pick) => pick.is_revocable(),
            Lock::Driver(_) => false,
        }
    }

    /// Whether its clients may take a read side.
    pub fn has_readers(&self) -> bool {
        match self {
            Lock::Recipe(pick) => pick.has_readers(),
            Lock::Driver(kind) => kind.has_readers(),
        }
    }
}

/// The lock under search and the script every run follows.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub lock: Lock,
    pub workload: WorkloadConfig,
    pub actions: Actions,
    /// The command the reproduction lines start with (`zklock`, a user's binary).
    pub program: String,
    /// The workload shapes run before the points.
    pub shapes: Vec<Shape>,
    /// Driver processes kept from one run for the next (a driver's lock only); None: a
    /// process for every session.
    pub drivers: Option<Arc<DriverPool>>,
    /// See [`crate::Search::container_check_interval_ms`].
    pub container_check_interval_ms: Option<u32>,
}

/// The warm-up runs the reproduction lines of a search that kept its drivers ask for.
const REPRO_WARM_UP_RUNS: u32 = 3;
/// Where every lock of a search lives (the default lock path's root).
const ZKLOCK_ROOT: &str = "/zklock";
/// How long clearing the tree between runs may take: only a hang reaches it.
const CLEAR_TIMEOUT: Duration = Duration::from_secs(60);

impl Setup {
    /// The options of the servers the search starts.
    pub fn server_options(&self) -> ServerOptions {
        match self.container_check_interval_ms {
            Some(ms) => ServerOptions::default().with_container_check_interval_ms(ms),
            None => ServerOptions::default(),
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
    pub fn journal_line(&self) -> String {
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
    pub fn shaped(&self, shape: Shape) -> Setup {
        Setup {
            workload: shape.script(&self.workload),
            shapes: Vec::new(),
            ..self.clone()
        }
    }

    /// The command line that runs `points` on this script, with this program.
    pub fn repro(&self, points: &[Point]) -> String {
        format!("{} {}", self.program, self.real_args(points))
    }

    /// `real` and its flags that run `points` on this script.
    fn real_args(&self, points: &[Point]) -> String {
        let mut line = format!("real {} {}", self.lock_flag(), script_args(&self.workload));
        if self.drivers.is_some()
            && matches!(self.lock, Lock::Driver(kind) if !kind.runs_in_process())
        {
            // The search's drivers were warm: so are the line's, as far as a few runs go.
            line.push_str(&format!(" --warm-up-runs {REPRO_WARM_UP_RUNS}"));
        }
        if let Some(ms) = self.container_check_interval_ms {
            line.push_str(&format!(" --container-check-interval-ms {ms}"));
        }
        for p in points {
            line.push_str(&format!(" --aim {}", p.aim_arg()));
        }
        line
    }

    /// One run with `points` aimed, on `servers`, judged; hands the servers back.
    pub fn run(
        &self,
        runtime: &tokio::runtime::Runtime,
        servers: Servers,
        points: &[Point],
        stop: &Arc<AtomicBool>,
    ) -> Result<(Outcome, Servers), SearchError> {
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
                    .map_err(|e| SearchError::real("", e))?
                    .with_spares(ends_sessions);
                if let Some(pool) = &self.drivers {
                    recipe = recipe.with_pool(Arc::clone(pool));
                }
                let status = recipe.status();
                let run = runtime.block_on(run_recipe(servers, &workload, &faults, recipe));
                (run, status.failure())
            }
        };
        let run_ms = || u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
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
                    run_ms: run_ms(),
                    signatures: vec!["driver_failed".into()],
                    explanation: None,
                    html: None,
                    acquired: None,
                    acquire_failures: BTreeMap::new(),
                };
                let servers = Servers::start(1, self.server_options()).map_err(|e| {
                    SearchError::real("starting a ZooKeeper server after a driver failed", e)
                })?;
                return Ok((outcome, servers));
            }
            Err(e) => return Err(SearchError::real("", e)),
        };
        let mut outcome = judged(&run, failed);
        outcome.run_ms = run_ms();
        let servers = clear(runtime, run)?;
        Ok((outcome, servers))
    }
}

/// The run's verdict. A library that stopped answering is judged by the checker (a stuck
/// lock or release, `liveness_after_heal`, with the stuck client's last requests); a
/// driver that broke the protocol is `driver_failed`, its verdict not to be trusted.
fn judged(run: &RealRun, failed: Option<String>) -> Outcome {
    let Judged {
        report, history, ..
    } = judge(run);
    let mut violated: Vec<String> = report.violated().iter().map(|p| p.to_string()).collect();
    let mut signatures = signatures(&report, &history);
    let mut timeline = stuck_client_requests(run, &report).map(|l| l + "\n");
    if let Some(why) = &failed {
        violated.push("driver_failed".into());
        signatures.push("driver_failed".into());
        timeline = Some(format!("the driver failed: {why}\n"));
    }
    let (mut explanation, mut html) = (None, None);
    let (mut acquired, mut acquire_failures) = (0, BTreeMap::new());
    for e in &history.events {
        match &e.kind {
            EventKind::Acquired { .. } => acquired += 1,
            EventKind::AcquireFailed { reason } => {
                *acquire_failures.entry(reason.clone()).or_default() += 1;
            }
            _ => {}
        }
    }
    if !violated.is_empty() {
        let saved = SavedReport::of_report(&report);
        let text = render_marked_timeline(&history, &saved.marks());
        timeline = Some(timeline.unwrap_or_default() + &text);
        explanation = Some(report.to_string());
        html = Some(render_history_html("zklock search run", &history, &saved));
    }
    Outcome {
        violated,
        struck: run.aimed_strikes > 0,
        requests: run.requests.iter().map(|(r, _)| r.clone()).collect(),
        timeline,
        run_ms: 0,
        signatures,
        explanation,
        html,
        acquired: Some(acquired),
        acquire_failures,
    }
}

/// Takes the servers back from `run`, with the lock's directories deleted, so that the
/// next run starts as the first did.
fn clear(runtime: &tokio::runtime::Runtime, run: RealRun) -> Result<Servers, SearchError> {
    let RealRun { servers, .. } = run;
    let connect = servers.connect_string();
    runtime
        .block_on(harness::delete_tree(&connect, ZKLOCK_ROOT, CLEAR_TIMEOUT))
        .map_err(|e| SearchError::real("clearing the lock's directories between runs", e))?;
    Ok(servers)
}

/// The flags of a finding's line that give its script (`--clients 2 --attempts 4 ...`):
/// what `zklock real` runs, and what an export reads back.
pub(crate) fn script_args(w: &WorkloadConfig) -> String {
    let mut line = format!(
        "--clients {} --attempts {} --session-timeout-ms {} --hold-ms {} --drop-every {} \
         --acquire-timeout-ms {} --duration {}ms --faults none",
        w.clients,
        w.attempts_per_client,
        w.session_timeout_ms,
        w.hold_ms,
        w.drop_every,
        w.acquire_timeout_ms,
        w.duration_ms
    );
    let optional = [
        ("--readers", u64::from(w.readers)),
        ("--revokers", u64::from(w.revokers)),
        ("--mix-offset", u64::from(w.mix_offset)),
        ("--start-stagger-ms", w.start_stagger_ms),
        ("--idle-after-give-up-ms", w.idle_after_give_up_ms),
        ("--leak-bound-ms", w.leak_bound_ms),
        ("--fresh-lock-every", u64::from(w.fresh_lock_every)),
    ];
    for (flag, value) in optional {
        if value > 0 {
            line.push_str(&format!(" {flag} {value}"));
        }
    }
    if w.long_hold_every > 0 {
        line.push_str(&format!(
            " --long-hold-every {} --long-hold-ms {}",
            w.long_hold_every, w.long_hold_ms
        ));
    }
    line
}
