//! `zklock bench --search`: how long each search strategy takes to catch each canary.
//!
//! For every canary (every registered recipe named `canary-*`), in its own scenario, and
//! for each strategy side by side: from each of `--search-starts` starting seeds, the
//! seeds and the seconds a one-thread sweep runs until its first failing seed. Printed as
//! the median and the worst over the starts, with each strategy's per-core rate on the
//! shipped lock beside them. Seeds are exact (one thread stops at the first failure);
//! seconds depend on the machine, and are compared only within one run.

use crate::BenchOptions;
use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;
use zklock_checker::registry::{AnyRecipe, Recipes};
use zklock_checker::{Budget, Strategy};
use zklock_sim::Scenario;

/// Starting seeds at most, and seeds per start at most.
pub const SEARCH_STARTS_MAX: u64 = 1000;
pub const SEARCH_SEEDS_MAX: u64 = 100_000_000;

/// One canary under one strategy: per start, the seeds and seconds to the first failure
/// (`None`: not caught within the seeds allowed).
struct Cell {
    seeds: Vec<Option<u64>>,
    secs: Vec<f64>,
}

pub fn run(a: &BenchOptions, recipes: &Recipes) -> Result<()> {
    if !(1..=SEARCH_STARTS_MAX).contains(&a.search_starts) {
        bail!(
            "--search-starts must be 1 to {SEARCH_STARTS_MAX}, got {}",
            a.search_starts
        );
    }
    if !(1..=SEARCH_SEEDS_MAX).contains(&a.search_seeds) {
        bail!(
            "--search-seeds must be 1 to {SEARCH_SEEDS_MAX}, got {}",
            a.search_seeds
        );
    }
    if !(1..=SEARCH_SEEDS_MAX).contains(&a.search_rate_seeds) {
        bail!(
            "--search-rate-seeds must be 1 to {SEARCH_SEEDS_MAX}, got {}",
            a.search_rate_seeds
        );
    }
    let canaries: Vec<_> = match &a.search_recipes {
        Some(names) => names
            .iter()
            .map(|n| recipe(recipes, n).map(|r| (n.clone(), r)))
            .collect::<Result<_>>()?,
        None => recipes
            .iter()
            .filter(|e| e.name().starts_with("canary-"))
            .map(|e| (e.name().to_owned(), e.recipe()))
            .collect(),
    };
    if canaries.is_empty() {
        bail!("no recipe named canary-* is registered: nothing to search for");
    }
    let own = a.search_in == "own";
    let strategies: Vec<Strategy> = match &a.search_strategies {
        Some(names) => names.clone(),
        None => Strategy::ALL.to_vec(),
    };
    let total = (canaries.len() * strategies.len()) as u64 * a.search_starts;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} searches  {elapsed} (eta {eta})")
            .expect("static template"),
    );
    let mut rows = Vec::new();
    for (name, recipe) in &canaries {
        let scenario = if own {
            recipe.scenario()
        } else {
            Scenario::default()
        };
        let mut cells = Vec::new();
        for &strategy in &strategies {
            let mut cell = Cell {
                seeds: Vec::new(),
                secs: Vec::new(),
            };
            // Starts far apart, the same for every strategy.
            for i in 0..a.search_starts {
                let budget = Budget {
                    seed_start: i * 1_000_000,
                    seeds: a.search_seeds,
                    threads: 1,
                    strategy,
                    ..Budget::default()
                };
                let t = Instant::now();
                let x = recipe.explore(&scenario, &budget, &|_, _| {})?;
                cell.secs.push(t.elapsed().as_secs_f64());
                cell.seeds
                    .push(x.failure.is_some().then_some(x.summary.seeds_run));
                bar.inc(1);
            }
            cells.push(cell);
        }
        rows.push((name.clone(), cells));
    }
    let rates = rates_per_core(recipes, &strategies, a.search_rate_seeds)?;
    bar.finish_and_clear();
    print_table(&rows, &strategies, &rates, a);
    Ok(())
}

/// Rounds the per-core rates are measured in, the strategies taking turns, so that a
/// change in the machine's load falls on each alike.
const RATE_ROUNDS: u64 = 5;

/// Checked acquisitions per second on one core, the shipped lock in the default scenario
/// under each strategy, measured side by side.
fn rates_per_core(recipes: &Recipes, strategies: &[Strategy], seeds: u64) -> Result<Vec<f64>> {
    let Some(lock) = recipes.get(zklock_checker::registry::SHIPPED_NAME) else {
        return Ok(vec![f64::NAN; strategies.len()]);
    };
    let mut checked = vec![0u64; strategies.len()];
    let mut secs = vec![0f64; strategies.len()];
    let per_round = seeds.div_ceil(RATE_ROUNDS);
    for round in 0..RATE_ROUNDS {
        for (i, &strategy) in strategies.iter().enumerate() {
            let budget = Budget {
                seed_start: round * per_round,
                seeds: per_round,
                threads: 1,
                strategy,
                ..Budget::default()
            };
            let t = Instant::now();
            let x = lock.explore(&lock.scenario(), &budget, &|_, _| {})?;
            secs[i] += t.elapsed().as_secs_f64();
            checked[i] += x.summary.counters.checked().0;
        }
    }
    Ok(checked
        .iter()
        .zip(&secs)
        .map(|(&c, &s)| c as f64 / s.max(1e-9))
        .collect())
}

/// The median and the largest of `xs`, `None` (not caught) counting as the largest.
fn median_worst(xs: &[Option<u64>]) -> (String, String) {
    let mut v: Vec<u64> = xs.iter().map(|x| x.unwrap_or(u64::MAX)).collect();
    v.sort_unstable();
    let show = |x: u64| match x {
        u64::MAX => "-".to_owned(),
        n => n.to_string(),
    };
    (show(v[v.len() / 2]), show(*v.last().expect("a start")))
}

fn secs_median_worst(xs: &[f64]) -> (f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], *v.last().expect("a start"))
}

fn print_table(
    rows: &[(String, Vec<Cell>)],
    strategies: &[Strategy],
    rates: &[f64],
    a: &BenchOptions,
) {
    outln!(
        "time to the first failure, each canary in {}: seeds (median / worst) and seconds \
         (median / worst) of a one-thread sweep, over {} starting seeds, at most {} seeds \
         each ('-': not caught)",
        if a.search_in == "own" {
            "its own scenario"
        } else {
            "the default scenario"
        },
        a.search_starts,
        a.search_seeds
    );
    let mut header = format!("{:<38}", "canary");
    for s in strategies {
        header.push_str(&format!(" | {:>26}", s.name()));
    }
    outln!("{header}");
    let mut worst_secs = vec![0f64; strategies.len()];
    let mut missed = vec![0usize; strategies.len()];
    for (name, cells) in rows {
        let mut line = format!("{name:<38}");
        for (i, c) in cells.iter().enumerate() {
            let (ms, ws) = median_worst(&c.seeds);
            let (mt, wt) = secs_median_worst(&c.secs);
            worst_secs[i] = worst_secs[i].max(wt);
            missed[i] += c.seeds.iter().filter(|s| s.is_none()).count();
            line.push_str(&format!(" | {ms:>5} / {ws:>6} {mt:>5.2} / {wt:>5.2} s"));
        }
        outln!("{line}");
    }
    let mut line = format!("{:<38}", "worst seconds over every canary");
    for w in &worst_secs {
        line.push_str(&format!(" | {:>24.2} s", w));
    }
    outln!("{line}");
    let mut line = format!("{:<38}", "starts not caught");
    for m in &missed {
        line.push_str(&format!(" | {m:>26}"));
    }
    outln!("{line}");
    let mut line = format!("{:<38}", "checked acquisitions/s per core");
    for r in rates {
        let ratio = r / rates[0];
        line.push_str(&format!(" | {r:>17.0} ({ratio:.2}x)"));
    }
    outln!("{line}");
}

/// The recipe `--search-recipes` names.
fn recipe<'a>(recipes: &'a Recipes, name: &str) -> Result<&'a dyn AnyRecipe> {
    recipes.get(name).ok_or_else(|| {
        let known: Vec<&str> = recipes.names().collect();
        anyhow::anyhow!(
            "--search-recipes {name:?} is not a recipe of this command; it knows {} \
             (`zklock recipes` lists them)",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    })
}
