//! What a run, a sweep or a check exercised, and the one rule every entry point judges it
//! by: a pass means something only if some acquisition succeeded (for a work queue, some
//! item was processed). A sweep whose every acquire failed holds every safety property
//! vacuously; it is reported as "nothing checked", never as a pass, naming the errors the
//! acquires failed with.
//!
//! The whole of a sweep or a check is judged, not each run: a single schedule may
//! legitimately make no acquisition (every acquire of it dropped or timed out).
//!
//! ```
//! use zklock_checker::exercised::Exercised;
//! use zklock_recipe::SessionId;
//! use zklock_recipe::history::{Event, EventKind, History};
//!
//! let mut h = History::default();
//! let kind = EventKind::AcquireFailed { reason: "no node".into() };
//! h.events.push(Event { time_us: 0, client: 0, session: SessionId(1), kind });
//! let e = Exercised::of(&h);
//! let nothing = e.verdict().unwrap_err();
//! assert!(nothing.to_string().contains("1 with \"no node\""));
//! ```

use crate::properties::Counters;
use crate::properties::counters::add_failure;
pub use crate::properties::counters::{FAILURE_REASONS_MAX, OTHER_REASONS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use zklock_recipe::history::{EventKind, History};

/// Counts of what some runs exercised: successful acquisitions, items processed, and
/// failed acquires by their error. Taken from a history ([`Exercised::of`]) or from a
/// run's [`Counters`], and summed over runs with [`Exercised::merge`].
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Exercised {
    /// Runs counted.
    pub runs: u64,
    /// `Acquired` events.
    pub acquisitions: u64,
    /// `ProcessEnd` events: work-queue items processed.
    pub items_completed: u64,
    /// Whether any run was a work queue's (then an item processed is what counts).
    pub queue: bool,
    /// `AcquireFailed` events, by reason (at most [`FAILURE_REASONS_MAX`] reasons).
    pub failures: BTreeMap<String, u64>,
    /// `RevokeRequested` events: revokers asked holders to give up.
    pub revoke_requests: u64,
    /// `RevokeObserved` events: holds given up when asked.
    pub revocations: u64,
}

impl Exercised {
    /// What one history exercised (one run).
    pub fn of(history: &History) -> Exercised {
        let mut e = Exercised {
            runs: 1,
            ..Exercised::default()
        };
        for ev in &history.events {
            match &ev.kind {
                EventKind::Acquired { .. } => e.acquisitions += 1,
                EventKind::ProcessEnd { .. } => {
                    e.items_completed += 1;
                    e.queue = true;
                }
                EventKind::ItemProduced { .. } | EventKind::ProcessStart { .. } => e.queue = true,
                EventKind::AcquireFailed { reason } => add_failure(&mut e.failures, reason, 1),
                EventKind::RevokeRequested { .. } => e.revoke_requests += 1,
                EventKind::RevokeObserved => e.revocations += 1,
                _ => {}
            }
        }
        e
    }

    /// What `runs` runs whose counters are summed in `counters` exercised.
    pub fn of_counters(counters: &Counters, runs: u64) -> Exercised {
        let mut failures = BTreeMap::new();
        for (reason, n) in &counters.acquire_failures_by_reason {
            add_failure(&mut failures, reason, *n);
        }
        // Counters read from an older summary carry no reasons: count them all the same.
        let named: u64 = failures.values().sum();
        if counters.acquire_failures > named {
            add_failure(
                &mut failures,
                OTHER_REASONS,
                counters.acquire_failures - named,
            );
        }
        Exercised {
            runs,
            acquisitions: counters.acquisitions,
            items_completed: counters.queue.map_or(0, |q| q.items_completed),
            queue: counters.queue.is_some(),
            failures,
            revoke_requests: counters.revoke_requests,
            revocations: counters.revocations,
        }
    }

    /// Adds another run's (or sweep's) counts.
    pub fn merge(&mut self, other: &Exercised) {
        self.runs += other.runs;
        self.acquisitions += other.acquisitions;
        self.items_completed += other.items_completed;
        self.queue |= other.queue;
        self.revoke_requests += other.revoke_requests;
        self.revocations += other.revocations;
        for (reason, n) in &other.failures {
            add_failure(&mut self.failures, reason, *n);
        }
    }

    /// What one lock run exercised, from its counts alone: `acquisitions` made and the
    /// failed acquires by reason (a run whose history is not at hand, as a search's
    /// journalled reference run).
    pub fn of_acquires(acquisitions: u64, failures: &BTreeMap<String, u64>) -> Exercised {
        let mut e = Exercised {
            runs: 1,
            acquisitions,
            ..Exercised::default()
        };
        for (reason, n) in failures {
            add_failure(&mut e.failures, reason, *n);
        }
        e
    }

    /// What was checked: (count, what it counts).
    pub fn checked(&self) -> (u64, &'static str) {
        if self.queue {
            (self.items_completed, "completed items")
        } else {
            (self.acquisitions, "acquisitions")
        }
    }

    /// Failed acquires, of every reason.
    pub fn failures_total(&self) -> u64 {
        self.failures.values().sum()
    }

    /// `Ok` if something was put to the test; else what was not. Revokers that asked and
    /// never saw a holder give up put revocation to no test: nothing checked too.
    pub fn verdict(&self) -> Result<(), NothingChecked> {
        let (checked, what) = self.checked();
        if checked > 0 && (self.revoke_requests == 0 || self.revocations > 0) {
            return Ok(());
        }
        if checked > 0 {
            return Err(NothingChecked {
                runs: self.runs,
                what: "holds given up when asked",
                failures: Vec::new(),
                revoke_requests: self.revoke_requests,
            });
        }
        let mut failures: Vec<(String, u64)> =
            self.failures.iter().map(|(r, n)| (r.clone(), *n)).collect();
        // The commonest first; ties in name order, so that the text is stable.
        failures.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Err(NothingChecked {
            runs: self.runs,
            what,
            failures,
            revoke_requests: 0,
        })
    }
}

/// Nothing was put to the test: no acquisition succeeded (or no item was processed), so
/// every property held vacuously. Inconclusive, never a pass.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NothingChecked {
    /// Runs made (0: none ran at all).
    pub runs: u64,
    /// What would have been checked: "acquisitions" or "completed items".
    pub what: &'static str,
    /// The failed acquires by error, the commonest first.
    pub failures: Vec<(String, u64)>,
    /// Revoke requests made, when it is revocation that was not put to the test (holds
    /// were, but none was given up when asked); else 0.
    pub revoke_requests: u64,
}

impl NothingChecked {
    /// The error every failed acquire gave, when they all gave the same one, and its
    /// count.
    pub fn only_error(&self) -> Option<(&str, u64)> {
        match self.failures.as_slice() {
            [(reason, n)] => Some((reason, *n)),
            _ => None,
        }
    }
}

impl fmt::Display for NothingChecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.runs == 0 {
            return write!(f, "nothing was checked: no run was made");
        }
        if self.revoke_requests > 0 {
            return write!(
                f,
                "revocation was not checked: {} run{} made {} revoke requests and no holder \
                 gave up when asked, so revocation_honored and revocation_only_given_up \
                 held vacuously (does the recipe's revoke call, LockUnderTest::revoke, ask \
                 anything, and its revocation signal hear it?)",
                self.runs,
                if self.runs == 1 { "" } else { "s" },
                self.revoke_requests
            );
        }
        write!(
            f,
            "nothing was checked: {} run{} made 0 {}, so no property was put to the test",
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.what
        )?;
        match (self.only_error(), self.failures.as_slice()) {
            (_, []) => write!(
                f,
                " (no acquire failed either: did the scenario ask for any?)"
            ),
            (Some((reason, n)), _) => write!(f, "; every acquire failed, {n} with {reason:?}"),
            (None, all) => {
                let total: u64 = all.iter().map(|(_, n)| n).sum();
                write!(f, "; every acquire failed ({total}):")?;
                for (i, (reason, n)) in all.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}{n} with {reason:?}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for NothingChecked {}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_recipe::history::Event;

    fn event(kind: EventKind) -> Event {
        Event {
            time_us: 0,
            client: 0,
            session: zklock_recipe::SessionId(1),
            kind,
        }
    }

    fn failed(reason: &str) -> Event {
        event(EventKind::AcquireFailed {
            reason: reason.into(),
        })
    }

    /// Revokers that asked while no holder ever gave up (a lock whose revoke asks nothing,
    /// or whose holders never hear it) put revocation to no test; one revocation in the
    /// sweep is enough, as for acquisitions.
    #[test]
    fn revoke_requests_that_no_holder_gave_up_for_check_nothing() {
        let acquired = event(EventKind::Acquired {
            token: 1,
            node: "/l/n".into(),
        });
        let asked = event(EventKind::RevokeRequested {
            node: "/l/n".into(),
        });
        let mut h = History::default();
        h.events.extend([acquired, asked.clone(), asked]);
        let e = Exercised::of(&h);
        let n = e.verdict().unwrap_err();
        assert_eq!(n.revoke_requests, 2);
        assert!(
            n.to_string()
                .starts_with("revocation was not checked: 1 run made 2 revoke requests"),
            "{n}"
        );
        let mut given_up = History::default();
        given_up.events.push(event(EventKind::RevokeObserved));
        let mut sweep = e.clone();
        sweep.merge(&Exercised::of(&given_up));
        assert_eq!(sweep.verdict(), Ok(()));
        // Through the counters, as a sweep's summary carries them.
        let counters = crate::properties::count(&h);
        assert_eq!((counters.revoke_requests, counters.revocations), (2, 0));
        assert!(Exercised::of_counters(&counters, 1).verdict().is_err());
    }

    #[test]
    fn every_acquire_failing_with_one_error_names_it_and_its_count() {
        let mut h = History::default();
        h.events.extend([failed("no node"), failed("no node")]);
        let mut e = Exercised::of(&h);
        e.merge(&Exercised::of(&h));
        let n = e.verdict().unwrap_err();
        assert_eq!(n.only_error(), Some(("no node", 4)));
        assert_eq!(
            n.to_string(),
            "nothing was checked: 2 runs made 0 acquisitions, so no property was put to the \
             test; every acquire failed, 4 with \"no node\""
        );
    }

    #[test]
    fn several_errors_are_listed_commonest_first() {
        let mut h = History::default();
        h.events
            .extend([failed("timed out"), failed("no node"), failed("no node")]);
        let n = Exercised::of(&h).verdict().unwrap_err();
        assert_eq!(n.only_error(), None);
        assert!(
            n.to_string()
                .ends_with("every acquire failed (3): 2 with \"no node\", 1 with \"timed out\""),
            "{n}"
        );
    }

    #[test]
    fn no_run_and_an_empty_run_check_nothing() {
        let none = Exercised::default().verdict().unwrap_err();
        assert_eq!(none.to_string(), "nothing was checked: no run was made");
        assert!(Exercised::of(&History::default()).verdict().is_err());
    }

    #[test]
    fn one_acquisition_in_a_sweep_is_enough() {
        let mut h = History::default();
        h.events.push(failed("no node"));
        let mut e = Exercised::of(&h);
        let mut ok = History::default();
        ok.events.push(event(EventKind::Acquired {
            token: 1,
            node: "/l/n".into(),
        }));
        e.merge(&Exercised::of(&ok));
        assert_eq!(e.verdict(), Ok(()));
    }

    #[test]
    fn reasons_past_the_cap_are_counted_together() {
        let mut h = History::default();
        for i in 0..FAILURE_REASONS_MAX + 3 {
            h.events.push(failed(&format!("error at /l/{i}")));
        }
        let e = Exercised::of(&h);
        assert_eq!(e.failures.len(), FAILURE_REASONS_MAX + 1);
        assert_eq!(e.failures[OTHER_REASONS], 3);
        assert_eq!(e.failures_total(), FAILURE_REASONS_MAX as u64 + 3);
    }

    #[test]
    fn a_queue_counts_items_processed() {
        let c = Counters {
            acquisitions: 5,
            queue: Some(Default::default()),
            ..Default::default()
        };
        let n = Exercised::of_counters(&c, 3).verdict().unwrap_err();
        assert_eq!(n.what, "completed items");
    }
}
