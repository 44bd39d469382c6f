//! A fuzzer of the trace loader and the replay, in the normal test suite: the traces of
//! `traces/` with bytes flipped, cut short, or with fields set to odd values. Loading
//! must give a trace or a [`TraceError`], never panic; whatever loads must replay (with
//! the shipped recipe, whatever recipe wrote it) without a panic. `PROPTEST_CASES=N` runs
//! more cases (256 each by default); `fuzz/` holds the cargo-fuzz targets for longer runs.

use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use zklock_checker::{Trace, replay};
use zklock_sim::ShippedRecipe;

/// Every trace of the repository's `traces/`, as bytes.
fn corpus() -> &'static [Vec<u8>] {
    static CORPUS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        assert!(files.len() >= 10, "traces/ holds {} traces", files.len());
        files.iter().map(|p| std::fs::read(p).unwrap()).collect()
    })
}

/// Cases that loaded and replayed.
static LOADED: AtomicU64 = AtomicU64::new(0);

/// Loads `bytes` as a trace file, and replays it if it loads.
fn load_and_replay(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzzed.json");
    std::fs::write(&path, bytes).unwrap();
    let Ok(trace) = Trace::read(&path) else {
        return;
    };
    LOADED.fetch_add(1, Ordering::Relaxed);
    // What loads is within the bounds, so its replay runs.
    let run = replay(&trace, &ShippedRecipe::default()).expect("a loaded trace replays");
    let _ = run.failure();
}

/// The fields a trace's reader and replay act on, as JSON pointers.
const FIELDS: &[&str] = &[
    "/format_version",
    "/seed",
    "/choices",
    "/choices/0",
    "/choices/3",
    "/recipe",
    "/violation",
    "/history",
    "/history/events/0/time_us",
    "/history/events/0/kind",
    "/scenario",
    "/scenario/clients",
    "/scenario/acquisitions_per_client",
    "/scenario/readers",
    "/scenario/lock_path",
    "/scenario/session_timeout_ms",
    "/scenario/hold_ms",
    "/scenario/acquire_timeout_ms",
    "/scenario/drop_every",
    "/scenario/mix_offset",
    "/scenario/drop_after_ms_max",
    "/scenario/sequence_start",
    "/scenario/faults/connection_loss/num",
    "/scenario/faults/connection_loss/den",
    "/scenario/faults/partition/num",
    "/scenario/faults/pause/den",
    "/scenario/faults/crash/num",
    "/scenario/faults/local_expiry",
    "/scenario/faults/delay_ms_max",
    "/scenario/faults/partition_ms_max",
    "/scenario/faults/pause_ms_max",
    "/scenario/fault_mode",
    "/scenario/heal_ms",
    "/scenario/liveness_bound_ms",
    "/scenario/time_limit_ms",
];

/// Odd values: edges of the integer types and of the bounds, small numbers, wrong types.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0u64..=70).prop_map(|n| json!(n)),
        2 => (1000u64..=100_000).prop_map(|n| json!(n)),
        1 => any::<u64>().prop_map(|n| json!(n)),
        1 => select(vec![
            json!(u32::MAX),
            json!(u64::MAX),
            json!(i32::MIN),
            json!(i32::MAX),
            json!(-1),
            json!(1.5),
            json!(3_600_001),
            json!(65_536),
            json!(10_001),
        ]),
        1 => select(vec![
            json!(""),
            json!("/"),
            json!("//"),
            json!("/a/"),
            json!("a"),
            json!("/a/./b"),
            json!("/a\u{0}b"),
            json!("/zookeeper"),
            json!(format!("/{}", "x".repeat(2000))),
            json!({"Bounded": {"faults_max": 3}}),
            json!({"Bounded": {"faults_max": u32::MAX}}),
            json!("Random"),
            json!([0, 1, u32::MAX, 7]),
            json!({"num": 1, "den": 0}),
            json!({"num": u32::MAX, "den": 1}),
            json!({"events": []}),
            json!(null),
            json!(true),
            json!([]),
            json!({}),
        ]),
    ]
}

/// Sets the field at `pointer` (when the trace has it) to `value`.
fn set(v: &mut Value, pointer: &str, value: Value) {
    if let Some(slot) = v.pointer_mut(pointer) {
        *slot = value;
    }
}

proptest! {
    #[test]
    fn flipped_bytes_load_or_fail_cleanly(
        trace in any::<Index>(),
        flips in prop::collection::vec((any::<Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = trace.get(corpus()).clone();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        load_and_replay(&bytes);
    }

    #[test]
    fn truncated_traces_load_or_fail_cleanly(trace in any::<Index>(), cut in any::<Index>()) {
        let bytes: &Vec<u8> = trace.get(corpus());
        load_and_replay(&bytes[..cut.index(bytes.len())]);
    }

    #[test]
    fn traces_with_odd_fields_load_or_fail_cleanly(
        trace in any::<Index>(),
        edits in prop::collection::vec((select(FIELDS), odd_value()), 1..5),
    ) {
        let mut v: Value = serde_json::from_slice(trace.get::<Vec<u8>>(corpus())).unwrap();
        for (pointer, value) in edits {
            set(&mut v, pointer, value);
        }
        load_and_replay(&serde_json::to_vec_pretty(&v).unwrap());
    }
}

#[test]
fn every_trace_of_the_corpus_loads_and_replays() {
    // The mutations start from traces that load: the fuzzer reaches the replay.
    let before = LOADED.load(Ordering::Relaxed);
    for bytes in corpus() {
        load_and_replay(bytes);
    }
    assert!(LOADED.load(Ordering::Relaxed) - before >= corpus().len() as u64);
}
