//! Bounded exhaustive model checking: every interleaving and every fault placement of a
//! small configuration, by depth-first search over the Chooser's decisions.
//!
//! Each schedule is a fresh run that follows a prefix of choices and answers 0 after it;
//! the search then backtracks by incrementing the deepest choice that has an untried
//! alternative (stateless model checking, re-executing from the start as loom and shuttle
//! do). Faults use [`FaultMode::Bounded`](zklock_sim::FaultMode::Bounded): at each step "no fault" or one of the enabled
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
//! **Shards.** With [`Control::shard`], the search covers only one shard's subtrees of
//! the tree, with a seen set of its own, so that separate processes split a check:
//! [`crate::shard`] gives the split and the argument.
//!
//! **Resuming.** The search is fully described by the work left, the digests seen and its
//! counters: a [`Checkpoint`] of them, taken when a bound or an interrupt stops the
//! search ([`Control::checkpoint`]), resumes it ([`Control::resume`]). On one thread the
//! work left is the next prefix to run, and the resumed search has exactly the schedules
//! and pruning the search would have had in one go; on several it is every unfinished
//! job, and the resumed search (on any number of threads) reaches the same states and
//! verdict as one run in one go ([`crate::checkpoint`], [`crate::parallel`]).

pub use crate::bounds::Bounds;
use crate::checkpoint::{Checkpoint, CheckpointError, Subtree};
pub use crate::dfs::PROGRESS_EVERY_SCHEDULES;
use crate::dfs::{DfsChooser, Por, judge_pruned};
use crate::exercised::Exercised;
use crate::explore::Interrupt;
use crate::limits::LimitError;
use crate::parallel::Search;
use crate::run::{CheckedRun, judge};
use crate::seen::SeenStates;
use crate::shard::{Shard, ShardError, fault_kinds, sketch};
use crate::sleep_sets::{Explored, RunSleep, SleepingStates};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zklock_sim::{GuidedChooser, Recipe, SavedFolds, Scenario, SimError, run_scenario_with};

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
    /// The shard searched, when [`Control::shard`] split the check.
    pub shard: Option<ShardReport>,
    /// What the schedules run exercised, pruned ones to their pruning point: a check in
    /// which no schedule made an acquisition checked nothing ([`Exercised::verdict`]).
    /// Resumed, of the whole check, as `schedules`, when its checkpoint carried counts
    /// (format 3); of this search only when it did not (see
    /// [`exercised_whole`](ExhaustiveReport::exercised_whole)).
    pub exercised: Exercised,
}

impl ExhaustiveReport {
    /// What the whole check exercised, when `exercised` counts every schedule of it (a
    /// fresh search, or one resumed from a checkpoint with counts); `None` for a search
    /// resumed from a checkpoint without counts, which cannot be judged for "nothing
    /// checked".
    pub fn exercised_whole(&self) -> Option<&Exercised> {
        (self.exercised.runs == self.schedules).then_some(&self.exercised)
    }
}

/// The counts of a search resumed after `before` (none: the checkpoint carried none).
fn with_before(before: Option<&Exercised>, this: Exercised) -> Exercised {
    match before {
        Some(b) => {
            let mut all = b.clone();
            all.merge(&this);
            all
        }
        None => this,
    }
}

/// What a shard of a split check searched ([`crate::shard`]).
#[derive(Clone, Debug)]
pub struct ShardReport {
    pub shard: Shard,
    /// The kinds of fault the check places ([`crate::shard::fault_kinds`]).
    pub fault_kinds: u64,
    /// Of those, this shard's: the kinds of the first faults it searches.
    pub shard_kinds: u64,
    /// The sketch of the states this shard saw, to estimate the shards' union.
    pub sketch: Vec<u64>,
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
    /// Search only this shard's subtrees of the check, with a seen set of its own
    /// ([`crate::shard`]); a checkpoint then resumes only the same shard. Not with
    /// partial-order reduction. Default: none, the whole check.
    pub shard: Option<Shard>,
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
    /// A split that cannot be made.
    Shard(ShardError),
}

impl std::fmt::Display for SearchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchError::Limit(e) => e.fmt(f),
            SearchError::Checkpoint(e) => e.fmt(f),
            SearchError::Shard(e) => e.fmt(f),
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

/// Explores every schedule of `bounds` for `recipe`, stopping at the first violation.
///
/// ```
/// use zklock_checker::{Bounds, check_exhaustive};
/// use zklock_sim::{Scenario, ShippedRecipe};
///
/// // Every interleaving and fault placement of two clients with at most one fault.
/// let bounds = Bounds { clients: 2, faults_max: 1, ..Bounds::default() };
/// let report = check_exhaustive(&Scenario::default(), &ShippedRecipe::default(), &bounds)
///     .expect("bounds within their limits");
/// assert!(report.complete, "{report}");
/// assert!(report.violation.is_none());
/// ```
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
        Err(SearchError::Shard(_)) => unreachable!("no shard asked for"),
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
    if partial_order && control.shard.is_some() {
        return Err(SearchError::Shard(ShardError::PartialOrder));
    }
    let identity = match control.shard {
        Some(s) => s.checkpoint_recipe(&recipe.name()),
        None => recipe.name(),
    };
    // A checkpoint of this search, with no progress yet.
    let checkpoint_start =
        || Checkpoint::start_reduced(&identity, &scenario, bounds.prune, symmetry, keep_only);
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
    let t0 = Instant::now();
    // A shard searches the whole tree, taking only its first faults.
    let mut work = vec![Subtree::from_prefix(Vec::new())];
    let mut seen = Vec::new();
    let resumed = control.resume.is_some();
    // What ran before the checkpoint exercised, when it says (format 3): the report's
    // counts are then of the whole check. `None` when no checkpoint carried them.
    let mut before = Some(Exercised::default());
    if let Some(c) = control.resume {
        c.belongs_to_reduced(&identity, &scenario, bounds.prune, symmetry, keep_only)
            .map_err(SearchError::Checkpoint)?;
        (schedules, pruned) = (c.schedules, c.pruned);
        max_depth = usize::try_from(c.max_depth).unwrap_or(usize::MAX);
        work = c.work;
        seen = c.visited;
        before = c.exercised;
    }
    let resumed_at_schedules = schedules;
    let deadline = t0 + Duration::from_millis(bounds.time_limit_ms);
    let workers = bounds.threads.max(1);
    // One thread's work is the whole tree from a prefix, which the loop below runs as in
    // one go; any other (a checkpoint of several threads) runs as jobs, one after
    // another on one thread.
    let one_prefix = matches!(work.as_slice(), [w] if w.is_whole_tree());
    let kinds = fault_kinds(&scenario);
    let shard_report = |seen: &SeenStates| {
        control.shard.map(|s| ShardReport {
            shard: s,
            fault_kinds: kinds,
            shard_kinds: s.kinds_of(kinds),
            sketch: sketch(seen),
        })
    };
    if !partial_order && (workers > 1 || !one_prefix || control.shard.is_some()) {
        let seen = Arc::new(SeenStates::new(seen));
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
            seen: seen.clone(),
            schedules_before: resumed_at_schedules,
            keep_left: control.checkpoint,
            shard: control.shard,
        }
        .run(workers);
        // A shard searched from its start on one thread found its first violation
        // already: its jobs ran one after another, in order.
        let in_order = workers == 1 && !resumed && control.shard.is_some();
        if found.violation.is_some() && !in_order {
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
                shard: control.shard,
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
        let exercised = with_before(before.as_ref(), found.exercised);
        let checkpoint = (control.checkpoint && !found.left.is_empty()).then(|| Checkpoint {
            exercised: before.is_some().then(|| exercised.clone()),
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
            shard: shard_report(&seen),
            exercised,
        });
    }
    let visited = Arc::new(SeenStates::new(seen));
    let mut prefix = work.pop().map(|w| w.next_prefix);
    let mut violation = None;
    let mut interrupted = false;
    let mut folds = SavedFolds::default();
    let mut exercised = before.clone().unwrap_or_default();
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
        let chooser = Arc::new(Mutex::new(
            DfsChooser::new(
                p,
                visited.clone(),
                bounds.prune,
                symmetry,
                finals.clone(),
                std::mem::take(&mut folds),
                !control.fold_replayed_prefix,
            )
            .keeping_only(keep_only)
            .with_por(run_sleep.map(|run| Por {
                run,
                explored: explored.clone(),
                sleeping: sleeping.clone(),
            })),
        ));
        let out = run_scenario_with(&scenario, 0, Box::new(chooser.clone()), recipe);
        schedules += 1;
        if schedules % PROGRESS_EVERY_SCHEDULES == 0 {
            progress(schedules, visited.len());
        }
        let (made, por) = {
            let mut c = chooser.lock().expect("chooser lock");
            folds = std::mem::take(&mut c.folds);
            (std::mem::take(&mut c.guided.made), c.take_por())
        };
        max_depth = max_depth.max(made.len());
        exercised.merge(&Exercised::of(&out.history));
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
                exercised: before.is_some().then(|| exercised.clone()),
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
        shard: None,
        exercised,
    })
}
