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
