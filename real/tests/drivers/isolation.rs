//! The aimed isolation (`AimedAction::Isolate`): a client cut off exactly at the request
//! aimed at, its reconnects refused, while the server is made to keep its session and
//! nodes. A library that declares its session lost on its own meanwhile (Curator once
//! SUSPENDED outlasts the session timeout; zookeeper-client after 1.4 timeouts) goes on
//! with a new session while its old one's nodes stand: the window of the simulation's
//! `local_expiry`, scripted on a real server.

use super::{LOCK_PATH, driver, run, workload};
use crate::common::{assert_ok, check_run};
use std::collections::BTreeSet;
use zklock_real::driver::DriverKind;
use zklock_real::faults::FaultConfig;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::workload::{RunGoal, ShippedRealRecipe, WorkloadConfig};
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Two clients believe they hold (lead) at once.
fn two_hold_at_once(history: &History) -> bool {
    let mut holding = BTreeSet::new();
    for e in &history.events {
        match e.kind {
            EventKind::Acquired { .. } => {
                holding.insert(e.client);
                if holding.len() > 1 {
                    return true;
                }
            }
            EventKind::ReleaseInvoked | EventKind::Lost { .. } => {
                holding.remove(&e.client);
            }
            _ => {}
        }
    }
    false
}

/// CURATOR-696, in Debian's Curator 5.4.0: each latch is isolated at its leadership
/// check (its first full listing of the election, after its create), for twice the
/// session timeout. Curator declares each session lost, opens a new one, and on
/// RECONNECTED lists the election again: the first latch finds its old node, which the
/// server still holds, first, and leads on it. Its term outlasts the old session (holds
/// last through the kept sessions' end), whose expiry deletes that node: the other latch,
/// watching it, leads too. Aiming at both clients makes it certain whichever created
/// first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "missed CURATOR-696's schedule once in a CI run beside the other tests (never alone, \
            nor under stress-ng --cpu 8): not certain yet; run it with -- --ignored"]
async fn curators_leader_latch_leads_on_the_node_of_a_session_it_declared_lost_curator_696() {
    let Some(recipe) = driver(DriverKind::CuratorLeaderLatch) else {
        return;
    };
    let config = WorkloadConfig {
        clients: 2,
        attempts_per_client: 1,
        ..workload(Some(RunGoal::new(|h, _| two_hold_at_once(h))))
    };
    let isolate = AimedAction::Isolate {
        isolated_ms: config.session_timeout_ms * 2,
    };
    let at_check = AimedFault::new(&[op::GET_CHILDREN2], LOCK_PATH, isolate);
    let faults = FaultConfig {
        aimed: vec![(0, at_check.clone()), (1, at_check)],
        ..FaultConfig::default()
    };
    let latch = run(recipe, &config, &faults).await.unwrap();
    assert_eq!(latch.aimed_strikes, 2, "both checks were isolated");
    assert!(
        two_hold_at_once(&latch.history),
        "no two leaders: CURATOR-696's schedule did not happen"
    );
    let judged = check_run(&latch);
    assert!(
        judged.report.violated().contains(&"mutual_exclusion"),
        "{}",
        judged.report
    );
}

/// Client 0's session went Expired on its own side after its isolation struck, and `n`
/// acquisitions followed.
fn declared_expired_then_acquired(history: &History, n: usize) -> bool {
    let isolated = |f: &FaultKind| matches!(f, FaultKind::Partition { .. });
    super::struck_expired_then_acquired(history, isolated, n)
}

/// zklock's own lock, whose client (zookeeper-client) declares its session expired 1.4
/// timeouts into an isolation of two, while the server holds it and its lock node: the
/// client's next session must not take that node for its own (the owner-session check),
/// and every property holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_lock_holds_while_its_client_declares_a_kept_session_expired() {
    if !crate::common::zookeeper_available() {
        return;
    }
    let config = workload(Some(RunGoal::new(|h, _| {
        declared_expired_then_acquired(h, 10)
    })));
    let isolate = AimedAction::Isolate {
        isolated_ms: config.session_timeout_ms * 2,
    };
    let faults = FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(op::by_name("get-children").unwrap(), LOCK_PATH, isolate),
        )],
        ..FaultConfig::default()
    };
    let run = run(ShippedRealRecipe::default(), &config, &faults)
        .await
        .unwrap();
    assert_eq!(run.aimed_strikes, 1);
    assert!(
        declared_expired_then_acquired(&run.history, 10),
        "the client never declared its session expired, or the lock did not go on"
    );
    assert_ok(&check_run(&run));
}
