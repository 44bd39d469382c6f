//! `zklock replay <trace>`: the exact schedule of a trace, run again with the recipe it
//! recorded, judged, and compared with the recorded history.

use crate::Status;
use crate::cli::ReplayArgs;
use crate::explore::failure_text;
use crate::files::refuse_existing;
use anyhow::Result;
use std::path::Path;
use zklock_checker::registry::Recipes;
use zklock_checker::timeline::Describer;
use zklock_checker::{CheckedRun, Trace, ZKLOCK_COMMIT, render_timeline};
use zklock_recipe::history::History;
use zklock_sim::SimError;

pub fn run(a: ReplayArgs, recipes: &Recipes) -> Result<Status> {
    let (trace, lock) = crate::read_trace(recipes, &a.trace)?;
    // Checked before the replay, so that a replay that fails is never cut short by it.
    if let Some(out) = &a.save {
        crate::files::check_out_file("--save", out, true, a.force)?;
    }
    let run = lock
        .replay(&trace)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.trace.display()))?;
    out!("{}", render_timeline(&run.outcome.history));
    outln!();
    outln!("{}", run.report_text());
    let unfinished = unfinished(&run);
    if let Some(why) = &unfinished {
        outln!("replay: {why}");
    }
    let same = trace.same_history(&run.outcome.history);
    if same {
        outln!(
            "replay: identical history ({} events)",
            trace.history.events.len()
        );
        let clamped = clamped(&trace.choices, &run.outcome.choices);
        if let Some(first) = clamped.first() {
            outln!(
                "replay: note: {} recorded choice(s) were out of range for what the run \
                 asked (the first, choice #{first}), and were taken as the last option: the \
                 trace's choices were edited, yet lead to the recorded history",
                clamped.len()
            );
        }
    } else {
        outln!("{}", divergence(&trace, &run));
    }
    let failure = run.failure();
    if let Some(out) = &a.save
        && let Err(e) = save(&trace, &run, same, out, a.force)
    {
        // The verdict below stands (a violation exits 1); the save's error is told.
        eprintln!("error: {e:#}");
        if failure.is_none() && same {
            return Err(e);
        }
    }
    match (&trace.violation, &failure) {
        (Some(recorded), None) => outln!(
            "replay: the trace recorded a failure ({recorded}), this replay violates nothing"
        ),
        (Some(recorded), Some(now)) if recorded != now && !run.violates(recorded) => {
            outln!("replay: the trace recorded {recorded}, this replay fails otherwise")
        }
        _ => {}
    }
    Ok(match failure {
        Some(_) => {
            outln!("FAILED: {}", failure_text(&run));
            Status::Violated
        }
        None if !same => Status::Violated,
        None => Status::Held,
    })
}

/// Writes the replayed run as a trace at `out`: the recorded property where the replay
/// still violates it, and the recorded choices where they led to the recorded history.
fn save(trace: &Trace, run: &CheckedRun, same: bool, out: &Path, force: bool) -> Result<()> {
    refuse_existing(out, true, force)?;
    let mut saved = run.trace(&trace.scenario, trace.seed, &trace.recipe);
    saved.shrunk_from = trace.shrunk_from;
    if let Some(v) = &trace.violation
        && run.violates(v)
    {
        saved.violation = Some(v.clone());
    }
    if same {
        saved.choices = trace.choices.clone();
    }
    saved.write(out)?;
    outln!(
        "replay: saved as {} (timelines: {}, {})",
        out.display(),
        Trace::timeline_path(out).display(),
        Trace::html_path(out).display()
    );
    Ok(())
}

/// Why the run stopped before its clients were done, in terms of what the user can do.
fn unfinished(run: &CheckedRun) -> Option<String> {
    match run.outcome.error.as_ref()? {
        SimError::TimeLimit { limit_ms } => Some(format!(
            "the run stopped at the virtual time limit of {limit_ms} ms (the trace's \
             scenario.time_limit_ms) before every client was done: the properties above \
             were judged on the history up to there only, and a run that does not finish \
             counts as a failure (a waiter never served, or a livelock). To let it run \
             longer, raise scenario.time_limit_ms in the trace file"
        )),
        SimError::StepLimit { steps_max } => Some(format!(
            "the run stopped at the simulation's limit of {steps_max} steps before every \
             client was done: the properties above were judged on the history up to there \
             only, and a run that does not finish counts as a failure (a livelock?); \
             the `shrink` subcommand on this trace may find a shorter run of the same failure"
        )),
        _ => None,
    }
}

/// Where the replayed history parts from the recorded one, and what the trace's own
/// choices say about why.
fn divergence(trace: &Trace, run: &CheckedRun) -> String {
    let recorded = &trace.history;
    let replayed = &run.outcome.history;
    let at = first_difference(recorded, replayed);
    let mut out = format!(
        "replay: the history DIFFERS from the recorded one (recorded {} events, replayed \
         {}); they part at event #{at}:\n  recorded: {}\n  replayed: {}",
        recorded.events.len(),
        replayed.events.len(),
        event_line(recorded, at),
        event_line(replayed, at)
    );
    let asked = &run.outcome.choices;
    let given = &trace.choices;
    let clamped = clamped(given, asked);
    let why = if let Some(&first) = clamped.first() {
        format!(
            "the trace's choices do not fit this run: {} recorded choice(s) were out of \
             range for what the run asked (the first, choice #{first}, is {} where the \
             run offered {} options). The choices were edited, or belong to another \
             scenario or build",
            clamped.len(),
            given[first],
            u64::from(asked[first]) + 1
        )
    } else if asked.len() > given.len() {
        format!(
            "the run asked for more choices than the trace records ({} recorded, {} asked; \
             past the list, replay answers 0). A shrunk trace ends early this way and still \
             replays as recorded; a trace whose history differs was cut short or edited, \
             or belongs to another build",
            given.len(),
            asked.len()
        )
    } else if asked.len() < given.len() {
        format!(
            "the run ended with {} of the trace's {} choices unused: the choices were \
             edited, or belong to another build",
            given.len() - asked.len(),
            given.len()
        )
    } else {
        "every recorded choice was used as recorded, so the world made the same decisions: \
         the recorded history was edited, or the recipe or zklock now acts differently on \
         them"
            .to_owned()
    };
    out.push_str(&format!("\nreplay: {why}"));
    if !trace.zklock_commit.is_empty() && trace.zklock_commit != ZKLOCK_COMMIT {
        out.push_str(&format!(
            "\nreplay: the trace was written by commit {}, this zklock is {}: check that \
             commit out to replay it exactly",
            trace.zklock_commit,
            if ZKLOCK_COMMIT.is_empty() {
                "of unknown commit"
            } else {
                ZKLOCK_COMMIT
            }
        ));
    }
    out
}

/// The recorded choices the replay could not follow: replay answers an out-of-range
/// choice with the last option (and 0 past the list), and records what it answered.
fn clamped(given: &[u32], asked: &[u32]) -> Vec<usize> {
    (0..asked.len().min(given.len()))
        .filter(|&i| asked[i] != given[i])
        .collect()
}

/// The first index where the two histories differ (one may end first).
fn first_difference(a: &History, b: &History) -> usize {
    let n = a.events.len().min(b.events.len());
    (0..n).find(|&i| a.events[i] != b.events[i]).unwrap_or(n)
}

/// Event `i` of `h` as a timeline line, or that the history ended before it.
fn event_line(h: &History, i: usize) -> String {
    if i < h.events.len() {
        Describer::sparse(h).line(i).trim_end().to_owned()
    } else {
        format!(
            "(no event: the history ends after {} events)",
            h.events.len()
        )
    }
}
