//! `zklock explore --strategy coverage`: a failing seed is recorded in the regressions
//! file with the scenario its sweep's corpus gave it, and a later sweep replays it in that
//! scenario first.

use super::zklock;

#[test]
fn a_coverage_seed_is_recorded_with_its_scenario_and_replayed_in_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let regressions = dir.path().join("regressions.txt");
    let regressions = regressions.to_str().unwrap();
    let recipe = "canary-lease-handed-over-lost";
    let sweep = |out: &str, seed_start: &str, seeds: &str| {
        zklock(
            &[
                "explore",
                "--recipe",
                recipe,
                "--strategy",
                "coverage",
                "--seed-start",
                seed_start,
                "--seeds",
                seeds,
                "--threads",
                "2",
                "--no-shrink",
                "--out",
                out,
                "--regressions",
                regressions,
            ],
            dir.path(),
        )
    };
    let (code, out, err) = sweep("first", "0", "100000");
    assert_eq!(code, 1, "{out}{err}");
    let seed: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("seed ")?.split(':').next()?.parse().ok())
        .expect("the failing seed");
    let text = std::fs::read_to_string(dir.path().join("regressions.txt")).unwrap();
    let prefix = format!("explore/{recipe}/coverage/{{");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no coverage line in:\n{text}"));
    assert!(
        line.contains(&format!("}} {seed} # ")),
        "the seed after its scenario: {line}"
    );
    // The recorded scenario is the failing trace's.
    let trace: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(format!("first/seed-{seed}.json"))).unwrap(),
    )
    .unwrap();
    let json = line[prefix.len() - 1..line.rfind(&format!(" {seed} # ")).unwrap()]
        .replace("%20", " ")
        .replace("%23", "#")
        .replace("%25", "%");
    let recorded: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(recorded, trace["scenario"], "{line}");

    // A later sweep of one seed far from it fails at once on the recorded seed, in the
    // recorded scenario: marked here by a lock path no draw makes.
    let marked = text.replace(
        &line.to_owned(),
        &line.replace(
            "\"lock_path\":\"/zklock/lock\"",
            "\"lock_path\":\"/recorded/lock\"",
        ),
    );
    assert_ne!(
        marked, text,
        "the lock path is in the recorded scenario: {line}"
    );
    std::fs::write(dir.path().join("regressions.txt"), marked).unwrap();
    let (code, out, err) = sweep("second", "900000000", "1");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("recorded seed {seed} (")) && out.contains("fails again"),
        "{out}"
    );
    assert!(out.contains(&format!("seed {seed}: FAILED")), "{out}");
    let again: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(format!("second/seed-{seed}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(again["scenario"]["lock_path"], "/recorded/lock");
}
