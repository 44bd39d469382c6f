//! The aimed outage (`AimedAction::Outage`): every server of the run killed exactly when
//! the request aimed at reaches the proxy, and restarted on its data a while later, so
//! that "the whole service went down and came back" is scripted, not hoped for. The
//! restarted server restores the sessions it held, with fresh timeouts.

use super::{LOCK_PATH, run, workload};
use crate::common::{assert_ok, check_run};
use zklock_real::faults::FaultConfig;
use zklock_real::proxy::{AimedAction, AimedFault, op};
use zklock_real::workload::{RunGoal, ShippedRealRecipe};
use zklock_recipe::history::{EventKind, FaultKind, History};

/// Longer than the workload's session timeout: the clients' sessions would have expired
/// on a server that stayed up without them.
const DOWN_MS: u64 = 3_000;

/// Client 0's first listing of the lock directory takes the service down.
fn outage_while_acquiring() -> FaultConfig {
    FaultConfig {
        aimed: vec![(
            0,
            AimedFault::new(
                op::by_name("get-children").unwrap(),
                LOCK_PATH,
                AimedAction::Outage { down_ms: DOWN_MS },
            ),
        )],
        ..FaultConfig::default()
    }
}

/// The outage's two marks, its strike and the service's return (each a connection loss
/// of every client), at least `DOWN_MS` apart, and `n` acquisitions after the return.
fn down_back_then_acquired(history: &History, clients: u32, n: usize) -> bool {
    let losses: Vec<(usize, u64)> = (history.events.iter().enumerate())
        .filter(|(_, e)| {
            e.client == 0
                && matches!(
                    e.kind,
                    EventKind::Fault {
                        fault: FaultKind::ConnectionLoss
                    }
                )
        })
        .map(|(i, e)| (i, e.time_us))
        .collect();
    let [(_, down_us), (back, back_us), ..] = losses[..] else {
        return false;
    };
    let every_client_marked = (0..clients).all(|c| {
        (history.events.iter())
            .filter(|e| {
                e.client == c
                    && matches!(
                        e.kind,
                        EventKind::Fault {
                            fault: FaultKind::ConnectionLoss
                        }
                    )
            })
            .count()
            >= 2
    });
    every_client_marked
        && back_us.saturating_sub(down_us) >= DOWN_MS * 1_000
        && (history.events[back..].iter())
            .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
            .count()
            >= n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aimed_outage_takes_every_server_down_and_back_and_the_shipped_lock_passes() {
    if !crate::common::zookeeper_available() {
        return;
    }
    let config = workload(Some(RunGoal::new(|h, _| down_back_then_acquired(h, 3, 10))));
    let clients = config.clients;
    let run = run(
        ShippedRealRecipe::default(),
        &config,
        &outage_while_acquiring(),
    )
    .await
    .unwrap();
    assert!(
        down_back_then_acquired(&run.history, clients, 10),
        "the outage never struck, or the lock did not go on after it"
    );
    assert_eq!(run.aimed_strikes, 1);
    assert_ok(&check_run(&run));
}
