//! One driver process on zklock's side: its requests, its reports, its exit.
//!
//! A reader task parses every line the driver writes ([`super::protocol::parse_report`]);
//! a line that breaks the protocol ends the connection with the reason (the process is
//! killed, the run's driver failure is set, every waiting call gets the error): never a
//! panic. A writer task owns the driver's stdin, so that a dropped acquire can send its
//! cancel from `Drop`.

use super::protocol::{self, DriverSession, LINE_BYTES_MAX, Report, Request};
use crate::process::{OsProcess, ProcessControl};
use crate::recorder::Recorder;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};
use zklock_recipe::SessionId;
use zklock_recipe::SessionState;
use zklock_recipe::history::EventKind;

/// How a request ended, as the driver reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Acquired { token: i64, node: String },
    NotAcquired { reason: String },
    Released,
    Error { message: String },
}

/// Where a driver's session changes are recorded: the client whose lock it is.
#[derive(Clone, Debug)]
pub(crate) struct Sink {
    pub recorder: Arc<Recorder>,
    pub index: u32,
    /// The recording session the client's events are under.
    pub session: SessionId,
    pub control: Option<Arc<ProcessControl>>,
}

#[derive(Debug, Default)]
struct State {
    hello: Option<String>,
    /// The protocol version the hello named.
    protocol: u32,
    /// The driver answered `reset`: nothing of its old session follows.
    reset: bool,
    /// The run's first driver failure: the run the process serves now.
    fatal: Arc<Mutex<Option<String>>>,
    outcomes: HashMap<u64, Outcome>,
    lost: HashMap<u64, String>,
    /// Why no more reports will come (exit, protocol error).
    ended: Option<String>,
    session: i64,
    sink: Option<Sink>,
    /// The last lines the driver wrote to stderr, for error messages.
    stderr_tail: Vec<String>,
}

/// The stderr lines an error message quotes.
const STDERR_TAIL_LINES: usize = 12;

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn end(&self, why: String) {
        let mut s = self.state();
        if s.ended.is_none() {
            let tail = s.stderr_tail.join("\n");
            s.ended = Some(if tail.is_empty() {
                why
            } else {
                format!("{why}; its stderr ended with:\n{tail}")
            });
        }
        drop(s);
        self.changed.notify_waiters();
    }
}

/// A running driver.
#[derive(Debug)]
pub(crate) struct Conn {
    name: String,
    tx: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    pid: Option<u32>,
    child: Mutex<Option<tokio::process::Child>>,
    /// The run's first driver failure, for the command line to report.
    fatal: Arc<Mutex<Option<String>>>,
    /// Where the process goes when its run is done with it, if it can be reset.
    pool: Option<(Arc<dyn KeepsIdle>, String)>,
    /// The runtime it was started on: its reset, or its exit, is awaited there even when
    /// the connection is dropped outside the runtime (a run's results taken apart).
    rt: Option<tokio::runtime::Handle>,
}

/// Where a reset process goes when its run is done with it: a
/// [`DriverPool`](super::pool::DriverPool). A trait, so that the pool (which keeps
/// [`Idle`] processes) depends on this module and not this module on it.
pub(crate) trait KeepsIdle: Send + Sync + std::fmt::Debug {
    /// A reset was sent; its answer (or the process's end) is awaited.
    fn reset_started(&self);
    /// That reset was answered, or the process is gone.
    fn reset_ended(&self);
    /// Keeps a reset process of the launcher `key` (or closes it).
    fn put(&self, key: String, process: Idle);
}

/// A driver process between sessions: reset, kept in a
/// [`DriverPool`](super::pool::DriverPool) for the next run.
#[derive(Debug)]
pub(crate) struct Idle {
    name: String,
    tx: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    pid: Option<u32>,
    child: tokio::process::Child,
}

impl Idle {
    /// Whether the process still runs, as far as its reports tell.
    pub fn alive(&self) -> bool {
        self.shared.state().ended.is_none()
    }

    /// Closes the process: it exits, or is killed after the grace.
    pub fn close(self) {
        let _ = self.tx.send(protocol::request_line(&Request::Close));
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            reap(self.child, &rt);
        }
    }
}

impl Conn {
    /// Speaks the protocol over `reports` and `requests`; `child` is the process, if any.
    pub fn new(
        name: String,
        reports: impl AsyncRead + Unpin + Send + 'static,
        requests: impl AsyncWrite + Unpin + Send + 'static,
        child: Option<tokio::process::Child>,
        fatal: Arc<Mutex<Option<String>>>,
    ) -> Conn {
        let shared = Arc::new(Shared::default());
        shared.state().fatal = Arc::clone(&fatal);
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            let mut requests = requests;
            while let Some(line) = rx.recv().await {
                if requests.write_all(line.as_bytes()).await.is_err()
                    || requests.flush().await.is_err()
                {
                    break;
                }
            }
            // Dropping stdin tells the driver to close.
        });
        let pid = child.as_ref().and_then(tokio::process::Child::id);
        tokio::spawn(read_reports(
            name.clone(),
            reports,
            Arc::clone(&shared),
            pid,
        ));
        Conn {
            name,
            tx,
            shared,
            pid,
            child: Mutex::new(child),
            fatal,
            pool: None,
            rt: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Its run done, the process goes to `pool` (under `key`) if it resets cleanly.
    pub fn returning_to(mut self, pool: Arc<dyn KeepsIdle>, key: String) -> Conn {
        self.pool = Some((pool, key));
        self
    }

    /// A reset process, serving a new run: its `open` is sent, its hello comes in its
    /// own time, as a new process's does.
    pub fn reopen(
        idle: Idle,
        open: &Request,
        fatal: Arc<Mutex<Option<String>>>,
        pool: Arc<dyn KeepsIdle>,
        key: String,
    ) -> Conn {
        {
            let mut s = idle.shared.state();
            s.hello = None;
            s.reset = false;
            s.session = 0;
            s.sink = None;
            s.outcomes.clear();
            s.lost.clear();
            s.stderr_tail.clear();
            s.fatal = Arc::clone(&fatal);
        }
        let conn = Conn {
            name: idle.name,
            tx: idle.tx,
            shared: idle.shared,
            pid: idle.pid,
            child: Mutex::new(Some(idle.child)),
            fatal,
            pool: Some((pool, key)),
            rt: tokio::runtime::Handle::try_current().ok(),
        };
        conn.send(open);
        conn
    }

    /// The driver's process id, if it is a process.
    #[cfg(test)]
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Keeps the last lines of the driver's stderr, for error messages.
    pub fn follow_stderr(&self, stderr: impl AsyncRead + Unpin + Send + 'static) {
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = shared.state();
                if s.stderr_tail.len() == STDERR_TAIL_LINES {
                    s.stderr_tail.remove(0);
                }
                s.stderr_tail.push(line.chars().take(300).collect());
            }
        });
    }

    /// From now on, the driver's session changes are recorded for `sink`'s client, and its
    /// process is that client's (a pause stops it, a crash kills it).
    pub fn attach(&self, sink: Sink) {
        let session = {
            let mut s = self.shared.state();
            s.sink = Some(sink.clone());
            s.session
        };
        if let (Some(control), Some(pid)) = (&sink.control, self.pid) {
            control.set_os_process(Some(OsProcess { pid, session }));
        }
    }

    pub fn send(&self, request: &Request) {
        // A driver gone already answers nothing: the waiter learns why from `ended`.
        let _ = self.tx.send(protocol::request_line(request));
    }

    /// Waits for the driver's hello, at most `timeout`.
    pub async fn hello(&self, timeout: Duration) -> Result<String, String> {
        let waited = tokio::time::timeout(timeout, self.wait(|s| s.hello.clone())).await;
        match waited {
            Ok(got) => got,
            Err(_) => {
                let why = format!(
                    "driver {} sent no hello within {} s",
                    self.name,
                    timeout.as_secs()
                );
                self.fail(why.clone());
                Err(why)
            }
        }
    }

    /// Waits for the answer to a `reset`.
    #[cfg(test)]
    pub async fn reset_answered(&self) -> Result<(), String> {
        self.wait(|s| s.reset.then_some(())).await
    }

    /// Waits for request `id`'s outcome.
    pub async fn outcome(&self, id: u64) -> Result<Outcome, String> {
        self.wait(|s| s.outcomes.remove(&id)).await
    }

    /// Waits until hold `id` is reported lost; the reason.
    pub async fn lost(&self, id: u64) -> String {
        self.wait(|s| s.lost.get(&id).cloned())
            .await
            .unwrap_or_else(|ended| format!("driver ended: {ended}"))
    }

    /// Waits until `take` finds what it looks for; Err once the driver has ended.
    async fn wait<T>(&self, take: impl FnMut(&mut State) -> Option<T>) -> Result<T, String> {
        wait_on(&self.shared, take).await
    }

    /// Ends the connection with `why`: the run's driver failure, the process killed.
    pub fn fail(&self, why: String) {
        set_fatal(&self.fatal, &why);
        self.shared.end(why);
        if let Some(pid) = self.pid {
            kill(pid);
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let sink = self.shared.state().sink.take();
        if let (Some(control), Some(pid)) = (sink.and_then(|s| s.control), self.pid)
            && control.os_process().is_some_and(|os| os.pid == pid)
        {
            control.set_os_process(None);
        }
        let mut child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // A process that said hello in protocol 3 and has not ended can be reset and kept.
        let reusable = {
            let s = self.shared.state();
            s.ended.is_none() && s.protocol >= 3
        };
        let rt = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.rt.clone());
        if reusable
            && let Some(rt) = rt.clone()
            && let Some((pool, key)) = self.pool.take()
            && let Some(child) = child.take()
        {
            self.send(&Request::Reset);
            pool.reset_started();
            let idle = Idle {
                name: self.name.clone(),
                tx: self.tx.clone(),
                shared: Arc::clone(&self.shared),
                pid: self.pid,
                child,
            };
            rt.spawn(async move {
                let shared = Arc::clone(&idle.shared);
                let reset =
                    tokio::time::timeout(RESET_GRACE, wait_on(&shared, |s| s.reset.then_some(())))
                        .await;
                match reset {
                    Ok(Ok(())) => pool.put(key, idle),
                    // Stuck, gone or silent: not a process to trust with another run.
                    _ => {
                        let mut child = idle.child;
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                    }
                }
                pool.reset_ended();
            });
            return;
        }
        self.send(&Request::Close);
        if let (Some(child), Some(rt)) = (child, rt) {
            reap(child, &rt);
        }
    }
}

/// The driver closes its session and exits; one that does not within the grace is killed
/// (and one left when no runtime runs is killed by `kill_on_drop`).
fn reap(mut child: tokio::process::Child, rt: &tokio::runtime::Handle) {
    rt.spawn(async move {
        if tokio::time::timeout(CLOSE_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    });
}

/// How long a driver may take to close its session and exit.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How long a driver may take to answer `reset`: one that does not is killed.
const RESET_GRACE: Duration = Duration::from_secs(5);

/// Waits until `take` finds what it looks for; Err once the driver has ended.
async fn wait_on<T>(
    shared: &Shared,
    mut take: impl FnMut(&mut State) -> Option<T>,
) -> Result<T, String> {
    loop {
        let notified = shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut s = shared.state();
            if let Some(got) = take(&mut s) {
                return Ok(got);
            }
            if let Some(why) = &s.ended {
                return Err(why.clone());
            }
        }
        notified.await;
    }
}

pub(crate) fn set_fatal(fatal: &Mutex<Option<String>>, why: &str) {
    let mut f = fatal.lock().unwrap_or_else(PoisonError::into_inner);
    if f.is_none() {
        *f = Some(why.to_owned());
    }
}

fn kill(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Reads the driver's reports until it ends or breaks the protocol.
async fn read_reports(
    name: String,
    reports: impl AsyncRead + Unpin,
    shared: Arc<Shared>,
    pid: Option<u32>,
) {
    let mut reader = BufReader::new(reports);
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most one byte past the bound is read, so an endless line cannot fill memory.
        let limit = (LINE_BYTES_MAX + 2) as u64;
        let read = (&mut reader).take(limit).read_until(b'\n', &mut line).await;
        let why = match read {
            Ok(0) => Some(format!("driver {name} exited")),
            Err(e) => Some(format!("reading driver {name}'s reports: {e}")),
            Ok(_) => {
                let complete = line.last() == Some(&b'\n');
                if complete {
                    line.pop();
                }
                if !complete && line.len() <= LINE_BYTES_MAX {
                    Some(format!("driver {name} exited mid-line"))
                } else {
                    match protocol::parse_report(&line) {
                        Ok(report) => handle(&name, &shared, report).err(),
                        Err(e) => Some(format!("driver {name} broke the protocol: {e}")),
                    }
                }
            }
        };
        if let Some(why) = why {
            let exited = why.ends_with("exited");
            if !exited {
                let fatal = Arc::clone(&shared.state().fatal);
                set_fatal(&fatal, &why);
                if let Some(pid) = pid {
                    kill(pid);
                }
            }
            shared.end(why);
            return;
        }
        shared.changed.notify_waiters();
    }
}

use tokio::io::AsyncReadExt as _;

/// Applies one report; Err ends the connection.
fn handle(name: &str, shared: &Shared, report: Report) -> Result<(), String> {
    let mut s = shared.state();
    match report {
        Report::Hello {
            protocol,
            library,
            version,
            lock,
            session_id,
        } => {
            if !(protocol::PROTOCOL_VERSION_MIN..=protocol::PROTOCOL_VERSION).contains(&protocol) {
                return Err(format!(
                    "driver {name} speaks protocol {protocol}; this zklock speaks {} to {}",
                    protocol::PROTOCOL_VERSION_MIN,
                    protocol::PROTOCOL_VERSION
                ));
            }
            s.protocol = protocol;
            s.session = session_id;
            s.hello = Some(format!("{library} {version} {lock}"));
        }
        Report::Session { state, session_id } => {
            if session_id != 0 {
                s.session = session_id;
            }
            if let Some(sink) = &s.sink {
                // The driver's session is not the recording session: its expiry shows as a
                // disconnect of the client (which goes on, as the library does, with a new
                // session), never as the end of the recording session.
                let state = match state {
                    DriverSession::Connected => SessionState::Connected,
                    DriverSession::Disconnected | DriverSession::Expired => {
                        SessionState::Disconnected
                    }
                };
                sink.recorder
                    .record(sink.index, sink.session, EventKind::Session { state });
                if let (Some(control), Some(os)) = (
                    &sink.control,
                    sink.control.as_ref().and_then(|c| c.os_process()),
                ) {
                    control.set_os_process(Some(OsProcess {
                        session: s.session,
                        ..os
                    }));
                }
            }
        }
        Report::Acquired { id, token, node } => {
            s.outcomes.insert(id, Outcome::Acquired { token, node });
        }
        Report::NotAcquired { id, reason } => {
            s.outcomes.insert(id, Outcome::NotAcquired { reason });
        }
        Report::Released { id } => {
            s.outcomes.insert(id, Outcome::Released);
        }
        Report::Lost { id, reason } => {
            s.lost.insert(id, reason);
        }
        Report::Error {
            id: Some(id),
            message,
        } => {
            s.outcomes.insert(id, Outcome::Error { message });
        }
        Report::Error { id: None, message } => {
            return Err(format!("driver {name} could not read a request: {message}"));
        }
        Report::Reset => {
            if s.protocol < 3 {
                return Err(format!(
                    "driver {name} answered reset in protocol {}",
                    s.protocol
                ));
            }
            // What the old session's requests left unclaimed goes with it.
            s.outcomes.clear();
            s.lost.clear();
            s.reset = true;
        }
    }
    if s.outcomes.len() > OUTCOMES_MAX {
        return Err(format!(
            "driver {name} reported {OUTCOMES_MAX} outcomes nobody asked for"
        ));
    }
    Ok(())
}

/// Outcomes are taken as they come; more waiting than this is a driver answering requests
/// never made.
const OUTCOMES_MAX: usize = 1_024;

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver that writes `lines`, then waits; the connection zklock has to it.
    fn fake_driver(lines: &'static str) -> (Conn, Arc<Mutex<Option<String>>>) {
        let (ours, mut theirs) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(ours);
        tokio::spawn(async move {
            theirs.write_all(lines.as_bytes()).await.unwrap();
            // Keep the pipe open: the driver is alive, only its words are wrong.
            std::future::pending::<()>().await;
        });
        let fatal = Arc::default();
        (
            Conn::new("fake".into(), read, write, None, Arc::clone(&fatal)),
            fatal,
        )
    }

    #[tokio::test]
    async fn a_malformed_report_fails_the_driver_with_the_line_never_a_panic() {
        let (conn, fatal) = fake_driver(
            "{\"event\":\"hello\",\"protocol\":2,\"library\":\"x\",\"version\":\"1\",\"lock\":\"L\"}\n{\"event\":\"acquired\",\"id\":\"one\"}\n",
        );
        assert_eq!(conn.hello(Duration::from_secs(5)).await.unwrap(), "x 1 L");
        let err = conn.outcome(1).await.unwrap_err();
        assert!(err.contains("broke the protocol"), "{err}");
        assert!(err.contains("acquired"), "{err}");
        let fatal = fatal
            .lock()
            .unwrap()
            .clone()
            .expect("the run's driver failure is set");
        assert!(fatal.contains("broke the protocol"), "{fatal}");
    }

    #[tokio::test]
    async fn another_protocol_version_is_refused() {
        let (conn, fatal) = fake_driver(
            "{\"event\":\"hello\",\"protocol\":4,\"library\":\"x\",\"version\":\"1\",\"lock\":\"L\"}\n",
        );
        let err = conn.hello(Duration::from_secs(5)).await.unwrap_err();
        assert!(err.contains("speaks protocol 4"), "{err}");
        assert!(fatal.lock().unwrap().is_some());
    }

    #[tokio::test]
    async fn an_endless_line_is_refused_at_the_bound() {
        let long: &'static str = Box::leak("x".repeat(LINE_BYTES_MAX + 10).into_boxed_str());
        let (conn, _) = fake_driver(long);
        let err = conn.outcome(1).await.unwrap_err();
        assert!(err.contains("past the protocol's"), "{err}");
    }
}
