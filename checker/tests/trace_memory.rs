//! Loading a trace takes about its size twice in memory (the file's bytes, then the
//! trace), where a JSON tree of the whole file once took over twenty times its size.

use peak_alloc::PeakAlloc;
use zklock_checker::{Trace, check_seed};
use zklock_sim::{Scenario, ShippedRecipe};

#[global_allocator]
static PEAK: PeakAlloc = PeakAlloc;

#[test]
fn loading_a_trace_takes_at_most_three_times_its_size_in_memory() {
    let sc = Scenario {
        acquisitions_per_client: 200,
        ..Scenario::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.json");
    {
        let run = check_seed(&sc, 7, &ShippedRecipe::default());
        run.trace(&sc, 7, "zklock").write(&path).unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    assert!(
        size > 1 << 20,
        "a trace of {size} bytes is too small to measure"
    );
    let before = PEAK.current_usage();
    PEAK.reset_peak_usage();
    let trace = Trace::read(&path).unwrap();
    let peak = PEAK.peak_usage().saturating_sub(before);
    let kept = PEAK.current_usage().saturating_sub(before);
    eprintln!(
        "trace of {size} bytes: peak {peak} bytes while loading ({:.2}x), {kept} kept ({:.2}x)",
        peak as f64 / size as f64,
        kept as f64 / size as f64
    );
    assert!(peak <= 3 * size, "peak {peak} for a file of {size}");
    assert_eq!(trace.scenario, sc);
}
