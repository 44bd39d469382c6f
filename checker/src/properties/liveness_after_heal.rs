//! eventually: `liveness_after_heal`. Once faults stop (`heal_ms`), every live waiter is
//! served (`Acquired` or `AcquireFailed`) within `liveness_bound_ms`: a wait invoked at
//! `t` must end by `max(t, heal) + bound`. A waiter is excused when it crashed or its
//! session expired or closed. A wait still pending when the run ended past its deadline
//! is a stuck lock. And when every client is `Done`, no lock node may remain: each one
//! left is an orphan (a lost create response shows up here).

use super::index::HistoryIndex;
use super::verdict::at;
use super::{CheckConfig, Verdict, Violation};
use crate::holds::{basename, is_crash};
use crate::timeline::format_ms;
use std::collections::BTreeSet;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, History, ZkOp};

pub const NAME: &str = "liveness_after_heal";

/// An acquire in progress: the index and time of its `AcquireInvoked`.
#[derive(Clone, Copy, Debug)]
struct Wait {
    invoke: usize,
    since_us: u64,
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    check_indexed(&HistoryIndex::new(history), cfg)
}

pub(crate) fn check_indexed(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Verdict {
    let violation = late_or_stuck(index, cfg).or_else(|| orphans(index, cfg));
    Verdict::from_violation(NAME, violation)
}

fn deadline_us(wait: Wait, cfg: &CheckConfig) -> u64 {
    let heal_us = cfg.heal_ms.saturating_mul(1000);
    wait.since_us
        .max(heal_us)
        .saturating_add(cfg.liveness_bound_ms.saturating_mul(1000))
}

fn late_or_stuck(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Option<Violation> {
    let history = index.history;
    // Per client slot: the wait in progress, whether it is excused (crashed, or its
    // session ended), and its last event.
    let mut waits: Vec<Option<Wait>> = index.slots.table();
    let mut dead: Vec<bool> = index.slots.table();
    let mut last_seen: Vec<Option<usize>> = index.slots.table();
    for (i, e) in history.events.iter().enumerate() {
        let c = e.client;
        let s = index.slots.of(c);
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                dead[s] = false;
                waits[s] = Some(Wait {
                    invoke: i,
                    since_us: e.time_us,
                });
            }
            EventKind::Acquired { .. } | EventKind::AcquireFailed { .. } => {
                if let Some(w) = waits[s].take() {
                    let deadline = deadline_us(w, cfg);
                    if e.time_us > deadline {
                        let summary = format!(
                            "c{c} waited from {} and was served only at {}, past its \
                             deadline {} ms (heal {} ms + bound {} ms)",
                            at(history, w.invoke),
                            at(history, i),
                            format_ms(deadline),
                            cfg.heal_ms,
                            cfg.liveness_bound_ms
                        );
                        let proof = [(w.invoke, "waiting since"), (i, "served too late")];
                        return Some(Violation::new(NAME, history, summary, &proof));
                    }
                }
            }
            EventKind::Session {
                state: SessionState::Expired | SessionState::Closed,
            } => {
                dead[s] = true;
            }
            _ if is_crash(e) => {
                dead[s] = true;
            }
            _ => {}
        }
        // Fault events name their target, not an actor: not a sign of life.
        if !matches!(e.kind, EventKind::Fault { .. }) {
            last_seen[s] = Some(i);
        }
    }
    let last_us = history.events.last().map_or(0, |e| e.time_us);
    let end_us = cfg.run_end_us.unwrap_or(0).max(last_us);
    // Invoke indices are distinct, so the earliest is the same in any slot order.
    let (s, w) = waits
        .into_iter()
        .enumerate()
        .filter_map(|(s, w)| Some((s, w?)))
        .filter(|(s, w)| !dead[*s] && end_us > deadline_us(*w, cfg))
        .min_by_key(|(_, w)| w.invoke)?;
    let c = index.slots.id(s);
    let summary = format!(
        "c{c} has waited since {} and was still waiting when the run ended at {} ms, past \
         its deadline {} ms (heal {} ms + bound {} ms): a stuck lock",
        at(history, w.invoke),
        format_ms(end_us),
        format_ms(deadline_us(w, cfg)),
        cfg.heal_ms,
        cfg.liveness_bound_ms
    );
    let mut proof = vec![(w.invoke, "waiting since")];
    if let Some(last) = last_seen[s].filter(|&l| l != w.invoke) {
        proof.push((last, "its last event"));
    }
    Some(Violation::new(NAME, history, summary, &proof))
}

fn orphans(index: &HistoryIndex<'_>, cfg: &CheckConfig) -> Option<Violation> {
    if cfg.final_lock_children.is_empty() {
        return None;
    }
    let history = index.history;
    // Per client slot that ever acquired or finished: the index of its `Done`, if any.
    let mut done: Vec<Option<Option<usize>>> = index.slots.table();
    for (i, e) in history.events.iter().enumerate() {
        let s = index.slots.of(e.client);
        match e.kind {
            EventKind::AcquireInvoked { .. } => {
                done[s].get_or_insert(None);
            }
            EventKind::Done => {
                done[s] = Some(Some(i));
            }
            _ => {}
        }
    }
    // Some client took part, and every one of them is done.
    let done: Vec<usize> = done.into_iter().flatten().collect::<Option<_>>()?;
    if done.is_empty() {
        return None;
    }
    let mut names = cfg.final_lock_children.clone();
    names.sort();
    let summary = format!(
        "every client is done, yet {} lock node{} remain{} under {}: {}",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.len() == 1 { "s" } else { "" },
        cfg.lock_path,
        names.join(", ")
    );
    let roles: Vec<(usize, String)> = names
        .iter()
        .filter_map(|n| creator_of(history, n).map(|i| (i, format!("may have created orphan {n}"))))
        .collect();
    let mut proof: Vec<(usize, &str)> = roles.iter().map(|(i, r)| (*i, r.as_str())).collect();
    let last_done = done.iter().max().copied();
    if let Some(d) = last_done {
        proof.push((d, "the last client finishes"));
    }
    Some(Violation::new(NAME, history, summary, &proof))
}

/// The create request that most likely made node `name`: the last create whose path
/// prefix the name extends, preferring one whose outcome the client never learned.
fn creator_of(history: &History, name: &str) -> Option<usize> {
    let mut outcome_known: BTreeSet<(u32, u64)> = BTreeSet::new();
    for e in &history.events {
        match &e.kind {
            EventKind::OpOk { op_id } => {
                outcome_known.insert((e.client, *op_id));
            }
            EventKind::OpFail { op_id, error } if !error.is_connection_loss() => {
                outcome_known.insert((e.client, *op_id));
            }
            _ => {}
        }
    }
    let candidates: Vec<(usize, bool)> = history
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::OpInvoke {
                op_id,
                op: ZkOp::Create,
                path,
            } if !basename(path).is_empty() && name.starts_with(basename(path)) => {
                Some((i, outcome_known.contains(&(e.client, *op_id))))
            }
            _ => None,
        })
        .collect();
    candidates
        .iter()
        .rev()
        .find(|(_, known)| !known)
        .or(candidates.last())
        .map(|(i, _)| *i)
}
