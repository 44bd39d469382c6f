//! The shipped recipes pass every property on simulated runs: the properties raise no
//! false alarm on a correct recipe, with and without faults, exclusive and read/write.

use zklock_checker::{CheckConfig, Report, check_all};
use zklock_sim::{Faults, Scenario, ShippedRecipe, run_scenario};

const SEEDS: u64 = 25;

fn check(sc: &Scenario, seed: u64) -> Report {
    let out = run_scenario(sc, seed, &ShippedRecipe::default());
    let cfg = CheckConfig::from_scenario(sc)
        .with_final_children(out.final_lock_children.clone())
        .with_run_end_us(out.end_time_us);
    check_all(&out.history, &cfg)
}

fn sweep(sc: &Scenario) -> u64 {
    let mut acquisitions = 0;
    for seed in 0..SEEDS {
        let report = check(sc, seed);
        assert!(report.ok(), "seed {seed}:\n{report}");
        acquisitions += report.counters.acquisitions;
    }
    acquisitions
}

#[test]
fn exclusive_without_faults() {
    let sc = Scenario {
        faults: Faults::none(),
        ..Scenario::default()
    };
    assert!(sweep(&sc) > 0);
}

#[test]
fn exclusive_with_all_faults() {
    assert!(sweep(&Scenario::default()) > 0);
}

#[test]
fn read_write_with_all_faults() {
    let sc = Scenario {
        readers: 3,
        ..Scenario::default()
    };
    assert!(sweep(&sc) > 0);
}
