//! Bounded exhaustive checks of the shipped recipe.

use std::sync::Mutex;
use zklock_checker::{Bounds, PROGRESS_EVERY_SCHEDULES, check_exhaustive_with};
use zklock_sim::{Scenario, ShippedRecipe};

#[test]
fn two_clients_one_fault_shipped_recipe_is_correct() {
    let calls = Mutex::new(Vec::new());
    let r = check_exhaustive_with(
        &Scenario::default(),
        &ShippedRecipe::default(),
        &Bounds::default(),
        &|run| run.failure().is_some(),
        &|schedules, states| calls.lock().unwrap().push((schedules, states)),
    )
    .unwrap();
    eprintln!("{r}");
    if let Some(v) = &r.violation {
        panic!("{}", v.report);
    }
    assert!(r.complete, "{r}");
    // Pinned, as stateright pins its state counts: a change to the recipe's requests, the
    // world's choices or the state digest shows up here. Update them knowingly.
    assert_eq!((r.schedules, r.distinct_states), (26_412, 155_729), "{r}");
    // Progress came every PROGRESS_EVERY_SCHEDULES schedules, its counts growing.
    let calls = calls.into_inner().unwrap();
    assert_eq!(calls.len() as u64, r.schedules / PROGRESS_EVERY_SCHEDULES);
    assert!(
        calls
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
    );
    assert!(calls.last().unwrap().1 <= r.distinct_states);
}
