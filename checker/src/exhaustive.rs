//! Bounded exhaustive model checking: every interleaving and every fault placement of a
//! small configuration, by depth-first search over the Chooser's decisions.
//!
//! Each schedule is a fresh run that follows a prefix of choices and answers 0 after it;
//! the search then backtracks by incrementing the deepest choice that has an untried
//! alternative (stateless model checking, re-executing from the start as loom and shuttle
//! do). Faults use [`FaultMode::Bounded`]: at each step "no fault" or one of the enabled
//! kinds, at most `faults_max` per run.
//!
//! **Pruning, and why it is sound.** At each step the world hands the explorer a digest of
//! its whole state: the server tree, sessions, connections and their queues, timers, the
//! resource, the faults used, and for each client still running its workload a digest
//! of every value delivered to its actor, clock reads included. An actor draws no
//! randomness and reads time only from the world, so its local state is a function of
//! what was given to it; a client whose workload has returned has no code left to read
//! anything, so only the world's state of it counts. Hence equal digests mean equal
//! futures. The first schedule to reach a state explores, through
//! backtracking, every continuation from it, so a later schedule reaching the same state
//! stops there.
//! This covers every property judged on states (mutual exclusion, read/write
//! compatibility, the fenced resource) and on final states (orphan nodes, stuck waiters).
//! Every schedule is judged as far as it runs: one that runs to the end on its whole
//! history, one stopped at a seen state on its history up to there, on every property
//! a run that goes on cannot mend (all but `liveness_after_heal`: its final state is no
//! run's, and an open wait may yet be served). When a stopped schedule's history breaks
//! one, the same schedule runs again to its end without pruning, and that whole run is
//! judged and reported, so that its trace replays as it ran. Properties of whole paths
//! (FIFO order, herds, liveness bounds, fencing token order, whether a refused writer's
//! hold was still valid) are thus judged on each schedule's own past; a stopped
//! schedule's future is the one explored from the state's first visit, judged with that
//! visit's past, so a violation that needs the stopped schedule's past together with that
//! future is not seen. Two pasts that meet as one state may differ in the order of
//! events of clients that never observed each other, and in everything a client whose
//! workload is over was given.
//!
//! **Time.** Requests take no virtual time by default ([`Bounds::request_time_us`]): the
//! clock moves only when no request is ready, to the next timer (a sleep's end, a
//! reconnect, a session's expiry, a fault's end). Timers due at the same time fire in
//! the order they were set, as they would with requests taking time, since the one set
//! first would be due first. With requests taking time, two schedules that run the same
//! requests around a fault differ in every timer the fault sets by a multiple of the
//! request time, so they never meet as one state; at 0 they do, and the 3-client search
//! with a fault has about a tenth of the states. What this model leaves out: a timer
//! firing while a request is ready, which with the simulation's 100 µs requests needs a
//! timer closer than the requests still to run (a check's shortest, a dropped acquire's
//! delay of 1 ms or more, is ten requests away or more). Every canary is caught in both
//! models (the canary suite runs both).
//!
//! **Shapes.** With a chosen shape ([`Bounds::shape`]) the workload's decisions are the
//! Chooser's like any other: an attempt's mode and a client's stop are values delivered
//! to its actor, and a fault's end is in the client's state in the world, so both are
//! in the digest and the argument above holds unchanged.
//!
//! **Symmetry.** With [`Bounds::symmetry`], for a recipe that declares itself symmetric,
//! the digest is the same for states that differ only by a permutation of clients of one
//! role, so a permutation of a seen state is pruned too: [`crate::symmetry`] gives the
//! argument and the evidence.
//!
//! **What recipes keep.** With [`Bounds::keep_only`], a reply of which the recipe said it
//! keeps only a part ([`Coordination::keep_only`](zklock_recipe::Coordination::keep_only))
//! is folded as that part, so states that differ only in the rest are one:
//! [`crate::keep_only`] gives the argument and the evidence.
//!
//! **Partial order.** With [`Bounds::partial_order`], request transitions that commute
//! are not explored in both orders (sleep sets): [`crate::partial_order`] gives the
//! argument and the evidence. It saves schedules, not states.
//!
//! **Threads.** With [`Bounds::threads`] above one, workers share the seen states and
//! split the tree of schedules between them; a violation is reported as the search on
//! one thread reports it: [`crate::parallel`] gives the argument.
//!
//! **Resuming.** The search is fully described by the work left, the digests seen and its
//! counters: a [`Checkpoint`] of them, taken when a bound or an interrupt stops the
//! search ([`Control::checkpoint`]), resumes it ([`Control::resume`]). On one thread the
//! work left is the next prefix to run, and the resumed search has exactly the schedules
//! and pruning the search would have had in one go; on several it is every unfinished
//! job, and the resumed search (on any number of threads) reaches the same states and
//! verdict as one run in one go ([`crate::checkpoint`], [`crate::parallel`]).

use crate::checkpoint::{Checkpoint, CheckpointError, Subtree};
use crate::explore::Interrupt;
use crate::limits::THREADS_MAX;
use crate::limits::{LimitError, check_wall_time_ms};
use crate::parallel::Search;
use crate::partial_order::{Explored, RunSleep, SleepingStates};
use crate::run::{CheckedRun, judge, prefix_broke_a_property};
use crate::seen::SeenStates;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zklock_sim::{
    ChoiceKind, Chooser, FaultMode, Folds, Footprint, GuidedChooser, Offer, Recipe, RunOutcome,
    SavedFolds, Scenario, Shape, SimError, run_scenario_with,
};

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
            readers: base.readers.min(self.clients),
            fault_mode: FaultMode::Bounded {
                faults_max: self.faults_max,
            },
            // Faults may strike at any step; their number is what is bounded.
            heal_ms: base.time_limit_ms,
            shape: self.shape.clone(),
            request_time_us: self.request_time_us,
            ..base.clone()
        }
    }
}

/// What an exhaustive check found.
#[derive(Debug)]
pub struct ExhaustiveReport {
    pub scenario: Scenario,
    /// Schedules run (to the end or to a pruning point).
    pub schedules: u64,
    /// Of those, how many stopped at an already-seen state.
    pub pruned: u64,
    /// Distinct states seen.
    pub distinct_states: u64,
    /// The most choices any schedule made.
    pub max_depth: usize,
    pub wall_ms: u64,
    /// Whether every schedule within the bounds was explored.
    pub complete: bool,
    /// The first violating schedule in search order, if any.
    pub violation: Option<CheckedRun>,
    /// Whether an [`Interrupt`] stopped the search.
    pub interrupted: bool,
    /// Whether states were pruned up to a permutation of clients
    /// ([`Bounds::reduces_by_symmetry`]).
    pub symmetry: bool,
    /// Whether states were counted by what recipes keep of replies
    /// ([`Bounds::reduces_by_keep_only`]).
    pub keep_only: bool,
    /// Whether commuting requests were explored in one order only
    /// ([`Bounds::reduces_by_partial_order`]).
    pub partial_order: bool,
    /// The digests of the final states of the schedules that ran to the end, up to a
    /// permutation of clients, when [`Control::final_states`] asked for them.
    pub final_states: Option<std::collections::BTreeSet<u128>>,
    /// Schedules run before this search resumed (0 when it started afresh); `schedules`
    /// and `pruned` count them too. A violation found on several threads is reported
    /// from the search on one thread run again from the start: then 0, as the counts are
    /// of that search.
    pub resumed_at_schedules: u64,
    /// Where the search stopped, when a bound or an interrupt stopped it before the end
    /// and [`Control::checkpoint`] asked for it: resume from it with [`Control::resume`].
    pub checkpoint: Option<Checkpoint>,
    /// Threads that searched ([`Bounds::threads`], or 1 where the search runs on one).
    pub threads: usize,
}

/// Where an exhaustive search starts, what may stop it early, and whether it keeps a
/// checkpoint when it does.
#[derive(Debug, Default)]
pub struct Control {
    /// A checkpoint to resume from (of the same recipe, scenario, pruning and zklock).
    /// Default: none, start afresh.
    pub resume: Option<Checkpoint>,
    /// Stops the search between two schedules, leaving it incomplete. Default: none.
    pub interrupt: Interrupt,
    /// Keep a checkpoint in the report when a bound or an interrupt stops the search
    /// early, on any number of threads; never with partial-order reduction, whose sleep
    /// sets a checkpoint does not hold. Default false (it holds every digest seen: 16
    /// bytes a state).
    pub checkpoint: bool,
    /// Collect the final states' digests up to symmetry in the report
    /// ([`ExhaustiveReport::final_states`]), for comparing a reduced search with an
    /// unreduced one. Default false.
    pub final_states: bool,
    /// Fold what actors are given while a schedule replays its prefix, as the first
    /// schedule does, rather than take over the folds the schedule before had there:
    /// slower, with the same digests (for the evidence that they are the same). Default
    /// false.
    pub fold_replayed_prefix: bool,
}

/// Why an exhaustive search did not run.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchError {
    /// Bounds or a scenario outside their limits.
    Limit(LimitError),
    /// The checkpoint to resume from belongs to another check.
    Checkpoint(CheckpointError),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Limit(e) => e.fmt(f),
            SearchError::Checkpoint(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SearchError {}

impl From<LimitError> for SearchError {
    fn from(e: LimitError) -> Self {
        SearchError::Limit(e)
    }
}

impl std::fmt::Display for ExhaustiveReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} schedules ({} pruned at seen states), {} distinct states, depth {} choices, \
             {:.2} s, {}",
            self.schedules,
            self.pruned,
            self.distinct_states,
            self.max_depth,
            self.wall_ms as f64 / 1000.0,
            if self.complete {
                "complete"
            } else if self.violation.is_some() {
                // The search stops at its first violation: not a bound's doing.
                "stopped at the first violation"
            } else {
                "INCOMPLETE (a bound stopped the search)"
            }
        )
    }
}

/// The chooser of one run of a depth-first search, on one thread or several.
pub(crate) struct DfsChooser {
    pub(crate) guided: GuidedChooser,
    prefix_len: usize,
    visited: Arc<SeenStates>,
    prune: bool,
    /// Prune by symmetric digests.
    symmetry: bool,
    /// Fold what recipes keep of replies in the replies' place (see [`Bounds::keep_only`]).
    keep_only: bool,
    /// Collect final states up to symmetry (so every digest is symmetric where it can be).
    finals: Option<Arc<Mutex<std::collections::BTreeSet<u128>>>>,
    /// With partial-order reduction: this run's sleep sets, what was explored at the
    /// prefix's choices, and the states seen with a sleep set.
    por: Option<Por>,
    /// The folds of earlier runs at their choices, carried from run to run, and whether
    /// this run takes them over for its prefix (see [`SavedFolds`]).
    pub(crate) folds: SavedFolds,
    reuse_folds: bool,
}

impl DfsChooser {
    /// A run that follows `prefix`, then answers 0, pruning at states in `visited` (when
    /// `prune`), without partial-order reduction.
    pub(crate) fn new(
        prefix: Vec<u32>,
        visited: Arc<SeenStates>,
        prune: bool,
        symmetry: bool,
        finals: Option<Arc<Mutex<std::collections::BTreeSet<u128>>>>,
        folds: SavedFolds,
        reuse_folds: bool,
    ) -> DfsChooser {
        DfsChooser {
            prefix_len: prefix.len(),
            guided: GuidedChooser::new(prefix),
            visited,
            prune,
            symmetry,
            keep_only: false,
            finals,
            por: None,
            folds,
            reuse_folds,
        }
    }

    /// The same, folding what recipes keep of replies in the replies' place when
    /// `keep_only` (see [`Bounds::keep_only`]).
    pub(crate) fn keeping_only(self, keep_only: bool) -> DfsChooser {
        DfsChooser { keep_only, ..self }
    }
}

struct Por {
    run: RunSleep,
    explored: Arc<Mutex<Explored>>,
    sleeping: Arc<Mutex<SleepingStates>>,
}

impl Chooser for DfsChooser {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        match &mut self.por {
            Some(p) if kind == ChoiceKind::NextRequest => {
                let position = self.guided.made.len();
                let explored = p.explored.lock().expect("explored lock");
                let c = p.run.choose(position, n, explored.at(position));
                self.guided.made.push((kind, n as u32, c as u32));
                c
            }
            _ => self.guided.choose(kind, n),
        }
    }
    fn wants_digests(&self) -> bool {
        true
    }
    fn at_state(&mut self, digest: u128) -> bool {
        // Re-executing the prefix revisits its own states: never prune there.
        if self.guided.made.len() < self.prefix_len {
            return true;
        }
        let fresh = self.visited.insert(digest);
        let Some(p) = &mut self.por else {
            return fresh || !self.prune;
        };
        let z = p.run.sleep_offers();
        let mut sleeping = p.sleeping.lock().expect("sleeping lock");
        if fresh {
            sleeping.first(digest, z);
            return true;
        }
        !sleeping.prune_revisit(digest, &z, self.symmetry)
    }
    fn needs_digest(&self) -> bool {
        self.guided.made.len() >= self.prefix_len
    }
    fn wants_symmetry(&self) -> bool {
        self.symmetry || self.finals.is_some()
    }
    fn prunes_by_symmetry(&self) -> bool {
        self.symmetry
    }
    fn at_end(&mut self, digest: u128) {
        if let Some(f) = &self.finals {
            f.lock().expect("finals lock").insert(digest);
        }
    }
    fn wants_partial_order(&self) -> bool {
        self.por.is_some()
    }
    fn honours_keep_only(&self) -> bool {
        self.keep_only
    }
    fn after_transition(&mut self, transition: Option<&Footprint>) {
        if let Some(p) = &mut self.por {
            p.run.after_transition(transition);
        }
    }
    fn offer_requests(&mut self, offers: &[Offer]) -> bool {
        self.por.as_mut().is_none_or(|p| p.run.offer(offers))
    }
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        self.reuse_folds
            .then(|| self.folds.for_prefix(self.guided.prefix()))?
    }
    fn keeps_folds(&self) -> bool {
        self.reuse_folds
    }
    fn keep_folds(&mut self, position: usize, folds: &Folds) {
        debug_assert_eq!(position, self.guided.made.len());
        self.folds
            .keep(self.guided.made.iter().map(|&(_, _, c)| c), folds);
    }
}

/// Explores every schedule of `bounds` for `recipe`, stopping at the first violation.
pub fn check_exhaustive<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
) -> Result<ExhaustiveReport, LimitError> {
    check_exhaustive_until(base, recipe, bounds, &|r| r.failure().is_some())
}

/// As [`check_exhaustive`], but stops only at a schedule `failing` accepts.
pub fn check_exhaustive_until<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Result<ExhaustiveReport, LimitError> {
    check_exhaustive_with(base, recipe, bounds, failing, &|_, _| {})
}

/// Schedules between two calls of an exhaustive check's `progress`.
pub const PROGRESS_EVERY_SCHEDULES: u64 = 1024;

/// As [`check_exhaustive_until`], calling `progress(schedules, distinct_states)` every
/// [`PROGRESS_EVERY_SCHEDULES`] schedules, for a progress display. Bounds or a scenario
/// outside their limits ([`Bounds::validate`]) are a [`LimitError`], and nothing runs.
pub fn check_exhaustive_with<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<ExhaustiveReport, LimitError> {
    match check_exhaustive_controlled(base, recipe, bounds, failing, progress, Control::default()) {
        Ok(r) => Ok(r),
        Err(SearchError::Limit(e)) => Err(e),
        Err(SearchError::Checkpoint(_)) => unreachable!("no checkpoint to resume"),
    }
}

/// As [`check_exhaustive_with`], resuming from a checkpoint, stopping at an interrupt and
/// keeping a checkpoint as `control` says. A checkpoint of another check is a
/// [`SearchError::Checkpoint`], and nothing runs.
pub fn check_exhaustive_controlled<R: Recipe>(
    base: &Scenario,
    recipe: &R,
    bounds: &Bounds,
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
    progress: &(dyn Fn(u64, u64) + Sync),
    control: Control,
) -> Result<ExhaustiveReport, SearchError> {
    bounds.validate(base)?;
    let scenario = bounds.scenario(base);
    let symmetry = bounds.reduces_by_symmetry(recipe);
    let keep_only = bounds.reduces_by_keep_only();
    let partial_order = bounds.reduces_by_partial_order();
    // A checkpoint of this search, with no progress yet.
    let checkpoint_start =
        || Checkpoint::start_reduced(&recipe.name(), &scenario, bounds.prune, symmetry, keep_only);
    if partial_order && control.resume.is_some() {
        return Err(SearchError::Checkpoint(CheckpointError::Mismatch {
            what: "partial-order reduction",
            checkpoint: "off".into(),
            this: "on".into(),
        }));
    }
    let explored = Arc::new(Mutex::new(Explored::default()));
    let sleeping = Arc::new(Mutex::new(SleepingStates::default()));
    let finals = control
        .final_states
        .then(|| Arc::new(Mutex::new(std::collections::BTreeSet::new())));
    let (mut schedules, mut pruned, mut max_depth) = (0u64, 0u64, 0usize);
    let mut work = vec![Subtree::from_prefix(Vec::new())];
    let mut seen = Vec::new();
    if let Some(c) = control.resume {
        c.belongs_to_reduced(&recipe.name(), &scenario, bounds.prune, symmetry, keep_only)
            .map_err(SearchError::Checkpoint)?;
        (schedules, pruned) = (c.schedules, c.pruned);
        max_depth = usize::try_from(c.max_depth).unwrap_or(usize::MAX);
        work = c.work;
        seen = c.visited;
    }
    let resumed_at_schedules = schedules;
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(bounds.time_limit_ms);
    let workers = bounds.threads.max(1);
    // One thread's work is the whole tree from a prefix, which the loop below runs as in
    // one go; any other (a checkpoint of several threads) runs as jobs, one after
    // another on one thread.
    let one_prefix = matches!(work.as_slice(), [w] if w.is_whole_tree());
    if !partial_order && (workers > 1 || !one_prefix) {
        let found = Search {
            scenario: &scenario,
            recipe,
            bounds,
            symmetry,
            failing,
            progress,
            interrupt: &control.interrupt,
            deadline,
            final_states: control.final_states,
            reuse_folds: !control.fold_replayed_prefix,
            start: work,
            // Moved in, so that the checkpoint's digests are not held twice.
            seen: Arc::new(SeenStates::new(seen)),
            schedules_before: resumed_at_schedules,
            keep_left: control.checkpoint,
        }
        .run(workers);
        if found.violation.is_some() {
            // The one-thread search's first violation, so that the report does not
            // depend on the threads' timing; it stops there, as soon as it finds it. A
            // resumed search runs it from the start too: where the threads' work was
            // split depends on their timing.
            let one = Bounds {
                threads: 1,
                time_limit_ms: deadline
                    .saturating_duration_since(Instant::now())
                    .as_millis() as u64,
                ..bounds.clone()
            };
            let control = Control {
                interrupt: control.interrupt.clone(),
                final_states: control.final_states,
                fold_replayed_prefix: control.fold_replayed_prefix,
                ..Control::default()
            };
            let r = check_exhaustive_controlled(base, recipe, &one, failing, progress, control)?;
            if r.violation.is_some() {
                return Ok(ExhaustiveReport {
                    wall_ms: t0.elapsed().as_millis() as u64,
                    threads: workers,
                    ..r
                });
            }
        }
        let checkpoint = (control.checkpoint && !found.left.is_empty()).then(|| Checkpoint {
            schedules: schedules + found.schedules,
            pruned: pruned + found.pruned,
            max_depth: max_depth.max(found.max_depth) as u64,
            work: found.left,
            visited: found.seen,
            ..checkpoint_start()
        });
        return Ok(ExhaustiveReport {
            scenario,
            schedules: schedules + found.schedules,
            pruned: pruned + found.pruned,
            distinct_states: found.distinct_states,
            max_depth: max_depth.max(found.max_depth),
            wall_ms: t0.elapsed().as_millis() as u64,
            complete: found.complete,
            violation: found.violation,
            interrupted: found.interrupted,
            symmetry,
            keep_only,
            partial_order,
            final_states: found.final_states,
            resumed_at_schedules,
            checkpoint,
            threads: workers,
        });
    }
    let visited = Arc::new(SeenStates::new(seen));
    let mut prefix = work.pop().map(|w| w.next_prefix);
    let mut violation = None;
    let mut interrupted = false;
    let mut folds = SavedFolds::default();
    while let Some(p) = prefix.take() {
        interrupted = control.interrupt.is_set();
        if interrupted
            || schedules - resumed_at_schedules >= bounds.schedules_max
            || Instant::now() >= deadline
        {
            prefix = Some(p);
            break;
        }
        let run_sleep = partial_order.then(|| RunSleep::new(p.clone()));
        let chooser = Arc::new(Mutex::new(DfsChooser {
            por: run_sleep.map(|run| Por {
                run,
                explored: explored.clone(),
                sleeping: sleeping.clone(),
            }),
            keep_only,
            ..DfsChooser::new(
                p,
                visited.clone(),
                bounds.prune,
                symmetry,
                finals.clone(),
                std::mem::take(&mut folds),
                !control.fold_replayed_prefix,
            )
        }));
        let out = run_scenario_with(&scenario, 0, Box::new(chooser.clone()), recipe);
        schedules += 1;
        if schedules % PROGRESS_EVERY_SCHEDULES == 0 {
            progress(schedules, visited.len());
        }
        let (made, por) = {
            let mut c = chooser.lock().expect("chooser lock");
            folds = std::mem::take(&mut c.folds);
            (std::mem::take(&mut c.guided.made), c.por.take())
        };
        max_depth = max_depth.max(made.len());
        if out.error == Some(SimError::Pruned) {
            pruned += 1;
            if let Some(run) = judge_pruned(&scenario, recipe, out, &made, failing) {
                violation = Some(run);
                break;
            }
        } else {
            let run = judge(&scenario, out);
            if failing(&run) {
                violation = Some(run);
                break;
            }
        }
        prefix = match por {
            Some(p) => explored
                .lock()
                .expect("explored lock")
                .next_prefix(&made, &p.run),
            None => GuidedChooser::next_prefix(&made),
        };
    }
    let distinct_states = visited.len();
    let checkpoint = match &prefix {
        Some(next) if control.checkpoint && violation.is_none() && !partial_order => {
            let visited = visited.sorted();
            Some(Checkpoint {
                schedules,
                pruned,
                max_depth: max_depth as u64,
                work: vec![Subtree::from_prefix(next.clone())],
                visited,
                ..checkpoint_start()
            })
        }
        _ => None,
    };
    Ok(ExhaustiveReport {
        scenario,
        schedules,
        pruned,
        distinct_states,
        max_depth,
        wall_ms: t0.elapsed().as_millis() as u64,
        complete: prefix.is_none() && violation.is_none(),
        violation,
        interrupted,
        symmetry,
        keep_only,
        partial_order,
        final_states: finals.map(|f| std::mem::take(&mut *f.lock().expect("finals lock"))),
        resumed_at_schedules,
        checkpoint,
        threads: 1,
    })
}

/// Judges a run stopped at a seen state: its history as far as it went, and when that
/// broke a property already, the same schedule run to its end without pruning, so that a
/// violation is reported, and its trace replays, as a whole run. That run, if `failing`
/// accepts it.
pub(crate) fn judge_pruned<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    out: RunOutcome,
    made: &[(ChoiceKind, u32, u32)],
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Option<CheckedRun> {
    if !prefix_broke_a_property(scenario, out) {
        return None;
    }
    let choices = made.iter().map(|&(_, _, c)| c).collect();
    let whole = run_scenario_with(scenario, 0, Box::new(GuidedChooser::new(choices)), recipe);
    let run = judge(scenario, whole);
    failing(&run).then_some(run)
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
        }
    };
    Ok((run(true)?, run(false)?))
}
