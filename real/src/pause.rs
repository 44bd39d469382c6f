//! A process pause on a real run, as a GC pause: the client's task is not polled and its
//! proxies hold its traffic both ways, so the server hears nothing from it; past its
//! session timeout the server expires the session. Then the process resumes believing
//! what it believed before, finishing the step it was on before it reads its mail.
//!
//! [`Pausable`] wraps a client's task and stops polling it while its [`Pauser`] says so. A
//! pause strikes at once ([`Pauser::pause_for`], the task freezes wherever it is), or is
//! armed for the client's next hold ([`Pauser::arm_for_hold`], taken by the workload's
//! worker as it enters the critical section): the case of Kleppmann's "How to do
//! distributed locking", where a holder pauses, its lease runs out, another takes the
//! lock, and the first writes on waking. Only the fencing token stops that write.
//!
//! What is not frozen: the client library's own tasks (zookeeper-client's session task,
//! the watch forwarder) and the lock's background tasks. A JVM's pause would stop them
//! too; here the held traffic keeps them from hearing or telling the server anything,
//! and what they learn meanwhile (Disconnected, then Expired) waits for the task.

use crate::faults::ClientLink;
use crate::recorder::Recorder;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

/// A pause armed for the client's next hold.
#[derive(Clone, Copy, Debug)]
struct Armed {
    duration: Duration,
    /// Run time after which the armed pause no longer strikes.
    until: Duration,
    /// Run time the pause must end by: the heal.
    heal: Duration,
}

#[derive(Debug, Default)]
struct State {
    /// Run time the current pause ends at.
    paused_until: Option<Duration>,
    armed: Option<Armed>,
    struck_in_hold: u64,
}

/// One client process's pause switch. Times are run time, on the recorder's clock.
#[derive(Debug)]
pub struct Pauser {
    /// The client's proxies, which hold its traffic while it is paused. `None` when the
    /// run has no proxies: the task alone is frozen.
    link: Option<Arc<ClientLink>>,
    recorder: Arc<Recorder>,
    state: Mutex<State>,
}

impl Pauser {
    pub fn new(link: Option<Arc<ClientLink>>, recorder: Arc<Recorder>) -> Pauser {
        Pauser {
            link,
            recorder,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Each update is one assignment: a poisoned lock still holds a valid state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses the process now, for `duration` (extending a pause under way, never
    /// shortening it).
    pub fn pause_for(&self, duration: Duration) {
        let end = self.recorder.elapsed() + duration;
        {
            let mut s = self.state();
            s.paused_until = Some(s.paused_until.map_or(end, |e| e.max(end)));
        }
        if let Some(link) = &self.link {
            link.black_hole_for(duration);
        }
    }

    /// Arms a pause of `duration` for the client's next hold, if it comes before run time
    /// `until`; the pause is cut short to end by `heal`. Replaces a pause armed before.
    pub fn arm_for_hold(&self, duration: Duration, until: Duration, heal: Duration) {
        self.state().armed = Some(Armed {
            duration,
            until: until.min(heal),
            heal,
        });
    }

    /// Called as the client's hold begins: the armed pause's duration, disarmed, if one is
    /// armed and still in time. The caller records the fault, then calls
    /// [`pause_for`](Self::pause_for) with it.
    pub fn take_armed(&self) -> Option<Duration> {
        let now = self.recorder.elapsed();
        let mut s = self.state();
        let armed = s.armed.take()?;
        let duration = armed.duration.min(armed.heal.saturating_sub(now));
        if now >= armed.until || duration.is_zero() {
            return None;
        }
        s.struck_in_hold += 1;
        Some(duration)
    }

    /// Pauses armed for a hold that struck.
    pub fn struck_in_hold(&self) -> u64 {
        self.state().struck_in_hold
    }

    /// How long the current pause still lasts, if one is under way.
    fn remaining(&self) -> Option<Duration> {
        let until = self.state().paused_until?;
        until
            .checked_sub(self.recorder.elapsed())
            .filter(|left| !left.is_zero())
    }
}

/// A client's task that its [`Pauser`] can freeze: while paused, it is not polled, and
/// it wakes when the pause ends. A pause that strikes while the task waits takes hold
/// when the task is next woken.
pub struct Pausable<F> {
    inner: Pin<Box<F>>,
    pauser: Arc<Pauser>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<F> std::fmt::Debug for Pausable<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pausable")
            .field("pauser", &self.pauser)
            .finish_non_exhaustive()
    }
}

impl<F: Future> Pausable<F> {
    pub fn new(inner: F, pauser: Arc<Pauser>) -> Pausable<F> {
        Pausable {
            inner: Box::pin(inner),
            pauser,
            sleep: None,
        }
    }
}

impl<F: Future> Future for Pausable<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Pausable is Unpin (the task is boxed), so its fields can be borrowed directly.
        let this = &mut *self;
        // A pause may be extended while the task sleeps through it: check again on waking.
        while let Some(left) = this.pauser.remaining() {
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(left)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        this.sleep = None;
        this.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn pauser() -> Arc<Pauser> {
        Arc::new(Pauser::new(None, Arc::new(Recorder::default())))
    }

    #[tokio::test]
    async fn a_paused_task_makes_no_progress_until_the_pause_ends() {
        let p = pauser();
        let ticks = Arc::new(AtomicU64::new(0));
        let t = Arc::clone(&ticks);
        let task = tokio::spawn(Pausable::new(
            async move {
                loop {
                    t.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            },
            Arc::clone(&p),
        ));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            ticks.load(Ordering::SeqCst) > 0,
            "the task runs before the pause"
        );
        let started = p.recorder.elapsed();
        p.pause_for(Duration::from_millis(400));
        // The task may finish the step it was on; after that, nothing until the end.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let frozen = ticks.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            frozen,
            "no step during the pause"
        );
        assert!(p.remaining().is_some());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(p.recorder.elapsed() - started >= Duration::from_millis(400));
        assert!(
            ticks.load(Ordering::SeqCst) > frozen,
            "the task resumes after the pause"
        );
        task.abort();
    }

    #[test]
    fn an_armed_pause_strikes_once_in_time_and_ends_by_the_heal() {
        let p = pauser();
        assert_eq!(p.take_armed(), None, "nothing armed");
        let now = p.recorder.elapsed();
        let heal = now + Duration::from_secs(60);
        p.arm_for_hold(Duration::from_secs(5), now + Duration::from_secs(30), heal);
        assert_eq!(p.take_armed(), Some(Duration::from_secs(5)));
        assert_eq!(p.take_armed(), None, "taken once");
        assert_eq!(p.struck_in_hold(), 1);
        // Cut short by a heal 1 s away.
        let now = p.recorder.elapsed();
        p.arm_for_hold(
            Duration::from_secs(5),
            now + Duration::from_secs(30),
            now + Duration::from_secs(1),
        );
        let cut = p.take_armed().expect("still in time");
        assert!(cut <= Duration::from_secs(1));
        // Past its window: disarmed unstruck.
        p.arm_for_hold(Duration::from_secs(5), Duration::ZERO, heal);
        assert_eq!(p.take_armed(), None);
        assert_eq!(p.struck_in_hold(), 2);
    }
}
