//! The `zklock` command line.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use zklock_recipe::history::EventKind;
use zklock_sim::{Scenario, ShippedRecipe, run_scenario};

const USAGE: &str = "\
zklock: deterministic simulator and model checker for ZooKeeper lock recipes

USAGE:
    zklock [explore] [OPTIONS]   run the shipped lock recipe on the simulated ZooKeeper,
                                 all faults on, over a range of seeds (the default job)
    zklock help                  print this help

OPTIONS (explore):
    --seeds N            seeds to run (default 20)
    --seed-start S       first seed (default 0)
    --clients N          contending clients (default 5, at most 64)
    --acquisitions N     acquisitions per client (default 20)
";

fn main() -> std::process::ExitCode {
    match dispatch() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn dispatch() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("help" | "--help" | "-h") => {
            print!("{USAGE}");
            Ok(())
        }
        Some("explore") => explore(&args[1..]),
        None => explore(&[]),
        Some(a) if a.starts_with("--") => explore(&args),
        Some(other) => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: Option<&String>) -> Result<T> {
    let v = v.with_context(|| format!("{flag} needs a value"))?;
    v.parse()
        .ok()
        .with_context(|| format!("{flag}: {v:?} is not a valid number"))
}

fn explore(args: &[String]) -> Result<()> {
    let mut seeds: u64 = 20;
    let mut start: u64 = 0;
    let mut sc = Scenario::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => seeds = parse(a, it.next())?,
            "--seed-start" => start = parse(a, it.next())?,
            "--clients" => sc.clients = parse(a, it.next())?,
            "--acquisitions" => sc.acquisitions_per_client = parse(a, it.next())?,
            other => bail!("unknown option {other:?}\n\n{USAGE}"),
        }
    }
    if sc.clients == 0 || sc.clients > 64 {
        bail!("--clients must be between 1 and 64, got {}", sc.clients);
    }
    let recipe = ShippedRecipe::default();
    let t0 = std::time::Instant::now();
    let mut acquisitions = 0u64;
    let mut faults: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for seed in start..start + seeds {
        let o = run_scenario(&sc, seed, &recipe);
        for e in &o.history.events {
            match &e.kind {
                EventKind::Acquired { .. } => acquisitions += 1,
                EventKind::Fault { fault } => {
                    let name = format!("{fault:?}");
                    let name = name.split([' ', '{']).next().unwrap_or("?").to_string();
                    *faults.entry(name).or_default() += 1;
                }
                _ => {}
            }
        }
        if let Some(err) = o.error {
            failures.push((seed, err));
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "seeds {start}..{} ({seeds}), {} clients x {} acquisitions, all faults on until {} ms",
        start + seeds,
        sc.clients,
        sc.acquisitions_per_client,
        sc.heal_ms
    );
    println!("acquisitions: {acquisitions} ({:.0}/s wall)", acquisitions as f64 / secs);
    println!("faults injected: {faults:?}");
    for (seed, err) in &failures {
        println!("seed {seed}: {err}");
        println!("  reproduce: cargo run --release -- explore --seed-start {seed} --seeds 1");
    }
    if !failures.is_empty() {
        bail!("{} of {seeds} seeds failed", failures.len());
    }
    println!("ok: every seed ran to completion in {secs:.2} s");
    Ok(())
}
