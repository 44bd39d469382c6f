//! `zklock search` on a real server: its points are scripted faults aimed at recorded
//! requests, so what it finds does not hang on a lucky timing. A canary whose release
//! forgets a dropped delete is found at that delete, and the `real` line it prints (naming
//! the program as the binary names itself) reproduces the violation; the shipped lock
//! passes the same search.

use super::zklock;
use std::path::Path;

/// The smallest script: one client, one blocking attempt, single strikes only, and no
/// workload shape (the shapes' test runs them).
pub(super) const SMALL: [&str; 12] = [
    "--shapes",
    "none",
    "--clients",
    "1",
    "--attempts",
    "1",
    "--drop-every",
    "0",
    "--repeat-next",
    "0",
    "--repeat-window-ms",
    "0",
];

/// Runs at once: a run mostly waits (on a session's expiry, a pause), so four servers
/// take about a quarter of one's time, on a loaded machine as on an idle one.
pub(super) const JOBS: [&str; 2] = ["--jobs", "4"];

/// Drops only: where a test is about what the search does with its points (a
/// reproduction line, a journal), not about which action breaks a lock. The shipped
/// lock's test searches every action.
pub(super) const DROPS: [&str; 2] = ["--actions", "drop-request"];

fn search(lock: &str, dir: &Path, more: &[&str]) -> (i32, String, String) {
    let mut args = vec!["search", "--lock", lock, "--out", "failures"];
    args.extend(SMALL);
    args.extend(JOBS);
    args.extend(more);
    zklock(&args, dir)
}

#[test]
fn the_search_finds_a_forgetful_release_at_its_dropped_delete_and_prints_its_reproduction() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = search("canary-forgetful-release", dir.path(), &DROPS);
    assert_eq!(code, 1, "{out}{err}");
    // Stuck behind the node it forgot, which also outlives its attempt.
    assert!(
        out.contains(
            "violated liveness_after_heal, node_outlives_attempt at \
             0:drop-request:delete:/zklock/lock/\n"
        ),
        "{out}"
    );
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.ends_with("--aim 0:drop-request:delete:/zklock/lock/"))
        .unwrap_or_else(|| panic!("no reproduction line for the dropped delete:\n{out}"));
    // The zklock binary names itself `cargo run --release --`, as in every command it prints.
    let line = line
        .strip_prefix("cargo run --release -- real ")
        .unwrap_or_else(|| panic!("names the program: {line}"));
    assert!(
        out.contains("timeline: failures/search-canary-forgetful-release-"),
        "{out}"
    );
    // The printed line, run as it is, violates the same property.
    let mut args: Vec<&str> = std::iter::once("real")
        .chain(line.split_whitespace())
        .collect();
    args.extend(["--out", "failures"]);
    let (code, again, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{again}{err}");
    assert!(again.contains("FAILED: liveness_after_heal"), "{again}");
}

/// The search alone, narrowed to give-ups (`--actions give-up`), finds Curator 5.4.0's
/// `InterProcessSemaphoreMutex` stuck: an acquire given up while it releases its inner
/// mutex (the delete under `locks/`) keeps its lease, which outlives the attempt while
/// its session lives (docs/libraries.md). One client, one attempt: the lease is found
/// without a contender.
#[test]
fn the_give_up_search_finds_curators_semaphore_mutex_keeping_a_given_up_lease() {
    use zklock_real::driver::DriverKind;
    if !super::driver_ready(DriverKind::CuratorSemaphoreMutex, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "search",
        "--lock",
        "curator-semaphore-mutex",
        "--actions",
        "give-up",
        "--out",
        "failures",
    ];
    args.extend(SMALL);
    args.extend(JOBS);
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("actions: give-up"), "{out}");
    assert!(
        out.contains(
            "violated liveness_after_heal, node_outlives_attempt at \
             0:give-up:delete:/zklock/lock/locks/\n"
        ),
        "{out}"
    );
    // Only give-ups were tried.
    for line in out.lines().filter(|l| l.starts_with("violated ")) {
        let aims = line.split(" at ").nth(1).unwrap_or("");
        assert!(
            aims.split(" then ").all(|a| a.contains(":give-up:")),
            "{line}"
        );
    }
}

/// A driver that breaks the protocol in one run (here a Python that prints a line of its
/// own before Kazoo's driver starts, as a JVM's warning on stdout once did) is judged
/// `driver_failed` at that point, and the search goes on, on a new server, to its limit.
#[cfg(unix)]
#[test]
fn a_driver_that_breaks_the_protocol_in_one_run_is_judged_driver_failed_and_the_search_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    use zklock_real::driver::DriverKind;
    if !super::driver_ready(DriverKind::KazooLock, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let launches = dir.path().join("launches");
    let python = dir.path().join("python");
    // A run of drops starts the driver script once per client: no spare is kept ready for
    // a next session, since no drop ends one. The third start is the second point's.
    let script = format!(
        "#!/bin/sh\n\
         case \"$*\" in *zklock_driver.py*)\n\
         n=$(cat '{0}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{0}'\n\
         [ \"$n\" = 3 ] && echo 'a warning of the interpreter, not a report' ;;\n\
         esac\n\
         exec /usr/bin/python3 \"$@\"\n",
        launches.display()
    );
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(["search", "--lock", "kazoo-lock", "--out", "failures"])
        .args(SMALL)
        .args(DROPS)
        // A process for every session, so that the starts count the runs.
        .args(["--jobs", "1", "--max-runs", "3", "--fresh-drivers"])
        .env("ZKLOCK_PYTHON", &python)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        text.matches("violated driver_failed at ").count(),
        1,
        "{text}"
    );
    // Three points ran: the search went on past the broken one.
    assert!(text.contains("| 3 (0) |"), "{text}");
    // The reference run and three points, one driver each.
    let launched = std::fs::read_to_string(&launches).unwrap();
    assert_eq!(launched.trim(), "4", "driver processes started");
}

#[test]
fn the_shipped_lock_passes_every_point_of_the_small_search() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = search("zklock", dir.path(), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("| zklock |"))
        .unwrap_or_else(|| panic!("no table row:\n{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | lock | requests seen | points tried (pairs) | struck | violations |
    let tried: u64 = cells[3].split(' ').next().unwrap().parse().unwrap();
    let struck: u64 = cells[4].parse().unwrap();
    assert!(tried >= 5, "at least every action at one request: {row}");
    assert!(struck > 0, "{row}");
    assert_eq!(cells[5], "none", "{row}");
}

#[test]
fn bad_search_arguments_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["search", "--k", "3"], "--k must be 0, 1 or 2"),
        (
            vec!["search", "--shapes", "crowd,herd"],
            "--shapes: unknown shape \"herd\"",
        ),
        (
            vec!["search", "--shapes", "none,crowd"],
            "none names no shape",
        ),
        (vec!["search", "--lock", "no-such-lock"], "--lock"),
        (vec!["search", "--lock", "queue"], "not a lock to search"),
        (vec!["search", "--attempts", "0"], "--attempts must be 1 to"),
        (vec!["search", "--clients", "9"], "--clients must be 1 to"),
        (
            vec!["search", "--lock", "kazoo-lock", "--readers", "1"],
            "has no read side",
        ),
        (
            vec!["search", "--readers", "3"],
            "--readers must be at most --clients",
        ),
        (
            vec!["search", "--lock", "curator-mutex", "--revokers", "1"],
            "--revokers: the lock curator-mutex cannot be asked to give up",
        ),
        (
            vec![
                "search",
                "--clients",
                "2",
                "--readers",
                "1",
                "--revokers",
                "1",
            ],
            "leave no writer",
        ),
        (
            vec!["search", "--actions", "give-up,fly"],
            "--actions: unknown action \"fly\"",
        ),
        (
            vec!["search", "--control-every", "100001"],
            "--control-every must be at most 100000",
        ),
    ] {
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A search stopped after 3 runs (`--max-runs`, as Ctrl-C stops it: 2 points and a
/// control run) keeps what ran in its journal; `--resume` takes the reference run and
/// those 3 runs from it, runs the rest (here 4 at once, each on a server of its own) and
/// ends where a whole search ends: every point and control run judged once, the first 3
/// not run again.
#[test]
fn a_stopped_search_resumes_from_its_journal_and_judges_each_point_once() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let base = ["search", "--lock", "zklock", "--out", "failures"];
    let with = |more: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(SMALL);
        args.extend(DROPS);
        args.extend(["--journal", "journal.jsonl"]);
        args.extend(more);
        zklock(&args, dir.path())
    };
    // A control run (the script without a fault) after every 2 points: the third run.
    let (code, out, err) = with(&["--jobs", "1", "--max-runs", "3", "--control-every", "2"]);
    assert_eq!(code, 3, "stopped, inconclusive: {out}{err}");
    assert!(out.contains("--journal journal.jsonl --resume"), "{out}");
    let first = std::fs::read_to_string(&journal).unwrap();
    let plans = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.get("plan").map(|p| p.as_str().unwrap().to_owned())
            })
            .collect()
    };
    assert_eq!(plans(&first).len(), 3, "{first}");
    assert_eq!(plans(&first)[2], "control:0", "{first}");
    // An existing journal is not overwritten.
    let (code, _, err) = with(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
    let (code, out, err) = with(&[JOBS[0], JOBS[1], "--resume", "--control-every", "2"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(2 points judged)"), "{out}");
    let all = std::fs::read_to_string(&journal).unwrap();
    assert!(
        all.starts_with(&first),
        "the saved results stay as they were"
    );
    let judged = plans(&all);
    let unique: std::collections::BTreeSet<&String> = judged.iter().collect();
    assert_eq!(
        unique.len(),
        judged.len(),
        "a point judged twice: {judged:?}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("| zklock |"))
        .unwrap_or_else(|| panic!("no table row:\n{out}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let tried: usize = cells[3].split(' ').next().unwrap().parse().unwrap();
    let controls = judged.iter().filter(|p| p.starts_with("control:")).count();
    assert_eq!(tried + controls, judged.len(), "{row}");
    assert!(tried > 3, "{row}");
    // One control run after every 2 points, the saved one among them, each judged once;
    // the shipped lock holds in every one.
    assert_eq!(controls, tried / 2, "{judged:?}");
    let line = format!(
        "fault-free runs: {} (the reference run and {controls} control run(s), one after \
         every 2 runs of points): none of {} violated a property",
        controls + 1,
        controls + 1
    );
    assert!(out.contains(&line), "no {line:?} in:\n{out}");
}

/// A CI runner's cancel sends SIGTERM to every process of the job. The search stops as
/// at Ctrl-C: the runs under way are cut short, what ran is in its table and its journal
/// (which `--resume` takes), exit status 3; its servers, in a process group of their own,
/// are not killed by the signal under a run but stopped by the search, and none is left
/// behind. The signal goes once the journal holds a judged point: an event, not a time.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_to_the_searchs_process_group_prints_what_ran_and_keeps_the_journal() {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let mut args = vec!["search", "--lock", "zklock", "--out", "failures"];
    args.extend(SMALL);
    args.extend(["--jobs", "1", "--journal", "journal.jsonl"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_zklock"))
        .args(&args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, as a CI job's: the signal below goes to the whole group.
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    // Whole lines only: the search may be writing the next one.
    let judged = |text: &str| {
        text.split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v.get("plan").is_some())
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    while judged(&std::fs::read_to_string(&journal).unwrap_or_default()) == 0 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the search ended before judging a point: {status}");
        }
        assert!(Instant::now() < deadline, "no point judged");
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = descendants(pid);
    assert!(
        started.iter().any(|(_, _, cmd)| cmd.contains("java")),
        "the search's server is among its processes: {started:?}"
    );
    let sent = Command::new("kill")
        .args(["-TERM", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("interrupted (what ran is above)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--journal journal.jsonl --resume"),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| zklock |"))
        .unwrap_or_else(|| panic!("no table row:\n{stdout}\n{stderr}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let tried: usize = cells[3].split(' ').next().unwrap().parse().unwrap();
    // The journal: whole JSON lines, the setup, the reference run, then the points the
    // table counts, no more (a run cut short is not judged).
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.ends_with('\n'), "{text}");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[0].get("setup").is_some(), "{text}");
    assert!(lines[1].get("reference").is_some(), "{text}");
    assert!(tried >= 1, "{row}");
    assert_eq!(judged(&text), tried, "{row}\n{text}");
    assert_eq!(lines.len(), 2 + tried, "{text}");
    // None of the processes the search started outlives it.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (p, start, cmd) in &started {
        while is_running(*p, start) {
            assert!(Instant::now() < deadline, "left behind: {p} {cmd}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let (code, out, err) = zklock(
        &[args.as_slice(), &["--resume", "--max-runs", "1"]].concat(),
        dir.path(),
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains(&format!("({tried} points judged)")),
        "{out}{err}"
    );
}

/// A process's state, parent and start time (fields 3, 4 and 22 of /proc/PID/stat).
#[cfg(target_os = "linux")]
fn stat_of(pid: u32) -> Option<(String, u32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name, in parentheses that it may itself contain.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((
        fields.first()?.to_string(),
        fields.get(1)?.parse().ok()?,
        fields.get(19)?.to_string(),
    ))
}

/// The processes under `pid` (children, theirs...), with their start times (a pid may
/// be reused) and command lines, from /proc.
#[cfg(target_os = "linux")]
fn descendants(pid: u32) -> Vec<(u32, String, String)> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((_, ppid, start)) = stat_of(p) {
            parent_of.push((p, ppid, start));
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        for (p, _, start) in parent_of.iter().filter(|(_, pp, _)| *pp == parent) {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            found.push((*p, start.clone(), cmd));
            queue.push(*p);
        }
    }
    found
}

/// Whether the process `pid` that started at `start` still runs: a zombie no longer does
/// (its new parent may never reap it).
#[cfg(target_os = "linux")]
fn is_running(pid: u32, start: &str) -> bool {
    stat_of(pid).is_some_and(|(state, _, s)| s == start && state != "Z" && state != "X")
}

/// The search's workload shapes run once each, without a fault, at `--k 0` alone. In
/// the timed-queue shape Kazoo 2.8's `Lock` lets a timed acquire overrun: a waiter ahead
/// of it times out and leaves, which wakes it with its deadline near, and
/// `Lock._inner_acquire` waits its whole timeout again (docs/libraries.md). Certain: the
/// contenders queue a third of the timeout apart (`--start-stagger-ms`), and the holder
/// outlasts both timeouts.
#[test]
fn the_timed_queue_shape_finds_kazoos_timed_acquire_waiting_its_whole_timeout_again() {
    use zklock_real::driver::DriverKind;
    if !super::driver_ready(DriverKind::KazooLock, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "search",
        "--lock",
        "kazoo-lock",
        "--k",
        "0",
        "--shapes",
        "timed-queue",
        "--jobs",
        "1",
        "--out",
        "failures",
    ];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("violated liveness_after_heal, timed_acquire_in_time in shape timed-queue"),
        "{out}"
    );
    assert!(
        out.contains("workload shapes, each run once without a fault: timed-queue violated"),
        "{out}"
    );
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.contains("--start-stagger-ms"))
        .unwrap_or_else(|| panic!("no reproduction line for the shape:\n{out}"));
    let line = line.strip_prefix("cargo run --release -- ").unwrap();
    assert!(line.contains("--clients 3 --attempts 1"), "{line}");
    assert!(!line.contains("--aim"), "a shape aims no fault: {line}");
    // The driver processes were kept between runs (the default), and the line asks
    // `zklock real` for warm ones too (`--fresh-drivers`: the protocol test above).
    assert!(
        err.contains("driver processes: ") && err.contains("sessions opened on a kept one"),
        "{err}"
    );
    assert!(line.contains(" --warm-up-runs 3"), "{line}");
    let mut again: Vec<&str> = line.split_whitespace().collect();
    again.extend(["--out", "failures"]);
    let (code, rerun, err) = zklock(&again, dir.path());
    assert_eq!(code, 1, "{rerun}{err}");
    assert!(rerun.contains("timed_acquire_in_time"), "{rerun}");
}

/// The shipped lock holds in every workload shape; a resumed search takes the shapes'
/// verdicts from its journal and does not run them again.
#[test]
fn the_shipped_lock_holds_in_every_workload_shape_and_a_resume_does_not_run_them_again() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "search", "--lock", "zklock", "--k", "0", "--out", "failures",
    ];
    args.extend(JOBS);
    args.extend(["--journal", "journal.jsonl"]);
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "workload shapes, each run once without a fault: timed-queue held; \
             fresh-objects held; idle-after-give-up held; long-holds held; crowd held"
        ),
        "{out}"
    );
    assert!(
        out.contains("workload shapes: 5 runs without a fault"),
        "{out}"
    );
    let (code, again, err) = zklock(&[args.as_slice(), &["--resume"]].concat(), dir.path());
    assert_eq!(code, 0, "{again}{err}");
    assert!(!again.contains("workload shapes: 5 runs"), "{again}");
    // The shapes are told apart from the points (--k 0 judged none).
    assert!(again.contains("(0 points judged, 5 shape(s))"), "{again}");
    assert!(again.contains("crowd held"), "{again}");
}

#[test]
fn a_shape_the_script_has_already_is_not_run_again() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Five clients are a crowd already; one attempt each keeps the reference run short.
    let (code, out, err) = zklock(
        &[
            "search",
            "--lock",
            "zklock",
            "--k",
            "0",
            "--out",
            "failures",
            "--jobs",
            "1",
            "--clients",
            "5",
            "--attempts",
            "1",
            "--shapes",
            "crowd,long-holds",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("workload shapes: 1 runs without a fault (long-holds)"),
        "{out}"
    );
    assert!(!out.contains("crowd"), "{out}");
}

/// `zklock real --warm-up-runs N` runs the script N times without a fault on the same
/// driver processes before the judged run, under a directory of its own that it removes.
#[test]
fn a_real_run_warms_its_drivers_up_first_when_asked() {
    use zklock_real::driver::DriverKind;
    if !super::driver_ready(DriverKind::KazooLock, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "real",
        "--lock",
        "kazoo-lock",
        "--clients",
        "2",
        "--attempts",
        "2",
        "--duration",
        "1000ms",
        "--faults",
        "none",
        "--warm-up-runs",
        "2",
    ];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("warming the drivers up: 2 fault-free run(s) under /zklock/lock-warm-up"),
        "{err}"
    );
    // Every client's process, which said hello before its run began, is reset and kept
    // for the judged run (a spare is kept too if its hello came in time).
    let kept: u32 = err
        .split("warm: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of kept processes:\n{err}"));
    assert!(kept >= 2, "{err}");
    assert!(out.contains("every property held"), "{out}");
}

/// zookeeper-client's driver connects a new session after a pause past the session
/// timeout (an expiry) while its client's proxy may still hold the traffic: a connect
/// that timed out then was taken for a broken driver (`driver_failed`), with no verdict
/// on the lock. The pauses are scripted at each request of the smallest script.
#[test]
fn zookeeper_clients_driver_connects_again_after_a_pause_instead_of_failing() {
    use zklock_real::driver::DriverKind;
    if !super::driver_ready(DriverKind::ZkclientLock, "this test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = search(
        "zkclient-lock",
        dir.path(),
        &["--actions", "pause", "--control-every", "0"],
    );
    assert!(!out.contains("driver_failed"), "{out}{err}");
    assert!(out.contains("| zkclient-lock |"), "{out}{err}");
    assert!(code == 0 || code == 1, "{out}{err}");
}

/// A second search into the same --out replaces nothing of the first: its findings' files
/// get numbers of their own, and each finding has its text and HTML timelines and the
/// checker's explanation.
#[test]
fn a_second_search_writes_files_of_its_own_with_the_explanation_and_the_html_timeline() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let listed = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| l.trim().strip_prefix("timeline: "))
            .map(str::to_owned)
            .collect()
    };
    let (code, first, err) = search("canary-forgetful-release", dir.path(), &DROPS);
    assert_eq!(code, 1, "{first}{err}");
    let first_files = listed(&first);
    assert!(!first_files.is_empty(), "{first}");
    let kept: Vec<Vec<u8>> = (first_files.iter())
        .map(|f| std::fs::read(dir.path().join(f)).unwrap())
        .collect();
    let (code, second, err) = search("canary-forgetful-release", dir.path(), &DROPS);
    assert_eq!(code, 1, "{second}{err}");
    let second_files = listed(&second);
    assert!(!second_files.is_empty(), "{second}");
    for f in &second_files {
        assert!(!first_files.contains(f), "{f} named by both searches");
        let stem = f.strip_suffix(".timeline.txt").unwrap();
        for other in [".timeline.html", ".explanation.txt"] {
            let path = dir.path().join(format!("{stem}{other}"));
            assert!(path.exists(), "no {}:\n{second}", path.display());
        }
        let explanation =
            std::fs::read_to_string(dir.path().join(format!("{stem}.explanation.txt")));
        assert!(explanation.unwrap().contains("liveness_after_heal"));
    }
    for (f, bytes) in first_files.iter().zip(&kept) {
        assert_eq!(
            &std::fs::read(dir.path().join(f)).unwrap(),
            bytes,
            "{f} was replaced"
        );
    }
}
