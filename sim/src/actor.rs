//! The simulation's own executor. The world may act only when every simulated actor is
//! blocked, and what actors do must never depend on an executor's whims. So actors (the
//! main future of [`Sim::run`](crate::Sim::run) and those of
//! [`Sim::spawn`](crate::Sim::spawn)) are not madsim tasks: [`Actors`] keeps them, and the
//! run loop polls every woken actor, in id order, until none is woken; that is the
//! quiescent point where the world takes one step. madsim only hosts the run and keeps
//! the virtual clock, so its task order cannot touch an outcome, and an actor's step costs
//! one poll rather than a trip through a general-purpose scheduler.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

pub(crate) type BoxedActor = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Who is woken, spawned or aborted: shared by the run loop, the wakers and `Sim::spawn`.
#[derive(Default)]
pub(crate) struct Actors {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: usize,
    /// Woken actors, in wake order (sorted when taken), each once.
    woken: Vec<usize>,
    /// `queued[id]`: `id` is in `woken`.
    queued: Vec<bool>,
    /// Spawned and not yet taken by the run loop.
    spawned: Vec<(usize, BoxedActor)>,
    /// Aborted: the run loop drops them before the world's next step.
    aborted: Vec<usize>,
}

impl Actors {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Nothing under this lock is left half-done by a panic elsewhere.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh actor id; ids are handed out in creation order from 0.
    pub(crate) fn new_id(&self) -> usize {
        let mut s = self.inner();
        let id = s.next_id;
        s.next_id += 1;
        id
    }

    pub(crate) fn wake(&self, id: usize) {
        let mut s = self.inner();
        if s.queued.len() <= id {
            s.queued.resize(id + 1, false);
        }
        if !s.queued[id] {
            s.queued[id] = true;
            s.woken.push(id);
        }
    }

    /// Registers a spawned actor; it is polled first at the run loop's next round.
    pub(crate) fn spawn(&self, fut: BoxedActor) -> usize {
        let id = self.new_id();
        self.inner().spawned.push((id, fut));
        self.wake(id);
        id
    }

    pub(crate) fn abort(&self, id: usize) {
        self.inner().aborted.push(id);
    }

    /// Whether the run loop has anything to do: an actor woken, spawned or aborted.
    pub(crate) fn pending(&self) -> bool {
        let s = self.inner();
        !(s.woken.is_empty() && s.spawned.is_empty() && s.aborted.is_empty())
    }

    /// Takes what happened since the last round, under one lock: the woken actors into
    /// `batch` (in id order), the newly spawned into `spawned`, the aborted into `aborted`.
    fn take_round(
        &self,
        batch: &mut Vec<usize>,
        spawned: &mut Vec<(usize, BoxedActor)>,
        aborted: &mut Vec<usize>,
    ) {
        batch.clear();
        let mut s = self.inner();
        std::mem::swap(&mut s.woken, batch);
        for &id in batch.iter() {
            s.queued[id] = false;
        }
        if !s.spawned.is_empty() {
            std::mem::swap(&mut s.spawned, spawned);
        }
        if !s.aborted.is_empty() {
            std::mem::swap(&mut s.aborted, aborted);
        }
        drop(s);
        batch.sort_unstable();
    }
}

/// Wakes one actor: marks it for the run loop's next round.
struct ActorWaker {
    id: usize,
    actors: Arc<Actors>,
}

impl Wake for ActorWaker {
    fn wake(self: Arc<Self>) {
        self.actors.wake(self.id)
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.actors.wake(self.id)
    }
}

pub(crate) fn waker(actors: &Arc<Actors>, id: usize) -> Waker {
    Waker::from(Arc::new(ActorWaker {
        id,
        actors: actors.clone(),
    }))
}

thread_local! {
    /// The actor being polled on this thread and its next sequence number.
    static CURRENT: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// The actor being polled on this thread, and a fresh sequence number within it. Requests
/// and history events are ordered by this pair, so their order never depends on which
/// actor happens to be polled first. `None` outside any simulated actor.
pub(crate) fn current_order() -> Option<(usize, usize)> {
    CURRENT.with(|c| {
        let (id, seq) = c.get()?;
        c.set(Some((id, seq + 1)));
        Some((id, seq))
    })
}

/// One actor's identity while it runs: its id, its next sequence number, its waker.
pub(crate) struct Slot {
    id: usize,
    seq: usize,
    waker: Waker,
}

impl Slot {
    pub(crate) fn new(actors: &Arc<Actors>, id: usize) -> Slot {
        Slot {
            id,
            seq: 0,
            waker: waker(actors, id),
        }
    }

    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// Runs `f` as this actor: what it stages carries this actor's order.
    pub(crate) fn enter<R>(&mut self, f: impl FnOnce(&mut Context<'_>) -> R) -> R {
        let prev = CURRENT.with(|c| c.replace(Some((self.id, self.seq))));
        let mut cx = Context::from_waker(&self.waker);
        let out = f(&mut cx);
        let mine = CURRENT.with(|c| c.replace(prev));
        self.seq = mine.map_or(self.seq, |(_, seq)| seq);
        out
    }
}

/// A spawned actor owned by the run loop.
struct Spawned {
    slot: Slot,
    /// `None` only while being dropped.
    fut: Option<BoxedActor>,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // Drops inside the future (a pending acquire, a guard) may stage work: they do so
        // as this actor, in its sequence.
        let fut = self.fut.take();
        self.slot.enter(|_| drop(fut));
    }
}

/// What one round of the run loop found.
pub(crate) enum Round<T> {
    /// The main actor finished.
    Done(T),
    /// Some actors ran; run another round.
    Ran,
    /// Every actor is blocked: the world may act.
    Quiescent,
}

/// The run loop's side of the executor: the actors it owns, by id.
pub(crate) struct Runner {
    actors: Arc<Actors>,
    spawned: Vec<Option<Spawned>>,
    batch: Vec<usize>,
}

impl Runner {
    pub(crate) fn new(actors: Arc<Actors>) -> Runner {
        Runner {
            actors,
            spawned: Vec::new(),
            batch: Vec::new(),
        }
    }

    /// Polls every woken actor once, in id order, the main one (`main`, a [`Slot`] of its
    /// own) included. Newly spawned actors are taken in first, aborted ones dropped.
    pub(crate) fn round<T>(
        &mut self,
        main: &mut Slot,
        mut poll_main: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Round<T> {
        let mut batch = std::mem::take(&mut self.batch);
        let (mut spawned, mut aborted) = (Vec::new(), Vec::new());
        self.actors
            .take_round(&mut batch, &mut spawned, &mut aborted);
        if !spawned.is_empty() {
            self.adopt(spawned);
        }
        // Dropped before anything else, as the actors themselves: their drops may stage
        // work (a dropped acquire's cleanup) that must land before the world's next step.
        for id in aborted {
            if let Some(slot) = self.spawned.get_mut(id) {
                drop(slot.take());
            }
        }
        if batch.is_empty() {
            self.batch = batch;
            // An abort's drop may have woken someone: then this is not quiescence yet.
            return if self.actors.inner().woken.is_empty() {
                Round::Quiescent
            } else {
                Round::Ran
            };
        }
        for &id in &batch {
            if id == main.id {
                if let Poll::Ready(v) = main.enter(&mut poll_main) {
                    self.batch = batch;
                    return Round::Done(v);
                }
                continue;
            }
            let Some(Some(actor)) = self.spawned.get_mut(id) else {
                continue; // Finished or aborted: a late wake-up.
            };
            let fut = actor.fut.as_mut().expect("taken only in drop");
            if actor.slot.enter(|cx| fut.as_mut().poll(cx)).is_ready() {
                // Dropped as itself (see `Spawned`'s drop).
                self.spawned[id] = None;
            }
        }
        self.batch = batch;
        Round::Ran
    }

    fn adopt(&mut self, new: Vec<(usize, BoxedActor)>) {
        for (id, fut) in new {
            if self.spawned.len() <= id {
                self.spawned.resize_with(id + 1, || None);
            }
            self.spawned[id] = Some(Spawned {
                slot: Slot::new(&self.actors, id),
                fut: Some(fut),
            });
        }
    }

    /// Drops every actor still owned, in id order (at the end of a run).
    pub(crate) fn clear(&mut self) {
        let mut s = self.actors.inner();
        let new = std::mem::take(&mut s.spawned);
        s.aborted.clear();
        drop(s);
        self.adopt(new);
        for slot in &mut self.spawned {
            drop(slot.take());
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // Actors hold the `Sim`, which holds `Actors`: drop them here, or they would
        // keep each other alive.
        self.clear();
    }
}

/// A spawned actor's output, for its [`SimTask`](crate::SimTask).
pub(crate) struct JoinState<T> {
    pub(crate) output: Option<T>,
    pub(crate) waiter: Option<Waker>,
    pub(crate) aborted: bool,
}

impl<T> Default for JoinState<T> {
    fn default() -> Self {
        JoinState {
            output: None,
            waiter: None,
            aborted: false,
        }
    }
}

pub(crate) type Join<T> = Arc<Mutex<JoinState<T>>>;

pub(crate) fn lock_join<T>(j: &Join<T>) -> MutexGuard<'_, JoinState<T>> {
    j.lock().unwrap_or_else(|p| p.into_inner())
}
