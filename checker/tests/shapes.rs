//! The shipped lock passes every shape of the smallest bounds: each attempt's mode, each
//! client's count and each fault's duration chosen. The schedule and state counts are
//! pinned, as stateright's examples pin theirs: a change of the world's choices, of the
//! search or of its pruning shows here.

use zklock_checker::{Bounds, check_exhaustive};
use zklock_sim::{Scenario, Shape, ShippedRecipe};

fn check_all_shapes(clients: u32, faults_max: u32) -> (u64, u64) {
    let bounds = Bounds {
        clients,
        faults_max,
        shape: Shape::all(),
        // The unreduced search: `tests/symmetry.rs` compares it with the reduced one.
        symmetry: false,
        ..Bounds::default()
    };
    let r = check_exhaustive(&Scenario::default(), &ShippedRecipe::default(), &bounds).unwrap();
    assert!(r.violation.is_none(), "{bounds:?}: {r}");
    assert!(r.complete, "{bounds:?}: {r}");
    assert_eq!(r.scenario.shape, Shape::all());
    (r.schedules, r.distinct_states)
}

#[test]
fn the_shipped_lock_passes_every_shape_of_one_client_and_one_fault() {
    assert_eq!(check_all_shapes(1, 1), (4868, 17_043));
}

/// Some 10 s: every mode of each of two clients, and whether each goes on.
#[test]
fn the_shipped_lock_passes_every_shape_of_two_clients_without_a_fault() {
    assert_eq!(check_all_shapes(2, 0), (65_652, 129_431));
}
