//! `zklock check`'s shape flags: a check that chooses the workload's shape writes a trace
//! that replays through the binary, and the flags refuse what they cannot mean.

use super::{check_part, replayed_trace, zklock};
use zklock_sim::Shape;

#[test]
fn a_check_with_chosen_shapes_writes_a_trace_that_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "check",
        "--recipe",
        "canary-blind-retry",
        "--clients",
        "1",
        "--faults-max",
        "1",
        "--shapes",
        "all",
    ];
    let (code, out, err) = zklock(&args, dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "modes chosen among blocking,try,timed,dropped, counts chosen, fault durations chosen"
        ),
        "{out}"
    );
    let trace = replayed_trace(dir.path(), &out);
    assert_eq!(trace.scenario.shape, Shape::all());
}

#[test]
fn shape_flags_refuse_a_repeated_or_unknown_mode_and_a_checkpoint_of_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = zklock(&["check", "--modes", "try,try"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--modes lists try twice"), "{err}");
    let (code, _, err) = zklock(&["check", "--modes", "sometimes"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown mode"), "{err}");
    let part = |shapes: &str| check_part(dir.path(), &["--shapes", shapes]);
    let (code, out, err) = part("fixed");
    assert_eq!(code, 3, "{out}{err}");
    let before = std::fs::read(dir.path().join("c.ckpt")).unwrap();
    let (code, _, err) = part("all");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("another check") && err.contains("shape"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.path().join("c.ckpt")).unwrap(), before);
}
