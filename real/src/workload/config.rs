//! A real run's workload: its settings, their bounds and defaults.

use super::*;

/// The most clients a run may have: each is a session and up to one proxy per server.
pub const MAX_CLIENTS: u32 = 64;
/// The longest duration of any kind a run accepts, in ms (an hour): the run's duration,
/// its sessions' timeout, holds, timeouts and backoffs.
pub const MAX_DURATION_MS: u64 = 3_600_000;
/// The shortest session timeout a run accepts (the harness servers grant 400 ms and up).
pub const MIN_SESSION_TIMEOUT_MS: u64 = 400;

/// A real run's workload. Durations are in milliseconds.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// Contending clients, each on its own session. 1 to [`MAX_CLIENTS`].
    pub clients: u32,
    /// How many of the clients take the read lock (the rest write). 0: an exclusive lock.
    pub readers: u32,
    /// New acquisitions start until this much run time has passed.
    pub duration_ms: u64,
    /// The lock's directory (created with its parents).
    pub lock_path: String,
    /// Lock directories, 1 to [`MAX_LOCKS`] (default 1): above 1 the run takes
    /// `<lock_path>-0` to `<lock_path>-N-1` ([`lock_paths`]), each acquisition the lock
    /// [`lock_of`] picks from `lock_seed`, each lock guarding a resource of its own.
    pub locks: u32,
    /// The seed of each acquisition's lock in a run of several locks (`zklock real` gives
    /// it the run's `--seed`). Default 0.
    pub lock_seed: u64,
    /// Session timeout every client asks for.
    pub session_timeout_ms: u64,
    /// How long connecting a session may take before the run (or a reconnect) gives up.
    pub connect_timeout_ms: u64,
    /// Time in the critical section, between reading and writing the resource.
    pub hold_ms: u64,
    /// Timeout of the timed acquire mode.
    pub acquire_timeout_ms: u64,
    /// Every `drop_every`-th attempt of a client is a blocking acquire whose future is
    /// dropped after a delay unless it finished first, as the simulation's. 0: never.
    pub drop_every: u32,
    /// Longest delay before a dropped acquire is dropped; the delays are spread over
    /// `0..=drop_after_ms_max` (the simulation's chooser draws them).
    pub drop_after_ms_max: u64,
    /// Where each client's attempts start in the mix of modes, as the simulation's
    /// `Scenario::mix_offset`: attempt `k` takes the mode of `k + mix_offset`. At 2, the
    /// first attempt is timed. Default 0.
    pub mix_offset: u32,
    /// How long after `duration_ms` a blocking acquire may still wait before it is
    /// cancelled, so a stuck lock ends the run instead of hanging it.
    pub drain_timeout_ms: u64,
    /// Pause after an acquire that failed with an error.
    pub error_backoff_ms: u64,
    /// A contender that gives up (its try found the lock held, its timed acquire timed
    /// out, its acquire was dropped) stays connected and idle this long before its next
    /// attempt: a node its attempt left behind then outlives it, instead of being picked
    /// up again at once by the next attempt. 0 (the default): it goes on at once.
    pub idle_after_give_up_ms: u64,
    /// Every `long_hold_every`-th attempt of a client that acquires holds for
    /// `long_hold_ms` instead of `hold_ms` (a hold past the session timeout, when
    /// `long_hold_ms` is longer). 0 (the default): every hold is `hold_ms`.
    pub long_hold_every: u32,
    /// See [`long_hold_every`](WorkloadConfig::long_hold_every); positive when it is.
    pub long_hold_ms: u64,
    /// Every `fresh_lock_every`-th attempt of a client uses a new lock object of its
    /// session ([`RealRecipe::fresh_lock`]), which the later attempts then use; 1: every
    /// attempt. 0 (the default): one lock object per session, reused.
    pub fresh_lock_every: u32,
    /// Client `i` starts its first attempt `i × start_stagger_ms` after the workers start
    /// (every session connected), so that
    /// contenders queue in the order of their index (a lock's clients; a work queue's
    /// start at once). At most an hour. 0 (the default): every client at once.
    pub start_stagger_ms: u64,
    /// Soft cap on history events: past it, no new acquisition starts.
    pub max_history_events: usize,
    /// What the run must have seen before it ends: past `duration_ms` (and as long past
    /// the heal as `duration_ms` is past the planned heal), new acquisitions go on until
    /// this holds of the history so far, checked every 100 ms. None (the default): the run
    /// ends at `duration_ms`. Tests use it to wait for what they need (contention, a
    /// handover) instead of hoping a fixed time is enough.
    pub until: Option<RunGoal>,
    /// How long, in run time, a run may go on chasing `until` or a late heal: a bound only
    /// a hang reaches. Default 600,000 (10 minutes).
    pub goal_deadline_ms: u64,
    /// Each client's attempts, then it is done: a fixed script, as the fault-point search
    /// runs it, so that a run's requests line up with another's. The run ends once every
    /// client is done (or at `goal_deadline_ms`). 0 (the default): attempts go on until
    /// `duration_ms`.
    pub attempts_per_client: u32,
    /// Set it (from a Ctrl-C handler, say) to cut the run short: faults heal at once, no
    /// new acquisition starts, and the run ends as usual with what it recorded
    /// ([`RealRun::interrupted`]). None: the run cannot be interrupted this way.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// How long a node may outlive the attempt that made it (failed, timed out,
    /// cancelled, released) while its session lives, in ms, before the checker's
    /// `node_outlives_attempt` calls it a leak. 0 (the default): the liveness bound,
    /// twice the session timeout plus 1 s ([`WorkloadConfig::liveness_bound_ms`]).
    pub leak_bound_ms: u64,
    /// How many of the clients are revokers rather than holders (the last `revokers`):
    /// each, while the run lasts, waits half a hold, lists the first lock's directory and
    /// asks the holder of one of its nodes to give up, through the lock's
    /// `LockUnderTest::revoke`; the holders give up when asked, and the run is judged by
    /// the revocation properties too. Default 0; fewer than the clients, with the readers
    /// leaving a writer. A lock that cannot be revoked makes the run "nothing checked".
    pub revokers: u32,
    /// How long a holder asked to give up may take to begin its release, in ms (the
    /// checker's `revocation_honored`). Default 1000: a few round trips to a real server,
    /// with room for a loaded machine.
    pub revoke_bound_ms: u64,
}

impl Default for WorkloadConfig {
    /// 5 clients for 30 s on `/zklock/lock`, 4 s sessions, 5 ms holds, 3 s timed acquires,
    /// every 4th acquire dropped within 20 ms, the mix starting with a blocking acquire.
    fn default() -> Self {
        WorkloadConfig {
            clients: 5,
            readers: 0,
            duration_ms: 30_000,
            lock_path: "/zklock/lock".into(),
            locks: 1,
            lock_seed: 0,
            session_timeout_ms: 4_000,
            connect_timeout_ms: 10_000,
            hold_ms: 5,
            acquire_timeout_ms: 3_000,
            drop_every: 4,
            drop_after_ms_max: 20,
            mix_offset: 0,
            drain_timeout_ms: 10_000,
            error_backoff_ms: 10,
            idle_after_give_up_ms: 0,
            start_stagger_ms: 0,
            long_hold_every: 0,
            long_hold_ms: 0,
            fresh_lock_every: 0,
            max_history_events: DEFAULT_MAX_EVENTS,
            until: None,
            goal_deadline_ms: 600_000,
            attempts_per_client: 0,
            interrupt: None,
            leak_bound_ms: 0,
            revokers: 0,
            revoke_bound_ms: 1_000,
        }
    }
}

impl WorkloadConfig {
    /// After the heal, every live waiter must be served within this bound: twice the
    /// session timeout (a dead holder's session expiring, then a reconnect) plus 1 s, as
    /// the simulation's default.
    pub fn liveness_bound_ms(&self) -> u64 {
        self.session_timeout_ms
            .saturating_mul(2)
            .saturating_add(1_000)
    }

    /// The leak bound in force: [`leak_bound_ms`](WorkloadConfig::leak_bound_ms), or
    /// the liveness bound when it is 0.
    pub fn leak_bound_in_force_ms(&self) -> u64 {
        match self.leak_bound_ms {
            0 => self.liveness_bound_ms(),
            ms => ms,
        }
    }

    /// Checks the bounds; the error says which one.
    pub fn validate(&self) -> Result<(), RealError> {
        let bad = |reason: String| Err(RealError::Config { reason });
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return bad(format!(
                "clients must be 1 to {MAX_CLIENTS}, got {}",
                self.clients
            ));
        }
        if self.readers > self.clients {
            return bad(format!(
                "readers ({}) cannot exceed clients ({})",
                self.readers, self.clients
            ));
        }
        if self.revokers > 0 && self.revokers.saturating_add(self.readers) >= self.clients {
            return bad(format!(
                "revokers ({}) and readers ({}) leave no writer among the {} clients",
                self.revokers, self.readers, self.clients
            ));
        }
        if self.session_timeout_ms < MIN_SESSION_TIMEOUT_MS {
            return bad(format!(
                "session_timeout_ms must be at least {MIN_SESSION_TIMEOUT_MS}, got {}",
                self.session_timeout_ms
            ));
        }
        if self.duration_ms == 0 || self.connect_timeout_ms == 0 {
            return bad("duration_ms and connect_timeout_ms must be positive".into());
        }
        for (name, ms) in [
            ("duration_ms", self.duration_ms),
            ("session_timeout_ms", self.session_timeout_ms),
            ("connect_timeout_ms", self.connect_timeout_ms),
            ("hold_ms", self.hold_ms),
            ("acquire_timeout_ms", self.acquire_timeout_ms),
            ("drain_timeout_ms", self.drain_timeout_ms),
            ("error_backoff_ms", self.error_backoff_ms),
            ("idle_after_give_up_ms", self.idle_after_give_up_ms),
            ("start_stagger_ms", self.start_stagger_ms),
            ("long_hold_ms", self.long_hold_ms),
            ("leak_bound_ms", self.leak_bound_ms),
            ("revoke_bound_ms", self.revoke_bound_ms),
        ] {
            if ms > MAX_DURATION_MS {
                return bad(format!(
                    "{name} must be at most {MAX_DURATION_MS} (an hour), got {ms}"
                ));
            }
        }
        if self.long_hold_every > 0 && self.long_hold_ms == 0 {
            return bad("long_hold_ms must be positive when long_hold_every is".into());
        }
        if self.drop_after_ms_max > MAX_DROP_AFTER_MS {
            return bad(format!(
                "drop_after_ms_max must be at most {MAX_DROP_AFTER_MS}, got {}",
                self.drop_after_ms_max
            ));
        }
        if let Err(e) = zklock_recipe::path::validate_path(&self.lock_path, false) {
            return bad(format!("lock path {:?}: {e}", self.lock_path));
        }
        if !(1..=MAX_LOCKS).contains(&self.locks) {
            return bad(format!(
                "locks must be 1 to {MAX_LOCKS}, got {}",
                self.locks
            ));
        }
        for path in self.lock_paths() {
            if let Err(e) = zklock_recipe::path::validate_path(&path, false) {
                return bad(format!("lock path {path:?}: {e}"));
            }
        }
        Ok(())
    }

    /// The run's lock directories ([`lock_paths`]).
    pub fn lock_paths(&self) -> Vec<String> {
        lock_paths(&self.lock_path, self.locks)
    }
}
