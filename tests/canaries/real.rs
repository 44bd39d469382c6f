//! A canary on a real server: the same lock code as in the simulation, driven through
//! `zklock_real`'s `RealRecipe`, and the same checker. CURATOR-498's steps are scripted
//! here (a random fault schedule meets them too rarely for a test): the holder's client
//! library declares its session expired while the server still holds it, and the
//! process's next session loses its create reply. The canary then adopts the old session's
//! node, the server expires that session, the next waiter takes the lock, and
//! mutual_exclusion catches two holders. The shipped recipe, through the same script,
//! breaks nothing.

use super::{Bug, Canary};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::block_in_place;
use zklock_canaries::CanaryLock;
use zklock_checker::CheckConfig;
use zklock_checker::concurrent::{Judged, judge_parallel};
use zklock_real::ZkClient;
use zklock_real::faults::ClientLink;
use zklock_real::harness::{self, TestServer};
use zklock_real::recorder::Recorder;
use zklock_real::recording::RecordingClient;
use zklock_real::workload::{RealRecipe, ShippedRealRecipe, settled_children};
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind, LockRole};
use zklock_recipe::{Coordination, LockUnderTest};

/// A canary on a real server: its lock on a recording client of a real session.
struct RealCanary(Bug);

impl RealRecipe for RealCanary {
    type Lock = CanaryLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        let index = client.index();
        Canary(self.0).lock_on(client, index, role, path)
    }
}

/// Long enough that the new session adopts before the server expires the old one, even
/// on a loaded machine.
const SESSION_MS: u64 = 2_000;
const CONNECT_MS: u64 = 10_000;
/// Generous bound for anything that should happen "soon" on a loaded machine.
const SOON: Duration = Duration::from_secs(120);
const PATH: &str = "/zklock/lock";
const BLOCKING: EventKind = EventKind::AcquireInvoked {
    role: LockRole::Exclusive,
    mode: AcquireMode::Blocking,
    lock: None,
};

async fn session(addr: &str, index: u32, recorder: &Arc<Recorder>) -> RecordingClient {
    let zk = ZkClient::connect(addr, SESSION_MS, CONNECT_MS)
        .await
        .expect("client connects");
    RecordingClient::new(Arc::new(zk), index, Arc::clone(recorder))
}

/// Acquires (blocking) and records it as the workload does.
async fn acquire<L: LockUnderTest>(client: &RecordingClient, lock: &L) -> L::Guard {
    client.record(BLOCKING);
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

/// Holds for `hold` unless the lost signal comes first, then releases; records it all.
async fn hold_and_release<L: LockUnderTest>(
    client: &RecordingClient,
    lock: &L,
    guard: L::Guard,
    hold: Duration,
) {
    tokio::select! {
        () = tokio::time::sleep(hold) => {}
        reason = lock.lost(&guard) => client.record(EventKind::Lost { reason }),
    }
    client.record(EventKind::ReleaseInvoked);
    match lock.release(guard).await {
        Ok(()) => client.record(EventKind::Released),
        Err(reason) => client.record(EventKind::ReleaseFailed { reason }),
    }
}

/// Runs CURATOR-498's steps with `recipe` on a server of its own, and judges the history.
async fn curator_498_steps<R: RealRecipe>(recipe: &R) -> Judged {
    let server = block_in_place(TestServer::start).expect("ZooKeeper server starts");
    let link = ClientLink::start(&[server.addr()]).await.unwrap();
    let recorder = Arc::new(Recorder::default());
    // Client 0 talks through the link (its faults), client 1 straight to the server.
    let old = session(&link.connect_string(), 0, &recorder).await;
    let other = session(&server.connect_string(), 1, &recorder).await;

    let old_lock = recipe.lock(old.clone(), LockRole::Exclusive, PATH);
    let old_guard = acquire(&old, &old_lock).await;
    let waiter = {
        let lock = recipe.lock(other.clone(), LockRole::Exclusive, PATH);
        let other = other.clone();
        tokio::spawn(async move {
            let guard = acquire(&other, &lock).await;
            hold_and_release(&other, &lock, guard, Duration::from_millis(50)).await;
            other.record(EventKind::Done);
        })
    };
    let deadline = tokio::time::Instant::now() + SOON;
    while other.get_children(PATH).await.map_or(0, |c| c.len()) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the waiter never queued"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Client 0's library declares its session expired; the server still holds it.
    old.record(EventKind::Fault {
        fault: FaultKind::LocalExpiry,
    });
    assert!(link.expire_locally(old.zk(), Duration::from_millis(2 * SESSION_MS)));
    hold_and_release(&old, &old_lock, old_guard, SOON).await;

    // Its process goes on with a new session, whose first lock node's create reply is lost.
    let new = session(&link.connect_string(), 0, &recorder).await;
    assert!(link.arm_lost_create_under(&format!("{PATH}/")));
    new.record(EventKind::Fault {
        fault: FaultKind::LostCreateResponse,
    });
    let new_lock = recipe.lock(new.clone(), LockRole::Exclusive, PATH);
    let new_guard = acquire(&new, &new_lock).await;
    assert_eq!(link.lost_reply_count(), 1, "the create reply was not lost");
    // Held past the old session's expiry on the server.
    let hold = Duration::from_millis(3 * SESSION_MS);
    hold_and_release(&new, &new_lock, new_guard, hold).await;
    new.record(EventKind::Done);
    tokio::time::timeout(SOON, waiter)
        .await
        .expect("the waiter finished")
        .expect("the waiter did not panic");

    let settle = Duration::from_millis(2 * SESSION_MS + 1_000);
    let left = settled_children(&other, PATH, settle).await;
    let history = recorder.history();
    #[allow(clippy::needless_update)]
    let cfg = CheckConfig {
        heal_ms: 0,
        liveness_bound_ms: SOON.as_millis() as u64,
        pauses_on: false,
        lock_path: PATH.to_owned(),
        final_lock_children: left,
        session_timeout_ms: SESSION_MS,
        ..CheckConfig::default()
    };
    judge_parallel(&history, &cfg)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_guid_outlives_session_is_caught_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let judged = curator_498_steps(&RealCanary(Bug::GuidOutlivesSession)).await;
    let violated = judged.report.violated();
    assert!(
        violated.contains(&Bug::GuidOutlivesSession.caught_by()),
        "not caught on a real server:\n{}\n{}",
        judged.report,
        zklock_checker::render_timeline(&judged.history)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_lock_passes_curator_498_steps_on_a_real_server() {
    if !harness::available_for_tests() {
        return;
    }
    let judged = curator_498_steps(&ShippedRealRecipe::default()).await;
    assert!(
        judged.report.ok(),
        "{}\n{}",
        judged.report,
        zklock_checker::render_timeline(&judged.history)
    );
}
