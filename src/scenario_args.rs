//! The scenario flags `explore` and `check` share: one declaration, flattened into both,
//! and one validation. Each flag left out keeps the recipe's own value (`Recipe::scenario`).

use crate::numbers::{ANY, whole};
use anyhow::{Result, bail};
use clap::Args;
use zklock_sim::{Faults, Scenario};

/// Lock directories at most (`--locks`).
pub const LOCKS_MAX: u32 = 64;
/// The longest hold (`--hold-ms`), in ms: an hour.
pub const HOLD_MS_MAX: u64 = 3_600_000;

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// Clients taking the read lock, the rest write (0: the exclusive lock), 0 to
    /// --clients [default: the recipe's; 0 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, 64>)]
    pub readers: Option<u32>,
    /// Clients that ask holders to give up instead of holding (the last N; each asks the
    /// holder of one node of the lock's directory, half a hold apart, once for every
    /// attempt of every holder), 0 to 63, fewer than --clients, and with --readers leaving
    /// a writer (check gives readers up for it at small --clients): the run
    /// is judged by revocation_honored and revocation_only_given_up too [default: the
    /// recipe's; 1 for revocable, 0 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, 63>)]
    pub revokers: Option<u32>,
    /// Start each client's acquires at the N-th of the mix of modes (blocking, try,
    /// timed, and the drops): 2 starts with a timed acquire; 0 or more [default: the
    /// recipe's; 0 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 0, { ANY }>)]
    pub mix_offset: Option<u32>,
    /// The lock directory's sequential counter when it is created, -2147483648 to
    /// 2147483647: at 2147483600 every run crosses ZooKeeper's wrap of the counter to
    /// -2147483648 [default: the recipe's; 0 for most]
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub sequence_start: Option<i32>,
    /// How long each hold (or each item's processing) lasts, in milliseconds, 0 to
    /// 3600000. Longer than the session timeout (6000), a hold outlasts a forced expiry:
    /// the lost-before-granted canaries need one [default: the recipe's; 5 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "MS", value_parser = whole::<u64, 0, HOLD_MS_MAX>)]
    pub hold_ms: Option<u64>,
    /// Lock directories, 1 to 64: each acquisition takes one the chooser draws (in check,
    /// each acquisition's lock is a branch), and every property is judged per lock
    /// [default: the recipe's; 1 for most]
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = whole::<u32, 1, { LOCKS_MAX as u64 }>)]
    pub locks: Option<u32>,
    /// The kinds of fault, a comma-separated list of connection-loss,
    /// lost-create-response, forced-expiry, partition, pause, crash, delayed-delivery,
    /// local-expiry (each at most once; real's cut, lost-create, expire, black-hole and
    /// local-expire name the same kinds), `all`, or `none`. Explore draws them, each at
    /// the recipe's rate if its scenario has that kind, else at the default rate; check
    /// places them: fewer kinds, fewer schedules [default: the recipe's kinds; all for
    /// most]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = crate::fault_args::parse_fault)]
    pub faults: Option<Vec<crate::fault_args::FaultArg>>,
    /// Aim every fault at requests of one operation in flight: create, delete, exists,
    /// get-data, get-children, set-data or multi. A fault strikes only a client with
    /// such a request sent and not yet applied [default: the recipe's; none, any step]
    #[arg(long, value_name = "OP", value_parser = crate::fault_args::parse_aim)]
    pub aim_at: Option<zklock_recipe::history::ZkOp>,
}

impl ScenarioArgs {
    /// `own` (the recipe's scenario) with each knob a flag gives replaced, for a run of
    /// `clients` clients; refuses a value out of its flag's bounds. The subcommand
    /// checks `clients` itself: its bound differs (check 1 to 4, explore 1 to 64).
    pub fn apply(&self, own: Scenario, clients: u32) -> Result<Scenario> {
        let sc = Scenario {
            readers: self.readers.unwrap_or(own.readers),
            revokers: self.revokers.unwrap_or(own.revokers),
            mix_offset: self.mix_offset.unwrap_or(own.mix_offset),
            sequence_start: self.sequence_start.unwrap_or(own.sequence_start),
            hold_ms: self.hold_ms.unwrap_or(own.hold_ms),
            locks: self.locks.unwrap_or(own.locks),
            faults: Faults {
                aim: self.aim_at.or(own.faults.aim),
                ..crate::fault_args::faults_or(self.faults.as_deref(), &own.faults)
                    .map_err(anyhow::Error::msg)?
            },
            ..own
        };
        if sc.locks == 0 || sc.locks > LOCKS_MAX {
            bail!(
                "--locks must be between 1 and {LOCKS_MAX}, got {}",
                sc.locks
            );
        }
        if sc.readers > clients {
            bail!(
                "--readers ({}) cannot exceed --clients ({clients})",
                sc.readers
            );
        }
        // Readers and revokers together leave no writer: the scenario's own check says so
        // (check gives readers up to keep one at its small bounds).
        if sc.revokers > 0 && sc.revokers >= clients {
            bail!(
                "--revokers ({}) must be fewer than --clients ({clients}): someone must hold",
                sc.revokers
            );
        }
        Ok(sc)
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// Explore and check take the same scenario flags, with the same bounds.
    #[test]
    fn explore_and_check_share_the_scenario_flags_and_their_bounds() {
        for sub in ["explore", "check"] {
            let cli =
                Cli::try_parse_from(["zklock", sub, "--hold-ms", "7", "--locks", "2"]).unwrap();
            let sc = match cli.command {
                Some(Command::Explore(a)) => a.scenario,
                Some(Command::Check(a)) => a.scenario,
                _ => unreachable!(),
            };
            let got = sc.apply(zklock_sim::Scenario::default(), 2).unwrap();
            assert_eq!((got.hold_ms, got.locks), (7, 2), "{sub}");
            let readers_3 =
                crate::cli::Cli::try_parse_from(["zklock", sub, "--readers", "3"]).unwrap();
            let sc = match readers_3.command {
                Some(Command::Explore(a)) => a.scenario,
                Some(Command::Check(a)) => a.scenario,
                _ => unreachable!(),
            };
            let err = sc.apply(zklock_sim::Scenario::default(), 2).unwrap_err();
            assert!(
                err.to_string().contains("cannot exceed --clients (2)"),
                "{sub}: {err}"
            );
            let err = Cli::try_parse_from(["zklock", sub, "--hold-ms", "-1"])
                .unwrap_err()
                .to_string();
            assert!(err.contains("from 0 to 3600000"), "{sub}: {err}");
        }
    }
}
