//! What every handle on one world holds: the world behind its lock, and the actors that
//! run on it. A [`Sim`](crate::Sim) and each [`SimClient`](crate::SimClient) share it; a
//! module of its own, so that the two handles' modules do not import each other.

use crate::actor::{Actors, current_order};
use crate::world::delivery::{Delivered, SlotId};
use crate::world::{Staged, World};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

pub(crate) struct Shared {
    pub(crate) world: Mutex<World>,
    pub(crate) actors: Arc<Actors>,
}

impl Shared {
    #[inline]
    pub(crate) fn world(&self) -> MutexGuard<'_, World> {
        self.world
            .lock()
            .expect("world lock poisoned: a simulated actor panicked")
    }

    /// Stages an actor's request, control or sleep for the next quiescent point.
    pub(crate) fn stage(&self, s: Staged) {
        let order = current_order().expect(
            "zklock-sim: the simulated ZooKeeper was used outside a simulated actor; run the \
             code inside `Sim::run`, `zklock_sim::run` or a task from `Sim::spawn`",
        );
        self.world().stage(order, s);
    }

    /// Stages an item that an actor then awaits, and awaits it: `make` builds the item
    /// around a fresh slot of the world's (see `world::delivery`), `read` takes the
    /// delivered value apart. The item is staged at the first poll, as an `async fn` would,
    /// and under the same lock as the wait starts. `read` is part of the wait rather than a
    /// `map` around it, so that the value goes straight from the slot to the caller.
    pub(crate) fn awaited<F, R, T>(&self, make: F, read: R) -> Wait<'_, F, R>
    where
        F: FnOnce(SlotId) -> Staged + Unpin,
        R: Fn(Delivered) -> T + Unpin,
    {
        Wait {
            shared: self,
            make: Some(make),
            read,
            slot: 0,
            done: false,
        }
    }

    /// As `stage`, for calls that may come from a `Drop` outside any actor. Never panics:
    /// a poisoned world (an actor panicked with it locked) just drops the item.
    pub(crate) fn stage_from_drop(&self, s: Staged) {
        let Ok(mut world) = self.world.lock() else {
            return;
        };
        match current_order() {
            Some(order) => world.stage(order, s),
            None => world.stage_outside(s),
        }
    }
}

/// An actor's staged item and its wait for the slot; if dropped first, the slot is
/// abandoned.
pub(crate) struct Wait<'a, F, R> {
    shared: &'a Shared,
    /// The item to stage: `None` once staged.
    make: Option<F>,
    read: R,
    slot: SlotId,
    done: bool,
}

impl<F, R, T> Future for Wait<'_, F, R>
where
    F: FnOnce(SlotId) -> Staged + Unpin,
    R: Fn(Delivered) -> T + Unpin,
{
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let mut w = this.shared.world();
        if let Some(make) = this.make.take() {
            let order = current_order().expect(
                "zklock-sim: the simulated ZooKeeper was used outside a simulated actor; run \
                 the code inside `Sim::run`, `zklock_sim::run` or a task from `Sim::spawn`",
            );
            this.slot = w.slots.open(cx.waker());
            w.stage(order, make(this.slot));
            // Nothing is delivered before the world's next step.
            return Poll::Pending;
        }
        match w.slots.poll(this.slot, cx) {
            Poll::Ready(v) => {
                w.took(this.slot);
                drop(w);
                this.done = true;
                Poll::Ready((this.read)(v))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F, R> Drop for Wait<'_, F, R> {
    fn drop(&mut self) {
        // A poisoned world (an actor panicked with it locked) is past caring.
        if self.make.is_none()
            && !self.done
            && let Ok(mut w) = self.shared.world.lock()
        {
            w.slots.abandon(self.slot);
        }
    }
}
