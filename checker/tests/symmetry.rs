//! Soundness evidence for symmetry reduction (see `zklock_checker::symmetry`): on every
//! configuration the unreduced search completes, the reduced search reaches the same
//! verdict and the same final states up to a permutation of clients. Both searches'
//! state counts are pinned, as stateright pins its examples': a change to the world, the
//! recipe or either digest shows up here. Update them knowingly.

use zklock_checker::Bounds;
use zklock_checker::symmetry::{Evidence, compare};
use zklock_sim::{Recipe, Scenario, SemaphoreRecipe, ShippedRecipe};

/// A configuration, and its (reduced, unreduced) distinct states.
struct Case {
    name: &'static str,
    clients: u32,
    faults_max: u32,
    readers: u32,
    locks: u32,
    states: (u64, u64),
}

fn evidence<R: Recipe>(recipe: &R, c: &Case) -> Evidence {
    let base = Scenario {
        readers: c.readers,
        locks: c.locks,
        ..Scenario::default()
    };
    let bounds = Bounds {
        clients: c.clients,
        faults_max: c.faults_max,
        ..Bounds::default()
    };
    compare(&base, recipe, &bounds, &|r| r.failure().is_some()).unwrap()
}

fn check_all<R: Recipe>(recipe: &R, cases: &[Case]) {
    let mut wrong = Vec::new();
    for c in cases {
        let e = evidence(recipe, c);
        eprintln!(
            "{}: reduced {}; unreduced {}; factor {:.2}",
            c.name,
            e.reduced,
            e.unreduced,
            e.reduction()
        );
        assert!(e.reduced.symmetry && !e.unreduced.symmetry, "{}", c.name);
        if let Err(why) = e.agrees() {
            panic!("{}: {why}", c.name);
        }
        assert!(e.reduced.violation.is_none(), "{}", c.name);
        let got = (e.reduced.distinct_states, e.unreduced.distinct_states);
        if got != c.states {
            wrong.push(format!("{}: {got:?}, pinned {:?}", c.name, c.states));
        }
    }
    assert!(
        wrong.is_empty(),
        "state counts changed:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn symmetry_reduction_keeps_the_shipped_locks_verdicts_and_final_states() {
    let case = |name, clients, faults_max, readers, locks, states| Case {
        name,
        clients,
        faults_max,
        readers,
        locks,
        states,
    };
    check_all(
        &ShippedRecipe::default(),
        &[
            case("2 clients, 0 faults", 2, 0, 0, 1, (253, 502)),
            case("2 clients, 1 fault", 2, 1, 0, 1, (13_792, 27_574)),
            case("2 readers, 1 fault", 2, 1, 2, 1, (11_489, 22_970)),
            case("1 reader 1 writer, 1 fault", 2, 1, 1, 1, (27_567, 27_567)),
            case("2 clients, 2 locks, 1 fault", 2, 1, 0, 2, (42_163, 84_250)),
            case("3 clients, 0 faults", 3, 0, 0, 1, (11_177, 66_889)),
            case("1 reader 2 writers, 0 faults", 3, 0, 1, 1, (33_472, 66_889)),
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
            states: (243_326, 486_645),
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
        states: (502, 502),
    };
    let e = evidence(&Asymmetric, &c);
    assert!(!e.reduced.symmetry);
    assert_eq!(
        (e.reduced.distinct_states, e.unreduced.distinct_states),
        c.states
    );
    e.agrees().unwrap();
}
