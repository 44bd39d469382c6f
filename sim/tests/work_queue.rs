//! The work-queue workload runs producers and consumers to the end.

use zklock_recipe::history::EventKind;
use zklock_sim::{Faults, QueueRecipe, Scenario, run_scenario};

fn count(run: &zklock_sim::RunOutcome, f: impl Fn(&EventKind) -> bool) -> usize {
    run.history.events.iter().filter(|e| f(&e.kind)).count()
}

#[test]
fn without_faults_every_item_produced_is_completed_once_and_nothing_is_left() {
    for recipe in [QueueRecipe::default(), QueueRecipe::naive()] {
        let scenario = Scenario {
            faults: Faults::none(),
            ..Scenario::default()
        };
        let run = run_scenario(&scenario, 3, &recipe);
        assert!(run.error.is_none(), "{:?}", run.error);
        let produced = count(&run, |k| matches!(k, EventKind::ItemProduced { .. }));
        let completed = count(&run, |k| matches!(k, EventKind::ProcessEnd { .. }));
        assert_eq!(produced, 20);
        assert_eq!(completed, 20);
        assert_eq!(run.final_children_by_lock, vec![Vec::<String>::new(); 2]);
    }
}
