//! [`Recorder`]: one real run's history, shared by every client task of the process.
//!
//! Events come from many tasks on many threads. Each is appended under one lock, with its
//! time read from the process's monotonic clock ([`monotonic_now`]) *under that lock*, so
//! the history's order is its time order and both agree with what each task did first.
//! The in-process [`Resource`] lives under the same lock for the same reason: a resource
//! operation and its event are one step.

use crate::client::monotonic_now;
use crate::resource::{Resource, ResourceRead, WriteOutcome};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use zklock_recipe::SessionId;
use zklock_recipe::history::{Event, EventKind, FaultKind, History, ZkOp};

/// The default soft cap on a run's events (see [`Recorder::is_full`]).
pub const DEFAULT_MAX_EVENTS: usize = 2_000_000;

#[derive(Debug)]
struct Log {
    events: Vec<Event>,
    next_op_id: u64,
    /// The resource each lock guards, by lock index (one, unless a run has several locks).
    resources: Vec<Resource>,
    /// Sessions of crashed processes, by client: nothing of them is recorded after the
    /// crash, and they touch the resource no more. A handful per run: a scan is enough.
    crashed: Vec<(u32, SessionId)>,
}

impl Log {
    fn is_crashed(&self, client: u32, session: SessionId) -> bool {
        !self.crashed.is_empty() && self.crashed.contains(&(client, session))
    }
}

/// Lock `lock`'s resource, made on first use (a run has at most a few dozen locks).
fn resource_of(log: &mut Log, lock: usize) -> &mut Resource {
    if log.resources.len() <= lock {
        log.resources.resize_with(lock + 1, Resource::default);
    }
    &mut log.resources[lock]
}

/// A run's history and resource. Times are microseconds since the recorder was made.
#[derive(Debug)]
pub struct Recorder {
    epoch: Duration,
    max_events: usize,
    log: Mutex<Log>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new(DEFAULT_MAX_EVENTS)
    }
}

impl Recorder {
    /// A recorder whose time 0 is now. Past `max_events` events it reports
    /// [`is_full`](Recorder::is_full) (and keeps recording), so a workload can stop
    /// starting new work instead of growing without bound.
    pub fn new(max_events: usize) -> Recorder {
        Recorder {
            epoch: monotonic_now(),
            max_events,
            log: Mutex::new(Log {
                events: Vec::new(),
                next_op_id: 0,
                resources: vec![Resource::default()],
                crashed: Vec::new(),
            }),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        // Each update is one push or assignment: a poisoned lock still holds a valid log.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorder's clock: time since it was made.
    pub fn elapsed(&self) -> Duration {
        monotonic_now().saturating_sub(self.epoch)
    }

    /// [`elapsed`](Recorder::elapsed) in microseconds, as history times are.
    pub fn now_us(&self) -> u64 {
        u64::try_from(self.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The process-wide [`monotonic_now`] of this recorder's time 0.
    pub fn epoch(&self) -> Duration {
        self.epoch
    }

    /// Converts a [`monotonic_now`] reading to this history's time, in µs.
    pub fn time_us_of(&self, monotonic: Duration) -> u64 {
        u64::try_from(monotonic.saturating_sub(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    fn push(&self, log: &mut Log, client: u32, session: SessionId, kind: EventKind) {
        if log.is_crashed(client, session) {
            return;
        }
        // Read under the lock: the order of `events` is then the order of their times.
        let time_us = self.now_us();
        log.events.push(Event {
            time_us,
            client,
            session,
            kind,
        });
    }

    /// Appends an event stamped now.
    pub fn record(&self, client: u32, session: SessionId, kind: EventKind) {
        let mut log = self.log();
        self.push(&mut log, client, session, kind);
    }

    /// Records that client `client`'s process crashed while on `session`, and from now on
    /// records nothing of that session: what its leftover tasks still do (a dropped
    /// lock's cleanup, the session's end) a dead process would not have done.
    pub fn record_crash(&self, client: u32, session: SessionId) {
        let mut log = self.log();
        let kind = EventKind::Fault {
            fault: FaultKind::Crash,
        };
        self.push(&mut log, client, session, kind);
        log.crashed.push((client, session));
    }

    /// Records a ZooKeeper request being issued (`watch`: it leaves a watch) and returns
    /// its op id (unique in the run).
    pub fn invoke(
        &self,
        client: u32,
        session: SessionId,
        op: ZkOp,
        path: &str,
        watch: bool,
    ) -> u64 {
        let mut log = self.log();
        log.next_op_id += 1;
        let op_id = log.next_op_id;
        let kind = EventKind::OpInvoke {
            op_id,
            op,
            path: path.into(),
            watch,
        };
        self.push(&mut log, client, session, kind);
        op_id
    }

    /// Reads the resource and records the read (of the fenced value, as the simulation does).
    pub fn read_resource(&self, client: u32, session: SessionId, token: i64) -> ResourceRead {
        self.read_resource_of(0, client, session, token)
    }

    /// Reads the resource of lock `lock` (a run of several locks guards one resource per
    /// lock, as the simulation does) and records the read.
    pub fn read_resource_of(
        &self,
        lock: usize,
        client: u32,
        session: SessionId,
        token: i64,
    ) -> ResourceRead {
        let mut log = self.log();
        if log.is_crashed(client, session) {
            // A dead process's read: it never happens, and teaches the resource nothing.
            return ResourceRead::default();
        }
        let read = resource_of(&mut log, lock).read(token);
        let kind = EventKind::ResourceRead { value: read.fenced };
        self.push(&mut log, client, session, kind);
        read
    }

    /// Writes the resource with `token` (the values `read` saw, plus one) and records it;
    /// `None`, with nothing written, from a crashed process's session.
    pub fn write_resource(
        &self,
        client: u32,
        session: SessionId,
        token: i64,
        read: ResourceRead,
    ) -> Option<WriteOutcome> {
        self.write_resource_of(0, client, session, token, read)
    }

    /// [`write_resource`](Recorder::write_resource) on the resource of lock `lock`.
    pub fn write_resource_of(
        &self,
        lock: usize,
        client: u32,
        session: SessionId,
        token: i64,
        read: ResourceRead,
    ) -> Option<WriteOutcome> {
        let mut log = self.log();
        if log.is_crashed(client, session) {
            return None;
        }
        let out = resource_of(&mut log, lock).write(token, read);
        let kind = EventKind::ResourceWrite {
            token,
            value: out.value,
            fenced_accepted: out.fenced_accepted,
            fenced_lost_update: out.fenced_lost_update,
            unfenced_overwrote: out.unfenced_overwrote,
        };
        self.push(&mut log, client, session, kind);
        Some(out)
    }

    /// Events so far.
    pub fn len(&self) -> usize {
        self.log().events.len()
    }

    /// True before the first event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// At or past the soft cap given to [`new`](Recorder::new).
    pub fn is_full(&self) -> bool {
        self.len() >= self.max_events
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        History {
            events: self.log().events.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_from_many_threads_are_in_time_order_with_unique_op_ids() {
        let recorder = std::sync::Arc::new(Recorder::default());
        let threads: Vec<_> = (0..4u32)
            .map(|c| {
                let r = std::sync::Arc::clone(&recorder);
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        let op = r.invoke(c, SessionId(1), ZkOp::Exists, "/x", false);
                        r.record(c, SessionId(1), EventKind::OpOk { op_id: op });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let h = recorder.history();
        assert_eq!(h.events.len(), 4000);
        assert!(h.events.windows(2).all(|w| w[0].time_us <= w[1].time_us));
        let mut ids: Vec<u64> = h
            .events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::OpInvoke { op_id, .. } => Some(op_id),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 2000);
    }

    #[test]
    fn resource_operations_are_recorded_with_their_outcome() {
        let r = Recorder::new(3);
        let read = r.read_resource(0, SessionId(7), 1);
        r.write_resource(0, SessionId(7), 42, read);
        assert!(!r.is_full());
        let stale = r
            .write_resource(1, SessionId(8), 41, read)
            .expect("a live session");
        assert!(!stale.fenced_accepted && stale.unfenced_overwrote);
        assert!(r.is_full());
        // Another lock's resource knows nothing of lock 0's writes: token 41 is accepted.
        let other = r.read_resource_of(1, 1, SessionId(8), 41);
        let w = r.write_resource_of(1, 1, SessionId(8), 41, other).unwrap();
        assert!(w.fenced_accepted && !w.unfenced_overwrote);
        let kinds: Vec<&'static str> = r.history().events.iter().map(|e| e.kind.tag()).collect();
        assert_eq!(kinds, ["rd", "wr", "wr", "rd", "wr"]);
    }

    #[test]
    fn nothing_of_a_crashed_session_is_recorded_after_its_crash() {
        let r = Recorder::default();
        let read = r.read_resource(0, SessionId(7), 5);
        r.record_crash(0, SessionId(7));
        // Its leftover tasks: a request, a session change, the resource.
        r.invoke(0, SessionId(7), ZkOp::Delete, "/l/n", false);
        r.record(
            0,
            SessionId(7),
            EventKind::Session {
                state: zklock_recipe::SessionState::Expired,
            },
        );
        assert_eq!(r.read_resource(0, SessionId(7), 9), ResourceRead::default());
        assert_eq!(r.write_resource(0, SessionId(7), 5, read), None);
        // The new process's session, and other clients, are recorded as ever.
        r.record(0, SessionId(8), EventKind::Done);
        r.record(1, SessionId(7), EventKind::Done);
        let kinds: Vec<&'static str> = r.history().events.iter().map(|e| e.kind.tag()).collect();
        assert_eq!(kinds.len(), 4, "{kinds:?}");
        assert!(matches!(
            r.history().events[1].kind,
            EventKind::Fault {
                fault: FaultKind::Crash
            }
        ));
        // The resource learnt nothing from the dead session: a token below 9 still writes.
        let w = r
            .write_resource(1, SessionId(9), 6, read)
            .expect("a live session");
        assert!(w.fenced_accepted);
    }
}
