//! Where the world leaves what an actor awaits: a request's reply, a resource operation's
//! result, the end of a sleep. Each awaited value has a slot, opened when the actor
//! stages its item and freed when the value is taken (or when the value arrives for an
//! actor that stopped waiting). Slots are reused, so waiting costs no allocation and no
//! channel, only the world's lock the actor takes anyway.

use super::request::Reply;
use std::task::{Context, Poll, Waker};

/// A slot's index.
pub(crate) type SlotId = u32;

/// What a resource operation saw: delivered to the actor that asked (the resource's
/// state is `resource`'s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResourceReply {
    pub fenced: u64,
    pub unfenced: u64,
    pub accepted: bool,
}

/// A value the world delivers to an actor.
#[derive(Debug)]
pub(crate) enum Delivered {
    Reply(Reply),
    Resource(ResourceReply),
    /// A sleep ended.
    Woke,
    /// A workload's decision, drawn from the chooser (see `Staged::Choose`).
    Chosen(usize),
    /// The new session of `Staged::Renew`, if one was opened.
    Renewed(Option<zklock_recipe::SessionId>),
}

#[derive(Default)]
struct Slot {
    value: Option<Delivered>,
    waiter: Option<Waker>,
    /// The actor dropped its wait: the value, when it comes, is dropped.
    abandoned: bool,
}

#[derive(Default)]
pub(crate) struct Slots {
    slots: Vec<Slot>,
    free: Vec<SlotId>,
}

impl Slots {
    /// A fresh slot, whose value `waiter` awaits.
    #[inline(always)]
    pub(crate) fn open(&mut self, waiter: &Waker) -> SlotId {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(Slot::default());
                SlotId::try_from(self.slots.len() - 1).expect("fewer than 2^32 waits at once")
            }
        };
        // A slot keeps its last waker: it is mostly reopened by the same actor, whose
        // next request follows the reply it just took.
        let slot = &mut self.slots[id as usize];
        if !slot.waiter.as_ref().is_some_and(|w| w.will_wake(waiter)) {
            slot.waiter = Some(waiter.clone());
        }
        id
    }

    #[inline(always)]
    fn release(&mut self, id: SlotId) {
        let slot = &mut self.slots[id as usize];
        slot.value = None;
        slot.abandoned = false;
        self.free.push(id);
    }

    /// Delivers `value` to the slot's actor and wakes it.
    #[inline(always)]
    pub(crate) fn fill(&mut self, id: SlotId, value: Delivered) {
        let slot = &mut self.slots[id as usize];
        if slot.abandoned {
            self.release(id);
            return;
        }
        debug_assert!(slot.value.is_none(), "slot {id} filled twice");
        slot.value = Some(value);
        if let Some(w) = &slot.waiter {
            w.wake_by_ref();
        }
    }

    /// The value, once delivered (the slot is then freed); else registers `cx`'s waker.
    #[inline(always)]
    pub(crate) fn poll(&mut self, id: SlotId, cx: &mut Context<'_>) -> Poll<Delivered> {
        let slot = &mut self.slots[id as usize];
        if let Some(v) = slot.value.take() {
            self.release(id);
            return Poll::Ready(v);
        }
        if !slot
            .waiter
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            slot.waiter = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The actor stopped waiting (its future was dropped).
    pub(crate) fn abandon(&mut self, id: SlotId) {
        let slot = &mut self.slots[id as usize];
        if slot.value.is_some() {
            self.release(id);
        } else {
            slot.abandoned = true;
            slot.waiter = None;
        }
    }
}
