//! The revocation workload (`Scenario::revokers`): revokers ask, holders give up, the run
//! replays; and revokers are refused where nothing is held.

use zklock_recipe::history::EventKind;
use zklock_sim::{
    ElectionRecipe, Faults, QueueRecipe, Recipe, RevocableRecipe, Scenario, ScenarioError,
    SemaphoreRecipe, SimError, run_scenario,
};

fn count(history: &zklock_recipe::history::History, f: impl Fn(&EventKind) -> bool) -> usize {
    history.events.iter().filter(|e| f(&e.kind)).count()
}

#[test]
fn a_revoker_asks_once_for_each_attempt_and_the_holders_give_up_when_asked() {
    let sc = Scenario {
        faults: Faults::none(),
        acquisitions_per_client: 5,
        ..RevocableRecipe::default().scenario()
    };
    let run = run_scenario(&sc, 3, &RevocableRecipe::default());
    assert!(run.error.is_none(), "{:?}", run.error);
    let h = &run.history;
    let holders = (sc.clients - sc.revokers) as usize;
    let revoker = sc.clients - 1;
    // One listing for each attempt of each holder; a request for each listing that
    // showed a node (once the holders are done, the directory is empty).
    let listings = h
        .events
        .iter()
        .filter(|e| {
            e.client == revoker
                && matches!(
                    e.kind,
                    EventKind::OpInvoke {
                        op: zklock_recipe::history::ZkOp::GetChildren,
                        ..
                    }
                )
        })
        .count();
    assert_eq!(listings, holders * 5);
    let asked = count(h, |k| matches!(k, EventKind::RevokeRequested { .. }));
    assert!(asked > 0 && asked <= listings, "{asked} of {listings}");
    let gave_up = count(h, |k| matches!(k, EventKind::RevokeObserved));
    assert!(gave_up > 0 && gave_up <= asked, "{gave_up} of {asked}");
    // The revoker never acquires: every acquire attempt is a holder's.
    assert!(
        !h.events
            .iter()
            .any(|e| e.client == revoker && matches!(e.kind, EventKind::AcquireInvoked { .. }))
    );
    // The same seed, the same run.
    let again = run_scenario(&sc, 3, &RevocableRecipe::default());
    assert_eq!(again.history, run.history);
    assert_eq!(again.choices, run.choices);
}

#[test]
fn revokers_are_refused_for_a_semaphore_a_queue_and_an_election_and_must_leave_a_writer() {
    let sc = Scenario {
        revokers: 1,
        ..Scenario::default()
    };
    fn refused<R: Recipe>(sc: &Scenario, recipe: &R) -> String {
        match run_scenario(sc, 1, recipe).error {
            Some(SimError::InvalidScenario(e @ ScenarioError::Unsupported { .. })) => e.to_string(),
            other => panic!("{}: {other:?}", recipe.name()),
        }
    }
    assert!(refused(&sc, &SemaphoreRecipe::default()).contains("a semaphore's leases"));
    assert!(refused(&sc, &QueueRecipe::default()).contains("a work queue has none"));
    assert!(refused(&sc, &ElectionRecipe::default()).contains("an election has none"));
    let no_writer = Scenario {
        clients: 2,
        readers: 1,
        revokers: 1,
        ..Scenario::default()
    };
    let run = run_scenario(&no_writer, 1, &RevocableRecipe::default());
    assert!(
        matches!(
            run.error,
            Some(SimError::InvalidScenario(ScenarioError::Revokers { .. }))
        ),
        "{:?}",
        run.error
    );
}
