//! The semaphore canary on a real server: a lease taken outside the inner lock admits
//! N + 1 holders, caught by `semaphore_leases`; the shipped semaphore, through the same
//! script, never has more than N.
//!
//! The race is scripted, not hoped for: client 1's lease create is held back (a slow
//! link, or a process paused between its count and its create) until client 2 has
//! counted and taken its lease. The canary counted before it was held, so both take the
//! last lease. The shipped semaphore takes its lease under its inner lock, so client 2
//! waits for that lock instead of counting.

use super::gated::{Gate, Gated, SOON};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::block_in_place;
use zklock_canaries::LeaseCanaryLock;
use zklock_checker::CheckConfig;
use zklock_checker::real_judge::{RunShape, judge_real};
use zklock_real::ZkClient;
use zklock_real::harness::{self, TestServer};
use zklock_real::recorder::Recorder;
use zklock_real::recording::RecordingClient;
use zklock_recipe::history::{AcquireMode, EventKind, LockRole};
use zklock_recipe::semaphore::{Semaphore, inner_lock_path};
use zklock_recipe::{Coordination, LockUnderTest};

/// Long, so that no session expires however slow the machine: expiry is not the point.
const SESSION_MS: u64 = 30_000;
const CONNECT_MS: u64 = 10_000;
const PATH: &str = "/zklock/semaphore";
const LEASES: u32 = 2;

async fn session(addr: &str, index: u32, recorder: &Arc<Recorder>) -> RecordingClient {
    let zk = ZkClient::connect(addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    RecordingClient::new(Arc::new(zk), index, Arc::clone(recorder))
}

/// Acquires (blocking), recording it as the workload does.
async fn acquire<L: LockUnderTest>(client: &RecordingClient, lock: &L) -> L::Guard {
    client.record(EventKind::AcquireInvoked {
        role: LockRole::Read,
        mode: AcquireMode::Blocking,
        lock: None,
    });
    let guard = tokio::time::timeout(SOON, lock.acquire())
        .await
        .expect("acquired in time")
        .expect("acquired");
    client.record(EventKind::Acquired {
        token: lock.token(&guard),
        node: lock.node(&guard),
    });
    guard
}

async fn release<L: LockUnderTest>(client: &RecordingClient, lock: &L, guard: L::Guard) {
    client.record(EventKind::ReleaseInvoked);
    match lock.release(guard).await {
        Ok(()) => client.record(EventKind::Released),
        Err(reason) => client.record(EventKind::ReleaseFailed { reason }),
    }
    client.record(EventKind::Done);
}

/// True once client `index` has left a watch on a path under `dir`: it waits there.
fn watching_under(recorder: &Recorder, index: u32, dir: &str) -> bool {
    recorder.history().events.iter().any(|e| {
        e.client == index
            && matches!(&e.kind, EventKind::OpInvoke { path, watch: true, .. }
                if path.starts_with(dir))
    })
}

/// The script with the lock `make` gives each client: client 0 holds a lease; client 1's
/// lease create is held at the gate; client 2 acquires (the canary: to the end; the
/// shipped semaphore: until it waits on the inner lock); the gate opens; client 0
/// releases. Returns the judged report's `semaphore_leases` verdict and the whole report.
async fn script<L, F>(make: F) -> zklock_checker::Report
where
    L: LockUnderTest + 'static,
    F: Fn(Gated) -> L,
{
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let recorder = Arc::new(Recorder::default());
    let gate = Gate::new(&format!("{PATH}/"));
    let open_gate = Gate::new("/never/");
    open_gate.open();
    let mut clients = Vec::new();
    for index in 0..3 {
        clients.push(session(&server.connect_string(), index, &recorder).await);
    }
    let gated = |i: usize, g: &Arc<Gate>| Gated {
        inner: clients[i].clone(),
        gate: Arc::clone(g),
    };
    let locks: Vec<Arc<L>> = vec![
        Arc::new(make(gated(0, &open_gate))),
        Arc::new(make(gated(1, &gate))),
        Arc::new(make(gated(2, &open_gate))),
    ];
    let g0 = acquire(&clients[0], &*locks[0]).await;
    let spawn_acquire = |i: usize| {
        let (client, lock) = (clients[i].clone(), Arc::clone(&locks[i]));
        tokio::spawn(async move {
            let g = acquire(&client, &*lock).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            release(&client, &*lock, g).await;
        })
    };
    let one = spawn_acquire(1);
    gate.reached().await;
    let two = spawn_acquire(2);
    // Client 2 has either taken its lease (the canary) or queued behind client 1 on the
    // inner lock, or on the leases (the shipped semaphore).
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let history = recorder.history();
        let took = history
            .events
            .iter()
            .any(|e| e.client == 2 && matches!(e.kind, EventKind::Acquired { .. }));
        if took || watching_under(&recorder, 2, &inner_lock_path(PATH)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "client 2 never got on"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gate.open();
    // Client 0 holds until client 1 holds, then releases: every waiter gets a lease.
    let deadline = tokio::time::Instant::now() + SOON;
    while !recorder
        .history()
        .events
        .iter()
        .any(|e| e.client == 1 && matches!(e.kind, EventKind::Acquired { .. }))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "client 1 never held"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    release(&clients[0], &*locks[0], g0).await;
    for t in [one, two] {
        tokio::time::timeout(SOON, t)
            .await
            .expect("the client finished")
            .expect("no panic");
    }
    let left = clients[0].get_children(PATH).await.unwrap().to_vec();
    for c in &clients {
        let _ = c.close().await;
    }
    #[allow(clippy::needless_update)]
    let cfg = CheckConfig {
        lock_path: PATH.into(),
        final_lock_children: left,
        ..CheckConfig::default()
    };
    let shape = RunShape {
        locks: Vec::new(),
        leases: Some(LEASES),
        ..RunShape::default()
    };
    let judged = judge_real(&recorder.history(), &cfg, &shape);
    eprintln!("{}", judged.report);
    judged.report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_outside_the_inner_lock_admits_three_holders_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let report = script(|c| LeaseCanaryLock::new(c, PATH, LEASES)).await;
    let v = report.verdict("semaphore_leases").expect("judged");
    assert!(!v.ok, "the canary was not caught: {report}");
    let summary = &v.report.as_ref().expect("a violation").summary;
    assert!(
        summary.contains("3 clients believed they held one of the semaphore's 2 leases"),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_semaphore_through_the_same_script_holds_two_leases_at_most() {
    if !harness::available_for_tests() {
        return;
    }
    let report = script(|c| Semaphore::new(c, PATH, LEASES).expect("valid")).await;
    assert!(report.ok(), "{report}");
    let v = report.verdict("semaphore_leases").expect("judged");
    assert_eq!(
        v.note.as_deref(),
        Some("at most 2 of 2 leases held at once"),
        "{report}"
    );
}
