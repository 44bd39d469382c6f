//! Shrinking a failing trace to a smallest one that still violates the same property:
//! fewer clients, fewer acquisitions, fewer faults, a shorter choice list.
//!
//! Every candidate is a replay: the scenario (maybe smaller) with a choice list (maybe
//! shorter, or with entries set to 0). Replay answers 0 past the end of the list and
//! clamps an out-of-range index, so every candidate is a valid schedule; 0 is "no fault"
//! and "the first pending request", so zeroing a choice removes a fault or a reordering.
//!
//! Choices are positions among what is pending, so a schedule recorded with five clients
//! seldom means the same with fewer: the clients that matter may not be the first ones.
//! Fewer acquisitions shift the schedule the same way. When a smaller client count or
//! acquisition count does not fail under the current choices, fresh seeds are searched at
//! that size ([`ShrinkLimits::fresh_seeds_max`]), and a failing one is shrunk on from
//! there. The shrunk trace then carries that seed.
//!
//! First of all, though, the smaller sizes are searched exhaustively, smallest first
//! ([`ShrinkLimits::exhaustive_schedules_max`]): every schedule of at most
//! [`EXHAUSTIVE_CLIENTS_MAX`] clients and [`EXHAUSTIVE_ACQUISITIONS_MAX`] acquisitions each,
//! without faults, then with at most one if the trace had any. A random run seldom shows a bug at the
//! smallest size, where one exact interleaving or fault placement is needed; the
//! exhaustive check finds it there in a few hundred schedules. Its first violating
//! schedule is then shrunk on as any other; the trace's scenario becomes the exhaustive
//! one ([`Bounds::scenario`]: faults placed by the chooser, not at random rates).

use crate::exhaustive::{Bounds, check_exhaustive_until};
use crate::limits::{LimitError, check_wall_time_ms};
use crate::run::{CheckedRun, check_seed, judge};
use crate::trace::{SavedReport, Trace};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use zklock_sim::{Recipe, ReplayChooser, Scenario, run_scenario_with};

/// Bounds on a shrink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShrinkLimits {
    /// Candidate runs at most. Default 4000.
    pub runs_max: u64,
    /// Wall time at most, in milliseconds, at most
    /// [`WALL_TIME_LIMIT_MS_MAX`](crate::limits::WALL_TIME_LIMIT_MS_MAX). Default 60000. It bounds the counts below too: each is any number.
    pub time_limit_ms: u64,
    /// Fresh seeds tried at each smaller client count or acquisition count where the
    /// current choices do not fail (each is a run, counted in `runs_max`). 0 turns the
    /// search off. Default 100.
    pub fresh_seeds_max: u64,
    /// Schedules the exhaustive search of the smaller sizes may run, all sizes together
    /// (counted apart from `runs_max`). 0 turns the search off. Default 20000.
    pub exhaustive_schedules_max: u64,
}

/// The most clients the exhaustive search tries: past three, its spaces outgrow any
/// budget.
pub const EXHAUSTIVE_CLIENTS_MAX: u32 = 3;
/// The most acquisitions per client the exhaustive search tries.
pub const EXHAUSTIVE_ACQUISITIONS_MAX: u32 = 2;

impl Default for ShrinkLimits {
    fn default() -> Self {
        ShrinkLimits {
            runs_max: 4000,
            time_limit_ms: 60_000,
            fresh_seeds_max: 100,
            exhaustive_schedules_max: 20_000,
        }
    }
}

/// The size of a trace, as shrinking sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub clients: u32,
    pub acquisitions_per_client: u32,
    pub faults: usize,
    pub choices: usize,
}

/// A shrunk trace.
#[derive(Debug)]
pub struct Shrunk {
    pub trace: Trace,
    pub before: Size,
    pub after: Size,
    /// Replays and fresh seeds run.
    pub runs: u64,
    /// Schedules the exhaustive search ran.
    pub exhaustive_schedules: u64,
    /// Whether the wall-time limit ([`ShrinkLimits::time_limit_ms`]) cut the shrink
    /// short. Then the result depends on the machine's speed, and another run may shrink
    /// further; when it is false, the same trace, recipe and limits always give the same
    /// result.
    pub time_limit_hit: bool,
}

/// Why a trace could not be shrunk.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShrinkError {
    /// Replaying the trace does not fail at all (the recipe or zklock changed?).
    NotFailing,
    /// The trace's scenario or the limits are outside their bounds: nothing ran.
    Limit(LimitError),
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::NotFailing => f.write_str(
                "replaying the trace violates nothing: the recipe or zklock changed since \
                 it was written, or it never failed",
            ),
            ShrinkError::Limit(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ShrinkError {}

fn size(sc: &Scenario, run: &CheckedRun) -> Size {
    Size {
        clients: sc.clients,
        acquisitions_per_client: sc.acquisitions_per_client,
        faults: faults(run),
        choices: run.outcome.choices.len(),
    }
}

fn faults(run: &CheckedRun) -> usize {
    run.outcome
        .history
        .events
        .iter()
        .filter(|e| matches!(e.kind, zklock_recipe::history::EventKind::Fault { .. }))
        .count()
}

struct Shrinker<'a, R> {
    recipe: &'a R,
    seed: u64,
    target: String,
    runs: u64,
    limits: ShrinkLimits,
    deadline: Instant,
    best_sc: Scenario,
    best_choices: Vec<u32>,
    best_run: CheckedRun,
    /// Sizes (clients, acquisitions per client) whose fresh seeds were searched already.
    searched: BTreeSet<(u32, u32)>,
    /// Schedules the exhaustive search ran, and what it searched (clients, acquisitions
    /// per client, faults at most).
    exhaustive_schedules: u64,
    exhaustively_searched: BTreeSet<(u32, u32, u32)>,
    /// Whether the deadline stopped any part of the search.
    time_limit_hit: bool,
}

fn trim_zeros(mut c: Vec<u32>) -> Vec<u32> {
    while c.last() == Some(&0) {
        c.pop();
    }
    c
}

impl<R: Recipe> Shrinker<'_, R> {
    fn out_of_budget(&mut self) -> bool {
        if self.runs >= self.limits.runs_max {
            return true;
        }
        if Instant::now() >= self.deadline {
            self.time_limit_hit = true;
            return true;
        }
        false
    }

    /// Runs a candidate; keeps it if it fails the same way and is no larger.
    fn try_candidate(&mut self, sc: Scenario, choices: Vec<u32>) -> bool {
        if self.out_of_budget() {
            return false;
        }
        self.runs += 1;
        let chooser = ReplayChooser::new(choices);
        let out = run_scenario_with(&sc, self.seed, Box::new(chooser), self.recipe);
        let run = judge(&sc, out);
        self.keep_if_smaller(sc, self.seed, run)
    }

    /// Runs `sc` from a fresh `seed` with the random Chooser; keeps it as
    /// `try_candidate` does.
    fn try_fresh_seed(&mut self, sc: Scenario, seed: u64) -> bool {
        if self.out_of_budget() {
            return false;
        }
        self.runs += 1;
        let run = check_seed(&sc, seed, self.recipe);
        self.keep_if_smaller(sc, seed, run)
    }

    fn keep_if_smaller(&mut self, sc: Scenario, seed: u64, run: CheckedRun) -> bool {
        if !run.violates(&self.target) {
            return false;
        }
        let consumed = trim_zeros(run.outcome.choices.clone());
        let new = (sc.clients, sc.acquisitions_per_client, consumed.len());
        let old = (
            self.best_sc.clients,
            self.best_sc.acquisitions_per_client,
            self.best_choices.len(),
        );
        let fewer_nonzero = consumed.iter().filter(|&&c| c != 0).count()
            < self.best_choices.iter().filter(|&&c| c != 0).count();
        if new < old || (new == old && fewer_nonzero) {
            self.seed = seed;
            self.best_sc = sc;
            self.best_choices = consumed;
            self.best_run = run;
            true
        } else {
            false
        }
    }

    fn shrink_scenario(&mut self) -> bool {
        let mut improved = false;
        for clients in 1..self.best_sc.clients {
            let sc = Scenario {
                clients,
                readers: self.best_sc.readers.min(clients),
                ..self.best_sc.clone()
            };
            if self.try_candidate(sc.clone(), self.best_choices.clone())
                || self.search_fresh_seeds(sc)
            {
                improved = true;
                break;
            }
        }
        for acq in 1..self.best_sc.acquisitions_per_client {
            let sc = Scenario {
                acquisitions_per_client: acq,
                ..self.best_sc.clone()
            };
            if self.try_candidate(sc.clone(), self.best_choices.clone())
                || self.search_fresh_seeds(sc)
            {
                improved = true;
                break;
            }
        }
        improved
    }

    /// Searches fresh seeds at `sc`'s size, once per size. The seeds follow the trace's,
    /// so a shrink is as reproducible as the run it started from.
    fn search_fresh_seeds(&mut self, sc: Scenario) -> bool {
        if !self
            .searched
            .insert((sc.clients, sc.acquisitions_per_client))
        {
            return false;
        }
        let base = self.seed;
        (1..=self.limits.fresh_seeds_max)
            .any(|k| self.try_fresh_seed(sc.clone(), base.wrapping_add(k)))
    }

    /// Searches every schedule of each size smaller than the best, smallest first, and
    /// at each size without faults before with one, within the schedule budget (shared
    /// out evenly among the searches left); keeps the first violation found, if smaller.
    fn search_exhaustively(&mut self) -> bool {
        let best = (self.best_sc.clients, self.best_sc.acquisitions_per_client);
        let faults_cap = faults(&self.best_run).min(1) as u32;
        let searches: Vec<(u32, u32, u32)> = (1..=best.0.min(EXHAUSTIVE_CLIENTS_MAX))
            .flat_map(|c| (1..=best.1.min(EXHAUSTIVE_ACQUISITIONS_MAX)).map(move |a| (c, a)))
            .filter(|&size| size < best)
            .flat_map(|(c, a)| (0..=faults_cap).map(move |f| (c, a, f)))
            .filter(|search| !self.exhaustively_searched.contains(search))
            .collect();
        for (i, &search) in searches.iter().enumerate() {
            let (clients, acquisitions_per_client, faults_max) = search;
            let left = self
                .limits
                .exhaustive_schedules_max
                .saturating_sub(self.exhaustive_schedules);
            let time_left = self.deadline.saturating_duration_since(Instant::now());
            if time_left.is_zero() {
                self.time_limit_hit = true;
                return false;
            }
            if left == 0 {
                return false;
            }
            self.exhaustively_searched.insert(search);
            let bounds = Bounds {
                clients,
                acquisitions_per_client,
                faults_max,
                schedules_max: left / (searches.len() - i) as u64,
                time_limit_ms: time_left.as_millis() as u64,
                prune: true,
                shape: self.best_sc.shape.clone(),
                // The first violation in search order, as before symmetry reduction, so
                // that a shrink finds the trace it always found.
                symmetry: false,
                keep_only: false,
                partial_order: false,
                // Its schedule budget counts runs, and more threads make more of them.
                threads: 1,
                // The failing run's model of time, whichever it was.
                request_time_us: self.best_sc.request_time_us,
            };
            let target = self.target.clone();
            // The bounds are within their limits: the scenario was validated, the time
            // is what is left of a valid limit, and clients and faults are capped above.
            let Ok(r) = check_exhaustive_until(&self.best_sc, self.recipe, &bounds, &|r| {
                r.violates(&target)
            }) else {
                return false;
            };
            self.exhaustive_schedules += r.schedules;
            // Stopped short of its schedule budget with nothing found: by the clock.
            if !r.complete && r.violation.is_none() && r.schedules < bounds.schedules_max {
                self.time_limit_hit = true;
            }
            if let Some(run) = r.violation
                && self.keep_if_smaller(r.scenario, 0, run)
            {
                return true;
            }
        }
        false
    }

    /// The shortest prefix (rest zero) that still fails, by bisection.
    fn truncate(&mut self) -> bool {
        let (mut lo, mut hi) = (0, self.best_choices.len());
        let mut improved = false;
        while lo < hi && !self.out_of_budget() {
            let mid = (lo + hi) / 2;
            let cand = self.best_choices[..mid].to_vec();
            if self.try_candidate(self.best_sc.clone(), cand) {
                improved = true;
                hi = self.best_choices.len().min(mid);
            } else {
                lo = mid + 1;
            }
        }
        improved
    }

    /// ddmin-style: zero, then remove, chunks of halving size.
    fn chunks(&mut self, remove: bool) -> bool {
        let mut improved = false;
        let mut chunk = (self.best_choices.len() / 2).max(1);
        loop {
            let mut i = 0;
            while i < self.best_choices.len() && !self.out_of_budget() {
                let end = (i + chunk).min(self.best_choices.len());
                let mut cand = self.best_choices.clone();
                if remove {
                    cand.drain(i..end);
                } else if cand[i..end].iter().all(|&c| c == 0) {
                    i = end;
                    continue;
                } else {
                    cand[i..end].iter_mut().for_each(|c| *c = 0);
                }
                if self.try_candidate(self.best_sc.clone(), cand) {
                    improved = true;
                } else {
                    i = end;
                }
            }
            if chunk == 1 || self.out_of_budget() {
                return improved;
            }
            chunk /= 2;
        }
    }
}

/// Shrinks `trace` (which must fail when replayed with `recipe`). A trace's scenario or
/// limits outside their bounds are [`ShrinkError::Limit`], and nothing runs.
pub fn shrink<R: Recipe>(
    trace: &Trace,
    recipe: &R,
    limits: &ShrinkLimits,
) -> Result<Shrunk, ShrinkError> {
    trace
        .scenario
        .validate()
        .map_err(|e| ShrinkError::Limit(e.into()))?;
    check_wall_time_ms("the shrink's time limit (ms)", limits.time_limit_ms)
        .map_err(ShrinkError::Limit)?;
    let chooser = ReplayChooser::new(trace.choices.clone());
    let out = run_scenario_with(&trace.scenario, trace.seed, Box::new(chooser), recipe);
    let first = judge(&trace.scenario, out);
    // Keep the property the trace names (a run can violate several), else its first.
    let target = match &trace.violation {
        Some(v) if first.violates(v) => v.clone(),
        _ => first.failure().ok_or(ShrinkError::NotFailing)?,
    };
    let before = size(&trace.scenario, &first);
    let mut s = Shrinker {
        recipe,
        seed: trace.seed,
        target,
        runs: 1,
        limits: limits.clone(),
        deadline: Instant::now() + Duration::from_millis(limits.time_limit_ms),
        best_sc: trace.scenario.clone(),
        best_choices: trim_zeros(first.outcome.choices.clone()),
        best_run: first,
        searched: BTreeSet::new(),
        exhaustive_schedules: 0,
        exhaustively_searched: BTreeSet::new(),
        time_limit_hit: false,
    };
    loop {
        let mut improved = s.search_exhaustively();
        improved |= s.shrink_scenario();
        improved |= s.truncate();
        improved |= s.chunks(false);
        improved |= s.chunks(true);
        if !improved || s.out_of_budget() {
            break;
        }
    }
    let after = size(&s.best_sc, &s.best_run);
    // The first run of a chain of shrinks is the one that failed.
    let from = trace.shrunk_from.unwrap_or(trace.seed);
    let trace = Trace::new(
        s.best_sc.clone(),
        s.seed,
        s.best_run.outcome.choices.clone(),
        trace.recipe.clone(),
        s.best_run.outcome.history.clone(),
        Some(s.target.clone()),
    )
    .with_report(SavedReport::of(&s.best_run));
    let trace = Trace {
        shrunk_from: Some(from),
        ..trace
    };
    Ok(Shrunk {
        trace,
        before,
        after,
        runs: s.runs,
        exhaustive_schedules: s.exhaustive_schedules,
        time_limit_hit: s.time_limit_hit,
    })
}
