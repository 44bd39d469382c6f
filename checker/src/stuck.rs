//! Why a simulated run got stuck, in its own history's events: for each client whose
//! acquire never ended, the acquire, its last requests and their answers, the node it
//! last came to watch, and what became of that node (gone before the watch was set;
//! deleted with no watch event reaching the client; a watch event that came and was not
//! acted on). These are the events a reader needs to see the lost wake-up; the report
//! lists them and the timeline rings them.

use crate::properties::liveness_after_heal::NAME as LIVENESS;
use crate::properties::verdict::{Violation, at};
use crate::timeline::op_name;
use std::collections::BTreeMap;
use zklock_recipe::ZkError;
use zklock_recipe::history::{EventKind, History, ZkOp};

/// Requests of a stuck client shown, its last ones.
const LAST_REQUESTS: usize = 3;

/// One request of a client: its `OpInvoke` and, once it came, its answer.
struct Request<'h> {
    invoke: usize,
    op: ZkOp,
    path: &'h str,
    watch: bool,
    answer: Option<usize>,
}

/// The stuck run's cause as a violation of `liveness_after_heal`, with the proving events
/// above; `None` when no acquire was left waiting (a stuck release or a queue's take).
pub(crate) fn cause(history: &History) -> Option<Violation> {
    // Per client: its acquire in progress (index) and its requests since it began.
    let mut waiting: BTreeMap<u32, (usize, Vec<Request<'_>>)> = BTreeMap::new();
    // Every request's position, by client and op id, to file its answer.
    let mut open: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate() {
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                waiting.insert(e.client, (i, Vec::new()));
            }
            EventKind::Acquired { .. } | EventKind::AcquireFailed { .. } => {
                waiting.remove(&e.client);
            }
            EventKind::OpInvoke {
                op_id,
                op,
                path,
                watch,
            } => {
                if let Some((_, reqs)) = waiting.get_mut(&e.client) {
                    open.insert((e.client, *op_id), reqs.len());
                    reqs.push(Request {
                        invoke: i,
                        op: *op,
                        path,
                        watch: *watch,
                        answer: None,
                    });
                }
            }
            EventKind::OpOk { op_id }
            | EventKind::OpFail { op_id, .. }
            | EventKind::OpUnknown { op_id } => {
                if let (Some(k), Some((_, reqs))) =
                    (open.remove(&(e.client, *op_id)), waiting.get_mut(&e.client))
                    && let Some(r) = reqs.get_mut(k)
                {
                    r.answer = Some(i);
                }
            }
            _ => {}
        }
    }
    if waiting.is_empty() {
        return None;
    }
    let mut proof: Vec<(usize, String)> = Vec::new();
    let mut words = Vec::new();
    for (client, (acquire, reqs)) in &waiting {
        proof.push((*acquire, "an acquire that never ended".into()));
        for r in reqs.iter().rev().take(LAST_REQUESTS) {
            proof.push((r.invoke, "one of its last requests".into()));
            if let Some(a) = r.answer {
                proof.push((a, "its answer".into()));
            }
        }
        let why = match reqs.iter().rev().find(|r| r.watch) {
            None => "it set no watch after its acquire began".to_owned(),
            Some(w) => watched_node_fate(history, *client, w, &mut proof),
        };
        words.push(format!(
            "c{client}'s acquire (invoked at {}) never ended: {why}",
            at(history, *acquire)
        ));
    }
    // One line per event: an answer that is also the cause names both roles.
    let mut roles: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, role) in proof {
        roles.entry(i).or_default().push(role);
    }
    let proof: Vec<(usize, String)> = roles.into_iter().map(|(i, r)| (i, r.join("; "))).collect();
    let proof: Vec<(usize, &str)> = proof.iter().map(|(i, r)| (*i, r.as_str())).collect();
    Some(Violation::new_at(
        LIVENESS,
        history,
        words.join("; "),
        &proof,
        Some(history.events.len()),
    ))
}

/// What became of the node `w` watched, in words, with the events that show it added to
/// `proof`.
fn watched_node_fate(
    history: &History,
    client: u32,
    w: &Request<'_>,
    proof: &mut Vec<(usize, String)>,
) -> String {
    let op = op_name(w.op);
    let Some(answer) = w.answer else {
        return format!(
            "its {op} of {} with a watch, its last, was never answered",
            w.path
        );
    };
    match &history.events[answer].kind {
        EventKind::OpFail {
            error: ZkError::NoNode,
            ..
        } => {
            proof.push((
                answer,
                "the node it came to watch was gone: no watch was set".into(),
            ));
            format!(
                "its {op} of {} with a watch failed with no node at {}, so no watch was \
                 set, and it waited on for a wake-up nothing would send",
                w.path,
                at(history, answer)
            )
        }
        EventKind::OpOk { .. } => {
            // The delete that should have woken it: a delete of that node that succeeded.
            let delete = deletes_of(history, w.path, answer);
            let event = history.events[answer..]
                .iter()
                .position(|e| {
                    e.client == client
                        && matches!(&e.kind, EventKind::WatchEvent { path, .. } if path == w.path)
                })
                .map(|k| answer + k);
            match (delete, event) {
                (Some(d), None) => {
                    proof.push((d, "the delete that should have woken it".into()));
                    format!(
                        "it watched {} from {}; the node was deleted at {}, and no watch \
                         event for it reached the client",
                        w.path,
                        at(history, answer),
                        at(history, d)
                    )
                }
                (_, Some(e)) => {
                    proof.push((e, "the watch event, which it did not act on".into()));
                    format!(
                        "the watch event for {} reached it at {}, and it did not look again",
                        w.path,
                        at(history, e)
                    )
                }
                (None, None) => format!(
                    "it watches {} from {}, and no request deleted that node (a session's \
                     end would remove an ephemeral one, and send the event)",
                    w.path,
                    at(history, answer)
                ),
            }
        }
        _ => format!(
            "its {op} of {} with a watch, its last, failed or its outcome is unknown ({})",
            w.path,
            at(history, answer)
        ),
    }
}

/// The first delete of `path` after event `from` that succeeded: its `OpInvoke`.
fn deletes_of(history: &History, path: &str, from: usize) -> Option<usize> {
    let mut sent: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for (i, e) in history.events.iter().enumerate().skip(from) {
        match &e.kind {
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Delete,
                path: p,
                ..
            } if &**p == path => {
                sent.insert((e.client, *op_id), i);
            }
            EventKind::OpOk { op_id } => {
                if let Some(d) = sent.remove(&(e.client, *op_id)) {
                    return Some(d);
                }
            }
            _ => {}
        }
    }
    None
}
