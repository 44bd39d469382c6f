//! Quiescence tracking. The world may act only when every simulated actor is blocked, so
//! that madsim's task order cannot change an outcome. Each actor's future is wrapped in a
//! [`Tracked`] future whose waker records when it is scheduled; the driver waits until no
//! actor is scheduled or running.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const RUNNING_WOKEN: u8 = 3;
const DONE: u8 = 4;

/// Counts actors that are scheduled or running, and wakes the driver when that reaches 0.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    active: AtomicUsize,
    driver: Mutex<Option<Waker>>,
    next_actor: AtomicUsize,
}

impl Tracker {
    fn dec(&self) {
        if self.active.fetch_sub(1, Ordering::SeqCst) == 1
            && let Some(w) = self.driver.lock().expect("tracker lock").take()
        {
            w.wake();
        }
    }

    /// Resolves when no actor is scheduled or running.
    pub(crate) fn quiescent(&self) -> Quiescent<'_> {
        Quiescent { tracker: self }
    }
}

pub(crate) struct Quiescent<'a> {
    tracker: &'a Tracker,
}

impl Future for Quiescent<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.tracker.active.load(Ordering::SeqCst) == 0 {
            return Poll::Ready(());
        }
        *self.tracker.driver.lock().expect("tracker lock") = Some(cx.waker().clone());
        // Re-check: an actor may have gone idle between the load and the store.
        if self.tracker.active.load(Ordering::SeqCst) == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

pub(crate) struct ActorWaker {
    state: AtomicU8,
    tracker: Arc<Tracker>,
    inner: Mutex<Option<Waker>>,
}

impl ActorWaker {
    /// Counts an idle actor as active until madsim drops it after an abort: its drop may
    /// stage work (a dropped acquire's cleanup), which must land before the next
    /// quiescent point rather than whenever madsim gets to it.
    pub(crate) fn hold_until_dropped(&self) {
        if self
            .state
            .compare_exchange(IDLE, SCHEDULED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.tracker.active.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Wake for ActorWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &Arc<Self>) {
        match self.state.load(Ordering::SeqCst) {
            IDLE => {
                self.state.store(SCHEDULED, Ordering::SeqCst);
                self.tracker.active.fetch_add(1, Ordering::SeqCst);
            }
            RUNNING => self.state.store(RUNNING_WOKEN, Ordering::SeqCst),
            _ => {}
        }
        if let Some(w) = self.inner.lock().expect("actor waker lock").as_ref() {
            w.wake_by_ref();
        }
    }
}

thread_local! {
    /// The actor being polled on this thread and its next sequence number.
    static CURRENT: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// The actor being polled on this thread, and a fresh sequence number within it. Requests
/// and history events are ordered by this pair, so their order never depends on madsim's
/// choice of which task runs first. `None` outside any simulated actor.
pub(crate) fn current_order() -> Option<(usize, usize)> {
    CURRENT.with(|c| {
        let (id, seq) = c.get()?;
        c.set(Some((id, seq + 1)));
        Some((id, seq))
    })
}

/// An actor's future, tracked for quiescence.
pub(crate) struct Tracked<F> {
    /// `None` only while being dropped.
    fut: Option<Pin<Box<F>>>,
    id: usize,
    seq: usize,
    waker: Arc<ActorWaker>,
    /// `waker` as a `Waker`, built once rather than at every poll.
    own: Waker,
}

impl<F: Future> Tracked<F> {
    pub(crate) fn new(tracker: &Arc<Tracker>, fut: F) -> Self {
        tracker.active.fetch_add(1, Ordering::SeqCst);
        let id = tracker.next_actor.fetch_add(1, Ordering::SeqCst);
        let waker = Arc::new(ActorWaker {
            state: AtomicU8::new(SCHEDULED),
            tracker: tracker.clone(),
            inner: Mutex::new(None),
        });
        Tracked {
            fut: Some(Box::pin(fut)),
            id,
            seq: 0,
            own: Waker::from(waker.clone()),
            waker,
        }
    }
}

impl<F> Tracked<F> {
    pub(crate) fn waker(&self) -> Arc<ActorWaker> {
        self.waker.clone()
    }
}

impl<F> Drop for Tracked<F> {
    fn drop(&mut self) {
        // Drops inside the future (a pending acquire, a guard) may stage work: they do so
        // as this actor, in its sequence, wherever madsim happens to drop it.
        let prev = CURRENT.with(|c| c.replace(Some((self.id, self.seq))));
        drop(self.fut.take());
        CURRENT.with(|c| c.set(prev));
        // A dropped actor (aborted, or its owner gone) no longer counts as active.
        let st = self.waker.state.swap(DONE, Ordering::SeqCst);
        if st != IDLE && st != DONE {
            self.waker.tracker.dec();
        }
    }
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match this.waker.state.swap(RUNNING, Ordering::SeqCst) {
            // Polled without our waker firing (a spurious poll): count it as active now.
            IDLE => {
                this.waker.tracker.active.fetch_add(1, Ordering::SeqCst);
            }
            DONE => panic!("tracked actor polled after completion"),
            _ => {}
        }
        {
            let mut inner = this.waker.inner.lock().expect("actor waker lock");
            if !inner.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *inner = Some(cx.waker().clone());
            }
        }
        let mut acx = Context::from_waker(&this.own);
        let prev = CURRENT.with(|c| c.replace(Some((this.id, this.seq))));
        let fut = this
            .fut
            .as_mut()
            .expect("a tracked future is only taken in drop");
        let out = fut.as_mut().poll(&mut acx);
        let mine = CURRENT.with(|c| c.replace(prev));
        this.seq = mine.map_or(this.seq, |(_, seq)| seq);
        match out {
            Poll::Ready(v) => {
                this.waker.state.store(DONE, Ordering::SeqCst);
                this.waker.tracker.dec();
                Poll::Ready(v)
            }
            Poll::Pending => {
                if this
                    .waker
                    .state
                    .compare_exchange(RUNNING, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    this.waker.tracker.dec();
                } else {
                    // Woken while running: it stays active, madsim will poll it again.
                    this.waker.state.store(SCHEDULED, Ordering::SeqCst);
                }
                Poll::Pending
            }
        }
    }
}
