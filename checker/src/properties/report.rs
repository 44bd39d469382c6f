//! Every property at once, with the counters.

use super::index::HistoryIndex;
use super::{
    CheckConfig, Counters, Verdict, counters, fenced_resource, fifo, liveness_after_heal,
    mutual_exclusion, no_herd, read_write_compat,
};
use std::fmt;
use zklock_recipe::history::History;

/// The verdict of every property on one history, and its non-vacuity counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// One per property, in [`PROPERTY_NAMES`](super::PROPERTY_NAMES) order.
    pub verdicts: Vec<Verdict>,
    pub counters: Counters,
}

/// Runs every property on `history`.
pub fn check_all(history: &History, cfg: &CheckConfig) -> Report {
    // Client slots and holds are worked out once for all the properties.
    let index = HistoryIndex::new(history);
    Report {
        verdicts: vec![
            mutual_exclusion::check_indexed(&index, cfg),
            fenced_resource::check_indexed(&index, cfg),
            read_write_compat::check_indexed(&index, cfg),
            liveness_after_heal::check_indexed(&index, cfg),
            no_herd::check_indexed(&index, cfg),
            fifo::check_indexed(&index, cfg),
        ],
        counters: counters::count_indexed(&index),
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

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.violated();
        if failed.is_empty() {
            writeln!(f, "all properties hold")?;
        } else {
            writeln!(f, "VIOLATED: {}", failed.join(", "))?;
        }
        for v in &self.verdicts {
            let kind = if v.property == super::liveness_after_heal::NAME {
                "eventually"
            } else {
                "always"
            };
            write!(f, "{kind}: {v}")?;
        }
        write!(f, "{}", self.counters)
    }
}
