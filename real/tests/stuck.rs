//! A lock call that never returns is judged, not waited for: the run gives it up past its
//! liveness deadline and the checker reports a stuck release (`liveness_after_heal`), with
//! the client's last requests as its proxy saw them.
//!
//! The hang is scripted: the lock under test is the shipped lock whose release, when its
//! delete is lost to a connection loss, waits for an answer that never comes (the class
//! of a library stuck behind a lost reply), and an aimed fault drops that delete.
//!
//! Also the script's shapes that make a leak visible: a contender idle after giving up,
//! and holds longer than the others' attempts.

use crate::common::{check_run, zookeeper_available};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::ServerOptions;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::recording::RecordingClient;
use zklock_real::servers::Servers;
use zklock_real::workload::{RealRecipe, WorkloadConfig, run_recipe};
use zklock_recipe::history::{EventKind, LockRole};
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::ShippedLock;
use zklock_recipe::{Coordination, LockUnderTest};

const LOCK_PATH: &str = "/zklock/lock";

/// The shipped lock, but a release whose delete failed with a connection loss never
/// returns.
struct HangsOnLostDelete;

struct HangingLock {
    inner: ShippedLock<RecordingClient>,
    client: RecordingClient,
}

impl RealRecipe for HangsOnLostDelete {
    type Lock = HangingLock;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> HangingLock {
        HangingLock {
            inner: ShippedLock::new(client.clone(), role, path, LockOptions::default())
                .expect("a valid path"),
            client,
        }
    }
}

impl LockUnderTest for HangingLock {
    type Guard = <ShippedLock<RecordingClient> as LockUnderTest>::Guard;

    async fn acquire(&self) -> Result<Self::Guard, String> {
        self.inner.acquire().await
    }

    async fn acquire_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<Self::Guard>, String> {
        self.inner.acquire_timeout(timeout).await
    }

    fn token(&self, guard: &Self::Guard) -> i64 {
        self.inner.token(guard)
    }

    fn node(&self, guard: &Self::Guard) -> String {
        self.inner.node(guard)
    }

    async fn lost<'a>(&'a self, guard: &'a Self::Guard) -> String {
        self.inner.lost(guard).await
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        let node = self.inner.node(&guard);
        match self.client.delete(&node, None).await {
            Err(e) if e.is_connection_loss() => {
                // Holds on, waiting for a reply that was never sent.
                let _held = guard;
                std::future::pending().await
            }
            _ => self.inner.release(guard).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_never_returns_is_a_stuck_release_with_its_last_requests() {
    if !zookeeper_available() {
        return;
    }
    let config = WorkloadConfig {
        clients: 1,
        lock_path: LOCK_PATH.into(),
        attempts_per_client: 2,
        drop_every: 0,
        duration_ms: 500,
        session_timeout_ms: 2_000,
        // Only a hang reaches it: the stuck call must end the run long before.
        goal_deadline_ms: 300_000,
        ..WorkloadConfig::default()
    };
    // Client 0's first delete under the lock directory (its first release) is dropped
    // and its connection cut.
    let faults = FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(
                op::by_name("delete").unwrap(),
                format!("{LOCK_PATH}/"),
                AimedAction::DropRequest,
            ),
        )],
        ..FaultConfig::default()
    };
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    let run = run_recipe(servers, &config, &faults, HangsOnLostDelete)
        .await
        .unwrap();
    assert_eq!(run.aimed_strikes, 1, "the aimed drop never struck");
    let judged = check_run(&run);
    let verdict = judged
        .report
        .verdict("liveness_after_heal")
        .expect("liveness_after_heal is judged");
    let violation = verdict
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("the stuck release was not flagged:\n{}", judged.report));
    assert!(
        violation.summary.contains("a stuck release"),
        "{}",
        violation.summary
    );
    assert_eq!(violation.events[0].client, 0);
    let invoke = violation.events[0].index;
    assert!(matches!(
        run.history.events[invoke].kind,
        EventKind::ReleaseInvoked
    ));
    // Nothing answered it, and the client did nothing more.
    assert!(
        !run.history.events[invoke..].iter().any(|e| e.client == 0
            && matches!(
                e.kind,
                EventKind::Released | EventKind::ReleaseFailed { .. } | EventKind::Done
            )),
        "the release was answered"
    );
    // The client's last request its proxy saw is the dropped delete.
    let (seen, _) = &run.requests[0];
    let last = seen.last().expect("the proxy recorded client 0's requests");
    assert_eq!(op::name_of(last.op), Some("delete"), "{last:?}");
    assert!(last.path.starts_with(LOCK_PATH), "{last:?}");
}

/// Each give-up of `history` (an `AcquireFailed` that is not an error) with the time until
/// its client's next `AcquireInvoked`, in µs.
fn idles_after_give_ups(history: &zklock_recipe::history::History) -> Vec<u64> {
    let events = &history.events;
    events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::AcquireFailed { reason }
                if ["held by another", "timed out", "dropped"].contains(&reason.as_str()) =>
            {
                let next = events[i + 1..].iter().find(|n| {
                    n.client == e.client && matches!(n.kind, EventKind::AcquireInvoked { .. })
                })?;
                Some(next.time_us - e.time_us)
            }
            _ => None,
        })
        .collect()
}

/// A contender that gave up stays connected and idle for `idle_after_give_up_ms` before its
/// next attempt, and every `long_hold_every`-th hold lasts `long_hold_ms`: the run goes on
/// until a give-up was followed by another attempt and a long hold ended, so it shows
/// both whatever the machine's speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contender_that_gave_up_stays_idle_and_every_third_hold_is_long() {
    if !zookeeper_available() {
        return;
    }
    const IDLE_MS: u64 = 1_500;
    const LONG_MS: u64 = 2_500;
    let long_hold_ended = |h: &zklock_recipe::history::History| {
        // An `Acquired` and its client's next `ReleaseInvoked` at least LONG_MS apart.
        h.events.iter().enumerate().any(|(i, e)| {
            matches!(e.kind, EventKind::Acquired { .. })
                && h.events[i + 1..]
                    .iter()
                    .find(|n| n.client == e.client && matches!(n.kind, EventKind::ReleaseInvoked))
                    .is_some_and(|r| r.time_us - e.time_us >= LONG_MS * 1000)
        })
    };
    let config = WorkloadConfig {
        clients: 2,
        lock_path: LOCK_PATH.into(),
        duration_ms: 1_000,
        session_timeout_ms: 2_000,
        // Every other attempt a try: contention makes some find the lock held.
        drop_every: 0,
        idle_after_give_up_ms: IDLE_MS,
        long_hold_every: 3,
        long_hold_ms: LONG_MS,
        until: Some(zklock_real::workload::RunGoal::new(move |h, _| {
            !idles_after_give_ups(h).is_empty() && long_hold_ended(h)
        })),
        // Only a hang reaches it.
        goal_deadline_ms: 300_000,
        ..WorkloadConfig::default()
    };
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    let run = run_recipe(
        servers,
        &config,
        &FaultConfig::default(),
        zklock_real::workload::ShippedRealRecipe::default(),
    )
    .await
    .unwrap();
    let idles = idles_after_give_ups(&run.history);
    assert!(!idles.is_empty(), "no contender gave up and went on");
    assert!(
        idles.iter().all(|&us| us >= IDLE_MS * 1000),
        "a contender went on before its idle time: {idles:?} µs"
    );
    assert!(long_hold_ended(&run.history), "no long hold");
    crate::common::assert_ok(&check_run(&run));
}

/// The shipped lock, but every acquire also creates an ephemeral node in a directory of
/// its own (`/zklock/aux`) and never deletes it: a library's internal node left behind.
struct LeavesANodeElsewhere;

struct AuxLock {
    inner: ShippedLock<RecordingClient>,
    client: RecordingClient,
}

const AUX_DIR: &str = "/zklock/aux";

impl RealRecipe for LeavesANodeElsewhere {
    type Lock = AuxLock;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> AuxLock {
        AuxLock {
            inner: ShippedLock::new(client.clone(), role, path, LockOptions::default())
                .expect("a valid path"),
            client,
        }
    }
}

impl LockUnderTest for AuxLock {
    type Guard = <ShippedLock<RecordingClient> as LockUnderTest>::Guard;

    async fn acquire(&self) -> Result<Self::Guard, String> {
        use zklock_recipe::CreateMode;
        // Held first: the lock has made `/zklock` by then.
        let guard = self.inner.acquire().await?;
        match self
            .client
            .create(AUX_DIR, b"", CreateMode::Persistent)
            .await
        {
            Ok(_) | Err(zklock_recipe::ZkError::NodeExists) => {}
            Err(e) => return Err(e.to_string()),
        }
        let marker = format!("{AUX_DIR}/marker-");
        self.client
            .create(&marker, b"", CreateMode::EphemeralSequential)
            .await
            .map_err(|e| e.to_string())?;
        Ok(guard)
    }

    async fn acquire_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Option<Self::Guard>, String> {
        self.inner.acquire_timeout(timeout).await
    }

    fn token(&self, guard: &Self::Guard) -> i64 {
        self.inner.token(guard)
    }

    fn node(&self, guard: &Self::Guard) -> String {
        self.inner.node(guard)
    }

    async fn lost<'a>(&'a self, guard: &'a Self::Guard) -> String {
        self.inner.lost(guard).await
    }

    async fn release(&self, guard: Self::Guard) -> Result<(), String> {
        self.inner.release(guard).await
    }
}

/// The orphan check reads every directory the clients created nodes in, as their
/// proxies saw the creates, not only the lock directory: the node left in `/zklock/aux`
/// is an orphan of `liveness_after_heal`, which the lock directory alone does not show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_left_in_another_directory_the_library_touched_is_an_orphan() {
    if !zookeeper_available() {
        return;
    }
    let config = WorkloadConfig {
        clients: 1,
        lock_path: LOCK_PATH.into(),
        // One blocking attempt: it creates the node elsewhere, then takes the lock.
        attempts_per_client: 1,
        drop_every: 0,
        duration_ms: 500,
        session_timeout_ms: 2_000,
        goal_deadline_ms: 300_000,
        ..WorkloadConfig::default()
    };
    let faults = FaultConfig {
        // Proxies that record each request, and no fault.
        record_requests: true,
        ..FaultConfig::default()
    };
    let servers = Servers::start(1, ServerOptions::default()).unwrap();
    let run = run_recipe(servers, &config, &faults, LeavesANodeElsewhere)
        .await
        .unwrap();
    assert_eq!(run.final_lock_children, Vec::<String>::new());
    let [(dir, left)] = run.final_children_touched.as_slice() else {
        panic!("touched: {:?}", run.final_children_touched);
    };
    assert_eq!(dir, AUX_DIR);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("marker-"), "{left:?}");
    // The lock directory alone shows nothing; with the touched directories, an orphan.
    assert!(check_run(&run).report.ok());
    let judged = crate::common::check_run_shaped(&run);
    let violation = judged
        .report
        .verdict("liveness_after_heal")
        .and_then(|v| v.report.as_ref())
        .unwrap_or_else(|| panic!("the orphan was not flagged:\n{}", judged.report));
    assert!(
        violation.summary.contains("/zklock/aux/marker-"),
        "{}",
        violation.summary
    );
}
