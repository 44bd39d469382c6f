//! The summary a shard of a split check writes (`zklock check --shard K/N --summary
//! FILE`), which `zklock merge` combines.

use crate::exercised::Exercised;
use crate::exhaustive::ExhaustiveReport;
use crate::run::CheckedRun;
use crate::shard::Shard;
use crate::trace::{ZKLOCK_COMMIT, ZKLOCK_VERSION};
use serde::{Deserialize, Serialize};
use zklock_sim::Scenario;

/// The `kind` of every check summary, which tells it from a sweep's.
pub const CHECK_SUMMARY_KIND: &str = "check";

/// What one shard of a split check searched and found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// [`CHECK_SUMMARY_KIND`].
    pub kind: String,
    /// The zklock that wrote it: shards of one check split one tree, which only the same
    /// simulation grows.
    pub version: String,
    pub commit: String,
    pub recipe: String,
    /// The scenario searched (the check's bounds applied).
    pub scenario: Scenario,
    pub prune: bool,
    pub symmetry: bool,
    pub keep_only: bool,
    pub shard: Shard,
    /// The split ([`crate::shard`]): the kinds of fault the check places, and of those
    /// the kinds of the first faults this shard searches.
    pub fault_kinds: u64,
    pub shard_kinds: u64,
    /// Whether every schedule of the shard was explored.
    pub complete: bool,
    /// Whether Ctrl-C stopped it (else a bound did, when not complete).
    pub interrupted: bool,
    pub schedules: u64,
    pub pruned: u64,
    pub distinct_states: u64,
    pub max_depth: u64,
    pub wall_ms: u64,
    pub threads: u64,
    /// The first violation the shard found.
    pub violation: Option<ShardViolation>,
    /// The sketch of the shard's states ([`crate::shard`]), to estimate the shards' union.
    pub sketch: Vec<u64>,
    /// What the shard's schedules exercised, summed by the merge so that shards that
    /// together checked nothing are inconclusive. `None`: not known (a summary of an older
    /// zklock, or a shard resumed from a checkpoint without counts, of format 1 or 2,
    /// which counts only what it ran since).
    #[serde(default)]
    pub exercised: Option<Exercised>,
}

/// A violation a shard found, and where its trace is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardViolation {
    /// The properties violated.
    pub violated: Vec<String>,
    /// What failed, in words.
    pub failure: String,
    /// The trace's file, as the shard wrote it (none when it could not be written).
    pub trace: Option<String>,
}

impl CheckSummary {
    /// The summary of a shard's report (`None` for a check that was not split), with
    /// `failure` saying what its violation broke and `trace` where its trace went.
    pub fn of(
        report: &ExhaustiveReport,
        recipe: &str,
        prune: bool,
        failure: Option<String>,
        trace: Option<String>,
    ) -> Option<CheckSummary> {
        let s = report.shard.as_ref()?;
        let violation = report
            .violation
            .as_ref()
            .map(|run: &CheckedRun| ShardViolation {
                violated: run.violated().iter().map(|v| v.to_string()).collect(),
                failure: failure.unwrap_or_else(|| run.failure().unwrap_or_default()),
                trace,
            });
        Some(CheckSummary {
            kind: CHECK_SUMMARY_KIND.into(),
            version: ZKLOCK_VERSION.into(),
            commit: ZKLOCK_COMMIT.into(),
            recipe: recipe.into(),
            scenario: report.scenario.clone(),
            prune,
            symmetry: report.symmetry,
            keep_only: report.keep_only,
            shard: s.shard,
            fault_kinds: s.fault_kinds,
            shard_kinds: s.shard_kinds,
            complete: report.complete,
            interrupted: report.interrupted,
            schedules: report.schedules,
            pruned: report.pruned,
            distinct_states: report.distinct_states,
            max_depth: report.max_depth as u64,
            wall_ms: report.wall_ms,
            threads: report.threads as u64,
            violation,
            sketch: s.sketch.clone(),
            exercised: report.exercised_whole().cloned(),
        })
    }
}
