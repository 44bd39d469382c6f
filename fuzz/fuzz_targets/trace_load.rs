//! The trace loader on any bytes: a trace or a `TraceError`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use zklock_checker::Trace;

fuzz_target!(|data: &[u8]| {
    let _ = Trace::from_slice(data, Path::new("fuzzed.json"));
});
