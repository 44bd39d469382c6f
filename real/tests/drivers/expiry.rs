//! The aimed expiry (`AimedAction::Expire`): a client's session expired at the server
//! exactly when its request aimed at reaches the proxy, so that a "session expired while
//! acquiring" schedule is scripted, not hoped for.

use super::{LOCK_PATH, run, workload};
use crate::common::{assert_ok, check_run};
use zklock_real::faults::FaultConfig;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::workload::{RunGoal, ShippedRealRecipe};
use zklock_recipe::SessionState;
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Client 0's first listing of the lock directory (right after its node's create, before
/// it knows its place) never reaches the server: its session is expired there instead.
pub fn expired_while_acquiring() -> FaultConfig {
    FaultConfig {
        aimed: vec![(
            0,
            AimedFault {
                ops: op::by_name("get-children").unwrap().to_vec(),
                under: LOCK_PATH.into(),
                action: AimedAction::Expire,
            },
        )],
        ..FaultConfig::default()
    }
}

/// Client 0's aimed expiry struck, its session (the recording session, which is the
/// shipped lock's) learned Expired, and `n` acquisitions followed.
fn expired_then_acquired(history: &History, n: usize) -> bool {
    let events = &history.events;
    let Some(struck) = events.iter().position(|e| {
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
    let victim = events[struck].session;
    let Some(expired) = events[struck..].iter().position(|e| {
        e.session == victim
            && matches!(
                e.kind,
                EventKind::Session {
                    state: SessionState::Expired
                }
            )
    }) else {
        return false;
    };
    events[struck + expired..]
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .count()
        >= n
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
