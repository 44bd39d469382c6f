//! Seed sweeps for a user's own `#[test]`: run, check, and on failure say exactly how to
//! reproduce it.

use crate::properties::Counters;
use crate::run::check_seed;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use zklock_sim::{Recipe, Scenario, ScenarioError};

/// Restricts a sweep to one seed, to reproduce a failure: `ZKLOCK_SEED=42 cargo test ...`.
pub const SEED_ENV: &str = "ZKLOCK_SEED";

/// Why a sweep did not pass. Its `Debug` is its `Display`, so that a plain `.unwrap()` in
/// a test prints the report and the command that reproduces it.
#[non_exhaustive]
pub enum SweepError {
    /// A seed violated a property, or its run stopped early.
    Seed(SeedFailure),
    /// `$ZKLOCK_SEED` is set, but not to a seed (a u64): the sweep would otherwise run
    /// its whole range and reproduce nothing.
    BadSeedEnv { value: String },
    /// The scenario is outside its bounds ([`Scenario::validate`]): nothing ran.
    Scenario(ScenarioError),
}

impl SweepError {
    /// The failing seed, if a seed failed.
    pub fn seed_failure(&self) -> Option<&SeedFailure> {
        match self {
            SweepError::Seed(f) => Some(f),
            SweepError::BadSeedEnv { .. } | SweepError::Scenario(_) => None,
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
            SweepError::Scenario(e) => e.fmt(f),
        }
    }
}

impl fmt::Debug for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for SweepError {}

/// The first failing seed of a sweep.
#[derive(Debug)]
pub struct SeedFailure {
    pub seed: u64,
    /// The violated property, or why the run stopped early.
    pub failure: String,
    /// The full report.
    pub report: String,
    /// Where the failing run's trace was written, if it could be.
    pub trace: Option<PathBuf>,
    /// The test that ran the sweep, when run under the test harness.
    pub test: Option<String>,
}

impl fmt::Display for SeedFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} failed: {}", self.seed, self.failure)?;
        writeln!(f, "{}", self.report)?;
        if let Some(p) = &self.trace {
            writeln!(f, "trace: {} (and its .timeline.txt)", p.display())?;
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

/// Runs and checks every seed of `seeds` (only `$ZKLOCK_SEED` when that is set). Returns
/// the merged non-vacuity counters, or the first failure with its trace written under
/// `target/zklock-failures/` (or `$CARGO_TARGET_DIR/zklock-failures/`); or
/// [`SweepError::BadSeedEnv`], running nothing, when `$ZKLOCK_SEED` is not a seed, or
/// [`SweepError::Scenario`] when the scenario is outside its bounds.
pub fn check_seeds<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    seeds: Range<u64>,
) -> Result<Counters, Box<SweepError>> {
    scenario
        .validate()
        .map_err(|e| Box::new(SweepError::Scenario(e)))?;
    let seeds = match std::env::var_os(SEED_ENV) {
        None => seeds,
        Some(value) => match value.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(one) => one..one.saturating_add(1),
            None => {
                let value = value.to_string_lossy().into_owned();
                return Err(Box::new(SweepError::BadSeedEnv { value }));
            }
        },
    };
    let mut counters = Counters::default();
    for seed in seeds {
        let run = check_seed(scenario, seed, recipe);
        counters.merge(&run.report.counters);
        let Some(failure) = run.failure() else {
            continue;
        };
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| PathBuf::from("target"), PathBuf::from)
            .join("zklock-failures");
        let name = format!("{}-seed-{seed}.json", recipe.name());
        let path = dir.join(name);
        let written = std::fs::create_dir_all(&dir)
            .ok()
            .and_then(|()| run.trace(scenario, seed, &recipe.name()).write(&path).ok())
            .map(|()| path);
        // The test harness names each test's thread after the test.
        let test = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(str::to_owned);
        return Err(Box::new(SweepError::Seed(SeedFailure {
            seed,
            failure,
            report: run.report.to_string(),
            trace: written,
            test,
        })));
    }
    Ok(counters)
}
