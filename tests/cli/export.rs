//! `zklock export` and `zklock search --export`: what they refuse, and how, before any
//! server starts (the exports themselves run in `search/tests/findings.rs` and the
//! search crate's own tests).

use super::zklock;

const SETUP: &str = "zklock real --lock LOCK --clients 2 --attempts 4 --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 --duration 30000ms --faults none (pause 4000 ms, next 4, window 3000 ms)";

fn journal(dir: &std::path::Path, lock: &str) -> std::path::PathBuf {
    let lines = [
        serde_json::json!({ "setup": SETUP.replace("LOCK", lock) }),
        serde_json::json!({ "reference": { "violated": [], "struck": false, "requests": [] } }),
        serde_json::json!({ "plan": "0:drop-request:delete:/zklock/lock/:4", "outcome": { "violated": ["node_outlives_attempt"] } }),
    ];
    let path = dir.join(format!("{lock}.jsonl"));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_search_of_a_lock_that_cannot_export_is_refused_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["search", "--lock", "zkclient-lock", "--export", "out"];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("exporting a finding of zkclient-lock is not supported yet"),
        "{err}"
    );
    assert!(
        !err.contains("starting") && !out.contains("starting"),
        "{out}{err}"
    );
}

#[test]
fn export_lists_a_journals_violations_and_refuses_what_it_cannot_export() {
    let dir = tempfile::tempdir().unwrap();
    let kazoo = journal(dir.path(), "kazoo-lock");
    let (code, out, err) = zklock(&["export".as_ref(), kazoo.as_os_str()], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("1: zklock real --lock kazoo-lock --clients 2")
            && out.contains("--aim 0:drop-request:delete:/zklock/lock/:4 (node_outlives_attempt)"),
        "{out}"
    );
    let args = [
        "export".as_ref(),
        kazoo.as_os_str(),
        "--point".as_ref(),
        "2".as_ref(),
    ];
    let (code, _, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--point 2:") && err.contains("has 1 violating run(s)"),
        "{err}"
    );
    let curator = journal(dir.path(), "zkclient-lock");
    let args = [
        "export".as_ref(),
        curator.as_os_str(),
        "--point".as_ref(),
        "1".as_ref(),
    ];
    let (code, _, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zkclient-lock is not supported yet"), "{err}");
    assert!(!dir.path().join("findings").exists(), "nothing written");
}

#[test]
fn a_run_against_other_releases_needs_an_export_and_refuses_a_bad_request() {
    let dir = tempfile::tempdir().unwrap();
    // No export there: refused before any environment is made.
    let args = ["export", "--against", "nowhere", "--versions", "2.9.0"];
    let (code, _, err) = zklock(&args, dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nowhere: no exported repro.py there"), "{err}");
    // A Java export: Debian's releases only, said before anything runs.
    std::fs::create_dir(dir.path().join("java")).unwrap();
    std::fs::write(dir.path().join("java/Repro.java"), "// a title\n").unwrap();
    let (code, _, err) = zklock(&["export", "--against", "java"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a Java export runs against Debian's Curator and ZooKeeper only"),
        "{err}"
    );
    let (code, _, err) = zklock(&["export", "j.jsonl", "--versions", "2.9.0"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--against"),
        "--versions goes with --against: {err}"
    );
}
