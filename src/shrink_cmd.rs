//! `zklock shrink <TRACE>`: minimize a failing trace, with the recipe it recorded.

use crate::Status;
use crate::cli::ShrinkArgs;
use crate::files::refuse_existing;
use anyhow::Result;
use zklock_checker::ShrinkLimits;
use zklock_checker::registry::Recipes;

pub fn run(a: ShrinkArgs, recipes: &Recipes, program: &crate::program::Program) -> Result<Status> {
    let limits = ShrinkLimits {
        runs_max: a.runs_max,
        time_limit_ms: zklock_checker::limits::wall_time_ms_from_s(
            "--time-limit-s",
            a.time_limit_s,
        )?,
        fresh_seeds_max: a.fresh_seeds,
        exhaustive_schedules_max: a.exhaustive_schedules,
    };
    let (trace, lock) = crate::read_trace(recipes, &a.trace)?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.trace.with_extension("min.json"));
    // Refused before the shrink runs, and the shrink's own input is never its output.
    if out == a.trace {
        anyhow::bail!(
            "--out {} is the trace being shrunk: choose another file",
            out.display()
        );
    }
    crate::files::check_out_file("--out", &out, true, a.force)?;
    let shrunk = lock
        .shrink(&trace, &limits)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.trace.display()))?;
    refuse_existing(&out, true, a.force)?;
    shrunk.trace.write(&out)?;
    outln!(
        "shrunk in {} runs and {} exhaustive schedules: {:?} -> {:?}",
        shrunk.runs,
        shrunk.exhaustive_schedules,
        shrunk.before,
        shrunk.after
    );
    if shrunk.time_limit_hit {
        outln!(
            "stopped by the time limit ({} s): the result depends on this machine's speed, \
             and a longer run may shrink further (--time-limit-s raises it; within it, the \
             same trace and limits always shrink the same way)",
            limits.time_limit_ms / 1000
        );
    }
    outln!(
        "violation: {}",
        shrunk.trace.violation.as_deref().unwrap_or("?")
    );
    // A fresh seed, or the exhaustive search's scenario, may have replaced the trace's own
    // (see `zklock_checker::shrink`).
    outln!(
        "shrunk trace: {} (seed {})",
        out.display(),
        shrunk.trace.seed
    );
    outln!(
        "reproduce: {}{}",
        program.line(&format!("replay {}", out.display())),
        program.at(&shrunk.trace.zklock_commit)
    );
    Ok(Status::Held)
}
