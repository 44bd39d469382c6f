//! Symmetry reduction of the exhaustive check, and the evidence that it is sound.
//!
//! Clients of one role run the same code, so two states that differ only by a
//! permutation of such clients have the same futures up to that permutation: exploring
//! one suffices. With [`Bounds::symmetry`] (and a recipe whose
//! [`Recipe::symmetric`] says yes) the explorer's state digest is the same for all the
//! permutations of a state: the least hash of the state renamed by a permutation within
//! roles, over the permutations that put the clients of each role in the order of their
//! signatures (what is a client's own, named without indices or session numbers), which
//! is the same set for every permutation of the state (the simulator's `world::symmetry`
//! module says what is renamed: client positions, sessions by owner and rank rather than
//! by number, guids in names, and each actor's fold of what it was given, kept under
//! every permutation from the start; and why the signatures make the digest canonical).
//!
//! **The argument.** Pruning a state `t` whose digest equals that of a seen state `s`
//! is sound when every violation reachable from `t` has a counterpart reachable from `s`.
//! Equal digests mean `t = π(s)` for a permutation π within roles (up to a 128-bit
//! collision). The properties are symmetric (they name clients only to tell them
//! apart), so it is enough that the world's steps commute with π:
//! - the recipe uses identities only for equality and orders nodes by sequence number
//!   ([`Recipe::symmetric`]), so an actor given π-renamed values is the π-renamed actor;
//! - every choice the explorer makes (which client's request next, which fault where)
//!   ranges over all clients, so π of a choice is a choice;
//! - session numbers come in creation order, but the digest names a session by its owner
//!   and rank, so the order in which two clients renewed does not show;
//! - the server orders children and watchers by name and session number, which a
//!   permutation changes; it reaches actors only inside values (renamed position by
//!   position, and a symmetric recipe does not depend on the order of a listing) or as
//!   deliveries to different clients, which nothing observes;
//! - a guid is the session's number in hex, renamed with it; a recipe that orders by
//!   full name (guid included), such as `canary-full-name-order`, is not symmetric and
//!   is searched without reduction;
//! - the world breaks ties by client index where actors woken at one point stage their
//!   work (requests, sleeps, resource operations) and where its cleanup loops over
//!   clients. Requests join each client's own queue; sleeps become timers whose creation
//!   order the digest keeps; cleanup requests join their client's queue. The one shared
//!   object two clients' staged work meets is the resource, whose accept or reject
//!   follows the staging order; this is the argument's one gap. Two clients reach the
//!   resource at one point only when one event wakes two holders at once; readers (and
//!   a semaphore's holders) only read it, and a writer holds alone, so for the shipped
//!   recipes it takes a bug. The evidence below checks, on every configuration the
//!   unreduced search completes in the tests, that nothing is lost.
//!
//! The digest of a listing sorts its renamed names, and a state's digest keeps the
//! creation order of timers due at once (the order they fire in); a run's final state is
//! digested without it, as nothing follows.
//!
//! **The evidence** ([`compare`]): on a configuration both searches complete, the reduced
//! search has the same verdict, finds a violation the `failing` predicate accepts exactly
//! when the unreduced one does (each canary's), and reaches the same set of final states
//! up to permutation. The tests (`checker/tests/symmetry.rs`: the shipped lock with 2
//! and 3 clients, readers and writers, 2 locks; the semaphore with 2 clients) pin both
//! searches' state counts, as stateright's examples do, and each canary is caught with
//! and without reduction at its smallest bounds (`tests/canaries/cases.rs`).

use crate::bounds::Bounds;
use crate::evidence::{agree, reduced_and_unreduced};
use crate::exhaustive::ExhaustiveReport;
use crate::limits::LimitError;
use crate::run::CheckedRun;
use zklock_sim::{Recipe, Scenario};

/// A reduced and an unreduced search of one configuration.
#[derive(Debug)]
pub struct Evidence {
    pub reduced: ExhaustiveReport,
    pub unreduced: ExhaustiveReport,
}

impl Evidence {
    /// Whether the reduced search agrees with the unreduced one: both complete, or both
    /// found a violation; and, when neither did, the same final states up to permutation.
    /// The first difference otherwise.
    pub fn agrees(&self) -> Result<(), String> {
        agree(&self.reduced, &self.unreduced)
    }

    /// Distinct states of the unreduced search per distinct state of the reduced one.
    pub fn reduction(&self) -> f64 {
        self.unreduced.distinct_states as f64 / self.reduced.distinct_states.max(1) as f64
    }
}

/// Runs `bounds` twice, with and without symmetry reduction, each until `failing`
/// accepts a schedule, collecting final states.
pub fn compare<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Result<Evidence, LimitError> {
    let (reduced, unreduced) =
        reduced_and_unreduced(base, recipe, bounds, failing, |b, on| b.symmetry = on)?;
    Ok(Evidence { reduced, unreduced })
}
