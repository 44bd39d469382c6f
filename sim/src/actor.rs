//! The simulation's own executor. The world may act only when every simulated actor is
//! blocked, and what actors do must never depend on an executor's whims. So actors (the
//! main future of [`Sim::run`](crate::Sim::run) and those of
//! [`Sim::spawn`](crate::Sim::spawn)) are not madsim tasks: [`Actors`] keeps them, and the
//! run loop polls every woken actor, in id order, until none is woken; that is the
//! quiescent point where the world takes steps, until one wakes an actor. madsim only
//! hosts the run and keeps the virtual clock, so its task order cannot touch an outcome,
//! and an actor's step costs one poll rather than a trip through a general-purpose
//! scheduler. Wakes of the first actors are bits of atomic words, so that waking and
//! taking the woken need no lock.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

pub(crate) type BoxedActor = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Who is woken, spawned or aborted: shared by the run loop, the wakers and `Sim::spawn`.
#[derive(Default)]
pub(crate) struct Actors {
    next_id: AtomicUsize,
    /// Woken actors among the first `LOW` ids, one bit each: a wake is one atomic OR, and
    /// a round takes them in id order without a lock or a sort. Scenarios have at most
    /// 64 workers and a main actor, so every wake of theirs lands here.
    low: [AtomicU64; LOW / 64],
    /// Whether `inner` may hold something, so that most rounds skip its lock.
    busy: AtomicBool,
    inner: Mutex<Inner>,
}

const LOW: usize = 128;

#[derive(Default)]
struct Inner {
    /// Woken actors from `LOW` on, in wake order (sorted when taken), each once.
    woken: Vec<usize>,
    /// `queued[id - LOW]`: `id` is in `woken`.
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

    /// Runs `f` on `inner` and marks it busy.
    fn with_busy<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut s = self.inner();
        self.busy.store(true, Ordering::SeqCst);
        f(&mut s)
    }

    /// A fresh actor id; ids are handed out in creation order from 0.
    pub(crate) fn new_id(&self) -> usize {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }

    #[inline]
    pub(crate) fn wake(&self, id: usize) {
        if id < LOW {
            self.low[id / 64].fetch_or(1 << (id % 64), Ordering::SeqCst);
            return;
        }
        self.wake_high(id);
    }

    /// `wake` past the bit sets: kept out of line, so that the common wake stays a few
    /// instructions.
    #[cold]
    #[inline(never)]
    fn wake_high(&self, id: usize) {
        self.with_busy(|s| {
            let i = id - LOW;
            if s.queued.len() <= i {
                s.queued.resize(i + 1, false);
            }
            if !s.queued[i] {
                s.queued[i] = true;
                s.woken.push(id);
            }
        })
    }

    /// Registers a spawned actor; it is polled first at the run loop's next round.
    pub(crate) fn spawn(&self, fut: BoxedActor) -> usize {
        let id = self.new_id();
        self.with_busy(|s| s.spawned.push((id, fut)));
        self.wake(id);
        id
    }

    pub(crate) fn abort(&self, id: usize) {
        self.with_busy(|s| s.aborted.push(id));
    }

    /// Whether the run loop has anything to do: an actor woken, spawned or aborted.
    pub(crate) fn pending(&self) -> bool {
        self.low.iter().any(|w| w.load(Ordering::SeqCst) != 0) || self.busy.load(Ordering::SeqCst)
    }

    /// Takes the woken actors below `LOW`, as bit sets.
    fn take_low(&self) -> [u64; LOW / 64] {
        std::array::from_fn(|i| self.low[i].swap(0, Ordering::SeqCst))
    }

    /// Takes what `inner` gathered since the last round, under one lock, if anything: the
    /// woken actors from `LOW` on into `high` (in id order), the newly spawned into
    /// `spawned`, the aborted into `aborted`.
    #[inline]
    fn take_inner(
        &self,
        high: &mut Vec<usize>,
        spawned: &mut Vec<(usize, BoxedActor)>,
        aborted: &mut Vec<usize>,
    ) {
        if !self.busy.load(Ordering::SeqCst) {
            return;
        }
        let mut s = self.inner();
        self.busy.store(false, Ordering::SeqCst);
        std::mem::swap(&mut s.woken, high);
        for &id in high.iter() {
            s.queued[id - LOW] = false;
        }
        std::mem::swap(&mut s.spawned, spawned);
        std::mem::swap(&mut s.aborted, aborted);
        drop(s);
        high.sort_unstable();
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
    /// Some actors are woken (or spawned, or aborted); run another round.
    Ran,
    /// After this round every actor is blocked: the world may act.
    Quiescent,
}

/// The run loop's side of the executor: the actors it owns, by id.
pub(crate) struct Runner {
    actors: Arc<Actors>,
    spawned: Vec<Option<Spawned>>,
    /// Scratch lists of `round`, kept to spare allocations.
    high: Vec<usize>,
    adopted: Vec<(usize, BoxedActor)>,
    aborted: Vec<usize>,
}

impl Runner {
    pub(crate) fn new(actors: Arc<Actors>) -> Runner {
        Runner {
            actors,
            spawned: Vec::new(),
            high: Vec::new(),
            adopted: Vec::new(),
            aborted: Vec::new(),
        }
    }

    /// Polls every woken actor once, in id order, the main one (`main`, a [`Slot`] of its
    /// own) included. Newly spawned actors are taken in first, aborted ones dropped.
    pub(crate) fn round<T>(
        &mut self,
        main: &mut Slot,
        mut poll_main: impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Round<T> {
        let low = self.actors.take_low();
        self.high.clear();
        self.actors
            .take_inner(&mut self.high, &mut self.adopted, &mut self.aborted);
        if !self.adopted.is_empty() {
            self.adopt();
        }
        // Dropped before anything else, as the actors themselves: their drops may stage
        // work (a dropped acquire's cleanup) that must land before the world's next step.
        for id in self.aborted.drain(..) {
            if let Some(slot) = self.spawned.get_mut(id) {
                drop(slot.take());
            }
        }
        for (w, &bits) in low.iter().enumerate() {
            for b in Bits(bits) {
                if let Some(v) = self.poll(w * 64 + b, main, &mut poll_main) {
                    return Round::Done(v);
                }
            }
        }
        for i in 0..self.high.len() {
            if let Some(v) = self.poll(self.high[i], main, &mut poll_main) {
                return Round::Done(v);
            }
        }
        // What ran (or was dropped) may have woken or spawned actors; if not, every actor
        // is blocked, and no empty round is needed to tell.
        if self.actors.pending() {
            Round::Ran
        } else {
            Round::Quiescent
        }
    }

    /// Polls actor `id`; `Some` when it was the main one and it finished.
    fn poll<T>(
        &mut self,
        id: usize,
        main: &mut Slot,
        poll_main: &mut impl FnMut(&mut Context<'_>) -> Poll<T>,
    ) -> Option<T> {
        if id == main.id {
            return poll_main_actor(main, poll_main);
        }
        let Some(Some(actor)) = self.spawned.get_mut(id) else {
            return None; // Finished or aborted: a late wake-up.
        };
        let fut = actor.fut.as_mut().expect("taken only in drop");
        if actor.slot.enter(|cx| fut.as_mut().poll(cx)).is_ready() {
            // Dropped as itself (see `Spawned`'s drop).
            self.spawned[id] = None;
        }
        None
    }

    fn adopt(&mut self) {
        for (id, fut) in self.adopted.drain(..) {
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
        self.adopted.append(&mut s.spawned);
        s.aborted.clear();
        drop(s);
        self.adopt();
        for slot in &mut self.spawned {
            drop(slot.take());
        }
    }
}

/// Polls the main actor: `Some` when it finished. Out of line, as the main actor mostly
/// waits for the workers, so that polling them carries a smaller frame.
#[inline(never)]
fn poll_main_actor<T>(
    main: &mut Slot,
    poll_main: &mut impl FnMut(&mut Context<'_>) -> Poll<T>,
) -> Option<T> {
    match main.enter(poll_main) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

/// The set bits of a word, lowest first.
struct Bits(u64);

impl Iterator for Bits {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
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
