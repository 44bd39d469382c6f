//! `zklock search`: the fault-point search over real runs (`zklock_real::search`). A
//! reference run of a fixed script records every request each client sends; then one run
//! per point (each request × each action, and repetitions) and, at `--k 2`, per pair whose
//! second request the first point's run reached. Each run is judged by the checker; each
//! violation is printed with the `zklock real` line that reproduces it.

use crate::Status;
use crate::cli::SearchArgs;
use crate::files::create_private_dir;
use crate::real_recipes::{QueueShape, RealRecipeKind};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zklock_checker::concurrent::Judged;
use zklock_checker::timeline::render_marked_timeline;
use zklock_checker::trace::SavedReport;
use zklock_real::driver::{DriverKind, DriverRecipe};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::{self, ServerOptions};
use zklock_real::plan::SeenRequest;
use zklock_real::search::{Actions, Frontier, Point, second_points};
use zklock_real::servers::Servers;
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
}

/// The lock under search: one of zklock's recipes (the lock, the semaphore, a canary),
/// or a released library's through its driver.
#[derive(Clone, Copy, Debug)]
enum Lock {
    Zklock(RealRecipeKind),
    Driver(DriverKind),
}

/// The lock under search and the script every run follows.
struct Setup {
    lock: Lock,
    workload: WorkloadConfig,
    actions: Actions,
}

impl Setup {
    fn lock_name(&self) -> &'static str {
        match self.lock {
            Lock::Zklock(kind) => kind.name(),
            Lock::Driver(kind) => kind.name(),
        }
    }

    /// The flag that names the lock to `zklock real`.
    fn lock_flag(&self) -> String {
        match self.lock {
            Lock::Zklock(RealRecipeKind::Shipped) => "--lock zklock".into(),
            Lock::Zklock(kind) => format!("--recipe {}", kind.name()),
            Lock::Driver(kind) => format!("--lock {}", kind.name()),
        }
    }

    /// The `zklock real` line that runs `points` on this script.
    fn repro(&self, points: &[Point]) -> String {
        let w = &self.workload;
        let mut line = format!(
            "zklock real {} --clients {} --attempts {} --session-timeout-ms {} \
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
        let mut workload = self.workload.clone();
        workload.interrupt = Some(Arc::clone(stop));
        let (run, failed) = match self.lock {
            Lock::Zklock(kind) => {
                let queue = QueueShape {
                    producers: 1,
                    items_per_producer: 1,
                };
                let run = kind.run(servers, &workload, &faults, &queue);
                (runtime.block_on(run), None)
            }
            Lock::Driver(kind) => {
                let recipe = DriverRecipe::prepare(kind).map_err(anyhow::Error::new)?;
                let status = recipe.status();
                let run = runtime.block_on(run_recipe(servers, &workload, &faults, recipe));
                (run, status.failure())
            }
        };
        let run = run.map_err(anyhow::Error::new)?;
        let outcome = judge(&run, failed);
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
    let mut timeline = crate::real_cmd::stuck_client_requests(run, &report).map(|l| l + "\n");
    if let Some(why) = &failed {
        violated.push("driver_failed".into());
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

/// Where every lock of a search lives (the default lock path's root).
const ZKLOCK_ROOT: &str = "/zklock";
/// How long clearing the tree between runs may take: only a hang reaches it.
const CLEAR_TIMEOUT: Duration = Duration::from_secs(60);

/// One violation: its points, properties and where its timeline went.
struct Finding {
    points: Vec<Point>,
    violated: Vec<String>,
    timeline: Option<PathBuf>,
}

#[derive(Default)]
struct Tally {
    tried: u64,
    struck: u64,
    findings: Vec<Finding>,
}

pub fn run(a: SearchArgs) -> Result<Status> {
    let setup = parse(&a)?;
    if let Lock::Driver(kind) = setup.lock {
        // Located (and built, the first time) before any server starts.
        DriverRecipe::prepare(kind).map_err(anyhow::Error::new)?;
    }
    harness::availability().map_err(anyhow::Error::new)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    eprintln!("starting a ZooKeeper server...");
    let mut servers =
        Servers::start(1, ServerOptions::default()).context("starting a ZooKeeper server")?;
    let stop = crate::interrupt::for_real_run();
    let started = Instant::now();
    let w = &setup.workload;
    outln!(
        "zklock search: {} with {} clients ({} readers), {} attempts each (drop every {}, \
         session {} ms), k = {}",
        setup.lock_name(),
        w.clients,
        w.readers,
        w.attempts_per_client,
        w.drop_every,
        w.session_timeout_ms,
        a.k
    );
    let (reference, back) = setup.run(&runtime, servers, &[], &stop)?;
    servers = back;
    let mut tally = Tally::default();
    if !reference.violated.is_empty() {
        record(
            &a.out,
            &setup,
            &mut tally,
            Vec::new(),
            reference.violated.clone(),
            reference.timeline.clone(),
        )?;
    }
    let mut frontier = Frontier::default();
    frontier.add_run(&[], &reference.requests, &setup.actions, a.max_points);
    outln!(
        "reference run: {} requests, {} points",
        frontier.keys_seen(),
        frontier.queued()
    );
    let bar = ProgressBar::new(frontier.queued() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} points, {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // The single points that struck, with the requests their runs saw (for k = 2).
    let mut singles = Vec::new();
    let mut reached: Vec<Vec<Vec<SeenRequest>>> = Vec::new();
    while let Some(plan) = frontier.pop() {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let (outcome, back) = setup.run(&runtime, servers, &plan, &stop)?;
        servers = back;
        // A run cut short by Ctrl-C healed early: its verdict says nothing of its point.
        if stop.load(Ordering::Acquire) {
            break;
        }
        tally.tried += 1;
        tally.struck += u64::from(outcome.struck);
        if !outcome.violated.is_empty() {
            let at = plan
                .iter()
                .map(Point::to_string)
                .collect::<Vec<_>>()
                .join(" then ");
            bar.suspend(|| outln!("violated {} at {at}", outcome.violated.join(", ")));
            record(
                &a.out,
                &setup,
                &mut tally,
                plan.clone(),
                outcome.violated,
                outcome.timeline,
            )?;
        }
        frontier.add_run(&plan, &outcome.requests, &setup.actions, a.max_points);
        bar.set_length(frontier.queued() as u64);
        bar.inc(1);
        bar.set_message(format!("{} violations", tally.findings.len()));
        if let ([point], true) = (plan.as_slice(), outcome.struck) {
            singles.push(point.clone());
            reached.push(outcome.requests);
        }
    }
    let mut pairs_tried = 0u64;
    if a.k >= 2 && !stop.load(Ordering::Acquire) {
        let mut pairs: Vec<(Point, Point)> = Vec::new();
        for (first, seen) in singles.iter().zip(&reached) {
            for second in second_points(first, seen, &singles) {
                if first < second && pairs.len() < a.max_points {
                    pairs.push((first.clone(), second.clone()));
                }
            }
        }
        outln!("k = 2: {} pairs after dynamic reduction", pairs.len());
        bar.set_length(bar.position() + pairs.len() as u64);
        for (first, second) in pairs {
            if stop.load(Ordering::Acquire) {
                break;
            }
            let points = [first, second];
            let (outcome, back) = setup.run(&runtime, servers, &points, &stop)?;
            servers = back;
            if stop.load(Ordering::Acquire) {
                break;
            }
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
                record(
                    &a.out,
                    &setup,
                    &mut tally,
                    points.to_vec(),
                    outcome.violated,
                    outcome.timeline,
                )?;
            }
            bar.inc(1);
            bar.set_message(format!("{} violations", tally.findings.len()));
        }
    }
    bar.finish_and_clear();
    drop(servers);
    runtime.shutdown_timeout(Duration::from_secs(1));
    let interrupted = stop.load(Ordering::Acquire);
    print_table(
        &setup,
        &tally,
        &frontier,
        pairs_tried,
        started.elapsed(),
        interrupted,
    );
    Ok(match (tally.findings.is_empty(), interrupted) {
        (false, _) => Status::Violated,
        (true, true) => Status::Inconclusive,
        (true, false) => Status::Held,
    })
}

/// Keeps a violation, writing its timeline under `out`.
fn record(
    out: &Path,
    setup: &Setup,
    tally: &mut Tally,
    points: Vec<Point>,
    violated: Vec<String>,
    timeline: Option<String>,
) -> Result<()> {
    let path = match timeline {
        Some(text) => {
            create_private_dir(out)?;
            let name = format!(
                "search-{}-{}.timeline.txt",
                setup.lock_name(),
                tally.findings.len() + 1
            );
            let path = out.join(name);
            let header = format!("{}\n", setup.repro(&points));
            crate::files::write_private(&path, (header + &text).as_bytes(), true)?;
            Some(path)
        }
        None => None,
    };
    tally.findings.push(Finding {
        points,
        violated,
        timeline: path,
    });
    Ok(())
}

fn print_table(
    setup: &Setup,
    tally: &Tally,
    frontier: &Frontier,
    pairs_tried: u64,
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
    for f in &tally.findings {
        outln!();
        outln!("{}:", f.violated.join(", "));
        outln!("  {}", setup.repro(&f.points));
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

fn parse(a: &SearchArgs) -> Result<Setup> {
    let lock = match RealRecipeKind::parse(&a.lock) {
        Ok(kind) if kind.is_queue() => bail!("--lock: a work queue is not a lock to search"),
        Ok(kind) => Lock::Zklock(kind),
        Err(_) => Lock::Driver(DriverKind::parse(&a.lock).map_err(|e| {
            anyhow::anyhow!("--lock: {e}, or one of zklock's recipes (`zklock recipes`)")
        })?),
    };
    if !(1..=2).contains(&a.k) {
        bail!("--k must be 1 or 2, got {}", a.k);
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
    if a.readers > 0 {
        let has_readers = match lock {
            Lock::Zklock(kind) => kind.has_readers(),
            Lock::Driver(kind) => kind.has_readers(),
        };
        if !has_readers {
            bail!(
                "--readers: the lock {} has no read side (zklock, kazoo-rw and curator-rw have)",
                a.lock
            );
        }
        if a.readers > a.clients {
            bail!(
                "--readers must be at most --clients ({}), got {}",
                a.clients,
                a.readers
            );
        }
    }
    let workload = WorkloadConfig {
        clients: a.clients,
        readers: a.readers,
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
    Ok(Setup {
        lock,
        actions: Actions {
            // Past the session timeout: the server expires the session in the pause.
            pause_ms: a.session_timeout_ms.saturating_mul(2),
            repeat_next: a.repeat_next,
            repeat_window_ms: a.repeat_window_ms,
        },
        workload,
    })
}

/// The most clients a search takes: each point is tried on each client's requests.
const MAX_SEARCH_CLIENTS: u32 = 8;
/// The most attempts a client's script takes.
const MAX_SEARCH_ATTEMPTS: u32 = 32;
