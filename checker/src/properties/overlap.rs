//! Overlapping holds, shared by the two belief properties.

use super::CheckConfig;
use super::beliefs::{Beliefs, HoldRef, belief_end};
use super::verdict::{Violation, at};
use super::walk::Step;
use crate::holds::is_writer;
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Which overlapping holds a property forbids.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conflict {
    /// Two writers' (exclusive or write holds).
    Writers,
    /// A reader's and a writer's.
    ReaderAndWriter,
}

impl Conflict {
    /// Whether an earlier hold conflicts with a later one, by whether each is a writer's.
    fn between(self, earlier_writer: bool, later_writer: bool) -> bool {
        match self {
            Conflict::Writers => earlier_writer && later_writer,
            Conflict::ReaderAndWriter => earlier_writer != later_writer,
        }
    }
}

/// Looks for the first pair of overlapping holds of different clients that `conflict`
/// accepts: `(earlier, later)`, where the later one's `Acquired` came while the earlier
/// was still believed. History order is time order, so overlap is judged by event index:
/// at each `Acquired`, the candidates are the holds open just before it.
#[derive(Debug)]
pub(crate) struct Overlaps<'h> {
    property: &'static str,
    /// What the two holders did, for the summary.
    what: &'static str,
    history: &'h History,
    cfg: &'h CheckConfig,
    conflict: Conflict,
    found: Option<(HoldRef<'h>, HoldRef<'h>)>,
}

impl<'h> Overlaps<'h> {
    pub(crate) fn new(
        property: &'static str,
        what: &'static str,
        history: &'h History,
        cfg: &'h CheckConfig,
        conflict: Conflict,
    ) -> Overlaps<'h> {
        Overlaps {
            property,
            what,
            history,
            cfg,
            conflict,
            found: None,
        }
    }

    /// An `Acquired`: does the hold it opens overlap a conflicting one?
    #[inline]
    pub(crate) fn acquired(
        &mut self,
        step: Step<'h>,
        token: i64,
        node: &'h str,
        beliefs: &Beliefs<'h>,
    ) {
        if self.found.is_some() {
            return;
        }
        // Most grants find no conflicting holder at all: counted, not searched.
        let writer = is_writer(beliefs.opening_role(step.slot));
        let possible = [true, false].into_iter().any(|w| {
            self.conflict.between(w, writer) && beliefs.held_by_other_than_as(step.slot, w)
        });
        if possible {
            self.grant(step, token, node, beliefs);
        }
    }

    fn grant(&mut self, step: Step<'h>, token: i64, node: &'h str, beliefs: &Beliefs<'h>) {
        let later = beliefs.opening(step, token, node);
        let writer = later.is_writer();
        let conflict = self.conflict;
        // The earliest-started conflicting hold is the one reported.
        self.found = beliefs
            .open()
            .filter(|(s, a)| *s != step.slot && conflict.between(a.is_writer(), writer))
            .map(|(_, a)| *a)
            .min_by_key(|a| a.start)
            .map(|earlier| (earlier, later));
    }

    /// The violation, if a conflicting overlap was found; under pauses one involving a
    /// paused client is the known, unavoidable class.
    pub(crate) fn finish(self) -> Option<Violation> {
        let (a, b) = self.found?;
        Some(report(
            self.property,
            self.what,
            self.history,
            self.cfg,
            &a,
            &b,
        ))
    }
}

fn report(
    property: &'static str,
    what: &str,
    history: &History,
    cfg: &CheckConfig,
    a: &HoldRef<'_>,
    b: &HoldRef<'_>,
) -> Violation {
    let (ca, cb) = (a.label(), b.label());
    let summary = format!(
        "{ca} (session {}, token {}) and {cb} (session {}, token {}) {what} at {}",
        a.session,
        a.token,
        b.session,
        b.token,
        at(history, b.start)
    );
    let first = format!("{ca} acquires");
    let second = format!("{cb} acquires while {ca} still believes it holds");
    let mut proof: Vec<(usize, String)> = vec![(a.start, first), (b.start, second)];
    // Why the first holder kept believing: its session ended under it.
    if let Some(i) = (a.start..b.start).find(|&i| {
        let e = &history.events[i];
        e.client == a.client
            && matches!(
                e.kind,
                EventKind::Session {
                    state: SessionState::Expired | SessionState::Closed
                }
            )
    }) {
        proof.push((i, format!("{ca}'s session ended, yet it kept believing")));
    }
    if let Some(end) = belief_end(history, a.client, a.start) {
        proof.push((end, format!("{ca} stops believing")));
    }
    let refs: Vec<(usize, &str)> = proof.iter().map(|(i, r)| (*i, r.as_str())).collect();
    let mut v = Violation::new_at(property, history, summary, &refs, Some(b.start));
    let paused = history.events[..b.start].iter().any(|e| {
        matches!(
            e.kind,
            EventKind::Fault {
                fault: FaultKind::Pause { .. }
            }
        ) && (e.client == a.client || e.client == b.client)
    });
    if cfg.pauses_on && paused {
        v.known_unavoidable = true;
        v.explanation = Some(
            "process pauses were on and one of these clients was paused: a paused holder \
             cannot notice its session expiring, so no lock recipe can keep belief-based \
             exclusion (Kleppmann, \"How to do distributed locking\", 2016). This run is \
             judged by fenced_resource instead."
                .into(),
        );
    } else if cfg.pauses_on {
        v.explanation = Some(
            "process pauses were on, but neither client was paused before the overlap: \
             this is not the unavoidable class."
                .into(),
        );
    }
    v
}
