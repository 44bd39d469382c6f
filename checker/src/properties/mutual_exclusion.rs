//! always: `mutual_exclusion`, judged by belief. No two exclusive/writer holds overlap.
//! A hold lasts from `Acquired` to `ReleaseInvoked` or `Lost` (see [`crate::holds`]).

use super::beliefs::Beliefs;
use super::overlap::{Conflict, Overlaps};
use super::slots::Slots;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict};
use zklock_recipe::history::History;

pub const NAME: &str = "mutual_exclusion";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<MutualExclusion<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state: the overlap search, for two writers.
#[derive(Debug)]
pub(crate) struct MutualExclusion<'h>(Overlaps<'h>);

impl<'h> Judge<'h> for MutualExclusion<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, _: &'h Slots) -> Self {
        let what = "both believed they held the lock";
        MutualExclusion(Overlaps::new(NAME, what, history, cfg, Conflict::Writers))
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        self.0.acquired(step, token, node, beliefs);
    }

    fn finish(self) -> Verdict {
        Verdict::from_violation(NAME, self.0.finish())
    }
}
