//! eventually: `liveness_after_heal`. Once faults stop (`heal_ms`), every live waiter is
//! served (`Acquired` or `AcquireFailed`) within `liveness_bound_ms`: a wait invoked at
//! `t` must end by `max(t, heal) + bound`. A waiter is excused when it crashed or its
//! session expired or closed. A wait still pending when the run ended past its deadline
//! is a stuck lock. A release (`ReleaseInvoked`) still unanswered, neither `Released` nor
//! `ReleaseFailed`, when the run ended past the same deadline is a stuck library (only a
//! crash excuses it: a release must return, whatever became of the session). And when
//! every client is `Done`, no lock node may remain: each one left is an orphan (a lost
//! create response shows up here).

use super::beliefs::Beliefs;
use super::slots::Slots;
use super::verdict::at;
use super::walk::{self, Judge, Step};
use super::{CheckConfig, Verdict, Violation};
use crate::holds::basename;
use crate::timeline::format_ms;
use std::collections::BTreeSet;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History, LockRole, ZkOp};

pub const NAME: &str = "liveness_after_heal";

/// An acquire in progress: the index and time of its `AcquireInvoked`.
#[derive(Clone, Copy, Debug)]
struct Wait {
    invoke: usize,
    since_us: u64,
}

/// One client, as this property follows it.
#[derive(Clone, Copy, Debug, Default)]
struct Client {
    /// The wait in progress.
    wait: Option<Wait>,
    /// The release in progress (its `ReleaseInvoked`), until it is answered or the client
    /// crashes.
    release: Option<Wait>,
    /// Excused: crashed, or its session ended.
    dead: bool,
    /// `None` until it invokes an acquire or finishes; then the index of its `Done`, if
    /// any (for orphans).
    done: Option<Option<usize>>,
}

pub fn check(history: &History, cfg: &CheckConfig) -> Verdict {
    walk::alone::<LivenessAfterHeal<'_>>(history, cfg, &Slots::new(history))
}

/// The property's state.
#[derive(Debug)]
pub(crate) struct LivenessAfterHeal<'h> {
    history: &'h History,
    cfg: &'h CheckConfig,
    clients: Vec<Client>,
    /// The first wait served past its deadline: it ends the judging.
    late: Option<Violation>,
}

impl<'h> Judge<'h> for LivenessAfterHeal<'h> {
    type Output = Verdict;

    fn new(history: &'h History, cfg: &'h CheckConfig, slots: &'h Slots) -> Self {
        LivenessAfterHeal {
            history,
            cfg,
            clients: slots.table(),
            late: None,
        }
    }

    #[inline]
    fn acquire_invoked(&mut self, step: Step<'h>, _: LockRole, _: &Beliefs<'h>) {
        let st = &mut self.clients[step.slot];
        st.dead = false;
        st.wait = Some(Wait {
            invoke: step.index,
            since_us: step.event.time_us,
        });
        st.done.get_or_insert(None);
    }

    #[inline]
    fn acquired(&mut self, step: Step<'h>, _: i64, _: &'h str, _: &Beliefs<'h>) {
        self.served(step);
    }

    #[inline]
    fn acquire_failed(&mut self, step: Step<'h>) {
        self.served(step);
    }

    #[inline]
    fn release_invoked(&mut self, step: Step<'h>, _: &Beliefs<'h>) {
        self.clients[step.slot].release = Some(Wait {
            invoke: step.index,
            since_us: step.event.time_us,
        });
    }

    #[inline]
    fn released(&mut self, step: Step<'h>) {
        self.clients[step.slot].release = None;
    }

    #[inline]
    fn release_failed(&mut self, step: Step<'h>) {
        self.clients[step.slot].release = None;
    }

    #[inline]
    fn session(&mut self, step: Step<'h>, state: SessionState) {
        if matches!(state, SessionState::Expired | SessionState::Closed) {
            self.clients[step.slot].dead = true;
        }
    }

    #[inline]
    fn fault(&mut self, step: Step<'h>, fault: FaultKind) {
        if fault == FaultKind::Crash {
            let st = &mut self.clients[step.slot];
            st.dead = true;
            st.release = None;
        }
    }

    #[inline]
    fn done(&mut self, step: Step<'h>) {
        self.clients[step.slot].done = Some(Some(step.index));
    }

    fn finish(self) -> Verdict {
        let violation = self
            .late
            .or_else(|| stuck(self.history, self.cfg, &self.clients))
            .or_else(|| stuck_release(self.history, self.cfg, &self.clients))
            .or_else(|| orphans(self.history, self.cfg, &self.clients));
        Verdict::from_violation(NAME, violation)
    }
}

impl LivenessAfterHeal<'_> {
    /// An acquire ended (`Acquired` or `AcquireFailed`): was it in time?
    #[inline]
    fn served(&mut self, step: Step<'_>) {
        if let Some(w) = self.clients[step.slot].wait.take()
            && self.late.is_none()
            && step.event.time_us > deadline_us(w, self.cfg)
        {
            self.late = Some(late(self.history, self.cfg, w, step));
        }
    }
}

fn deadline_us(wait: Wait, cfg: &CheckConfig) -> u64 {
    let heal_us = cfg.heal_ms.saturating_mul(1000);
    wait.since_us
        .max(heal_us)
        .saturating_add(cfg.liveness_bound_ms.saturating_mul(1000))
}

/// The wait `w` served at `step`, past its deadline.
fn late(history: &History, cfg: &CheckConfig, w: Wait, step: Step<'_>) -> Violation {
    let (c, i) = (step.event.client, step.index);
    let summary = format!(
        "c{c} waited from {} and was served only at {}, past its \
         deadline {} ms (heal {} ms + bound {} ms)",
        at(history, w.invoke),
        at(history, i),
        format_ms(deadline_us(w, cfg)),
        cfg.heal_ms,
        cfg.liveness_bound_ms
    );
    let proof = [(w.invoke, "waiting since"), (i, "served too late")];
    Violation::new(NAME, history, summary, &proof)
}

/// The earliest wait still pending, not excused, when the run ended past its deadline.
fn stuck(history: &History, cfg: &CheckConfig, clients: &[Client]) -> Option<Violation> {
    let last_us = history.events.last().map_or(0, |e| e.time_us);
    let end_us = cfg.run_end_us.unwrap_or(0).max(last_us);
    // Invoke indices are distinct, so the earliest is the same in any slot order.
    let w = clients
        .iter()
        .filter(|st| !st.dead)
        .filter_map(|st| st.wait)
        .filter(|w| end_us > deadline_us(*w, cfg))
        .min_by_key(|w| w.invoke)?;
    let c = history.events[w.invoke].client;
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
    // Fault events name their target, not an actor: not a sign of life.
    let last_seen = history
        .events
        .iter()
        .rposition(|e| e.client == c && !matches!(e.kind, EventKind::Fault { .. }));
    if let Some(last) = last_seen.filter(|&l| l != w.invoke) {
        proof.push((last, "its last event"));
    }
    Some(Violation::new(NAME, history, summary, &proof))
}

/// The earliest release still unanswered when the run ended past its deadline: the lock's
/// library never returned from it.
fn stuck_release(history: &History, cfg: &CheckConfig, clients: &[Client]) -> Option<Violation> {
    let last_us = history.events.last().map_or(0, |e| e.time_us);
    let end_us = cfg.run_end_us.unwrap_or(0).max(last_us);
    let r = clients
        .iter()
        .filter_map(|st| st.release)
        .filter(|r| end_us > deadline_us(*r, cfg))
        .min_by_key(|r| r.invoke)?;
    let c = history.events[r.invoke].client;
    let summary = format!(
        "c{c} invoked a release at {} and had no answer when the run ended at {} ms, past \
         its deadline {} ms (heal {} ms + bound {} ms): a stuck release",
        at(history, r.invoke),
        format_ms(end_us),
        format_ms(deadline_us(r, cfg)),
        cfg.heal_ms,
        cfg.liveness_bound_ms
    );
    let mut proof = vec![(r.invoke, "release invoked, never answered")];
    let last_seen = history
        .events
        .iter()
        .rposition(|e| e.client == c && !matches!(e.kind, EventKind::Fault { .. }));
    if let Some(last) = last_seen.filter(|&l| l != r.invoke) {
        proof.push((last, "its last event"));
    }
    Some(Violation::new(NAME, history, summary, &proof))
}

fn orphans(history: &History, cfg: &CheckConfig, clients: &[Client]) -> Option<Violation> {
    let touched: Vec<String> = cfg
        .touched_children
        .iter()
        .flat_map(|(dir, names)| names.iter().map(move |n| format!("{dir}/{n}")))
        .collect();
    if cfg.final_lock_children.is_empty() && touched.is_empty() {
        return None;
    }
    // Some client took part, and every one of them is done.
    let done: Vec<usize> = clients
        .iter()
        .filter_map(|st| st.done)
        .collect::<Option<_>>()?;
    if done.is_empty() {
        return None;
    }
    let mut names = cfg.final_lock_children.clone();
    names.sort();
    let mut summary = match names.is_empty() {
        true => "every client is done".to_owned(),
        false => format!(
            "every client is done, yet {} lock node{} remain{} under {}: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            if names.len() == 1 { "s" } else { "" },
            cfg.lock_path,
            names.join(", ")
        ),
    };
    if !touched.is_empty() {
        summary.push_str(&format!(
            "{} {} ephemeral node{} remain{} in other directories the library created \
             nodes in: {}",
            if names.is_empty() { ", yet" } else { "; and" },
            touched.len(),
            if touched.len() == 1 { "" } else { "s" },
            if touched.len() == 1 { "s" } else { "" },
            touched.join(", ")
        ));
    }
    // The creator of a node elsewhere is looked for by its name, as of a lock node.
    names.extend(
        cfg.touched_children
            .iter()
            .flat_map(|(_, names)| names.iter().cloned()),
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
                ..
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
