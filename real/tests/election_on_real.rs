//! zklock's leader latch on a real ZooKeeper server with faults, driven as a lock (each
//! hold a term of leadership) and judged as the simulation judges the election: the
//! lock's properties, then `election_leader_owns_node`.
//!
//! Needs Java and ZooKeeper (`apt-get install -y zookeeper`); without them the test prints
//! "skipping: ..." and passes, except under `CI=true`, where it fails.

use crate::common::{
    assert_ok, check_run_shaped, faults_until_each_struck, until_counters, zookeeper_available,
};
use tokio::task::block_in_place;
use zklock_real::harness::ServerOptions;
use zklock_real::servers::Servers;
use zklock_real::workload::{LatchRealRecipe, WorkloadConfig, run_recipe};

/// Session timeout of the test's clients: short, so expiries take about a second.
const SESSION_MS: u64 = 2_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latch_under_faults_elects_one_leader_at_a_time_on_its_own_node() {
    if !zookeeper_available() {
        return;
    }
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    // On until terms followed terms with contenders waiting, and every fault kind struck,
    // however slow the machine: a pass then means something.
    let config = WorkloadConfig {
        clients: 4,
        duration_ms: 4_000,
        session_timeout_ms: SESSION_MS,
        acquire_timeout_ms: 1_000,
        until: until_counters(|n| n.acquisitions >= 30 && n.contended_acquisitions >= 10),
        ..WorkloadConfig::default()
    };
    let plan = faults_until_each_struck("cut,lost-create,expire,black-hole,crash", 7, SESSION_MS);
    let run = run_recipe(servers, &config, &plan, LatchRealRecipe::default())
        .await
        .expect("the run completes");
    assert!(run.election && run.tokens_are_czxids);
    let judged = check_run_shaped(&run);
    eprintln!("{}{}", judged.report, run.faults);
    assert_ok(&judged);
    let last = judged.report.verdicts.last().expect("verdicts");
    assert_eq!(last.property, "election_leader_owns_node");
    let n = &judged.report.counters;
    assert!(
        n.acquisitions >= 30 && n.contended_acquisitions >= 10,
        "{n:?}"
    );
    assert!(n.total_faults() >= 5, "too few faults struck: {n:?}");
    assert_eq!(run.final_lock_children, Vec::<String>::new());
}
