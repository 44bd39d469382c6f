//! A client process's own faults on a real run: a pause, as a GC pause, a crash, and a
//! caller that gives up its acquire.
//!
//! **Pause.** The client's task is not polled and its proxies hold its traffic both ways,
//! so the server hears nothing from it; past its session timeout the server expires the
//! session. Then the process resumes believing what it believed before, finishing the step
//! it was on before it reads its mail. [`Pausable`] wraps a client's task and stops
//! polling it while its [`ProcessControl`] says so.
//!
//! **Crash.** The process dies where it is: the crash is recorded and nothing of the old
//! process after it (see [`Recorder::record_crash`]); its proxies refuse its session and
//! cut its connection, so neither a reconnect nor a CloseSession reaches the server, which
//! expires the session a timeout later; its task is dropped (by the workload, which is told
//! through [`ProcessControl::crashed`]) and, a while later, a new process starts with a
//! new session, as a supervisor would restart it. The old session's nodes stand until the
//! server expires it.
//!
//! A lock that runs in an OS process of its own (a driver, see [`crate::driver`]) gets
//! both to that process as well ([`ProcessControl::set_os_process`]): a pause stops it
//! with SIGSTOP until SIGCONT at the pause's end, a crash kills it with SIGKILL.
//!
//! Each strikes at once (the task stops wherever it is) or is armed for the client's next
//! hold ([`ProcessControl::arm_for_hold`], taken by the workload's worker as it enters the
//! critical section). A pause there is Kleppmann's case ("How to do distributed
//! locking"): the holder's session runs out, another takes the lock, and the first writes
//! on waking; only the fencing token stops that write. A crash there leaves the holder's
//! node to the server's expiry while every waiter waits.
//!
//! **Give-up.** The caller drops the acquire under way, as its own timeout or interrupt
//! would ([`ProcessControl::give_up`]): the workload's worker, waiting in
//! [`ProcessControl::given_up`] beside the acquire, ends the attempt there. An aimed
//! [`crate::plan::AimedAction::GiveUp`] does it while the proxy holds one of the
//! acquire's requests.
//!
//! What is not frozen by a pause: the client library's own tasks (zookeeper-client's
//! session task, the watch forwarder) and the lock's background tasks. A JVM's pause would
//! stop them too; here the held traffic keeps them from hearing or telling the server
//! anything, and what they learn meanwhile (Disconnected, then Expired) waits for the task.

use crate::client::ZkClient;
use crate::link::ClientLink;
use crate::recorder::Recorder;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Notify;
use zklock_recipe::Coordination;
use zklock_recipe::history::{EventKind, FaultKind};

/// A fault armed for the client's next hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldFault {
    /// A pause of this long (cut short to end by the heal).
    Pause(Duration),
    /// A crash; the new process starts this long after it.
    Crash { restart_after: Duration },
}

#[derive(Clone, Copy, Debug)]
struct Armed {
    fault: HoldFault,
    /// Run time after which it no longer strikes.
    until: Duration,
    /// Run time a pause must end by: the heal.
    heal: Duration,
}

#[derive(Debug, Default)]
struct State {
    /// Run time the current pause ends at.
    paused_until: Option<Duration>,
    armed: Option<Armed>,
    /// How long after the latest crash the new process starts.
    restart_after: Duration,
    pauses_in_hold: u64,
    crashes_in_hold: u64,
    /// The OS process of the client's lock, when it runs in a process of its own (a
    /// driver, see `crate::driver`): a pause stops it, a crash kills it.
    os_process: Option<OsProcess>,
}

/// A lock's own OS process, and the session it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsProcess {
    pub pid: u32,
    /// The session its client reported last (0: none yet).
    pub session: i64,
}

/// One client process's fault switches. Times are run time, on the recorder's clock.
#[derive(Debug)]
pub struct ProcessControl {
    index: u32,
    /// The client's proxies: they hold its traffic while it is paused and keep its session
    /// from the server once it crashed. `None` when the run has no proxies: a pause then
    /// freezes the task alone, and a crash does not strike.
    link: Option<Arc<ClientLink>>,
    recorder: Arc<Recorder>,
    state: Mutex<State>,
    crashed: Notify,
    given_up: Notify,
    /// Pauses of the lock's OS process so far (see [`OsProcess`]).
    os_pauses: Arc<AtomicU64>,
}

impl ProcessControl {
    pub fn new(index: u32, link: Option<Arc<ClientLink>>, recorder: Arc<Recorder>) -> Self {
        ProcessControl {
            index,
            link,
            recorder,
            state: Mutex::new(State::default()),
            crashed: Notify::new(),
            given_up: Notify::new(),
            os_pauses: Arc::new(AtomicU64::new(0)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Each update is one assignment: a poisoned lock still holds a valid state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pauses the process now, for `duration` (extending a pause under way, never
    /// shortening it). A lock in an OS process of its own is stopped (SIGSTOP) until the
    /// pause ends (SIGCONT).
    pub fn pause_for(&self, duration: Duration) {
        let now = self.recorder.elapsed();
        let end = now + duration;
        let (os, until) = {
            let mut s = self.state();
            let until = s.paused_until.map_or(end, |e| e.max(end));
            s.paused_until = Some(until);
            (s.os_process, until)
        };
        if let Some(link) = &self.link {
            link.black_hole_for(duration);
        }
        if let Some(os) = os {
            signal(os.pid, rustix::process::Signal::STOP);
            // Only the latest pause's task resumes the process: an extension outlasts the
            // earlier ends.
            let generation = self.os_pauses.fetch_add(1, Ordering::SeqCst) + 1;
            let pauses = Arc::clone(&self.os_pauses);
            tokio::spawn(async move {
                tokio::time::sleep(until.saturating_sub(now)).await;
                if pauses.load(Ordering::SeqCst) == generation {
                    signal(os.pid, rustix::process::Signal::CONT);
                }
            });
        }
    }

    /// The client's lock now runs in OS process `pid` (None: no longer).
    pub fn set_os_process(&self, process: Option<OsProcess>) {
        self.state().os_process = process;
    }

    /// The client lock's OS process, if it has one.
    pub fn os_process(&self) -> Option<OsProcess> {
        self.state().os_process
    }

    /// Crashes the process whose current session is `session`: records the crash, after
    /// which nothing of that session is recorded; keeps the session from the server; and
    /// tells the workload to drop the task and start a new process after `restart_after`.
    /// False, with nothing done, when the session was over already or the run has no
    /// proxies.
    pub fn crash(&self, session: &ZkClient, restart_after: Duration) -> bool {
        let Some(link) = &self.link else {
            return false;
        };
        if session.session_state().is_terminal() {
            return false;
        }
        self.recorder.record_crash(self.index, session.session_id());
        // Refused for twice its timeout: past the server's expiry of it.
        let refuse_for = session.negotiated_session_timeout() * 2;
        link.expire_locally(session, refuse_for);
        let was_paused = {
            let mut s = self.state();
            s.restart_after = restart_after;
            // The new process is not paused, and its connections are not held.
            s.paused_until.take().is_some()
        };
        if was_paused {
            link.end_black_hole();
        }
        if let Some(os) = self.state().os_process.take() {
            signal(os.pid, rustix::process::Signal::KILL);
        }
        // A permit is kept if the workload is not waiting yet: the crash is not lost.
        self.crashed.notify_one();
        true
    }

    /// Resolves at the process's next crash.
    pub async fn crashed(&self) {
        self.crashed.notified().await;
    }

    /// Gives up the acquire the process is waiting in, if any: no permit is kept, so a
    /// give-up outside an acquire (at a release's request) does nothing.
    pub fn give_up(&self) {
        self.given_up.notify_waiters();
    }

    /// Resolves at the next [`give_up`](ProcessControl::give_up) after its first poll.
    pub async fn given_up(&self) {
        self.given_up.notified().await;
    }

    /// How long after its latest crash the new process starts.
    pub fn restart_after(&self) -> Duration {
        self.state().restart_after
    }

    /// Arms `fault` for the client's next hold, if it comes before run time `until`; a
    /// pause is cut short to end by `heal`. Replaces a fault armed before.
    pub fn arm_for_hold(&self, fault: HoldFault, until: Duration, heal: Duration) {
        self.state().armed = Some(Armed {
            fault,
            until: until.min(heal),
            heal,
        });
    }

    /// Called by the worker as its hold begins, on the hold's session: strikes the armed
    /// fault, if one is armed and still in time. True when the process crashed: the
    /// worker must then stop, and wait to be dropped.
    pub fn strike_armed(&self, session: &ZkClient) -> bool {
        match self.take_armed() {
            None => false,
            Some(HoldFault::Pause(duration)) => {
                let duration_ms = duration.as_millis() as u64;
                // Recorded first: the history shows the pause inside the hold it hit.
                self.recorder.record(
                    self.index,
                    session.session_id(),
                    EventKind::Fault {
                        fault: FaultKind::Pause { duration_ms },
                    },
                );
                self.pause_for(duration);
                self.state().pauses_in_hold += 1;
                false
            }
            Some(HoldFault::Crash { restart_after }) => {
                let crashed = self.crash(session, restart_after);
                if crashed {
                    self.state().crashes_in_hold += 1;
                }
                crashed
            }
        }
    }

    /// The armed fault, disarmed, if still in time; a pause cut short to end by the heal
    /// (none left when it would not last).
    fn take_armed(&self) -> Option<HoldFault> {
        let now = self.recorder.elapsed();
        let armed = self.state().armed.take().filter(|a| now < a.until)?;
        match armed.fault {
            HoldFault::Pause(duration) => {
                let duration = duration.min(armed.heal.saturating_sub(now));
                (!duration.is_zero()).then_some(HoldFault::Pause(duration))
            }
            crash @ HoldFault::Crash { .. } => Some(crash),
        }
    }

    /// Pauses armed for a hold that struck.
    pub fn pauses_in_hold(&self) -> u64 {
        self.state().pauses_in_hold
    }

    /// Crashes armed for a hold that struck.
    pub fn crashes_in_hold(&self) -> u64 {
        self.state().crashes_in_hold
    }

    /// How long the current pause still lasts, if one is under way.
    fn remaining(&self) -> Option<Duration> {
        let until = self.state().paused_until?;
        until
            .checked_sub(self.recorder.elapsed())
            .filter(|left| !left.is_zero())
    }
}

/// Sends `sig` to `pid`; a process already gone is no error (its exit is what was wanted).
fn signal(pid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// A client's task that its [`ProcessControl`] can pause: while paused, it is not polled,
/// and it wakes when the pause ends. A pause that strikes while the task waits takes hold
/// when the task is next woken.
pub struct Pausable<F> {
    inner: Pin<Box<F>>,
    control: Arc<ProcessControl>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<F> std::fmt::Debug for Pausable<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pausable")
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

impl<F: Future> Pausable<F> {
    pub fn new(inner: F, control: Arc<ProcessControl>) -> Pausable<F> {
        Pausable {
            inner: Box::pin(inner),
            control,
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
        while let Some(left) = this.control.remaining() {
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

    fn control() -> Arc<ProcessControl> {
        Arc::new(ProcessControl::new(0, None, Arc::new(Recorder::default())))
    }

    #[tokio::test]
    async fn a_paused_task_makes_no_progress_until_the_pause_ends() {
        let p = control();
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
    fn an_armed_fault_is_taken_once_in_time_and_a_pause_ends_by_the_heal() {
        let p = control();
        assert_eq!(p.take_armed(), None, "nothing armed");
        let five = HoldFault::Pause(Duration::from_secs(5));
        let now = p.recorder.elapsed();
        let heal = now + Duration::from_secs(60);
        p.arm_for_hold(five, now + Duration::from_secs(30), heal);
        assert_eq!(p.take_armed(), Some(five));
        assert_eq!(p.take_armed(), None, "taken once");
        // Cut short by a heal 1 s away.
        let now = p.recorder.elapsed();
        let soon = now + Duration::from_secs(1);
        p.arm_for_hold(five, now + Duration::from_secs(30), soon);
        match p.take_armed() {
            Some(HoldFault::Pause(cut)) => assert!(cut <= Duration::from_secs(1)),
            other => panic!("a shortened pause, not {other:?}"),
        }
        // Past its window: disarmed unstruck.
        p.arm_for_hold(five, Duration::ZERO, heal);
        assert_eq!(p.take_armed(), None);
        let crash = HoldFault::Crash {
            restart_after: Duration::from_secs(1),
        };
        p.arm_for_hold(crash, now + Duration::from_secs(30), heal);
        assert_eq!(p.take_armed(), Some(crash));
    }
}
