//! zklock-real against real ZooKeeper servers that each test starts and stops itself.
//!
//! Needs Java and ZooKeeper (`apt-get install -y zookeeper`). Without them every test that
//! needs a server prints "skipping: ..." and passes, except under `CI=true`, where it fails
//! with the install instructions.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::block_in_place;
use tokio::time::timeout;
use zklock_real::faults::ClientLink;
use zklock_real::harness::{self, TestCluster, TestServer};
use zklock_real::process::{Pausable, ProcessControl};
use zklock_real::proxy::Proxy;
use zklock_real::recorder::Recorder;
use zklock_real::{RealError, ZkClient};
use zklock_recipe::history::{EventKind, FaultKind};
use zklock_recipe::{
    Coordination, CreateMode, EventType, Lock, LockOptions, Op, OpResult, SessionEvents,
    SessionState, WatchedEvent, ZkError,
};

/// Session timeout of ordinary test clients.
const SESSION_MS: u64 = 5_000;
/// How long connecting may take.
const CONNECT_MS: u64 = 10_000;
/// Generous bound for anything that should happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(120);

macro_rules! require_zookeeper {
    () => {
        if !harness::available_for_tests() {
            return;
        }
    };
}

fn start_server() -> TestServer {
    block_in_place(TestServer::start).expect("ZooKeeper server starts")
}

async fn connect(addr: &str) -> ZkClient {
    connect_with(addr, SESSION_MS).await
}

async fn connect_with(addr: &str, session_ms: u64) -> ZkClient {
    ZkClient::connect(addr, session_ms, CONNECT_MS)
        .await
        .expect("client connects")
}

/// Reads session events until `wanted`; panics with what it saw if it does not come.
async fn expect_state(events: &mut SessionEvents, wanted: SessionState, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(state)) if state == wanted => return,
            Ok(Some(state)) => seen.push(state),
            Ok(None) => panic!("session events ended before {wanted:?}; saw {seen:?}"),
            Err(_) => panic!("no {wanted:?} within {within:?}; saw {seen:?}"),
        }
    }
}

/// Retries `op` while it fails with connection loss (as during a leader election).
async fn retry<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let deadline = Instant::now() + SOON * 2;
    loop {
        match op().await {
            Ok(value) => return value,
            Err(e) if e.is_connection_loss() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

fn event(event_type: EventType, path: &str) -> WatchedEvent {
    WatchedEvent {
        event_type,
        path: path.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trip_through_coordination_with_stats() {
    require_zookeeper!();
    let server = start_server();
    let c = connect(&server.connect_string()).await;
    assert_eq!(c.session_state(), SessionState::Connected);
    assert_ne!(c.session_id().0, 0);

    let (path, stat) = c
        .create("/app", b"v1", CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(path, "/app");
    assert!(stat.czxid > 0);
    assert_eq!((stat.mzxid, stat.pzxid), (stat.czxid, stat.czxid));
    assert_eq!((stat.version, stat.cversion, stat.data_length), (0, 0, 2));
    assert_eq!((stat.ephemeral_owner, stat.num_children), (0, 0));
    assert_eq!(c.get_data("/app").await.unwrap(), (b"v1".to_vec(), stat));

    let changed = c.set_data("/app", b"v22", Some(0)).await.unwrap();
    assert_eq!((changed.version, changed.data_length), (1, 3));
    assert!(changed.mzxid > stat.mzxid);
    assert_eq!(changed.czxid, stat.czxid);
    assert_eq!(
        c.set_data("/app", b"x", Some(0)).await,
        Err(ZkError::BadVersion)
    );

    let (first, _) = c
        .create("/app/seq-", b"", CreateMode::PersistentSequential)
        .await
        .unwrap();
    let (second, _) = c
        .create("/app/seq-", b"", CreateMode::PersistentSequential)
        .await
        .unwrap();
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("/app/seq-0000000000", "/app/seq-0000000001")
    );
    let (eph, eph_stat) = c
        .create("/app/eph", b"e", CreateMode::Ephemeral)
        .await
        .unwrap();
    assert_eq!(eph_stat.ephemeral_owner, c.session_id().0);
    let (eseq, _) = c
        .create("/app/e-", b"", CreateMode::EphemeralSequential)
        .await
        .unwrap();
    assert_eq!(
        eseq, "/app/e-0000000003",
        "the suffix is the parent's cversion"
    );

    assert_eq!(
        c.create("/app", b"", CreateMode::Persistent).await,
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        c.create("/none/x", b"", CreateMode::Persistent).await,
        Err(ZkError::NoNode)
    );
    assert_eq!(
        c.create("/app/eph/child", b"", CreateMode::Persistent)
            .await,
        Err(ZkError::NoChildrenForEphemerals)
    );
    assert!(matches!(
        c.create("no-slash", b"", CreateMode::Persistent).await,
        Err(ZkError::BadArguments(_))
    ));

    let mut children = c.get_children("/app").await.unwrap();
    children.sort();
    assert_eq!(
        children,
        ["e-0000000003", "eph", "seq-0000000000", "seq-0000000001"]
    );
    let parent = c.exists("/app").await.unwrap().expect("/app exists");
    assert_eq!((parent.num_children, parent.cversion), (4, 4));
    assert!(parent.pzxid > parent.czxid);
    assert_eq!(c.get_children("/none").await, Err(ZkError::NoNode));

    assert_eq!(c.delete("/app", None).await, Err(ZkError::NotEmpty));
    assert_eq!(c.delete(&eph, Some(7)).await, Err(ZkError::BadVersion));
    c.delete(&eph, Some(0)).await.unwrap();
    assert_eq!(c.exists(&eph).await, Ok(None));
    assert_eq!(c.delete(&eph, None).await, Err(ZkError::NoNode));
    assert_eq!(c.get_data(&eph).await, Err(ZkError::NoNode));

    let results = c
        .multi(vec![
            Op::Check {
                path: "/app".into(),
                version: 1,
            },
            Op::Create {
                path: "/app/m".into(),
                data: b"m".to_vec(),
                mode: CreateMode::Persistent,
            },
            Op::SetData {
                path: "/app".into(),
                data: b"v3".to_vec(),
                version: Some(1),
            },
            Op::Delete {
                path: first.clone(),
                version: None,
            },
        ])
        .await
        .unwrap();
    assert!(matches!(results[0], OpResult::Check));
    assert!(matches!(&results[1], OpResult::Create { path, .. } if path == "/app/m"));
    assert!(matches!(results[2], OpResult::SetData { stat } if stat.version == 2));
    assert!(matches!(results[3], OpResult::Delete));
    assert_eq!(c.get_data("/app").await.unwrap().0, b"v3");

    let failed = c
        .multi(vec![
            Op::Create {
                path: "/app/n".into(),
                data: vec![],
                mode: CreateMode::Persistent,
            },
            Op::Delete {
                path: "/app/absent".into(),
                version: None,
            },
        ])
        .await;
    assert_eq!(
        failed,
        Err(ZkError::MultiFailed {
            index: 1,
            error: Box::new(ZkError::NoNode)
        })
    );
    assert_eq!(
        c.exists("/app/n").await,
        Ok(None),
        "a failed multi applies nothing"
    );

    let before = c.now();
    c.sleep(Duration::from_millis(20)).await;
    assert!(c.now() >= before + Duration::from_millis(20));
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_fire_node_deleted_and_more() {
    require_zookeeper!();
    let server = start_server();
    let writer = connect(&server.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    writer
        .create("/w", b"", CreateMode::Persistent)
        .await
        .unwrap();
    writer
        .create("/w/n", b"", CreateMode::Persistent)
        .await
        .unwrap();

    let (_, _, mut data_watch) = watcher.get_data_watch("/w/n").await.unwrap();
    let (stat, mut exists_watch) = watcher.exists_watch("/w/n").await.unwrap();
    assert!(stat.is_some());
    let (children, child_watch) = watcher.get_children_watch("/w").await.unwrap();
    assert_eq!(children, ["n"]);
    let (absent, created_watch) = watcher.exists_watch("/w/later").await.unwrap();
    assert_eq!(absent, None);
    assert!(data_watch.try_take().is_none(), "nothing happened yet");

    writer.delete("/w/n", None).await.unwrap();
    // ZooKeeper's ordering: the watcher's later reply comes after the event, so the event
    // must be visible by the time that reply is.
    assert_eq!(watcher.exists("/w/n").await, Ok(None));
    assert_eq!(
        data_watch.try_take(),
        Some(Ok(event(EventType::NodeDeleted, "/w/n")))
    );
    assert_eq!(
        exists_watch.try_take(),
        Some(Ok(event(EventType::NodeDeleted, "/w/n")))
    );
    let fired = timeout(SOON, child_watch).await.unwrap();
    assert_eq!(fired, Ok(event(EventType::NodeChildrenChanged, "/w")));

    writer
        .create("/w/later", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let fired = timeout(SOON, created_watch).await.unwrap();
    assert_eq!(fired, Ok(event(EventType::NodeCreated, "/w/later")));

    // A dropped watch is simply never fired; the live one next to it still is.
    let (_, _, abandoned) = watcher.get_data_watch("/w/later").await.unwrap();
    drop(abandoned);
    let (_, changed_watch) = watcher.exists_watch("/w/later").await.unwrap();
    writer.set_data("/w/later", b"x", None).await.unwrap();
    let fired = timeout(SOON, changed_watch).await.unwrap();
    assert_eq!(fired, Ok(event(EventType::NodeDataChanged, "/w/later")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemerals_vanish_when_the_session_closes() {
    require_zookeeper!();
    let server = start_server();
    let owner = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    owner
        .create("/e", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, watch) = owner.exists_watch("/e").await.unwrap();
    let (_, other_watch) = other.exists_watch("/e").await.unwrap();
    let mut events = owner.session_events();

    owner.close().await.unwrap();
    assert_eq!(owner.session_state(), SessionState::Closed);
    expect_state(&mut events, SessionState::Closed, SOON).await;
    assert_eq!(events.next().await, None, "Closed is final");
    // Real ZooKeeper deletes the ephemerals while the closing connection is still open, so
    // the owner's own watch fires NodeDeleted before the session ends (zklock's simulation
    // ends it with SessionClosed instead).
    assert_eq!(
        timeout(SOON, watch).await.unwrap(),
        Ok(event(EventType::NodeDeleted, "/e"))
    );
    assert_eq!(
        timeout(SOON, other_watch).await.unwrap(),
        Ok(event(EventType::NodeDeleted, "/e"))
    );
    assert_eq!(other.exists("/e").await, Ok(None));
    assert_eq!(owner.exists("/e").await, Err(ZkError::SessionClosed));
    assert_eq!(owner.close().await, Err(ZkError::SessionClosed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_expiry_is_seen_as_expired() {
    require_zookeeper!();
    let server = start_server();
    let victim = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    victim
        .create("/mine", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, watch) = victim.exists_watch("/mine").await.unwrap();
    let mut events = victim.session_events();

    let started = Instant::now();
    server.expire_session(&victim).await.expect("forced expiry");
    eprintln!("forced expiry took {:?}", started.elapsed());
    assert_eq!(victim.session_state(), SessionState::Expired);
    expect_state(&mut events, SessionState::Expired, SOON).await;
    // If the victim had taken its session back when the close came, the server deletes the
    // ephemeral while the victim is attached, and its own watch sees that first.
    let fired = timeout(SOON, watch).await.unwrap();
    assert!(
        fired == Err(ZkError::SessionExpired)
            || fired == Ok(event(EventType::NodeDeleted, "/mine")),
        "{fired:?}"
    );
    assert_eq!(victim.exists("/").await, Err(ZkError::SessionExpired));
    assert_eq!(
        other.exists("/mine").await,
        Ok(None),
        "the server deleted the ephemeral"
    );
    // Killing an already dead session succeeds.
    harness::kill_session(&server.connect_string(), victim.session_id(), SOON)
        .await
        .unwrap();
}

/// The window of a client-declared expiry (`AimedAction::Isolate`'s): the client is cut
/// off and declares its session expired on its own (zookeeper-client does, 1.4 session
/// timeouts after it last heard the server), while a keeper makes the server hold the
/// session and its ephemeral past the point a cut-off session would have expired; once
/// the keeper lets go, the server expires it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_session_outlives_its_clients_own_declaration_of_expiry() {
    require_zookeeper!();
    const TIMEOUT_MS: u64 = 2_000;
    let server = start_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = connect_with(&proxy.connect_string(), TIMEOUT_MS).await;
    let observer = connect(&server.connect_string()).await;
    client
        .create("/kept", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let session = client.session_id();
    let mut events = client.session_events();

    let cut_at = Instant::now();
    proxy.refuse_session_for(session.0, SOON);
    assert_eq!(proxy.cut_all(), 1);
    let keeper = harness::keep_session(&server.connect_string(), session, TIMEOUT_MS, SOON)
        .await
        .expect("the keeper attaches");
    expect_state(&mut events, SessionState::Expired, SOON).await;
    // Three timeouts after the cut: without the keeper the server would have expired it.
    let past = Duration::from_millis(3 * TIMEOUT_MS).saturating_sub(cut_at.elapsed());
    tokio::time::sleep(past).await;
    let stat = observer.exists("/kept").await.unwrap();
    assert_eq!(
        stat.map(|s| s.ephemeral_owner),
        Some(session.0),
        "the server still holds the session its client declared expired"
    );

    let (_, deleted) = observer.exists_watch("/kept").await.unwrap();
    keeper.release().await.expect("every ping was answered");
    proxy.lift_refusal(session.0);
    let fired = timeout(SOON, deleted).await.expect("the server expires it");
    assert_eq!(fired, Ok(event(EventType::NodeDeleted, "/kept")));
    // A session the server no longer holds cannot be kept.
    let gone = harness::keep_session(&server.connect_string(), session, TIMEOUT_MS, SOON).await;
    assert!(
        matches!(&gone, Err(RealError::KeepSession { reason, .. }) if reason.contains("no longer holds")),
        "{gone:?}"
    );
}

/// An aimed burst (`AimedAction::Burst`): the request is dropped, the connection cut, and
/// the client's next three connections each cut once its handshake came back; its
/// session lives throughout, and the fourth reconnect stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aimed_burst_cuts_each_reconnect_once_its_handshake_passed() {
    require_zookeeper!();
    let server = start_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    client
        .create("/burst", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let session = client.session_id();
    let mut events = client.session_events();
    let burst = zklock_real::proxy::AimedFault::new(
        zklock_real::proxy::op::by_name("exists").unwrap(),
        "/burst",
        zklock_real::proxy::AimedAction::Burst { cuts: 3 },
    );
    assert!(proxy.aim(burst));
    assert_eq!(client.exists("/burst").await, Err(ZkError::ConnectionLoss));
    for _ in 0..3 {
        expect_state(&mut events, SessionState::Connected, SOON).await;
        expect_state(&mut events, SessionState::Disconnected, SOON).await;
    }
    expect_state(&mut events, SessionState::Connected, SOON).await;
    assert_eq!(proxy.burst_cuts(), 3);
    let stat = retry("exists after the burst", || client.exists("/burst")).await;
    assert_eq!(stat.map(|s| s.ephemeral_owner), Some(session.0));
    assert_eq!(client.session_id(), session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_response_leaves_the_node_on_the_server() {
    require_zookeeper!();
    let server = start_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    let observer = connect(&server.connect_string()).await;
    observer
        .create("/locks", b"", CreateMode::Persistent)
        .await
        .unwrap();
    let mut events = client.session_events();

    proxy.lose_next_create_response();
    let outcome = client
        .create("/locks/lock-", b"", CreateMode::EphemeralSequential)
        .await;
    assert_eq!(outcome, Err(ZkError::ConnectionLoss));
    let lost = proxy.lost_replies();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].err, 0, "the server applied the create");

    // The orphan: on the server, owned by the client's (still live) session.
    let orphans = observer.get_children("/locks").await.unwrap();
    assert_eq!(orphans, ["lock-0000000000"]);
    let (_, stat) = observer.get_data("/locks/lock-0000000000").await.unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id().0);
    assert_eq!(stat.czxid, lost[0].zxid);

    expect_state(&mut events, SessionState::Connected, SOON).await;
    assert_eq!(
        client.get_children("/locks").await.unwrap(),
        ["lock-0000000000"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_cut_disconnects_and_the_session_resumes() {
    require_zookeeper!();
    let server = start_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    client
        .create("/keep", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let mut events = client.session_events();
    assert_eq!(proxy.cut_all(), 1);
    expect_state(&mut events, SessionState::Disconnected, SOON).await;
    expect_state(&mut events, SessionState::Connected, SOON).await;
    let stat = retry("exists after reconnect", || client.exists("/keep")).await;
    assert_eq!(stat.map(|s| s.ephemeral_owner), Some(client.session_id().0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_hole_makes_the_session_expire() {
    require_zookeeper!();
    let server = start_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = connect_with(&proxy.connect_string(), 1_000).await;
    let observer = connect(&server.connect_string()).await;
    client
        .create("/held", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, deleted) = observer.exists_watch("/held").await.unwrap();
    let mut events = client.session_events();

    let started = Instant::now();
    proxy.black_hole();
    expect_state(&mut events, SessionState::Disconnected, SOON).await;
    // The server hears nothing and expires the session, deleting its ephemeral.
    let fired = timeout(SOON, deleted)
        .await
        .expect("the server expired the session");
    assert_eq!(fired, Ok(event(EventType::NodeDeleted, "/held")));
    let expired_after = started.elapsed();
    assert!(
        expired_after >= Duration::from_millis(900),
        "expired after only {expired_after:?}"
    );
    proxy.heal();
    expect_state(&mut events, SessionState::Expired, SOON).await;
    assert_eq!(client.exists("/").await, Err(ZkError::SessionExpired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_expiry_leaves_the_old_session_to_the_server() {
    require_zookeeper!();
    let server = start_server();
    let link = ClientLink::start(&[server.addr()]).await.unwrap();
    let old = connect_with(&link.connect_string(), 2_000).await;
    let observer = connect(&server.connect_string()).await;
    old.create("/held", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, deleted) = observer.exists_watch("/held").await.unwrap();
    let (_, own_watch) = old.exists_watch("/held").await.unwrap();
    let mut events = old.session_events();

    let started = Instant::now();
    assert!(link.expire_locally(&old, Duration::from_secs(4)));
    // The client knows at once, and its pending watch fails.
    assert_eq!(old.session_state(), SessionState::Expired);
    expect_state(&mut events, SessionState::Expired, SOON).await;
    assert_eq!(old.exists("/").await, Err(ZkError::SessionExpired));
    let own = timeout(SOON, own_watch).await.expect("the watch fails");
    assert_eq!(own, Err(ZkError::SessionExpired));
    assert!(!link.expire_locally(&old, Duration::from_secs(4)), "twice");

    // The process's next session, through the same link, sees the old session's node.
    let new = connect_with(&link.connect_string(), 2_000).await;
    let (_, stat) = new.get_data("/held").await.unwrap();
    assert_eq!(stat.ephemeral_owner, old.session_id().0);
    // The server hears nothing more from the old session and expires it a timeout later.
    let fired = timeout(SOON, deleted)
        .await
        .expect("the server expired the old session");
    assert_eq!(fired, Ok(event(EventType::NodeDeleted, "/held")));
    let expired_after = started.elapsed();
    assert!(
        expired_after >= Duration::from_millis(1_800),
        "the server expired it after only {expired_after:?}"
    );
    assert_eq!(new.session_state(), SessionState::Connected);
}

/// A process that crashes while paused: its successor is neither paused nor held up by
/// the pause's held traffic, while the dead session stays off the server until it expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_crashed_in_a_pause_restarts_unpaused() {
    require_zookeeper!();
    let server = start_server();
    let link = Arc::new(ClientLink::start(&[server.addr()]).await.unwrap());
    let recorder = Arc::new(Recorder::default());
    let control = ProcessControl::new(0, Some(Arc::clone(&link)), Arc::clone(&recorder));
    let old = connect_with(&link.connect_string(), 2_000).await;
    old.create("/crashed", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    // A pause no test outlives: a new process held up by it would hang the test.
    control.pause_for(Duration::from_secs(3_600));
    assert!(link.proxies()[0].is_black_holed());

    assert!(control.crash(&old, Duration::ZERO));
    assert!(
        !control.crash(&old, Duration::ZERO),
        "a dead session crashes once"
    );
    assert!(
        !link.proxies()[0].is_black_holed(),
        "the pause's hold ended"
    );
    // Held up by the pause, the new process would wait an hour: SOON tells them apart
    // however loaded the machine.
    let new = timeout(SOON, connect_with(&link.connect_string(), 2_000))
        .await
        .expect("the new process connects: the pause's hold died with the old one");
    // A task of the new process runs: the pause died with the old one.
    let ran = timeout(SOON, Pausable::new(async {}, Arc::new(control))).await;
    assert!(ran.is_ok(), "the new process is still paused");
    let (_, stat) = new.get_data("/crashed").await.unwrap();
    assert_eq!(stat.ephemeral_owner, old.session_id().0, "its node stands");
    let history = recorder.history();
    assert!(matches!(
        history.events.last().map(|e| &e.kind),
        Some(EventKind::Fault {
            fault: FaultKind::Crash
        })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_keeps_the_session() {
    require_zookeeper!();
    let mut server = start_server();
    let client = connect_with(&server.connect_string(), 10_000).await;
    client
        .create("/survivor", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    let mut events = client.session_events();

    block_in_place(|| server.kill());
    assert!(!server.is_running());
    expect_state(&mut events, SessionState::Disconnected, SOON).await;
    assert_eq!(
        client.exists("/").await,
        Err(ZkError::ConnectionLoss),
        "fails fast while disconnected"
    );
    block_in_place(|| server.restart()).expect("restart");
    expect_state(&mut events, SessionState::Connected, SOON).await;
    let stat = retry("exists after restart", || client.exists("/survivor")).await;
    assert_eq!(stat.map(|s| s.ephemeral_owner), Some(client.session_id().0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_elects_a_new_leader_and_clients_keep_working() {
    require_zookeeper!();
    let started = Instant::now();
    let mut cluster = block_in_place(|| TestCluster::start(3)).expect("ensemble starts");
    eprintln!("ensemble serving after {:?}", started.elapsed());
    let leader = block_in_place(|| cluster.wait_for_leader(SOON)).unwrap();
    let client = connect(&cluster.connect_string()).await;
    client
        .create("/failover", b"before", CreateMode::Persistent)
        .await
        .unwrap();

    block_in_place(|| cluster.kill(leader));
    let new_leader = block_in_place(|| cluster.wait_for_leader(SOON * 2)).expect("re-election");
    assert_ne!(new_leader, leader);
    eprintln!(
        "leader {leader} killed, {new_leader} leads after {:?}",
        started.elapsed()
    );

    retry("set_data after failover", || {
        client.set_data("/failover", b"after", None)
    })
    .await;
    let (data, _) = retry("get_data after failover", || client.get_data("/failover")).await;
    assert_eq!(data, b"after");
    let fresh = connect(&cluster.connect_string()).await;
    assert_eq!(
        retry("a new client reads", || fresh.get_data("/failover"))
            .await
            .0,
        b"after"
    );

    block_in_place(|| cluster.restart(leader)).expect("the old leader rejoins");
    assert!(cluster.is_running(leader));
    let direct = connect(&cluster.server_connect_string(leader)).await;
    assert_eq!(
        retry("the rejoined server serves", || direct
            .get_data("/failover"))
        .await
        .0,
        b"after"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_forced_expiry() {
    require_zookeeper!();
    let cluster = block_in_place(|| TestCluster::start(3)).expect("ensemble starts");
    let victim = connect(&cluster.server_connect_string(0)).await;
    let other = connect(&cluster.server_connect_string(2)).await;
    victim
        .create("/ens-eph", b"", CreateMode::Ephemeral)
        .await
        .unwrap();
    cluster
        .expire_session(&victim)
        .await
        .expect("forced expiry in an ensemble");
    assert_eq!(victim.session_state(), SessionState::Expired);
    // Another member applies the close a moment later, at the latest.
    let deadline = Instant::now() + SOON;
    while retry("read on another member", || other.exists("/ens-eph"))
        .await
        .is_some()
    {
        assert!(
            Instant::now() < deadline,
            "the ephemeral outlived the session"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a closing session's own watches yield: its watch on its own ephemeral fires
/// NodeDeleted (the server deletes it while the connection is still registered), its
/// other watches end with SessionClosed. The simulation does the same
/// (sim/tests/semantics.rs: `a_closing_session_hears_its_own_ephemerals_deleted`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closing_session_hears_its_own_ephemerals_deleted() {
    require_zookeeper!();
    let server = start_server();
    let a = connect(&server.connect_string()).await;
    a.create("/p", b"", CreateMode::Persistent).await.unwrap();
    a.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    let (_, _, own) = a.get_data_watch("/e").await.unwrap();
    let (_, other) = a.exists_watch("/p").await.unwrap();
    a.close().await.unwrap();
    let own = timeout(SOON, own).await.unwrap().unwrap();
    assert_eq!(
        (own.event_type, own.path.as_str()),
        (EventType::NodeDeleted, "/e")
    );
    assert_eq!(
        timeout(SOON, other).await.unwrap(),
        Err(ZkError::SessionClosed)
    );
}

/// Runs everywhere: no server is needed to see a connect fail.
#[tokio::test]
async fn connecting_to_a_port_with_no_server_fails_with_a_typed_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    // A session timeout far past the connect timeout: giving up took the latter.
    let started = Instant::now();
    let outcome = ZkClient::connect(&addr, 600_000, 1_000).await;
    let elapsed = started.elapsed();
    match outcome {
        Err(RealError::ConnectTimeout {
            addr: reported,
            timeout,
            ..
        }) => {
            assert_eq!(reported, addr);
            assert_eq!(timeout, Duration::from_millis(1_000));
        }
        other => panic!("expected ConnectTimeout, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(300), "took {elapsed:?}");
    let message = ZkClient::connect(&addr, 10_000, 200)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("no ZooKeeper server") && message.contains(&addr),
        "{message}"
    );
}

/// Polls `client`'s view of `dir` until its children are `want`; panics after `SOON`.
async fn wait_for_children(client: &ZkClient, dir: &str, want: &[String]) {
    let deadline = Instant::now() + SOON;
    loop {
        let mut now = retry("list", || client.get_children(dir)).await;
        now.sort();
        if now == *want {
            return;
        }
        assert!(Instant::now() < deadline, "children {now:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquire_and_dropped_guard_leave_no_node() {
    require_zookeeper!();
    const DIR: &str = "/locks/dropped";
    let server = start_server();
    let a = Arc::new(connect(&server.connect_string()).await);
    let b = Arc::new(connect(&server.connect_string()).await);
    let lock_a = Lock::new(Arc::clone(&a), DIR, LockOptions::default()).unwrap();
    let lock_b = Lock::new(Arc::clone(&b), DIR, LockOptions::default()).unwrap();
    let held = lock_a.acquire().await.unwrap();

    // b queues behind a (its node is there, however long that takes); then its acquire
    // future is dropped while it waits.
    let mut acquire = Box::pin(lock_b.acquire());
    let queued = tokio::select! {
        r = &mut acquire => panic!("b acquired while a held the lock: {r:?}"),
        queued = async {
            loop {
                let queued = retry("list", || a.get_children(DIR)).await;
                if queued.len() >= 2 {
                    break queued;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } => queued,
        _ = tokio::time::sleep(SOON) => panic!("b's node never appeared"),
    };
    assert_eq!(queued.len(), 2, "{queued:?}");
    drop(acquire);
    // No further call on b's lock object: the client's background cleanup deletes it.
    wait_for_children(&a, DIR, std::slice::from_ref(&held.node().name)).await;
    assert!(lock_b.pending_cleanup().is_empty());

    // A guard dropped without release: its node goes the same way.
    drop(held);
    wait_for_children(&a, DIR, &[]).await;
    // The lock works on: b takes it at once.
    let got = timeout(SOON, lock_b.acquire()).await.unwrap().unwrap();
    got.release().await.unwrap();
    wait_for_children(&b, DIR, &[]).await;
}

/// The JVM flags of the server whose directory is `dir` (its command line names its
/// zoo.cfg there).
fn jvm_args_of_server_in(dir: &std::path::Path) -> Vec<String> {
    let config = dir.join("zoo.cfg").display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_jvm = args.iter().any(|a| a.ends_with("QuorumPeerMain"));
        if is_jvm && args.iter().any(|a| a.contains(&config)) {
            found = args;
        }
    }
    assert!(!found.is_empty(), "no JVM runs {config}");
    found
}

/// The harness's servers start on the quick JIT alone; the benchmark's asks for the
/// optimizing one too, as production servers run.
#[test]
fn the_optimizing_jit_is_off_for_test_servers_and_on_when_asked() {
    require_zookeeper!();
    let quick = TestServer::start().unwrap();
    let full = TestServer::start_with(harness::ServerOptions::default().with_optimizing_jit(true))
        .unwrap();
    let flag = "-XX:TieredStopAtLevel=1".to_string();
    assert!(jvm_args_of_server_in(quick.dir()).contains(&flag));
    assert!(!jvm_args_of_server_in(full.dir()).contains(&flag));
}
