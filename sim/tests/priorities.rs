//! PCT-style request order (`Scenario::priorities`): the ready client of highest priority
//! runs; priorities and change points are chooser draws, so a run replays from its
//! choices.

use std::collections::VecDeque;
use zklock_recipe::history::EventKind;
use zklock_sim::{
    ChoiceKind, Chooser, Faults, Priorities, Rate, ReplayChooser, Scenario, ShippedRecipe,
    run_scenario, run_scenario_with,
};

/// Answers priority draws from a script, in order, and every other draw 0; a request
/// order drawn uniformly would be a `NextRequest` draw, which it refuses.
struct Ranks(VecDeque<usize>);

impl Chooser for Ranks {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        assert_ne!(kind, ChoiceKind::NextRequest, "an order drawn uniformly");
        match kind {
            ChoiceKind::Priority => self.0.pop_front().unwrap_or(0).min(n - 1),
            _ => 0,
        }
    }
}

fn two_clients(change: Rate) -> Scenario {
    Scenario {
        clients: 2,
        acquisitions_per_client: 1,
        drop_every: 0,
        faults: Faults::none(),
        priorities: Some(Priorities { change }),
        ..Scenario::default()
    }
}

fn first_holder(sc: &Scenario, ranks: &[usize]) -> u32 {
    let chooser = Ranks(ranks.iter().copied().collect());
    let out = run_scenario_with(sc, 0, Box::new(chooser), &ShippedRecipe::default());
    out.history
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Acquired { .. }))
        .expect("an acquisition")
        .client
}

#[test]
fn the_client_of_highest_priority_runs_first() {
    // Client 0 is ready first and draws first.
    let sc = two_clients(Rate::NEVER);
    assert_eq!(first_holder(&sc, &[65_535, 0]), 0);
    assert_eq!(first_holder(&sc, &[0, 65_535]), 1);
}

#[test]
fn a_change_point_drops_the_client_about_to_run_below_every_other() {
    // Every step with both ready is a change point (1 in 1): the one about to run drops
    // at once, so the other, of lower priority, runs first.
    let sc = two_clients(Rate::new(1, 1));
    assert_eq!(first_holder(&sc, &[65_535, 0]), 1);
}

#[test]
fn a_run_ordered_by_priorities_replays_from_its_choices() {
    let sc = Scenario {
        priorities: Some(Priorities {
            change: Rate::new(1, 32),
        }),
        ..Scenario::default()
    };
    for seed in 0..5 {
        let a = run_scenario(&sc, seed, &ShippedRecipe::default());
        let b = run_scenario_with(
            &sc,
            seed,
            Box::new(ReplayChooser::new(a.choices.clone())),
            &ShippedRecipe::default(),
        );
        assert_eq!(a.history, b.history, "seed {seed}");
        // And the order is not the uniform one's.
        let uniform = Scenario {
            priorities: None,
            ..sc.clone()
        };
        let u = run_scenario(&uniform, seed, &ShippedRecipe::default());
        assert_ne!(a.history, u.history, "seed {seed}");
    }
    // The scenario's JSON carries the priorities, and leaves them out when off.
    let json = serde_json::to_string(&sc).unwrap();
    assert!(json.contains("priorities"), "{json}");
    assert_eq!(serde_json::from_str::<Scenario>(&json).unwrap(), sc);
    let off = serde_json::to_string(&Scenario::default()).unwrap();
    assert!(!off.contains("priorities"), "{off}");
}
