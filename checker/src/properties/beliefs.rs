//! Belief as the properties read it: [`crate::holds`] with borrowed nodes and per-slot
//! state, so that following it allocates nothing per event.

use super::slots::{Slots, Step};
use crate::holds::{is_crash, is_writer};
use zklock_recipe::SessionId;
use zklock_recipe::history::{Event, EventKind, History, LockRole};

/// [`crate::holds::Hold`] while it is believed, its node borrowed from the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HoldRef<'h> {
    pub client: u32,
    pub session: SessionId,
    pub role: LockRole,
    pub token: i64,
    pub node: &'h str,
    /// Index of the `Acquired` event.
    pub start: usize,
}

impl HoldRef<'_> {
    pub(crate) fn is_writer(&self) -> bool {
        is_writer(self.role)
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

/// One client's belief.
#[derive(Clone, Copy, Debug, Default)]
struct Client<'h> {
    /// The role of its acquire in progress (a crash forgets it): its next hold's role.
    pending_role: Option<LockRole>,
    /// The role of its latest acquire, crash or not.
    latest_role: Option<LockRole>,
    open: Option<HoldRef<'h>>,
}

/// [`crate::holds::BeliefTracker`] over slots.
#[derive(Clone, Debug)]
pub(crate) struct Beliefs<'h> {
    clients: Vec<Client<'h>>,
    /// Open holds that exclude everyone, and open read holds: how many of each.
    open_writers: usize,
    open_readers: usize,
}

impl<'h> Beliefs<'h> {
    pub(crate) fn new(slots: &Slots) -> Beliefs<'h> {
        Beliefs {
            clients: slots.table(),
            open_writers: 0,
            open_readers: 0,
        }
    }

    /// An `AcquireInvoked` by the client in `slot`.
    #[inline]
    pub(crate) fn acquire_invoked(&mut self, slot: usize, role: LockRole) {
        let c = &mut self.clients[slot];
        c.pending_role = Some(role);
        c.latest_role = Some(role);
    }

    /// An `Acquired`: a new hold, which replaces the client's open one (ending it).
    #[inline]
    pub(crate) fn acquired(&mut self, step: Step<'h>, token: i64, node: &'h str) {
        let hold = self.opening(step, token, node);
        self.replace(step.slot, Some(hold));
    }

    /// A `ReleaseInvoked` or `Lost`: the client in `slot` stops believing.
    #[inline]
    pub(crate) fn stop(&mut self, slot: usize) {
        self.replace(slot, None);
    }

    /// A crash of the client in `slot`: it stops believing and forgets its acquire.
    pub(crate) fn crash(&mut self, slot: usize) {
        self.clients[slot].pending_role = None;
        self.replace(slot, None);
    }

    /// The role of the hold an `Acquired` of the client in `slot` would open: that of its
    /// acquire in progress, exclusive if none.
    #[inline]
    pub(crate) fn opening_role(&self, slot: usize) -> LockRole {
        self.clients[slot]
            .pending_role
            .unwrap_or(LockRole::Exclusive)
    }

    /// The hold an `Acquired { token, node }` at `step` opens.
    pub(crate) fn opening(&self, step: Step<'h>, token: i64, node: &'h str) -> HoldRef<'h> {
        HoldRef {
            client: step.event.client,
            session: step.event.session,
            role: self.opening_role(step.slot),
            token,
            node,
            start: step.index,
        }
    }

    /// Replaces the slot's open hold, keeping the counts.
    #[inline]
    fn replace(&mut self, slot: usize, new: Option<HoldRef<'h>>) {
        if let Some(h) = &new {
            *self.count_mut(h.is_writer()) += 1;
        }
        if let Some(old) = std::mem::replace(&mut self.clients[slot].open, new) {
            *self.count_mut(old.is_writer()) -= 1;
        }
    }

    fn count_mut(&mut self, writer: bool) -> &mut usize {
        if writer {
            &mut self.open_writers
        } else {
            &mut self.open_readers
        }
    }

    /// The open hold of the client in `slot`, if any.
    pub(crate) fn hold_of(&self, slot: usize) -> Option<&HoldRef<'h>> {
        self.clients[slot].open.as_ref()
    }

    /// The role of the latest acquire of the client in `slot`, crashed since or not.
    pub(crate) fn role_of(&self, slot: usize) -> Option<LockRole> {
        self.clients[slot].latest_role
    }

    /// Whether a client other than the one in `slot` holds now.
    pub(crate) fn held_by_other_than(&self, slot: usize) -> bool {
        self.open_writers + self.open_readers > usize::from(self.clients[slot].open.is_some())
    }

    /// Whether a client other than the one in `slot` holds now with a writer's hold
    /// (`writer`) or a reader's.
    pub(crate) fn held_by_other_than_as(&self, slot: usize, writer: bool) -> bool {
        let own = self.clients[slot]
            .open
            .is_some_and(|h| h.is_writer() == writer);
        let open = if writer {
            self.open_writers
        } else {
            self.open_readers
        };
        open > usize::from(own)
    }

    /// The holds open now, with their slots.
    pub(crate) fn open(&self) -> impl Iterator<Item = (usize, &HoldRef<'h>)> {
        self.clients
            .iter()
            .enumerate()
            .filter_map(|(s, c)| Some((s, c.open.as_ref()?)))
    }
}

/// Whether `event` ends its client's belief (if it has one): a new `Acquired` replaces the
/// hold, `ReleaseInvoked`, `Lost` and a crash end it.
pub(crate) fn ends_belief(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::Acquired { .. } | EventKind::ReleaseInvoked | EventKind::Lost { .. }
    ) || is_crash(event)
}

/// The index of the event after `start` that ends the belief `client` holds from `start`.
pub(crate) fn belief_end(history: &History, client: u32, start: usize) -> Option<usize> {
    history
        .events
        .iter()
        .enumerate()
        .skip(start + 1)
        .find(|(_, e)| e.client == client && ends_belief(e))
        .map(|(i, _)| i)
}
