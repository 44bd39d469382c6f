//! `zklock check --partial-order`: the report says the reduction is on and its counts
//! (the same states as without it, fewer schedules), and a checkpoint, which does not
//! hold sleep sets, is refused with it.

use super::check_two;

#[test]
fn check_with_partial_order_reports_it_and_refuses_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["--symmetry", "off"];
        args.extend_from_slice(extra);
        check_two(dir.path(), &args)
    };
    let (code, out, err) = check(&["--partial-order", "on"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("symmetry off, partial order on: 112 schedules"),
        "{out}"
    );
    assert!(out.contains("252 distinct states"), "{out}");
    let (code, out, err) = check(&["--threads", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("symmetry off: 120 schedules"), "{out}");
    // A reduced search runs on one thread, and asking for more is refused.
    let (code, _, err) = check(&["--partial-order", "on", "--threads", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--threads 2: a search with --partial-order on runs on one thread"),
        "{err}"
    );
    let (code, _, err) = check(&["--partial-order", "on", "--checkpoint", "c.ckpt"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--checkpoint needs --partial-order off"),
        "{err}"
    );
    assert!(!dir.path().join("c.ckpt").exists());
}
