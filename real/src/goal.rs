//! What a run must have seen before it ends ([`RunGoal`]): read by the workload, which
//! ends the run, and by the fault injector, which heals late until it holds.

use std::sync::Arc;
use zklock_recipe::history::{History, RunFacts};

/// A condition on a run's history so far; see `WorkloadConfig::until`.
#[derive(Clone)]
pub struct RunGoal(Arc<GoalFn>);

/// What a [`RunGoal`] asks of the history so far and the run's facts so far.
type GoalFn = dyn Fn(&History, &RunFacts) -> bool + Send + Sync;

impl RunGoal {
    /// A goal judged by `reached`, given the history so far and the run's facts so far
    /// (the heal as it happened, the end as now, no final children yet).
    pub fn new(reached: impl Fn(&History, &RunFacts) -> bool + Send + Sync + 'static) -> Self {
        RunGoal(Arc::new(reached))
    }

    /// Whether the goal holds of `history`.
    pub fn reached(&self, history: &History, facts: &RunFacts) -> bool {
        (self.0)(history, facts)
    }
}

impl std::fmt::Debug for RunGoal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunGoal(..)")
    }
}
