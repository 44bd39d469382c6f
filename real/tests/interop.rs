//! Interop on one lock path of one real server: the shipped recipe against Kazoo's Lock (a
//! Python child process running `kazoo_lock.py`), and against zookeeper-client's own
//! Curator-prefix `Client::lock`. Each side records its holds on one clock and the checker
//! judges the merged history: no overlap, grants in sequence order, no node left.
//!
//! Kazoo reports `time.monotonic()`, which is CLOCK_MONOTONIC, as is Rust's `Instant` on
//! Linux; the run's clock is put on it by reading both at one instant.
//!
//! Needs Java, ZooKeeper and python3-kazoo (`apt-get install -y zookeeper python3-kazoo`);
//! without them each test prints "skipping: ..." and passes, except under `CI=true`.

use crate::common::{assert_ok, check, kazoo_python, zookeeper_available};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;
use tokio::task::block_in_place;
use zklock_real::ZkClient;
use zklock_real::harness::TestServer;
use zklock_real::recorder::Recorder;
use zklock_real::recording::RecordingClient;
use zklock_real::workload::settled_children;
use zklock_recipe::SessionId;
use zklock_recipe::history::{AcquireMode, Event, EventKind, History, LockRole};
use zklock_recipe::lock::{Lock, LockOptions};
use zookeeper_client as zk;

const SESSION_MS: u64 = 5_000;
const CONNECT_MS: u64 = 10_000;
/// Bound for anything that should happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(120);
/// Holds per contender.
const ITERATIONS: u32 = 12;
/// Time in each hold.
const HOLD_MS: u64 = 20;

const BLOCKING: EventKind = EventKind::AcquireInvoked {
    role: LockRole::Exclusive,
    mode: AcquireMode::Blocking,
    lock: None,
};

/// Kazoo's process; killed (and reaped) on drop, panics included.
struct KazooProcess {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for KazooProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl KazooProcess {
    fn start(python: &Path, hosts: &str, path: &str) -> KazooProcess {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kazoo_lock.py");
        let mut child = Command::new(python)
            .arg(&script)
            .args([hosts, path, &ITERATIONS.to_string(), &HOLD_MS.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        KazooProcess { child, lines }
    }

    /// The next line; panics if none comes in time (Kazoo hung or died).
    fn next_line(&self) -> String {
        block_in_place(|| self.lines.recv_timeout(SOON))
            .expect("Kazoo printed its next line in time")
    }
}

/// The offset to subtract from a CLOCK_MONOTONIC reading, in µs, to get the run's time.
fn monotonic_offset_us(recorder: &Recorder) -> i128 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let run_us = recorder.now_us();
    let mono_us = i128::from(ts.tv_sec) * 1_000_000 + i128::from(ts.tv_nsec) / 1_000;
    mono_us - i128::from(run_us)
}

/// Kazoo's lines as history events of `client`.
fn kazoo_events(lines: &[String], client: u32, path: &str, offset_us: i128) -> Vec<Event> {
    let session = SessionId(i64::from(client) << 32);
    lines
        .iter()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let secs: f64 = fields.get(1)?.parse().ok()?;
            let time_us = u64::try_from((secs * 1e6) as i128 - offset_us).unwrap_or(0);
            let kind = match fields[0] {
                "INV" => BLOCKING,
                "ACQ" => EventKind::Acquired {
                    node: format!("{path}/{}", fields.get(2)?),
                    token: fields.get(3)?.parse().ok()?,
                },
                "REL" => EventKind::ReleaseInvoked,
                "RELEASED" => EventKind::Released,
                "DONE" => EventKind::Done,
                _ => return None,
            };
            Some(Event {
                time_us,
                client,
                session,
                kind,
            })
        })
        .collect()
}

/// Both histories in one, in time order (each is already in order).
fn merge(mut events: Vec<Event>, other: Vec<Event>) -> History {
    events.extend(other);
    events.sort_by_key(|e| e.time_us);
    History { events }
}

/// Acquisitions by `side` clients whose wait overlapped a hold of the other side: proof
/// that each side really waited for the other.
fn waited_for_other_side(history: &History, side: impl Fn(u32) -> bool) -> usize {
    let mut holds: Vec<(u32, u64, u64)> = Vec::new();
    let mut open: std::collections::BTreeMap<u32, u64> = Default::default();
    let mut waits: Vec<(u32, u64, u64)> = Vec::new();
    let mut waiting: std::collections::BTreeMap<u32, u64> = Default::default();
    for e in &history.events {
        match e.kind {
            EventKind::AcquireInvoked { .. } => {
                waiting.insert(e.client, e.time_us);
            }
            EventKind::Acquired { .. } => {
                if let Some(since) = waiting.remove(&e.client) {
                    waits.push((e.client, since, e.time_us));
                }
                open.insert(e.client, e.time_us);
            }
            EventKind::ReleaseInvoked => {
                if let Some(since) = open.remove(&e.client) {
                    holds.push((e.client, since, e.time_us));
                }
            }
            _ => {}
        }
    }
    waits
        .iter()
        .filter(|(c, from, to)| {
            side(*c)
                && holds
                    .iter()
                    .any(|(h, s, e)| side(*h) != side(*c) && s < to && e > from)
        })
        .count()
}

async fn recording(addr: &str, index: u32, recorder: &Arc<Recorder>) -> RecordingClient {
    let zk = ZkClient::connect(addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    RecordingClient::new(Arc::new(zk), index, Arc::clone(recorder))
}

/// One shipped-recipe contender: `ITERATIONS` holds of `HOLD_MS`, recorded.
async fn shipped_contender(client: RecordingClient, path: &'static str) {
    let lock = Lock::new(client.clone(), path, LockOptions::default()).unwrap();
    for _ in 0..ITERATIONS {
        client.record(BLOCKING);
        let guard = lock.acquire().await.expect("the shipped recipe acquires");
        client.record(EventKind::Acquired {
            token: guard.fencing_token().0,
            node: guard.path().to_owned(),
        });
        tokio::time::sleep(Duration::from_millis(HOLD_MS)).await;
        client.record(EventKind::ReleaseInvoked);
        guard.release().await.expect("release");
        client.record(EventKind::Released);
    }
    client.record(EventKind::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_and_the_shipped_recipe_exclude_each_other() {
    if !zookeeper_available() {
        return;
    }
    let Some(python) = kazoo_python() else {
        return;
    };
    const PATH: &str = "/interop/kazoo";
    const KAZOO: u32 = 100;
    let server = block_in_place(TestServer::start).unwrap();
    let recorder = Arc::new(Recorder::default());
    let offset_us = monotonic_offset_us(&recorder);
    let kazoo = KazooProcess::start(&python, &server.connect_string(), PATH);
    let ready = kazoo.next_line();
    assert!(ready.starts_with("READY"), "Kazoo said {ready:?}");

    let mut ours = Vec::new();
    for i in 0..2 {
        let client = recording(&server.connect_string(), i, &recorder).await;
        ours.push(tokio::spawn(shipped_contender(client, PATH)));
    }
    let mut lines = Vec::new();
    loop {
        let line = kazoo.next_line();
        let done = line.starts_with("DONE");
        lines.push(line);
        if done {
            break;
        }
    }
    for task in ours {
        tokio::time::timeout(SOON, task).await.unwrap().unwrap();
    }
    let observer = recording(&server.connect_string(), 99, &Arc::new(Recorder::default())).await;
    let left = settled_children(&observer, PATH, SOON).await;

    let history = merge(
        recorder.history().events,
        kazoo_events(&lines, KAZOO, PATH, offset_us),
    );
    let judged = check(&history, PATH, left.clone(), 0, SOON.as_millis() as u64);
    eprintln!("{}", judged.report);
    assert_ok(&judged);
    let report = &judged.report;
    assert_eq!(
        report.counters.acquisitions,
        u64::from(3 * ITERATIONS),
        "every hold of both sides is in the history"
    );
    assert_eq!(left, Vec::<String>::new(), "no node left");
    let kazoo_waited = waited_for_other_side(&judged.history, |c| c == KAZOO);
    let we_waited = waited_for_other_side(&judged.history, |c| c != KAZOO);
    eprintln!("Kazoo waited for us {kazoo_waited} times, we for Kazoo {we_waited} times");
    assert!(
        kazoo_waited > 0 && we_waited > 0,
        "each side must have waited for the other (Kazoo {kazoo_waited}, us {we_waited})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_curator_lock_and_the_shipped_recipe_exclude_each_other() {
    if !zookeeper_available() {
        return;
    }
    const PATH: &str = "/interop/curator";
    let server = block_in_place(TestServer::start).unwrap();
    let recorder = Arc::new(Recorder::default());
    let mut tasks = Vec::new();
    for i in 0..2 {
        let client = recording(&server.connect_string(), i, &recorder).await;
        tasks.push(tokio::spawn(shipped_contender(client, PATH)));
    }
    for i in 10..12 {
        let raw = zk::Client::connect(&server.connect_string()).await.unwrap();
        let recorder = Arc::clone(&recorder);
        tasks.push(tokio::spawn(async move {
            let session = SessionId(raw.session_id().0);
            for _ in 0..ITERATIONS {
                recorder.record(i, session, BLOCKING);
                let prefix = zk::LockPrefix::new_curator(PATH, "lock-").unwrap();
                let options = zk::LockOptions::new(zk::Acls::anyone_all())
                    .with_ancestor_options(
                        zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
                    )
                    .unwrap();
                let held = raw.lock(prefix, b"", options).await.expect("Client::lock");
                let stat = raw.check_stat(held.lock_path()).await.unwrap().unwrap();
                recorder.record(
                    i,
                    session,
                    EventKind::Acquired {
                        token: stat.czxid,
                        node: held.lock_path().to_owned(),
                    },
                );
                tokio::time::sleep(Duration::from_millis(HOLD_MS)).await;
                recorder.record(i, session, EventKind::ReleaseInvoked);
                // zookeeper-client deletes the node in the background when the guard drops;
                // the hold (our belief) ended above.
                drop(held);
                recorder.record(i, session, EventKind::Released);
            }
            recorder.record(i, session, EventKind::Done);
        }));
    }
    for task in tasks {
        tokio::time::timeout(SOON, task).await.unwrap().unwrap();
    }
    let observer = recording(&server.connect_string(), 99, &Arc::new(Recorder::default())).await;
    let left = settled_children(&observer, PATH, SOON).await;
    let history = recorder.history();
    let judged = check(&history, PATH, left.clone(), 0, SOON.as_millis() as u64);
    eprintln!("{}", judged.report);
    assert_ok(&judged);
    let report = &judged.report;
    assert_eq!(report.counters.acquisitions, u64::from(4 * ITERATIONS));
    assert_eq!(left, Vec::<String>::new(), "no node left");
    let theirs = |c: u32| c >= 10;
    let they_waited = waited_for_other_side(&judged.history, theirs);
    let we_waited = waited_for_other_side(&judged.history, |c| !theirs(c));
    eprintln!("zookeeper-client waited for us {they_waited} times, we for it {we_waited} times");
    assert!(they_waited > 0 && we_waited > 0);
}
