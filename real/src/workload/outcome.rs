//! What a real run produced, and the facts the checker needs of it.

use super::*;

/// Everything a real run produced.
#[derive(Debug)]
pub struct RealRun {
    pub history: History,
    /// Children of the lock directory once every client was done and dead sessions had
    /// expired (read before the live ones were closed): a node left here is an orphan. In
    /// a run of several locks, the first lock's.
    pub final_lock_children: Vec<String>,
    /// Every lock directory of the run ([`WorkloadConfig::lock_paths`]) with its children
    /// read as `final_lock_children` is.
    pub final_children_by_lock: Vec<(String, Vec<String>)>,
    /// Every other directory the clients created nodes in, as their proxies saw the
    /// creates (a library's internal directories: Kazoo's `<path>-__lock__`, Curator's
    /// `locks`), with the ephemeral nodes left in it, read after the lock directories
    /// (and re-read while sessions that are ending expire, for as long). Only directories
    /// with nodes left are listed; empty when the run had no proxies.
    pub final_children_touched: Vec<(String, Vec<String>)>,
    /// The recipe's [`RealRecipe::leases`]: `Some(n)` for a semaphore of `n` leases.
    pub leases: Option<u32>,
    /// The recipe's [`RealRecipe::tokens_are_czxids`].
    pub tokens_are_czxids: bool,
    /// The recipe's [`RealRecipe::election`].
    pub election: bool,
    /// A run with revokers ([`WorkloadConfig::revokers`](super::WorkloadConfig::revokers)):
    /// the bound a holder asked to give up has, in ms, for the revocation properties.
    pub revoke_bound_ms: Option<u64>,
    /// A work queue's run ([`run_queue`]): its directories, whose final children are the
    /// two of [`final_children_by_lock`](RealRun::final_children_by_lock) (the items',
    /// then the item locks'). `None` for a lock's run.
    pub queue: Option<zklock_recipe::work_queue::QueuePaths>,
    /// Run time when every client was done, in µs.
    pub run_end_us: u64,
    /// When faults stopped, in ms of run time.
    pub heal_ms: u64,
    /// The bound the checker should judge liveness with.
    pub liveness_bound_ms: u64,
    /// The clients' session timeout, in ms: what each fault adds to the time a timed
    /// acquire may take.
    pub session_timeout_ms: u64,
    pub lock_path: String,
    /// What the fault injector did.
    pub faults: FaultCounts,
    /// Process pauses were among the faults: judge the run as the simulation judges runs
    /// with pauses (`CheckConfig::pauses_on`), since a paused holder cannot notice its
    /// session expiring and no recipe keeps belief-based exclusion then.
    pub pauses_on: bool,
    /// Sessions opened by the clients (more than `clients` after expiries).
    pub sessions_opened: u64,
    /// The run was cut short by [`WorkloadConfig::interrupt`]: it was judged on what it
    /// had recorded by then.
    pub interrupted: bool,
    /// Per client, when it had proxies: every request it sent that an aim can match, in
    /// the order its proxies saw them (see [`ClientLink::requests_seen`]), and how many
    /// more came past the proxies' bound. Empty when the run had no proxies.
    pub requests: Vec<(Vec<crate::plan::SeenRequest>, u64)>,
    /// Requests aimed faults caught ([`FaultConfig::aimed`]), over every client.
    pub aimed_strikes: u64,
    /// Every ephemeral node the clients made, as their proxies saw the server's replies,
    /// with the run's leak bound ([`WorkloadConfig::leak_bound_ms`]), for the checker's
    /// `node_outlives_attempt`. `None` when the run had no proxies.
    pub nodes: Option<NodeLives>,
    /// The servers, still running (dropping harness-started ones stops them).
    pub servers: Servers,
}

impl RealRun {
    /// What the checker needs to know of this run besides its history:
    /// `CheckConfig::from(run.facts())`. A run of several locks, or a semaphore's, also
    /// needs its shape: [`final_children_by_lock`](RealRun::final_children_by_lock) and
    /// [`leases`](RealRun::leases) (`zklock_checker::real_judge::RunShape`).
    pub fn facts(&self) -> RunFacts {
        RunFacts {
            heal_ms: self.heal_ms,
            liveness_bound_ms: self.liveness_bound_ms,
            pauses_on: self.pauses_on,
            lock_path: self.lock_path.clone(),
            final_lock_children: self.final_lock_children.clone(),
            run_end_us: self.run_end_us,
            session_timeout_ms: self.session_timeout_ms,
            tokens_are_czxids: self.tokens_are_czxids,
        }
    }
}
