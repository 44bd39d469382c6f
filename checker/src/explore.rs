//! Seed sweeps on every core: the engine behind `zklock explore`.
//!
//! Seeds are handed out in order from a shared counter. When a seed fails, no seed above it
//! is started, the seeds below it that are already running finish, and the lowest failing
//! seed is the one reported: the answer does not depend on thread timing.

use crate::properties::Counters;
use crate::run::{CheckedRun, check_seed};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zklock_sim::{Recipe, Scenario};

/// Which seeds a sweep runs, and for how long at most.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// First seed. Default 0.
    pub seed_start: u64,
    /// Seeds in the range (before sharding). Default 100.
    pub seeds: u64,
    /// Run only seeds with `seed % shard_count == shard_index`. Default 0 of 1.
    pub shard_index: u64,
    pub shard_count: u64,
    /// Stop starting new seeds after this much wall time, in milliseconds. Default: none.
    pub time_limit_ms: Option<u64>,
    /// Worker threads. Default: every core.
    pub threads: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            seed_start: 0,
            seeds: 100,
            shard_index: 0,
            shard_count: 1,
            time_limit_ms: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl Budget {
    /// The seeds of this shard, in order.
    pub fn seed_list(&self) -> Vec<u64> {
        let n = self.shard_count.max(1);
        (self.seed_start..self.seed_start.saturating_add(self.seeds))
            .filter(|s| s % n == self.shard_index % n)
            .collect()
    }
}

/// The seeds a sweep was given: its range, and which shard of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepRange {
    pub seed_start: u64,
    pub seeds: u64,
    /// 0-based.
    pub shard_index: u64,
    pub shard_count: u64,
}

/// What a sweep found, as JSON-mergeable data (shards on several machines merge theirs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub recipe: String,
    pub scenario: Scenario,
    /// The seeds and shard the sweep was given, so that a merge can tell a shard given
    /// twice or missing. `None` in summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<SweepRange>,
    /// Seeds fully run.
    pub seeds_run: u64,
    /// Non-vacuity counters over every seed run.
    pub counters: Counters,
    /// Failing seeds with what failed (only the lowest one per sweep).
    pub failures: Vec<(u64, String)>,
    /// Whether the time limit stopped the sweep before its last seed.
    pub stopped_by_time: bool,
    pub wall_ms: u64,
}

impl Summary {
    /// Merges another shard's summary of the same recipe and scenario.
    pub fn merge(&mut self, other: &Summary) {
        self.seeds_run += other.seeds_run;
        self.counters.merge(&other.counters);
        self.failures.extend(other.failures.iter().cloned());
        self.failures.sort();
        self.stopped_by_time |= other.stopped_by_time;
        self.wall_ms = self.wall_ms.max(other.wall_ms);
    }
}

/// The result of a sweep: its summary, and the lowest failing run if any.
#[derive(Debug)]
pub struct Explored {
    pub summary: Summary,
    pub failure: Option<(u64, CheckedRun)>,
}

/// Counters so far, seeds run, failing runs.
type Tally = (Counters, u64, Vec<(u64, CheckedRun)>);

/// Runs `budget`'s seeds of `scenario` with `recipe` on `budget.threads` threads, stopping
/// at the lowest failing seed. `progress(done, total)` is called after each seed.
pub fn explore<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    budget: &Budget,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Explored {
    explore_until(scenario, recipe, budget, progress, &|r| {
        r.failure().is_some()
    })
}

/// As [`explore`], but a seed counts as failing only when `failing` says so (for example
/// "violates mutual_exclusion").
pub fn explore_until<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    budget: &Budget,
    progress: &(dyn Fn(u64, u64) + Sync),
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Explored {
    let seeds = budget.seed_list();
    let total = seeds.len() as u64;
    let next = AtomicU64::new(0);
    // Index (into `seeds`) of the lowest failure so far: nothing above it starts.
    let cutoff = AtomicU64::new(u64::MAX);
    let done = AtomicU64::new(0);
    let t0 = Instant::now();
    let deadline = budget
        .time_limit_ms
        .map(|ms| t0 + Duration::from_millis(ms));
    let stopped_by_time = std::sync::atomic::AtomicBool::new(false);
    let results: Mutex<Tally> = Mutex::new((Counters::default(), 0, Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..budget.threads.max(1) {
            s.spawn(|| {
                loop {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        stopped_by_time.store(true, Ordering::Relaxed);
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total || i > cutoff.load(Ordering::SeqCst) {
                        return;
                    }
                    let seed = seeds[i as usize];
                    let run = check_seed(scenario, seed, recipe);
                    let failed = failing(&run);
                    if failed {
                        cutoff.fetch_min(i, Ordering::SeqCst);
                    }
                    {
                        let mut r = results.lock().expect("results lock");
                        r.0.merge(&run.report.counters);
                        r.1 += 1;
                        if failed {
                            r.2.push((seed, run));
                        }
                    }
                    progress(done.fetch_add(1, Ordering::SeqCst) + 1, total);
                }
            });
        }
    });
    let (counters, seeds_run, mut failures) = results.into_inner().expect("results lock");
    failures.sort_by_key(|(seed, _)| *seed);
    let failure = failures.into_iter().next();
    Explored {
        summary: Summary {
            recipe: recipe.name(),
            scenario: scenario.clone(),
            range: Some(SweepRange {
                seed_start: budget.seed_start,
                seeds: budget.seeds,
                shard_index: budget.shard_index,
                shard_count: budget.shard_count,
            }),
            seeds_run,
            counters,
            failures: failure
                .iter()
                .map(|(s, r)| (*s, r.failure().unwrap_or_default()))
                .collect(),
            stopped_by_time: stopped_by_time.into_inner(),
            wall_ms: t0.elapsed().as_millis() as u64,
        },
        failure,
    }
}
