//! `zklock merge` of a split check's summaries (`check --shard K/N --summary FILE`):
//! green only when every shard completed; a violation in any shard fails the merge.

use crate::Status;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zklock_checker::check_summary::{CHECK_SUMMARY_KIND, CheckSummary};
use zklock_checker::exercised::Exercised;
use zklock_checker::shard::union_states;

/// Whether `text` is a check's summary rather than a sweep's.
pub fn is_check_summary(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some(CHECK_SUMMARY_KIND))
}

/// The most shards the merge names one by one among those missing or unfinished.
const MISSING_LINES_MAX: usize = 20;

/// Merges the shards' summaries, each `(file, text)` a check summary.
pub fn merge(files: &[(PathBuf, String)], program: &crate::program::Program) -> Result<Status> {
    let (f, shards) = read_shards(files)?;
    let n = f.shard.count;
    print_totals(&f, &shards);
    let violated = print_violations(&shards, program);
    let short = print_incomplete(&shards, n);
    // A violation found is a failure, whatever else is missing.
    if violated {
        return Ok(Status::Violated);
    }
    if short > 0 {
        return Ok(Status::Inconclusive);
    }
    // Judged on the whole check, as a check that was not split is: a shard alone may
    // legitimately make no acquisition, all of them together may not.
    let parts: Option<Vec<&Exercised>> =
        shards.values().map(|(_, s)| s.exercised.as_ref()).collect();
    if let Some(parts) = parts {
        let mut all = Exercised::default();
        parts.into_iter().for_each(|e| all.merge(e));
        if let Err(nothing) = all.verdict() {
            outln!(
                "inconclusive: no property was violated on any schedule of any shard, but \
                 {nothing}"
            );
            return Ok(Status::Inconclusive);
        }
    }
    outln!("ok: every property held on every schedule of every shard");
    Ok(Status::Held)
}

/// Each shard's summary by its index, with the file that holds it.
type Shards = BTreeMap<u32, (PathBuf, CheckSummary)>;

/// The first summary and every shard's, each refused if it is not a check summary, not
/// of the first one's check, inconsistent, or given twice.
fn read_shards(files: &[(PathBuf, String)]) -> Result<(CheckSummary, Shards)> {
    let mut shards: Shards = BTreeMap::new();
    let mut first: Option<(PathBuf, CheckSummary)> = None;
    for (p, text) in files {
        if !is_check_summary(text) {
            bail!(
                "{}: not a zklock check summary, but {} is: give the summaries of one check",
                p.display(),
                files[0].0.display()
            );
        }
        let s: CheckSummary = serde_json::from_str(text)
            .with_context(|| format!("{}: not a zklock check summary", p.display()))?;
        if let Some((fp, f)) = &first {
            same_check(p, &s, fp, f)?;
        }
        consistent(p, &s)?;
        first.get_or_insert_with(|| (p.clone(), s.clone()));
        if let Some((other, _)) = shards.insert(s.shard.index, (p.clone(), s.clone())) {
            bail!(
                "{}: shard {} again (also in {}); give each shard once",
                p.display(),
                s.shard,
                other.display()
            );
        }
    }
    let (_, f) = first.context("no summary given")?;
    Ok((f, shards))
}

/// What the shards searched together, and how much of it twice.
fn print_totals(f: &CheckSummary, shards: &Shards) {
    let n = f.shard.count;
    let sum = |g: fn(&CheckSummary) -> u64| shards.values().map(|(_, s)| g(s)).sum::<u64>();
    outln!(
        "check of {}: {} of {n} shards given, split by the kind of each schedule's first \
         fault, of {} kinds",
        f.recipe,
        shards.len(),
        f.fault_kinds
    );
    let states = sum(|s| s.distinct_states);
    let parts: Vec<(&[u64], u64)> = shards
        .values()
        .map(|(_, s)| (s.sketch.as_slice(), s.distinct_states))
        .collect();
    let (union, exact) = union_states(&parts);
    outln!(
        "{} schedules ({} pruned at seen states), {} states over the shards, {} {union} \
         distinct: {} ({:.1} %) searched by more than one shard; the slowest shard {:.2} s",
        sum(|s| s.schedules),
        sum(|s| s.pruned),
        states,
        if exact { "exactly" } else { "about" },
        states.saturating_sub(union),
        100.0 * states.saturating_sub(union) as f64 / states.max(1) as f64,
        shards.values().map(|(_, s)| s.wall_ms).max().unwrap_or(0) as f64 / 1000.0
    );
}

/// Each shard's violation with its reproduction; whether there was one.
fn print_violations(shards: &Shards, program: &crate::program::Program) -> bool {
    let mut violated = false;
    for (p, s) in shards.values() {
        if let Some(v) = &s.violation {
            violated = true;
            outln!("shard {} ({}): FAILED {}", s.shard, p.display(), v.failure);
            match &v.trace {
                Some(t) => outln!(
                    "  trace: {t}\n  reproduce: {}{}",
                    program.line(&format!("replay {t}")),
                    program.at(&s.commit)
                ),
                None => outln!("  its trace could not be written (the shard said why)"),
            }
        }
    }
    violated
}

/// The shards of `n` missing or unfinished, at most [`MISSING_LINES_MAX`] by name; how
/// many there are.
fn print_incomplete(shards: &Shards, n: u32) -> usize {
    let mut lines = Vec::new();
    let mut short = 0;
    for k in 1..=n {
        let line = match shards.get(&k) {
            None => format!("shard {k}/{n}: no summary of it given"),
            Some((_, s)) if s.complete || s.violation.is_some() => continue,
            Some((p, s)) => format!(
                "shard {k}/{n} ({}): {} after {} schedules",
                p.display(),
                if s.interrupted {
                    "interrupted"
                } else {
                    "stopped by a bound"
                },
                s.schedules
            ),
        };
        short += 1;
        if lines.len() < MISSING_LINES_MAX {
            lines.push(line);
        }
    }
    if short > 0 {
        outln!(
            "incomplete: {short} of {n} shards did not search all their schedules, so not \
             every schedule was checked:"
        );
        for l in &lines {
            outln!("  {l}");
        }
        if short > lines.len() {
            outln!("  and {} more shards", short - lines.len());
        }
    }
    short
}

/// Refuses a summary of another check than the first one's.
fn same_check(p: &Path, s: &CheckSummary, fp: &Path, f: &CheckSummary) -> Result<()> {
    let scenario = |x: &CheckSummary| serde_json::to_string(&x.scenario).unwrap_or_default();
    let pairs: [(&str, String, String); 9] = [
        ("zklock version", s.version.clone(), f.version.clone()),
        ("zklock commit", s.commit.clone(), f.commit.clone()),
        ("recipe", s.recipe.clone(), f.recipe.clone()),
        ("scenario", scenario(s), scenario(f)),
        ("pruning", s.prune.to_string(), f.prune.to_string()),
        ("symmetry", s.symmetry.to_string(), f.symmetry.to_string()),
        (
            "keep-only",
            s.keep_only.to_string(),
            f.keep_only.to_string(),
        ),
        (
            "number of shards",
            s.shard.count.to_string(),
            f.shard.count.to_string(),
        ),
        (
            "kinds of fault",
            s.fault_kinds.to_string(),
            f.fault_kinds.to_string(),
        ),
    ];
    for (what, ours, theirs) in pairs {
        if ours != theirs {
            bail!(
                "{}: its {what} is {ours}, but {}'s is {theirs}: not shards of one check",
                p.display(),
                fp.display()
            );
        }
    }
    Ok(())
}

/// Refuses a summary whose counts do not fit its shard: an edited or damaged file could
/// otherwise pass for a complete shard.
fn consistent(p: &Path, s: &CheckSummary) -> Result<()> {
    let shard_ok = zklock_checker::shard::Shard::new(s.shard.index, s.shard.count).is_ok();
    if !shard_ok
        || s.shard_kinds != s.shard.kinds_of(s.fault_kinds)
        || (s.complete && (s.interrupted || s.violation.is_some()))
        || s.sketch.len() as u64 > s.distinct_states
    {
        bail!(
            "{}: shard {} with {} of {} kinds of fault, complete {}, {} states: is it damaged \
             or edited?",
            p.display(),
            s.shard,
            s.shard_kinds,
            s.fault_kinds,
            s.complete,
            s.distinct_states
        );
    }
    Ok(())
}
