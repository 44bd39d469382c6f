//! always: `mutual_exclusion`, judged by belief. No two exclusive/writer holds overlap.
//! A hold lasts from `Acquired` to `ReleaseInvoked` or `Lost` (see [`crate::holds`]).

use super::index::HistoryIndex;
use super::{CheckConfig, Verdict, overlap};
use zklock_recipe::history::History;

pub const NAME: &str = "mutual_exclusion";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Verdict {
    let v = overlap::check(
        NAME,
        "both believed they held the lock",
        index,
        cfg,
        |a, b| a.is_writer() && b.is_writer(),
    );
    Verdict::from_violation(NAME, v)
}
