use super::*;
use std::os::unix::fs::PermissionsExt;

const LEAK: &str = "zklock real --lock kazoo-lock --clients 2 --attempts 4 --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 --duration 30000ms --faults none --warm-up-runs 3 --aim 0:drop-request:delete:/zklock/lock/:4";

fn leak() -> ToExport {
    ToExport {
        repro: LEAK.into(),
        violated: vec!["node_outlives_attempt".into(), "liveness_after_heal".into()],
        timeline: Some("the timeline\n".into()),
        ..ToExport::default()
    }
}

/// A stand-in for Python: a shell script that acts as the exported file would.
fn fake_python(dir: &Path, body: &str) -> ExportOptions {
    let path = dir.join("python");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    ExportOptions {
        python: path,
        ..ExportOptions::default()
    }
}

const VERSIONS: &str = "echo 'versions: Kazoo 9.9, ZooKeeper 3.8.0, Python 3' >&2";

#[test]
fn the_file_carries_the_script_and_exactly_the_points_faults() {
    let line = RealLine::parse(LEAK).unwrap();
    let text = kazoo::render(&line, &["node_outlives_attempt".into()], "a title").unwrap();
    assert!(
        text.contains("\"\"\"a title\n"),
        "the docstring starts with the title"
    );
    let json = text
        .split("r\"\"\"")
        .nth(1)
        .unwrap()
        .split("\"\"\"")
        .next()
        .unwrap();
    let script: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(script["kind"], "lock");
    assert_eq!(script["attempts"], 4);
    // Twice the session timeout and 1 s: the checker's bound.
    assert_eq!(script["leak_bound_ms"], 5_000);
    let faults = script["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0]["ops"], serde_json::json!([2]));
    assert_eq!(faults[0]["skip"], 3, "the 4th delete: 3 let through");
    assert_eq!(faults[0]["under"], "/zklock/lock/");
    assert_eq!(
        script["check"],
        serde_json::json!(["node_outlives_attempt"])
    );
    assert!(!text.contains("__SCRIPT__") && !text.contains("__TITLE__"));
}

#[test]
fn a_lock_of_neither_kazoo_curator_nor_writelock_is_refused_as_not_supported_yet() {
    let dir = tempfile::tempdir().unwrap();
    let zkclient = ToExport {
        repro: LEAK.replace("kazoo-lock", "zkclient-lock"),
        ..leak()
    };
    let e = export(
        &zkclient,
        dir.path(),
        &ExportOptions::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, ExportError::UnsupportedLock { .. }), "{e}");
    assert!(
        e.to_string().contains("zkclient-lock is not supported yet"),
        "{e}"
    );
    assert!(check_lock("kazoo-semaphore").is_ok() && check_lock("zkclient-lock").is_err());
    assert!(check_lock("curator-mutex").is_ok() && check_lock("zookeeper-writelock").is_ok());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_fault_or_a_property_the_file_cannot_carry_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = fake_python(dir.path(), "exit 1");
    let paused = ToExport {
        repro: LEAK.replace("drop-request", "pause-4000ms"),
        ..leak()
    };
    let e = export(&paused, dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("pause-4000ms"), "{e}");
    let liveness = ToExport {
        violated: vec!["semaphore_leases".into()],
        ..leak()
    };
    let e = export(&liveness, dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ExportError::Unsupported { .. }), "{e}");
    let runs = ExportOptions {
        runs: RUNS_MAX + 1,
        ..options
    };
    let e = export(&leak(), dir.path(), &runs, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--runs must be 1 to 20"), "{e}");
}

#[test]
fn an_export_that_passes_here_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let options = fake_python(dir.path(), "exit 0");
    let e = export(&leak(), dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, ExportError::DoesNotReproduce { runs: 3 }),
        "{e}"
    );
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(written.len(), 1, "the fake python alone: {written:?}");
}

#[test]
fn an_export_that_fails_without_its_fault_too_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let options = fake_python(dir.path(), "echo 'AssertionError: always' >&2; exit 1");
    let e = export(&leak(), dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ExportError::FailsWithoutFault { .. }), "{e}");
    assert!(
        !dir.path()
            .join("kazoo-lock-node_outlives_attempt-0-drop-request-delete-4")
            .exists()
    );
}

#[test]
fn a_python_without_kazoo_is_an_error_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let options = fake_python(
        dir.path(),
        "echo \"ModuleNotFoundError: No module named 'kazoo'\" >&2; exit 1",
    );
    let e = export(&leak(), dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ExportError::Run { .. }), "{e}");
    assert!(e.to_string().contains("No module named 'kazoo'"), "{e}");
}

#[test]
fn a_reproduction_is_shrunk_verified_and_written_with_its_readme_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    // Fails with its fault, whatever the script, at 3 attempts or more; passes without.
    let options = fake_python(
        dir.path(),
        &format!(
            "{VERSIONS}\n[ \"$2\" = --no-fault ] && exit 0\n\
             grep -q '\"attempts\": [0-2],' \"$1\" && exit 0\n\
             echo 'AssertionError: node /zklock/lock/x outlived its failed acquire' >&2; exit 1"
        ),
    );
    let mut told = Vec::new();
    let e = export(&leak(), dir.path(), &options, &mut |s| {
        told.push(s.to_owned())
    })
    .unwrap();
    assert_eq!(
        e.dir.file_name().unwrap(),
        "kazoo-lock-node_outlives_attempt-0-drop-request-delete-4"
    );
    // 3 attempts still fail, 2 do not; then one client is enough.
    assert!(e.line.contains("--clients 1 --attempts 3"), "{}", e.line);
    assert!(e.shrunk && (e.failed, e.runs) == (3, 3) && e.control_passed == Some(true));
    assert_eq!(e.versions, "Kazoo 9.9, ZooKeeper 3.8.0, Python 3");
    let readme = std::fs::read_to_string(e.dir.join("README.md")).unwrap();
    for said in [
        "Kazoo 9.9, ZooKeeper 3.8.0",
        "it failed in 3 of 3 runs",
        "With `--no-fault`",
        "outlived its failed acquire",
        LEAK.split(" --warm-up").next().unwrap(),
        "no node behind",
    ] {
        assert!(readme.contains(said), "{said:?} not in:\n{readme}");
    }
    let file = std::fs::read_to_string(e.dir.join("repro.py")).unwrap();
    assert!(file.contains("\"attempts\": 3,") && file.contains("\"clients\": 1,"));
    assert_eq!(
        std::fs::read_to_string(e.dir.join("timeline.txt")).unwrap(),
        "the timeline\n"
    );
    assert!(
        told.iter().any(|s| s.starts_with("shrinking: ")),
        "{told:?}"
    );
    // Nothing is overwritten: the same export again is refused.
    let again = export(&leak(), dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(again.to_string().contains("exists already"), "{again}");
}

#[test]
fn smaller_scripts_keep_every_client_a_fault_is_aimed_at() {
    let mut line = RealLine::parse(LEAK).unwrap();
    line.aims[0].client = 1;
    let smaller = kazoo::smaller(&line);
    assert_eq!(smaller.len(), 1, "fewer attempts only");
    assert_eq!(smaller[0].workload.attempts_per_client, 3);
    line.aims
        .push(Aim::parse("0:withhold-reply:create:/zklock/lock/").unwrap());
    let faults: Vec<usize> = kazoo::smaller(&line).iter().map(|l| l.aims.len()).collect();
    assert_eq!(
        faults,
        [2, 1, 1],
        "fewer attempts, then each fault left out"
    );
}

#[test]
fn a_journal_gives_its_violating_runs_with_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let setup = LEAK.split(" --aim").next().unwrap();
    let lines = [
        serde_json::json!({ "setup": format!("{setup} (pause 4000 ms, next 4, window 3000 ms)") }),
        serde_json::json!({ "reference": { "violated": [], "struck": false, "requests": [] } }),
        serde_json::json!({ "plan": "shape:timed-queue", "outcome": { "violated": ["timed_acquire_in_time"], "timeline": "t" } }),
        serde_json::json!({ "plan": "control:0", "outcome": { "violated": ["liveness_after_heal"] } }),
        serde_json::json!({ "plan": "0:drop-request:delete:/zklock/lock/:4", "outcome": { "violated": ["node_outlives_attempt"] } }),
        serde_json::json!({ "plan": "1:drop-request:delete:/zklock/lock/", "outcome": { "violated": [] } }),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let found = journal_findings(&path).unwrap();
    assert_eq!(
        found.len(),
        2,
        "the shape and the violating point: {found:?}"
    );
    assert!(
        found[0].repro.contains("--clients 3 --attempts 1"),
        "{}",
        found[0].repro
    );
    assert!(
        found[0]
            .repro
            .contains("--mix-offset 2 --start-stagger-ms 1000"),
        "{}",
        found[0].repro
    );
    assert_eq!(found[0].timeline.as_deref(), Some("t"));
    assert_eq!(found[1].repro, LEAK);
    std::fs::write(&path, "{\"plan\": \"x\"}\n").unwrap();
    let e = journal_findings(&path).unwrap_err();
    assert!(e.to_string().contains("line 1: no setup line"), "{e}");
}

/// A chained point (`--aim 0:drop-request:delete:P --aim 0:drop-request:delete:P:5`)
/// strikes the 1st and the 5th delete: each fault counts every request, the first's
/// strike among them. Needs Debian's Python with Kazoo (the file imports it); skipped
/// without.
#[test]
fn every_fault_of_a_chain_counts_every_matching_request() {
    let python = Path::new(PYTHON_DEFAULT);
    let has_kazoo = std::process::Command::new(python)
        .args(["-c", "import kazoo"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_kazoo {
        eprintln!("skipping: {} cannot import kazoo", python.display());
        return;
    }
    let chain =
        format!("{LEAK} --aim 0:drop-request:delete:/zklock/lock/:5").replace(":4 --aim", " --aim");
    let line = RealLine::parse(&chain).unwrap();
    let text = kazoo::render(&line, &["node_outlives_attempt".into()], "t").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("repro.py");
    std::fs::write(&file, text).unwrap();
    let probe = "import importlib.util, sys\n\
        spec = importlib.util.spec_from_file_location('repro', sys.argv[1])\n\
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n\
        faults = [m.Fault(f) for f in m.SCRIPT['faults']]\n\
        hits = [n for n in range(1, 9) if m.striking(faults, 2, '/zklock/lock/n') is not None]\n\
        print(hits)";
    let out = std::process::Command::new(python)
        .args(["-c", probe])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[1, 5]");
}

const WITHHELD: &str = "zklock real --lock curator-mutex --clients 2 --attempts 4 --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 --duration 30000ms --faults none --aim 0:withhold-reply:create:/zklock/lock/:1:4";

#[test]
fn a_java_file_carries_the_script_the_points_faults_and_the_library_calls() {
    let line = RealLine::parse(WITHHELD).unwrap();
    let checks = ["node_outlives_attempt".to_owned()];
    let text = java::render(&line, &checks, "a title").unwrap();
    assert!(text.starts_with("// a title\n"), "the title first");
    assert!(text.contains(&format!("{}{WITHHELD}", java::LINE_PREFIX)));
    // The 1st create under the directory and the 3 after it, each forwarded with its
    // reply withheld; every create type (1, 15, 19, 21).
    assert!(
        text.contains(
            "new Fault(0, \"withhold-reply\", Set.of(1, 15, 19, 21), \"/zklock/lock/\", 0, 4, 0, 1000),"
        ),
        "{text}"
    );
    assert!(text.contains("static final int CLIENTS = 2, READERS = 0, ATTEMPTS = 4;"));
    assert!(text.contains("static final long LEAK_BOUND_MS = 5000;"));
    assert!(text.contains("new InterProcessMutex(curator, LOCK_PATH)"));
    assert!(!text.contains("__"), "every placeholder filled");
    // What the committed files are checked against: the same text from what it states.
    assert_eq!(java_rendered_again(&text).unwrap(), text);
    let writelock = RealLine::parse(&WITHHELD.replace("curator-mutex", "zookeeper-writelock"));
    let text = java::render(&writelock.unwrap(), &checks, "t").unwrap();
    assert!(
        text.contains("new WriteLock(handle, LOCK_PATH, null"),
        "{text}"
    );
    assert!(!text.contains("Curator"), "no Curator in WriteLock's file");
}

/// Stand-ins for `javac` (it makes the class) and `java` (it acts as the file would).
fn fake_java(dir: &Path, body: &str) -> ExportOptions {
    let script = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let libs = dir.join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    for jar in java::Library::Curator.jars() {
        std::fs::write(libs.join(format!("{jar}.jar")), "").unwrap();
    }
    ExportOptions {
        javac: script("javac", "mkdir -p \"$3\" && touch \"$3/Repro.class\""),
        java: script("java", body),
        java_libs: libs,
        ..ExportOptions::default()
    }
}

#[test]
fn a_java_export_that_passes_here_is_never_written_and_one_that_fails_is() {
    let dir = tempfile::tempdir().unwrap();
    let finding = ToExport {
        repro: WITHHELD.into(),
        ..leak()
    };
    let options = ExportOptions {
        shrink: false,
        ..fake_java(dir.path(), "echo 'versions: Curator 9' >&2; exit 0")
    };
    let e = export(&finding, dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(e, ExportError::DoesNotReproduce { runs: 3 }),
        "{e}"
    );
    let fails = "case \"$*\" in *--no-fault*) exit 0;; esac; \
                 echo 'versions: Curator 9' >&2; \
                 echo 'java.lang.AssertionError: node n outlived its failed acquire' >&2; exit 1";
    let options = ExportOptions {
        shrink: false,
        ..fake_java(dir.path(), fails)
    };
    let e = export(&finding, dir.path(), &options, &mut |_| {}).unwrap();
    assert_eq!((e.failed, e.runs, e.control_passed), (3, 3, Some(true)));
    assert_eq!(e.assertion, "node n outlived its failed acquire");
    assert!(e.dir.join("Repro.java").is_file());
    let readme = std::fs::read_to_string(e.dir.join("README.md")).unwrap();
    assert!(readme.contains("javac -cp \"$CP\" Repro.java"), "{readme}");
    assert!(
        readme.contains("java.lang.AssertionError: node n outlived"),
        "{readme}"
    );
    assert!(readme.contains("`acquire(1000, MILLISECONDS)`"), "{readme}");
}

#[test]
fn a_missing_jar_is_an_error_naming_it_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        shrink: false,
        java_libs: dir.path().join("nowhere"),
        ..ExportOptions::default()
    };
    let finding = ToExport {
        repro: WITHHELD.into(),
        ..leak()
    };
    let e = export(&finding, dir.path(), &options, &mut |_| {}).unwrap_err();
    assert!(matches!(e, ExportError::Run { .. }), "{e}");
    assert!(
        e.to_string().contains("curator-recipes.jar not found"),
        "{e}"
    );
}
