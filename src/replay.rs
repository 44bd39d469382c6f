//! `zklock replay <trace>`: the exact schedule of a trace, run again and judged.

use anyhow::{Result, bail};
use std::path::PathBuf;
use zklock_checker::{Trace, ZKLOCK_COMMIT, render_timeline, replay};
use zklock_sim::ShippedRecipe;

pub fn run(args: &[String]) -> Result<bool> {
    let [path] = args else {
        bail!("usage: zklock replay <TRACE>");
    };
    let path = PathBuf::from(path);
    let trace = Trace::read(&path)?;
    if trace.recipe != "zklock" {
        bail!(
            "{}: recorded with recipe {:?}; this command replays the shipped recipe \
             \"zklock\" (replay other recipes from your own test with \
             zklock_checker::replay)",
            path.display(),
            trace.recipe
        );
    }
    let run = replay(&trace, &ShippedRecipe::default())
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    print!("{}", render_timeline(&run.outcome.history));
    println!();
    println!("{}", run.report);
    if run.outcome.history == trace.history {
        println!(
            "replay: identical history ({} events)",
            trace.history.events.len()
        );
    } else {
        println!(
            "replay: the history DIFFERS from the recorded one (recorded {} events, now {}): \
             the recipe or zklock changed since the trace was written{}",
            trace.history.events.len(),
            run.outcome.history.events.len(),
            written_by(&trace.zklock_commit, ZKLOCK_COMMIT)
        );
    }
    Ok(run.failure().is_none())
}

/// Which commit to check out to replay a trace exactly, when it was not this build's.
fn written_by(recorded: &str, this: &str) -> String {
    if recorded.is_empty() || recorded == this {
        return String::new();
    }
    format!(
        " (it was written by commit {recorded}, this zklock is {this}: check that commit out to replay it exactly)"
    )
}
