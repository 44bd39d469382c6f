//! The committed reproductions under `findings/`: each fails against the library installed
//! here (Debian's Kazoo, Curator, ZooKeeper's recipes), and one with a fault passes with
//! it removed. They start their own ZooKeeper server; without Java, ZooKeeper, Kazoo or
//! the jars they are skipped (under CI=true, where they must run, that panics).

use std::path::{Path, PathBuf};
use std::process::Command;
use zklock_real::driver::locate;
use zklock_real::harness;

/// The reproductions' runs, one test at a time: each starts its own server and clients,
/// and their timing bounds are for a machine not also running the other test's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn findings() -> Vec<PathBuf> {
    findings_with("repro.py")
}

/// The committed exports whose file is `file`.
fn findings_with(file: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../findings");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("findings/ is committed")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(file).is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Debian's Python with Kazoo, when it and a ZooKeeper server can run here.
fn kazoo_python() -> Option<PathBuf> {
    if !harness::available_for_tests() {
        return None;
    }
    let python = locate::python();
    let ok = Command::new(&python)
        .args(["-c", "import kazoo.recipe.lock"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let why = format!(
            "{} cannot import kazoo (apt-get install python3-kazoo)",
            python.display()
        );
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true, but {why}"
        );
        eprintln!("skipping: {why}");
        return None;
    }
    Some(python)
}

/// Runs `dir`'s repro.py: its exit code and its last AssertionError, if any.
fn run(python: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, Option<String>) {
    let out = Command::new(python)
        .arg(dir.join("repro.py"))
        .args(args)
        .env_remove("ZK_HOSTS")
        .output()
        .expect("python runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let assertion = (stderr.lines().rev())
        .find_map(|l| l.strip_prefix("AssertionError: "))
        .map(str::to_owned);
    (out.status.code(), assertion)
}

#[test]
fn the_committed_kazoo_reproductions_fail_and_pass_with_their_fault_removed() {
    let dirs = findings();
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // kazoo#732, and the timed acquire that waits its whole timeout again.
    for expected in [
        "kazoo-lock-node_outlives_attempt-0-drop-request-delete-4",
        "kazoo-lock-timed_acquire_in_time-no-fault",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    let Some(python) = kazoo_python() else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for dir in &dirs {
        let (code, assertion) = run(&python, dir, &[]);
        let assertion = assertion.unwrap_or_default();
        assert_eq!(code, Some(1), "{} did not fail: {assertion}", dir.display());
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        // The README states what the file asserts, the same words (the node's name and
        // the times differ per run).
        let words = |s: &str| -> String {
            let kept = s
                .split_whitespace()
                .filter(|w| !w.contains(|c: char| c.is_ascii_digit()));
            kept.collect::<Vec<_>>().join(" ")
        };
        let said = readme
            .lines()
            .find_map(|l| l.strip_prefix("AssertionError: "))
            .unwrap_or("");
        assert_eq!(
            words(said),
            words(&assertion),
            "{}: its README",
            dir.display()
        );
        if readme.contains("With `--no-fault`") {
            let (code, assertion) = run(&python, dir, &["--no-fault"]);
            assert_eq!(
                code,
                Some(0),
                "{} failed without its fault: {assertion:?}",
                dir.display()
            );
        }
    }
}

#[test]
fn the_committed_reproductions_are_what_an_export_writes_today() {
    let template = include_str!("../src/export/kazoo_repro.py");
    // The template, its title and script aside.
    let body = |text: &str| -> String {
        let (shebang, rest) = text.split_once("\"\"\"").unwrap();
        let after_title = format!("{shebang}{}", rest.split_once('\n').unwrap().1);
        let (head, rest) = after_title.split_once("r\"\"\"").unwrap();
        let (_, tail) = rest.split_once("\"\"\"").unwrap();
        format!("{head}{tail}")
    };
    for dir in findings() {
        let file = std::fs::read_to_string(dir.join("repro.py")).unwrap();
        assert!(
            body(&file) == body(template),
            "{}: not what `zklock export` writes now; export it again",
            dir.display()
        );
    }
}

/// The words of an assertion, without its numbers (node names and times differ per run).
fn words(s: &str) -> String {
    let kept = s
        .split_whitespace()
        .filter(|w| !w.contains(|c: char| c.is_ascii_digit()));
    kept.collect::<Vec<_>>().join(" ")
}

/// Whether Java and Debian's jars of the Java libraries are here, with a server.
fn java_here() -> bool {
    if !harness::available_for_tests() {
        return false;
    }
    let libs = Path::new(zklock_search::export::JAVA_LIBS_DEFAULT);
    let jars = [
        "curator-recipes",
        "zookeeper-recipes-lock",
        "zookeeper-recipes-election",
        "zookeeper",
    ];
    let missing: Vec<&str> = jars
        .into_iter()
        .filter(|j| !libs.join(format!("{j}.jar")).is_file())
        .collect();
    let javac = Path::new(zklock_search::export::JAVAC_DEFAULT).is_file();
    if missing.is_empty() && javac {
        return true;
    }
    let why = format!(
        "no javac or no {missing:?} in {} ({}; {})",
        libs.display(),
        locate::CURATOR_HINT,
        locate::ZOOKEEPER_HINT
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true, but {why}"
    );
    eprintln!("skipping: {why}");
    false
}

#[test]
fn the_committed_java_reproductions_fail_and_pass_with_their_fault_removed() {
    use zklock_search::export::{ExportOptions, run_reproduction};
    let dirs = findings_with("Repro.java");
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // Curator's two apparently new findings, WriteLock's four and LeaderElectionSupport's two.
    for prefix in [
        "curator-mutex-node_outlives_attempt-0-withhold-reply-create-1",
        "curator-semaphore-mutex-fencing_token_order-0-expire-delete-1",
        "zookeeper-writelock-liveness_after_heal-0-withhold-reply-create-1",
        "zookeeper-writelock-node_outlives_attempt-0-drop-request-delete-1",
        "zookeeper-writelock-node_outlives_attempt-0-give-up-create-1",
        "zookeeper-writelock-liveness_after_heal-no-fault",
        "zookeeper-election-node_outlives_attempt-0-drop-request-delete-1",
        "zookeeper-election-node_outlives_attempt-0-withhold-reply-create-1",
    ] {
        assert!(
            names.iter().any(|n| n == prefix),
            "{prefix} not in {names:?}"
        );
    }
    if !java_here() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let options = ExportOptions::default();
    for dir in &dirs {
        // A file whose README gives a rate below 3 of 3 gets the runs its rate needs to
        // fail once (3, as the export's verification); the others must fail the first.
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let runs = match readme.contains("runs only: the outcome turns on timing") {
            true => 3,
            false => 1,
        };
        let assertion = (0..runs).find_map(|_| run_reproduction(dir, &options, false).unwrap());
        let Some(assertion) = assertion else {
            panic!("{} did not fail in {runs} run(s)", dir.display());
        };
        let said = readme
            .lines()
            .find_map(|l| l.strip_prefix("java.lang.AssertionError: "))
            .unwrap_or("");
        assert_eq!(
            words(said),
            words(&assertion),
            "{}: its README",
            dir.display()
        );
        if readme.contains("With `--no-fault`") {
            let control = run_reproduction(dir, &options, true).unwrap();
            assert_eq!(control, None, "{} failed without its fault", dir.display());
        }
    }
}

#[test]
fn the_committed_java_reproductions_are_what_an_export_writes_today() {
    let dirs = findings_with("Repro.java");
    assert!(!dirs.is_empty(), "the Java exports are committed");
    for dir in dirs {
        let file = std::fs::read_to_string(dir.join("Repro.java")).unwrap();
        let again = zklock_search::export::java_rendered_again(&file).unwrap();
        assert!(
            again == file,
            "{}: not what `zklock export` writes now; export it again",
            dir.display()
        );
    }
}

/// An election's export: Curator's LeaderLatch driven as the drivers drive it (an acquire
/// joins and awaits leadership, a hold is a term, the release closes the latch). No
/// LeaderLatch finding reproduces in the file yet (docs/libraries.md), so no export is
/// committed; this runs the file's latch calls on a contended fault-free script of every
/// acquire mode, in which every check must hold, as an export's `--no-fault` control must.
#[test]
fn a_leader_latch_export_compiles_and_its_fault_free_script_holds_every_check() {
    use zklock_search::export::{ExportOptions, java_rendered_again, run_reproduction};
    let line = "zklock real --lock curator-leader-latch --clients 2 --attempts 4 \
                --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 \
                --duration 30000ms --faults none";
    let stated = format!(
        "// curator-leader-latch, fault-free\n// As zklock runs it: {line}\n    static final \
         Set<String> CHECK = Set.of(\"fencing_token_order\", \"mutual_exclusion\", \
         \"liveness_after_heal\", \"node_outlives_attempt\");\n"
    );
    let text = java_rendered_again(&stated).unwrap();
    assert!(
        text.contains("new LeaderLatch(curator, LOCK_PATH"),
        "{text}"
    );
    if !java_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Repro.java"), &text).unwrap();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = run_reproduction(dir.path(), &ExportOptions::default(), false).unwrap();
    assert_eq!(
        outcome, None,
        "the fault-free latch script violated a check"
    );
}
