//! Belief as the properties read it: [`crate::holds`] with borrowed nodes and per-slot
//! state, so that following it allocates nothing per event.

use super::slots::Slots;
use crate::holds::{is_crash, is_writer};
use zklock_recipe::SessionId;
use zklock_recipe::history::{Event, EventKind, History, LockRole};

/// [`crate::holds::Hold`], its node borrowed from the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HoldRef<'h> {
    pub client: u32,
    pub session: SessionId,
    pub role: LockRole,
    pub token: i64,
    pub node: &'h str,
    pub start: usize,
    pub end: Option<usize>,
}

impl HoldRef<'_> {
    pub(crate) fn is_writer(&self) -> bool {
        is_writer(self.role)
    }

    /// Whether the hold was still believed at event `index` (after it was applied).
    pub(crate) fn open_at(&self, index: usize) -> bool {
        self.start <= index && self.end.is_none_or(|e| e > index)
    }

    /// `cN`, `wN` or `rN`, as [`crate::holds::Hold::label`].
    pub(crate) fn label(&self) -> String {
        let prefix = match self.role {
            LockRole::Exclusive => 'c',
            LockRole::Write => 'w',
            LockRole::Read => 'r',
        };
        format!("{prefix}{}", self.client)
    }
}

/// [`crate::holds::BeliefTracker`] over slots.
#[derive(Clone, Debug)]
pub(crate) struct Beliefs<'h> {
    pending_role: Vec<Option<LockRole>>,
    open: Vec<Option<HoldRef<'h>>>,
    open_count: usize,
}

impl<'h> Beliefs<'h> {
    pub(crate) fn new(slots: &Slots) -> Beliefs<'h> {
        Beliefs {
            pending_role: slots.table(),
            open: slots.table(),
            open_count: 0,
        }
    }

    /// Applies event `index` of client slot `slot`; returns the hold it ended, if any.
    pub(crate) fn observe(
        &mut self,
        index: usize,
        event: &'h Event,
        slot: usize,
    ) -> Option<HoldRef<'h>> {
        match &event.kind {
            EventKind::AcquireInvoked { role, .. } => {
                self.pending_role[slot] = Some(*role);
                None
            }
            EventKind::Acquired { token, node } => {
                let hold = HoldRef {
                    client: event.client,
                    session: event.session,
                    role: self.pending_role[slot].unwrap_or(LockRole::Exclusive),
                    token: *token,
                    node,
                    start: index,
                    end: None,
                };
                self.take(slot, index, Some(hold))
            }
            EventKind::ReleaseInvoked | EventKind::Lost { .. } => self.take(slot, index, None),
            _ if is_crash(event) => {
                self.pending_role[slot] = None;
                self.take(slot, index, None)
            }
            _ => None,
        }
    }

    /// Replaces the slot's open hold; the old one, if any, ends at `index`.
    fn take(&mut self, slot: usize, index: usize, new: Option<HoldRef<'h>>) -> Option<HoldRef<'h>> {
        self.open_count += usize::from(new.is_some());
        let old = std::mem::replace(&mut self.open[slot], new)?;
        self.open_count -= 1;
        Some(HoldRef {
            end: Some(index),
            ..old
        })
    }

    /// The open hold of the client in `slot`, if any.
    pub(crate) fn hold_of(&self, slot: usize) -> Option<&HoldRef<'h>> {
        self.open[slot].as_ref()
    }

    /// Whether a client other than the one in `slot` holds now.
    pub(crate) fn held_by_other_than(&self, slot: usize) -> bool {
        self.open_count > usize::from(self.open[slot].is_some())
    }

    /// The holds still open, in slot (client) order.
    fn open(&self) -> impl Iterator<Item = HoldRef<'h>> + '_ {
        self.open.iter().flatten().copied()
    }
}

/// Every hold of the history, ordered by start (as [`crate::holds::all_holds`]).
pub(crate) fn all_holds<'h>(history: &'h History, slots: &Slots) -> Vec<HoldRef<'h>> {
    let mut beliefs = Beliefs::new(slots);
    let mut done = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        done.extend(beliefs.observe(i, e, slots.of(e.client)));
    }
    done.extend(beliefs.open());
    done.sort_by_key(|h| h.start);
    done
}
