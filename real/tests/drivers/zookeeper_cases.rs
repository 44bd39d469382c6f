//! ZooKeeper's own contrib lock, `org.apache.zookeeper.recipes.lock.WriteLock`
//! (zookeeper-recipes-lock 3.8.0, Debian's `libzookeeper-java`), through its driver
//! (`drivers/zookeeper/ZklockZookeeperDriver.java`): the protocol's cases spoken to driver
//! processes on a real server, a fault-free contended run, and the schedule a lost create
//! reply makes. Needs Java, `javac` and the jar; without them a test prints "skipping: ..."
//! and passes, except under `CI=true`.

use super::{LOCK_PATH, aimed_at_first, driver, run, workload};
use crate::common::{assert_ok, check_run_shaped};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;
use zklock_real::driver::DriverKind;
use zklock_real::driver::locate::{self, Launcher};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::ServerOptions;
use zklock_real::proxy::AimedAction;
use zklock_real::servers::Servers;
use zklock_recipe::history::{EventKind, History};

const KIND: DriverKind = DriverKind::ZookeeperWriteLock;

/// A deadline only a hang reaches: a JVM's start on a loaded machine is slow.
const REPORT_WAIT: Duration = Duration::from_secs(120);

/// One driver process, spoken to line by line.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    reports: Receiver<Value>,
}

impl Driver {
    fn start(connect: &str) -> Driver {
        let Ok(Launcher::Java {
            java,
            classpath,
            archive,
        }) = Launcher::prepare(KIND)
        else {
            panic!("ZooKeeper's WriteLock driver runs in a JVM");
        };
        let mut command = Command::new(java);
        command.args(locate::JVM_OPTIONS);
        if let Some(archive) = archive {
            command.arg(format!("-XX:SharedArchiveFile={}", archive.display()));
        }
        let mut child = command
            .args(["-cp", &classpath, "ZklockZookeeperDriver", "writelock"])
            .args([connect, LOCK_PATH, "4000"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("java runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, reports) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let report: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON report ({e}): {line}"));
                if tx.send(report).is_err() {
                    break;
                }
            }
        });
        Driver {
            child,
            stdin,
            reports,
        }
    }

    fn send(&mut self, request: &str) {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next report that is not a session change.
    fn next(&self) -> Value {
        loop {
            let report = self
                .reports
                .recv_timeout(REPORT_WAIT)
                .expect("a report before the deadline");
            if report["event"] != "session" {
                return report;
            }
        }
    }

    fn acquire(&mut self, id: u64, mode: &str, timeout_ms: u64) -> Value {
        self.send(&format!(
            r#"{{"op":"acquire","id":{id},"mode":"{mode}","timeout_ms":{timeout_ms},"object":"same"}}"#
        ));
        self.next()
    }

    fn release(&mut self, id: u64) -> Value {
        self.send(&format!(r#"{{"op":"release","id":{id}}}"#));
        self.next()
    }
}

impl Drop for Driver {
    /// Closes its session and waits for it to exit; one that has not exited by a deadline
    /// only a hang reaches is killed (a test never leaves one running).
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, r#"{{"op":"close"}}"#);
        let _ = self.stdin.flush();
        let deadline = std::time::Instant::now() + REPORT_WAIT;
        while std::time::Instant::now() < deadline {
            if self.child.try_wait().is_ok_and(|s| s.is_some()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_hello(hello: &Value) -> u64 {
    assert_eq!(hello["event"], "hello", "{hello}");
    assert_eq!(hello["protocol"], 3, "{hello}");
    assert_eq!(hello["library"], "zookeeper-recipes-lock", "{hello}");
    assert_eq!(hello["lock"], "WriteLock", "{hello}");
    assert!(
        hello["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.")),
        "{hello}"
    );
    hello["session_id"].as_u64().filter(|&s| s != 0).unwrap()
}

fn assert_acquired(report: &Value, id: u64, session: u64) {
    assert_eq!(report["event"], "acquired", "{report}");
    assert_eq!(report["id"], id, "{report}");
    assert!(report["token"].as_i64().unwrap() > 0, "{report}");
    // WriteLock names its nodes by its session: `x-<sessionId>-<seq>`.
    let node = report["node"].as_str().unwrap();
    assert!(node.starts_with(&format!("x-{session}-")), "{report}");
}

fn outcome(report: &Value, event: &str, id: u64, reason: &str) {
    assert_eq!(report["event"], event, "{report}");
    assert_eq!(report["id"], id, "{report}");
    assert_eq!(report["reason"], reason, "{report}");
}

/// The protocol's cases, on one server: hello; acquire and release; a try, a timed acquire
/// and a cancelled blocking acquire while another driver holds; reset and open. The
/// second driver is closed (its session, and any node a cancel left, gone with it) before
/// the first one's session ends: a cancel that meets WriteLock mid-create leaves a node
/// it cannot withdraw (docs/libraries.md), and this test pins no timing.
#[test]
fn zookeepers_writelock_driver_speaks_the_protocol() {
    if driver(KIND).is_none() {
        return;
    }
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    let connect = servers.connect_string();
    let mut a = Driver::start(&connect);
    let a_session = assert_hello(&a.next());
    let mut b = Driver::start(&connect);
    assert_hello(&b.next());

    assert_acquired(&a.acquire(1, "blocking", 0), 1, a_session);
    assert_eq!(a.release(1)["event"], "released");
    assert_acquired(&a.acquire(2, "blocking", 0), 2, a_session);
    outcome(&b.acquire(1, "try", 0), "not_acquired", 1, "held");
    outcome(&b.acquire(2, "timed", 300), "not_acquired", 2, "timeout");
    b.send(r#"{"op":"acquire","id":3,"mode":"blocking","timeout_ms":0,"object":"same"}"#);
    b.send(r#"{"op":"cancel","id":3}"#);
    outcome(&b.next(), "not_acquired", 3, "cancelled");
    drop(b);
    assert_eq!(a.release(2)["event"], "released");

    a.send(r#"{"op":"reset"}"#);
    assert_eq!(a.next()["event"], "reset");
    let e = a.acquire(3, "try", 0);
    assert_eq!(e["event"], "error", "{e}");
    a.send(&format!(
        r#"{{"op":"open","kind":"writelock","connect":"{connect}","lock_path":"{LOCK_PATH}","session_timeout_ms":4000}}"#
    ));
    let reopened = assert_hello(&a.next());
    assert_ne!(reopened, a_session, "a new session after the open");
    assert_acquired(&a.acquire(1, "try", 0), 1, reopened);
    assert_eq!(a.release(1)["event"], "released");
}

/// WriteLock 3.8.0 joins the queue again on its own after a try that found the lock held:
/// the try's `lock()` left a watch on its predecessor, and `unlock()`, which withdrew the
/// try's node, leaves the watch. When the holder releases, the watch fires and `lock()`
/// runs again, makes a node for nobody and takes the lock: a node of the second driver's
/// session appears while it has no request under way, and the first driver's next try
/// finds the lock held. Certain: it waits for that node (a deadline only a hang reaches).
#[test]
fn zookeepers_writelock_joins_the_queue_again_after_a_withdrawn_try() {
    use zklock_recipe::Coordination;
    if driver(KIND).is_none() {
        return;
    }
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    let connect = servers.connect_string();
    let mut a = Driver::start(&connect);
    let a_session = assert_hello(&a.next());
    let mut b = Driver::start(&connect);
    let b_session = assert_hello(&b.next());
    assert_acquired(&a.acquire(1, "blocking", 0), 1, a_session);
    outcome(&b.acquire(1, "try", 0), "not_acquired", 1, "held");
    assert_eq!(a.release(1)["event"], "released");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let made_for_nobody = runtime.block_on(async {
        let zk = zklock_real::ZkClient::connect(&connect, 4_000, 10_000)
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + REPORT_WAIT;
        let prefix = format!("x-{b_session}-");
        loop {
            let children = zk.get_children(LOCK_PATH).await.unwrap();
            if let Some(node) = children.iter().find(|c| c.starts_with(&prefix)) {
                return node.to_owned();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no node of the withdrawn try's session appeared"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let held = a.acquire(2, "try", 0);
    outcome(&held, "not_acquired", 2, "held");
    // b's own next acquire takes the node it made for nobody.
    let taken = b.acquire(2, "try", 0);
    assert_acquired(&taken, 2, b_session);
    assert_eq!(taken["node"], made_for_nobody.as_str(), "{taken}");
}

/// A run without faults and without contention, under the same workload and checker as
/// every lock: one client, none of its acquires dropped. WriteLock 3.8.0 has no contended
/// or give-up-free schedule that is certain to pass: a waiter whose predecessor goes
/// between its listing and its `exists` returns without a watch and waits for ever, and
/// an acquire given up mid-create leaves a node (the tests below, docs/libraries.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeepers_writelock_passes_a_fault_free_run_of_one_client() {
    let Some(recipe) = driver(KIND) else {
        return;
    };
    let status = recipe.status();
    let mut config = workload(crate::common::until_counters(|c| c.acquisitions >= 20));
    config.clients = 1;
    config.drop_every = 0;
    let run = run(recipe, &config, &FaultConfig::default()).await.unwrap();
    assert_eq!(status.failure(), None, "the driver failed");
    let judged = crate::common::check_run(&run);
    assert!(
        judged.report.counters.acquisitions >= 20,
        "{}",
        judged.report
    );
    assert_ok(&judged);
}

/// The script of the tests below: one client, none of its acquires dropped, which passes
/// without a fault (above), so that a stuck lock is the fault's doing.
fn alone() -> zklock_real::workload::WorkloadConfig {
    let mut config = workload(None);
    config.clients = 1;
    config.drop_every = 0;
    config.session_timeout_ms = 4_000;
    config
}

/// Runs WriteLock alone ([`alone`]) with client 0's first `op_name` request under the lock
/// directory met by `action`, until it has waited past the liveness bound after the fault
/// struck (a hang alone reaches the run's deadline): the checker must flag the stuck lock
/// (`liveness_after_heal`), and the shipped lock must pass the same schedule.
async fn stuck_after(op_name: &str, action: AimedAction) {
    let Some(recipe) = driver(KIND) else {
        return;
    };
    let faults = || {
        let mut faults = aimed_at_first(op_name, action);
        faults.record_requests = true;
        faults
    };
    let mut config = alone();
    config.until = Some(zklock_real::workload::RunGoal::new(|h, facts| {
        a_waiter_is_stuck_after_the_fault(h, facts.liveness_bound_ms, facts.run_end_us)
    }));
    let stuck = run(recipe, &config, &faults()).await.unwrap();
    assert!(struck(&stuck.history), "the fault never struck");
    let judged = check_run_shaped(&stuck);
    assert!(
        judged.report.violated().contains(&"liveness_after_heal"),
        "the stuck lock was not flagged:\n{}",
        judged.report
    );
    let mut shipped_config = alone();
    shipped_config.until = crate::common::until_counters(|c| c.acquisitions >= 20);
    let shipped = run(
        zklock_real::workload::ShippedRealRecipe::default(),
        &shipped_config,
        &faults(),
    )
    .await
    .unwrap();
    assert!(
        struck(&shipped.history),
        "the fault never struck the shipped lock"
    );
    assert_ok(&check_run_shaped(&shipped));
}

/// Whether the aimed fault struck: a connection cut, or an acquire given up.
fn struck(history: &History) -> bool {
    history.events.iter().any(|e| match &e.kind {
        EventKind::Fault { .. } => true,
        EventKind::AcquireFailed { reason } => reason == "given up",
        _ => false,
    })
}

/// Whether the aimed fault struck and a waiter has waited past the liveness bound.
fn a_waiter_is_stuck_after_the_fault(history: &History, bound_ms: u64, now_us: u64) -> bool {
    struck(history) && super::a_waiter_is_stuck(history, bound_ms, now_us)
}

/// WriteLock 3.8.0, its acquire given up (an interrupt, how a Java caller gives up a
/// blocking call) while its create is under way: the create is applied, but `lock()` ends
/// before it learns the node's name, so `unlock()` has nothing to delete. The node stays
/// with the live session, every contender waits behind it, and the next `lock()` of the
/// same client finds it by its session's prefix, by its bare name, and waits behind it
/// too (as after a lost create reply, below). Certain, at that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeepers_writelock_is_stuck_after_an_acquire_given_up_mid_create() {
    stuck_after("create", AimedAction::GiveUp).await;
}

/// WriteLock 3.8.0 after a lost create reply: the reply to client 0's first create under
/// the lock directory is withheld and its connection cut, so the create is applied and
/// the library sees ConnectionLoss. Its retry finds its node by its session's prefix
/// (`findPrefixInChildren`), but keeps the node's bare name where it keeps a path after a
/// create: it then sorts its own node before itself, watches it, and waits behind it for
/// ever, as would every other client behind that node, which its live session keeps.
/// Certain, at that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeepers_writelock_is_stuck_after_a_lost_create_reply() {
    stuck_after("create", AimedAction::WithholdReply).await;
}

/// WriteLock 3.8.0 after a dropped delete: client 0's first delete under the lock
/// directory (its first release's) is dropped with its connection. `unlock()` throws and
/// forgets its node, which stays with the session (it reconnects and lives); the next
/// `lock()` finds the node again by its session's prefix, by its bare name, and waits
/// behind it as after a lost create reply. Certain, at that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeepers_writelock_is_stuck_after_a_dropped_delete() {
    stuck_after("delete", AimedAction::DropRequest).await;
}
