//! always: `read_write_compat`. A writer excludes everyone; readers share. Two writers
//! overlapping is `mutual_exclusion`'s to report, so this property looks only at a
//! reader against a writer: each bug maps to one property name. The role of a hold is
//! that of the client's preceding `AcquireInvoked`.

use super::index::HistoryIndex;
use super::{CheckConfig, Verdict, overlap};
use zklock_recipe::history::History;

pub const NAME: &str = "read_write_compat";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Verdict {
    let v = overlap::check(
        NAME,
        "held a read and a write lock at once",
        index,
        cfg,
        |a, b| a.is_writer() != b.is_writer(),
    );
    Verdict::from_violation(NAME, v)
}
