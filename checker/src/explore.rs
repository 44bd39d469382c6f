//! Seed sweeps on every core: the engine behind `zklock explore`.
//!
//! Seeds are handed out in order from a shared counter. When a seed fails, no seed above it
//! is started, the seeds below it that are already running finish, and the lowest failing
//! seed is the one reported: the answer does not depend on thread timing. Nor do the
//! counts: a failing sweep counts exactly the seeds up to and including its lowest failing
//! seed (the seeds above it that other threads had under way are run, and left out), so
//! that its summary is the same on any number of threads.

use crate::Trace;
use crate::coverage::{Corpus, GENERATION_SEEDS};
use crate::limits::{LimitError, THREADS_MAX, check_wall_time_ms};
use crate::properties::Counters;
use crate::run::{CheckedRun, check_seed};
use crate::strategy::Strategy;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zklock_sim::{Recipe, Scenario};

/// Which seeds a sweep runs, and for how long at most. [`Budget::validate`] states the
/// bounds; the seeds are never listed in memory, so any count is fine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// First seed. Default 0.
    pub seed_start: u64,
    /// Seeds in the range (before sharding), at most `u64::MAX`: the range
    /// `seed_start..seed_start + seeds` is counted exactly, even where it ends past
    /// `u64::MAX` (then it holds every seed from `seed_start` up to `u64::MAX`). Default 100.
    pub seeds: u64,
    /// Run only seeds with `seed % shard_count == shard_index` (`shard_index` below
    /// `shard_count`). Default 0 of 1.
    pub shard_index: u64,
    pub shard_count: u64,
    /// Stop starting new seeds after this much wall time, in milliseconds, at most
    /// [`WALL_TIME_LIMIT_MS_MAX`](crate::limits::WALL_TIME_LIMIT_MS_MAX). Default: none.
    pub time_limit_ms: Option<u64>,
    /// Worker threads, at most [`THREADS_MAX`] (0 runs one). Default: every core.
    pub threads: usize,
    /// A switch that stops the sweep starting new seeds (a Ctrl-C handler sets it): the
    /// seeds under way finish and are judged, and the summary says the sweep was
    /// interrupted. Default: none.
    pub interrupt: Interrupt,
    /// The scenario each seed runs in ([`Strategy`]). Default [`Strategy::Uniform`]: the
    /// sweep's own.
    pub strategy: Strategy,
}

/// A shared stop switch; see [`Budget::interrupt`]. Clones share the switch.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Option<std::sync::Arc<std::sync::atomic::AtomicBool>>);

impl Interrupt {
    /// A switch, not yet set.
    pub fn new() -> Self {
        Interrupt(Some(Default::default()))
    }

    /// Sets the switch.
    pub fn set(&self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::Release);
        }
    }

    /// Whether the switch was set.
    pub fn is_set(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Acquire))
    }
}

/// Two budgets are alike whatever their switches: a switch says when to stop, not what
/// to run.
impl PartialEq for Interrupt {
    fn eq(&self, _: &Interrupt) -> bool {
        true
    }
}

impl Eq for Interrupt {}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            seed_start: 0,
            seeds: 100,
            shard_index: 0,
            shard_count: 1,
            time_limit_ms: None,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            interrupt: Interrupt::default(),
            strategy: Strategy::default(),
        }
    }
}

impl Budget {
    /// Checks the shard, the time limit and the thread count against their bounds.
    pub fn validate(&self) -> Result<(), LimitError> {
        if self.shard_count == 0 || self.shard_index >= self.shard_count {
            return Err(LimitError::Shard {
                index: self.shard_index,
                count: self.shard_count,
            });
        }
        if let Some(ms) = self.time_limit_ms {
            check_wall_time_ms("the sweep's time limit (ms)", ms)?;
        }
        if self.threads > THREADS_MAX {
            return Err(LimitError::TooLarge {
                what: "threads",
                value: self.threads as u64,
                max: THREADS_MAX as u64,
            });
        }
        Ok(())
    }

    /// The shard's first seed, its step, and the end of the range (exclusive), in u128 so
    /// that no range overflows.
    fn shard_range(&self) -> (u128, u128, u128) {
        let n = u128::from(self.shard_count.max(1));
        let k = u128::from(self.shard_index) % n;
        let start = u128::from(self.seed_start);
        // Seeds are u64: a range past `u64::MAX` ends there.
        let end = (start + u128::from(self.seeds)).min(1 << 64);
        let first = start + (k + n - start % n) % n;
        (first, n, end)
    }

    /// How many seeds this shard holds, computed, not counted.
    pub fn seed_count(&self) -> u64 {
        let (first, n, end) = self.shard_range();
        if first >= end {
            return 0;
        }
        // At most `seeds`, so it fits.
        ((end - 1 - first) / n + 1) as u64
    }

    /// The `i`th seed of this shard (`i` below [`Budget::seed_count`]).
    pub fn seed(&self, i: u64) -> u64 {
        let (first, n, _) = self.shard_range();
        (first + u128::from(i) * n) as u64
    }

    /// The seeds of this shard, in order, one at a time.
    pub fn seeds(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.seed_count()).map(|i| self.seed(i))
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

impl SweepRange {
    /// The budget that runs these seeds (every other field its default), to count and
    /// list them as the sweep did.
    pub fn budget(&self) -> Budget {
        Budget {
            seed_start: self.seed_start,
            seeds: self.seeds,
            shard_index: self.shard_index,
            shard_count: self.shard_count,
            ..Budget::default()
        }
    }
}

/// The seeds a sweep ran: every seed of its shard from `first` to `last`, both included,
/// and no other. A sweep hands its seeds out in order and finishes every seed it starts,
/// so what it ran is always such a run of its shard's first seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedsRan {
    pub first: u64,
    pub last: u64,
}

/// What a sweep found, as JSON-mergeable data (shards on several machines merge theirs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub recipe: String,
    pub scenario: Scenario,
    /// The strategy that drew each seed's scenario within `scenario`: shards merge only
    /// under the same one. `uniform` in summaries written before it was recorded.
    #[serde(default = "Strategy::uniform")]
    pub strategy: Strategy,
    /// The seeds and shard the sweep was given, so that a merge can tell a shard given
    /// twice or missing. `None` in summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<SweepRange>,
    /// Seeds fully run.
    pub seeds_run: u64,
    /// Which seeds those are; `None` when no seed ran, and in summaries written before
    /// it was recorded (their `seeds_run` are the shard's first seeds all the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<SeedsRan>,
    /// Non-vacuity counters over every seed run.
    pub counters: Counters,
    /// Failing seeds with what failed (only the lowest one per sweep).
    pub failures: Vec<(u64, String)>,
    /// Whether the time limit stopped the sweep before its last seed.
    pub stopped_by_time: bool,
    /// Whether [`Budget::interrupt`] stopped the sweep before its last seed.
    #[serde(default)]
    pub interrupted: bool,
    pub wall_ms: u64,
}

impl Summary {
    /// Merges another shard's summary of the same recipe and scenario.
    pub fn merge(&mut self, other: &Summary) {
        self.seeds_run += other.seeds_run;
        // The shards' seeds together are no one run of a shard's seeds.
        self.ran = None;
        self.counters.merge(&other.counters);
        self.failures.extend(other.failures.iter().cloned());
        self.failures.sort();
        self.stopped_by_time |= other.stopped_by_time;
        self.interrupted |= other.interrupted;
        self.wall_ms = self.wall_ms.max(other.wall_ms);
    }
}

/// The result of a sweep: its summary, and the lowest failing run if any.
#[derive(Debug)]
pub struct Explored {
    pub summary: Summary,
    pub failure: Option<(u64, CheckedRun)>,
    /// The scenario the failing seed ran in: the sweep's under `uniform`, the seed's own
    /// under another [`Strategy`]. Its trace must record this one to replay.
    pub failure_scenario: Option<Scenario>,
}

impl Explored {
    /// The failing run's trace, in the scenario the seed ran in.
    pub fn failure_trace(&self, recipe: &str) -> Option<Trace> {
        let (seed, run) = self.failure.as_ref()?;
        let sc = self.failure_scenario.as_ref()?;
        Some(run.trace(sc, *seed, recipe))
    }
}

/// What a sweep has counted so far: the seeds of the shard's first `counted` indices,
/// every one finished and none above the lowest failure; the seeds finished above those,
/// waiting for the ones below; the failing runs.
#[derive(Default)]
struct Tally {
    counters: Counters,
    counted: u64,
    /// Finished seeds above `counted`, by index: counted once every index below is,
    /// unless a failure below them cuts them off.
    waiting: std::collections::BTreeMap<u64, Counters>,
    /// Failing seeds, their runs and the scenarios they ran in.
    failures: Vec<(u64, CheckedRun, Scenario)>,
}

impl Tally {
    /// Counts the seed of index `i` once every index below it is counted, up to `cutoff`
    /// (the lowest failing index so far, set before its own seed is counted).
    fn finished(&mut self, i: u64, counters: Counters, cutoff: u64) {
        self.waiting.insert(i, counters);
        while self.counted <= cutoff
            && let Some(c) = self.waiting.remove(&self.counted)
        {
            self.counters.merge(&c);
            self.counted += 1;
        }
    }
}

/// The corpus of a coverage sweep ([`crate::coverage`]), built a generation at a time.
/// Off under every other strategy: then every seed starts at once, near nothing.
struct Feedback {
    on: bool,
    total: u64,
    state: Mutex<FeedbackState>,
    merged: std::sync::Condvar,
    /// Set when a worker panicked (a recipe's bug, say): its seed's generation will never
    /// be whole, so the seeds waiting for it stop, and the panic shows when the threads
    /// are joined.
    abandoned: std::sync::atomic::AtomicBool,
}

/// Held by each worker: on a panic, tells the seeds waiting for a generation to stop.
struct AbandonOnPanic<'a>(&'a Feedback);

impl Drop for AbandonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abandoned.store(true, Ordering::SeqCst);
            self.0.merged.notify_all();
        }
    }
}

#[derive(Default)]
struct FeedbackState {
    corpus: Corpus,
    /// The corpus's scenarios as the generations merged so far left them, shared with
    /// the seeds that draw from them.
    snapshot: std::sync::Arc<Vec<Scenario>>,
    /// Generations merged into the corpus.
    generations: u64,
    /// Judged runs of the generation being built, by index: their scenarios and pairs.
    judged: std::collections::BTreeMap<u64, (Scenario, Vec<u64>)>,
}

impl Feedback {
    fn new(on: bool, total: u64) -> Self {
        Feedback {
            on,
            total,
            state: Mutex::new(FeedbackState::default()),
            merged: std::sync::Condvar::new(),
            abandoned: Default::default(),
        }
    }

    /// The corpus seed index `i` draws from: the one every generation before `i`'s built,
    /// waited for. `Err` when `stop` says to stop while waiting.
    fn corpus_before(
        &self,
        i: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<std::sync::Arc<Vec<Scenario>>, ()> {
        if !self.on {
            return Ok(Default::default());
        }
        let generation = i / GENERATION_SEEDS;
        let mut st = self.state.lock().expect("feedback lock");
        while st.generations < generation {
            if stop() || self.abandoned.load(Ordering::SeqCst) {
                return Err(());
            }
            // Woken by a merge or a panic; the timeout only rechecks `stop`.
            st = self
                .merged
                .wait_timeout(st, Duration::from_millis(20))
                .expect("feedback lock")
                .0;
        }
        Ok(st.snapshot.clone())
    }

    /// Takes seed index `i`'s judged run; once its generation is whole, offers the
    /// generation's runs to the corpus in seed order and wakes the seeds waiting for it.
    fn judged(&self, i: u64, sc: Option<&Scenario>, run: &CheckedRun) {
        let (true, Some(sc)) = (self.on, sc) else {
            return;
        };
        let pairs = crate::coverage::pairs(&run.outcome.history);
        let mut st = self.state.lock().expect("feedback lock");
        st.judged.insert(i, (sc.clone(), pairs));
        let g = st.generations;
        let end = ((g + 1) * GENERATION_SEEDS).min(self.total);
        if st.judged.len() as u64 == end - g * GENERATION_SEEDS {
            let judged = std::mem::take(&mut st.judged);
            for (sc, pairs) in judged.values() {
                st.corpus.offer(sc, pairs);
            }
            // Copied only when it grew: past its first generations it rarely does.
            if st.snapshot.len() != st.corpus.scenarios().len() {
                st.snapshot = std::sync::Arc::new(st.corpus.scenarios().to_vec());
            }
            st.generations += 1;
            self.merged.notify_all();
        }
    }
}

/// Runs `budget`'s seeds of `scenario` with `recipe` on `budget.threads` threads, stopping
/// at the lowest failing seed. `progress(done, total)` is called after each seed. A
/// scenario or budget outside its bounds is a [`LimitError`], and nothing runs.
pub fn explore<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    budget: &Budget,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Explored, LimitError> {
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
) -> Result<Explored, LimitError> {
    scenario.validate()?;
    budget.validate()?;
    let total = budget.seed_count();
    let next = AtomicU64::new(0);
    // Index (among the shard's seeds) of the lowest failure so far: nothing above it starts.
    let cutoff = AtomicU64::new(u64::MAX);
    let done = AtomicU64::new(0);
    let t0 = Instant::now();
    let deadline = budget
        .time_limit_ms
        .map(|ms| t0 + Duration::from_millis(ms));
    let stopped_by_time = std::sync::atomic::AtomicBool::new(false);
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let results: Mutex<Tally> = Mutex::new(Tally::default());
    let feedback = Feedback::new(budget.strategy == Strategy::Coverage, total);
    std::thread::scope(|s| {
        for _ in 0..(budget.threads.max(1) as u64).min(total.max(1)) {
            s.spawn(|| {
                let _abandon = AbandonOnPanic(&feedback);
                loop {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        // Only when seeds were left: a sweep that ran them all is complete.
                        if next.load(Ordering::SeqCst) < total {
                            stopped_by_time.store(true, Ordering::Relaxed);
                        }
                        return;
                    }
                    if budget.interrupt.is_set() {
                        if next.load(Ordering::SeqCst) < total {
                            interrupted.store(true, Ordering::Relaxed);
                        }
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total || i > cutoff.load(Ordering::SeqCst) {
                        return;
                    }
                    let seed = budget.seed(i);
                    // Under coverage, the corpus of the generations before `i`'s, once
                    // they are all judged; a stop while waiting leaves `i` unrun.
                    let near = match feedback.corpus_before(i, &|| {
                        i > cutoff.load(Ordering::SeqCst)
                            || deadline.is_some_and(|d| Instant::now() >= d)
                            || budget.interrupt.is_set()
                    }) {
                        Ok(near) => near,
                        Err(()) => {
                            if deadline.is_some_and(|d| Instant::now() >= d) {
                                stopped_by_time.store(true, Ordering::Relaxed);
                            } else if budget.interrupt.is_set() {
                                interrupted.store(true, Ordering::Relaxed);
                            }
                            return;
                        }
                    };
                    let seed_sc = match budget.strategy {
                        Strategy::Uniform => None,
                        s => Some(s.scenario_near(scenario, seed, &near)),
                    };
                    let run = check_seed(seed_sc.as_ref().unwrap_or(scenario), seed, recipe);
                    let failed = failing(&run);
                    if failed {
                        cutoff.fetch_min(i, Ordering::SeqCst);
                    }
                    feedback.judged(i, seed_sc.as_ref(), &run);
                    {
                        let mut r = results.lock().expect("results lock");
                        // Read under the lock: a failure below `i` set it before its
                        // own seed was counted.
                        let below = cutoff.load(Ordering::SeqCst);
                        r.finished(i, run.report.counters.clone(), below);
                        if failed {
                            let sc = seed_sc.unwrap_or_else(|| scenario.clone());
                            r.failures.push((seed, run, sc));
                        }
                    }
                    progress(done.fetch_add(1, Ordering::SeqCst) + 1, total);
                }
            });
        }
    });
    let Tally {
        counters,
        counted: seeds_run,
        mut failures,
        ..
    } = results.into_inner().expect("results lock");
    failures.sort_by_key(|(seed, ..)| *seed);
    let (failure, failure_scenario) = match failures.into_iter().next() {
        Some((seed, run, sc)) => (Some((seed, run)), Some(sc)),
        None => (None, None),
    };
    Ok(Explored {
        summary: Summary {
            recipe: recipe.name(),
            scenario: scenario.clone(),
            strategy: budget.strategy,
            range: Some(SweepRange {
                seed_start: budget.seed_start,
                seeds: budget.seeds,
                shard_index: budget.shard_index,
                shard_count: budget.shard_count,
            }),
            seeds_run,
            ran: (seeds_run > 0).then(|| SeedsRan {
                first: budget.seed(0),
                last: budget.seed(seeds_run - 1),
            }),
            counters,
            failures: failure
                .iter()
                .map(|(s, r)| (*s, r.failure().unwrap_or_default()))
                .collect(),
            stopped_by_time: stopped_by_time.into_inner(),
            interrupted: interrupted.into_inner(),
            wall_ms: t0.elapsed().as_millis() as u64,
        },
        failure,
        failure_scenario,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::WALL_TIME_LIMIT_MS_MAX;

    fn budget(seed_start: u64, seeds: u64, shard_index: u64, shard_count: u64) -> Budget {
        Budget {
            seed_start,
            seeds,
            shard_index,
            shard_count,
            ..Budget::default()
        }
    }

    #[test]
    fn shard_seeds_are_computed_as_the_filter_would_list_them() {
        for start in 0..7 {
            for seeds in 0..12 {
                for n in 1..5 {
                    for k in 0..n {
                        let b = budget(start, seeds, k, n);
                        let listed: Vec<u64> =
                            (start..start + seeds).filter(|s| s % n == k).collect();
                        assert_eq!(b.seeds().collect::<Vec<_>>(), listed, "{b:?}");
                        assert_eq!(b.seed_count(), listed.len() as u64);
                    }
                }
            }
        }
    }

    #[test]
    fn seeds_18446744073709551615_in_as_many_shards_are_counted_at_once() {
        // Listing them once took forever; the count is arithmetic.
        let b = budget(0, u64::MAX, 0, u64::MAX);
        assert_eq!(b.seed_count(), 1);
        assert_eq!(b.seeds().collect::<Vec<_>>(), [0]);
        let b = budget(0, u64::MAX, u64::MAX - 1, u64::MAX);
        assert_eq!(b.seed_count(), 1);
        assert_eq!(b.seed(0), u64::MAX - 1);
        assert_eq!(budget(0, u64::MAX, 0, 1).seed_count(), u64::MAX);
    }

    #[test]
    fn a_range_past_u64_max_ends_at_u64_max() {
        let b = budget(u64::MAX - 2, 10, 0, 1);
        assert_eq!(
            b.seeds().collect::<Vec<_>>(),
            [u64::MAX - 2, u64::MAX - 1, u64::MAX]
        );
    }

    #[test]
    fn seeds_1000000000_with_a_time_limit_start_at_once_without_listing_them() {
        // Once a list of every seed (8 GB) was built before the first ran. A limit of 0
        // ms starts no seed, whatever the count.
        let b = Budget {
            time_limit_ms: Some(0),
            threads: 2,
            ..budget(0, 1_000_000_000, 0, 1)
        };
        let recipe = zklock_sim::ShippedRecipe::default();
        let e = explore(&Scenario::default(), &recipe, &b, &|_, _| {}).unwrap();
        assert_eq!(e.summary.seeds_run, 0);
        assert!(e.summary.stopped_by_time);
    }

    #[test]
    fn a_budget_outside_its_bounds_is_an_error() {
        let recipe = zklock_sim::ShippedRecipe::default();
        let bad = [
            budget(0, 10, 1, 1),
            budget(0, 10, 0, 0),
            Budget {
                time_limit_ms: Some(WALL_TIME_LIMIT_MS_MAX + 1),
                ..Budget::default()
            },
            Budget {
                threads: THREADS_MAX + 1,
                ..Budget::default()
            },
        ];
        for b in bad {
            assert!(
                explore(&Scenario::default(), &recipe, &b, &|_, _| {}).is_err(),
                "{b:?}"
            );
        }
        let sc = Scenario {
            lock_path: "//".into(),
            ..Scenario::default()
        };
        let err = explore(&sc, &recipe, &Budget::default(), &|_, _| {}).unwrap_err();
        assert!(matches!(err, LimitError::Scenario(_)), "{err}");
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;
    use std::sync::Condvar;
    use zklock_sim::ShippedRecipe;

    /// With 2 threads a failing sweep counted 143, 144 or 157 seeds, as the seeds above
    /// the failure that other threads ran happened to finish. Here the failing seed (the
    /// first) is scripted to fail only once every other thread has finished a seed above
    /// it, so those seeds certainly ran; they are left out, and the counts are the first
    /// seed's alone on 1, 2 and 4 threads.
    #[test]
    fn a_failing_sweep_counts_the_same_seeds_on_any_number_of_threads() {
        let sc = Scenario {
            clients: 2,
            acquisitions_per_client: 2,
            ..Scenario::default()
        };
        let recipe = ShippedRecipe::default();
        let first = check_seed(&sc, 0, &recipe);
        let mut summaries = Vec::new();
        for threads in [1usize, 2, 4] {
            let finished = (Mutex::new(0u64), Condvar::new());
            // Uniform: seed 0 runs in `sc` itself, as `first` did.
            let budget = Budget {
                seeds: 40,
                threads,
                strategy: Strategy::Uniform,
                ..Budget::default()
            };
            let progress = |done: u64, _| {
                *finished.0.lock().unwrap() = done;
                finished.1.notify_all();
            };
            // Seed 0's run, told by its choices: it fails once every other thread has
            // finished a seed.
            let failing = |r: &CheckedRun| {
                if r.outcome.choices != first.outcome.choices {
                    return false;
                }
                let mut done = finished.0.lock().unwrap();
                while *done < threads as u64 - 1 {
                    done = finished.1.wait(done).unwrap();
                }
                true
            };
            let e = explore_until(&sc, &recipe, &budget, &progress, &failing).unwrap();
            assert_eq!(
                e.failure.as_ref().map(|f| f.0),
                Some(0),
                "{threads} threads"
            );
            summaries.push((threads, e.summary));
        }
        for (threads, s) in &summaries {
            assert_eq!(s.seeds_run, 1, "{threads} threads");
            assert_eq!(s.counters, first.report.counters, "{threads} threads");
            assert_eq!(
                s.ran,
                Some(SeedsRan { first: 0, last: 0 }),
                "{threads} threads"
            );
        }
    }

    /// Seeds finished out of order are counted once those below them are, and never
    /// above a failure.
    #[test]
    fn a_tally_counts_in_order_up_to_the_cutoff() {
        let one = Counters {
            acquisitions: 1,
            ..Counters::default()
        };
        let mut t = Tally::default();
        t.finished(2, one.clone(), u64::MAX);
        t.finished(1, one.clone(), u64::MAX);
        assert_eq!(t.counted, 0);
        t.finished(0, one.clone(), u64::MAX);
        assert_eq!((t.counted, t.counters.acquisitions), (3, 3));
        // Index 4 fails; 5 and 6 finished before it are left out.
        t.finished(6, one.clone(), u64::MAX);
        t.finished(5, one.clone(), u64::MAX);
        t.finished(4, one.clone(), 4);
        t.finished(3, one.clone(), 4);
        assert_eq!((t.counted, t.counters.acquisitions), (5, 5));
    }
}

#[cfg(test)]
mod coverage_tests {
    use super::*;
    use zklock_sim::ShippedRecipe;

    fn sweep(strategy: Strategy, threads: usize) -> Summary {
        let budget = Budget {
            seeds: 3 * GENERATION_SEEDS + 17,
            threads,
            strategy,
            ..Budget::default()
        };
        let sc = Scenario::default();
        explore(&sc, &ShippedRecipe::default(), &budget, &|_, _| {})
            .unwrap()
            .summary
    }

    /// A coverage seed's scenario depends on the generations before its own, which are
    /// whole and merged in seed order before it starts: so a sweep's runs, and their
    /// counts, are the same on any number of threads. From the second generation on its
    /// seeds run near the corpus, so its counts are not aimed's.
    #[test]
    fn a_coverage_sweep_runs_the_same_seeds_on_any_number_of_threads_and_departs_from_aimed() {
        let one = sweep(Strategy::Coverage, 1);
        for threads in [2, 3] {
            let many = sweep(Strategy::Coverage, threads);
            assert_eq!(
                (many.seeds_run, &many.counters),
                (one.seeds_run, &one.counters),
                "{threads} threads"
            );
        }
        assert_eq!(one.seeds_run, 3 * GENERATION_SEEDS + 17);
        assert_ne!(one.counters, sweep(Strategy::Aimed, 2).counters);
    }

    /// A seed of a later generation waits for the corpus of those before it: it stops
    /// waiting when told to (Ctrl-C, the time limit, a failure below it), and when a
    /// worker panicked, whose generation will never be whole; the first generation's
    /// seeds never wait.
    #[test]
    fn a_seed_waiting_for_its_generation_stops_when_told_and_when_a_worker_panicked() {
        use std::sync::atomic::AtomicBool;
        let fb = Feedback::new(true, 4 * GENERATION_SEEDS);
        assert!(fb.corpus_before(GENERATION_SEEDS - 1, &|| true).is_ok());
        assert!(fb.corpus_before(GENERATION_SEEDS, &|| true).is_err());
        let told = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter =
                s.spawn(|| fb.corpus_before(GENERATION_SEEDS, &|| told.load(Ordering::SeqCst)));
            told.store(true, Ordering::SeqCst);
            assert!(waiter.join().unwrap().is_err());
        });
        std::thread::scope(|s| {
            let waiter = s.spawn(|| fb.corpus_before(GENERATION_SEEDS, &|| false));
            let worker = s.spawn(|| {
                let _abandon = AbandonOnPanic(&fb);
                panic!("a recipe's bug");
            });
            assert!(worker.join().is_err());
            assert!(waiter.join().unwrap().is_err());
        });
    }

    /// A stop while seeds wait for their generation's corpus leaves them unrun, and the
    /// sweep says it was interrupted: no thread waits forever for a generation that will
    /// never be whole.
    #[test]
    fn a_coverage_sweep_interrupted_at_a_generations_end_stops_and_says_so() {
        let interrupt = Interrupt::new();
        let budget = Budget {
            seeds: 10 * GENERATION_SEEDS,
            threads: 2,
            interrupt: interrupt.clone(),
            strategy: Strategy::Coverage,
            ..Budget::default()
        };
        let e = explore(
            &Scenario::default(),
            &ShippedRecipe::default(),
            &budget,
            &|done, _| {
                if done == GENERATION_SEEDS - 1 {
                    interrupt.set();
                }
            },
        )
        .unwrap();
        assert!(e.summary.interrupted);
        assert!(
            e.summary.seeds_run < 2 * GENERATION_SEEDS,
            "{}",
            e.summary.seeds_run
        );
    }
}

#[cfg(test)]
mod interrupt_tests {
    use super::*;
    use zklock_sim::ShippedRecipe;

    /// Ctrl-C during a sweep: the switch, set from the progress callback after the first
    /// seed, stops the sweep there, judged, and says so.
    #[test]
    fn an_interrupted_sweep_stops_starting_seeds_and_says_so() {
        let interrupt = Interrupt::new();
        let budget = Budget {
            seeds: 1_000,
            threads: 1,
            interrupt: interrupt.clone(),
            ..Budget::default()
        };
        let e = explore(
            &Scenario::default(),
            &ShippedRecipe::default(),
            &budget,
            &|_, _| interrupt.set(),
        )
        .unwrap();
        assert!(e.summary.interrupted);
        assert_eq!(e.summary.seeds_run, 1);
        assert!(e.summary.counters.acquisitions > 0);
        assert!(e.failure.is_none());
    }
}
