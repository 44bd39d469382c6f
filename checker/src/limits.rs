//! The bounds of the checker's engines: what a sweep ([`Budget`](crate::Budget)), an
//! exhaustive check ([`Bounds`](crate::Bounds)) and a shrink
//! ([`ShrinkLimits`](crate::ShrinkLimits)) accept, on top of the scenario's own bounds
//! ([`zklock_sim::scenario::limits`]). Every entry point checks them before it runs
//! anything and returns a [`LimitError`] for a value outside them.

use std::fmt;
use zklock_sim::ScenarioError;

pub use zklock_sim::scenario::limits::{
    ACQUISITIONS_MAX, ACQUISITIONS_PER_CLIENT_MAX, BOUNDED_FAULTS_MAX, CLIENTS_MAX,
    DROP_AFTER_MS_MAX, DURATION_MS_MAX, LOCK_PATH_BYTES_MAX, SCENARIO_STEPS_MAX, TIME_LIMIT_MS_MAX,
};

/// A wall-time limit (of a sweep, an exhaustive check or a shrink) at most, in
/// milliseconds: 30 days. Longer sweeps are sharded (`Budget::shard_count`); the bound
/// keeps `now + limit` representable, where an unchecked `seconds × 1000` once wrapped to
/// a limit of a fraction of a second.
pub const WALL_TIME_LIMIT_MS_MAX: u64 = 30 * 24 * 3600 * 1000;

/// Worker threads of a sweep at most: every thread is spawned when the sweep starts, and
/// beyond the machine's cores more only compete for them.
pub const THREADS_MAX: usize = 1024;

/// A value given to an engine outside its bound. Each message names the value, what was
/// given and the bound.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// The scenario is outside its bounds.
    Scenario(ScenarioError),
    /// A number above its maximum.
    TooLarge {
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// A shard that does not exist: the index must be below the count, the count at
    /// least 1 (`Budget::shard_index` counts from 0).
    Shard { index: u64, count: u64 },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::Scenario(e) => e.fmt(f),
            LimitError::TooLarge { what, value, max } => {
                write!(f, "{what} is {value}, more than its maximum of {max}")
            }
            LimitError::Shard { index, count } => write!(
                f,
                "shard {index} of {count} does not exist: shards count from 0 and there must \
                 be at least one"
            ),
        }
    }
}

impl std::error::Error for LimitError {}

impl From<ScenarioError> for LimitError {
    fn from(e: ScenarioError) -> Self {
        LimitError::Scenario(e)
    }
}

/// Checks a wall-time limit in milliseconds against [`WALL_TIME_LIMIT_MS_MAX`].
pub fn check_wall_time_ms(what: &'static str, ms: u64) -> Result<(), LimitError> {
    if ms > WALL_TIME_LIMIT_MS_MAX {
        return Err(LimitError::TooLarge {
            what,
            value: ms,
            max: WALL_TIME_LIMIT_MS_MAX,
        });
    }
    Ok(())
}

/// A wall-time limit given in seconds, in milliseconds, checked against
/// [`WALL_TIME_LIMIT_MS_MAX`] (so `seconds × 1000` never overflows): for command lines.
pub fn wall_time_ms_from_s(what: &'static str, s: u64) -> Result<u64, LimitError> {
    match s.checked_mul(1000) {
        Some(ms) if ms <= WALL_TIME_LIMIT_MS_MAX => Ok(ms),
        _ => Err(LimitError::TooLarge {
            what,
            value: s,
            max: WALL_TIME_LIMIT_MS_MAX / 1000,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limit_s_18446744073709552_is_refused_not_wrapped() {
        // × 1000 wraps u64 to 384 ms: the sweep once stopped after 0.38 s, exit 0.
        let err = wall_time_ms_from_s("--time-limit-s", 18_446_744_073_709_552).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--time-limit-s is 18446744073709552, more than its maximum of 2592000"
        );
        assert_eq!(
            wall_time_ms_from_s("--time-limit-s", 2_592_000),
            Ok(WALL_TIME_LIMIT_MS_MAX)
        );
        assert!(check_wall_time_ms("t", WALL_TIME_LIMIT_MS_MAX + 1).is_err());
    }
}
