//! The workload flags `real` and `search` share: one declaration, flattened into both,
//! with one set of bounds, applied to a [`WorkloadConfig`] in one place. Their defaults
//! are [`WorkloadConfig::default`]'s, except the two a search's short scripted runs take
//! shorter ([`SEARCH_SESSION_TIMEOUT_MS`], [`SEARCH_ACQUIRE_TIMEOUT_MS`]), which the
//! `search` subcommand sets on its copy of the flags (each subcommand's `--help` shows
//! its own).

use crate::numbers::{ANY, whole};
use clap::Args;
use zklock_real::workload::{MAX_DURATION_MS, MIN_SESSION_TIMEOUT_MS, WorkloadConfig};

// The bounds are the workload's own, which `WorkloadConfig::validate` enforces once the
// rest of the run is known: the longest time is an hour, the shortest session 400 ms (the
// servers a run starts tick every 200 ms, and grant no session under two ticks).
const TIME_MS_MAX: u64 = MAX_DURATION_MS;
const SESSION_TIMEOUT_MS_MIN: u64 = MIN_SESSION_TIMEOUT_MS;
/// `search`'s `--session-timeout-ms` default: its runs are short, and every pause lasts
/// twice as long.
pub const SEARCH_SESSION_TIMEOUT_MS: &str = "2000";
/// `search`'s `--acquire-timeout-ms` default: shorter than the session timeout.
pub const SEARCH_ACQUIRE_TIMEOUT_MS: &str = "1000";

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Session timeout, in ms, 400 to 3600000; a pause lasts twice as long
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().session_timeout_ms, value_parser = whole::<u64, SESSION_TIMEOUT_MS_MIN, TIME_MS_MAX>)]
    pub session_timeout_ms: u64,
    /// Time in the critical section, in ms, 0 to 3600000
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().hold_ms, value_parser = whole::<u64, 0, TIME_MS_MAX>)]
    pub hold_ms: u64,
    /// Drop (cancel) every N-th acquire (0: never)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().drop_every, value_parser = whole::<u32, 0, ANY>)]
    pub drop_every: u32,
    /// After an attempt that gave up (a try that found the lock held, a timed acquire that
    /// timed out, a dropped acquire), stay connected and idle this long, in ms, 0 to
    /// 3600000 (0: go on at once)
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().idle_after_give_up_ms, value_parser = whole::<u64, 0, TIME_MS_MAX>)]
    pub idle_after_give_up_ms: u64,
    /// How long a node may outlive the attempt that made it while its session lives, in
    /// ms, 0 to 3600000, before `node_outlives_attempt` calls it a leak (0: the liveness
    /// bound, twice the session timeout plus 1 s)
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().leak_bound_ms, value_parser = whole::<u64, 0, TIME_MS_MAX>)]
    pub leak_bound_ms: u64,
    /// Every N-th attempt of a client holds for --long-hold-ms (0: never)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().long_hold_every, value_parser = whole::<u32, 0, ANY>)]
    pub long_hold_every: u32,
    /// The long holds' time, in ms, 0 to 3600000 (0: 1.5 × --session-timeout-ms, past
    /// the session timeout)
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = 0, value_parser = whole::<u64, 0, TIME_MS_MAX>)]
    pub long_hold_ms: u64,
    /// Every N-th attempt of a client uses a new lock object of its session, which its
    /// later attempts then use (1: every attempt; 0: one object per session, reused)
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = WorkloadConfig::default().fresh_lock_every, value_parser = whole::<u32, 0, ANY>)]
    pub fresh_lock_every: u32,
    /// Timeout of the timed acquires, in ms, 0 to 3600000
    #[arg(long, allow_negative_numbers = true, value_name = "MS", default_value_t = WorkloadConfig::default().acquire_timeout_ms, value_parser = whole::<u64, 0, TIME_MS_MAX>)]
    pub acquire_timeout_ms: u64,
}

impl WorkloadArgs {
    /// `w` with these flags' values.
    pub fn apply(&self, w: WorkloadConfig) -> WorkloadConfig {
        WorkloadConfig {
            session_timeout_ms: self.session_timeout_ms,
            hold_ms: self.hold_ms,
            drop_every: self.drop_every,
            idle_after_give_up_ms: self.idle_after_give_up_ms,
            leak_bound_ms: self.leak_bound_ms,
            long_hold_every: self.long_hold_every,
            long_hold_ms: self.long_hold_ms(),
            fresh_lock_every: self.fresh_lock_every,
            acquire_timeout_ms: self.acquire_timeout_ms,
            ..w
        }
    }

    /// `--long-hold-ms`, where 0 stands for 1.5 × the session timeout.
    pub fn long_hold_ms(&self) -> u64 {
        match self.long_hold_ms {
            0 => self.session_timeout_ms.saturating_mul(3) / 2,
            ms => ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    /// Each subcommand parses the shared flags with its own defaults, and the same
    /// bounds.
    #[test]
    fn real_and_search_share_the_flags_with_their_own_defaults() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        let real = |args: &[&str]| match parse(args).unwrap().command {
            Some(crate::cli::Command::Real(a)) => a.workload,
            other => panic!("{other:?}"),
        };
        let search = |args: &[&str]| match parse(args).unwrap().command {
            Some(crate::cli::Command::Search(a)) => a.workload,
            other => panic!("{other:?}"),
        };
        let (r, s) = (real(&["zklock", "real"]), search(&["zklock", "search"]));
        let d = zklock_real::workload::WorkloadConfig::default();
        assert_eq!(
            (r.session_timeout_ms, r.acquire_timeout_ms),
            (d.session_timeout_ms, d.acquire_timeout_ms)
        );
        assert_eq!((s.session_timeout_ms, s.acquire_timeout_ms), (2_000, 1_000));
        assert_eq!((r.hold_ms, r.drop_every), (s.hold_ms, s.drop_every));
        assert_eq!(r.long_hold_ms(), d.session_timeout_ms * 3 / 2);
        let given = search(&["zklock", "search", "--long-hold-ms", "7", "--hold-ms", "9"]);
        assert_eq!((given.long_hold_ms(), given.hold_ms), (7, 9));
        // Out of bounds: parsed, then refused by the workload's one validation.
        for bad in [
            &["--session-timeout-ms", "399"][..],
            &["--hold-ms", "3600001"],
            &["--leak-bound-ms", "3600001"],
        ] {
            let args: Vec<&str> = ["zklock", "search"].iter().chain(bad).copied().collect();
            let w = search(&args).apply(d.clone());
            assert!(w.validate().is_err(), "{args:?} validated");
        }
        let negative = ["zklock", "real", "--drop-every", "-1"];
        assert!(parse(&negative).is_err());
    }
}
