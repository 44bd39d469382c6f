//! What the evidence for a reduction compares: one configuration searched with the
//! reduction and without it ([`crate::symmetry`], [`crate::partial_order`],
//! [`crate::keep_only`] each argue and pin theirs).

use crate::bounds::Bounds;
use crate::exhaustive::{Control, ExhaustiveReport, SearchError, check_exhaustive_controlled};
use crate::limits::LimitError;
use crate::run::CheckedRun;
use zklock_sim::{Recipe, Scenario};

/// Whether a reduced search `r` agrees with an unreduced one `u`: both complete, or both
/// found a violation; and, when neither did, the same final states (up to permutation).
/// The first difference otherwise.
pub(crate) fn agree(r: &ExhaustiveReport, u: &ExhaustiveReport) -> Result<(), String> {
    if r.violation.is_some() != u.violation.is_some() {
        return Err(format!(
            "verdicts differ: reduced {}, unreduced {}",
            verdict(r),
            verdict(u)
        ));
    }
    if r.violation.is_none() {
        if !(r.complete && u.complete) {
            return Err(format!("incomplete: reduced {r}; unreduced {u}"));
        }
        if r.final_states != u.final_states {
            let count = |x: &ExhaustiveReport| x.final_states.as_ref().map_or(0, |f| f.len());
            return Err(format!(
                "final states differ: reduced {}, unreduced {}",
                count(r),
                count(u)
            ));
        }
    }
    Ok(())
}

fn verdict(r: &ExhaustiveReport) -> String {
    match &r.violation {
        Some(v) => format!("violated ({})", v.violated().join(", ")),
        None if r.complete => "held".into(),
        None => "incomplete".into(),
    }
}

/// Runs `bounds` twice, with a reduction that `set` switches on in the first run and off
/// in the second, each until `failing` accepts a schedule, collecting final states: the
/// (reduced, unreduced) reports the soundness evidence compares.
pub(crate) fn reduced_and_unreduced<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
    set: fn(&mut Bounds, bool),
) -> Result<(ExhaustiveReport, ExhaustiveReport), LimitError> {
    let run = |on: bool| {
        let mut b = bounds.clone();
        set(&mut b, on);
        let control = Control {
            final_states: true,
            ..Control::default()
        };
        match check_exhaustive_controlled(base, recipe, &b, failing, &|_, _| {}, control) {
            Ok(r) => Ok(r),
            Err(SearchError::Limit(e)) => Err(e),
            Err(SearchError::Checkpoint(_)) => unreachable!("no checkpoint to resume"),
            Err(SearchError::Shard(_)) => unreachable!("no shard asked for"),
        }
    };
    Ok((run(true)?, run(false)?))
}
