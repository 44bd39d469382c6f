//! Revocation's properties, judged on a run with revokers (`zklock_sim::Scenario::revokers`):
//! clients that ask holders to give up (the founding documents' revocable shared locks,
//! Curator's `Revoker.attemptRevoke`). A revoker records each request
//! (`RevokeRequested`, then the requests its recipe's revoke call sends); a holder that
//! sees one records `RevokeObserved` and releases.
//!
//! | name | kind | holds when |
//! |---|---|---|
//! | `revocation_honored` | always | a holder asked to give up begins its release within `revoke_bound_ms` of the later of the request's acknowledgement and its grant, unless a fault struck it meanwhile |
//! | `revocation_only_given_up` | always | no revocation releases a lock its holder did not give up: no other client deletes a held node, and no holder gives up without a request on its own node |
//!
//! A request is a revoker's `setData` of the node it named in its last `RevokeRequested`;
//! a request on a node already released fails (`NoNode`) and asks nobody.

pub mod honored;
pub mod only_given_up;

use super::Verdict;
use crate::holds::basename;
use zklock_recipe::history::{EventKind, History, ZkOp};

/// Revocation's property names, in the order [`check_revocation`] reports them.
pub const REVOCATION_PROPERTY_NAMES: [&str; 2] = [honored::NAME, only_given_up::NAME];

/// Revocation's verdicts on `history`, a holder's bound being `revoke_bound_ms`; `run_end_us`
/// is when the run ended (holds still open then are judged against it).
pub fn check_revocation(history: &History, revoke_bound_ms: u64, run_end_us: u64) -> Vec<Verdict> {
    let requests = requests(history);
    vec![
        honored::check(history, &requests, revoke_bound_ms, run_end_us),
        only_given_up::check(history, &requests),
    ]
}

/// One revoke request: a revoker's `setData` of the node it asked to give up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request<'h> {
    pub node: &'h str,
    /// Index of the `setData`'s invocation.
    pub sent: usize,
    /// How it ended: its `OpOk` (applied), its `OpFail` (not applied), its `OpUnknown`
    /// (maybe applied), or `None` if the history ends first.
    pub answer: Option<Answer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Applied(usize),
    Failed(usize),
    Unknown(usize),
}

impl Request<'_> {
    /// The index at which the request is known applied.
    pub fn applied_at(&self) -> Option<usize> {
        match self.answer {
            Some(Answer::Applied(i)) => Some(i),
            _ => None,
        }
    }

    /// Whether it may have been applied by event `index`: sent by then, and not known
    /// failed by then.
    pub fn may_be_applied_by(&self, index: usize) -> bool {
        self.sent < index && !matches!(self.answer, Some(Answer::Failed(f)) if f < index)
    }
}

/// Every revoke request of the history, in the order sent.
pub(crate) fn requests(history: &History) -> Vec<Request<'_>> {
    // Each revoker's last named node.
    let mut named: std::collections::BTreeMap<u32, &str> = Default::default();
    // Requests in flight, by op id: their index in `out`.
    let mut open: std::collections::BTreeMap<u64, usize> = Default::default();
    let mut out: Vec<Request<'_>> = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::RevokeRequested { node } => {
                named.insert(e.client, node);
            }
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::SetData,
                path,
                ..
            } if named.get(&e.client).is_some_and(|n| **n == **path) => {
                open.insert(*op_id, out.len());
                out.push(Request {
                    node: named[&e.client],
                    sent: i,
                    answer: None,
                });
            }
            EventKind::OpOk { op_id }
            | EventKind::OpFail { op_id, .. }
            | EventKind::OpUnknown { op_id } => {
                if let Some(at) = open.remove(op_id) {
                    out[at].answer = Some(match e.kind {
                        EventKind::OpOk { .. } => Answer::Applied(i),
                        EventKind::OpFail { .. } => Answer::Failed(i),
                        _ => Answer::Unknown(i),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether a hold's `node` (a full path, or a name) is the node at `path`.
pub(crate) fn is_node(node: &str, path: &str) -> bool {
    if node.contains('/') {
        node == path
    } else {
        basename(path) == node
    }
}

#[cfg(test)]
mod tests;
