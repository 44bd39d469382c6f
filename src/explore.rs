//! `zklock explore`: a seed sweep of a recipe on every core, every run checked; a failure
//! is written as a trace, shrunk, and its replay command printed. And `zklock merge`.

use crate::cli::{ExploreArgs, MergeArgs};
use crate::files::{
    check_out_dir, check_out_file, create_private_dir, refuse_existing, trace_path, write_private,
};
use crate::given::Given;
use crate::program::Program;
use crate::{Status, recipe};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zklock_checker::exercised::Exercised;
use zklock_checker::registry::Recipes;
use zklock_checker::{Budget, CheckedRun, Counters, ShrinkLimits, Summary, SweepRange};
use zklock_sim::{Scenario, SimError};

/// The regressions file's name in the --out directory, by default.
pub const REGRESSIONS_FILE: &str = "regressions.txt";

/// Seeds a sweep runs when neither --seeds nor --for says: a few seconds of work on two
/// cores, enough that a bug on one seed in a few thousand shows.
pub const SEEDS_DEFAULT: u64 = 10_000;

/// `30s`, `1500ms`, `2m`, or a bare number of seconds, in ms.
pub(crate) fn parse_duration_ms(flag: &str, v: &str) -> Result<u64> {
    let (digits, unit_ms) = if let Some(d) = v.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = v.strip_suffix('s') {
        (d, 1_000)
    } else if let Some(d) = v.strip_suffix('m') {
        (d, 60_000)
    } else {
        (v, 1_000)
    };
    let n: u64 = digits
        .trim()
        .parse()
        .ok()
        .with_context(|| format!("{flag}: {v:?} is not a duration (e.g. 30s, 1500ms, 2m)"))?;
    Ok(n.saturating_mul(unit_ms))
}

/// `--for`'s duration in ms, bounded as --time-limit-s is.
fn for_ms(v: &str) -> Result<u64> {
    let ms = parse_duration_ms("--for", v)?;
    if ms == 0 {
        bail!("--for must be longer than 0 ms, got {v:?}");
    }
    let max = zklock_checker::limits::WALL_TIME_LIMIT_MS_MAX;
    if ms > max {
        bail!(
            "--for is {v}, more than its maximum of {} days",
            max / (24 * 3_600_000)
        );
    }
    Ok(ms)
}

pub fn run(a: ExploreArgs, recipes: &Recipes, given: &Given, program: &Program) -> Result<Status> {
    let lock = recipe(recipes, &a.recipe, "--recipe")?;
    refuse_inapplicable(lock, &a.recipe, given)?;
    let budget = sweep_budget(&a)?;
    let sc = sweep_scenario(&a, lock)?;
    refuse_empty_sweep(&budget, &sc)?;
    // Refused before the sweep, not after it has run for an hour and found a failure
    // with nowhere to write it.
    if let Some(p) = &a.summary {
        check_out_file("--summary", p, false, a.force)?;
    }
    check_out_dir("--out", &a.out)?;
    let total = budget.seed_count();
    if total == 0 {
        bail!(
            "shard {}/{} of seeds {}..{} holds no seed; use fewer shards or more seeds",
            budget.shard_index + 1,
            budget.shard_count,
            budget.seed_start,
            budget.seed_start.saturating_add(budget.seeds)
        );
    }
    let bar = progress_bar(&a, total);
    // Seeds an earlier sweep of this recipe and strategy found, replayed first: a bug
    // found once fails every later sweep at once, whatever its range.
    let regressions = (!a.no_regressions).then(|| {
        a.regressions
            .clone()
            .unwrap_or_else(|| a.out.join(REGRESSIONS_FILE))
    });
    let key = format!("explore/{}/{}", a.recipe, budget.strategy.name());
    let explored = sweep_after_recorded(lock, &sc, &budget, regressions.as_deref(), &key, &bar)?;
    bar.finish_and_clear();
    let mut s = explored.summary;
    // Summaries and traces name the recipe as it is registered, which is what
    // `--recipe` and `replay` look up.
    s.recipe = a.recipe.clone();
    print_sweep(&a, &budget, &sc, &s);
    let (Some((seed, run)), Some(seed_sc)) = (explored.failure, explored.failure_scenario) else {
        write_summary(&a, &s)?;
        return Ok(judge_held(&a, &s, &sc, total, program));
    };
    outln!("\nseed {seed}: FAILED {}\n", failure_text(&run));
    outln!("{}", run.report_text());
    // A violation found exits 1 whatever happens to the files after it: the trace first,
    // then the summary, each error told.
    // `seed_sc` is the seed's own scenario: under a strategy other than uniform, not the
    // sweep's.
    let written = write_failure(&a, &seed_sc, lock, seed, &run, program);
    if let Err(e) = &written {
        eprintln!("error: {e:#}");
    }
    // After the trace: its directory is made private first.
    if let Some(p) = &regressions {
        record_regression(p, &budget, key, &seed_sc, seed, &run);
    }
    if let Err(e) = write_summary(&a, &s) {
        eprintln!("error: {e:#}");
    }
    Ok(Status::Violated)
}

/// The sweep's budget from its flags: seeds, time, threads, shard, strategy.
fn sweep_budget(a: &ExploreArgs) -> Result<Budget> {
    let time_limit_ms = match (&a.for_, a.time_limit_s) {
        (Some(d), _) => Some(for_ms(d)?),
        (None, Some(s)) => Some(zklock_checker::limits::wall_time_ms_from_s(
            "--time-limit-s",
            s,
        )?),
        (None, None) => None,
    };
    let mut budget = Budget {
        // A time budget alone runs seeds until the time is up.
        seeds: match (a.seeds, &a.for_) {
            (Some(n), _) => n,
            (None, Some(_)) => u64::MAX - a.seed_start,
            (None, None) => SEEDS_DEFAULT,
        },
        seed_start: a.seed_start,
        time_limit_ms,
        ..Budget::default()
    };
    if let Some(t) = a.threads {
        budget.threads = t;
    }
    if let Some(shard) = a.shard {
        budget.shard_index = shard.index;
        budget.shard_count = shard.count;
    }
    budget.interrupt = crate::interrupt::for_sweep();
    budget.strategy = a.strategy.into();
    Ok(budget)
}

/// The recipe's own scenario, each knob a flag gives replaced.
fn sweep_scenario(
    a: &ExploreArgs,
    lock: &dyn zklock_checker::registry::AnyRecipe,
) -> Result<Scenario> {
    let base = lock.scenario();
    let clients = a.clients.unwrap_or(base.clients);
    Ok(Scenario {
        clients,
        acquisitions_per_client: a.acquisitions.unwrap_or(base.acquisitions_per_client),
        drop_every: a.drop_every.unwrap_or(base.drop_every),
        ..a.scenario.apply(base, clients)?
    })
}

/// A sweep of nothing would print "every property held" having checked nothing.
fn refuse_empty_sweep(budget: &Budget, sc: &Scenario) -> Result<()> {
    if budget.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    if sc.acquisitions_per_client == 0 {
        bail!("--acquisitions must be at least 1");
    }
    if sc.clients == 0 || sc.clients > 64 {
        bail!("--clients must be between 1 and 64, got {}", sc.clients);
    }
    if budget.threads == 0 {
        bail!("--threads must be at least 1");
    }
    Ok(())
}

fn progress_bar(a: &ExploreArgs, total: u64) -> ProgressBar {
    match &a.for_ {
        // Bounded by time: the seeds run so far, and the time left.
        Some(d) => ProgressBar::new(total).with_style(
            ProgressStyle::with_template(&format!("{{spinner}} {{pos}} seeds  {{elapsed}} of {d}"))
                .expect("static template"),
        ),
        None => ProgressBar::new(total).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {elapsed} (eta {eta})")
                .expect("static template"),
        ),
    }
}

/// Replays the seeds recorded under `key` in `regressions`, one by one; the first that
/// fails again is the sweep's result. When each holds, the sweep itself runs.
fn sweep_after_recorded(
    lock: &dyn zklock_checker::registry::AnyRecipe,
    sc: &Scenario,
    budget: &Budget,
    regressions: Option<&Path>,
    key: &str,
    bar: &ProgressBar,
) -> Result<zklock_checker::Explored> {
    let recorded = match regressions {
        Some(p) => recorded_seeds(p, key)?,
        None => Vec::new(),
    };
    let file = regressions.unwrap_or(Path::new("")).display();
    for (seed, own) in &recorded {
        let seed = *seed;
        let one = Budget {
            seed_start: seed,
            seeds: 1,
            shard_index: 0,
            shard_count: 1,
            threads: 1,
            ..budget.clone()
        };
        let mut x = match own {
            // A coverage seed's scenario came from its sweep's corpus: it is replayed in
            // the scenario recorded with it.
            Some(own) => lock.explore(
                own,
                &Budget {
                    strategy: zklock_checker::Strategy::Uniform,
                    ..one
                },
                &|_, _| {},
            )?,
            None => lock.explore(sc, &one, &|_, _| {})?,
        };
        if x.failure.is_some() {
            bar.finish_and_clear();
            outln!("recorded seed {seed} ({file}) fails again: the sweep stops there");
            // The summary is the sweep's that was asked for, whatever scenario the
            // recorded seed replayed in (its trace records that one).
            x.summary.strategy = budget.strategy;
            x.summary.scenario = sc.clone();
            return Ok(x);
        }
    }
    if !recorded.is_empty() {
        outln!(
            "{} recorded seeds replayed first ({file}): each held",
            recorded.len()
        );
    }
    Ok(lock.explore(sc, budget, &|done, _| bar.set_position(done))?)
}

/// The sweep's lines: what ran, in which scenario, and its counters.
fn print_sweep(a: &ExploreArgs, budget: &Budget, sc: &Scenario, s: &Summary) {
    // A sweep bounded by time alone has no end seed to name.
    let range_end = match (&a.for_, a.seeds) {
        (Some(_), None) => "".to_owned(),
        _ => budget.seed_start.saturating_add(budget.seeds).to_string(),
    };
    outln!(
        "{} seeds run (seeds {}..{range_end}, shard {}/{}) of recipe {} on {} threads in {:.2} s{}",
        s.seeds_run,
        budget.seed_start,
        budget.shard_index + 1,
        budget.shard_count,
        a.recipe,
        budget.threads,
        s.wall_ms as f64 / 1000.0,
        if s.interrupted {
            " (interrupted: the sweep was cut short)"
        } else if s.stopped_by_time && a.for_.is_some() {
            " (its time is up)"
        } else if s.stopped_by_time {
            " (time limit reached)"
        } else {
            ""
        }
    );
    let drops = match sc.drop_every {
        0 => String::new(),
        n => format!(", one acquire in {n} dropped"),
    };
    let swarm = match budget.strategy {
        zklock_checker::Strategy::Uniform => String::new(),
        s => format!(
            "; each seed in a scenario of its own within it (--strategy {})",
            s.name()
        ),
    };
    if s.counters.queue.is_some() {
        // The work queue's workload: one producer of that many items, the rest consume.
        outln!(
            "scenario: {} clients (1 producer of {} items, the rest consumers){}, faults{} \
             on until {} ms{swarm}",
            sc.clients.max(2),
            sc.acquisitions_per_client,
            non_default_knobs(sc),
            crate::fault_args::describe(&sc.faults),
            sc.heal_ms
        );
    } else {
        outln!(
            "scenario: {} clients ({} readers) x {} acquisitions{drops}{}, faults{} on until {} \
             ms{swarm}",
            sc.clients,
            sc.readers,
            sc.acquisitions_per_client,
            non_default_knobs(sc),
            crate::fault_args::describe(&sc.faults),
            sc.heal_ms
        );
    }
    outln!("{}", s.counters);
}

/// The verdict of a sweep that found no violation: held only when every seed asked for
/// ran and something was put to the test.
fn judge_held(
    a: &ExploreArgs,
    s: &Summary,
    sc: &Scenario,
    total: u64,
    program: &Program,
) -> Status {
    if s.seeds_run == 0 {
        // Nothing was checked, so nothing held.
        let why = if s.interrupted {
            "the sweep was interrupted before the first seed finished"
        } else {
            "the time limit came before the first seed finished; raise --time-limit-s"
        };
        outln!("inconclusive: no seed ran, so nothing was checked: {why}");
        return Status::Inconclusive;
    }
    // `--for` alone asks for as many seeds as its time allows: the time is the budget.
    let time_is_the_budget = a.for_.is_some() && a.seeds.is_none() && !s.interrupted;
    if s.seeds_run < total && !time_is_the_budget {
        // Not a pass: the seeds left may hold a violation (a merge says the same).
        outln!(
            "inconclusive: every property held on the {} seeds run, but the sweep {} \
             before the other {} of its {total} seeds",
            s.seeds_run,
            if s.interrupted {
                "was interrupted"
            } else {
                "reached its time limit (--time-limit-s)"
            },
            total - s.seeds_run
        );
        return Status::Inconclusive;
    }
    let (checked, what) = s.counters.checked();
    // Every acquire failed or was dropped: nothing was put to the test.
    if let Err(nothing) = Exercised::of_counters(&s.counters, s.seeds_run).verdict() {
        outln!("inconclusive: no property was violated, but {nothing}");
        return Status::Inconclusive;
    }
    outln!(
        "ok: every property held on every seed ({:.0} checked {what}/s)",
        checked as f64 * 1000.0 / (s.wall_ms.max(1)) as f64
    );
    print_what_next(&s.counters, sc, &a.recipe, program);
    Status::Held
}

/// Records a failing seed in the regressions file; a violation found exits 1 whatever
/// happens to this file, so an error is told and not returned.
fn record_regression(
    p: &Path,
    budget: &Budget,
    key: String,
    seed_sc: &Scenario,
    seed: u64,
    run: &CheckedRun,
) {
    let what = run.failure().unwrap_or_default();
    let key = match budget.strategy {
        zklock_checker::Strategy::Coverage => coverage_key(&key, seed_sc),
        _ => key,
    };
    match zklock_checker::regressions::record(p, &key, seed, &what) {
        Ok(zklock_checker::regressions::Recorded::Added) => outln!(
            "recorded: seed {seed} in {} (every later sweep of this recipe replays it first)",
            p.display()
        ),
        Ok(_) => {}
        Err(e) => eprintln!("error: --regressions: {e}"),
    }
}

/// The seeds recorded for `key` in the regressions file `path`, in its order, each with
/// the scenario recorded with it: a coverage seed's (see [`coverage_key`]).
fn recorded_seeds(path: &Path, key: &str) -> Result<Vec<(u64, Option<Scenario>)>> {
    let mut out: Vec<(u64, Option<Scenario>)> = Vec::new();
    let prefix = format!("{key}/");
    for e in zklock_checker::regressions::read(path)? {
        let own = if e.test == key {
            None
        } else if let Some(encoded) = e.test.strip_prefix(&prefix) {
            let sc = percent_decode(encoded)
                .and_then(|json| serde_json::from_str::<Scenario>(&json).ok())
                .with_context(|| {
                    format!(
                        "regressions file {}: seed {} of {key}: its scenario is not one this version \
                         reads; remove the line to go on",
                        path.display(),
                        e.seed
                    )
                })?;
            Some(sc)
        } else {
            continue;
        };
        if !out.iter().any(|(s, o)| *s == e.seed && *o == own) {
            out.push((e.seed, own));
        }
    }
    Ok(out)
}

/// A coverage seed's regressions key: the sweep's, then its scenario as JSON with spaces,
/// `#` and `%` escaped, so that the key stays one word of the file's line. The scenario
/// came from the sweep's corpus, which a replay of the seed alone cannot rebuild.
fn coverage_key(key: &str, sc: &Scenario) -> String {
    let json = serde_json::to_string(sc).expect("a scenario serializes");
    let mut out = format!("{key}/");
    for b in json.bytes() {
        if b.is_ascii_graphic() && b != b'#' && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`coverage_key`]'s escaping; `None` for a bad escape.
fn percent_decode(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hex = [it.next()?, it.next()?];
            bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    String::from_utf8(bytes).ok()
}

/// Writes the summary, when `--summary` asks for one.
fn write_summary(a: &ExploreArgs, s: &Summary) -> Result<()> {
    if let Some(p) = &a.summary {
        let text = serde_json::to_string_pretty(s)?;
        write_private(p, text.as_bytes(), a.force).context("--summary")?;
        outln!("summary: {}", p.display());
    }
    Ok(())
}

/// Writes a failing seed's trace, shrinks it unless `--no-shrink`, and prints the
/// commands that replay each.
fn write_failure(
    a: &ExploreArgs,
    sc: &Scenario,
    lock: &dyn zklock_checker::registry::AnyRecipe,
    seed: u64,
    run: &CheckedRun,
    program: &Program,
) -> Result<()> {
    create_private_dir(&a.out)?;
    let path = trace_path(&a.out, &format!("seed-{seed}"), a.force)?;
    let trace = run.trace(sc, seed, &a.recipe);
    trace.write(&path)?;
    outln!("trace: {}", path.display());
    outln!(
        "reproduce: {}{}",
        program.line(&format!("replay {}", path.display())),
        program.at(&trace.zklock_commit)
    );
    if !a.no_shrink {
        let shrunk = lock.shrink(&trace, &ShrinkLimits::default())?;
        let spath = min_path(&path);
        refuse_existing(&spath, true, a.force)?;
        shrunk.trace.write(&spath)?;
        outln!(
            "shrunk in {} runs: {:?} -> {:?}\nshrunk trace: {} (seed {})",
            shrunk.runs,
            shrunk.before,
            shrunk.after,
            spath.display(),
            shrunk.trace.seed
        );
        outln!(
            "reproduce: {}{}",
            program.line(&format!("replay {}", spath.display())),
            program.at(&shrunk.trace.zklock_commit)
        );
    }
    Ok(())
}

/// Refuses the flags of explore and check that `lock` (registered as `name`) would
/// ignore: a work queue's clients make no acquire attempts on lock directories, and a
/// semaphore's clients all take leases alike.
pub fn refuse_inapplicable(
    lock: &dyn zklock_checker::registry::AnyRecipe,
    name: &str,
    given: &Given,
) -> Result<()> {
    if lock.is_work_queue() {
        given.refuse(
            &[
                "readers",
                "revokers",
                "drop_every",
                "mix_offset",
                "locks",
                "modes",
                "counts",
            ],
            &format!("the work queue {name}"),
            "its clients produce and consume items, they make no acquire attempts on lock \
             directories",
        )?;
    }
    if lock.is_election() {
        given.refuse(
            &["readers", "revokers", "mix_offset", "locks", "modes"],
            &format!("the election {name}"),
            "its clients contend for leadership of one path, each attempt blocking until \
             it leads or closes (every --drop-every-th closes early)",
        )?;
    }
    if lock.leases().is_some() {
        given.refuse(
            &["readers", "revokers"],
            &format!("the semaphore {name}"),
            "every client takes a lease, and none is a reader or a writer, nor revoked",
        )?;
    }
    Ok(())
}

/// The largest summary file `zklock merge` reads: a summary holds counters and at most a
/// failure, a few KB.
const SUMMARY_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// `seed-3.json` -> `seed-3.min.json`.
fn min_path(path: &Path) -> PathBuf {
    path.with_extension("min.json")
}

/// What failed, in the user's terms: a violated property, or a run that stopped at a
/// limit the scenario sets (which no flag of explore's changes).
pub fn failure_text(run: &CheckedRun) -> String {
    let stopped = match &run.outcome.error {
        Some(SimError::TimeLimit { limit_ms }) => format!(
            "the run did not finish: it reached the scenario's virtual time limit of \
             {limit_ms} ms with clients still at work; every client of a sound lock \
             finishes long before (a waiter never served while the world goes on, or a \
             livelock)"
        ),
        Some(SimError::StepLimit { steps_max }) => format!(
            "the run did not finish: it reached the simulation's limit of {steps_max} steps \
             with clients still at work (a livelock?)"
        ),
        _ => return run.failure().unwrap_or_default(),
    };
    // What the history up to the limit violated, if anything, judged as if it had ended.
    match run.report.violated().as_slice() {
        [] => stopped,
        v => format!("{stopped}; on the history up to there: {}", v.join(", ")),
    }
}

/// The closing lines of a sweep that held: what the counters that look like errors
/// are, and what to run next.
fn print_what_next(c: &Counters, sc: &Scenario, recipe_name: &str, program: &Program) {
    outln!("\nwhat the counters mean (none of them is an error):");
    if c.queue.is_some() {
        outln!(
            "  trust lost while processing ({}): consumers that stopped believing in an \
             item's lock as the faults cut or expired their sessions, and gave the item back",
            c.lost
        );
        outln!(
            "  listings and notifications per completed item: what a take costs the server; \
             queue_no_herd judges the wakes, these are its figures"
        );
    } else {
        print_lock_counters(c, sc);
    }
    outln!(
        "  faults ({}): injected on purpose; a violated property stops the sweep and says \
         FAILED",
        c.total_faults()
    );
    let recipe = if recipe_name == zklock_checker::registry::SHIPPED_NAME {
        String::new()
    } else {
        format!(" --recipe {recipe_name}")
    };
    // The same kinds of fault next, when the sweep had only some.
    let recipe = format!("{recipe}{}", crate::fault_args::flag(&sc.faults));
    if c.queue.is_some() {
        outln!(
            "next: {}    (a sweep of ten minutes; --acquisitions N: items produced)",
            program.line(&format!("explore{recipe} --for 10m"))
        );
    } else {
        outln!(
            "next: {}    (a sweep of ten minutes; --readers 2: the read/write lock)",
            program.line(&format!("explore{recipe} --for 10m"))
        );
    }
    outln!(
        "      {}    (every schedule of a small case)",
        program.line(&format!("check{recipe} --clients 2 --faults-max 1"))
    );
    outln!("      {}", program.line("--help"));
}

/// What a lock's counters that look like errors are.
fn print_lock_counters(c: &Counters, sc: &Scenario) {
    let drops = match sc.drop_every {
        0 => String::new(),
        n => format!(", and the acquires the workload drops on purpose (one in {n})"),
    };
    outln!(
        "  acquire failures ({}): try and timed acquires that found the lock held or ran \
         out of time, acquires a fault's session error ended{drops}",
        c.acquire_failures
    );
    outln!(
        "  lost ({}): holders told they can no longer trust the lock, as the faults cut or \
         expire their sessions",
        c.lost
    );
    outln!(
        "  fenced rejections ({}): stale writes the fenced resource refused; unfenced lost \
         updates ({}): what it would have lost without fencing",
        c.fenced_rejections,
        c.unfenced_lost_updates
    );
}

/// The scenario's mix offset and sequence start, where they are not their defaults, so
/// that a run's output says what it ran.
pub fn non_default_knobs(sc: &Scenario) -> String {
    let mut knobs = String::new();
    if sc.mix_offset != 0 {
        knobs.push_str(&format!(", mix offset {}", sc.mix_offset));
    }
    if sc.sequence_start != 0 {
        knobs.push_str(&format!(
            ", the lock directory's sequence counter from {}",
            sc.sequence_start
        ));
    }
    if sc.locks > 1 {
        knobs.push_str(&format!(", {} locks", sc.locks));
    }
    if sc.hold_ms != Scenario::default().hold_ms {
        knobs.push_str(&format!(", holds of {} ms", sc.hold_ms));
    }
    if sc.revokers > 0 {
        knobs.push_str(&format!(
            ", {} revokers (a holder gives up within {} ms)",
            sc.revokers, sc.revoke_bound_ms
        ));
    }
    knobs
}

/// Where `sc`, a recipe's own scenario, differs from the default: the flags that say so,
/// and a word for what no flag sets. Empty for the default scenario.
pub fn scenario_differences(sc: &Scenario) -> String {
    let d = Scenario::default();
    let mut out: Vec<String> = Vec::new();
    let mut flag = |name: &str, v: String, dv: String| {
        if v != dv {
            out.push(format!("--{name} {v}"));
        }
    };
    flag("clients", sc.clients.to_string(), d.clients.to_string());
    flag(
        "acquisitions",
        sc.acquisitions_per_client.to_string(),
        d.acquisitions_per_client.to_string(),
    );
    flag("readers", sc.readers.to_string(), d.readers.to_string());
    flag("revokers", sc.revokers.to_string(), d.revokers.to_string());
    flag(
        "drop-every",
        sc.drop_every.to_string(),
        d.drop_every.to_string(),
    );
    flag(
        "mix-offset",
        sc.mix_offset.to_string(),
        d.mix_offset.to_string(),
    );
    flag(
        "sequence-start",
        sc.sequence_start.to_string(),
        d.sequence_start.to_string(),
    );
    flag("hold-ms", sc.hold_ms.to_string(), d.hold_ms.to_string());
    flag("locks", sc.locks.to_string(), d.locks.to_string());
    let kinds = crate::fault_args::flag(&sc.faults);
    if !kinds.is_empty() {
        out.push(kinds.trim().to_owned());
    }
    if crate::fault_args::rates_of_its_own(&sc.faults) {
        out.push("fault rates of its own".into());
    }
    let unflagged = Scenario {
        clients: d.clients,
        acquisitions_per_client: d.acquisitions_per_client,
        readers: d.readers,
        revokers: d.revokers,
        drop_every: d.drop_every,
        mix_offset: d.mix_offset,
        sequence_start: d.sequence_start,
        hold_ms: d.hold_ms,
        locks: d.locks,
        faults: d.faults.clone(),
        ..sc.clone()
    };
    if unflagged != d {
        out.push("other knobs of its own (liveness bound, timeouts)".into());
    }
    out.join(", ")
}

/// `zklock merge <SUMMARY>...`: merges the JSON summaries of shards, each once. Green
/// only when every seed of the sweep was run: a shard missing, interrupted or stopped by
/// its time limit leaves seeds unchecked, and the merge says which (exit status 3).
pub fn merge(a: MergeArgs, program: &Program) -> Result<Status> {
    // Each file once, none too large: the same reading for either kind of summary.
    let files = read_summaries(&a.summaries)?;
    // A check's shards merge by their own rules (`check_merge`).
    if files.len() <= MERGE_FILES_MAX
        && files
            .iter()
            .any(|(_, t)| crate::check_merge::is_check_summary(t))
    {
        return crate::check_merge::merge(&files, program);
    }
    let shards = SweepShards::read(&files)?;
    let m = shards.merged.context("no summary given")?;
    outln!(
        "{} seeds run over {} summaries",
        m.seeds_run,
        a.summaries.len()
    );
    outln!("{}", m.counters);
    for (seed, f) in &m.failures {
        outln!("seed {seed}: FAILED {f}");
    }
    if !shards.without_range.is_empty() {
        outln!(
            "note: {} record no seed range (written by an older zklock), so a shard given \
             twice or missing cannot be told there",
            shards.without_range.join(", ")
        );
    }
    let missing = shards
        .first_range
        .map(|r| missing_seeds(&r, &shards.by_index));
    let incomplete =
        missing.as_ref().is_some_and(|(n, _)| *n > 0) || !shards.cut_unknown.is_empty();
    if incomplete {
        let (n, lines) = missing.unwrap_or_default();
        let mut lines = lines;
        lines.extend(
            shards
                .cut_unknown
                .iter()
                .map(|l| format!("{l} (which seeds it lacks, it does not record)")),
        );
        outln!(
            "incomplete: {} not run, so not checked:",
            match n {
                0 => "some seeds were".to_owned(),
                1 => "1 seed was".to_owned(),
                n => format!("{n} seeds were"),
            }
        );
        for l in lines {
            outln!("  {l}");
        }
    }
    // A violation found is a failure, whatever else is missing.
    if !m.failures.is_empty() {
        return Ok(Status::Violated);
    }
    if incomplete {
        return Ok(Status::Inconclusive);
    }
    outln!("ok: every property held on every seed of every shard");
    Ok(Status::Held)
}

/// A sweep's shard summaries, read and merged, with what they say of the seeds run.
#[derive(Default)]
struct SweepShards {
    merged: Option<Summary>,
    /// Each shard's index, with the file that holds it and the seeds it ran.
    by_index: BTreeMap<u64, (PathBuf, u64)>,
    first_range: Option<SweepRange>,
    without_range: Vec<String>,
    /// Summaries without a range whose sweep was cut short: what they lack is unknown.
    cut_unknown: Vec<String>,
}

impl SweepShards {
    fn read(files: &[(PathBuf, String)]) -> Result<SweepShards> {
        let mut shards = SweepShards::default();
        for (p, text) in files {
            let p = p.as_path();
            let s: Summary = serde_json::from_str(text)
                .with_context(|| format!("{}: not a zklock explore summary", p.display()))?;
            match s.range {
                None => shards.note_without_range(p, &s),
                Some(r) => shards.add_range(p, &s, r)?,
            }
            shards.merge_summary(p, s)?;
        }
        Ok(shards)
    }

    fn note_without_range(&mut self, p: &Path, s: &Summary) {
        self.without_range.push(p.display().to_string());
        if s.interrupted || s.stopped_by_time {
            self.cut_unknown.push(format!(
                "{}: {} seeds run, then {}",
                p.display(),
                s.seeds_run,
                if s.interrupted {
                    "interrupted"
                } else {
                    "stopped by its time limit"
                }
            ));
        }
    }

    /// Refuses a shard of another sweep, one that does not fit its range, or one given
    /// twice.
    fn add_range(&mut self, p: &Path, s: &Summary, r: SweepRange) -> Result<()> {
        if let Some(f) = self.first_range
            && (f.seed_start, f.seeds, f.shard_count) != (r.seed_start, r.seeds, r.shard_count)
        {
            bail!(
                "{}: seeds {}..{} in {} shards, but the first summary's are seeds \
                 {}..{} in {} shards: not shards of one sweep",
                p.display(),
                r.seed_start,
                r.seed_start.saturating_add(r.seeds),
                r.shard_count,
                f.seed_start,
                f.seed_start.saturating_add(f.seeds),
                f.shard_count
            );
        }
        check_seeds_ran(p, s, &r)?;
        self.first_range.get_or_insert(r);
        if let Some((other, _)) = self
            .by_index
            .insert(r.shard_index, (p.to_path_buf(), s.seeds_run))
        {
            bail!(
                "{}: shard {}/{} again (also in {}); give each shard once",
                p.display(),
                r.shard_index + 1,
                r.shard_count,
                other.display()
            );
        }
        Ok(())
    }

    /// Adds `s` to the merge, refusing a summary of another recipe, scenario or strategy.
    fn merge_summary(&mut self, p: &Path, s: Summary) -> Result<()> {
        let Some(m) = &mut self.merged else {
            self.merged = Some(s);
            return Ok(());
        };
        if m.recipe != s.recipe || m.scenario != s.scenario {
            bail!(
                "{}: a different recipe or scenario than the first summary",
                p.display()
            );
        }
        if m.strategy != s.strategy {
            bail!(
                "{}: swept with --strategy {}, the first summary with --strategy {}",
                p.display(),
                s.strategy.name(),
                m.strategy.name()
            );
        }
        m.merge(&s);
        Ok(())
    }
}

/// Summaries read at once to tell a check's from a sweep's; a merge of more is a sweep's
/// (a check has at most [`SHARDS_MAX`](zklock_checker::shard::SHARDS_MAX) shards).
const MERGE_FILES_MAX: usize = zklock_checker::shard::SHARDS_MAX as usize;

/// Each summary's file and text, each file once and none too large.
fn read_summaries(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String)>> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for p in paths {
        let canonical = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if seen.contains(&canonical) {
            bail!(
                "{}: given twice; give each shard's summary once",
                p.display()
            );
        }
        seen.push(canonical);
        let bytes = std::fs::metadata(p)
            .with_context(|| format!("reading {}", p.display()))?
            .len();
        if bytes > SUMMARY_BYTES_MAX {
            bail!(
                "{}: {bytes} bytes, more than the {SUMMARY_BYTES_MAX} bytes a summary may be \
                 (is it a zklock summary?)",
                p.display()
            );
        }
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        out.push((p.clone(), text));
    }
    Ok(out)
}

/// Refuses a summary whose record of the seeds it ran does not fit the seeds it was
/// given: an edited or damaged file could otherwise pass for a complete shard.
fn check_seeds_ran(p: &Path, s: &Summary, r: &SweepRange) -> Result<()> {
    let b = r.budget();
    let count = b.seed_count();
    let fits = s.seeds_run <= count
        && match s.ran {
            None => true,
            Some(ran) => {
                s.seeds_run > 0 && ran.first == b.seed(0) && ran.last == b.seed(s.seeds_run - 1)
            }
        };
    if !fits {
        bail!(
            "{}: it records {} seeds run ({:?}), which is not a run of the first seeds of \
             shard {}/{} of seeds {}..{} ({count} seeds): is it damaged or edited?",
            p.display(),
            s.seeds_run,
            s.ran,
            r.shard_index + 1,
            r.shard_count,
            r.seed_start,
            r.seed_start.saturating_add(r.seeds),
        );
    }
    Ok(())
}

/// The most shards `merge` names one by one among those with seeds missing.
const MISSING_LINES_MAX: usize = 20;

/// The seeds of the sweep `r` that no summary ran: their count, and a line per shard
/// that lacks some (at most [`MISSING_LINES_MAX`], then how many more).
fn missing_seeds(r: &SweepRange, shards: &BTreeMap<u64, (PathBuf, u64)>) -> (u128, Vec<String>) {
    let every = |k: u64| {
        if r.shard_count > 1 {
            format!(
                ", one in {} (seed % {} == {k})",
                r.shard_count, r.shard_count
            )
        } else {
            String::new()
        }
    };
    let all =
        (u128::from(r.seed_start) + u128::from(r.seeds)).min(1 << 64) - u128::from(r.seed_start);
    let mut given = 0u128;
    let mut n = 0u128;
    let mut lines = Vec::new();
    let mut shards_short = 0u128;
    for (&k, (path, run)) in shards {
        let b = SweepRange {
            shard_index: k,
            ..*r
        }
        .budget();
        let count = b.seed_count();
        given += u128::from(count);
        if *run < count {
            n += u128::from(count - run);
            shards_short += 1;
            if lines.len() < MISSING_LINES_MAX {
                lines.push(format!(
                    "shard {}/{} ({}): {} of its {count} seeds, seeds {} to {}{}",
                    k + 1,
                    r.shard_count,
                    path.display(),
                    count - run,
                    b.seed(*run),
                    b.seed(count - 1),
                    every(k % r.shard_count.max(1))
                ));
            }
        }
    }
    // Shards no summary was given for: all their seeds.
    n += all - given;
    let absent = u128::from(r.shard_count) - shards.len() as u128;
    let mut k = 0u64;
    while lines.len() < MISSING_LINES_MAX && k < r.shard_count {
        if !shards.contains_key(&k) {
            let b = SweepRange {
                shard_index: k,
                ..*r
            }
            .budget();
            lines.push(format!(
                "shard {}/{}: all its {} seeds (no summary of it given)",
                k + 1,
                r.shard_count,
                b.seed_count()
            ));
        }
        k += 1;
    }
    let shown = lines.len() as u128;
    if shards_short + absent > shown {
        lines.push(format!("and {} more shards", shards_short + absent - shown));
    }
    (n, lines)
}

#[cfg(test)]
mod coverage_key_tests {
    use super::*;

    /// A scenario with a space, `#`, `%` and a non-ASCII letter in its lock path comes back
    /// whole from its key, and the key is one word with no comment sign.
    #[test]
    fn a_coverage_key_is_one_word_and_gives_its_scenario_back() {
        let sc = Scenario {
            lock_path: "/a b/#1/100%/é".into(),
            ..Scenario::default()
        };
        let key = coverage_key("explore/zklock/coverage", &sc);
        assert!(
            !key.contains(char::is_whitespace) && !key.contains('#'),
            "{key}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regressions.txt");
        zklock_checker::regressions::record(&file, &key, 7, "mutual_exclusion").unwrap();
        zklock_checker::regressions::record(&file, "explore/zklock/coverage", 3, "x").unwrap();
        let got = recorded_seeds(&file, "explore/zklock/coverage").unwrap();
        assert_eq!(got, [(7, Some(sc)), (3, None)]);
    }

    /// A recorded scenario this version cannot read (a bad escape, or JSON of another
    /// shape) is an error naming the file and the seed, not a panic.
    #[test]
    fn a_corrupt_coverage_line_is_an_error_naming_the_file_and_the_seed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regressions.txt");
        for bad in [
            "explore/q/coverage/%zz",
            "explore/q/coverage/{\"clients\":\"many\"}",
        ] {
            std::fs::write(&file, format!("{bad} 42 # x\n")).unwrap();
            let err = recorded_seeds(&file, "explore/q/coverage").unwrap_err();
            let text = format!("{err:#}");
            assert!(
                text.contains("seed 42 of explore/q/coverage") && text.contains("regressions.txt"),
                "{text}"
            );
        }
    }
}
