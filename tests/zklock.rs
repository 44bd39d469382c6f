//! Integration tests of the `zklock` command line and the trace round trip, and the
//! canaries the suite must catch: one test binary (`cargo test --test zklock`; a module's
//! tests alone: `cargo test --test zklock cli::`). A new file joins it here: the package
//! lists its test targets (`autotests = false`).

mod browser;
mod canaries;
mod cli;
mod limits;

use std::path::Path;
use std::process::Command;
use zklock_checker::{Trace, check_seed, render_timeline, replay};
use zklock_sim::{Scenario, ShippedRecipe};

fn zklock(args: &[&str], dir: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run zklock");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn small() -> Scenario {
    Scenario {
        clients: 3,
        acquisitions_per_client: 8,
        ..Scenario::default()
    }
}

#[test]
fn trace_round_trip_replays_the_identical_history_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small();
    let recipe = ShippedRecipe::default();
    for seed in 0..5 {
        let run = check_seed(&sc, seed, &recipe);
        let path = dir.path().join(format!("seed-{seed}.json"));
        run.trace(&sc, seed, "zklock").write(&path).unwrap();
        let read = Trace::read(&path).unwrap();
        assert_eq!(read.choices, run.outcome.choices);
        let again = replay(&read, &recipe).unwrap();
        assert_eq!(again.outcome.history, run.outcome.history, "seed {seed}");
        let t1 = render_timeline(&run.outcome.history);
        let t2 = render_timeline(&again.outcome.history);
        assert!(t1 == t2, "seed {seed}: replayed timeline differs");
        // The timeline file written beside the trace is the trace's own rendering.
        let written = std::fs::read(Trace::timeline_path(&path)).unwrap();
        assert!(
            written == read.timeline().into_bytes(),
            "seed {seed}: timeline file"
        );
        assert!(String::from_utf8(written).unwrap().contains(&t1));
    }
}

#[test]
fn replay_command_reports_an_identical_history() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small();
    let run = check_seed(&sc, 3, &ShippedRecipe::default());
    let path = dir.path().join("t.json");
    run.trace(&sc, 3, "zklock").write(&path).unwrap();
    let (ok, out) = zklock(&["replay", path.to_str().unwrap()], dir.path());
    assert!(ok, "{out}");
    assert!(out.contains("replay: identical history"), "{out}");
}

/// A seed and its commit reproduce a run: a trace names the commit that wrote it, and a
/// replay whose history differs says which commit to check out.
#[test]
fn a_replay_that_differs_names_the_commit_that_wrote_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let sc = small();
    let run = check_seed(&sc, 3, &ShippedRecipe::default());
    let mut trace = run.trace(&sc, 3, "zklock");
    assert_eq!(trace.zklock_commit, zklock_checker::ZKLOCK_COMMIT);
    // As if another commit had recorded one more event.
    trace.zklock_commit = "0123456789ab".into();
    let last = trace.history.events.last().unwrap().clone();
    trace.history.events.push(last);
    let path = dir.path().join("t.json");
    trace.write(&path).unwrap();
    let (_, out) = zklock(&["replay", path.to_str().unwrap()], dir.path());
    assert!(out.contains("history DIFFERS"), "{out}");
    assert!(
        out.contains("written by commit 0123456789ab"),
        "names the commit to check out: {out}"
    );
}

#[test]
fn corrupt_or_truncated_trace_is_a_clear_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"format_version\": 1, \"seed\": ").unwrap();
    let (ok, out) = zklock(&["replay", "bad.json"], dir.path());
    assert!(!ok);
    assert!(out.contains("bad.json"), "names the file: {out}");
    assert!(!out.contains("panicked"), "{out}");
    let (ok, out) = zklock(&["replay", "missing.json"], dir.path());
    assert!(!ok);
    assert!(out.contains("missing.json"), "{out}");
    // The I/O error once: it used to be both in the message and its chained source.
    assert_eq!(out.matches("(os error 2)").count(), 1, "{out}");
}

#[test]
fn shrink_command_refuses_what_it_cannot_shrink_clearly() {
    let dir = tempfile::tempdir().unwrap();
    // The shipped recipe passes, so its trace violates nothing.
    let sc = small();
    let run = check_seed(&sc, 3, &ShippedRecipe::default());
    run.trace(&sc, 3, "zklock")
        .write(&dir.path().join("t.json"))
        .unwrap();
    let (ok, out) = zklock(&["shrink", "t.json"], dir.path());
    assert!(!ok);
    assert!(
        out.contains("t.json") && out.contains("violates nothing"),
        "{out}"
    );
    assert!(!dir.path().join("t.min.json").exists(), "nothing written");
    let (ok, out) = zklock(&["shrink", "t.json", "--fresh-seeds", "many"], dir.path());
    assert!(!ok);
    assert!(out.contains("--fresh-seeds"), "{out}");
    let (ok, out) = zklock(
        &["shrink", "t.json", "--exhaustive-schedules", "-1"],
        dir.path(),
    );
    assert!(!ok);
    assert!(out.contains("--exhaustive-schedules"), "{out}");
    // A trace that names a recipe the command does not have.
    let canary = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/canary-deaf-holder.json");
    let mut trace = Trace::read(&canary).unwrap();
    trace.recipe = "canary-not-here".into();
    trace.write(&dir.path().join("other.json")).unwrap();
    let (ok, out) = zklock(&["shrink", "other.json"], dir.path());
    assert!(!ok);
    assert!(out.contains("canary-not-here"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn explore_runs_the_default_job_and_bad_flags_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = zklock(&["explore", "--seeds", "5"], dir.path());
    assert!(ok, "{out}");
    assert!(out.contains("every property held"), "{out}");
    // A run across the sequence counter's wrap holds, and its output says so.
    let args = ["explore", "--seeds", "3", "--sequence-start", "2147483600"];
    let (ok, out) = zklock(&args, dir.path());
    assert!(ok, "{out}");
    assert!(
        out.contains("the lock directory's sequence counter from 2147483600"),
        "{out}"
    );
    let (ok, out) = zklock(&["explore", "--clients", "0"], dir.path());
    assert!(!ok);
    assert!(out.contains("--clients must be between 1 and 64"), "{out}");
    // Sweeps that check nothing fail rather than say "every property held".
    for (args, says) in [
        (
            &["explore", "--seeds", "0"][..],
            "--seeds must be at least 1",
        ),
        (
            &["explore", "--acquisitions", "0"],
            "--acquisitions must be at least 1",
        ),
        (
            &["explore", "--seeds", "2", "--shard", "4/4"],
            "shard 4/4 of seeds 0..2 holds no seed",
        ),
        (
            &["explore", "--time-limit-s", "0"],
            "the time limit came before the first seed finished",
        ),
        (
            &["check", "--acquisitions", "0"],
            "--acquisitions must be at least 1",
        ),
    ] {
        let (ok, out) = zklock(args, dir.path());
        assert!(!ok && out.contains(says), "{args:?}: {out}");
        assert!(!out.contains("every property held"), "{args:?}: {out}");
    }
    let (ok, out) = zklock(&["frobnicate"], dir.path());
    assert!(!ok);
    assert!(
        out.contains("unrecognized subcommand 'frobnicate'"),
        "{out}"
    );
}

/// A check stopped by a bound used to print only "INCOMPLETE" and fail: it now says what
/// held so far and how to finish it, and still fails, since it proves nothing.
#[test]
fn an_incomplete_check_says_what_held_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "check",
        "--clients",
        "2",
        "--faults-max",
        "1",
        "--schedules-max",
        "50",
    ];
    let (ok, out) = zklock(&args, dir.path());
    assert!(!ok, "an incomplete check is no pass: {out}");
    assert!(
        out.contains("every property held on the 50 schedules explored")
            && out.contains("--schedules-max"),
        "{out}"
    );
    let (ok, out) = zklock(
        &["check", "--clients", "1", "--faults-max", "1"],
        dir.path(),
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("ok: every property held on every schedule"),
        "{out}"
    );
}

#[test]
fn bench_sim_rounds_are_pooled_into_the_json_and_bad_rounds_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(["bench", "--sim-only", "--seeds", "4", "--sim-rounds", "2"])
        .args(["--exhaustive-limit-s", "1", "--instructions-clients", "2"])
        .env("CARGO_TARGET_DIR", dir.path())
        .output()
        .expect("run zklock bench");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("4 seeds per sweep in 2 interleaved rounds"),
        "{text}"
    );
    let json = std::fs::read_to_string(dir.path().join("zklock-bench/bench.json")).unwrap();
    let figures: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The figures name the build they came from: this test's binary is a plain one.
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(figures["build"], profile, "{json}");
    assert!(text.contains(&format!("build: {profile}\n")), "{text}");
    let sim = &figures["simulation"];
    assert_eq!(sim["rounds"], 2);
    let rounds: Vec<f64> = sim["one_core_per_round"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    assert_eq!(rounds.len(), 2);
    assert_eq!(sim["ratio_per_round"].as_array().unwrap().len(), 2);
    // Pooled over the rounds, so it lies between the slowest and the fastest round.
    let pooled = sim["checked_acquisitions_per_s_one_core"].as_f64().unwrap();
    let (lo, hi) = (rounds[0].min(rounds[1]), rounds[0].max(rounds[1]));
    assert!(
        lo > 0.0 && lo <= pooled * 1.000_001 && pooled <= hi * 1.000_001,
        "{json}"
    );

    // The standard figures leave dropped acquires out (see `--sim-drop-every`).
    assert_eq!(sim["drop_every"], 0);
    assert!(text.contains("no dropped acquires"), "{text}");

    // The search the check first made, for its rate per core: unreduced, on one thread,
    // within its 2,000,000 schedules.
    let cells = figures["exhaustive"].as_array().unwrap();
    let first = cells.last().unwrap();
    assert_eq!(first["config"], "3 clients, 1 fault, 100 us", "{json}");
    assert_eq!(
        (&first["symmetry"], &first["threads"]),
        (&false.into(), &1.into())
    );
    assert!(first["schedules"].as_u64().unwrap() <= 2_000_000, "{json}");

    // Instructions per state, counted by cachegrind where valgrind is installed: the
    // check of 2 clients with a fault has 7,265 states (pinned in checker/tests), and
    // costs thousands of instructions each; without valgrind, the reason.
    let i = &figures["instructions"];
    assert_eq!(i["config"], "2 clients, 1 fault, 1 thread", "{json}");
    let valgrind = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .any(|d| d.join("valgrind").is_file());
    if valgrind {
        assert_eq!(i["distinct_states"], 7_265, "{json}");
        let per = i["per_state"].as_f64().unwrap();
        let total = i["instructions"].as_u64().unwrap() as f64;
        assert!(
            per > 1_000.0 && (per * 7_265.0 - total).abs() < 1.0,
            "{json}"
        );
        assert!(text.contains("instructions per state (2 clients"), "{text}");
    } else {
        assert!(i["per_state"].is_null(), "{json}");
        assert!(
            i["not_measured"].as_str().unwrap().contains("valgrind"),
            "{json}"
        );
    }

    let (ok, out) = zklock(&["bench", "--instructions-clients", "5"], dir.path());
    assert!(!ok);
    assert!(
        out.contains("--instructions-clients: 5 is not 0 to 4"),
        "{out}"
    );
    let (ok, out) = zklock(&["bench", "--sim-only", "--sim-rounds", "0"], dir.path());
    assert!(!ok);
    assert!(out.contains("--sim-rounds: 0 is not 1 to 100"), "{out}");
    let (ok, out) = zklock(&["bench", "--sim-drop-every", "-1"], dir.path());
    assert!(!ok);
    assert!(out.contains("--sim-drop-every"), "{out}");
    let (ok, out) = zklock(&["bench", "--real-executor", "threads"], dir.path());
    assert!(!ok);
    assert!(
        out.contains("--real-executor: \"threads\" is not one of reactor, tokio"),
        "{out}"
    );
}

/// The shipped recipe used to take a name past ZooKeeper's counter wrap (`-2147483648`,
/// `-000000001`) for no contender at all: runs crossing the wrap failed their acquires
/// and left orphan nodes. Every property now holds across each form of the wrap, and
/// the lock is granted on both sides of it.
#[test]
fn shipped_recipe_keeps_every_property_across_the_sequence_counter_wrap() {
    use zklock_recipe::history::EventKind;
    use zklock_recipe::lock::naming::parse_sequence;
    // Each start, and the first sequence past its boundary: the wrap itself, the change
    // from '-' and ten digits to '-' and nine, and the change from negative to zero.
    for (start, boundary) in [
        (i32::MAX - 40, i32::MIN),
        (-1_000_000_020, -999_999_999),
        (-20, 0),
    ] {
        let sc = Scenario {
            sequence_start: start,
            ..Scenario::default()
        };
        let (mut before, mut after) = (0, 0);
        for seed in 0..20 {
            let run = check_seed(&sc, seed, &ShippedRecipe::default());
            assert_eq!(run.failure(), None, "start {start}, seed {seed}");
            for e in &run.outcome.history.events {
                if let EventKind::Acquired { node, .. } = &e.kind {
                    let seq = parse_sequence(node).expect("a lock node's name");
                    if seq.wrapping_sub(boundary) < 0 {
                        before += 1;
                    } else {
                        after += 1;
                    }
                }
            }
        }
        assert!(before > 0 && after > 0, "start {start}: {before} / {after}");
    }
}
