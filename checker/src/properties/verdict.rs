//! Verdicts and violation reports.

use crate::timeline::{Describer, format_ms};
use std::fmt;
use zklock_recipe::SessionId;
use zklock_recipe::history::{EventKind, History};

/// How many fault events a report shows before the violation.
pub const FAULTS_SHOWN: usize = 5;

/// One property's verdict on one history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The property's stable name, e.g. `mutual_exclusion`.
    pub property: &'static str,
    /// False only when the run fails on this property. A known-unavoidable violation
    /// (belief under process pauses) keeps `ok` true and still carries its report.
    pub ok: bool,
    pub report: Option<Violation>,
    /// Extra facts worth printing even on a pass (e.g. lost updates fencing prevented).
    pub note: Option<String>,
}

impl Verdict {
    pub(crate) fn from_violation(property: &'static str, violation: Option<Violation>) -> Verdict {
        Verdict {
            property,
            ok: violation.as_ref().is_none_or(|v| v.known_unavoidable),
            report: violation,
            note: None,
        }
    }

    /// A violation that is the known, unavoidable class and does not fail the run.
    pub fn is_known_unavoidable(&self) -> bool {
        self.report.as_ref().is_some_and(|v| v.known_unavoidable)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match (self.ok, self.is_known_unavoidable()) {
            (false, _) => "VIOLATED",
            (true, true) => "known-unavoidable violation (not a failure)",
            (true, false) => "ok",
        };
        writeln!(f, "{}: {status}", self.property)?;
        if let Some(note) = &self.note {
            writeln!(f, "  {note}")?;
        }
        if let Some(v) = &self.report {
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

/// One event that proves a violation, with what it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRef {
    /// Index into `history.events`.
    pub index: usize,
    pub time_us: u64,
    pub client: u32,
    pub session: SessionId,
    /// The fencing token, for `Acquired` and resource writes.
    pub token: Option<i64>,
    /// Its role in the proof, e.g. "first holder acquires".
    pub role: String,
    /// The event, as the timeline describes it.
    pub description: String,
}

impl EventRef {
    pub(crate) fn new(
        describer: &Describer<'_>,
        history: &History,
        index: usize,
        role: &str,
    ) -> EventRef {
        let e = &history.events[index];
        let token = match &e.kind {
            EventKind::Acquired { token, .. } | EventKind::ResourceWrite { token, .. } => {
                Some(*token)
            }
            _ => None,
        };
        EventRef {
            index,
            time_us: e.time_us,
            client: e.client,
            session: e.session,
            token,
            role: role.to_owned(),
            description: describer.line(index).trim_end().to_owned(),
        }
    }
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:<6} {}", self.index, self.description)?;
        if !self.role.is_empty() {
            write!(f, "   <- {}", self.role)?;
        }
        Ok(())
    }
}

/// A violation: what went wrong, the events that prove it, and the faults before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub property: &'static str,
    /// One sentence: what happened.
    pub summary: String,
    /// The proving events, in history order.
    pub events: Vec<EventRef>,
    /// The last few faults before the last proving event.
    pub faults_before: Vec<EventRef>,
    /// The known, unavoidable class (belief under process pauses): reported, but the run
    /// is judged by `fenced_resource` instead.
    pub known_unavoidable: bool,
    pub explanation: Option<String>,
}

impl Violation {
    /// Builds a violation from `(index, role)` pairs; faults are those before the last.
    pub(crate) fn new(
        property: &'static str,
        history: &History,
        summary: String,
        proof: &[(usize, &str)],
    ) -> Violation {
        let last = proof.iter().map(|(i, _)| *i).max();
        Violation::new_at(property, history, summary, proof, last)
    }

    /// As [`Violation::new`], with the faults shown being those before event `at` (the
    /// moment of the violation; later proving events are context).
    pub(crate) fn new_at(
        property: &'static str,
        history: &History,
        summary: String,
        proof: &[(usize, &str)],
        at: Option<usize>,
    ) -> Violation {
        let describer = Describer::sparse(history);
        let mut events: Vec<EventRef> = proof
            .iter()
            .map(|(i, role)| EventRef::new(&describer, history, *i, role))
            .collect();
        events.sort_by_key(|e| e.index);
        let last = at.map_or(history.events.len(), |i| i.min(history.events.len()));
        let mut faults_before: Vec<EventRef> = history.events[..last]
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, e)| matches!(e.kind, EventKind::Fault { .. }))
            .take(FAULTS_SHOWN)
            .map(|(i, _)| EventRef::new(&describer, history, i, ""))
            .collect();
        faults_before.reverse();
        Violation {
            property,
            summary,
            events,
            faults_before,
            known_unavoidable: false,
            explanation: None,
        }
    }

    /// Indices of the proving events.
    pub fn event_indices(&self) -> Vec<usize> {
        self.events.iter().map(|e| e.index).collect()
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  {} violated: {}", self.property, self.summary)?;
        if self.known_unavoidable {
            writeln!(
                f,
                "  (known, unavoidable class: not a failure of the recipe)"
            )?;
        }
        if let Some(why) = &self.explanation {
            writeln!(f, "  {why}")?;
        }
        writeln!(f, "  proving events:")?;
        for e in &self.events {
            writeln!(f, "    {e}")?;
        }
        if self.faults_before.is_empty() {
            writeln!(f, "  faults just before: none")?;
        } else {
            writeln!(f, "  faults just before:")?;
            for e in &self.faults_before {
                writeln!(f, "    {e}")?;
            }
        }
        Ok(())
    }
}

/// `12.300 ms`, for summaries.
pub(crate) fn at(history: &History, index: usize) -> String {
    format!("{} ms", format_ms(history.events[index].time_us))
}
