//! The bounds of a scenario: every value a user or a trace file can give, with its
//! maximum and the reason for it. [`Scenario::validate`] checks them all; the checker's
//! entry points (sweeps, exhaustive checks, replays, shrinks, trace loading) call it
//! before anything runs, so an out-of-bounds value is a [`ScenarioError`], never a panic,
//! an overflow or a run that fills the memory.

use super::{FaultMode, Scenario};
use std::fmt;
use zklock_recipe::path::validate_path;

/// Clients of a scenario at most: the simulated world's limit (`SimConfig::clients_max`).
pub const CLIENTS_MAX: u32 = 64;

/// Acquire attempts per client at most: as many as a run may hold in all
/// ([`ACQUISITIONS_MAX`]), so that `--acquisitions 4294967295` is refused by name rather
/// than as a product.
pub const ACQUISITIONS_PER_CLIENT_MAX: u32 = 10_000;

/// Acquire attempts of all clients together (`clients × acquisitions_per_client`) at
/// most. An attempt records some 14 events, about 3 KB of trace file: 10,000 attempts
/// (64 clients × 156, say) write some 32 MB of trace in about 110,000 world steps, well
/// under the checker's `TRACE_BYTES_MAX` and [`SCENARIO_STEPS_MAX`].
pub const ACQUISITIONS_MAX: u64 = 10_000;

/// A scenario's virtual time limit (`Scenario::time_limit_ms`) at most, in milliseconds:
/// one hour, the simulated world's own default limit. Without it a small trace could ask
/// for a run of days of virtual time, and gigabytes of history.
pub const TIME_LIMIT_MS_MAX: u64 = 3_600_000;

/// Every other duration of a scenario at most, in milliseconds (session timeout, hold,
/// acquire timeout, heal, liveness bound, the longest delay, partition and pause): the
/// longest run, since nothing longer can happen within one. It also keeps their sums and
/// their conversions to microseconds far from overflowing.
pub const DURATION_MS_MAX: u64 = TIME_LIMIT_MS_MAX;

/// A request's virtual time ([`Scenario::request_time_us`]) at most, in microseconds:
/// one second, far slower than any server; over a run's steps at most
/// ([`SCENARIO_STEPS_MAX`]) the clock stays far from overflowing.
pub const REQUEST_TIME_US_MAX: u64 = 1_000_000;

/// The longest delay before a dropped acquire is dropped, in milliseconds: the chooser
/// draws it among 65,536 values.
pub const DROP_AFTER_MS_MAX: u64 = 65_535;

/// Faults per run at most in [`FaultMode::Bounded`]: an exhaustive search is out of
/// reach well before 16 (`zklock check` takes at most 3).
pub const BOUNDED_FAULTS_MAX: u32 = 16;

/// The lock directory's path at most, in bytes: every contender's node, and every
/// request of the history, carries it, and a lock directory is a short name.
pub const LOCK_PATH_BYTES_MAX: usize = 1024;

/// Lock directories of a scenario at most ([`Scenario::locks`]): as many as clients, so
/// that every lock can see contention.
pub const LOCKS_MAX: u32 = 64;

/// World steps a scenario run takes at most before it stops with
/// [`SimError::StepLimit`](crate::SimError), against a recipe that loops without end: 4.5
/// times the steps of the largest workload ([`ACQUISITIONS_MAX`] attempts, with faults).
/// A step records some 1.3 events of some 230 bytes of trace each, so a run stopped here
/// writes some 150 MB of trace, within the checker's `TRACE_BYTES_MAX` (256 MiB).
pub const SCENARIO_STEPS_MAX: u64 = 500_000;

/// A scenario value outside its bound. Each message names the field, the value and the
/// bound.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScenarioError {
    /// A number above its maximum.
    TooLarge {
        field: &'static str,
        value: u64,
        max: u64,
    },
    /// More acquire attempts in all than [`ACQUISITIONS_MAX`].
    Workload {
        clients: u32,
        acquisitions_per_client: u32,
    },
    /// More readers than clients.
    Readers { readers: u32, clients: u32 },
    /// Revokers leave no writer (or exclusive holder) among the clients: readers and
    /// revokers together must be fewer than the clients.
    Revokers {
        revokers: u32,
        readers: u32,
        clients: u32,
    },
    /// A value the recipe's workload cannot run with (revokers for a semaphore, a queue
    /// or an election), and why.
    Unsupported {
        field: &'static str,
        value: u64,
        why: String,
    },
    /// The lock directory is not a valid ZooKeeper path.
    LockPath { path: String, reason: String },
    /// A mode listed twice in the shape's modes (which hold each mode at most once).
    RepeatedMode { mode: &'static str },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::TooLarge { field, value, max } => {
                write!(
                    f,
                    "scenario: {field} is {value}, more than its maximum of {max}"
                )
            }
            ScenarioError::Workload {
                clients,
                acquisitions_per_client,
            } => write!(
                f,
                "scenario: {clients} clients x {acquisitions_per_client} acquisitions is {} \
                 acquire attempts, more than the maximum of {ACQUISITIONS_MAX} in a run",
                u64::from(*clients) * u64::from(*acquisitions_per_client)
            ),
            ScenarioError::Readers { readers, clients } => write!(
                f,
                "scenario: {readers} readers, more than its {clients} clients"
            ),
            ScenarioError::Revokers {
                revokers,
                readers,
                clients,
            } => write!(
                f,
                "scenario: {revokers} revokers and {readers} readers leave no writer among \
                 its {clients} clients (revokers + readers must be fewer than clients)"
            ),
            ScenarioError::Unsupported { field, value, why } => {
                write!(
                    f,
                    "scenario: {field} is {value}, which this recipe cannot run: {why}"
                )
            }
            ScenarioError::LockPath { path, reason } => {
                write!(f, "scenario: lock_path {path:?} is not valid: {reason}")
            }
            ScenarioError::RepeatedMode { mode } => {
                write!(f, "scenario: shape.modes lists {mode} twice")
            }
        }
    }
}

impl std::error::Error for ScenarioError {}

fn at_most(field: &'static str, value: u64, max: u64) -> Result<(), ScenarioError> {
    if value > max {
        return Err(ScenarioError::TooLarge { field, value, max });
    }
    Ok(())
}

impl Scenario {
    /// Checks every value against its bound (the constants of this module). A run of a
    /// valid scenario cannot panic on its inputs, and its size is bounded.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        at_most("clients", self.clients.into(), CLIENTS_MAX.into())?;
        at_most(
            "acquisitions_per_client",
            self.acquisitions_per_client.into(),
            ACQUISITIONS_PER_CLIENT_MAX.into(),
        )?;
        if u64::from(self.clients) * u64::from(self.acquisitions_per_client) > ACQUISITIONS_MAX {
            return Err(ScenarioError::Workload {
                clients: self.clients,
                acquisitions_per_client: self.acquisitions_per_client,
            });
        }
        at_most("locks", self.locks.into(), LOCKS_MAX.into())?;
        if self.readers > self.clients {
            return Err(ScenarioError::Readers {
                readers: self.readers,
                clients: self.clients,
            });
        }
        if self.revokers > 0 && self.revokers.saturating_add(self.readers) >= self.clients {
            return Err(ScenarioError::Revokers {
                revokers: self.revokers,
                readers: self.readers,
                clients: self.clients,
            });
        }
        at_most(
            "lock_path (bytes)",
            self.lock_path.len() as u64,
            LOCK_PATH_BYTES_MAX as u64,
        )?;
        validate_path(&self.lock_path, false).map_err(|e| ScenarioError::LockPath {
            path: self.lock_path.clone(),
            reason: match e {
                zklock_recipe::ZkError::BadArguments(why) => why,
                other => other.to_string(),
            },
        })?;
        at_most("time_limit_ms", self.time_limit_ms, TIME_LIMIT_MS_MAX)?;
        let f = &self.faults;
        for (field, value) in [
            ("session_timeout_ms", self.session_timeout_ms),
            ("hold_ms", self.hold_ms),
            ("acquire_timeout_ms", self.acquire_timeout_ms),
            ("heal_ms", self.heal_ms),
            ("liveness_bound_ms", self.liveness_bound_ms),
            ("revoke_bound_ms", self.revoke_bound_ms),
            ("faults.delay_ms_max", f.delay_ms_max),
            ("faults.partition_ms_max", f.partition_ms_max),
            ("faults.pause_ms_max", f.pause_ms_max),
        ] {
            at_most(field, value, DURATION_MS_MAX)?;
        }
        at_most("request_time_us", self.request_time_us, REQUEST_TIME_US_MAX)?;
        at_most(
            "drop_after_ms_max",
            self.drop_after_ms_max,
            DROP_AFTER_MS_MAX,
        )?;
        if let Some(mode) = self.shape.repeated_mode() {
            return Err(ScenarioError::RepeatedMode { mode: mode.name() });
        }
        if let FaultMode::Bounded { faults_max } = self.fault_mode {
            at_most(
                "fault_mode.Bounded.faults_max",
                faults_max.into(),
                BOUNDED_FAULTS_MAX.into(),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_scenario_is_valid() {
        assert_eq!(Scenario::default().validate(), Ok(()));
    }

    #[test]
    fn an_empty_or_doubled_slash_lock_path_is_an_error_not_a_panic() {
        for path in ["", "//", "no-slash", "/a/"] {
            let sc = Scenario {
                lock_path: path.into(),
                ..Scenario::default()
            };
            let err = sc.validate().unwrap_err();
            assert!(
                matches!(err, ScenarioError::LockPath { .. }),
                "{path:?}: {err}"
            );
        }
    }

    #[test]
    fn a_run_of_a_scenario_out_of_bounds_runs_nothing_and_says_why() {
        // The shipped recipe's constructor once panicked on this lock path.
        let sc = Scenario {
            lock_path: "//".into(),
            ..Scenario::default()
        };
        let out = crate::run_scenario(&sc, 1, &crate::ShippedRecipe::default());
        assert!(
            matches!(
                out.error,
                Some(crate::SimError::InvalidScenario(
                    ScenarioError::LockPath { .. }
                ))
            ),
            "{:?}",
            out.error
        );
        assert_eq!((out.steps, out.history.events.len()), (0, 0));
    }

    #[test]
    fn each_bound_is_checked() {
        let too_large: [fn(&mut Scenario); 10] = [
            |s| s.clients = CLIENTS_MAX + 1,
            |s| s.locks = LOCKS_MAX + 1,
            |s| s.acquisitions_per_client = ACQUISITIONS_PER_CLIENT_MAX + 1,
            |s| s.time_limit_ms = TIME_LIMIT_MS_MAX + 1,
            |s| s.heal_ms = u64::MAX,
            |s| s.session_timeout_ms = DURATION_MS_MAX + 1,
            |s| s.faults.pause_ms_max = DURATION_MS_MAX + 1,
            |s| s.drop_after_ms_max = DROP_AFTER_MS_MAX + 1,
            |s| s.request_time_us = REQUEST_TIME_US_MAX + 1,
            |s| {
                s.fault_mode = FaultMode::Bounded {
                    faults_max: BOUNDED_FAULTS_MAX + 1,
                }
            },
        ];
        for (i, edit) in too_large.iter().enumerate() {
            let mut sc = Scenario::default();
            edit(&mut sc);
            let err = sc.validate().unwrap_err();
            assert!(matches!(err, ScenarioError::TooLarge { .. }), "{i}: {err}");
        }
        let sc = Scenario {
            clients: 64,
            acquisitions_per_client: 1000,
            ..Scenario::default()
        };
        assert!(matches!(sc.validate(), Err(ScenarioError::Workload { .. })));
        let sc = Scenario {
            readers: 6,
            ..Scenario::default()
        };
        assert!(matches!(sc.validate(), Err(ScenarioError::Readers { .. })));
        // Revokers must leave a writer: 1 reader + 4 revokers of 5 clients leave none.
        let sc = Scenario {
            readers: 1,
            revokers: 4,
            ..Scenario::default()
        };
        let err = sc.validate().unwrap_err();
        assert!(err.to_string().contains("leave no writer"), "{err}");
        let sc = Scenario {
            readers: 1,
            revokers: 3,
            ..Scenario::default()
        };
        assert_eq!(sc.validate(), Ok(()));
        // At the bounds themselves, valid.
        let sc = Scenario {
            clients: 1,
            acquisitions_per_client: ACQUISITIONS_PER_CLIENT_MAX,
            time_limit_ms: TIME_LIMIT_MS_MAX,
            heal_ms: DURATION_MS_MAX,
            drop_after_ms_max: DROP_AFTER_MS_MAX,
            request_time_us: REQUEST_TIME_US_MAX,
            ..Scenario::default()
        };
        assert_eq!(sc.validate(), Ok(()));
    }

    #[test]
    fn acquisitions_4294967295_is_refused() {
        let sc = Scenario {
            acquisitions_per_client: u32::MAX,
            ..Scenario::default()
        };
        let err = sc.validate().unwrap_err();
        assert!(
            err.to_string()
                .contains("acquisitions_per_client is 4294967295"),
            "{err}"
        );
    }
}
