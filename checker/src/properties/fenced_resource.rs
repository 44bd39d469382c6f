//! always: `fenced_resource`. The resource that checks tokens accepts writes in
//! non-decreasing token order, and none of its accepted writes is a lost update. The
//! verdict also counts the unfenced resource's lost updates in the same run: what
//! fencing prevented.
//!
//! Only writes by writer-role clients (exclusive or write, from their latest
//! `AcquireInvoked`) are judged: readers share the lock by design, so a reader's write is
//! a workload's misuse, not the recipe's fault.

use super::index::HistoryIndex;
use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::is_writer;
use zklock_recipe::history::{EventKind, History, LockRole};

pub const NAME: &str = "fenced_resource";

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, _cfg: &CheckConfig) -> Verdict {
    let history = index.history;
    let mut unfenced_lost = 0u64;
    // (index, token) of the accepted write with the highest token so far.
    let mut highest: Option<(usize, i64)> = None;
    let mut violation = None;
    // The role of each client's latest acquire, by slot.
    let mut roles: Vec<Option<LockRole>> = index.slots.table();
    for (i, e) in history.events.iter().enumerate() {
        if let EventKind::AcquireInvoked { role, .. } = e.kind {
            roles[index.slots.of(e.client)] = Some(role);
        }
        let EventKind::ResourceWrite {
            token,
            fenced_accepted,
            fenced_lost_update,
            unfenced_overwrote,
            ..
        } = &e.kind
        else {
            continue;
        };
        if roles[index.slots.of(e.client)].is_some_and(|r| !is_writer(r)) {
            continue;
        }
        unfenced_lost += u64::from(*unfenced_overwrote);
        if !*fenced_accepted || violation.is_some() {
            continue;
        }
        if let Some((hi, hi_token)) = highest.filter(|(_, t)| *token < *t) {
            let summary = format!(
                "the fenced resource accepted token {token} from c{} at {} after it had \
                 accepted token {hi_token}",
                e.client,
                at(history, i)
            );
            violation = Some(Violation::new(
                NAME,
                history,
                summary,
                &[
                    (hi, "accepted write with the higher token"),
                    (i, "later accepted write with a lower token"),
                ],
            ));
        } else if *fenced_lost_update {
            let mut proof = vec![(i, "accepted write that lost an update")];
            if let Some((hi, _)) = highest {
                proof.insert(0, (hi, "previous accepted write"));
            }
            let summary = format!(
                "the fenced resource accepted c{}'s write with token {token} at {}, \
                 overwriting an update it never saw",
                e.client,
                at(history, i)
            );
            violation = Some(Violation::new(NAME, history, summary, &proof));
        }
        if highest.is_none_or(|(_, t)| *token >= t) {
            highest = Some((i, *token));
        }
    }
    let note = format!(
        "fencing prevented {unfenced_lost} lost update{} (the unfenced resource lost {unfenced_lost})",
        if unfenced_lost == 1 { "" } else { "s" }
    );
    if let Some(v) = violation.as_mut() {
        v.explanation = Some(note.clone());
    }
    let mut verdict = Verdict::from_violation(NAME, violation);
    verdict.note = Some(note);
    verdict
}
