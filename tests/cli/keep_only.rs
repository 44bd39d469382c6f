//! `zklock check --keep-only`: off tells apart every reply whole, says so on the report
//! line and reaches more states; a checkpoint of one kind of digest is refused by a check
//! of the other, and left as it is.

use super::{check_part, check_two};

#[test]
fn check_with_keep_only_off_reports_it_and_refuses_the_others_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = check_two(dir.path(), &["--threads", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("keep-only"), "{out}");
    assert!(out.contains("128 distinct states"), "{out}");
    let (code, out, err) = check_two(dir.path(), &["--threads", "1", "--keep-only", "off"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("symmetry on, keep-only off: "), "{out}");
    assert!(out.contains("253 distinct states"), "{out}");

    let (code, out, err) = check_part(dir.path(), &["--threads", "1"]);
    assert_eq!(code, 3, "{out}{err}");
    let written = std::fs::read(dir.path().join("c.ckpt")).unwrap();
    let (code, out, err) = check_part(dir.path(), &["--threads", "1", "--keep-only", "off"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("its keep-only is true, this check's is false"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.path().join("c.ckpt")).unwrap(), written);
}
