//! always: `fenced_resource`. The resource that checks tokens accepts writes in
//! non-decreasing token order, and none of its accepted writes is a lost update. The
//! verdict also counts the unfenced resource's lost updates in the same run: what
//! fencing prevented.
//!
//! Only writes by writer-role clients (exclusive or write, from their latest
//! `AcquireInvoked`) are judged: readers share the lock by design, so a reader's write is
//! a workload's misuse, not the recipe's fault.

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step, Write};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::is_writer;
use zklock_recipe::history::History;

pub const NAME: &str = "fenced_resource";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<FencedResource<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct FencedResource<'h> {
    history: &'h History,
    unfenced_lost: u64,
    /// (index, token) of the accepted write with the highest token so far.
    highest: Option<(usize, i64)>,
    violation: Option<Violation>,
}

impl<'h> Judge<'h> for FencedResource<'h> {
    type Output = Verdict;

    fn new(history: &'h History, _: &'h CheckConfig, _: &'h Slots) -> Self {
        FencedResource {
            history,
            unfenced_lost: 0,
            highest: None,
            violation: None,
        }
    }

    #[inline]
    fn resource_write(&mut self, step: Step<'h>, write: Write, beliefs: &Beliefs<'h>) {
        // The role of the writer's latest acquire.
        if beliefs.role_of(step.slot).is_some_and(|r| !is_writer(r)) {
            return;
        }
        self.unfenced_lost += u64::from(write.unfenced_overwrote);
        if write.fenced_accepted && self.violation.is_none() {
            self.accepted(step, write.token, write.fenced_lost_update);
        }
    }

    fn finish(self) -> Verdict {
        let unfenced_lost = self.unfenced_lost;
        let note = format!(
            "fencing prevented {unfenced_lost} lost update{} (the unfenced resource lost {unfenced_lost})",
            if unfenced_lost == 1 { "" } else { "s" }
        );
        let mut violation = self.violation;
        if let Some(v) = violation.as_mut() {
            v.explanation = Some(note.clone());
        }
        let mut verdict = Verdict::from_violation(NAME, violation);
        verdict.note = Some(note);
        verdict
    }
}

impl FencedResource<'_> {
    /// A writer's write the fenced resource accepted, before any violation.
    fn accepted(&mut self, step: Step<'_>, token: i64, fenced_lost_update: bool) {
        let (history, i, e) = (self.history, step.index, step.event);
        if let Some((hi, hi_token)) = self.highest.filter(|(_, t)| token < *t) {
            let summary = format!(
                "the fenced resource accepted token {token} from c{} at {} after it had \
                 accepted token {hi_token}",
                e.client,
                at(history, i)
            );
            self.violation = Some(Violation::new(
                NAME,
                history,
                summary,
                &[
                    (hi, "accepted write with the higher token"),
                    (i, "later accepted write with a lower token"),
                ],
            ));
        } else if fenced_lost_update {
            let mut proof = vec![(i, "accepted write that lost an update")];
            if let Some((hi, _)) = self.highest {
                proof.insert(0, (hi, "previous accepted write"));
            }
            let summary = format!(
                "the fenced resource accepted c{}'s write with token {token} at {}, \
                 overwriting an update it never saw",
                e.client,
                at(history, i)
            );
            self.violation = Some(Violation::new(NAME, history, summary, &proof));
        }
        if self.highest.is_none_or(|(_, t)| token >= t) {
            self.highest = Some((i, token));
        }
    }
}
