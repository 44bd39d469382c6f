//! Helpers shared by the real-server tests.

use std::path::PathBuf;
use std::process::Command;
use zklock_checker::CheckConfig;
use zklock_checker::concurrent::{Judged, judge_parallel};
use zklock_real::driver::locate::{self, PYTHON_ENV};
use zklock_real::faults::FaultConfig;
use zklock_real::harness;
use zklock_real::workload::RealRun;
use zklock_recipe::history::History;

fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// False (after a notice) when Java and ZooKeeper are missing; panics under CI, where the
/// real-server suite must run.
pub fn zookeeper_available() -> bool {
    harness::available_for_tests()
}

/// The Python that has Kazoo, if any. Under CI a missing one panics.
pub fn kazoo_python() -> Option<PathBuf> {
    let python = locate::python();
    let ok = Command::new(&python)
        .args(["-c", "import kazoo.recipe.lock"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    let why = format!(
        "{} cannot import kazoo; install it with `apt-get install -y python3-kazoo` (or set \
         {PYTHON_ENV} to a Python that has Kazoo)",
        python.display()
    );
    if under_ci() {
        panic!("CI=true but the Kazoo interop test cannot run: {why}");
    }
    eprintln!("skipping: {why}");
    None
}

/// Runs every property, re-judging waiters caught mid-step (see
/// `zklock_checker::concurrent`).
pub fn judge(history: &History, cfg: &CheckConfig) -> Judged {
    let judged = judge_parallel(history, cfg);
    if judged.reordered > 0 {
        eprintln!(
            "judged with {} mid-step request(s) moved back",
            judged.reordered
        );
    }
    judged
}

/// Checks a history as a real run must pass: no pauses, the given heal and bound.
pub fn check(
    history: &History,
    lock_path: &str,
    final_children: Vec<String>,
    heal_ms: u64,
    bound_ms: u64,
) -> Judged {
    // Fields the checker may gain keep their defaults.
    #[allow(clippy::needless_update)]
    let cfg = CheckConfig {
        heal_ms,
        liveness_bound_ms: bound_ms,
        pauses_on: false,
        lock_path: lock_path.to_owned(),
        final_lock_children: final_children,
        ..CheckConfig::default()
    };
    judge(history, &cfg)
}

/// A run goal on the checker's counters of the history so far: the run goes on until
/// `reached` holds of them (see `WorkloadConfig::until`).
pub fn until_counters(
    reached: impl Fn(&zklock_checker::Counters) -> bool + Send + Sync + 'static,
) -> Option<zklock_real::workload::RunGoal> {
    Some(zklock_real::workload::RunGoal::new(
        move |history, facts| {
            let judged = judge_parallel(history, &CheckConfig::from(facts.clone()));
            reached(&judged.report.counters)
        },
    ))
}

/// Faults of `set` from 300 ms, 150 to 400 ms apart, until every kind struck once and
/// the heal at 2.5 s, for clients of a `session_ms` session: black holes of 300 ms to
/// past the session timeout, so that some end in an expiry.
pub fn faults_until_each_struck(set: &str, seed: u64, session_ms: u64) -> FaultConfig {
    FaultConfig {
        faults: set.parse().expect("a valid fault list"),
        seed,
        start_ms: 300,
        heal_ms: 2_500,
        gap_ms_min: 150,
        gap_ms_max: 400,
        black_hole_ms_min: 300,
        black_hole_ms_max: 2 * session_ms + 500,
        strikes_min_per_kind: 1,
        ..FaultConfig::default()
    }
}

/// Checks a workload run with its own heal time, bound and final children.
pub fn check_run(run: &RealRun) -> Judged {
    judge(&run.history, &CheckConfig::from(run.facts()))
}

/// Panics with the report (and the end of the timeline) unless every property held; the
/// whole timeline goes to a temporary file named in the message.
pub fn assert_ok(judged: &Judged) {
    let (report, history) = (&judged.report, &judged.history);
    if report.ok() {
        return;
    }
    let timeline = zklock_checker::render_timeline(history);
    let file = tempfile::Builder::new()
        .prefix("zklock-real-timeline-")
        .suffix(".txt")
        .tempfile()
        .and_then(|f| f.keep().map_err(|e| e.error));
    let saved = match file {
        Ok((_, path)) => match std::fs::write(&path, &timeline) {
            Ok(()) => format!("the whole timeline: {}", path.display()),
            Err(e) => format!("(could not save the timeline: {e})"),
        },
        Err(e) => format!("(could not save the timeline: {e})"),
    };
    let lines: Vec<&str> = timeline.lines().collect();
    let tail = lines[lines.len().saturating_sub(60)..].join("\n");
    panic!("{report}\n{saved}\n... timeline tail:\n{tail}");
}

/// A real run's shape for the checker: its lock directories with their final children,
/// and a semaphore's leases.
pub fn shape_of(run: &RealRun) -> zklock_checker::real_judge::RunShape {
    zklock_checker::real_judge::RunShape {
        locks: run.final_children_by_lock.clone(),
        leases: run.leases,
        touched: run.final_children_touched.clone(),
        nodes: run.nodes.clone(),
        election: run.election,
        revoke_bound_ms: run.revoke_bound_ms,
    }
}

/// Checks a workload run as its shape asks: per lock, and with `semaphore_leases` for a
/// semaphore's run.
pub fn check_run_shaped(run: &RealRun) -> Judged {
    zklock_checker::real_judge::judge_real(
        &run.history,
        &CheckConfig::from(run.facts()),
        &shape_of(run),
    )
}
