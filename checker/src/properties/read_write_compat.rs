//! always: `read_write_compat`. A writer excludes everyone; readers share. Two writers
//! overlapping is `mutual_exclusion`'s to report, so this property looks only at a
//! reader against a writer: each bug maps to one property name. The role of a hold is
//! that of the client's preceding `AcquireInvoked`.

use super::beliefs::Beliefs;
use super::overlap::{Conflict, Overlaps};
use super::slots::Slots;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict};
use zklock_recipe::history::History;

pub const NAME: &str = "read_write_compat";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<ReadWriteCompat<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state: the overlap search, for a reader against a writer.
#[derive(Debug)]
pub(crate) struct ReadWriteCompat<'h>(Overlaps<'h>);

impl<'h> Judge<'h> for ReadWriteCompat<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, _: &'h Slots) -> Self {
        let what = "held a read and a write lock at once";
        ReadWriteCompat(Overlaps::new(
            NAME,
            what,
            history,
            cfg,
            Conflict::ReaderAndWriter,
        ))
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        self.0.acquired(step, token, node, beliefs);
    }

    fn finish(self) -> Verdict {
        Verdict::from_violation(NAME, self.0.finish())
    }
}
