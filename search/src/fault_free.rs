//! The search's fault-free runs: its reference run, and a control run of the same
//! script, without a fault, after every `--control-every` points. A library that
//! violates a property without any fault (a leak that warm drivers meet one run in ten,
//! a lock stuck in the script itself) would otherwise be reported at every point whose
//! run happens to meet it, as though each point's fault had caused it. A point's
//! violation that a fault-free run showed too, at the same attempts, is reported as
//! such ([`FaultFree::explains`]); it is listed still, never dropped.

use std::collections::{BTreeMap, BTreeSet};
use zklock_checker::properties::Report;
use zklock_recipe::history::{EventKind, History};

/// What each violated property of one run names: the property, and the attempts (client
/// and its attempt's ordinal in the script, from 1) its proof's events belong to, as
/// `node_outlives_attempt at c1#4`. A property whose proof names no attempt (a stuck
/// run's `liveness_after_heal`) is named alone. The same violation of the same script
/// has the same signature in any run, fault or not.
pub fn signatures(report: &Report, history: &History) -> Vec<String> {
    let mut out = Vec::new();
    for verdict in report.verdicts.iter().filter(|v| !v.ok) {
        let attempts: BTreeSet<(u32, usize)> = verdict
            .report
            .iter()
            .flat_map(|violation| &violation.events)
            .filter_map(|event| attempt_of(history, event.index))
            .collect();
        out.push(match attempts.is_empty() {
            true => verdict.property.to_owned(),
            false => format!(
                "{} at {}",
                verdict.property,
                attempts
                    .iter()
                    .map(|(client, nth)| format!("c{client}#{nth}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        });
    }
    out
}

/// The attempt event `index` belongs to, when it is an acquire's or a release's event:
/// its client, and how many acquires that client had begun up to it.
fn attempt_of(history: &History, index: usize) -> Option<(u32, usize)> {
    let event = history.events.get(index)?;
    let of_attempt = matches!(
        event.kind,
        EventKind::AcquireInvoked { .. }
            | EventKind::Acquired { .. }
            | EventKind::AcquireFailed { .. }
            | EventKind::ReleaseInvoked
            | EventKind::Released
            | EventKind::ReleaseFailed { .. }
    );
    if !of_attempt {
        return None;
    }
    let nth = history.events[..=index]
        .iter()
        .filter(|e| e.client == event.client && matches!(e.kind, EventKind::AcquireInvoked { .. }))
        .count();
    (nth > 0).then_some((event.client, nth))
}

/// The fault-free runs judged so far, and what they violated.
#[derive(Clone, Debug, Default)]
pub struct FaultFree {
    /// Fault-free runs judged: the reference run and the control runs.
    pub runs: u64,
    /// Of them, how many violated any property.
    pub violated_runs: u64,
    /// Of them, how many violated each property.
    pub by_property: BTreeMap<String, u64>,
    /// Every signature a fault-free run violated.
    seen: BTreeSet<String>,
}

impl FaultFree {
    /// Counts one fault-free run, which violated `violated` with `signatures`. Returns
    /// whether the run showed a signature no fault-free run had shown before (a
    /// violation worth listing on its own).
    pub fn add(&mut self, violated: &[String], signatures: &[String]) -> bool {
        self.runs += 1;
        self.violated_runs += u64::from(!violated.is_empty());
        for property in violated {
            *self.by_property.entry(property.clone()).or_default() += 1;
        }
        let mut new = false;
        for s in signatures {
            new |= self.seen.insert(s.clone());
        }
        new
    }

    /// Whether every violation of a run with `signatures` was shown by a fault-free
    /// run too: the same property, at the same attempts. A run that violated nothing is
    /// not explained (there is nothing to explain).
    pub fn explains(&self, signatures: &[String]) -> bool {
        !signatures.is_empty() && signatures.iter().all(|s| self.seen.contains(s))
    }

    /// "3 of 40 violated liveness_after_heal (3), node_outlives_attempt (2)", or
    /// "none of 40 violated a property".
    pub fn describe(&self) -> String {
        if self.violated_runs == 0 {
            return format!("none of {} violated a property", self.runs);
        }
        let each: Vec<String> = self
            .by_property
            .iter()
            .map(|(p, n)| format!("{p} ({n})"))
            .collect();
        format!(
            "{} of {} violated {}",
            self.violated_runs,
            self.runs,
            each.join(", ")
        )
    }
}

/// When the next control run is due: after every `every` point runs handed out (0:
/// never).
#[derive(Debug)]
pub struct Controls {
    every: u64,
    since: u64,
    /// Control runs handed out so far, which names the next one in the journal.
    pub handed: u64,
}

/// The default of `zklock search --control-every`: a control run costs one run in
/// twenty-one, and a search of 700 points makes 35, enough to meet a fault-free
/// violation one run in ten shows a few times.
pub const CONTROL_EVERY_DEFAULT: u64 = 20;
/// The bound on `--control-every`.
pub const CONTROL_EVERY_MAX: u64 = 100_000;

impl Controls {
    pub fn new(every: u64) -> Controls {
        Controls {
            every,
            since: 0,
            handed: 0,
        }
    }

    /// Called as a point's run is handed out: whether a control run is due before the
    /// next one. Returns its index (0 for the first control run).
    pub fn after_point(&mut self) -> Option<u64> {
        if self.every == 0 {
            return None;
        }
        self.since += 1;
        if self.since < self.every {
            return None;
        }
        self.since = 0;
        self.handed += 1;
        Some(self.handed - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_violation_is_explained_only_when_a_fault_free_run_showed_each_of_its_signatures() {
        let mut ff = FaultFree::default();
        assert!(!ff.explains(&strings(&["liveness_after_heal"])));
        let leak = strings(&["liveness_after_heal", "node_outlives_attempt at c1#4"]);
        assert!(ff.add(
            &strings(&["liveness_after_heal", "node_outlives_attempt"]),
            &leak
        ));
        // The same again is nothing new.
        assert!(!ff.add(
            &strings(&["liveness_after_heal"]),
            &strings(&["liveness_after_heal"])
        ));
        assert!(ff.explains(&leak));
        assert!(ff.explains(&strings(&["node_outlives_attempt at c1#4"])));
        // The same property at another attempt, or one more property, is the fault's.
        assert!(!ff.explains(&strings(&["node_outlives_attempt at c0#2"])));
        assert!(!ff.explains(&strings(&[
            "node_outlives_attempt at c1#4",
            "fencing_token_order at c0#1 c1#2"
        ])));
        // A run that violated nothing is not "as without a fault".
        assert!(!ff.explains(&[]));
        ff.add(&[], &[]);
        assert_eq!(ff.runs, 3);
        assert_eq!(
            ff.describe(),
            "2 of 3 violated liveness_after_heal (2), node_outlives_attempt (1)"
        );
    }

    #[test]
    fn a_signature_names_the_attempts_of_the_proof_and_a_proof_without_one_the_property() {
        use zklock_checker::properties::{Counters, EventRef, Verdict, Violation};
        use zklock_recipe::SessionId;
        use zklock_recipe::history::{AcquireMode, Event, LockRole};
        let event = |client, kind| Event {
            time_us: 0,
            client,
            session: SessionId(1),
            kind,
        };
        let invoked = || EventKind::AcquireInvoked {
            role: LockRole::Exclusive,
            mode: AcquireMode::Blocking,
            lock: None,
        };
        let history = History {
            events: vec![
                event(1, invoked()),
                event(0, invoked()),
                event(1, EventKind::AcquireFailed { reason: "x".into() }),
                event(1, invoked()),
                event(1, EventKind::AcquireFailed { reason: "y".into() }),
            ],
        };
        let proof = |indices: &[usize]| Violation {
            property: "p",
            summary: String::new(),
            events: indices
                .iter()
                .map(|&index| EventRef {
                    index,
                    time_us: 0,
                    client: history.events[index].client,
                    session: SessionId(1),
                    token: None,
                    role: String::new(),
                    description: String::new(),
                })
                .collect(),
            faults_before: Vec::new(),
            known_unavoidable: false,
            explanation: None,
        };
        let verdict = |property, ok, report| Verdict {
            property,
            ok,
            report,
            note: None,
        };
        let report = Report {
            verdicts: vec![
                verdict("mutual_exclusion", true, None),
                // Client 1's second attempt: its start and its end.
                verdict("node_outlives_attempt", false, Some(proof(&[3, 4]))),
                verdict("fencing_token_order", false, Some(proof(&[1, 2]))),
                verdict("liveness_after_heal", false, None),
            ],
            counters: Counters::default(),
        };
        assert_eq!(
            signatures(&report, &history),
            [
                "node_outlives_attempt at c1#2",
                "fencing_token_order at c0#1 c1#1",
                "liveness_after_heal"
            ]
        );
    }

    #[test]
    fn a_control_run_is_due_after_every_nth_point_and_never_at_zero() {
        let mut c = Controls::new(3);
        let due: Vec<Option<u64>> = (0..7).map(|_| c.after_point()).collect();
        assert_eq!(due, [None, None, Some(0), None, None, Some(1), None]);
        let mut never = Controls::new(0);
        assert!((0..100).all(|_| never.after_point().is_none()));
    }
}
