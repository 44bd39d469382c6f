//! `zklock check --faults`: the search places only the kinds of fault listed, a failure's
//! trace replays with them, and the flag refuses what it cannot mean.

use super::{check_part, replayed_trace, zklock};
use zklock_sim::Faults;

/// canary-blind-retry's bug needs a ConnectionLoss: the search finds it with that kind
/// alone, and cannot with crashes alone (a crashed client never runs again).
#[test]
fn check_places_only_the_listed_faults() {
    let dir = tempfile::tempdir().unwrap();
    let check = |faults: &str| {
        let args = [
            "check",
            "--recipe",
            "canary-blind-retry",
            "--clients",
            "1",
            "--faults",
            faults,
        ];
        zklock(&args, dir.path())
    };
    let (code, out, err) = check("connection-loss");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("at most 1 faults of kinds connection-loss, symmetry on"),
        "{out}"
    );
    let trace = replayed_trace(dir.path(), &out);
    let only_loss = Faults {
        connection_loss: Faults::default().connection_loss,
        ..Faults::none()
    };
    assert_eq!(trace.scenario.faults, only_loss);
    let (code, out, err) = check("crash");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("of kinds crash,") && out.contains("complete"),
        "{out}"
    );
}

#[test]
fn faults_refuse_a_repeated_or_unknown_kind_all_beside_others_and_a_checkpoint_of_other_kinds() {
    let dir = tempfile::tempdir().unwrap();
    for (list, says) in [
        ("crash,crash", "--faults lists crash twice"),
        ("all,pause", "--faults: `all` stands alone"),
        ("crsh", "unknown fault \"crsh\""),
    ] {
        let (code, out, err) = zklock(&["check", "--faults", list], dir.path());
        assert_eq!(code, 2, "{list}: {out}{err}");
        assert!(err.contains(says), "{list}: {err}");
    }
    // A checkpoint holds the kinds too: another list is another check.
    // Without a fault placed, the kinds are still the scenario's.
    let part = |faults: &str| check_part(dir.path(), &["--faults", faults]);
    let (code, out, err) = part("all");
    assert_eq!(code, 3, "{out}{err}");
    let before = std::fs::read(dir.path().join("c.ckpt")).unwrap();
    let (code, _, err) = part("crash");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another check"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("c.ckpt")).unwrap(), before);
}

/// A sweep draws only the kinds listed, says so, and suggests its next commands with them.
#[test]
fn explore_draws_only_the_listed_faults() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["explore", "--seeds", "50", "--faults", "crash,pause"];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(", faults of kinds pause,crash on until "),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("faults: "))
        .expect("the faults' counts");
    // Some of each kind listed, and nothing else: "faults: N (crash C, pause P)".
    let kinds: Vec<&str> = line
        .split_once('(')
        .and_then(|(_, k)| k.strip_suffix(')'))
        .expect("kinds in parentheses")
        .split(", ")
        .map(|k| k.split(' ').next().unwrap())
        .collect();
    assert_eq!(kinds, ["crash", "pause"], "{line}");
    assert!(
        out.contains("-- check --faults pause,crash --clients 2 --faults-max 1"),
        "{out}"
    );
}
