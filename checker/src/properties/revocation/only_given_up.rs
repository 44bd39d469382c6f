//! always: `revocation_only_given_up`: no revocation releases a lock that its holder did
//! not give up. No client but the holder deletes a held node (a revoker that deletes
//! where it should ask), and no holder gives up (its `RevokeObserved`) without a request
//! on its own node that may have been applied by then (a revoke flag kept from an
//! earlier hold, a request for another node taken as one's own).

use super::{Request, is_node};
use crate::holds::all_holds;
use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "revocation_only_given_up";

/// The verdict on `history`.
pub(crate) fn check(history: &History, requests: &[Request<'_>]) -> Verdict {
    let events = &history.events;
    // Deletes, by op id: the deleting client, the path, the invocation's index.
    let mut deletes: BTreeMap<u64, (u32, &str, usize)> = BTreeMap::new();
    let mut applied_deletes: Vec<(u32, &str, usize, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Delete,
                path,
                ..
            } => {
                deletes.insert(*op_id, (e.client, path, i));
            }
            EventKind::OpOk { op_id } => {
                if let Some((c, p, at)) = deletes.remove(op_id) {
                    applied_deletes.push((c, p, at, i));
                }
            }
            EventKind::OpFail { op_id, .. } | EventKind::OpUnknown { op_id } => {
                deletes.remove(op_id);
            }
            _ => {}
        }
    }
    let mut given_up = 0u64;
    for hold in all_holds(history) {
        let open = |i: usize| hold.start < i && hold.end.is_none_or(|e| i <= e);
        if let Some(&(c, path, sent, ok)) = applied_deletes
            .iter()
            .find(|(c, p, _, ok)| *c != hold.client && open(*ok) && is_node(&hold.node, p))
        {
            let summary = format!(
                "c{c} deleted {path}, held by c{}, which never gave it up",
                hold.client
            );
            let proof = [
                (hold.start, "the holder's grant"),
                (sent, "another client deletes the held node"),
                (ok, "the delete is applied: the hold is gone"),
            ];
            let v = Violation::new(NAME, history, summary, &proof);
            return Verdict::from_violation(NAME, Some(v));
        }
        let until = hold.end.map_or(events.len(), |e| e + 1);
        let observed = (hold.start..until).find(|&i| {
            events[i].client == hold.client && matches!(events[i].kind, EventKind::RevokeObserved)
        });
        let Some(seen) = observed else {
            continue;
        };
        given_up += 1;
        let requested = requests
            .iter()
            .any(|r| is_node(&hold.node, r.node) && r.may_be_applied_by(seen));
        if !requested {
            let summary = format!(
                "c{} gave up {} though nobody asked it to",
                hold.client, hold.node
            );
            let proof = [
                (hold.start, "the holder's grant"),
                (seen, "it gives up, with no request on its node"),
            ];
            let v = Violation::new(NAME, history, summary, &proof);
            return Verdict::from_violation(NAME, Some(v));
        }
    }
    let mut v = Verdict::from_violation(NAME, None);
    v.note = Some(format!("{given_up} holds given up when asked"));
    v
}
