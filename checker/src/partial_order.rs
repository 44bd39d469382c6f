//! Partial-order reduction of the exhaustive check by sleep sets (Godefroid), and the
//! evidence that it is sound.
//!
//! Two request transitions of different clients often commute: a client listing the lock
//! directory and another checking its predecessor's node end in the same state in either
//! order. The search need not run both orders. A request transition runs from the server's
//! choice of a client's next request to the next state the explorer sees; the world
//! records what it touched (the simulator's `world::footprint` module): the tree paths it
//! read and wrote, the clients it delivered anything to, and whether anything else
//! happened (a timer, a workload event such as `Acquired`, the clock read, a fault...),
//! which makes it dependent on everything. Two transitions are independent when neither
//! writes what the other reads or writes, at most one writes the tree at all (each write
//! takes the next zxid), they deliver to disjoint clients, and neither is global. Both then
//! take `request_time_us` (0 by default: [`Bounds::request_time_us`]) with no timer due
//! between them, so either order ends in the same state.
//!
//! **Sleep sets.** Each state carries a sleep set: request transitions that need not be
//! taken there. At a state with sleep set `Z`, the search takes the enabled requests not
//! in `Z` in choice order; taking `t` after `t1 .. tk` were explored there, the next
//! state's sleep set is the members of `Z ∪ {t1 .. tk}` independent of `t`. A sleeping
//! `u` need not be taken after `t`: `u·t` from here reaches the state `t·u` would, and is
//! explored from `u`'s side, where `t` is not asleep (or is, for the same reason, one level
//! further). Any other step (a fault, time passing to a timer, a global transition) empties
//! the sleep set, which is always sound. A transition is named by its client and a
//! fingerprint of the request at the head of the client's queue: a sleeping client is
//! untouched since it fell asleep, so its head is the same request.
//!
//! The search is stateless, so what was explored at a choice is kept across runs: for each
//! choice of the current prefix, the transitions already explored there with their
//! footprints (as loom and DPOR implementations keep their backtracking stacks).
//!
//! **With state caching.** A state first explored with sleep set `S` has had every
//! transition but those in `S` explored from it. A revisit with sleep set `Z` is pruned
//! only when `S ⊆ Z`; otherwise it is explored again with `Z`, and the state keeps
//! `S ∩ Z` (Godefroid's combination). Sleep sets alone visit every reachable state, so the
//! distinct states and the final states of a reduced search equal the unreduced ones; only
//! schedules (and time) are saved. With symmetry reduction as well, a revisit may be a
//! permutation of the seen state, whose sleep set names other clients: it is pruned only
//! when the seen state was explored with an empty sleep set (everything was explored from
//! it, the symmetric argument of [`crate::symmetry`] then applies unchanged), and its
//! stored set is left as it is.
//!
//! **Properties judged on histories.** A reduced search runs, instead of a schedule it
//! skips, one whose history differs only in the order of independent transitions' events:
//! ZooKeeper operations of different clients on disjoint nodes. Every workload event
//! (acquire, release, lost, a resource operation) comes from a global transition, which
//! commutes with nothing, so every order of those relative to every other transition is
//! explored, at the same virtual times. The evidence ([`compare`]) checks on every
//! configuration the unreduced search completes in the tests that verdicts, canaries and
//! final states agree, and pins both searches' state and schedule counts.
//!
//! Checkpoints do not hold the explored transitions or the states' sleep sets, so a
//! reduced search neither takes nor resumes one.

use crate::bounds::Bounds;
use crate::evidence::{agree, reduced_and_unreduced};
use crate::exhaustive::ExhaustiveReport;
use crate::limits::LimitError;
use crate::run::CheckedRun;
use zklock_sim::{Recipe, Scenario};

/// A search with and one without partial-order reduction of one configuration.
#[derive(Debug)]
pub struct Evidence {
    pub reduced: ExhaustiveReport,
    pub unreduced: ExhaustiveReport,
}

impl Evidence {
    /// Whether the reduced search agrees with the unreduced one: the same verdict, and
    /// when neither found a violation, both complete with the same final states and the
    /// same number of distinct states (sleep sets visit every state). The first
    /// difference otherwise.
    pub fn agrees(&self) -> Result<(), String> {
        let (r, u) = (&self.reduced, &self.unreduced);
        agree(r, u)?;
        if r.violation.is_none() && r.distinct_states != u.distinct_states {
            return Err(format!(
                "distinct states differ: reduced {}, unreduced {}",
                r.distinct_states, u.distinct_states
            ));
        }
        Ok(())
    }

    /// Schedules of the unreduced search per schedule of the reduced one.
    pub fn reduction(&self) -> f64 {
        self.unreduced.schedules as f64 / self.reduced.schedules.max(1) as f64
    }
}

/// Runs `bounds` twice, with and without partial-order reduction (symmetry as `bounds`
/// says), each until `failing` accepts a schedule, collecting final states.
pub fn compare<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Result<Evidence, LimitError> {
    let (reduced, unreduced) =
        reduced_and_unreduced(base, recipe, bounds, failing, |b, on| b.partial_order = on)?;
    Ok(Evidence { reduced, unreduced })
}
