//! A reduction's evidence on configurations of one recipe, with both searches' state
//! counts pinned (`symmetry.rs`, `keep_only.rs`).

use zklock_checker::symmetry::Evidence;
use zklock_checker::{Bounds, ExhaustiveReport};
use zklock_sim::Scenario;

/// A configuration, and its (reduced, unreduced) distinct states.
pub struct Case {
    pub name: &'static str,
    pub clients: u32,
    pub faults_max: u32,
    pub readers: u32,
    pub locks: u32,
    pub states: (u64, u64),
}

impl Case {
    pub fn new(
        name: &'static str,
        clients: u32,
        faults_max: u32,
        readers: u32,
        locks: u32,
        states: (u64, u64),
    ) -> Case {
        Case {
            name,
            clients,
            faults_max,
            readers,
            locks,
            states,
        }
    }

    /// The base scenario and the bounds of this configuration.
    pub fn scenario_and_bounds(&self) -> (Scenario, Bounds) {
        scenario_and_bounds(self.clients, self.faults_max, self.readers, self.locks)
    }
}

/// The base scenario and the (otherwise default) bounds of a configuration.
pub fn scenario_and_bounds(
    clients: u32,
    faults_max: u32,
    readers: u32,
    locks: u32,
) -> (Scenario, Bounds) {
    let base = Scenario {
        readers,
        locks,
        ..Scenario::default()
    };
    // The pinned counts are of complete searches: a wall-time limit a loaded machine could
    // reach (the default 600 s) would make them depend on the machine; an hour is reached
    // only by a hang.
    let bounds = Bounds {
        clients,
        faults_max,
        time_limit_ms: 3_600_000,
        ..Bounds::default()
    };
    (base, bounds)
}

/// Runs `evidence` on every case: the reduction (which `reduced_by` tells on a report) on
/// one search only, both with the same verdict and final states, no violation, and the
/// pinned counts, every case's new counts listed at once when some changed.
pub fn check_pinned(
    cases: &[Case],
    evidence: impl Fn(&Case) -> Evidence,
    reduced_by: impl Fn(&ExhaustiveReport) -> bool,
) {
    let mut wrong = Vec::new();
    for c in cases {
        let e = evidence(c);
        eprintln!(
            "{}: reduced {}; unreduced {}; factor {:.2}",
            c.name,
            e.reduced,
            e.unreduced,
            e.reduction()
        );
        assert!(
            reduced_by(&e.reduced) && !reduced_by(&e.unreduced),
            "{}",
            c.name
        );
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
