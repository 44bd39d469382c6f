//! always: `election_leader_owns_node`: every leader's node was created by the leader's
//! own session. A session owns only the ephemeral nodes it created, so a leader whose
//! node some other session made (an earlier session of its own process, whose node the
//! server still held after the client library declared it expired) leads on a node that
//! goes when that other session does, while the leader still believes: no leadership on
//! an expired session's node.
//!
//! A node is made by a session when the session sent a create of its path (for a
//! sequential create, the path's prefix) that did not fail definitely: its reply was
//! success, or lost (the create may have been applied, and guid recovery adopts it only
//! if its owner is the session).

use crate::properties::{Verdict, Violation};
use std::collections::BTreeMap;
use zklock_recipe::SessionId;
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "election_leader_owns_node";

/// The verdict on `history`.
pub fn check(history: &History) -> Verdict {
    // Creates in flight, by op id: the session that sent it and the path.
    let mut sent: BTreeMap<u64, (SessionId, &str, usize)> = BTreeMap::new();
    // Creates that did not fail definitely, per session: the path and its event index.
    let mut made: BTreeMap<SessionId, Vec<(&str, usize)>> = BTreeMap::new();
    let mut leaders = 0u64;
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Create,
                path,
                ..
            } => {
                sent.insert(*op_id, (e.session, path, i));
            }
            EventKind::OpOk { op_id } | EventKind::OpUnknown { op_id } => {
                if let Some((session, path, at)) = sent.remove(op_id) {
                    made.entry(session).or_default().push((path, at));
                }
            }
            EventKind::OpFail { op_id, .. } => {
                sent.remove(op_id);
            }
            EventKind::Acquired { node, .. } => {
                leaders += 1;
                let own = made
                    .get(&e.session)
                    .is_some_and(|paths| paths.iter().any(|(p, _)| node.starts_with(p)));
                if !own {
                    let summary = format!(
                        "c{} leads on {node}, which its session {:#x} never created",
                        e.client, e.session.0
                    );
                    let proof = [(i, "a contender leads on a node of another session")];
                    let v = Violation::new(NAME, history, summary, &proof);
                    return Verdict::from_violation(NAME, Some(v));
                }
            }
            _ => {}
        }
    }
    let mut v = Verdict::from_violation(NAME, None);
    v.note = Some(format!("{leaders} terms, each on its session's own node"));
    v
}
