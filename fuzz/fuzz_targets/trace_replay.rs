//! Whatever the trace loader accepts replays, with the shipped recipe, without a panic:
//! a loaded trace is within the scenario's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use zklock_checker::{Trace, replay};
use zklock_sim::ShippedRecipe;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = Trace::from_slice(data, Path::new("fuzzed.json")) {
        let run = replay(&trace, &ShippedRecipe::default()).expect("a loaded trace replays");
        let _ = run.failure();
    }
});
