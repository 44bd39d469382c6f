//! The command line's conventions: exit statuses, help, version, completions, argument
//! handling, and what it refuses. Most run the built binary; those that need a failing
//! recipe run the same command line in-process (`zklock::run`) with one registered.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use zklock::{Recipes, Status};
use zklock_checker::{Summary, Trace, check_seed};
use zklock_recipe::history::LockRole;
use zklock_sim::{LockUnderTest, Recipe, Scenario, ShippedRecipe, SimClient};

#[path = "cli/coverage.rs"]
mod coverage;
#[path = "cli/elections_real.rs"]
mod elections_real;
#[path = "cli/export.rs"]
mod export;
#[path = "cli/faults.rs"]
mod faults;
#[path = "cli/keep_only.rs"]
mod keep_only;
#[path = "cli/output.rs"]
mod output;
#[path = "cli/partial_order.rs"]
mod partial_order;
#[path = "cli/reach.rs"]
mod reach;
#[path = "cli/readme.rs"]
mod readme;
#[path = "cli/request_time.rs"]
mod request_time;
#[path = "cli/search.rs"]
mod search;
#[path = "cli/shape.rs"]
mod shape;
#[path = "cli/shard.rs"]
mod shard;
#[path = "cli/threads.rs"]
mod threads;
#[path = "cli/user_real.rs"]
mod user_real;

/// Runs the binary in `dir`: (exit code, stdout, stderr).
fn zklock<S: AsRef<std::ffi::OsStr>>(args: &[S], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run zklock");
    let code = out.status.code().expect("exited, not killed by a signal");
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The trace a failing check in `dir` printed as `trace: PATH` in `out`, after checking
/// that `zklock replay` runs it again to the same history (and the same failure).
/// Whether a real server and `kind`'s driver can run here: false (skip) when not, except
/// under `CI=true`, where a missing one fails the test (docs/drivers.md), naming `what`.
fn driver_ready(kind: zklock_real::driver::DriverKind, what: &str) -> bool {
    if !zklock_real::harness::available_for_tests() {
        return false;
    }
    match zklock_real::driver::DriverRecipe::prepare(kind) {
        Ok(_) => true,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but {what} cannot run: {e}")
        }
        Err(e) => {
            eprintln!("skipping {what}: {e}");
            false
        }
    }
}

fn replayed_trace(dir: &Path, out: &str) -> Trace {
    let path = out
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .expect("the trace's path");
    let trace = Trace::read(&dir.join(path)).unwrap();
    let (code, out, err) = zklock(&["replay", path], dir);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("replay: identical history"), "{out}");
    trace
}

/// A check of 2 clients without a fault, with `extra` flags, run in `dir`.
fn check_two(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["check", "--clients", "2", "--faults-max", "0"];
    args.extend_from_slice(extra);
    zklock(&args, dir)
}

/// [`check_two`] stopped after 20 schedules with its checkpoint at `dir/c.ckpt` (or
/// refused by the one there).
fn check_part(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["--schedules-max", "20", "--checkpoint", "c.ckpt"];
    args.extend_from_slice(extra);
    check_two(dir, &args)
}

/// A passing run of the shipped lock, written as a trace at `dir/name`.
fn passing_trace(dir: &Path, name: &str) -> (PathBuf, Trace) {
    let sc = Scenario {
        clients: 3,
        acquisitions_per_client: 4,
        ..Scenario::default()
    };
    let run = check_seed(&sc, 3, &ShippedRecipe::default());
    let trace = run.trace(&sc, 3, "zklock");
    let path = dir.join(name);
    trace.write(&path).unwrap();
    (path, trace)
}

/// No lock at all: every acquire succeeds at once, so two clients hold together.
struct NoLock;

impl LockUnderTest for NoLock {
    type Guard = ();
    async fn acquire(&self) -> Result<(), String> {
        Ok(())
    }
    async fn try_acquire(&self) -> Result<Option<()>, String> {
        Ok(Some(()))
    }
    async fn acquire_timeout(&self, _: Duration) -> Result<Option<()>, String> {
        Ok(Some(()))
    }
    fn token(&self, _: &()) -> i64 {
        0
    }
    fn node(&self, _: &()) -> String {
        "none".into()
    }
    async fn lost(&self, _: &()) -> String {
        std::future::pending().await
    }
    async fn release(&self, _: ()) -> Result<(), String> {
        Ok(())
    }
}

struct NoLockRecipe;

impl Recipe for NoLockRecipe {
    type Lock = NoLock;
    fn name(&self) -> String {
        "no-lock".into()
    }
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> NoLock {
        NoLock
    }
}

fn with_no_lock() -> Recipes {
    let mut r = Recipes::shipped();
    r.register("no-lock", "no lock at all", NoLockRecipe)
        .unwrap();
    r
}

/// `zklock::run` with `args` after the program's name.
fn run_in_process(recipes: &Recipes, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Status {
    let mut all = vec![OsString::from("zklock")];
    all.extend(args.iter().map(|a| a.as_ref().to_owned()));
    zklock::run(all, recipes)
}

#[test]
fn every_subcommand_has_help_and_the_exit_statuses_are_documented() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = zklock(&["--help"], dir.path());
    assert_eq!(code, 0, "{out}");
    for says in [
        "Exit status:",
        "0  every property held",
        "2  usage error",
        "3  inconclusive",
    ] {
        assert!(out.contains(says), "{says}: {out}");
    }
    for sub in [
        "explore",
        "check",
        "replay",
        "shrink",
        "timeline",
        "merge",
        "real",
        "bench",
        "recipes",
        "completions",
    ] {
        let (code, out, err) = zklock(&[sub, "--help"], dir.path());
        assert_eq!(code, 0, "{sub}: {out}{err}");
        assert!(
            out.contains(&format!("Usage: zklock {sub}")),
            "{sub}: {out}"
        );
        let (code, again, _) = zklock(&["help", sub], dir.path());
        assert_eq!((code, &again), (0, &out), "`zklock help {sub}`");
    }
    for sub in [
        "explore", "check", "replay", "shrink", "timeline", "merge", "real", "bench",
    ] {
        let (_, out, _) = zklock(&[sub, "--help"], dir.path());
        assert!(out.contains("Exit status:"), "{sub}: {out}");
    }
    let (_, out, _) = zklock(&["explore", "--help"], dir.path());
    assert!(
        out.contains("--recipe <NAME>") && out.contains("--force"),
        "{out}"
    );
}

/// A user's binary built on the library printed `cargo run --release -- replay ...`, a
/// command of zklock's checkout, not its own. It names itself as invoked, and its commit
/// beside zklock's. Its output goes straight to stdout, so this test runs itself again as
/// the user's binary would run, and reads that output.
#[test]
fn a_users_binary_names_itself_and_its_commit_in_the_commands_it_prints() {
    const AS_USERS_BINARY: &str = "ZKLOCK_TEST_AS_USERS_BINARY";
    if let Some(out) = std::env::var_os(AS_USERS_BINARY) {
        let args: [OsString; 8] = [
            "/opt/team tools/team-zklock".into(),
            "explore".into(),
            "--recipe".into(),
            "no-lock".into(),
            "--seeds".into(),
            "5".into(),
            "--out".into(),
            out,
        ];
        let status = zklock::CommandLine::new(with_no_lock())
            .commit("0a1b2c3")
            .run(args);
        std::process::exit(status.code().into());
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cli::a_users_binary_names_itself_and_its_commit_in_the_commands_it_prints",
        ])
        .args(["--nocapture", "--test-threads", "1"])
        .env(AS_USERS_BINARY, dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let traces: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("reproduce: "))
        .collect();
    assert_eq!(traces.len(), 2, "the trace and the shrunk trace: {text}");
    let at = match zklock_checker::ZKLOCK_COMMIT {
        "" => " (at commit 0a1b2c3)".to_owned(),
        z => format!(" (at commit 0a1b2c3, with zklock at commit {z})"),
    };
    for line in traces {
        let rest = line
            .strip_prefix("'/opt/team tools/team-zklock' replay ")
            .unwrap_or_else(|| panic!("names the program as invoked: {line}"));
        assert!(rest.ends_with(&at), "{line}");
        assert!(!line.contains("cargo run"), "{line}");
    }
}

#[test]
fn version_names_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["-V", "--version"] {
        let (code, out, _) = zklock(&[flag], dir.path());
        assert_eq!(code, 0);
        let commit = zklock_checker::ZKLOCK_COMMIT;
        let want = match commit {
            "" => format!("zklock {}\n", env!("CARGO_PKG_VERSION")),
            c => format!("zklock {} (commit {c})\n", env!("CARGO_PKG_VERSION")),
        };
        assert_eq!(out, want);
    }
}

#[test]
fn flags_take_equals_and_typos_get_suggestions_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    // No subcommand: explore, with its flags, as `zklock explore`.
    let (code, out, err) = zklock(&["--seeds=2", "--threads=1", "--clients=2"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ok: every property held on every seed"),
        "{out}"
    );
    // The closing lines explain the counters that look like errors, and what to run next.
    assert!(
        out.contains("what the counters mean (none of them is an error):")
            && out.contains("\n  acquire failures (")
            && out.contains("\nnext: cargo run --release -- explore --for 10m"),
        "{out}"
    );
    let (code, _, err) = zklock(&["explor"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unrecognized subcommand 'explor'") && err.contains("'explore'"),
        "{err}"
    );
    let (code, _, err) = zklock(&["explore", "--seed", "3"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'--seeds'"), "suggests the flag: {err}");
    let (code, _, err) = zklock(&["check", "--clients", "two"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--clients"), "{err}");
    let (code, _, err) = zklock(&["check", "--clients", "5"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--clients must be 1 to 4"), "{err}");
    let (code, _, err) = zklock(&["explore", "--clients", "0"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--clients must be between 1 and 64"), "{err}");
}

/// Arguments that are not UTF-8 made `std::env::args()` panic (exit 134).
#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_a_clear_error_not_a_panic() {
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let path = OsString::from_vec(b"/nonexistent/\xff.json".to_vec());
    let (code, out, err) = zklock(&[OsString::from("replay"), path.clone()], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(".json") && err.contains("os error 2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let recipe = OsString::from_vec(b"\xff".to_vec());
    let (code, _, err) = zklock(
        &[OsString::from("explore"), "--recipe".into(), recipe],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A path that is not UTF-8 works where it exists.
    let (trace_path, _) = passing_trace(dir.path(), "t.json");
    let odd = dir.path().join(OsString::from_vec(b"t\xff.json".to_vec()));
    std::fs::copy(&trace_path, &odd).unwrap();
    let (code, out, err) = zklock(&[OsString::from("replay"), odd.into()], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("replay: identical history"), "{out}");
}

#[test]
fn bad_input_exits_2_and_unknown_recipes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        "{\"format_version\": 1, \"seed\": ",
    )
    .unwrap();
    let (code, _, err) = zklock(&["replay", "bad.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.json"), "{err}");
    let (code, _, err) = zklock(&["shrink", "bad.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = zklock(&["explore", "--recipe", "nope"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\"nope\" is not a recipe") && err.contains("it knows zklock"),
        "{err}"
    );
    let (code, _, err) = zklock(&["check", "--recipe", "nope"], dir.path());
    assert_eq!(code, 2, "{err}");
    // A trace of a recipe this command does not have.
    let (_, mut trace) = passing_trace(dir.path(), "t.json");
    trace.recipe = "someone-elses".into();
    trace.write(&dir.path().join("other.json")).unwrap();
    for sub in ["replay", "shrink"] {
        let (code, _, err) = zklock(&[sub, "other.json"], dir.path());
        assert_eq!(code, 2, "{sub}: {err}");
        assert!(
            err.contains("recorded with recipe \"someone-elses\"") && err.contains("zklock"),
            "{sub}: {err}"
        );
    }
    // A trace that violates nothing cannot be shrunk.
    let (code, _, err) = zklock(&["shrink", "t.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = zklock(&["recipes"], dir.path());
    assert_eq!(code, 0);
    // The shipped lock first, then the canaries the binary registers too.
    let first = out.lines().next().unwrap_or("");
    assert!(
        first.starts_with("zklock ")
            && first
                .ends_with("zklock's lock: exclusive, or read/write when the scenario has readers"),
        "{out}"
    );
    assert!(out.contains("\ncanary-watch-parent "), "{out}");
}

#[test]
fn an_incomplete_check_exits_3_and_a_complete_one_0() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["check", "--clients", "2", "--schedules-max", "20"];
    let (code, out, _) = zklock(&args, dir.path());
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("incomplete: every property held on the 20"),
        "{out}"
    );
    // Where it stopped is lost without a checkpoint: the output says how to keep it.
    assert!(
        out.contains("or add --checkpoint FILE to keep where it stops and resume from there"),
        "{out}"
    );
    let (code, out, _) = zklock(&["check", "--clients=1", "--faults-max=0"], dir.path());
    assert_eq!(code, 0, "{out}");
}

/// A check stopped by its schedule limit writes its checkpoint, and the same command
/// resumes it until it completes with the counts of the check run in one go; a damaged
/// or foreign checkpoint is refused with status 2 and left as it is.
#[test]
fn a_check_in_parts_through_its_checkpoint_ends_as_one_run_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    let check = ["check", "--clients", "2", "--faults-max", "0"];
    // One thread, in one go and in parts, for the same counts of schedules.
    let whole_args: Vec<&str> = check.iter().copied().chain(["--threads", "1"]).collect();
    let (code, whole, _) = zklock(&whole_args, dir.path());
    assert_eq!(code, 0, "{whole}");
    let counts = |out: &str| {
        let line = out.lines().find(|l| l.starts_with("recipe ")).unwrap();
        line.split(": ")
            .nth(1)
            .unwrap()
            .split(", ")
            .take(3)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let parts: Vec<&str> = check
        .iter()
        .copied()
        .chain([
            "--schedules-max",
            "20",
            "--checkpoint",
            "c.ckpt",
            "--threads",
            "1",
        ])
        .collect();
    let mut stops = 0;
    let last = loop {
        let (code, out, err) = zklock(&parts, dir.path());
        if code == 0 {
            break out;
        }
        assert_eq!(code, 3, "{out}{err}");
        assert!(out.contains("checkpoint: c.ckpt"), "{out}");
        assert!(
            out.contains("the same command resumes from the checkpoint"),
            "{out}"
        );
        assert!(!out.contains("add --checkpoint"), "{out}");
        stops += 1;
        assert!(stops < 1000, "{out}");
    };
    assert!(stops >= 2, "{last}");
    assert!(last.contains("resumed after "), "{last}");
    assert_eq!(counts(&last), counts(&whole));
    let checkpoint = dir.path().join("c.ckpt");
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    let foreign = [
        "check",
        "--clients",
        "3",
        "--faults-max",
        "0",
        "--checkpoint",
        "c.ckpt",
    ];
    let (code, _, err) = zklock(&foreign, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("another check") && err.contains("clients=2"),
        "{err}"
    );
    let n = bytes.len() / 2;
    bytes[n] ^= 1;
    std::fs::write(&checkpoint, &bytes).unwrap();
    let (code, _, err) = zklock(&parts, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("checksum"), "{err}");
    assert_eq!(std::fs::read(&checkpoint).unwrap(), bytes, "left as it was");
}

/// The replay used to say only that the history differs, and blamed "the recipe or
/// zklock" whatever the cause: it now names the first event where the two part, exits 1,
/// and says what the trace's own choices tell.
#[test]
fn a_replay_that_differs_exits_1_and_names_the_first_differing_event() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = passing_trace(dir.path(), "t.json");

    // The recorded history edited at event 5.
    let mut edited = trace.clone();
    edited.history.events[5].time_us += 1;
    edited.write(&dir.path().join("edited.json")).unwrap();
    let (code, out, _) = zklock(&["replay", "edited.json"], dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("they part at event #5"), "{out}");
    assert!(
        out.contains("\n  recorded: ") && out.contains("\n  replayed: "),
        "{out}"
    );
    assert!(
        out.contains("every recorded choice was used as recorded"),
        "{out}"
    );

    // Recorded choices out of range (some choices offer more than 1000 options, so not
    // every one is): the trace is at fault, and is blamed.
    let mut altered = trace.clone();
    let i = altered.choices.len() / 2;
    altered.choices[i..].iter_mut().for_each(|c| *c = 1000);
    altered.write(&dir.path().join("altered.json")).unwrap();
    let (code, out, _) = zklock(&["replay", "altered.json"], dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("they part at event #"), "{out}");
    assert!(
        out.contains("the trace's choices do not fit this run")
            && out.contains(", is 1000 where the run offered"),
        "{out}"
    );
    assert!(!out.contains("recipe or zklock"), "{out}");

    // The choices cut short: the run asks past the list.
    let mut cut = trace.clone();
    cut.choices.truncate(cut.choices.len() / 3);
    cut.write(&dir.path().join("cut.json")).unwrap();
    let (code, out, _) = zklock(&["replay", "cut.json"], dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("the run asked for more choices than the trace records"),
        "{out}"
    );
}

/// A replay stopped at its virtual time limit printed "all properties hold", named
/// `SimConfig::time_limit_ms`, which no user can set, and exited 1 without a word.
#[test]
fn a_replay_stopped_at_its_time_limit_says_so_and_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut trace) = passing_trace(dir.path(), "t.json");
    trace.scenario.time_limit_ms = 40;
    trace.write(&dir.path().join("short.json")).unwrap();
    let (code, out, _) = zklock(&["replay", "short.json"], dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("the run stopped at the virtual time limit of 40 ms")
            && out.contains("raise scenario.time_limit_ms in the trace file")
            && out.contains("FAILED: the run did not finish"),
        "{out}"
    );
    assert!(!out.contains("SimConfig"), "{out}");
}

/// A run that got stuck (a waiter never woken) printed "FAILED liveness_after_heal
/// (stuck)" and then, as its report's headline, "all properties hold".
#[test]
fn a_stuck_run_is_never_reported_as_all_properties_hold() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explore",
        "--recipe",
        "canary-lost-wakeup",
        "--strategy",
        "uniform",
        "--seeds",
        "2",
        "--no-shrink",
    ];
    let (code, out, _) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAILED liveness_after_heal (stuck)"), "{out}");
    assert!(
        out.contains("VIOLATED: liveness_after_heal: the run did not finish (simulation stuck"),
        "{out}"
    );
    assert!(!out.contains("all properties hold"), "{out}");
}

/// A stuck run printed `VIOLATED: liveness_after_heal` as its headline, then
/// `eventually: liveness_after_heal: ok` in its list of properties (the README tour's
/// steps 2 and 3): the report, its replay and the trace's saved report never contradict
/// themselves.
#[test]
fn a_stuck_run_never_lists_liveness_after_heal_as_ok() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explore",
        "--recipe",
        "canary-lost-wakeup",
        "--strategy",
        "uniform",
        "--seeds",
        "2",
        "--no-shrink",
    ];
    let (code, out, _) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}");
    let path = out
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .expect("a trace");
    let (code, replayed, _) = zklock(&["replay", path], dir.path());
    assert_eq!(code, 1, "{replayed}");
    let saved = Trace::read(&dir.path().join(path)).unwrap();
    let saved = saved.report.expect("a saved report").text;
    for text in [&out, &replayed, &saved] {
        assert!(text.contains("VIOLATED: liveness_after_heal"), "{text}");
        assert!(!text.contains("liveness_after_heal: ok"), "{text}");
        assert!(
            text.contains("eventually: liveness_after_heal: VIOLATED: the run did not finish"),
            "{text}"
        );
    }
}

#[test]
fn merge_refuses_a_summary_given_twice_and_names_missing_shards() {
    let dir = tempfile::tempdir().unwrap();
    for k in 1..=2 {
        let shard = format!("{k}/3");
        let summary = format!("s{k}.json");
        let args = [
            "explore",
            "--seeds",
            "3",
            "--clients",
            "2",
            "--threads",
            "1",
            "--shard",
            &shard,
            "--summary",
            &summary,
        ];
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, _, err) = zklock(&["merge", "s1.json", "./s1.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("given twice"), "{err}");
    std::fs::copy(dir.path().join("s1.json"), dir.path().join("copy.json")).unwrap();
    let (code, _, err) = zklock(&["merge", "s1.json", "copy.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("copy.json: shard 1/3 again (also in s1.json)"),
        "{err}"
    );
    let (code, out, _) = zklock(&["merge", "s2.json", "s1.json"], dir.path());
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("shard 3/3: all its 1 seeds (no summary of it given)"),
        "{out}"
    );
    // A summary written before the range was recorded is read, and said to be unchecked.
    let s1: Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s1.json")).unwrap())
            .unwrap();
    let mut old = serde_json::to_value(&s1).unwrap();
    old.as_object_mut().unwrap().remove("range").unwrap();
    std::fs::write(dir.path().join("old.json"), old.to_string()).unwrap();
    let (code, out, _) = zklock(&["merge", "old.json"], dir.path());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("old.json record no seed range"), "{out}");
}

/// An interrupted or time-limited shard merged to "ok: every property held on every seed
/// of every shard" with exit status 0: a cancelled CI job made a green build. Each shard
/// here is given a billion seeds and one second, so it stops by its time limit, certainly
/// before its last seed; a summary records the seeds it ran, and the merge names the
/// ones that none ran, with exit status 3.
#[test]
fn merge_of_an_interrupted_or_time_limited_shard_is_never_green() {
    let dir = tempfile::tempdir().unwrap();
    for k in 1..=2 {
        let (shard, summary) = (format!("{k}/2"), format!("s{k}.json"));
        let args = [
            "explore",
            "--seeds",
            "1000000000",
            "--clients",
            "2",
            "--time-limit-s",
            "1",
            "--shard",
            &shard,
            "--summary",
            &summary,
        ];
        let (code, out, err) = zklock(&args, dir.path());
        // A sweep cut short is no pass either.
        assert_eq!(code, 3, "{out}{err}");
        assert!(out.contains("inconclusive: "), "{out}");
        let s: Summary =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(&summary)).unwrap())
                .unwrap();
        assert!(s.stopped_by_time, "{s:?}");
        let range = s.range.expect("the seeds it was given");
        assert_eq!((range.seeds, range.shard_index), (1_000_000_000, k - 1));
        if s.seeds_run > 0 {
            let ran = s.ran.expect("the seeds it ran");
            assert_eq!(ran.first, k - 1);
            assert_eq!(ran.last, k - 1 + 2 * (s.seeds_run - 1));
        }
    }
    let (code, out, err) = zklock(&["merge", "s1.json", "s2.json"], dir.path());
    assert_eq!(code, 3, "{out}{err}");
    assert!(!out.contains("ok: every property held"), "{out}");
    assert!(out.contains("incomplete: "), "{out}");
    assert!(out.contains("shard 1/2 (s1.json): "), "{out}");
    assert!(out.contains("shard 2/2 (s2.json): "), "{out}");
    assert!(out.contains("seed % 2 == 1"), "{out}");
    // An interrupted summary of an older zklock, which records no seeds: still not green.
    let s1: Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s1.json")).unwrap())
            .unwrap();
    let mut old = serde_json::to_value(&s1).unwrap();
    let o = old.as_object_mut().unwrap();
    o.remove("range").unwrap();
    o.remove("ran");
    o.insert("stopped_by_time".into(), false.into());
    o.insert("interrupted".into(), true.into());
    std::fs::write(dir.path().join("old.json"), old.to_string()).unwrap();
    let (code, out, _) = zklock(&["merge", "old.json"], dir.path());
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("old.json: "), "{out}");
    assert!(out.contains("then interrupted"), "{out}");
    // A record of the seeds run that does not fit the seeds given is refused.
    let mut edited = serde_json::to_value(&s1).unwrap();
    edited["seeds_run"] = (s1.seeds_run + 1).into();
    std::fs::write(dir.path().join("edited.json"), edited.to_string()).unwrap();
    let (code, _, err) = zklock(&["merge", "edited.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("damaged or edited"), "{err}");
}

/// Flags that do not apply to the chosen recipe were taken and ignored (`real --items 5`
/// on a lock; `explore --recipe queue --drop-every 2`): each is refused, naming itself,
/// with exit status 2, before anything runs.
#[test]
fn flags_that_do_not_apply_to_the_recipe_are_refused_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["explore", "--recipe", "queue", "--drop-every", "2"][..],
            "--drop-every does not apply to the work queue queue",
        ),
        (
            &["explore", "--recipe", "queue-naive", "--readers", "1"],
            "--readers does not apply",
        ),
        (
            &["explore", "--recipe", "queue", "--mix-offset", "1"],
            "--mix-offset does not apply",
        ),
        (
            &["explore", "--recipe", "queue", "--locks", "2"],
            "--locks does not apply",
        ),
        (
            &["explore", "--recipe", "semaphore", "--readers", "1"],
            "--readers does not apply to the semaphore",
        ),
        (
            &["check", "--recipe", "semaphore", "--readers", "1"],
            "--readers does not apply to the semaphore",
        ),
        (
            &["check", "--recipe", "queue", "--locks", "2"],
            "--locks does not apply",
        ),
        (
            &["check", "--recipe", "queue", "--modes", "try"],
            "--modes does not apply",
        ),
        (
            &["check", "--recipe", "queue", "--counts", "chosen"],
            "--counts does not apply",
        ),
        (
            &["check", "--recipe", "queue", "--shapes", "all"],
            "--shapes all does not apply",
        ),
        (
            &["real", "--items", "5"],
            "--items does not apply to the zklock recipe",
        ),
        (
            &["real", "--container-check-interval-ms", "0"],
            "0 is not a whole number from 1 to 2147483647",
        ),
        (
            &["search", "--container-check-interval-ms", "2147483648"],
            "2147483648 is not a whole number from 1 to 2147483647",
        ),
        (
            &[
                "real",
                "--connect",
                "127.0.0.1:1",
                "--container-check-interval-ms",
                "50",
            ],
            "cannot be used with",
        ),
        (
            &["real", "--recipe", "queue", "--drop-every", "2"],
            "--drop-every does not apply",
        ),
    ] {
        let (code, out, err) = zklock(args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Where they apply, they are taken.
    let (code, out, err) = zklock(
        &[
            "explore",
            "--recipe",
            "queue",
            "--seeds",
            "1",
            "--acquisitions",
            "2",
            "--hold-ms",
            "5",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
}

/// `--out` naming an existing file was refused only after the sweep had found its
/// violation: exit status 2, and the trace lost. Every output path is checked before the
/// run; a run that found a violation exits 1 with its trace written.
#[test]
fn output_paths_are_checked_before_the_run_and_a_violation_keeps_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let canary = [
        "explore",
        "--recipe",
        "canary-lost-wakeup",
        "--strategy",
        "uniform",
        "--seeds",
        "2",
        "--no-shrink",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        canary.iter().chain(extra).copied().collect()
    };
    for (args, says) in [
        (
            with(&["--out", "file"]),
            "--out file: it is a file, not a directory",
        ),
        (
            with(&["--out", "file/deeper"]),
            "file is a file, so the directory cannot be created",
        ),
        (
            with(&["--summary", "gone/s.json"]),
            "the directory gone does not exist",
        ),
        (with(&["--summary", "sub", "--force"]), "sub is a directory"),
        (with(&["--summary", "file"]), "file exists already"),
        (
            vec![
                "check",
                "--recipe",
                "canary-lost-wakeup",
                "--clients",
                "2",
                "--out",
                "file",
            ],
            "--out file: it is a file",
        ),
        (vec!["real", "--out", "file"], "--out file: it is a file"),
    ] {
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        // Refused before anything ran.
        assert!(!out.contains("FAILED"), "{args:?}: {out}");
    }
    // The same sweep with a good --out exits 1, its trace written.
    let (code, out, err) = zklock(&with(&["--out", "sub/traces"]), dir.path());
    assert_eq!(code, 1, "{out}{err}");
    let path = out
        .lines()
        .find_map(|l| l.strip_prefix("trace: "))
        .expect("a trace line");
    assert!(Trace::read(&dir.path().join(path)).is_ok(), "{path}");
    // A replay's --save is checked before the replay too.
    let (code, out, err) = zklock(&["replay", path, "--save", path], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("exists already"), "{err}");
    assert!(!out.contains("FAILED"), "{out}");
}

/// A shrunk trace's titles (its text timeline's header and its page's title) named only
/// its own seed, which a fresh seed of the shrink may have replaced: they name the seed
/// it was shrunk from too. And `--faults none` is taken by explore, as by real.
#[test]
fn a_shrunk_traces_title_names_the_seed_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    // Under uniform, whose first failing seed of this canary is seed 1.
    let args = [
        "explore",
        "--recipe",
        "canary-lost-wakeup",
        "--strategy",
        "uniform",
        "--seeds",
        "2",
    ];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}{err}");
    let min = out
        .lines()
        .find_map(|l| l.strip_prefix("shrunk trace: "))
        .and_then(|l| l.split(' ').next())
        .expect("a shrunk trace");
    let trace = Trace::read(&dir.path().join(min)).unwrap();
    assert_eq!(trace.shrunk_from, Some(1));
    let words = format!("seed {}, shrunk from seed 1", trace.seed);
    let text = std::fs::read_to_string(Trace::timeline_path(&dir.path().join(min))).unwrap();
    assert!(text.lines().next().unwrap().contains(&words), "{text}");
    let page = std::fs::read_to_string(Trace::html_path(&dir.path().join(min))).unwrap();
    assert!(page.contains(&format!(
        "<title>zklock timeline: recipe canary-lost-wakeup, {words}</title>"
    )));
    let (code, out, err) = zklock(
        &[
            "explore",
            "--seeds",
            "1",
            "--clients",
            "2",
            "--faults",
            "none",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("faults of no kind (--faults none)"), "{out}");
    let (code, out, err) = zklock(
        &[
            "check",
            "--clients",
            "1",
            "--faults-max",
            "1",
            "--faults",
            "none",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
}

/// Every `real --connect` run, clean or killed, left `/zklock/real-<ms>/lock` on the
/// user's server. A run removes what it created; `--clean` removes what a killed run
/// left (here, a tree made as a killed run would leave it).
#[test]
fn real_connect_removes_what_it_created_and_clean_removes_what_killed_runs_left() {
    use zklock_real::ZkClient;
    use zklock_real::harness::TestServer;
    use zklock_recipe::{Coordination, CreateMode};
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let server = TestServer::start().expect("ZooKeeper server starts");
    let addr = server.connect_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let zk = rt
        .block_on(ZkClient::connect(&addr, 10_000, 10_000))
        .unwrap();
    let runs = || -> Vec<String> {
        rt.block_on(zk.get_children("/zklock"))
            .map(|c| c.iter().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "real",
        "--connect",
        &addr,
        "--clients",
        "2",
        "--duration",
        "2s",
        "--faults",
        "none",
    ];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("removed from "), "{out}");
    assert_eq!(runs(), Vec::<String>::new(), "{out}");
    // What a run killed mid-way leaves: its directories, and a lock node.
    for path in [
        "/zklock/real-7",
        "/zklock/real-7/lock",
        "/zklock/real-7/lock/x-0000000001",
    ] {
        rt.block_on(zk.create(path, b"", CreateMode::Persistent))
            .unwrap();
    }
    assert_eq!(runs(), ["real-7"]);
    let (code, out, err) = zklock(&["real", "--connect", &addr, "--clean"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("/zklock/real-7 (3 nodes)"), "{out}");
    assert_eq!(runs(), Vec::<String>::new());
    // --clean runs nothing: a run's flags beside it are refused.
    let (code, _, err) = zklock(
        &["real", "--connect", &addr, "--clean", "--duration", "5s"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--duration does not apply to --clean"),
        "{err}"
    );
}

/// A driver stopped by a pause fault (SIGSTOP) outlived a SIGKILL of zklock, stopped and
/// without a parent, for good. Here zklock is killed once one of its Curator drivers is
/// stopped (read from /proc: the run's only faults are pauses, the first within a second
/// of its start), and that driver must be gone. The deadlines only a hang reaches.
#[cfg(target_os = "linux")]
#[test]
fn no_driver_outlives_zklock_killed_during_a_pause() {
    use std::process::Stdio;
    use std::time::Instant;
    if !driver_ready(zklock_real::driver::DriverKind::CuratorMutex, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args([
            "real",
            "--lock",
            "curator-mutex",
            "--clients",
            "2",
            "--duration",
            "60s",
            "--faults",
            "pause",
            "--seed",
            "1",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let state = |p: &str| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // After the command's name in parentheses: the state.
        Some(stat.rsplit_once(") ")?.1.split(' ').next()?.to_owned())
    };
    // Children of every thread of zklock: the drivers (and the server's JVM).
    let children = || -> Vec<String> {
        let mut all = Vec::new();
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
        {
            let path = t.unwrap().path().join("children");
            let text = std::fs::read_to_string(path).unwrap_or_default();
            all.extend(text.split_whitespace().map(str::to_owned));
        }
        all
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    let stopped = loop {
        if let Some(p) = children()
            .into_iter()
            .find(|c| state(c).as_deref() == Some("T"))
        {
            break p;
        }
        assert!(Instant::now() < deadline, "no driver was ever paused");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Gone, or a zombie its new parent has yet to reap.
    while state(&stopped).is_some_and(|s| s != "Z") {
        assert!(
            Instant::now() < deadline,
            "driver {stopped} outlived zklock, in state {:?}",
            state(&stopped)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = zklock(&["completions", shell], dir.path());
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            out.contains("zklock") && out.contains("explore") && out.contains("--recipe"),
            "{shell}: {out}"
        );
    }
    let (code, _, err) = zklock(&["completions", "tcsh"], dir.path());
    assert_eq!(code, 2, "{err}");
}

/// `--summary` replaced an existing file without a word.
#[test]
fn an_existing_summary_is_refused_without_force() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), "mine").unwrap();
    let args = ["--seeds", "1", "--clients", "2", "--summary", "s.json"];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("s.json exists already") && err.contains("--force"),
        "{err}"
    );
    assert!(
        !out.contains("seeds run"),
        "refused before the sweep: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s.json")).unwrap(),
        "mine"
    );
    let forced = [&args[..], &["--force"]].concat();
    let (code, out, err) = zklock(&forced, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(dir.path().join("s.json")).unwrap();
    assert!(text.contains("\"seeds_run\": 1"), "{text}");
}

#[test]
fn timeline_draws_a_trace_and_refuses_an_existing_page_or_a_bad_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (path, trace) = passing_trace(dir.path(), "run.json");
    let page = dir.path().join("run.html");
    let (code, out, err) = zklock(&["timeline", "run.json", "-o", "run.html"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        trace.timeline_html()
    );
    // An existing page is kept, unless --force.
    std::fs::write(&page, "mine").unwrap();
    let (code, _, err) = zklock(&["timeline", "run.json", "-o", "run.html"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("run.html exists already") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "mine");
    let args = ["timeline", "run.json", "-o", "run.html", "--force"];
    assert_eq!(zklock(&args, dir.path()).0, 0);
    assert_eq!(
        std::fs::read_to_string(&page).unwrap(),
        trace.timeline_html()
    );
    // Without -o the page goes beside the trace, where writing the trace put one already.
    let (code, _, err) = zklock(&["timeline", "run.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("run.json.timeline.html exists already"),
        "{err}"
    );
    // Never the trace itself; a corrupt or missing trace is named.
    let (code, _, err) = zklock(&["timeline", "run.json", "-o", "run.json"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is the trace itself"), "{err}");
    assert!(Trace::read(&path).is_ok());
    std::fs::write(
        dir.path().join("bad.json"),
        "{\"format_version\": 2, \"seed\"",
    )
    .unwrap();
    let (code, _, err) = zklock(&["timeline", "bad.json", "-o", "bad.html"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.json is truncated"), "{err}");
    assert!(!dir.path().join("bad.html").exists());
    let (code, _, err) = zklock(&["timeline", "none.json", "-o", "none.html"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("none.json"), "{err}");
}

#[test]
fn replay_save_writes_the_replayed_run_with_its_report_refusing_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, trace) = passing_trace(dir.path(), "run.json");
    let args = ["replay", "run.json", "--save", "new.json"];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let saved = Trace::read(&dir.path().join("new.json")).unwrap();
    assert_eq!(saved.history, trace.history);
    assert_eq!(saved.choices, trace.choices);
    assert!(saved.report.as_ref().is_some_and(|r| r.violated.is_empty()));
    assert!(Trace::html_path(&dir.path().join("new.json")).exists());
    let (code, _, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("new.json exists already"), "{err}");
}

/// A recipe of the user's own, through the library entry point: a violation exits 1,
/// its trace names the recipe so that replay and shrink find it, a second failure of
/// the same seed is written beside the first, and an existing shrunk trace is kept.
#[test]
fn a_registered_recipe_goes_through_explore_replay_and_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("failures");
    let recipes = with_no_lock();
    let explore = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"explore",
            &"--recipe",
            &"no-lock",
            &"--seeds",
            &"3",
            &"--clients",
            &"2",
            &"--acquisitions",
            &"2",
            &"--threads",
            &"1",
            &"--no-shrink",
            &"--out",
            &out,
        ];
        args.extend_from_slice(extra);
        run_in_process(&recipes, &args)
    };
    assert_eq!(explore(&[]), Status::Violated);
    let first = out.join("seed-0.json");
    let trace = Trace::read(&first).unwrap();
    assert_eq!(trace.recipe, "no-lock");
    assert_eq!(trace.violation.as_deref(), Some("mutual_exclusion"));
    let bytes = std::fs::read(&first).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&out), 0o700);
        assert_eq!(mode(&first), 0o600);
        assert_eq!(mode(&Trace::timeline_path(&first)), 0o600);
    }
    // The same failure again: written beside, the first kept as it was.
    assert_eq!(explore(&[]), Status::Violated);
    assert_eq!(std::fs::read(&first).unwrap(), bytes);
    assert!(out.join("seed-0-2.json").exists());
    assert!(Trace::timeline_path(&out.join("seed-0-2.json")).exists());
    // Unless told to replace it.
    assert_eq!(explore(&[&"--force"]), Status::Violated);
    assert!(!out.join("seed-0-3.json").exists());

    assert_eq!(
        run_in_process(&recipes, &[&"replay", &first]),
        Status::Violated
    );
    // Without the recipe registered, the trace is bad input.
    assert_eq!(
        run_in_process(&Recipes::shipped(), &[&"replay", &first]),
        Status::BadInput
    );
    let min = out.join("seed-0.min.json");
    let shrink = [
        &"shrink" as &dyn AsRef<std::ffi::OsStr>,
        &first,
        &"--time-limit-s",
        &"30",
    ];
    assert_eq!(run_in_process(&recipes, &shrink), Status::Held);
    assert_eq!(
        Trace::read(&min).unwrap().violation.as_deref(),
        Some("mutual_exclusion")
    );
    std::fs::write(&min, "mine").unwrap();
    assert_eq!(run_in_process(&recipes, &shrink), Status::BadInput);
    assert_eq!(std::fs::read_to_string(&min).unwrap(), "mine");
    let forced = [&shrink[..], &[&"--force" as &dyn AsRef<std::ffi::OsStr>]].concat();
    assert_eq!(run_in_process(&recipes, &forced), Status::Held);
    assert!(Trace::read(&min).is_ok());

    // check takes --recipe too, and finds the violation.
    let check = [
        &"check" as &dyn AsRef<std::ffi::OsStr>,
        &"--recipe",
        &"no-lock",
        &"--faults-max",
        &"0",
        &"--out",
        &out,
    ];
    assert_eq!(run_in_process(&recipes, &check), Status::Violated);
}

/// Ctrl-C during a long sweep once lost the run: now the sweep stops starting seeds,
/// judges and reports the ones that ran, says it was interrupted, and exits 3
/// (inconclusive). The signal is sent once the process has installed its handler (read
/// from /proc), so the test waits for an event, not for a time.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_during_a_sweep_keeps_the_verdict_of_what_ran() {
    use std::process::Stdio;
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args([
            "explore",
            "--seeds",
            "100000000",
            "--threads",
            "1",
            "--no-shrink",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // SigCgt: the signals the process catches; SIGINT is bit 1.
    let catches_sigint = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("SigCgt:"))?.to_owned();
                u64::from_str_radix(line.trim_start_matches("SigCgt:").trim(), 16).ok()
            })
            .is_some_and(|mask| mask & 0b10 != 0)
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !catches_sigint() {
        assert!(Instant::now() < deadline, "the handler was never installed");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    // Seeds that ran were judged ("every property held on the N seeds run"), unless the
    // signal came before the first one finished.
    assert!(stdout.contains("interrupted"), "{stdout}");
    assert!(stdout.contains("inconclusive: "), "{stdout}");
    assert!(stderr.contains("Ctrl-C again to exit at once"), "{stderr}");
}

/// GNU `timeout -s INT` signals the process and then its process group, microseconds
/// apart: the two counted as a second Ctrl-C, and the sweep exited 130 with no report.
/// Two SIGINTs back to back are one interrupt: the sweep reports and exits 3.
#[cfg(target_os = "linux")]
#[test]
fn two_interrupts_back_to_back_are_counted_once() {
    use std::process::Stdio;
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args([
            "explore",
            "--seeds",
            "100000000",
            "--threads",
            "1",
            "--no-shrink",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let catches_sigint = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("SigCgt:"))?.to_owned();
                u64::from_str_radix(line.trim_start_matches("SigCgt:").trim(), 16).ok()
            })
            .is_some_and(|mask| mask & 0b10 != 0)
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !catches_sigint() {
        assert!(Instant::now() < deadline, "the handler was never installed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // One kill, two signals: as timeout sends them.
    let sent = Command::new("kill")
        .args(["-INT", &pid, &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("inconclusive: "), "{stdout}");
}

/// A lock whose every acquire fails, as one that never creates its directory's parents.
struct NeverLock;

impl LockUnderTest for NeverLock {
    type Guard = ();
    async fn acquire(&self) -> Result<(), String> {
        Err("no node".into())
    }
    async fn acquire_timeout(&self, _: Duration) -> Result<Option<()>, String> {
        Err("no node".into())
    }
    fn token(&self, _: &()) -> i64 {
        0
    }
    fn node(&self, _: &()) -> String {
        "none".into()
    }
    async fn lost(&self, _: &()) -> String {
        std::future::pending().await
    }
    async fn release(&self, _: ()) -> Result<(), String> {
        Ok(())
    }
}

struct NeverRecipe;

impl Recipe for NeverRecipe {
    type Lock = NeverLock;
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> NeverLock {
        NeverLock
    }
}

/// The shipped recipes and `careful-lock`, a [`NeverRecipe`].
fn with_careful_lock() -> Recipes {
    let mut recipes = Recipes::shipped();
    recipes
        .register("careful-lock", "never acquires", NeverRecipe)
        .unwrap();
    recipes
}

/// `check --recipe careful-lock --clients 2 --faults-max 1 --out OUT`, then `more`.
fn check_careful_lock(
    recipes: &Recipes,
    out: &Path,
    more: &[&dyn AsRef<std::ffi::OsStr>],
) -> Status {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"check",
        &"--recipe",
        &"careful-lock",
        &"--clients",
        &"2",
        &"--faults-max",
        &"1",
        &"--out",
        &out,
    ];
    args.extend_from_slice(more);
    run_in_process(recipes, &args)
}

/// `my-cli check --recipe careful-lock --clients 2 --faults-max 1` on a lock that never
/// acquires printed "ok: every property held on every schedule" and exited 0. Every
/// entry point now says inconclusive (exit 3), as explore did.
#[test]
fn a_lock_that_never_acquires_is_inconclusive_in_check_and_explore() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let recipes = with_careful_lock();
    assert_eq!(
        check_careful_lock(&recipes, &out, &[]),
        Status::Inconclusive
    );
    let explore = [
        &"explore" as &dyn AsRef<std::ffi::OsStr>,
        &"--recipe",
        &"careful-lock",
        &"--seeds",
        &"3",
        &"--out",
        &out,
    ];
    assert_eq!(run_in_process(&recipes, &explore), Status::Inconclusive);
    // Split into shards, each may pass its part; their merge judges the whole check.
    let summaries: Vec<_> = (1..=2)
        .map(|k| dir.path().join(format!("s-{k}.json")))
        .collect();
    for (k, summary) in (1..=2).zip(&summaries) {
        let shard = format!("{k}/2");
        let more = [
            &"--shard" as &dyn AsRef<std::ffi::OsStr>,
            &shard,
            &"--summary",
            summary,
        ];
        assert_ne!(check_careful_lock(&recipes, &out, &more), Status::Violated);
    }
    let merge = [
        &"merge" as &dyn AsRef<std::ffi::OsStr>,
        &summaries[0],
        &summaries[1],
    ];
    assert_eq!(run_in_process(&recipes, &merge), Status::Inconclusive);
    // Stopped by its bound and resumed from its checkpoint, the check is judged on the
    // whole of it, as in one go: the checkpoint carries the counts of the part before.
    let checkpoint = dir.path().join("check.ckpt");
    let part = |schedules_max: &'static str| {
        let more = [
            &"--schedules-max" as &dyn AsRef<std::ffi::OsStr>,
            &schedules_max,
            &"--checkpoint",
            &checkpoint,
        ];
        check_careful_lock(&recipes, &out, &more)
    };
    assert_eq!(part("2"), Status::Inconclusive);
    assert!(checkpoint.exists(), "the stopped check kept its checkpoint");
    assert_eq!(part("1000000"), Status::Inconclusive);
}

/// A checkpoint of format 1 or 2, as an older zklock wrote it, carries no counts. A check
/// of a lock that never acquires, resumed from one, is judged on the schedules after it,
/// which acquired nothing: inconclusive, where it printed "ok" while a missing count was
/// taken as nothing to judge. Format 1 (one thread's work) is written here; format 2 (a
/// list of subtrees) differs only in how the work is encoded, and how many subtrees a
/// stopped two-thread check leaves depends on its threads' timing.
#[test]
fn a_check_resumed_from_a_checkpoint_without_counts_is_judged_on_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let recipes = with_careful_lock();
    let checkpoint = dir.path().join("check.ckpt");
    let part = |schedules_max: &'static str| {
        let more = [
            &"--threads" as &dyn AsRef<std::ffi::OsStr>,
            &"1",
            &"--schedules-max",
            &schedules_max,
            &"--checkpoint",
            &checkpoint,
        ];
        check_careful_lock(&recipes, &out, &more)
    };
    assert_eq!(part("2"), Status::Inconclusive);
    // Written again without its counts, it is the older format.
    let mut c =
        zklock_checker::Checkpoint::from_bytes(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert!(c.exercised.is_some(), "this zklock writes the counts");
    c.exercised = None;
    let old = c.to_bytes();
    let at = zklock_checker::checkpoint::CHECKPOINT_MAGIC.len();
    assert_eq!(u32::from_le_bytes(old[at..at + 4].try_into().unwrap()), 1);
    std::fs::write(&checkpoint, &old).unwrap();
    assert_eq!(part("1000000"), Status::Inconclusive);
}

/// `--connect` to a closed port waited out the client's 4 s connect timeout and then
/// suggested raising it: now it says "connection refused", at once, for a run and for
/// `--clean` alike.
#[test]
fn connect_to_a_closed_port_says_connection_refused() {
    let dir = tempfile::tempdir().unwrap();
    let closed_at = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    for args in [
        vec!["real", "--connect", &closed_at, "--duration", "1s"],
        vec!["real", "--connect", &closed_at, "--clean"],
    ] {
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("connection refused"), "{args:?}: {err}");
        assert!(err.contains(&closed_at), "{args:?}: {err}");
        assert!(!err.contains("timeout"), "{args:?}: {err}");
    }
}
