//! The work queue on a real server, judged by the queue's properties as a real run of
//! `zklock real --recipe queue` is:
//!
//! - the herd-free queue under faults completes every item and passes;
//! - the naive consumer wakes every waiting consumer at one produce, caught by
//!   `queue_no_herd`, where the herd-free one, through the same script, wakes one;
//! - the consumer that skips the existence check processes a completed item again,
//!   caught by `queue_no_process_after_complete`.
//!
//! The scripts are made certain by events, not by time: the produce waits until every
//! consumer waits on its watch, and the canary's item-lock create is held at a gate until
//! another consumer has completed the item.

use super::gated::{Gate, Gated, SOON};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::block_in_place;
use zklock_canaries::QueueBug;
use zklock_checker::properties::queue::QueueFacts;
use zklock_checker::real_judge::judge_real_queue;
use zklock_checker::{CheckConfig, Report};
use zklock_real::ZkClient;
use zklock_real::faults::FaultConfig;
use zklock_real::harness::{self, ServerOptions, TestServer};
use zklock_real::recorder::Recorder;
use zklock_real::recording::RecordingClient;
use zklock_real::servers::Servers;
use zklock_real::workload::{QueueWorkload, WorkloadConfig, run_queue};
use zklock_recipe::history::{EventKind, History};
use zklock_recipe::work_queue::{ConsumerUnderTest, NaiveConsumer, Producer, QueuePaths};
use zklock_recipe::{Coordination, ZkError};

/// Long, so that no session of a script expires however slow the machine.
const SESSION_MS: u64 = 30_000;
const CONNECT_MS: u64 = 10_000;

async fn session(addr: &str, index: u32, recorder: &Arc<Recorder>) -> RecordingClient {
    let zk = ZkClient::connect(addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    RecordingClient::new(Arc::new(zk), index, Arc::clone(recorder))
}

/// Waits until `done` holds of the history so far; only a hang reaches the deadline.
async fn until(recorder: &Recorder, what: &str, done: impl Fn(&History) -> bool) {
    let deadline = tokio::time::Instant::now() + SOON;
    while !done(&recorder.history()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} never happened"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether client `index` waits on a watch: its last request left one and was answered.
fn waiting(history: &History, index: u32) -> bool {
    let mut last = None;
    for e in history.events.iter().filter(|e| e.client == index) {
        match &e.kind {
            EventKind::OpInvoke { op_id, watch, .. } => last = Some((*op_id, *watch, false)),
            EventKind::OpOk { op_id } => {
                if let Some((id, _, answered)) = &mut last
                    && id == op_id
                {
                    *answered = true;
                }
            }
            _ => {}
        }
    }
    last.is_some_and(|(_, watch, answered)| watch && answered)
}

fn count(history: &History, of: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| of(&e.kind)).count()
}

/// Takes, processes and completes items for good, recording as the workload does.
fn consume(client: RecordingClient, q: Box<dyn ConsumerUnderTest>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok(taken) = q.take().await else { return };
            client.record(EventKind::ProcessStart {
                item: taken.item.clone(),
                token: taken.token,
            });
            let item = taken.item.clone();
            match q.complete(taken.clone()).await {
                Ok(()) => client.record(EventKind::ProcessEnd { item }),
                Err(reason) => {
                    client.record(EventKind::Lost { reason });
                    let _ = q.abandon(taken).await;
                }
            }
        }
    })
}

/// The queue's directories' children now (none if missing).
async fn children(client: &RecordingClient, dir: &str) -> Vec<String> {
    match client.get_children(dir).await {
        Ok(c) => c.to_vec(),
        Err(ZkError::NoNode) => Vec::new(),
        Err(e) => panic!("listing {dir}: {e:?}"),
    }
}

/// Judges a script's history as `zklock real` judges a queue's run.
async fn judge(recorder: &Recorder, observer: &RecordingClient, paths: &QueuePaths) -> Report {
    let facts = QueueFacts {
        paths: paths.clone(),
        final_items: children(observer, &paths.queue).await,
        final_locks: children(observer, &paths.locks).await,
    };
    let report = judge_real_queue(&recorder.history(), &CheckConfig::default(), &facts).report;
    eprintln!("{report}");
    report
}

/// Consumers 1 to 3 (made by `make`) wait on an empty queue; then client 0 produces one
/// item, and the run goes on until it is completed and every consumer waits again.
async fn one_item_to_waiting_consumers(
    make: impl Fn(RecordingClient, &QueuePaths) -> Box<dyn ConsumerUnderTest>,
) -> Report {
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let recorder = Arc::new(Recorder::default());
    let paths = QueuePaths::default();
    let addr = server.connect_string();
    let producer = session(&addr, 0, &recorder).await;
    let mut consumers = Vec::new();
    let mut tasks = Vec::new();
    for index in 1..=3 {
        let c = session(&addr, index, &recorder).await;
        tasks.push(consume(c.clone(), make(c.clone(), &paths)));
        consumers.push(c);
    }
    let all_wait = |h: &History| (1..=3).all(|i| waiting(h, i));
    until(&recorder, "every consumer waiting", all_wait).await;
    let item = Producer::new(producer.clone(), &paths)
        .unwrap()
        .produce(b"")
        .await
        .expect("produced");
    producer.record(EventKind::ItemProduced { item });
    let completed = |h: &History| count(h, |k| matches!(k, EventKind::ProcessEnd { .. })) == 1;
    until(&recorder, "the item completed", completed).await;
    until(&recorder, "every consumer waiting again", all_wait).await;
    for t in &tasks {
        t.abort();
    }
    for c in &consumers {
        let _ = c.close().await;
    }
    let report = judge(&recorder, &producer, &paths).await;
    let _ = producer.close().await;
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_naive_consumer_wakes_every_waiting_consumer_at_one_produce_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let report = one_item_to_waiting_consumers(|c, paths| {
        Box::new(NaiveConsumer::new(c, paths).expect("valid paths"))
    })
    .await;
    let v = report.verdict("queue_no_herd").expect("judged");
    assert!(!v.ok, "the herd was not caught: {report}");
    let summary = &v.report.as_ref().expect("a violation").summary;
    assert!(
        summary.contains("one change of the queue woke 3 consumers"),
        "{summary}"
    );
    for other in [
        "queue_item_exclusive",
        "queue_no_process_after_complete",
        "queue_items_completed",
    ] {
        assert!(report.verdict(other).expect("judged").ok, "{report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_herd_free_consumer_wakes_one_consumer_at_one_produce_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let report = one_item_to_waiting_consumers(|c, paths| {
        Box::new(zklock_recipe::work_queue::Consumer::new(c, paths).expect("valid paths"))
    })
    .await;
    assert!(report.ok(), "{report}");
}

/// Client 1 (the canary) lists the queue and sees the item, but its item-lock create is
/// held at a gate until client 2 (a naive consumer, which does not queue on the take
/// lock) has taken, completed and released the item; then the canary locks the freed
/// lock and, not checking the item still exists, processes it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_skips_the_existence_check_is_caught_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let recorder = Arc::new(Recorder::default());
    let paths = QueuePaths::default();
    let addr = server.connect_string();
    let producer = session(&addr, 0, &recorder).await;
    let item = Producer::new(producer.clone(), &paths)
        .unwrap()
        .produce(b"")
        .await
        .expect("produced");
    producer.record(EventKind::ItemProduced { item });
    let gate = Gate::new(&format!("{}/", paths.locks));
    let canary = session(&addr, 1, &recorder).await;
    let gated = Gated {
        inner: canary.clone(),
        gate: Arc::clone(&gate),
    };
    let canary_task = consume(
        canary.clone(),
        QueueBug::NoExistsCheck.consumer(gated, &paths),
    );
    gate.reached().await;
    let other = session(&addr, 2, &recorder).await;
    let other_task = consume(
        other.clone(),
        Box::new(NaiveConsumer::new(other.clone(), &paths).expect("valid paths")),
    );
    let completed_by_2 = |h: &History| {
        h.events
            .iter()
            .any(|e| e.client == 2 && matches!(e.kind, EventKind::ProcessEnd { .. }))
    };
    until(&recorder, "client 2 completing the item", completed_by_2).await;
    // Its item lock released: client 2 waits on the empty queue.
    until(&recorder, "client 2 waiting again", |h| waiting(h, 2)).await;
    gate.open();
    let started_by_1 = |h: &History| {
        h.events
            .iter()
            .any(|e| e.client == 1 && matches!(e.kind, EventKind::ProcessStart { .. }))
    };
    until(
        &recorder,
        "the canary processing the item again",
        started_by_1,
    )
    .await;
    // Its completion failed (the item was gone) and it released the item's lock.
    until(&recorder, "the canary waiting again", |h| waiting(h, 1)).await;
    for t in [canary_task, other_task] {
        t.abort();
    }
    for c in [&canary, &other] {
        let _ = c.close().await;
    }
    let report = judge(&recorder, &producer, &paths).await;
    let _ = producer.close().await;
    let property = QueueBug::NoExistsCheck.caught_by();
    let v = report.verdict(property).expect("judged");
    assert!(!v.ok, "the canary was not caught: {report}");
}

/// The herd-free queue on a real server under every fault but the leader's, until every
/// one of its items is completed: all of the queue's properties hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_herd_free_queue_under_faults_completes_every_item_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    const ITEMS: u32 = 20;
    const SESSION_MS: u64 = 2_000;
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    let config = WorkloadConfig {
        clients: 5,
        duration_ms: 4_000,
        session_timeout_ms: SESSION_MS,
        ..WorkloadConfig::default()
    };
    let faults = FaultConfig {
        faults: "cut,lost-create,expire,black-hole,local-expire,pause,crash"
            .parse()
            .expect("a valid fault list"),
        seed: 5,
        start_ms: 300,
        heal_ms: 2_500,
        gap_ms_min: 150,
        gap_ms_max: 400,
        black_hole_ms_min: 300,
        // Past the session timeout: some black holes end in an expiry.
        black_hole_ms_max: 2 * SESSION_MS + 500,
        pause_ms_max: 2 * SESSION_MS,
        // Until every kind struck once, however slow the machine.
        strikes_min_per_kind: 1,
        ..FaultConfig::default()
    };
    let spec = QueueWorkload {
        items_per_producer: ITEMS,
        ..QueueWorkload::herd_free()
    };
    let run = run_queue(servers, &config, &faults, spec)
        .await
        .expect("the run ran");
    let paths = run.queue.clone().expect("a queue's run");
    let left = |i: usize| run.final_children_by_lock[i].1.clone();
    let facts = QueueFacts {
        paths,
        final_items: left(0),
        final_locks: left(1),
    };
    let report = judge_real_queue(&run.history, &CheckConfig::from(run.facts()), &facts).report;
    eprintln!("{report}\n{}", run.faults);
    assert!(report.ok(), "{report}");
    let h = &run.history;
    let produced = count(h, |k| matches!(k, EventKind::ItemProduced { .. }));
    assert_eq!(produced, ITEMS as usize);
    // Every item completed once, some by a completion whose reply a fault took.
    let note = report
        .verdict("queue_items_completed")
        .and_then(|v| v.note.clone())
        .expect("a note");
    let completed: usize = note
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the note counts the items");
    assert!(completed >= ITEMS as usize, "{note}");
    assert!(run.faults.total() > 0, "{}", run.faults);
    let q = report.counters.queue.expect("a queue's counters");
    assert_eq!(q.items_produced, u64::from(ITEMS));
}

/// The consumer whose item locks are persistent, with consumer 1's first item-lock create
/// applied by the server but its reply withheld (an aimed fault): on the retry the node
/// exists, owned by no session, so the consumer takes it for another's, and the item
/// stays locked for good. Client 1 is the only consumer, so it makes such a create on
/// every run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_whose_item_locks_are_persistent_is_caught_on_a_real_server() {
    use zklock_real::proxy::{AimedAction, AimedFault, op};
    if !harness::available_for_tests() {
        return;
    }
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    let config = WorkloadConfig {
        clients: 2,
        duration_ms: 2_000,
        drain_timeout_ms: 3_000,
        ..WorkloadConfig::default()
    };
    let paths = zklock_real::workload::queue::queue_paths(&config.lock_path);
    // The directories first: the aimed create must be one the server applies (in an
    // empty tree the first would fail with NoNode).
    let setup = ZkClient::connect(&servers.connect_string(), SESSION_MS, CONNECT_MS)
        .await
        .expect("connects");
    for dir in [&paths.queue, &paths.locks] {
        zklock_recipe::lock::ensure_path(&setup, &Default::default(), dir)
            .await
            .expect("made");
    }
    let _ = setup.close().await;
    let faults = FaultConfig {
        faults: "none".parse().expect("valid"),
        aimed: vec![(
            1,
            AimedFault::new(
                op::by_name("create").expect("an op"),
                format!("{}/", paths.locks),
                AimedAction::WithholdReply,
            ),
        )],
        ..FaultConfig::default()
    };
    let bug = QueueBug::PersistentLock;
    let spec = QueueWorkload {
        items_per_producer: 4,
        ..QueueWorkload::new(Arc::new(move |c, paths| bug.consumer(c, paths)))
    };
    let run = run_queue(servers, &config, &faults, spec)
        .await
        .expect("the run ran");
    let left = |i: usize| run.final_children_by_lock[i].1.clone();
    let facts = QueueFacts {
        paths,
        final_items: left(0),
        final_locks: left(1),
    };
    let report = judge_real_queue(&run.history, &CheckConfig::from(run.facts()), &facts).report;
    eprintln!("{report}");
    let v = report.verdict(bug.caught_by()).expect("judged");
    assert!(!v.ok, "the canary was not caught: {report}");
}
