//! Every property at once, with the counters.

use super::Violation;
use super::counters::Counting;
use super::fenced_resource::FencedResource;
use super::fencing_token_order::FencingTokenOrder;
use super::fifo::Fifo;
use super::liveness_after_heal::LivenessAfterHeal;
use super::mutual_exclusion::MutualExclusion;
use super::no_herd::NoHerd;
use super::read_write_compat::ReadWriteCompat;
use super::rightful_write_accepted::RightfulWriteAccepted;
use super::slots::Slots;
use super::timed_acquire::TimedAcquire;
use super::walk::{Judge, walk};
use super::{CheckConfig, Counters, Verdict};
use std::fmt;
use zklock_recipe::history::History;

/// The verdict of every property on one history, and its non-vacuity counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// One per property, in [`PROPERTY_NAMES`](super::PROPERTY_NAMES) order.
    pub verdicts: Vec<Verdict>,
    pub counters: Counters,
}

/// Runs every property on `history`, in one pass over its events.
pub fn check_all(history: &History, cfg: &CheckConfig) -> Report {
    let slots = Slots::new(history);
    let mut judges = <(
        MutualExclusion<'_>,
        (
            FencedResource<'_>,
            (
                FencingTokenOrder<'_>,
                (
                    RightfulWriteAccepted<'_>,
                    (
                        ReadWriteCompat<'_>,
                        (
                            LivenessAfterHeal<'_>,
                            (NoHerd<'_>, (Fifo<'_>, (TimedAcquire<'_>, Counting))),
                        ),
                    ),
                ),
            ),
        ),
    )>::new(history, cfg, &slots);
    walk(history, &slots, &mut judges);
    let (
        mutual_exclusion,
        (
            fenced_resource,
            (
                token_order,
                (
                    rightful_write,
                    (read_write_compat, (liveness, (no_herd, (fifo, (timed_acquire, counters))))),
                ),
            ),
        ),
    ) = judges.finish();
    Report {
        verdicts: vec![
            mutual_exclusion,
            fenced_resource,
            token_order,
            rightful_write,
            read_write_compat,
            liveness,
            no_herd,
            fifo,
            timed_acquire,
        ],
        counters,
    }
}

impl Report {
    /// Whether the run passes: no verdict failed (known-unavoidable ones do not fail).
    pub fn ok(&self) -> bool {
        self.verdicts.iter().all(|v| v.ok)
    }

    /// The first failed verdict, if any.
    pub fn first_failure(&self) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| !v.ok)
    }

    /// The names of the failed properties.
    pub fn violated(&self) -> Vec<&'static str> {
        self.verdicts
            .iter()
            .filter(|v| !v.ok)
            .map(|v| v.property)
            .collect()
    }

    /// The verdict of the property named `name`.
    pub fn verdict(&self, name: &str) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.property == name)
    }
}

impl Report {
    /// The report with its headline naming `unfinished` (why the run stopped before every
    /// client was done) as a failure of liveness: a run cut short is never "all hold".
    /// `cause`, when given, is printed under liveness_after_heal's line: why the run is
    /// stuck.
    pub fn display_unfinished<'a>(
        &'a self,
        unfinished: Option<&'a str>,
        cause: Option<&'a Violation>,
    ) -> impl fmt::Display + 'a {
        Unfinished {
            report: self,
            unfinished,
            cause,
        }
    }

    fn fmt_with(
        &self,
        f: &mut fmt::Formatter<'_>,
        unfinished: Option<&str>,
        cause: Option<&Violation>,
    ) -> fmt::Result {
        let failed = self.violated();
        match (failed.is_empty(), unfinished) {
            (true, None) => writeln!(f, "all properties hold")?,
            (true, Some(why)) => writeln!(
                f,
                "VIOLATED: liveness_after_heal: the run did not finish ({why}); every \
                 property below was judged on the history up to there"
            )?,
            (false, None) => writeln!(f, "VIOLATED: {}", failed.join(", "))?,
            (false, Some(why)) => writeln!(
                f,
                "VIOLATED: {}; and the run did not finish ({why})",
                failed.join(", ")
            )?,
        }
        for v in &self.verdicts {
            let liveness = v.property == super::liveness_after_heal::NAME;
            let kind = if liveness { "eventually" } else { "always" };
            // A run that did not finish fails liveness whatever its history up to there
            // shows: its line says so, never "ok" under a headline that says VIOLATED.
            if liveness && v.ok && unfinished.is_some() {
                writeln!(
                    f,
                    "{kind}: {}: VIOLATED: the run did not finish (see above); the history \
                     up to there shows no waiter past its bound",
                    v.property
                )?;
                if let Some(c) = cause {
                    write!(f, "{c}")?;
                }
                continue;
            }
            write!(f, "{kind}: {v}")?;
        }
        write!(f, "{}", self.counters)
    }
}

struct Unfinished<'a> {
    report: &'a Report,
    unfinished: Option<&'a str>,
    cause: Option<&'a Violation>,
}

impl fmt::Display for Unfinished<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.report.fmt_with(f, self.unfinished, self.cause)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_with(f, None, None)
    }
}
