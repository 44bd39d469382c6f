//! Counting states by what a recipe keeps of a reply, and the evidence that it is sound.
//!
//! The exhaustive check prunes a state whose digest it has seen. A state's digest holds,
//! for each client still running, a fold of every value its actor was given (see
//! [`crate::exhaustive`]), so that equal digests mean equal futures. A value the actor
//! dropped splits states all the same: the lock recipe reads a listing of the lock
//! directory for its place in the queue only, yet every name in it, with its sequence
//! number, stayed in the digest, and schedules that listed the same place among other
//! names never met again. With [`Bounds::keep_only`] a recipe's
//! [`Coordination::keep_only`](zklock_recipe::Coordination::keep_only) call, made right
//! after it took a reply, puts what it keeps in the reply's place in the fold.
//!
//! **The argument.** An actor draws no randomness and reads time only from the world, so
//! its local state is a function of the values it was given. If, right after taking a
//! reply `r`, it calls `keep_only(k)`, and its code from there on depends on `r` only
//! through `k`, then its local state is the same function of the values with `r`
//! replaced by `k`: two schedules whose actors were given the same values but for such
//! replies, with the same `k`, have actors in the same local state, and equal digests
//! still mean equal futures. The simulation makes the replacement only when it can tell
//! which reply the call means: the last value folded for that client is a reply to one
//! of its actor's waits, that wait is the last any actor took (so the caller took it,
//! and awaited nothing since), and no choice came in between. Otherwise the reply stays
//! whole, which only keeps states apart. A run that replays a prefix takes its folds
//! over at a choice and makes the same replacements after it (`zklock_sim`'s
//! `world::kept` and `world::folds`). Final states are unchanged: a finished client's
//! fold is not in the digest.
//!
//! **The promise is the recipe's.** The shipped lock makes two: in its acquire loop, of
//! each listing it keeps only its standing (it holds, its node is gone, or the name of
//! the node ahead of it, which it watches); and a create that failed drops the listing
//! sent behind it unread. A recipe that keeps more than it says may have a bug this check
//! does not see; `zklock check --keep-only off` searches without the promises, every
//! reply told apart whole. A recipe that never calls `keep_only`, such as every canary,
//! is searched the same either way.
//!
//! **The evidence** ([`compare`]): on each configuration both searches complete, the
//! search by what the recipe keeps reaches the same verdict, a violation the `failing`
//! predicate accepts exactly when the other does, and the same set of final states.
//! `checker/tests/keep_only.rs` pins both searches' state counts for the shipped lock
//! (2 and 3 clients, readers and writers, two locks, with faults), and the canary suite
//! catches every canary with the check's default bounds.

use crate::bounds::Bounds;
use crate::evidence::reduced_and_unreduced;
use crate::limits::LimitError;
use crate::run::CheckedRun;
use crate::symmetry::Evidence;
use zklock_sim::{Recipe, Scenario};

/// Runs `bounds` twice, counting states by what the recipe keeps of replies and telling
/// every reply apart whole, each until `failing` accepts a schedule, collecting final
/// states: the `reduced` search is the first.
pub fn compare<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Result<Evidence, LimitError> {
    let (reduced, unreduced) =
        reduced_and_unreduced(base, recipe, bounds, failing, |b, on| b.keep_only = on)?;
    Ok(Evidence { reduced, unreduced })
}
