//! The bounds of an exhaustive check: what it explores, and what stops it.

use crate::limits::THREADS_MAX;
use crate::limits::{LimitError, check_wall_time_ms};
use zklock_sim::{FaultMode, Recipe, Scenario, Shape};

/// Bounds of an exhaustive check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Clients. Default 2.
    pub clients: u32,
    /// Acquisitions per client. Default 1.
    pub acquisitions_per_client: u32,
    /// Faults per schedule at most. Default 1.
    pub faults_max: u32,
    /// Schedules at most before giving up (the report then says it is incomplete); any
    /// count, since the time limit bounds the search too. A resumed search counts only
    /// the schedules it runs itself. Default 2,000,000.
    pub schedules_max: u64,
    /// Wall time at most, in milliseconds (of this search, when resumed), at most
    /// [`WALL_TIME_LIMIT_MS_MAX`](crate::limits::WALL_TIME_LIMIT_MS_MAX). Default 600000.
    pub time_limit_ms: u64,
    /// Prune revisited states. Default true.
    pub prune: bool,
    /// Which of the workload's decisions are choices too, so that every schedule of
    /// each is explored: each attempt's mode among `shape.modes`, each client's count of
    /// attempts up to `acquisitions_per_client`, and bounded partitions' and pauses'
    /// durations around the session timeout ([`Shape`]). Default [`Shape::fixed`]: the
    /// base scenario's fixed mix, every attempt made, faults that outlive the session.
    pub shape: Shape,
    /// Prune, too, states that are a seen state with interchangeable clients permuted
    /// (symmetry reduction: see [`crate::symmetry`]), when the recipe declares itself
    /// symmetric ([`Recipe::symmetric`]); else, and without `prune`, no effect. Default
    /// true.
    pub symmetry: bool,
    /// Count as one the states that differ only in what a recipe said it does not keep
    /// of a reply ([`Coordination::keep_only`](zklock_recipe::Coordination::keep_only):
    /// the shipped lock keeps only its place of a listing); only with `prune`. Default
    /// true.
    pub keep_only: bool,
    /// Skip schedules that only reorder commuting requests of different clients
    /// (partial-order reduction by sleep sets: see [`crate::partial_order`]); only with
    /// `prune`. Such a search takes no checkpoint and resumes none. Default false.
    pub partial_order: bool,
    /// Threads searching at once, at most [`THREADS_MAX`] (0 runs one). The verdict and
    /// the violation reported are the same for any number ([`crate::parallel`]); the
    /// counts of schedules are not. A checkpoint taken on any number resumes on any
    /// number. A search that reduces by partial order runs on one thread. Default 1.
    pub threads: usize,
    /// Virtual time each request takes, in microseconds ([`Scenario::request_time_us`],
    /// at most [`REQUEST_TIME_US_MAX`](zklock_sim::scenario::limits::REQUEST_TIME_US_MAX)).
    /// Default 0: the clock moves only to the next timer, once no request is ready (see
    /// "Time" in the module docs).
    pub request_time_us: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            clients: 2,
            acquisitions_per_client: 1,
            faults_max: 1,
            schedules_max: 2_000_000,
            time_limit_ms: 600_000,
            prune: true,
            shape: Shape::fixed(),
            symmetry: true,
            keep_only: true,
            partial_order: false,
            threads: 1,
            request_time_us: 0,
        }
    }
}

impl Bounds {
    /// Whether a search of `recipe` within these bounds prunes up to symmetry.
    pub fn reduces_by_symmetry<R: Recipe>(&self, recipe: &R) -> bool {
        self.prune && self.symmetry && recipe.symmetric()
    }

    /// Whether a search within these bounds counts states by what recipes keep of
    /// replies ([`Bounds::keep_only`]).
    pub fn reduces_by_keep_only(&self) -> bool {
        self.prune && self.keep_only
    }

    /// Whether a search within these bounds reduces by partial order.
    pub fn reduces_by_partial_order(&self) -> bool {
        self.prune && self.partial_order
    }

    /// Checks the time limit, and the scenario these bounds explore from `base` (clients,
    /// acquisitions and faults within the scenario's bounds).
    pub fn validate(&self, base: &Scenario) -> Result<(), LimitError> {
        check_wall_time_ms("the exhaustive check's time limit (ms)", self.time_limit_ms)?;
        if self.threads > THREADS_MAX {
            return Err(LimitError::TooLarge {
                what: "the exhaustive check's threads",
                value: self.threads as u64,
                max: THREADS_MAX as u64,
            });
        }
        self.scenario(base).validate()?;
        Ok(())
    }

    /// The scenario these bounds explore, from a base (lock path, timeouts, enabled fault
    /// kinds).
    pub fn scenario(&self, base: &Scenario) -> Scenario {
        Scenario {
            clients: self.clients,
            acquisitions_per_client: self.acquisitions_per_client,
            // Revokers leave a writer: readers give way to it at small bounds.
            readers: base.readers.min(
                self.clients
                    .saturating_sub(base.revokers + u32::from(base.revokers > 0)),
            ),
            fault_mode: FaultMode::Bounded {
                faults_max: self.faults_max,
            },
            // Faults may strike at any step; their number is what is bounded.
            heal_ms: base.time_limit_ms,
            shape: self.shape.clone(),
            request_time_us: self.request_time_us,
            // The search branches on every order of requests.
            priorities: None,
            ..base.clone()
        }
    }
}
