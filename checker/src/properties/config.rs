//! The scenario facts the properties need.

use zklock_recipe::history::RunFacts;

/// What the properties must know beyond the history itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// Virtual time at which faults stopped, in milliseconds.
    pub heal_ms: u64,
    /// After the heal, every live waiter must be served within this bound, in ms.
    pub liveness_bound_ms: u64,
    /// Whether process pauses were on: belief-based exclusion is then the known,
    /// unavoidable class and the run rests on `fenced_resource`.
    pub pauses_on: bool,
    /// The lock's directory, e.g. `/zklock/lock`.
    pub lock_path: String,
    /// The children of `lock_path` on the server when the run ended. Any of them left
    /// when every client is done is an orphan.
    pub final_lock_children: Vec<String>,
    /// Virtual time the run ended, in µs, if later than the last event. A run that stops
    /// because nothing can happen any more (a stuck lock) may end long after its last
    /// event; waiters still pending then are judged against this time.
    pub run_end_us: Option<u64>,
    /// Session timeout of the clients, in milliseconds: what each fault on a client adds
    /// to the time its timed acquire may take (`timed_acquire_in_time`).
    pub session_timeout_ms: u64,
    /// How long past its deadline a timed acquire may return, for the cleanup at the
    /// deadline, in milliseconds.
    pub timed_grace_ms: u64,
    /// Other directories the lock's library created nodes in (its internal ones, as a
    /// real run's proxies saw its creates), each with the ephemeral nodes left in it when
    /// the run ended. Any of them left when every client is done is an orphan, as in
    /// `lock_path`.
    pub touched_children: Vec<(String, Vec<String>)>,
    /// The `Acquired` tokens are the lock nodes' czxids, as zklock's recipes' and the
    /// library drivers' are: `fifo` then takes a lower token as a node made earlier.
    /// ZooKeeper deletes an empty container directory (Curator's lock directories are
    /// containers) and its next create starts the sequence over, so a lower sequence
    /// alone does not tell a node that was ahead in the queue. Default `false`: sequence
    /// order alone, right for a directory that is never deleted mid-run.
    pub tokens_are_czxids: bool,
}

/// `CheckConfig::timed_grace_ms` by default: a cleanup's round trips, with room for a
/// real server's pauses.
pub const TIMED_GRACE_MS: u64 = 1000;

impl Default for CheckConfig {
    /// The defaults of `zklock_sim::Scenario`: heal at 30 s, bound 13 s, pauses on (as
    /// with all faults on), lock `/zklock/lock`, no final children known, sessions of
    /// 6 s, a grace of 1 s for timed acquires.
    fn default() -> Self {
        CheckConfig {
            heal_ms: 30_000,
            liveness_bound_ms: 13_000,
            pauses_on: true,
            lock_path: "/zklock/lock".into(),
            final_lock_children: Vec::new(),
            run_end_us: None,
            session_timeout_ms: 6000,
            timed_grace_ms: TIMED_GRACE_MS,
            touched_children: Vec::new(),
            tokens_are_czxids: false,
        }
    }
}

impl From<RunFacts> for CheckConfig {
    /// A run's facts, with the default grace for timed acquires.
    fn from(f: RunFacts) -> CheckConfig {
        CheckConfig {
            heal_ms: f.heal_ms,
            liveness_bound_ms: f.liveness_bound_ms,
            pauses_on: f.pauses_on,
            lock_path: f.lock_path,
            final_lock_children: f.final_lock_children,
            run_end_us: Some(f.run_end_us),
            session_timeout_ms: f.session_timeout_ms,
            timed_grace_ms: TIMED_GRACE_MS,
            touched_children: Vec::new(),
            tokens_are_czxids: f.tokens_are_czxids,
        }
    }
}

impl CheckConfig {
    /// The facts a scenario fixes; the final children and end time come from the run.
    pub fn from_scenario(scenario: &zklock_sim::Scenario) -> CheckConfig {
        CheckConfig {
            heal_ms: scenario.heal_ms,
            liveness_bound_ms: scenario.liveness_bound_ms,
            pauses_on: scenario.faults.has_pauses(),
            lock_path: scenario.lock_path.clone(),
            final_lock_children: Vec::new(),
            run_end_us: None,
            session_timeout_ms: scenario.session_timeout_ms,
            timed_grace_ms: TIMED_GRACE_MS,
            touched_children: Vec::new(),
            // The simulated server deletes no directory.
            tokens_are_czxids: false,
        }
    }

    /// Adds the server's final children of the lock directory.
    pub fn with_final_children(mut self, children: Vec<String>) -> CheckConfig {
        self.final_lock_children = children;
        self
    }

    /// Adds the virtual time the run ended, in µs.
    pub fn with_run_end_us(mut self, end_us: u64) -> CheckConfig {
        self.run_end_us = Some(end_us);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_facts_make_its_check_config() {
        let facts = RunFacts {
            heal_ms: 7,
            liveness_bound_ms: 11,
            pauses_on: true,
            lock_path: "/l".into(),
            final_lock_children: vec!["n".into()],
            run_end_us: 13,
            session_timeout_ms: 17,
            tokens_are_czxids: true,
        };
        let cfg = CheckConfig::from(facts);
        assert_eq!(
            cfg,
            CheckConfig {
                heal_ms: 7,
                liveness_bound_ms: 11,
                pauses_on: true,
                lock_path: "/l".into(),
                final_lock_children: vec!["n".into()],
                run_end_us: Some(13),
                session_timeout_ms: 17,
                timed_grace_ms: TIMED_GRACE_MS,
                touched_children: Vec::new(),
                tokens_are_czxids: true,
            }
        );
    }
}
