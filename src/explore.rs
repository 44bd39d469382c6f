//! `zklock explore`: a seed sweep of the shipped recipe on every core, every run checked;
//! a failure is written as a trace, shrunk, and its replay command printed.

use crate::args::{time_limit_ms, value};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use zklock_checker::{Budget, ShrinkLimits, Summary, explore, shrink};
use zklock_sim::{Scenario, ShippedRecipe};

pub fn run(args: &[String]) -> Result<bool> {
    let mut budget = Budget::default();
    let mut out = PathBuf::from("traces/failures");
    let mut summary_path: Option<PathBuf> = None;
    let mut do_shrink = true;
    let mut sc = Scenario::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => budget.seeds = value(a, it.next())?,
            "--seed-start" => budget.seed_start = value(a, it.next())?,
            "--time-limit-s" => {
                budget.time_limit_ms = Some(time_limit_ms("--time-limit-s", it.next())?)
            }
            "--threads" => budget.threads = value(a, it.next())?,
            "--shard" => {
                let v: String = value(a, it.next())?;
                let (k, n) = v
                    .split_once('/')
                    .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)))
                    .filter(|&(k, n)| n >= 1 && (1..=n).contains(&k))
                    .with_context(|| format!("--shard: {v:?} is not K/N with 1 <= K <= N"))?;
                budget.shard_index = k - 1;
                budget.shard_count = n;
            }
            "--clients" => sc.clients = value(a, it.next())?,
            "--acquisitions" => sc.acquisitions_per_client = value(a, it.next())?,
            "--readers" => sc.readers = value(a, it.next())?,
            "--drop-every" => sc.drop_every = value(a, it.next())?,
            "--mix-offset" => sc.mix_offset = value(a, it.next())?,
            "--sequence-start" => sc.sequence_start = value(a, it.next())?,
            "--out" => out = value(a, it.next())?,
            "--summary" => summary_path = Some(value(a, it.next())?),
            "--no-shrink" => do_shrink = false,
            other => bail!("unknown option {other:?} (see `zklock help`)"),
        }
    }
    // A sweep of nothing would print "every property held" having checked nothing.
    if budget.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    if sc.acquisitions_per_client == 0 {
        bail!("--acquisitions must be at least 1");
    }
    if sc.clients == 0 || sc.clients > 64 {
        bail!("--clients must be between 1 and 64, got {}", sc.clients);
    }
    if sc.readers > sc.clients {
        bail!(
            "--readers ({}) cannot exceed --clients ({})",
            sc.readers,
            sc.clients
        );
    }
    if budget.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let recipe = ShippedRecipe::default();
    let total = budget.seed_count();
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {elapsed} (eta {eta})")
            .expect("static template"),
    );
    let explored = explore(&sc, &recipe, &budget, &|done, _| bar.set_position(done))?;
    bar.finish_and_clear();
    let s = &explored.summary;
    println!(
        "{} seeds run (seeds {}..{}, shard {}/{}) on {} threads in {:.2} s{}",
        s.seeds_run,
        budget.seed_start,
        budget.seed_start.saturating_add(budget.seeds),
        budget.shard_index + 1,
        budget.shard_count,
        budget.threads,
        s.wall_ms as f64 / 1000.0,
        if s.stopped_by_time {
            " (time limit reached)"
        } else {
            ""
        }
    );
    let drops = match sc.drop_every {
        0 => String::new(),
        n => format!(", one acquire in {n} dropped"),
    };
    println!(
        "scenario: {} clients ({} readers) x {} acquisitions{drops}{}, faults on until {} ms",
        sc.clients,
        sc.readers,
        sc.acquisitions_per_client,
        non_default_knobs(&sc),
        sc.heal_ms
    );
    println!("{}", s.counters);
    if let Some(p) = &summary_path {
        write_summary(p, s)?;
        println!("summary: {}", p.display());
    }
    let Some((seed, run)) = explored.failure else {
        if s.seeds_run == 0 {
            // Nothing was checked, so nothing held: an empty shard, or a time limit that
            // came before the first seed finished.
            bail!(
                "no seed ran, so nothing was checked: {}",
                if total == 0 {
                    format!(
                        "shard {}/{} of seeds {}..{} holds no seed; use fewer shards or more seeds",
                        budget.shard_index + 1,
                        budget.shard_count,
                        budget.seed_start,
                        budget.seed_start.saturating_add(budget.seeds)
                    )
                } else {
                    "the time limit came before the first seed finished; raise --time-limit-s"
                        .to_string()
                }
            );
        }
        println!(
            "ok: every property held on every seed ({:.0} checked acquisitions/s)",
            s.counters.acquisitions as f64 * 1000.0 / (s.wall_ms.max(1)) as f64
        );
        return Ok(true);
    };
    println!(
        "\nseed {seed}: FAILED {}\n",
        run.failure().unwrap_or_default()
    );
    println!("{}", run.report);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join(format!("seed-{seed}.json"));
    let trace = run.trace(&sc, seed, "zklock");
    trace.write(&path)?;
    println!("trace: {}", path.display());
    println!(
        "reproduce: cargo run --release -- replay {}{}",
        path.display(),
        at_commit(&trace.zklock_commit)
    );
    if do_shrink {
        let shrunk = shrink(&trace, &recipe, &ShrinkLimits::default())?;
        let spath = out.join(format!("seed-{seed}.min.json"));
        shrunk.trace.write(&spath)?;
        println!(
            "shrunk in {} runs: {:?} -> {:?}\nshrunk trace: {} (seed {})",
            shrunk.runs,
            shrunk.before,
            shrunk.after,
            spath.display(),
            shrunk.trace.seed
        );
        println!(
            "reproduce: cargo run --release -- replay {}{}",
            spath.display(),
            at_commit(&shrunk.trace.zklock_commit)
        );
    }
    Ok(false)
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
    knobs
}

/// Where a replay reproduces the run exactly: on the commit that wrote the trace.
fn at_commit(commit: &str) -> String {
    match commit {
        "" => String::new(),
        c => format!(" (at commit {c})"),
    }
}

fn write_summary(path: &Path, s: &Summary) -> Result<()> {
    let text = serde_json::to_string_pretty(s)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// `zklock merge <SUMMARY>...`: merges the JSON summaries of shards.
pub fn merge(args: &[String]) -> Result<bool> {
    if args.is_empty() {
        bail!("usage: zklock merge <SUMMARY.json>...");
    }
    let mut merged: Option<Summary> = None;
    for a in args {
        let text = std::fs::read_to_string(a).with_context(|| format!("reading {a}"))?;
        let s: Summary = serde_json::from_str(&text)
            .with_context(|| format!("{a}: not a zklock explore summary"))?;
        match &mut merged {
            None => merged = Some(s),
            Some(m) => {
                if m.recipe != s.recipe || m.scenario != s.scenario {
                    bail!("{a}: a different recipe or scenario than the first summary");
                }
                m.merge(&s);
            }
        }
    }
    let m = merged.expect("at least one summary");
    println!("{} seeds run over {} summaries", m.seeds_run, args.len());
    println!("{}", m.counters);
    for (seed, f) in &m.failures {
        println!("seed {seed}: FAILED {f}");
    }
    Ok(m.failures.is_empty())
}
