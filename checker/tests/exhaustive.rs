//! Bounded exhaustive checks of the shipped recipe.

use zklock_checker::{Bounds, check_exhaustive};
use zklock_sim::{Scenario, ShippedRecipe};

#[test]
fn two_clients_one_fault_shipped_recipe_is_correct() {
    let r = check_exhaustive(
        &Scenario::default(),
        &ShippedRecipe::default(),
        &Bounds::default(),
    );
    eprintln!("{r}");
    if let Some(v) = &r.violation {
        panic!("{}", v.report);
    }
    assert!(r.complete, "{r}");
    assert!(r.schedules > 1 && r.distinct_states > 1, "{r}");
}
