//! Which session a node belongs to. A released library's lock runs on the driver's own
//! session (Kazoo's `KazooClient`), while the client's events are recorded under its
//! recording session; a kept driver process and a warm-up run before shift both ids. The
//! report of a node that outlived its attempt names the session the proxy saw create the
//! node, which owns it at the server, and the session the client's events are under.

use super::{LOCK_PATH, driver, given_up_at};
use crate::common::check_run_shaped;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zklock_real::driver::DriverKind;
use zklock_real::driver::DriverRecipe;
use zklock_real::driver::pool::DriverPool;
use zklock_real::faults::FaultConfig;
use zklock_real::harness::ServerOptions;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::servers::Servers;
use zklock_real::workload::{RealRun, WorkloadConfig, run_recipe};
use zklock_recipe::history::EventKind;

/// A deadline only a hang reaches.
const KEPT_WAIT: Duration = Duration::from_secs(120);

/// Waits until every process of `pool` is reset and at least `clients` are idle.
async fn kept(pool: &DriverPool, clients: usize) {
    let deadline = Instant::now() + KEPT_WAIT;
    while pool.resetting() > 0 || pool.idle() < clients {
        assert!(
            Instant::now() < deadline,
            "{} of {clients} processes kept",
            pool.idle()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A run of `config` with `faults` on drivers of `kind` kept in `pool`.
async fn pooled(
    servers: Servers,
    kind: DriverKind,
    pool: &Arc<DriverPool>,
    config: &WorkloadConfig,
    faults: &FaultConfig,
) -> RealRun {
    let recipe = DriverRecipe::prepare(kind)
        .unwrap()
        .with_pool(Arc::clone(pool));
    let status = recipe.status();
    let run = run_recipe(servers, config, faults, recipe).await.unwrap();
    assert_eq!(status.failure(), None, "the driver failed");
    run
}

/// Kazoo's lock as a search with kept drivers runs a point: a fault-free warm-up run,
/// then the kazoo#732 point (client 0's acquire given up at its create, and its cleanup's
/// delete dropped with its connection) on the processes the warm-up left. The node
/// outlives its attempt for certain; the report names its owner as the session the
/// proxy recorded for its create, a driver session no recording client has, and the
/// recording session every event of client 0 is under.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaked_nodes_report_names_its_drivers_session_and_the_clients_recording_session() {
    let kind = DriverKind::KazooLock;
    if driver(kind).is_none() {
        return;
    }
    let (mut config, mut faults) = given_up_at("create", &format!("{LOCK_PATH}/"));
    // As in the kazoo#732 test beside it (drivers.rs): the given-up attempt is the
    // client's last, and the session timeout outlasts the hold.
    config.attempts_per_client = 1;
    config.session_timeout_ms = 6_000;
    config.leak_bound_ms = 3_000;
    faults.aimed.push((
        0,
        AimedFault::new(
            op::by_name("delete").unwrap(),
            format!("{LOCK_PATH}/"),
            AimedAction::DropRequest,
        ),
    ));
    let clients = config.clients as usize;
    let pool = Arc::new(DriverPool::default());
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    // The warm-up, under a lock path of its own, as `--warm-up-runs` does.
    let mut warm = config.clone();
    warm.lock_path = format!("{LOCK_PATH}-warm-up");
    let warm_run = pooled(servers, kind, &pool, &warm, &FaultConfig::default()).await;
    let servers = warm_run.servers;
    kept(&pool, clients).await;
    let run = pooled(servers, kind, &pool, &config, &faults).await;
    assert!(
        pool.reused() >= clients as u64,
        "the point's run opened its sessions on {} kept processes",
        pool.reused()
    );
    assert_eq!(
        run.aimed_strikes, 2,
        "the give-up and the drop did not both strike"
    );

    let judged = check_run_shaped(&run);
    let verdict = judged.report.verdict("node_outlives_attempt").unwrap();
    let violation = verdict
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("the leaked node was not flagged:\n{}", judged.report));
    let nodes = &run.nodes.as_ref().expect("the proxies saw the nodes").nodes;
    let node = (nodes.iter())
        .find(|n| n.client == 0 && violation.summary.contains(&format!("node {} ", n.path)))
        .unwrap_or_else(|| panic!("no node of client 0 in {}", violation.summary));

    // Every event of client 0 is under one session: its recording session.
    let mut recording = run.history.events.iter().filter(|e| e.client == 0);
    let events_session = recording.next().expect("client 0 recorded events").session;
    assert!(recording.all(|e| e.session == events_session));
    assert!(
        (run.history.events.iter()).any(|e| e.client == 0
            && e.session == events_session
            && matches!(e.kind, EventKind::AcquireInvoked { .. })),
        "client 0's acquire was not recorded under {events_session}"
    );
    // The node's owner, as the proxy read it from the server's ConnectResponse on the
    // connection its create came in on, is the driver's session: no client records
    // under it.
    assert_ne!(node.session, events_session);
    assert!(
        !(run.history.events.iter()).any(|e| e.session == node.session),
        "events recorded under the driver's session {}",
        node.session
    );
    let expected = format!(
        "node {} of client 0 (session {}, the library's own; the client's events are under \
         session {events_session})",
        node.path, node.session
    );
    assert!(
        violation.summary.contains(&expected),
        "expected {expected:?} in {:?}",
        violation.summary
    );
}
