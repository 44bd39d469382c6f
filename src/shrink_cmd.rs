//! `zklock shrink <TRACE>`: minimize a failing trace of the shipped recipe.

use crate::args::{time_limit_ms, value};
use anyhow::{Result, bail};
use std::path::PathBuf;
use zklock_checker::{ShrinkLimits, Trace, shrink};
use zklock_sim::ShippedRecipe;

pub fn run(args: &[String]) -> Result<bool> {
    let mut limits = ShrinkLimits::default();
    let mut path = None;
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs-max" => limits.runs_max = value(a, it.next())?,
            "--time-limit-s" => limits.time_limit_ms = time_limit_ms("--time-limit-s", it.next())?,
            "--fresh-seeds" => limits.fresh_seeds_max = value(a, it.next())?,
            "--exhaustive-schedules" => limits.exhaustive_schedules_max = value(a, it.next())?,
            "--out" => out = Some(value::<PathBuf>(a, it.next())?),
            p if !p.starts_with("--") && path.is_none() => path = Some(PathBuf::from(p)),
            other => bail!("unknown option {other:?}; usage: zklock shrink <TRACE> [--out FILE]"),
        }
    }
    let Some(path) = path else {
        bail!(
            "usage: zklock shrink <TRACE> [--out FILE] [--runs-max N] [--time-limit-s S] \
             [--fresh-seeds N] [--exhaustive-schedules N]"
        );
    };
    let trace = Trace::read(&path)?;
    if trace.recipe != "zklock" {
        bail!(
            "{}: recorded with recipe {:?}; this command shrinks the shipped recipe's traces \
             (shrink other recipes from your own test with zklock_checker::shrink)",
            path.display(),
            trace.recipe
        );
    }
    let shrunk = shrink(&trace, &ShippedRecipe::default(), &limits)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let out = out.unwrap_or_else(|| path.with_extension("min.json"));
    shrunk.trace.write(&out)?;
    println!(
        "shrunk in {} runs and {} exhaustive schedules: {:?} -> {:?}",
        shrunk.runs, shrunk.exhaustive_schedules, shrunk.before, shrunk.after
    );
    if shrunk.time_limit_hit {
        println!(
            "stopped by the time limit ({} s): the result depends on this machine's speed, \
             and a longer run may shrink further (--time-limit-s raises it; within it, the \
             same trace and limits always shrink the same way)",
            limits.time_limit_ms / 1000
        );
    }
    println!(
        "violation: {}",
        shrunk.trace.violation.as_deref().unwrap_or("?")
    );
    // A fresh seed, or the exhaustive search's scenario, may have replaced the trace's own
    // (see `zklock_checker::shrink`).
    println!(
        "shrunk trace: {} (seed {})",
        out.display(),
        shrunk.trace.seed
    );
    println!("reproduce: cargo run --release -- replay {}", out.display());
    Ok(true)
}
