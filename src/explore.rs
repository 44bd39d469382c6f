//! `zklock explore`: a seed sweep of the shipped recipe, every run checked.

use crate::args::value;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use zklock_checker::{Counters, check_seed};
use zklock_sim::{Scenario, ShippedRecipe};

pub fn run(args: &[String]) -> Result<bool> {
    let mut seeds: u64 = 100;
    let mut start: u64 = 0;
    let mut out = PathBuf::from("traces/failures");
    let mut sc = Scenario::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => seeds = value(a, it.next())?,
            "--seed-start" => start = value(a, it.next())?,
            "--clients" => sc.clients = value(a, it.next())?,
            "--acquisitions" => sc.acquisitions_per_client = value(a, it.next())?,
            "--readers" => sc.readers = value(a, it.next())?,
            "--out" => out = value(a, it.next())?,
            other => bail!("unknown option {other:?} (see `zklock help`)"),
        }
    }
    if sc.clients == 0 || sc.clients > 64 {
        bail!("--clients must be between 1 and 64, got {}", sc.clients);
    }
    if sc.readers > sc.clients {
        bail!(
            "--readers ({}) cannot exceed --clients ({})",
            sc.readers,
            sc.clients
        );
    }
    let recipe = ShippedRecipe::default();
    let t0 = std::time::Instant::now();
    let mut counters = Counters::default();
    for seed in start..start.saturating_add(seeds) {
        let run = check_seed(&sc, seed, &recipe);
        counters.merge(&run.report.counters);
        if let Some(failure) = run.failure() {
            println!("seed {seed}: FAILED {failure}\n");
            println!("{}", run.report);
            if let Some(e) = &run.outcome.error {
                println!("the run stopped early: {e}");
            }
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            let path = out.join(format!("seed-{seed}.json"));
            run.trace(&sc, seed, "zklock").write(&path)?;
            println!("trace: {}", path.display());
            println!(
                "reproduce: cargo run --release -- replay {}",
                path.display()
            );
            return Ok(false);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "seeds {start}..{} ({seeds} runs), {} clients ({} readers) x {} acquisitions, \
         faults on until {} ms",
        start.saturating_add(seeds),
        sc.clients,
        sc.readers,
        sc.acquisitions_per_client,
        sc.heal_ms
    );
    println!("{counters}");
    println!(
        "ok: every property held on every seed ({secs:.2} s, {:.0} checked acquisitions/s)",
        counters.acquisitions as f64 / secs.max(1e-9)
    );
    Ok(true)
}
