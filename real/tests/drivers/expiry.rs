//! The aimed expiry (`AimedAction::Expire`): a client's session expired at the server
//! exactly when its request aimed at reaches the proxy, so that a "session expired while
//! acquiring" schedule is scripted, not hoped for.

use super::{LOCK_PATH, aimed_at_first, run, workload};
use crate::common::{assert_ok, check_run};
use zklock_real::faults::FaultConfig;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::workload::{RunGoal, ShippedRealRecipe};
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Client 0's first listing of the lock directory (right after its node's create, before
/// it knows its place) never reaches the server: its session is expired there instead.
pub fn expired_while_acquiring() -> FaultConfig {
    FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(
                op::by_name("get-children").unwrap(),
                LOCK_PATH,
                AimedAction::Expire,
            ),
        )],
        ..FaultConfig::default()
    }
}

/// Client 0's aimed expiry struck, its session (the recording session, which is the
/// shipped lock's) learned Expired, and `n` acquisitions followed.
fn expired_then_acquired(history: &History, n: usize) -> bool {
    let forced = |f: &FaultKind| *f == FaultKind::ForcedExpiry;
    super::struck_expired_then_acquired(history, forced, n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aimed_expiry_expires_the_session_and_the_shipped_lock_passes() {
    if !crate::common::zookeeper_available() {
        return;
    }
    let config = workload(Some(RunGoal::new(|h, _| expired_then_acquired(h, 20))));
    let run = run(
        ShippedRealRecipe::default(),
        &config,
        &expired_while_acquiring(),
    )
    .await
    .unwrap();
    assert!(
        expired_then_acquired(&run.history, 20),
        "the session never expired"
    );
    assert_ok(&check_run(&run));
}

/// Client 0's first delete under the lock directory never reaches the server: its
/// session is expired there instead.
fn expired_at_first_delete() -> FaultConfig {
    aimed_at_first("delete", AimedAction::Expire)
}

/// Curator 5.4.0's `InterProcessSemaphoreMutex` takes a lease, then releases its internal
/// mutex (`locks/`): client 0's first delete under the directory. Its session expired
/// there, the lease node goes with it, and yet the acquire returns that lease once the
/// client has a new session: the holder's lease node no longer exists (the driver reads no
/// node for its token, -1), and another client may hold meanwhile. The checker must flag
/// it; the shipped lock passes the same schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curators_semaphore_mutex_grants_a_lease_its_expired_session_lost() {
    let Some(recipe) = super::driver(zklock_real::driver::DriverKind::CuratorSemaphoreMutex) else {
        return;
    };
    let flagged = |h: &History, facts: &zklock_recipe::history::RunFacts| {
        let judged = crate::common::judge(h, &zklock_checker::CheckConfig::from(facts.clone()));
        judged.report.violated().contains(&"fencing_token_order")
    };
    let mut config = workload(Some(RunGoal::new(flagged)));
    config.drop_every = 0;
    let curator = run(recipe, &config, &expired_at_first_delete())
        .await
        .unwrap();
    let judged = check_run(&curator);
    assert!(
        judged.report.violated().contains(&"fencing_token_order"),
        "the checker did not flag the lost lease:\n{}",
        judged.report
    );
    let lost_lease = curator
        .history
        .events
        .iter()
        .any(|e| e.client == 0 && matches!(&e.kind, EventKind::Acquired { token: -1, .. }));
    assert!(
        lost_lease,
        "client 0 was never granted a lease without a node"
    );
    let mut shipped_config = workload(Some(RunGoal::new(|h, _| expired_then_acquired(h, 20))));
    shipped_config.drop_every = 0;
    let shipped = run(
        ShippedRealRecipe::default(),
        &shipped_config,
        &expired_at_first_delete(),
    )
    .await
    .unwrap();
    assert!(expired_then_acquired(&shipped.history, 20));
    assert_ok(&check_run(&shipped));
}
