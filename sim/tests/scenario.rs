//! Scenario runs: determinism, replay, and that faults really strike.

use zklock_recipe::history::{EventKind, History};
use zklock_sim::{RandomChooser, ReplayChooser, Scenario, ShippedRecipe, run_scenario_with};

fn small() -> Scenario {
    Scenario {
        clients: 3,
        acquisitions_per_client: 6,
        ..Scenario::default()
    }
}

fn count(h: &History, f: impl Fn(&EventKind) -> bool) -> usize {
    h.events.iter().filter(|e| f(&e.kind)).count()
}

#[test]
fn same_seed_same_history_and_madsim_order_does_not_matter() {
    let sc = small();
    let r = ShippedRecipe::default();
    let a = run_scenario_with(&sc, 7, Box::new(RandomChooser::new(7)), &r);
    let b = run_scenario_with(&sc, 7, Box::new(RandomChooser::new(7)), &r);
    assert_eq!(a.history, b.history);
    assert_eq!(a.choices, b.choices);
    for madsim_seed in [1, 2, 3] {
        let c = run_scenario_with(&sc, madsim_seed, Box::new(RandomChooser::new(7)), &r);
        assert_eq!(c.history, a.history, "madsim seed {madsim_seed}");
    }
}

#[test]
fn replaying_the_choices_reproduces_the_history() {
    let sc = small();
    let r = ShippedRecipe::default();
    for seed in 0..5 {
        let a = run_scenario_with(&sc, seed, Box::new(RandomChooser::new(seed)), &r);
        let b = run_scenario_with(
            &sc,
            seed,
            Box::new(ReplayChooser::new(a.choices.clone())),
            &r,
        );
        assert_eq!(a.history, b.history, "seed {seed}");
        assert_eq!(a.choices, b.choices);
    }
}

#[test]
fn faults_strike_and_locks_are_acquired() {
    let sc = Scenario {
        clients: 5,
        acquisitions_per_client: 20,
        ..Scenario::default()
    };
    let r = ShippedRecipe::default();
    let (mut faults, mut acquired) = (0, 0);
    for seed in 0..10 {
        let o = run_scenario_with(&sc, seed, Box::new(RandomChooser::new(seed)), &r);
        assert!(o.error.is_none(), "seed {seed}: {:?}", o.error);
        faults += count(&o.history, |k| matches!(k, EventKind::Fault { .. }));
        acquired += count(&o.history, |k| matches!(k, EventKind::Acquired { .. }));
    }
    assert!(faults > 0, "no fault struck in 10 seeds");
    assert!(acquired > 100, "only {acquired} acquisitions");
}

/// The worker used to stop at its session's expiry, so the rest of that client's
/// acquisitions never ran; now it opens a new session with a new lock, as `zklock real`
/// does, and runs them all.
#[test]
fn a_client_whose_session_expired_goes_on_with_a_new_session() {
    let sc = Scenario::default();
    let r = ShippedRecipe::default();
    let mut renewed = 0;
    for seed in 0..20 {
        let o = run_scenario_with(&sc, seed, Box::new(RandomChooser::new(seed)), &r);
        assert!(o.error.is_none(), "seed {seed}: {:?}", o.error);
        for c in 0..sc.clients {
            let mine: Vec<_> = o.history.events.iter().filter(|e| e.client == c).collect();
            let crashed = mine.iter().any(|e| {
                matches!(
                    e.kind,
                    EventKind::Fault {
                        fault: zklock_recipe::history::FaultKind::Crash
                    }
                )
            });
            if crashed {
                continue;
            }
            let invoked = mine
                .iter()
                .filter(|e| matches!(e.kind, EventKind::AcquireInvoked { .. }))
                .count();
            assert_eq!(
                invoked, sc.acquisitions_per_client as usize,
                "seed {seed} c{c}: every attempt runs"
            );
            // Every attempt after an expiry runs on a session that did not expire.
            let expired_at = mine.iter().position(|e| {
                e.kind
                    == EventKind::Session {
                        state: zklock_recipe::SessionState::Expired,
                    }
            });
            if let Some(i) = expired_at
                && let Some(next) = mine[i..]
                    .iter()
                    .find(|e| matches!(e.kind, EventKind::AcquireInvoked { .. }))
            {
                assert_ne!(next.session, mine[i].session, "seed {seed} c{c}");
                renewed += 1;
            }
            assert!(mine.iter().any(|e| matches!(e.kind, EventKind::Done)));
        }
    }
    assert!(renewed > 0, "no client's session expired in 20 seeds");
}
