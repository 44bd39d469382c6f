//! `zklock check`: bounded exhaustive model checking of a recipe.

use crate::cli::CheckArgs;
use crate::explore::{failure_text, non_default_knobs};
use crate::files::{create_private_dir, trace_path, write_private};
use crate::shape_args::describe;
use crate::{Status, recipe};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use zklock_checker::check_summary::CheckSummary;
use zklock_checker::registry::Recipes;
use zklock_checker::{Bounds, Checkpoint, Control, ExhaustiveReport, SearchError};
use zklock_sim::Scenario;

/// Clients of `zklock check` at most: 4 clients with a fault take minutes; past them the
/// search grows out of reach.
pub const CHECK_CLIENTS_MAX: u32 = 4;

pub fn run(
    a: CheckArgs,
    recipes: &Recipes,
    given: &crate::given::Given,
    program: &crate::program::Program,
) -> Result<Status> {
    let lock = recipe(recipes, &a.recipe, "--recipe")?;
    crate::explore::refuse_inapplicable(lock, &a.recipe, given)?;
    refuse_shapes_all(lock, &a)?;
    let b = check_bounds(&a)?;
    // The recipe's own scenario, each knob a flag gives replaced.
    let base = a.scenario.apply(lock.scenario(), b.clients)?;
    refuse_bounds(&a, &b)?;
    let b = Bounds {
        threads: check_threads(&a, &b)?,
        ..b
    };
    // Where a violation's trace goes, checked before the search, not after it.
    crate::files::check_out_dir("--out", &a.out)?;
    let control = Control {
        resume: match &a.checkpoint {
            Some(path) => read_checkpoint(path)?,
            None => None,
        },
        interrupt: crate::interrupt::for_sweep(),
        checkpoint: a.checkpoint.is_some(),
        shard: a.shard,
        ..Control::default()
    };
    let resuming = control.resume.is_some();
    // A resumed shard replaces the summary it wrote when it stopped.
    if let Some(p) = &a.summary {
        crate::files::check_out_file("--summary", p, false, a.force || resuming)?;
    }
    let resumed_from = control.resume.as_ref().map_or(0, |c| c.schedules);
    // A count, not a bar: the search usually ends long before its schedule limit.
    let spinner = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {msg}  {elapsed}").expect("static template"),
    );
    let progress = |schedules, states| {
        spinner.set_message(format!("{schedules} schedules, {states} distinct states"));
        spinner.tick();
    };
    let r = match lock.check_exhaustive(&base, &b, &progress, control) {
        Ok(r) => r,
        Err(SearchError::Checkpoint(e)) => bail!(
            "{}: {e}",
            a.checkpoint.as_deref().unwrap_or(Path::new("")).display()
        ),
        Err(e) => return Err(e.into()),
    };
    spinner.finish_and_clear();
    if r.resumed_at_schedules > 0 || resuming {
        outln!(
            "resumed after {} schedule{}, from {}",
            resumed_from,
            if resumed_from == 1 { "" } else { "s" },
            a.checkpoint.as_deref().unwrap_or(Path::new("")).display()
        );
        // Its counts are then of that search alone (see `ExhaustiveReport`).
        if r.resumed_at_schedules != resumed_from {
            outln!(
                "the violation is the first of the search on one thread, run again from the start"
            );
        }
    }
    print_check_line(&a, &b, &base, &r);
    let out = Outcome {
        a: &a,
        r: &r,
        prune: b.prune,
        resuming,
    };
    let Some(run) = &r.violation else {
        return out.held_or_not();
    };
    outln!("\nFAILED {}\n", failure_text(run));
    outln!("{}", run.report_text());
    // A violation found exits 1 even if its trace cannot be written (the error is told).
    let trace = match write_violation(&a, &b, &r, run, program) {
        Ok(p) => Some(p.display().to_string()),
        Err(e) => {
            eprintln!("error: {e:#}");
            None
        }
    };
    // After the trace, so that a summary names a trace that exists; its failure told.
    if let Err(e) = out.summary(Some(failure_text(run)), trace) {
        eprintln!("error: {e:#}");
    }
    Ok(Status::Violated)
}

/// The search's bounds from the flags; its threads are settled by [`check_threads`].
fn check_bounds(a: &CheckArgs) -> Result<Bounds> {
    Ok(Bounds {
        clients: a.clients,
        faults_max: a.faults_max,
        acquisitions_per_client: a.acquisitions,
        schedules_max: a.schedules_max,
        time_limit_ms: zklock_checker::limits::wall_time_ms_from_s(
            "--time-limit-s",
            a.time_limit_s,
        )?,
        prune: !a.no_prune,
        shape: match a.shape.shape() {
            Ok(s) => s,
            Err(e) => bail!("{e}"),
        },
        symmetry: a.symmetry == crate::cli::OnOff::On,
        keep_only: a.keep_only == crate::cli::OnOff::On,
        partial_order: a.partial_order == crate::cli::OnOff::On,
        threads: 1,
        request_time_us: a.request_time_us,
    })
}

/// Refuses bounds out of reach, a check of nothing, and flags that do not go together.
fn refuse_bounds(a: &CheckArgs, b: &Bounds) -> Result<()> {
    if !(1..=CHECK_CLIENTS_MAX).contains(&b.clients) {
        bail!(
            "--clients must be 1 to {CHECK_CLIENTS_MAX} (exhaustive search grows fast), got {}",
            b.clients
        );
    }
    // Without an acquisition every schedule holds every property, and proves nothing.
    if b.acquisitions_per_client == 0 {
        bail!("--acquisitions must be at least 1");
    }
    if b.faults_max > 3 {
        bail!("--faults-max must be at most 3, got {}", b.faults_max);
    }
    // A checkpoint holds no sleep sets: a reduced search could not resume soundly.
    if b.reduces_by_partial_order() && a.checkpoint.is_some() {
        bail!(
            "--checkpoint needs --partial-order off: a checkpoint does not hold the reduction's sleep sets"
        );
    }
    if let Some(shard) = a.shard
        && b.reduces_by_partial_order()
    {
        bail!(
            "--shard {shard} needs --partial-order off: a reduced search's sleep sets follow \
             one run after another across the whole tree, which shards split"
        );
    }
    if a.summary.is_some() && a.shard.is_none() {
        bail!(
            "--summary records a shard of a check for zklock merge: give --shard K/N too \
             (1/1 for the whole check)"
        );
    }
    Ok(())
}

/// Sleep sets follow one run after another: such a search takes one thread, and asking
/// for more is refused rather than ignored. A checkpoint keeps the work left on every
/// thread, and resumes on any number.
fn check_threads(a: &CheckArgs, b: &Bounds) -> Result<usize> {
    let one_thread = b.reduces_by_partial_order().then_some("--partial-order on");
    Ok(match (a.threads, one_thread) {
        (Some(n), Some(why)) if n > 1 => {
            bail!("--threads {n}: a search with {why} runs on one thread")
        }
        (Some(n), _) => n,
        (None, Some(_)) => 1,
        (None, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// The line that says what was checked, and the shard's part of it.
fn print_check_line(a: &CheckArgs, b: &Bounds, base: &Scenario, r: &ExhaustiveReport) {
    outln!(
        "recipe {}, {} clients x {} acquisitions, at most {} faults{}{}{}{}, symmetry {}{}{}{}: {r}",
        a.recipe,
        b.clients,
        b.acquisitions_per_client,
        b.faults_max,
        crate::fault_args::describe(&base.faults),
        non_default_knobs(base),
        match b.request_time_us {
            0 => String::new(),
            us => format!(", requests of {us} us"),
        },
        describe(&b.shape),
        if r.symmetry { "on" } else { "off" },
        if r.keep_only || !b.prune {
            ""
        } else {
            ", keep-only off"
        },
        if r.partial_order {
            ", partial order on"
        } else {
            ""
        },
        if r.threads > 1 {
            format!(", {} threads", r.threads)
        } else {
            String::new()
        }
    );
    if let Some(s) = &r.shard {
        outln!(
            "shard {}: the schedules whose first fault is of {} of the check's {} kinds, and \
             those without a fault",
            s.shard,
            s.shard_kinds,
            s.fault_kinds
        );
    }
}

/// A finished search, for its summary and its verdict.
struct Outcome<'a> {
    a: &'a CheckArgs,
    r: &'a ExhaustiveReport,
    prune: bool,
    resuming: bool,
}

impl Outcome<'_> {
    /// Writes the summary, when `--summary` asks for one.
    fn summary(&self, failure: Option<String>, trace: Option<String>) -> Result<()> {
        let Some(path) = &self.a.summary else {
            return Ok(());
        };
        let Some(s) = CheckSummary::of(self.r, &self.a.recipe, self.prune, failure, trace) else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(&s)? + "\n";
        write_private(path, text.as_bytes(), self.a.force || self.resuming).context("--summary")?;
        outln!("summary: {}", path.display());
        Ok(())
    }

    /// The verdict of a search that found no violation: held when it is complete and
    /// checked something; otherwise inconclusive, its checkpoint kept.
    fn held_or_not(&self) -> Result<Status> {
        let (a, r) = (self.a, self.r);
        self.summary(None, None)?;
        if r.complete {
            let of = if r.shard.is_some() {
                " of this shard"
            } else {
                ""
            };
            // Judged on the whole check, a resumed one included when its checkpoint
            // carried counts; a shard only on its part, which the merge of the shards
            // judges as a whole. A check resumed from a checkpoint without counts (format
            // 1 or 2) is judged on the schedules after it: what came before is unknown,
            // and unknown is never green.
            if r.shard.is_none()
                && let Err(nothing) = r.exercised_whole().unwrap_or(&r.exercised).verdict()
            {
                outln!(
                    "inconclusive: no property was violated on any of the {} schedules, but \
                     {nothing}",
                    r.schedules
                );
                return Ok(Status::Inconclusive);
            }
            outln!("ok: every property held on every schedule{of}");
            return Ok(Status::Held);
        }
        let resume = match (&r.checkpoint, &a.checkpoint) {
            (Some(c), Some(path)) => {
                // Only the checkpoint this check resumed from is replaced.
                write_private(path, &c.to_bytes(), self.resuming)?;
                outln!("checkpoint: {}", path.display());
                "; the same command resumes from the checkpoint"
            }
            // Where it stopped is lost: say how to keep it next time.
            (_, None) if !r.partial_order => {
                ", or add --checkpoint FILE to keep where it stops and resume from there"
            }
            _ => "",
        };
        outln!("{}", incomplete_line(r.schedules, r.interrupted, resume));
        Ok(Status::Inconclusive)
    }
}

/// Writes the violation's trace and prints the command that replays it.
fn write_violation(
    a: &CheckArgs,
    b: &Bounds,
    r: &ExhaustiveReport,
    run: &zklock_checker::CheckedRun,
    program: &crate::program::Program,
) -> Result<PathBuf> {
    create_private_dir(&a.out)?;
    let stem = match a.shard {
        Some(s) => format!(
            "check-{}c-{}f-shard-{}-of-{}",
            b.clients, b.faults_max, s.index, s.count
        ),
        None => format!("check-{}c-{}f", b.clients, b.faults_max),
    };
    let path = trace_path(&a.out, &stem, a.force)?;
    run.trace(&r.scenario, 0, &a.recipe).write(&path)?;
    outln!("trace: {}", path.display());
    outln!(
        "reproduce: {}{}",
        program.line(&format!("replay {}", path.display())),
        program.at(zklock_checker::ZKLOCK_COMMIT)
    );
    Ok(path)
}

/// The verdict of a check that stopped before its end: not a pass, since the schedules
/// left unexplored may hold a violation, and in the words of what stopped it.
fn incomplete_line(schedules: u64, interrupted: bool, resume: &str) -> String {
    let stopped = if interrupted {
        "the check was interrupted (Ctrl-C) before the rest"
    } else {
        "a bound stopped the search before the rest; raise --schedules-max or \
         --time-limit-s for a complete check"
    };
    format!(
        "incomplete: every property held on the {schedules} schedules explored, but \
         {stopped}{resume}"
    )
}

/// The checkpoint at `path`, if the file exists; a file that is not a readable checkpoint
/// is refused, so that it is never overwritten.
fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("reading the checkpoint {}: {e}", path.display()),
    };
    match Checkpoint::from_bytes(&bytes) {
        Ok(c) => Ok(Some(c)),
        Err(e) => bail!(
            "{}: {e}; it is left as it is (name another file to start afresh)",
            path.display()
        ),
    }
}

/// `--shapes all` makes each attempt's mode and count a choice: a queue and an election
/// make none, and the flag is refused rather than ignored.
fn refuse_shapes_all(lock: &dyn zklock_checker::registry::AnyRecipe, a: &CheckArgs) -> Result<()> {
    if lock.is_work_queue() && a.shape.shapes == crate::shape_args::Shapes::All {
        bail!(
            "--shapes all does not apply to the work queue {}: its clients make no acquire \
             attempts; --fault-durations chosen and --holds chosen are the choices it has",
            a.recipe
        );
    }
    // An election's attempts block until they lead or close: no mode to choose.
    if lock.is_election() && a.shape.shapes == crate::shape_args::Shapes::All {
        bail!(
            "--shapes all does not apply to the election {}: its attempts have no acquire \
             modes; --counts chosen, --fault-durations chosen and --holds chosen are the \
             choices it has",
            a.recipe
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupted check said "a bound stopped the search; raise --schedules-max".
    #[test]
    fn an_interrupted_check_says_it_was_interrupted_not_stopped_by_a_bound() {
        let line = incomplete_line(7, true, "");
        assert!(
            line.contains("the check was interrupted (Ctrl-C)"),
            "{line}"
        );
        assert!(!line.contains("bound"), "{line}");
        let line = incomplete_line(7, false, "");
        assert!(line.contains("a bound stopped the search"), "{line}");
    }
}
