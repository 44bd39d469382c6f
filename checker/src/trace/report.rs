//! The checker's report as a trace file keeps it: the explanation travels with the run,
//! so a reader of the file (or of its timelines) sees what was violated and why without
//! running anything.

use crate::properties::{EventRef, Report, Violation};
use crate::run::CheckedRun;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use zklock_recipe::SessionId;

/// The report of the run a trace records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedReport {
    /// Every property the run violated, in the checker's order.
    pub violated: Vec<String>,
    /// Every violation the checker reported, known-unavoidable ones included.
    pub violations: Vec<SavedViolation>,
    /// Why the simulation stopped before its clients were done, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The report as `zklock` prints it: every property's verdict, then the counters.
    pub text: String,
}

/// One violation: the property, what happened, the events that prove it and the faults
/// just before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedViolation {
    pub property: String,
    pub summary: String,
    /// The known, unavoidable class (belief under process pauses): not a failure.
    #[serde(default)]
    pub known_unavoidable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The proving events, in history order.
    pub events: Vec<SavedEvent>,
    /// The last few faults before the violation.
    pub faults_before: Vec<SavedEvent>,
}

/// An event a violation names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedEvent {
    /// Index into the trace's `history.events`.
    pub index: usize,
    pub time_us: u64,
    pub client: u32,
    pub session: SessionId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<i64>,
    /// Its role in the proof, e.g. "first holder acquires"; empty for a fault.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The event as the text timeline describes it.
    pub description: String,
}

impl SavedReport {
    /// The report of a judged run. A stuck world counts as a liveness violation: unless
    /// the checker reported one, its proving events are the acquires still waiting when
    /// the world got stuck.
    pub fn of(run: &CheckedRun) -> SavedReport {
        let mut saved = SavedReport {
            violated: run.violated().iter().map(|s| s.to_string()).collect(),
            stopped: run.unfinished(),
            text: run.report_text(),
            ..SavedReport::of_report(&run.report)
        };
        if !saved.violations.iter().any(|v| v.property == LIVENESS)
            && let Some(v) = run.stuck_cause()
        {
            saved.violations.push(SavedViolation::from(&v));
        }
        saved
    }

    /// The checker's report on a history.
    pub fn of_report(report: &Report) -> SavedReport {
        SavedReport {
            violated: report.violated().iter().map(|s| s.to_string()).collect(),
            violations: report
                .verdicts
                .iter()
                .filter_map(|v| v.report.as_ref())
                .map(SavedViolation::from)
                .collect(),
            stopped: None,
            text: report.to_string(),
        }
    }

    /// What the report says of each event it names, by index: `property: role` for a
    /// proving event, `property: fault just before` for a fault.
    pub fn marks(&self) -> BTreeMap<usize, Vec<String>> {
        let mut marks: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for v in &self.violations {
            for e in &v.events {
                let role = if e.role.is_empty() {
                    "proving event"
                } else {
                    &e.role
                };
                marks
                    .entry(e.index)
                    .or_default()
                    .push(format!("{}: {role}", v.property));
            }
            for e in &v.faults_before {
                marks
                    .entry(e.index)
                    .or_default()
                    .push(format!("{}: fault just before", v.property));
            }
        }
        marks
    }

    /// The first event index past `events_len` (the history's length) that the report
    /// names, if any: a report that does not fit its history.
    pub(crate) fn index_out_of(&self, events_len: usize) -> Option<usize> {
        self.violations
            .iter()
            .flat_map(|v| v.events.iter().chain(&v.faults_before))
            .map(|e| e.index)
            .find(|&i| i >= events_len)
    }
}

const LIVENESS: &str = crate::properties::liveness_after_heal::NAME;

impl From<&Violation> for SavedViolation {
    fn from(v: &Violation) -> SavedViolation {
        SavedViolation {
            property: v.property.to_owned(),
            summary: v.summary.clone(),
            known_unavoidable: v.known_unavoidable,
            explanation: v.explanation.clone(),
            events: v.events.iter().map(SavedEvent::from).collect(),
            faults_before: v.faults_before.iter().map(SavedEvent::from).collect(),
        }
    }
}

impl From<&EventRef> for SavedEvent {
    fn from(e: &EventRef) -> SavedEvent {
        SavedEvent {
            index: e.index,
            time_us: e.time_us,
            client: e.client,
            session: e.session,
            token: e.token,
            role: e.role.clone(),
            description: e.description.clone(),
        }
    }
}
