//! Mixed runs: clients of several libraries on one lock directory (see
//! `zklock_real::driver::mixed`), judged as one history.

use super::{lost_delete_reply, run, workload};
use crate::common::{assert_ok, check_run, judge};
use zklock_checker::CheckConfig;
use zklock_real::driver::DriverKind;
use zklock_real::driver::mixed::{LockName, MixedRecipe};
use zklock_real::faults::FaultConfig;
use zklock_real::workload::RunGoal;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// The mix, or None (after a notice) when a library is missing; under CI a missing
/// library fails the test.
fn mix(locks: &[LockName], allow_foreign: bool) -> Option<MixedRecipe> {
    if !crate::common::zookeeper_available() {
        return None;
    }
    match MixedRecipe::prepare(locks.to_vec(), allow_foreign) {
        Ok(recipe) => Some(recipe),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but the mix cannot run: {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// After the first aimed strike: a hold handed from a client of one lock of the mix
/// (client index mod `locks`) to a client of another, at least `n` times.
fn handed_across_libraries(history: &History, locks: usize, n: usize) -> bool {
    let Some(at) = history.events.iter().position(|e| {
        matches!(
            e.kind,
            EventKind::Fault {
                fault: FaultKind::ConnectionLoss
            }
        )
    }) else {
        return false;
    };
    let holders = history.events[at..]
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .map(|e| e.client as usize % locks);
    let mut last = None;
    let mut across = 0;
    for lock in holders {
        if last.is_some_and(|l| l != lock) {
            across += 1;
        }
        last = Some(lock);
    }
    across >= n
}

/// Interoperating locks on one directory, each client's first release's reply withheld
/// (clients 0 and 1: one of each lock): every property holds, with holds handed between
/// the libraries. No acquire is cancelled: this is about the libraries' nodes ordering
/// each other, and a cancelled acquire of Kazoo's can leave its node behind on a real
/// server's timing (python-zk/kazoo#732, docs/libraries.md), a library's own bug that
/// would make this test fail by chance; `drivers.rs` pins that one with a certain
/// schedule.
async fn a_mix_passes_lost_delete_replies(second: DriverKind) {
    let locks = [LockName::Zklock, LockName::Driver(second)];
    let Some(recipe) = mix(&locks, false) else {
        return;
    };
    let status = recipe.status().expect("a driver in the mix");
    let mut config = workload(Some(RunGoal::new(|h, _| handed_across_libraries(h, 2, 20))));
    config.clients = 4;
    config.drop_every = 0;
    let mut faults = lost_delete_reply();
    let mut second_client = faults.aimed[0].clone();
    second_client.0 = 1;
    faults.aimed.push(second_client);
    let run = run(recipe, &config, &faults).await.unwrap();
    assert_eq!(status.failure(), None, "a driver failed");
    assert!(handed_across_libraries(&run.history, 2, 20));
    assert_ok(&check_run(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_lock_and_curators_mutex_interoperate_under_lost_delete_replies() {
    a_mix_passes_lost_delete_replies(DriverKind::CuratorMutex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_lock_and_kazoos_lock_interoperate_under_lost_delete_replies() {
    a_mix_passes_lost_delete_replies(DriverKind::KazooLock).await;
}

/// Curator 5.4's InterProcessMutex orders a directory's children by the text after their
/// last `lock-`; Kazoo's nodes (`<uuid>__lock__<seq>`) have none, so Curator sorts them
/// by their whole name, after its own, and takes the lock while a Kazoo client holds it.
/// zklock refuses this mix; forced (`--allow-foreign-naming`), the checker must flag the
/// two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_mutex_beside_kazoos_lock_is_flagged_when_forced() {
    let locks = [
        LockName::Driver(DriverKind::CuratorMutex),
        LockName::Driver(DriverKind::KazooLock),
    ];
    assert!(MixedRecipe::prepare(locks.to_vec(), false).is_err());
    let Some(recipe) = mix(&locks, true) else {
        return;
    };
    let two_holders = |h: &History, facts: &zklock_recipe::history::RunFacts| {
        let judged = judge(h, &CheckConfig::from(facts.clone()));
        judged.report.violated().contains(&"mutual_exclusion")
    };
    let mut config = workload(Some(RunGoal::new(two_holders)));
    config.clients = 2;
    let run = run(recipe, &config, &FaultConfig::default()).await.unwrap();
    let judged = check_run(&run);
    assert!(
        judged.report.violated().contains(&"mutual_exclusion"),
        "the checker did not flag the two holders:\n{}",
        judged.report
    );
}
