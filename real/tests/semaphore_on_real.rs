//! zklock's counting semaphore, and a run of several locks, on a real ZooKeeper server
//! with faults, judged as the simulation judges them: `semaphore_leases` first for the
//! semaphore, every property per lock directory for several locks.
//!
//! Needs Java and ZooKeeper (`apt-get install -y zookeeper`); without them each test prints
//! "skipping: ..." and passes, except under `CI=true`, where it fails.

use crate::common::{assert_ok, check_run_shaped, faults_until_each_struck, zookeeper_available};
use std::collections::BTreeSet;
use tokio::task::block_in_place;
use zklock_checker::CheckConfig;
use zklock_checker::concurrent::judge_parallel;
use zklock_checker::properties::semaphore_leases;
use zklock_checker::real_judge::{RunShape, judge_real};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::ServerOptions;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::servers::Servers;
use zklock_real::workload::{
    RunGoal, SemaphoreRealRecipe, WorkloadConfig, lock_of, run_recipe, run_workload,
};
use zklock_recipe::SessionId;
use zklock_recipe::history::{EventKind, FaultKind, History};
use zklock_recipe::semaphore::inner_lock_path;

/// Session timeout of the suite's clients: short, so expiries take about a second.
const SESSION_MS: u64 = 2_000;

fn workload(clients: u32, duration_ms: u64) -> WorkloadConfig {
    WorkloadConfig {
        clients,
        duration_ms,
        session_timeout_ms: SESSION_MS,
        acquire_timeout_ms: 1_000,
        ..WorkloadConfig::default()
    }
}

/// Faults until every kind struck once, then the heal; every crash at once.
fn faults(set: &str) -> FaultConfig {
    FaultConfig {
        crash_in_hold_percent: 0,
        ..faults_until_each_struck(set, 11, SESSION_MS)
    }
}

/// The most holders at once `semaphore_leases` saw, from its note.
fn most_holders(history: &History) -> bool {
    semaphore_leases::check(history, 2, false).note.as_deref()
        == Some("at most 2 of 2 leases held at once")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_under_faults_never_admits_more_than_its_leases_and_fills_them() {
    if !zookeeper_available() {
        return;
    }
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    // On until both leases were held at once and there was contention, however slow the
    // machine: a pass then means something.
    let config = WorkloadConfig {
        until: Some(RunGoal::new(|history, facts| {
            let n = judge_parallel(history, &CheckConfig::from(facts.clone()))
                .report
                .counters;
            n.acquisitions >= 40 && n.contended_acquisitions >= 10 && most_holders(history)
        })),
        ..workload(5, 4_000)
    };
    let plan = faults("cut,lost-create,expire,black-hole,local-expire,crash");
    let run = run_recipe(servers, &config, &plan, SemaphoreRealRecipe::default())
        .await
        .expect("the run completes");
    assert_eq!(run.leases, Some(2));
    let judged = check_run_shaped(&run);
    eprintln!("{}{}", judged.report, run.faults);
    assert_ok(&judged);
    let first = &judged.report.verdicts[0];
    assert_eq!(first.property, "semaphore_leases");
    assert_eq!(
        first.note.as_deref(),
        Some("at most 2 of 2 leases held at once")
    );
    let n = &judged.report.counters;
    assert!(
        n.acquisitions >= 40 && n.contended_acquisitions >= 10,
        "{n:?}"
    );
    assert!(n.total_faults() >= 6, "too few faults struck: {n:?}");
    assert_eq!(run.final_lock_children, Vec::<String>::new());
}

/// Client `c`'s acquisitions' locks, in order: `None` for an unnamed lock.
fn locks_taken(history: &History, client: u32) -> Vec<Option<String>> {
    history
        .events
        .iter()
        .filter(|e| e.client == client)
        .filter_map(|e| match &e.kind {
            EventKind::AcquireInvoked { lock, .. } => Some(lock.clone()),
            _ => None,
        })
        .collect()
}

/// Two holds of different locks overlapped: judged as one lock, the history fails
/// mutual_exclusion.
fn held_two_locks_at_once(history: &History, facts: &zklock_recipe::history::RunFacts) -> bool {
    let as_one = judge_parallel(history, &CheckConfig::from(facts.clone())).report;
    !as_one.verdict("mutual_exclusion").expect("judged").ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_locks_under_faults_are_each_judged_alone_and_each_acquisition_takes_the_seeds_lock()
{
    if !zookeeper_available() {
        return;
    }
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    let config = WorkloadConfig {
        locks: 3,
        lock_seed: 5,
        // On until holds of different locks overlapped (what per-lock judging is for) and
        // every lock was contended.
        until: Some(RunGoal::new(|history, facts| {
            let paths = zklock_real::workload::lock_paths("/zklock/lock", 3);
            let shape = RunShape {
                locks: paths.into_iter().map(|p| (p, Vec::new())).collect(),
                ..RunShape::default()
            };
            let n = judge_real(history, &CheckConfig::from(facts.clone()), &shape)
                .report
                .counters;
            n.acquisitions >= 60
                && n.contended_acquisitions >= 10
                && held_two_locks_at_once(history, facts)
        })),
        ..workload(6, 4_000)
    };
    // No crash: a restarted process starts its attempts again, and this test follows
    // each client's attempts from the first.
    let plan = faults("cut,lost-create,expire,black-hole");
    let run = run_workload(servers, &config, &plan)
        .await
        .expect("the run completes");
    let judged = check_run_shaped(&run);
    eprintln!("{}{}", judged.report, run.faults);
    assert_ok(&judged);
    let paths = config.lock_paths();
    assert_eq!(
        run.final_children_by_lock,
        paths
            .iter()
            .map(|p| (p.clone(), Vec::new()))
            .collect::<Vec<_>>()
    );
    // Judged as one lock, the same history fails: the holds of different locks overlapped.
    assert!(held_two_locks_at_once(&run.history, &run.facts()));
    // Every acquisition named its lock, the one the seed picks for its client and attempt,
    // and every lock was taken.
    let mut taken = BTreeSet::new();
    for client in 0..config.clients {
        let locks = locks_taken(&run.history, client);
        assert!(!locks.is_empty(), "client {client} never acquired");
        for (k, lock) in locks.iter().enumerate() {
            let expected = &paths[lock_of(5, client as usize, k as u64, 3)];
            assert_eq!(lock.as_ref(), Some(expected), "client {client} attempt {k}");
            taken.insert(expected.clone());
        }
    }
    assert_eq!(taken.len(), 3, "{taken:?}");
    let n = &judged.report.counters;
    assert!(n.total_faults() >= 4, "too few faults struck: {n:?}");
}

/// Client 0's first delete under the semaphore's inner lock is its release of that lock,
/// right after its lease was granted: the proxy drops it and the session is expired at
/// the server there.
fn expired_releasing_the_inner_lock() -> FaultConfig {
    FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(
                op::by_name("delete").unwrap(),
                format!("{}/", inner_lock_path("/zklock/lock")),
                AimedAction::Expire,
            ),
        )],
        ..FaultConfig::default()
    }
}

/// The session client 0's aimed expiry struck, and the index of that event.
fn struck(history: &History) -> Option<(usize, SessionId)> {
    history.events.iter().enumerate().find_map(|(i, e)| {
        let forced = matches!(
            e.kind,
            EventKind::Fault {
                fault: FaultKind::ForcedExpiry
            }
        );
        (e.client == 0 && forced).then_some((i, e.session))
    })
}

/// A lease taken, then its session expired while the inner lock was being released: the
/// acquire must fail, not return the lease its session lost. (A run under every fault
/// once admitted 3 holders of 2 this way.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_session_expired_while_releasing_the_inner_lock_is_not_granted() {
    if !zookeeper_available() {
        return;
    }
    let servers = block_in_place(|| Servers::start(1, ServerOptions::default())).unwrap();
    // On until the expiry struck and 20 acquisitions followed, the victim's included.
    let config = WorkloadConfig {
        until: Some(RunGoal::new(|history, _| {
            struck(history).is_some_and(|(i, _)| {
                history.events[i..]
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
                    .count()
                    >= 20
            })
        })),
        drop_every: 0,
        ..workload(3, 4_000)
    };
    let run = run_recipe(
        servers,
        &config,
        &expired_releasing_the_inner_lock(),
        SemaphoreRealRecipe::default(),
    )
    .await
    .expect("the run completes");
    let (i, victim) = struck(&run.history).expect("the aimed expiry struck");
    let granted_after: Vec<_> = run.history.events[i..]
        .iter()
        .filter(|e| e.session == victim && matches!(e.kind, EventKind::Acquired { .. }))
        .collect();
    assert!(
        granted_after.is_empty(),
        "a lease was granted on the session expired at #{i}: {granted_after:?}"
    );
    let judged = check_run_shaped(&run);
    assert_ok(&judged);
}
