//! Released libraries' leader elections through their drivers: each hold is a term of
//! leadership, so the lock's properties judge the election (mutual_exclusion: two
//! leaders at once; liveness_after_heal: contenders and no leader). Fault-free runs go
//! on until terms were contended for, so they prove the driver's terms are real
//! elections the checker can see, not a machine's speed; the fault search is
//! `zklock search --lock <kind>` (docs/libraries.md).

use super::passes_contended_fault_free;
use zklock_real::driver::DriverKind;

/// Terms won while another contender waited: enough that every contender led and
/// waited, few enough that a JVM's start dominates the test.
const TERMS: u64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoos_election_passes_a_contended_fault_free_run() {
    passes_contended_fault_free(DriverKind::KazooElection, TERMS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_leader_latch_passes_a_contended_fault_free_run() {
    passes_contended_fault_free(DriverKind::CuratorLeaderLatch, TERMS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_leader_selector_passes_a_contended_fault_free_run() {
    passes_contended_fault_free(DriverKind::CuratorLeaderSelector, TERMS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeepers_leader_election_support_passes_a_contended_fault_free_run() {
    passes_contended_fault_free(DriverKind::ZookeeperElection, TERMS).await;
}

/// Regression: Curator's driver read a term's token through Curator's retrying
/// `checkExists()`. Expired at that read, it read again on the new session, found the old
/// session's node gone and reported a term granted on a gone node (token -1), which the
/// search took for CURATOR-696's class in `LeaderLatch`. The read is now one request on
/// the session's own handle: the expiry fails it, and the driver gives the term back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_driver_reads_no_gone_node_when_its_token_read_meets_an_expiry() {
    use super::{aimed_at_first, run, workload};
    use crate::common::check_run;
    use zklock_real::proxy::AimedAction;
    use zklock_real::workload::RunGoal;
    use zklock_recipe::history::{EventKind, FaultKind, History};

    let Some(recipe) = super::driver(DriverKind::CuratorLeaderLatch) else {
        return;
    };
    // Client 0's first `exists` under the election is the driver's token read (the latch
    // watches its predecessor with getData): expired there, then terms go on.
    let struck_then_led = |h: &History, n: usize| {
        let events = &h.events;
        let Some(at) = events.iter().position(|e| {
            e.client == 0
                && matches!(
                    e.kind,
                    EventKind::Fault {
                        fault: FaultKind::ForcedExpiry
                    }
                )
        }) else {
            return false;
        };
        (events[at..].iter())
            .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
            .count()
            >= n
    };
    let config = workload(Some(RunGoal::new(move |h, _| struck_then_led(h, 4))));
    let faults = aimed_at_first("exists", AimedAction::Expire);
    let latch = run(recipe, &config, &faults).await.unwrap();
    assert!(
        struck_then_led(&latch.history, 4),
        "the expiry never struck the token read"
    );
    let gone = (latch.history.events.iter())
        .any(|e| matches!(e.kind, EventKind::Acquired { token: -1, .. }));
    assert!(!gone, "a term was reported on a gone node (token -1)");
    let judged = check_run(&latch);
    let violated = judged.report.violated();
    for p in ["fencing_token_order", "mutual_exclusion"] {
        assert!(!violated.contains(&p), "{p}:\n{}", judged.report);
    }
}

/// CURATOR-724, in Debian's Curator 5.4.0: the latch's path is a container, which the
/// server deletes once it is empty. One contender, its session expired at its leadership
/// check (the latch's first full listing of the election, after its create): its node
/// goes with the session, the empty path is reaped (the server checks its containers
/// every 100 ms), and on RECONNECTED, with a new session, 5.4.0's latch lists the path,
/// gets NoNode, and drops it: nothing makes the path again, and it never leads. The run
/// goes on until the waiter has waited twice the liveness bound; the same script on a
/// server that keeps its containers (ZooKeeper's 60 s) leads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_leader_latch_never_leads_again_once_its_reaped_path_is_gone_curator_724() {
    use super::{a_waiter_is_stuck, workload};
    use crate::common::{assert_ok, check_run};
    use zklock_real::driver::DriverRecipe;
    use zklock_real::faults::FaultConfig;
    use zklock_real::harness::ServerOptions;
    use zklock_real::proxy::{AimedAction, AimedFault, op};
    use zklock_real::servers::Servers;
    use zklock_real::workload::{RunGoal, WorkloadConfig, run_recipe};

    let Some(recipe) = super::driver(DriverKind::CuratorLeaderLatch) else {
        return;
    };
    let config = WorkloadConfig {
        clients: 1,
        attempts_per_client: 1,
        session_timeout_ms: 2_000,
        ..workload(Some(RunGoal::new(|h, facts| {
            a_waiter_is_stuck(h, 2 * facts.liveness_bound_ms, facts.run_end_us)
        })))
    };
    let faults = FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(&[op::GET_CHILDREN2], super::LOCK_PATH, AimedAction::Expire),
        )],
        ..FaultConfig::default()
    };
    let reaping = ServerOptions::default().with_container_check_interval_ms(100);
    let servers = Servers::start(1, reaping).unwrap();
    let stuck = run_recipe(servers, &config, &faults, recipe).await.unwrap();
    assert_eq!(stuck.aimed_strikes, 1);
    let judged = check_run(&stuck);
    assert!(
        judged.report.violated().contains(&"liveness_after_heal"),
        "the latch led again after its path was reaped:\n{}",
        judged.report
    );
    // The containers kept: the latch makes its node again and leads.
    let config = WorkloadConfig {
        until: None,
        ..config
    };
    let recipe = DriverRecipe::prepare(DriverKind::CuratorLeaderLatch).unwrap();
    let kept = super::run(recipe, &config, &faults).await.unwrap();
    assert_eq!(kept.aimed_strikes, 1);
    assert_ok(&check_run(&kept));
}
