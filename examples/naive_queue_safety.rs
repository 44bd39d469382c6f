//! A sweep of the naive work queue (`queue-naive`) judged by every queue property but
//! its herd: exclusive items, no processing after completion, every item completed, one
//! item per produce. `zklock explore --recipe queue-naive` stops at its first seed, at its
//! herd (`queue_no_herd`), which is the naive consumer's known cost; this sweep runs on
//! and counts, per property, the seeds that violate any other.
//!
//! `cargo run --release --example naive_queue_safety -- 1000000` (the seeds to run,
//! default 10000; exit status 1 if any seed violates one of those properties).

use std::sync::atomic::{AtomicU64, Ordering};
use zklock_checker::check_seed;
use zklock_sim::{QueueRecipe, Scenario};

/// The seeds a sweep may ask for at most.
const SEEDS_MAX: u64 = 100_000_000;

fn main() {
    let seeds: u64 = match std::env::args().nth(1).map(|a| a.parse::<u64>()) {
        None => 10_000,
        Some(Ok(n)) if (1..=SEEDS_MAX).contains(&n) => n,
        Some(_) => {
            eprintln!("the seeds to run: a number from 1 to {SEEDS_MAX}");
            std::process::exit(2);
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let next = AtomicU64::new(0);
    let started = std::time::Instant::now();
    let failures: Vec<(u64, String)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let recipe = QueueRecipe::naive();
                    let sc = Scenario::default();
                    let mut found = Vec::new();
                    loop {
                        let seed = next.fetch_add(1, Ordering::Relaxed);
                        if seed >= seeds {
                            return found;
                        }
                        let run = check_seed(&sc, seed, &recipe);
                        if let Some(e) = &run.outcome.error {
                            found.push((seed, format!("the run did not finish: {e}")));
                        }
                        for v in &run.report.verdicts {
                            if !v.ok && v.property != "queue_no_herd" {
                                found.push((seed, v.property.to_string()));
                            }
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a sweep worker"))
            .collect()
    });
    println!(
        "{seeds} seeds of queue-naive in {:.1} s on {threads} threads: {} violations of a \
         property other than the herd",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    for (seed, what) in failures.iter().take(20) {
        println!("  seed {seed}: {what}");
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
