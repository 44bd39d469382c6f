//! Soundness evidence for symmetry reduction (see `zklock_checker::symmetry`): on every
//! configuration the unreduced search completes, the reduced search reaches the same
//! verdict and the same final states up to a permutation of clients. Both searches'
//! state counts are pinned, as stateright pins its examples': a change to the world, the
//! recipe or either digest shows up here. Update them knowingly.

use crate::common::evidence::{Case, check_pinned};
use zklock_checker::symmetry::{Evidence, compare};
use zklock_sim::{Recipe, SemaphoreRecipe, ShippedRecipe};

fn evidence<R: Recipe>(recipe: &R, c: &Case) -> Evidence {
    let (base, bounds) = c.scenario_and_bounds();
    compare(&base, recipe, &bounds, &|r| r.failure().is_some()).unwrap()
}

fn check_all<R: Recipe>(recipe: &R, cases: &[Case]) {
    check_pinned(cases, |c| evidence(recipe, c), |r| r.symmetry);
}

#[test]
fn symmetry_reduction_keeps_the_shipped_locks_verdicts_and_final_states() {
    let case = Case::new;
    check_all(
        &ShippedRecipe::default(),
        &[
            case("2 clients, 0 faults", 2, 0, 0, 1, (128, 252)),
            case("2 clients, 1 fault", 2, 1, 0, 1, (7_265, 14_520)),
            case("2 readers, 1 fault", 2, 1, 2, 1, (6_117, 12_226)),
            case("1 reader 1 writer, 1 fault", 2, 1, 1, 1, (14_513, 14_513)),
            case("2 clients, 2 locks, 1 fault", 2, 1, 0, 2, (29_109, 58_142)),
            case("3 clients, 0 faults", 3, 0, 0, 1, (1_356, 8_026)),
            case("1 reader 2 writers, 0 faults", 3, 0, 1, 1, (4_030, 8_026)),
        ],
    );
}

#[test]
fn symmetry_reduction_keeps_the_semaphores_verdicts_and_final_states() {
    check_all(
        &SemaphoreRecipe::default(),
        &[Case {
            name: "semaphore, 2 clients, 1 fault",
            clients: 2,
            faults_max: 1,
            readers: 0,
            locks: 1,
            states: (125_122, 250_237),
        }],
    );
}

/// A recipe that does not declare itself symmetric is searched unreduced, whatever the
/// bounds say.
#[test]
fn a_recipe_not_declared_symmetric_is_searched_unreduced() {
    struct Asymmetric;
    impl Recipe for Asymmetric {
        type Lock = <ShippedRecipe as Recipe>::Lock;
        fn lock(
            &self,
            client: zklock_sim::SimClient,
            role: zklock_recipe::history::LockRole,
            path: &str,
        ) -> Self::Lock {
            ShippedRecipe::default().lock(client, role, path)
        }
    }
    let c = Case {
        name: "asymmetric",
        clients: 2,
        faults_max: 0,
        readers: 0,
        locks: 1,
        states: (252, 252),
    };
    let e = evidence(&Asymmetric, &c);
    assert!(!e.reduced.symmetry);
    assert_eq!(
        (e.reduced.distinct_states, e.unreduced.distinct_states),
        c.states
    );
    e.agrees().unwrap();
}
