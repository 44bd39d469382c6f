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
