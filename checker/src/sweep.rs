//! Seed sweeps for a user's own `#[test]`: run, check, and on failure say exactly how to
//! reproduce it, write the trace, and record the seed as a regression that every later
//! run replays first (see [`regressions`]).

use crate::exercised::{Exercised, NothingChecked};
use crate::properties::Counters;
use crate::regressions::{self, Recorded, RegressionsError};
use crate::run::check_seed;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::sync::Once;
use zklock_sim::{Recipe, Scenario, ScenarioError};

/// Restricts a sweep to one seed, to reproduce a failure: `ZKLOCK_SEED=42 cargo test ...`.
pub const SEED_ENV: &str = "ZKLOCK_SEED";

/// Bounds a failing seed's shrinking, in ms (0: no shrinking), where the sweep does not
/// say ([`Sweep::shrink_time_limit_ms`]): `ZKLOCK_SHRINK_TIME_LIMIT_MS=0 cargo test` reports
/// a failing seed at once, without its shrunk trace.
pub const SHRINK_TIME_LIMIT_ENV: &str = "ZKLOCK_SHRINK_TIME_LIMIT_MS";

/// How long a failing seed's shrinking may take, in ms, unless the sweep or
/// [`SHRINK_TIME_LIMIT_ENV`] says: a minute, [`ShrinkLimits`](crate::ShrinkLimits)'s
/// default.
pub const SHRINK_TIME_LIMIT_MS_DEFAULT: u64 = 60_000;

/// Where failing runs' traces go, relative to the working directory (for `cargo test`,
/// the package's directory): the same place as the `zklock` command line's `--out`
/// default.
pub const FAILURES_DIR: &str = "traces/failures";

/// The seeds a [`Sweep`] runs unless told otherwise.
pub const DEFAULT_SEEDS: Range<u64> = 0..100;

/// The file name of a failing run's trace: the recipe, the seed, and the test when there
/// is one, so that two tests failing on one seed keep a trace each.
pub fn failure_trace_name(recipe: &str, test: Option<&str>, seed: u64) -> String {
    let clean = |s: &str| -> String {
        s.replace("::", ".")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    match test {
        Some(t) => format!("{}-seed-{seed}.{}.json", clean(recipe), clean(t)),
        None => format!("{}-seed-{seed}.json", clean(recipe)),
    }
}

/// Why a sweep did not pass. Its `Debug` is its `Display`, so that a plain `.unwrap()` in
/// a test prints the report and the command that reproduces it.
#[non_exhaustive]
pub enum SweepError {
    /// A seed violated a property, or its run stopped early.
    Seed(SeedFailure),
    /// `$ZKLOCK_SEED` is set, but not to a seed (a u64): the sweep would otherwise run
    /// its whole range and reproduce nothing.
    BadSeedEnv { value: String },
    /// `$ZKLOCK_SHRINK_TIME_LIMIT_MS` is set, but not to a number of ms: nothing ran.
    BadShrinkEnv { value: String },
    /// The test's regressions file could not be read: nothing ran.
    Regressions(RegressionsError),
    /// The scenario is outside its bounds ([`Scenario::validate`]): nothing ran.
    Scenario(ScenarioError),
    /// Every run passed, but no acquisition succeeded in any (no item was processed): no
    /// property was put to the test. Names the errors the acquires failed with.
    NothingChecked(NothingChecked),
    /// A failing seed, run again, made another history: the recipe is not deterministic
    /// (a process-wide counter, the wall clock, `HashMap` order, ...), so its trace would
    /// not replay. `difference` is the first event where the two runs part.
    NotDeterministic { seed: u64, difference: String },
}

impl SweepError {
    /// The failing seed, if a seed failed.
    pub fn seed_failure(&self) -> Option<&SeedFailure> {
        match self {
            SweepError::Seed(f) => Some(f),
            SweepError::BadSeedEnv { .. }
            | SweepError::BadShrinkEnv { .. }
            | SweepError::Regressions(_)
            | SweepError::Scenario(_)
            | SweepError::NothingChecked(_)
            | SweepError::NotDeterministic { .. } => None,
        }
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Seed(failure) => failure.fmt(f),
            SweepError::BadSeedEnv { value } => write!(
                f,
                "{SEED_ENV}={value:?} is not a seed: set it to one seed (a number), or unset it"
            ),
            SweepError::BadShrinkEnv { value } => write!(
                f,
                "{SHRINK_TIME_LIMIT_ENV}={value:?} is not a time in ms: set it to a number (0: \
                 no shrinking), or unset it"
            ),
            SweepError::Regressions(e) => e.fmt(f),
            SweepError::Scenario(e) => e.fmt(f),
            SweepError::NothingChecked(n) => write!(
                f,
                "inconclusive: every run passed, but {n}; a sweep that checks nothing is \
                 not a pass (see docs/your-lock.md)"
            ),
            SweepError::NotDeterministic { seed, difference } => write!(
                f,
                "seed {seed} failed, but the recipe is not deterministic: the same seed, run \
                 twice, made two histories ({difference}); a recipe must make the same \
                 requests given the same replies (see docs/your-lock.md, \"The rules a recipe \
                 must follow\")"
            ),
        }
    }
}

impl fmt::Debug for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for SweepError {}

/// What became of a failing seed in the test's regressions file.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Regression {
    /// An earlier run recorded the seed in this file, and this run replayed it first.
    Replayed(PathBuf),
    /// This run recorded the seed in this file (or found it there): commit it.
    Recorded(PathBuf),
    /// Not recorded, and why: no regressions file, or it could not be written.
    NotRecorded(String),
}

/// The first failing seed of a sweep.
#[non_exhaustive]
#[derive(Debug)]
pub struct SeedFailure {
    pub seed: u64,
    /// The violated property, or why the run stopped early.
    pub failure: String,
    /// The full report.
    pub report: String,
    /// Where the failing run's trace was written, if it could be.
    pub trace: Option<PathBuf>,
    /// Where the failure shrunk was written (`....min.json`), if it could be shrunk; `None`
    /// too when the sweep's shrink time limit is 0.
    pub shrunk: Option<PathBuf>,
    /// The test that ran the sweep: given with [`Sweep::test_name`], or the test
    /// harness's name for the thread.
    pub test: Option<String>,
    /// Whether the seed came from the regressions file, and where it is recorded.
    pub regression: Regression,
}

impl fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} failed: {}", self.seed, self.failure)?;
        writeln!(f, "{}", self.report)?;
        if let Some(p) = &self.trace {
            writeln!(
                f,
                "trace: {} (and its .timeline.txt and .timeline.html)",
                p.display()
            )?;
        }
        if let Some(p) = &self.shrunk {
            writeln!(f, "shrunk: {} (and its timelines)", p.display())?;
        }
        match &self.regression {
            Regression::Replayed(p) => writeln!(
                f,
                "regression: seed {} is recorded in {} and still fails",
                self.seed,
                p.display()
            )?,
            Regression::Recorded(p) => writeln!(
                f,
                "regression: seed {} recorded in {} (commit it: every later run replays it \
                 first)",
                self.seed,
                p.display()
            )?,
            Regression::NotRecorded(why) => writeln!(f, "regression: not recorded: {why}")?,
        }
        match &self.test {
            Some(t) => write!(
                f,
                "reproduce: {SEED_ENV}={} cargo test -- --exact {t}",
                self.seed
            ),
            None => write!(f, "reproduce: set {SEED_ENV}={} and run again", self.seed),
        }
    }
}

impl std::error::Error for SeedFailure {}

/// A passed sweep.
#[non_exhaustive]
#[derive(Debug)]
pub struct Swept {
    /// The merged non-vacuity counters of every run.
    pub counters: Counters,
    /// The seeds replayed from the regressions file, first, in its order.
    pub replayed: Vec<u64>,
    /// The test's regressions file, if the sweep keeps one.
    pub regressions: Option<PathBuf>,
    /// Runs made, the replayed seeds included.
    pub runs: u64,
}

/// Where a sweep keeps its regressions.
#[derive(Clone, Debug)]
enum Keep {
    /// Beside the source file that built the sweep (its `file!()`).
    Beside(&'static str),
    At(PathBuf),
    Off,
}

/// A seed sweep of a recipe, for a user's own `#[test]`: every seed run and checked, the
/// test's recorded regressions first.
///
/// By default a failing seed is recorded in a regressions file beside the source file
/// that built the sweep (`tests/herd.rs` keeps `tests/zklock-regressions/herd.txt`, found
/// from `$CARGO_MANIFEST_DIR`, which `cargo test` sets), and every later run of the same
/// test replays the recorded seeds first and names them. Commit that file. A failing
/// run's trace goes to [`FAILURES_DIR`], named by [`failure_trace_name`].
///
/// ```
/// use zklock_checker::Sweep;
/// use zklock_sim::{Scenario, ShippedRecipe};
///
/// let swept = Sweep::new(&Scenario::default(), &ShippedRecipe::default())
///     .seeds(0..3)
///     .run()
///     .unwrap();
/// assert_eq!(swept.runs, 3);
/// assert!(swept.counters.acquisitions > 0);
/// ```
pub struct Sweep<'a, R> {
    scenario: &'a Scenario,
    recipe: &'a R,
    seeds: Range<u64>,
    keep: Keep,
    test: Option<String>,
    failures_dir: PathBuf,
    shrink_time_limit_ms: Option<u64>,
}

impl<R> fmt::Debug for Sweep<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sweep")
            .field("seeds", &self.seeds)
            .field("keep", &self.keep)
            .field("test", &self.test)
            .field("failures_dir", &self.failures_dir)
            .field("shrink_time_limit_ms", &self.shrink_time_limit_ms)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Recipe> Sweep<'a, R> {
    /// A sweep of [`DEFAULT_SEEDS`], keeping its regressions beside the calling source
    /// file.
    #[track_caller]
    pub fn new(scenario: &'a Scenario, recipe: &'a R) -> Self {
        Sweep {
            scenario,
            recipe,
            seeds: DEFAULT_SEEDS,
            keep: Keep::Beside(Location::caller().file()),
            test: None,
            failures_dir: PathBuf::from(FAILURES_DIR),
            shrink_time_limit_ms: None,
        }
    }

    /// The seeds to run (after the recorded ones).
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Keeps the regressions in `path` instead of beside the calling source file.
    pub fn regressions(mut self, path: impl Into<PathBuf>) -> Self {
        self.keep = Keep::At(path.into());
        self
    }

    /// Keeps no regressions: nothing replayed, nothing recorded.
    pub fn without_regressions(mut self) -> Self {
        self.keep = Keep::Off;
        self
    }

    /// The test's name, for its regressions and its trace's name. Default: the test
    /// harness's name for the running test (its thread's name), else the recipe's name.
    pub fn test_name(mut self, name: impl Into<String>) -> Self {
        self.test = Some(name.into());
        self
    }

    /// Where failing runs' traces go. Default [`FAILURES_DIR`].
    pub fn failures_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.failures_dir = dir.into();
        self
    }

    /// How long a failing seed's shrinking may take, in ms; 0 turns shrinking off (the
    /// failure is reported at once, with its trace and no `.min.json`). Past
    /// [`WALL_TIME_LIMIT_MS_MAX`](crate::limits::WALL_TIME_LIMIT_MS_MAX), that maximum.
    /// Default: `$ZKLOCK_SHRINK_TIME_LIMIT_MS` when it is set, else
    /// [`SHRINK_TIME_LIMIT_MS_DEFAULT`] (60000).
    pub fn shrink_time_limit_ms(mut self, ms: u64) -> Self {
        self.shrink_time_limit_ms = Some(ms.min(crate::limits::WALL_TIME_LIMIT_MS_MAX));
        self
    }

    /// Runs the recorded seeds, then the range (only `$ZKLOCK_SEED` when that is set).
    /// Returns what ran, or the first failure, with its trace written and its seed
    /// recorded; [`SweepError::NothingChecked`] when no run made an acquisition (or
    /// processed an item), zero seeds run included; or, running nothing,
    /// [`SweepError::BadSeedEnv`] when `$ZKLOCK_SEED` is not a seed,
    /// [`SweepError::BadShrinkEnv`] when `$ZKLOCK_SHRINK_TIME_LIMIT_MS` is not a number,
    /// [`SweepError::Regressions`] when the regressions file cannot be read and
    /// [`SweepError::Scenario`] when the scenario is outside its bounds.
    pub fn run(self) -> Result<Swept, Box<SweepError>> {
        self.scenario
            .validate()
            .map_err(|e| Box::new(SweepError::Scenario(e)))?;
        notice_if_unoptimized();
        let only = match std::env::var_os(SEED_ENV) {
            None => None,
            Some(value) => match value.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
                Some(one) => Some(one),
                None => {
                    let value = value.to_string_lossy().into_owned();
                    return Err(Box::new(SweepError::BadSeedEnv { value }));
                }
            },
        };
        let shrink_time_limit_ms = match (
            self.shrink_time_limit_ms,
            std::env::var_os(SHRINK_TIME_LIMIT_ENV),
        ) {
            (Some(ms), _) => ms,
            (None, None) => SHRINK_TIME_LIMIT_MS_DEFAULT,
            (None, Some(value)) => {
                match value.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
                    Some(ms) => ms.min(crate::limits::WALL_TIME_LIMIT_MS_MAX),
                    None => {
                        let value = value.to_string_lossy().into_owned();
                        return Err(Box::new(SweepError::BadShrinkEnv { value }));
                    }
                }
            }
        };
        // The test harness names each test's thread after the test.
        let harness_test = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(str::to_owned);
        let test = self.test.clone().or(harness_test);
        // One word, with no comment sign in it: a regressions file's line is
        // `<test> <seed> # <what failed>`.
        let key: String = test
            .clone()
            .unwrap_or_else(|| self.recipe.name())
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == '#' {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let file = match &self.keep {
            Keep::Off => Err("the sweep keeps no regressions".to_owned()),
            Keep::At(p) => Ok(p.clone()),
            Keep::Beside(source) => regressions::beside_source(source).ok_or_else(|| {
                format!(
                    "the test's source {source} was not found from $CARGO_MANIFEST_DIR or the \
                     working directory; name a file with Sweep::regressions"
                )
            }),
        };
        let recorded = match (&file, only) {
            (Ok(path), None) => regressions::seeds_for(path, &key)
                .map_err(|e| Box::new(SweepError::Regressions(e)))?,
            _ => Vec::new(),
        };
        if let Ok(path) = &file {
            for seed in &recorded {
                // Past the test harness's capture, so that it shows on a passing run too.
                let _ = writeln!(
                    std::io::stderr(),
                    "zklock: {key}: replaying seed {seed}, recorded in {}",
                    path.display()
                );
            }
        }
        let range = match only {
            Some(one) => one..one.saturating_add(1),
            None => self.seeds.clone(),
        };
        let mut counters = Counters::default();
        let mut runs = 0;
        let replays = recorded.iter().map(|&s| (s, true));
        for (seed, replayed) in replays.chain(range.map(|s| (s, false))) {
            if !replayed && recorded.contains(&seed) {
                continue;
            }
            runs += 1;
            let run = check_seed(self.scenario, seed, self.recipe);
            counters.merge(&run.report.counters);
            let Some(failure) = run.failure() else {
                continue;
            };
            // Run twice before it is told: a trace of a recipe that is not deterministic
            // would not replay, and its failure would be a mystery.
            let again = check_seed(self.scenario, seed, self.recipe);
            if let Some(difference) = first_difference(&run.outcome.history, &again.outcome.history)
            {
                return Err(Box::new(SweepError::NotDeterministic { seed, difference }));
            }
            let name = self.recipe.name();
            let path = self
                .failures_dir
                .join(failure_trace_name(&name, test.as_deref(), seed));
            let trace = run.trace(self.scenario, seed, &name);
            let written = std::fs::create_dir_all(&self.failures_dir)
                .ok()
                .and_then(|()| trace.write(&path).ok())
                .map(|()| path.clone());
            // The failure shrunk, as the command line's explore writes it.
            let limits = crate::ShrinkLimits {
                time_limit_ms: shrink_time_limit_ms,
                ..crate::ShrinkLimits::default()
            };
            let shrunk = written
                .as_ref()
                .filter(|_| shrink_time_limit_ms > 0)
                .and_then(|_| {
                    let min = path.with_extension("min.json");
                    let s = crate::shrink::shrink(&trace, self.recipe, &limits).ok()?;
                    s.trace.write(&min).ok().map(|()| min)
                });
            let regression = match &file {
                Err(why) => Regression::NotRecorded(why.clone()),
                Ok(p) if replayed => Regression::Replayed(p.clone()),
                Ok(p) => match regressions::record(p, &key, seed, &failure) {
                    Ok(Recorded::Added | Recorded::AlreadyThere) => Regression::Recorded(p.clone()),
                    Err(e) => Regression::NotRecorded(e.to_string()),
                },
            };
            return Err(Box::new(SweepError::Seed(SeedFailure {
                seed,
                failure,
                report: run.report_text(),
                trace: written,
                shrunk,
                test,
                regression,
            })));
        }
        // The sweep as a whole is judged: one seed may make no acquisition, all may not.
        Exercised::of_counters(&counters, runs)
            .verdict()
            .map_err(|n| Box::new(SweepError::NothingChecked(n)))?;
        Ok(Swept {
            counters,
            replayed: recorded,
            regressions: file.ok(),
            runs,
        })
    }
}

/// Runs and checks every seed of `seeds` (only `$ZKLOCK_SEED` when that is set), after
/// the seeds recorded for this test in its regressions file: a [`Sweep`] with its
/// defaults. Returns the merged non-vacuity counters, or the first failure, its trace
/// written under [`FAILURES_DIR`] and its seed recorded beside the calling source file
/// (`tests/herd.rs` keeps `tests/zklock-regressions/herd.txt`: commit it);
/// [`SweepError::NothingChecked`] when no acquisition succeeded in any run; or
/// [`SweepError::BadSeedEnv`], running nothing, when `$ZKLOCK_SEED` is not a seed.
///
/// ```
/// use zklock_checker::check_seeds;
/// use zklock_sim::{Scenario, ShippedRecipe};
///
/// let counters = check_seeds(&Scenario::default(), &ShippedRecipe::default(), 0..3).unwrap();
/// assert!(counters.acquisitions > 0);
/// ```
#[track_caller]
pub fn check_seeds<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    seeds: Range<u64>,
) -> Result<Counters, Box<SweepError>> {
    Sweep::new(scenario, recipe)
        .seeds(seeds)
        .run()
        .map(|s| s.counters)
}

/// Where two runs' histories part: the first event that differs, or the one only one has.
fn first_difference(
    a: &zklock_recipe::history::History,
    b: &zklock_recipe::history::History,
) -> Option<String> {
    let (ea, eb) = (&a.events, &b.events);
    let i = (0..ea.len().max(eb.len())).find(|&i| ea.get(i) != eb.get(i))?;
    let show = |e: Option<&zklock_recipe::history::Event>| match e {
        Some(e) => format!("{e:?}"),
        None => "nothing (the history ended)".to_owned(),
    };
    Some(format!(
        "event {i}: first run {}, second run {}",
        show(ea.get(i)),
        show(eb.get(i))
    ))
}

/// The optimisation level zklock-checker was compiled at (cargo's `OPT_LEVEL`).
const OPT_LEVEL: &str = env!("ZKLOCK_OPT_LEVEL");

/// Tells, once a process, a sweep built without optimisation how to speed it up: cargo's
/// `dev` and `test` profiles build dependencies at opt-level 0, where a sweep runs
/// several times slower, and a library cannot raise its own level.
fn notice_if_unoptimized() {
    static ONCE: Once = Once::new();
    if OPT_LEVEL != "0" {
        return;
    }
    ONCE.call_once(|| {
        // Past the test harness's capture, so that a passing test shows it too.
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            unoptimized_notice(Path::new("Cargo.toml"))
        );
    });
}

fn unoptimized_notice(manifest: &Path) -> String {
    format!(
        "zklock: the simulation was built without optimisation (opt-level 0), where a sweep \
         runs about 4 times slower. Add to {}:\n\n[profile.dev.package.\"*\"]\nopt-level = 2\n",
        manifest.display()
    )
}
