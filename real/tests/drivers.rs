//! Released libraries' locks driven through zklock's driver protocol (`zklock_real::driver`)
//! on a real server, judged by the same checker as the shipped lock. Each test needs Java,
//! ZooKeeper and the library it drives (Kazoo: `python3-kazoo`; Curator:
//! `libcurator-recipes-java` and `javac`); without them it prints "skipping: ..." and
//! passes, except under `CI=true`, where a missing one fails it.
//!
//! Every run goes on until what it needs has happened (`WorkloadConfig::until`), with a
//! deadline only a hang reaches: a JVM's start on a loaded machine changes how long a run
//! takes, never what it proves.

#[path = "drivers/curator_cases.rs"]
mod curator_cases;
#[path = "drivers/elections.rs"]
mod elections;
#[path = "drivers/expiry.rs"]
mod expiry;
#[path = "drivers/isolation.rs"]
mod isolation;
#[path = "drivers/kazoo_cases.rs"]
mod kazoo_cases;
#[path = "drivers/mixed.rs"]
mod mixed;
#[path = "drivers/outage.rs"]
mod outage;
#[path = "drivers/sessions.rs"]
mod sessions;
#[path = "drivers/zookeeper_cases.rs"]
mod zookeeper_cases;

use crate::common::{assert_ok, check_run, check_run_shaped, until_counters};
use std::sync::Arc;
use zklock_real::RealError;
use zklock_real::driver::pool::DriverPool;
use zklock_real::driver::{DriverKind, DriverRecipe};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::ServerOptions;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::servers::Servers;
use zklock_real::workload::{RealRun, RunGoal, ShippedRealRecipe, WorkloadConfig, run_recipe};
use zklock_recipe::history::{EventKind, FaultKind, History};

const LOCK_PATH: &str = "/zklock/lock";

/// The driver of `kind`, or None (after a notice) when its library is missing; under CI
/// a missing library fails the test.
fn driver(kind: DriverKind) -> Option<DriverRecipe> {
    if !crate::common::zookeeper_available() {
        return None;
    }
    match DriverRecipe::prepare(kind) {
        Ok(recipe) => Some(recipe),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the {kind} driver cannot run: {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

fn workload(until: Option<RunGoal>) -> WorkloadConfig {
    WorkloadConfig {
        clients: 3,
        duration_ms: 2_000,
        lock_path: LOCK_PATH.into(),
        until,
        // Only a hang reaches it.
        goal_deadline_ms: 300_000,
        ..WorkloadConfig::default()
    }
}

async fn run<R: zklock_real::workload::RealRecipe>(
    recipe: R,
    config: &WorkloadConfig,
    faults: &FaultConfig,
) -> Result<RealRun, RealError> {
    let servers = Servers::start(1, ServerOptions::default())?;
    run_recipe(servers, config, faults, recipe).await
}

/// Client 0 met a fault `struck` accepts, the session it was on then went Expired (at
/// the server's word or its library's own), and `n` acquisitions followed.
fn struck_expired_then_acquired(
    history: &History,
    struck: impl Fn(&FaultKind) -> bool,
    n: usize,
) -> bool {
    let events = &history.events;
    let Some(at) = events.iter().position(|e| {
        e.client == 0 && matches!(&e.kind, EventKind::Fault { fault } if struck(fault))
    }) else {
        return false;
    };
    let victim = events[at].session;
    let Some(expired) = events[at..].iter().position(|e| {
        e.session == victim
            && matches!(
                e.kind,
                EventKind::Session {
                    state: zklock_recipe::SessionState::Expired
                }
            )
    }) else {
        return false;
    };
    (events[at + expired..].iter())
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .count()
        >= n
}

/// Contended acquisitions: at least `n`.
fn contended(n: u64) -> Option<RunGoal> {
    until_counters(move |c| c.contended_acquisitions >= n)
}

async fn passes_a_contended_fault_free_run(kind: DriverKind) {
    passes_contended_fault_free(kind, 20).await;
}

/// A fault-free run of `kind` driven until `n` contended acquisitions, holding every
/// property.
async fn passes_contended_fault_free(kind: DriverKind, n: u64) {
    let Some(recipe) = driver(kind) else {
        return;
    };
    let status = recipe.status();
    let run = run(recipe, &workload(contended(n)), &FaultConfig::default())
        .await
        .unwrap();
    assert_eq!(status.failure(), None, "the driver failed");
    let judged = check_run(&run);
    assert!(judged.report.counters.contended_acquisitions >= n);
    assert_ok(&judged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_lock_passes_a_contended_fault_free_run() {
    passes_a_contended_fault_free_run(DriverKind::KazooLock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_mutex_passes_a_contended_fault_free_run() {
    passes_a_contended_fault_free_run(DriverKind::CuratorMutex).await;
}

/// A search's runs share a pool of driver processes: the second run's sessions are opened
/// (protocol 3's `open`) on the processes the first run's reset left, on another server,
/// and both runs hold every property. A process that kept anything of its old session (a
/// request id, a session event, its old connect string) would break the second run.
async fn a_kept_process_serves_the_next_run(kind: DriverKind) {
    let Some(first) = driver(kind) else {
        return;
    };
    let pool = Arc::new(DriverPool::default());
    let clients = workload(None).clients as usize;
    let mut first = Some(first);
    for round in 0..2 {
        let recipe = match first.take() {
            Some(recipe) => recipe,
            None => DriverRecipe::prepare(kind).unwrap(),
        }
        .with_pool(Arc::clone(&pool));
        let status = recipe.status();
        let run = run(recipe, &workload(contended(5)), &FaultConfig::default())
            .await
            .unwrap();
        assert_eq!(status.failure(), None, "the driver failed in run {round}");
        assert_ok(&check_run(&run));
        drop(run);
        if round == 0 {
            // Every client's process said hello before the run began: each is reset and
            // kept (a spare too, if its hello came in time). A deadline only a hang
            // reaches.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while pool.resetting() > 0 || pool.idle() < clients {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{} of {clients} processes kept",
                    pool.idle()
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
    // The second run's clients opened their sessions on kept processes.
    assert!(pool.reused() >= clients as u64, "reused {}", pool.reused());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_kazoo_process_serves_the_next_run() {
    a_kept_process_serves_the_next_run(DriverKind::KazooLock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_curator_process_serves_the_next_run() {
    a_kept_process_serves_the_next_run(DriverKind::CuratorMutex).await;
}

/// Client 0's first request of `op_name` under the lock directory meets `action`.
fn aimed_at_first(op_name: &str, action: AimedAction) -> FaultConfig {
    FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(
                op::by_name(op_name).unwrap(),
                format!("{LOCK_PATH}/"),
                action,
            ),
        )],
        ..FaultConfig::default()
    }
}

/// The reply to client 0's first delete under the lock directory (its first release, or
/// the cleanup of a try) is withheld and its connection cut: the delete was applied, the
/// library saw ConnectionLoss.
fn lost_delete_reply() -> FaultConfig {
    aimed_at_first("delete", AimedAction::WithholdReply)
}

/// The aimed fault struck, and contention followed it.
fn struck_then_contended(history: &History) -> bool {
    let Some(at) = history.events.iter().position(|e| {
        matches!(
            e.kind,
            EventKind::Fault {
                fault: FaultKind::ConnectionLoss
            }
        )
    }) else {
        return false;
    };
    history.events[at..]
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .count()
        >= 20
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_lock_and_the_shipped_lock_survive_a_lost_delete_reply() {
    let Some(recipe) = driver(DriverKind::KazooLock) else {
        return;
    };
    let config = workload(Some(RunGoal::new(|h, _| struck_then_contended(h))));
    let kazoo = run(recipe, &config, &lost_delete_reply()).await.unwrap();
    assert!(
        struck_then_contended(&kazoo.history),
        "the fault never struck"
    );
    assert_ok(&check_run(&kazoo));
    let shipped = run(ShippedRealRecipe::default(), &config, &lost_delete_reply())
        .await
        .unwrap();
    assert!(struck_then_contended(&shipped.history));
    assert_ok(&check_run(&shipped));
}

/// The reply to client 0's first existence check under the lock directory is withheld
/// and its connection cut. Kazoo's Lock makes none; its driver reads a hold's token (its
/// node's czxid) with one, so Kazoo holds the lock and the driver cannot read the token.
fn cut_token_read() -> FaultConfig {
    aimed_at_first("exists", AimedAction::WithholdReply)
}

/// A hold whose token cannot be read is given back and reported as a failed acquire.
/// Kazoo's driver once reported the error and kept the hold: Kazoo's Lock then believed
/// it held, everyone else waited behind its node, and its next blocking acquire waited
/// forever, deaf to a cancel, until zklock gave up on the driver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_driver_gives_back_a_hold_whose_token_read_is_cut() {
    let Some(recipe) = driver(DriverKind::KazooLock) else {
        return;
    };
    let status = recipe.status();
    let config = workload(Some(RunGoal::new(|h, _| struck_then_contended(h))));
    let run = run(recipe, &config, &cut_token_read()).await.unwrap();
    assert_eq!(status.failure(), None, "the driver failed");
    assert!(
        struck_then_contended(&run.history),
        "the fault never struck"
    );
    let given_back = run.history.events.iter().any(|e| {
        matches!(&e.kind, EventKind::AcquireFailed { reason }
            if reason.contains("token could not be read"))
    });
    assert!(given_back, "no acquire reported its hold given back");
    assert_ok(&check_run(&run));
}

/// A blocking acquire has waited past the liveness bound, with nothing else of its
/// client since: the lock is stuck for it.
fn a_waiter_is_stuck(history: &History, bound_ms: u64, now_us: u64) -> bool {
    let mut waiting_since = std::collections::HashMap::new();
    for e in &history.events {
        match &e.kind {
            EventKind::AcquireInvoked { .. } => {
                waiting_since.insert(e.client, e.time_us);
            }
            EventKind::Acquired { .. } | EventKind::AcquireFailed { .. } => {
                waiting_since.remove(&e.client);
            }
            _ => {}
        }
    }
    waiting_since
        .values()
        .any(|&since| now_us.saturating_sub(since) > bound_ms * 1_000)
}

/// Runs `kind` fault-free with `readers` readers until a waiter is stuck past the liveness
/// bound; the checker must flag it, and the shipped lock must pass the same workload.
async fn stuck_is_flagged(kind: DriverKind, readers: u32) {
    let Some(recipe) = driver(kind) else {
        return;
    };
    let mut config = workload(Some(RunGoal::new(|h, facts| {
        a_waiter_is_stuck(h, facts.liveness_bound_ms, facts.run_end_us)
    })));
    config.session_timeout_ms = 1_000;
    config.readers = readers;
    let stuck = run(recipe, &config, &FaultConfig::default()).await.unwrap();
    let judged = check_run(&stuck);
    assert!(
        judged.report.violated().contains(&"liveness_after_heal"),
        "the checker did not flag the stuck lock:\n{}",
        judged.report
    );
    let mut shipped_config = workload(contended(20));
    shipped_config.session_timeout_ms = 1_000;
    shipped_config.readers = readers;
    let shipped = run(
        ShippedRealRecipe::default(),
        &shipped_config,
        &FaultConfig::default(),
    )
    .await
    .unwrap();
    assert_ok(&check_run(&shipped));
}

/// Protocol 2's fresh lock objects: every attempt of Kazoo's Lock and of Curator's
/// InterProcessMutex uses a new object of its library, in the same process and session
/// (`WorkloadConfig::fresh_lock_every`). Contended runs of both pass the checker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_lock_objects_per_attempt_pass_a_contended_run() {
    for kind in [DriverKind::KazooLock, DriverKind::CuratorMutex] {
        let Some(recipe) = driver(kind) else {
            continue;
        };
        let status = recipe.status();
        let mut config = workload(contended(5));
        config.fresh_lock_every = 1;
        let run = run(recipe, &config, &FaultConfig::default()).await.unwrap();
        assert_eq!(status.failure(), None, "{kind}");
        let judged = check_run(&run);
        assert!(
            judged.report.counters.contended_acquisitions >= 5,
            "{kind}: {}",
            judged.report
        );
        assert_ok(&judged);
    }
}

/// zookeeper-client 0.11's `Client::lock` has neither a try nor a timed acquire: its
/// users time its future out and drop it (`tokio::time::timeout`). An acquire dropped
/// while its create is under way (here: given up while the proxy holds the create, then
/// applied) leaves its node, and the lock is stuck: every later contender waits behind a
/// node nobody holds (the class of CURATOR-79). Certain, at that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_lock_dropped_mid_create_leaves_a_node_that_blocks_everyone() {
    stuck_after_a_give_up_at(DriverKind::ZkclientLock, "create", LOCK_PATH).await;
}

/// The same dropped acquires of zookeeper-client's `Client::lock`, seen while the run
/// goes on: the dropped attempt's node stands, its session live, long past the attempt's
/// end, and `node_outlives_attempt` names it. The run goes on until a waiter has waited
/// the liveness bound, the leak bound and a session timeout: it waits behind the leaked
/// node, made (and its attempt dropped) before the waiter listed the directory, so the
/// node's deadline has passed by then and the sessions, pinging, are answered after it.
/// The shipped lock passes the same workload on this property too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_dropped_lock_node_outlives_its_attempt() {
    let Some(recipe) = driver(DriverKind::ZkclientLock) else {
        return;
    };
    let mut config = workload(None);
    config.session_timeout_ms = 1_000;
    let waited_ms =
        config.liveness_bound_ms() + config.leak_bound_in_force_ms() + config.session_timeout_ms;
    config.until = Some(RunGoal::new(move |h, facts| {
        a_waiter_is_stuck(h, waited_ms, facts.run_end_us)
    }));
    // Proxies, without a fault: they see each node's life.
    let record = FaultConfig {
        record_requests: true,
        ..FaultConfig::default()
    };
    let leaky = run(recipe, &config, &record).await.unwrap();
    assert!(leaky.nodes.as_ref().is_some_and(|n| !n.nodes.is_empty()));
    let judged = check_run_shaped(&leaky);
    let verdict = judged.report.verdict("node_outlives_attempt").unwrap();
    assert!(
        !verdict.ok,
        "the leaked node was not flagged:\n{}",
        judged.report
    );
    let mut shipped_config = workload(contended(20));
    shipped_config.session_timeout_ms = 1_000;
    let shipped = run(ShippedRealRecipe::default(), &shipped_config, &record)
        .await
        .unwrap();
    let judged = check_run_shaped(&shipped);
    assert!(judged.report.verdict("node_outlives_attempt").is_some());
    assert_ok(&judged);
}

/// A fixed script (2 clients, 4 blocking, try and timed attempts each, none dropped) in
/// which client 0's caller gives up its acquire at its first request of `op_name` under
/// `under` ([`AimedAction::GiveUp`]: the request is held while the acquire is dropped,
/// then applied).
fn given_up_at(op_name: &str, under: &str) -> (WorkloadConfig, FaultConfig) {
    let mut config = workload(None);
    config.clients = 2;
    config.attempts_per_client = 4;
    config.drop_every = 0;
    config.session_timeout_ms = 2_000;
    config.hold_ms = 5;
    config.acquire_timeout_ms = 1_000;
    // Long enough that a waiter stuck from the give-up waits past the liveness bound
    // (5 s from the heal) and a leaked node past the leak bound (5 s) before the run's
    // drain cancels what still waits.
    config.duration_ms = 8_000;
    let faults = FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(op::by_name(op_name).unwrap(), under, AimedAction::GiveUp),
        )],
        ..FaultConfig::default()
    };
    (config, faults)
}

fn given_up(history: &History) -> bool {
    history
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::AcquireFailed { reason } if reason == "given up"))
}

/// A cancelled acquire that its library took after all is released by the driver, even
/// when the next acquire, which settles it first, is itself dropped at once. The driver
/// once took the cancelled acquires off its list before settling them, so a settle
/// dropped midway lost them: the library kept a hold nobody believed in, and its node
/// read as a leak (`node_outlives_attempt`, `liveness_after_heal`). Here Kazoo's
/// Semaphore: client 0's timed attempt is given up while the release of its inner lock
/// is held (the 3rd delete under `-__lock__`), and it takes the lease anyway; its next
/// attempt is dropped after 0 ms. Every property must hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_acquire_taken_after_all_is_released_though_the_next_is_dropped_mid_settle() {
    let Some(recipe) = driver(DriverKind::KazooSemaphore) else {
        return;
    };
    let (mut config, mut faults) = given_up_at("delete", &format!("{LOCK_PATH}-__lock__/"));
    // The 4th attempt, client 0's dropped one, is dropped after 0 ms.
    config.drop_every = 4;
    faults.aimed[0].1.skip = 2;
    let run = run(recipe, &config, &faults).await.unwrap();
    assert!(given_up(&run.history), "the give-up never struck");
    assert_ok(&check_run_shaped(&run));
}

/// Whether a grant came after an earlier grant of a higher sequence with a higher czxid:
/// a node numbered after its lock directory was deleted and made again.
fn numbered_by_a_directory_made_again(history: &History) -> bool {
    let mut grants: Vec<(i64, i64)> = Vec::new();
    for e in &history.events {
        if let EventKind::Acquired { token, node } = &e.kind {
            let Some(seq) = zklock_checker::holds::sequence_of(node) else {
                continue;
            };
            if grants.iter().any(|&(s, t)| s > seq && t < *token) {
                return true;
            }
            grants.push((seq, *token));
        }
    }
    false
}

/// Curator's lock directory is a container: ZooKeeper deletes it once it is empty (every
/// `znode.container.checkIntervalMs`, 60 s by default), and the next acquire makes it
/// again, its sequence from 0. `fifo` once read the new directory's first node as passed
/// over by the old one's last: every `fifo`-only point of Curator's searches was this.
/// Here client 1 starts 1 s after client 0, whose script is done by then, on a server
/// that checks its containers every 50 ms; runs go on until one shows a directory made
/// again (a hang alone reaches the cap). Every property must hold, and the same history
/// judged by sequence alone must not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_lock_directory_made_again_is_not_a_fifo_violation() {
    let Some(first) = driver(DriverKind::CuratorMutex) else {
        return;
    };
    let mut first = Some(first);
    let config = WorkloadConfig {
        clients: 2,
        attempts_per_client: 4,
        drop_every: 0,
        start_stagger_ms: 1_000,
        ..workload(None)
    };
    let options = ServerOptions::default().with_container_check_interval_ms(50);
    for _ in 0..20 {
        // A driver recipe serves one run: each run after the first prepares its own.
        let recipe = match first.take() {
            Some(recipe) => recipe,
            None => DriverRecipe::prepare(DriverKind::CuratorMutex).unwrap(),
        };
        let servers = Servers::start(1, options.clone()).unwrap();
        let run = run_recipe(servers, &config, &FaultConfig::default(), recipe)
            .await
            .unwrap();
        if !numbered_by_a_directory_made_again(&run.history) {
            continue;
        }
        assert!(run.tokens_are_czxids);
        assert_ok(&check_run(&run));
        let mut by_sequence = zklock_checker::CheckConfig::from(run.facts());
        by_sequence.tokens_are_czxids = false;
        let judged = crate::common::judge(&run.history, &by_sequence);
        assert!(
            judged.report.violated().contains(&"fifo"),
            "{:?}",
            judged.report.violated()
        );
        return;
    }
    panic!("no run of 20 made Curator's lock directory again");
}

/// Curator 5.4.0's `InterProcessSemaphoreMutex`, its acquire given up (an interrupt, how a
/// Java caller gives up a blocking acquire) while it releases its inner mutex (the delete
/// under `locks/`), keeps the lease it had made: nobody holds, the other client waits
/// until the run gives up on it, and the lease node outlives the attempt while its
/// session lives. Certain, at that request (docs/libraries.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_semaphore_mutex_is_stuck_after_an_acquire_given_up_at_its_inner_release() {
    let locks = format!("{LOCK_PATH}/locks");
    stuck_after_a_give_up_at(DriverKind::CuratorSemaphoreMutex, "delete", &locks).await;
}

/// Kazoo 2.8.0's `Lock`, its acquire given up (`cancel()`) while its create is held,
/// tries to delete the node the create made (`_best_effort_cleanup`), and when that
/// delete meets a connection loss it swallows the error: the node stays with the session,
/// which reconnects and lives on. Client 0 gives up its only attempt at its create, and
/// its first delete under the lock directory, the cleanup's, is dropped with its
/// connection; the checker must flag the node (`node_outlives_attempt`) and the lock left
/// to it (`liveness_after_heal`). python-zk/kazoo#732 (open; fix proposed in #760).
/// The shipped lock passes the same schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_lock_keeps_the_node_of_a_given_up_acquire_whose_cleanup_meets_a_connection_loss() {
    let Some(recipe) = driver(DriverKind::KazooLock) else {
        return;
    };
    let (mut config, mut faults) = given_up_at("create", &format!("{LOCK_PATH}/"));
    // The given-up attempt is the client's last: a later one of the same lock object
    // would pick its node up again (Kazoo looks for its own node first).
    config.attempts_per_client = 1;
    // Kazoo gives a connection up after two thirds of the session timeout without a
    // reply; at 2 s it could hang up within the 1 s hold, and the create's reply, which
    // names the node, would never pass the proxy. At 6 s it waits the hold out.
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
    let shipped = (config.clone(), faults.clone());
    stuck_after_a_give_up_is_flagged(recipe, (config, faults), shipped).await;
}

/// Runs `kind` through [`given_up_at`] at its first `op_name` request under `dir`/, and
/// the shipped lock with its acquire given up at its create, which the server applies
/// after the give-up.
async fn stuck_after_a_give_up_at(kind: DriverKind, op_name: &str, dir: &str) {
    let Some(recipe) = driver(kind) else {
        return;
    };
    let library = given_up_at(op_name, &format!("{dir}/"));
    let shipped = given_up_at("create", &format!("{LOCK_PATH}/"));
    stuck_after_a_give_up_is_flagged(recipe, library, shipped).await;
}

/// Runs `recipe` on the `library` script: the checker must flag both the stuck lock
/// (`liveness_after_heal`) and the node the given-up attempt left
/// (`node_outlives_attempt`). The shipped lock passes the `shipped` script.
async fn stuck_after_a_give_up_is_flagged(
    recipe: DriverRecipe,
    library: (WorkloadConfig, FaultConfig),
    shipped: (WorkloadConfig, FaultConfig),
) {
    let stuck = run(recipe, &library.0, &library.1).await.unwrap();
    assert!(given_up(&stuck.history), "the give-up never struck");
    let judged = check_run_shaped(&stuck);
    let violated = judged.report.violated();
    assert!(
        violated.contains(&"liveness_after_heal") && violated.contains(&"node_outlives_attempt"),
        "the stuck lock and its leaked node were not both flagged:\n{}",
        judged.report
    );
    let passed = run(ShippedRealRecipe::default(), &shipped.0, &shipped.1)
        .await
        .unwrap();
    assert!(given_up(&passed.history), "the give-up never struck");
    assert_ok(&check_run_shaped(&passed));
}

/// Kazoo 2.8.0.dev0's (Debian's) ReadLock looks for its predecessor among the writers'
/// nodes only, and, not finding its own node there, takes the last writer in the
/// directory: one queued after it. That writer waits for the reader, the reader for the
/// writer (the canary `reader-counts-later-writers`). Two readers and a writer starting
/// together deadlock without any fault; the checker must flag it, and the shipped
/// read/write lock passes the same workload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_read_lock_waits_for_a_later_writer_that_waits_for_it() {
    stuck_is_flagged(DriverKind::KazooRw, 2).await;
}
