//! Running a scenario and judging it in one call: what `explore` and `replay` share.

use crate::per_lock::{check_per_lock, semaphore_leases_per_lock};
use crate::properties::Violation;
use crate::properties::election::check_election;
use crate::properties::queue::{QueueFacts, check_queue};
use crate::properties::revocation::check_revocation;
use crate::properties::{CheckConfig, Report, check_all};
use crate::trace::{SavedReport, Trace};
use zklock_sim::{
    RandomChooser, Recipe, ReplayChooser, RunOutcome, Scenario, ScenarioError, SimError,
    run_scenario_with,
};

/// One judged run.
#[derive(Debug)]
pub struct CheckedRun {
    pub outcome: RunOutcome,
    pub report: Report,
}

impl CheckedRun {
    /// The first failure: a violated property's name, or why the world stopped early.
    pub fn failure(&self) -> Option<String> {
        if let Some(v) = self.report.first_failure() {
            return Some(v.property.to_string());
        }
        self.outcome.error.as_ref().map(|e| match e {
            SimError::Stuck { .. } => "liveness_after_heal (stuck)".to_string(),
            other => format!("run stopped: {other}"),
        })
    }

    /// Why the world stopped before every client was done (stuck, a time or step limit),
    /// if it did: such a run fails `liveness_after_heal` whatever its history shows.
    pub fn unfinished(&self) -> Option<String> {
        match self.outcome.error.as_ref()? {
            SimError::Pruned => None,
            // In the scenario's words, not the simulator's: a user sets the scenario.
            SimError::TimeLimit { limit_ms } => Some(format!(
                "it reached the scenario's virtual time limit of {limit_ms} ms \
                 (time_limit_ms) before every client was done"
            )),
            SimError::StepLimit { steps_max } => Some(format!(
                "it reached the simulation's limit of {steps_max} steps before every client \
                 was done"
            )),
            e => Some(e.to_string()),
        }
    }

    /// The report, headed by the failure of a run that did not finish; a stuck run's
    /// report names why it is stuck ([`CheckedRun::stuck_cause`]).
    pub fn report_text(&self) -> String {
        let why = self.unfinished();
        let cause = self.stuck_cause();
        self.report
            .display_unfinished(why.as_deref(), cause.as_ref())
            .to_string()
    }

    /// For a run the simulation found stuck: each acquire left waiting, its last
    /// requests and their answers, and what became of the node it last watched, as a
    /// violation of `liveness_after_heal` with those events as its proof. `None` for a
    /// run that was not stuck, or had no acquire waiting.
    pub fn stuck_cause(&self) -> Option<Violation> {
        match self.outcome.error {
            Some(SimError::Stuck { .. }) => crate::stuck::cause(&self.outcome.history),
            _ => None,
        }
    }

    /// Every property this run violated (a stuck world counts as `liveness_after_heal`).
    pub fn violated(&self) -> Vec<&'static str> {
        let mut v = self.report.violated();
        if matches!(self.outcome.error, Some(SimError::Stuck { .. }))
            && !v.contains(&"liveness_after_heal")
        {
            v.push("liveness_after_heal");
        }
        v
    }

    /// Whether the run violated `property` (its first word: "liveness_after_heal (stuck)"
    /// names liveness_after_heal).
    pub fn violates(&self, property: &str) -> bool {
        let name = property.split(' ').next().unwrap_or(property);
        self.violated().contains(&name)
    }

    /// The run as a trace file, with the checker's report on it.
    pub fn trace(&self, scenario: &Scenario, seed: u64, recipe: &str) -> Trace {
        Trace::new(
            scenario.clone(),
            seed,
            self.outcome.choices.clone(),
            recipe,
            self.outcome.history.clone(),
            self.failure(),
        )
        .with_report(SavedReport::of(self))
    }
}

/// Judges a finished run of `scenario`.
pub fn judge(scenario: &Scenario, outcome: RunOutcome) -> CheckedRun {
    let cfg = CheckConfig::from_scenario(scenario)
        .with_final_children(outcome.final_lock_children.clone())
        .with_run_end_us(outcome.end_time_us);
    if let Some(paths) = outcome.work_queue.clone() {
        let mut finals = outcome.final_children_by_lock.iter().cloned();
        let facts = QueueFacts {
            paths,
            final_items: finals.next().unwrap_or_default(),
            final_locks: finals.next().unwrap_or_default(),
        };
        let report = check_queue(&outcome.history, &cfg, &facts);
        return CheckedRun { outcome, report };
    }
    if outcome.election {
        // The workload deletes the election path when it is empty, as ZooKeeper reaps a
        // container, and the sequence starts over: the tokens (epochs) are czxids.
        let cfg = CheckConfig {
            tokens_are_czxids: true,
            ..cfg
        };
        let report = check_election(&outcome.history, &cfg);
        return CheckedRun { outcome, report };
    }
    let mut report = if scenario.locks > 1 {
        let locks: Vec<(String, Vec<String>)> = scenario
            .lock_paths()
            .into_iter()
            .zip(outcome.final_children_by_lock.iter().cloned())
            .collect();
        check_per_lock(&outcome.history, &cfg, &locks)
    } else {
        check_all(&outcome.history, &cfg)
    };
    if scenario.revokers > 0 {
        let end_us = outcome.end_time_us;
        let verdicts = check_revocation(&outcome.history, scenario.revoke_bound_ms, end_us);
        report.verdicts.extend(verdicts);
    }
    if let Some(leases) = outcome.leases {
        let verdict = semaphore_leases_per_lock(
            &outcome.history,
            leases,
            cfg.pauses_on,
            &scenario.lock_paths(),
        );
        // A semaphore's own property comes first: its first failure is the one reported.
        report.verdicts.insert(0, verdict);
    }
    CheckedRun { outcome, report }
}

/// Whether the history of a run an exploring search stopped at a seen state broke a
/// property already, as far as it goes: every property but `liveness_after_heal`, since
/// the run goes on (its final state is no run's final state, and a wait still open may
/// yet be served). A work queue's run is judged whole only: `false`.
pub(crate) fn prefix_broke_a_property(scenario: &Scenario, outcome: RunOutcome) -> bool {
    if outcome.work_queue.is_some() {
        return false;
    }
    judge(scenario, outcome)
        .report
        .verdicts
        .iter()
        .any(|v| !v.ok && v.property != crate::properties::liveness_after_heal::NAME)
}

/// Runs `scenario` from `seed` with the random Chooser, then judges it.
pub fn check_seed<R: Recipe>(scenario: &Scenario, seed: u64, recipe: &R) -> CheckedRun {
    let o = run_scenario_with(scenario, seed, Box::new(RandomChooser::new(seed)), recipe);
    judge(scenario, o)
}

/// Replays a trace's choices with `recipe`, then judges the run. A scenario outside its
/// bounds ([`Scenario::validate`]) is an error, and nothing runs.
///
/// ```
/// use zklock_checker::{check_seed, replay};
/// use zklock_sim::{Scenario, ShippedRecipe};
///
/// // A run kept as a trace (`Trace::write` puts it in a file) replays exactly.
/// let sc = Scenario { clients: 2, acquisitions_per_client: 2, ..Scenario::default() };
/// let run = check_seed(&sc, 7, &ShippedRecipe::default());
/// let trace = run.trace(&sc, 7, "zklock");
/// let again = replay(&trace, &ShippedRecipe::default()).expect("a scenario within bounds");
/// assert!(trace.same_history(&again.outcome.history));
/// assert_eq!(again.failure(), run.failure());
/// ```
pub fn replay<R: Recipe>(trace: &Trace, recipe: &R) -> Result<CheckedRun, ScenarioError> {
    trace.scenario.validate()?;
    let chooser = ReplayChooser::new(trace.choices.clone());
    let o = run_scenario_with(&trace.scenario, trace.seed, Box::new(chooser), recipe);
    Ok(judge(&trace.scenario, o))
}

#[cfg(test)]
mod tests;
