//! Curator's driver against a stand-in for Curator's lock (`CuratorDriverCases.java`,
//! beside this file, compiled against the driver as zklock builds it): each case scripts
//! an order of events a real server makes only by chance, so that it happens every time.
//! Needs what the Curator driver needs; without it a case prints "skipping: ..." and
//! passes, except under `CI=true`.

use std::path::Path;
use std::process::Command;
use zklock_real::driver::DriverKind;
use zklock_real::driver::locate::{self, Launcher};

/// What the driver reported in case `name`, one line a report; None when skipped.
fn case(name: &str) -> Option<Vec<String>> {
    super::driver(DriverKind::CuratorMutex)?;
    let Ok(Launcher::Java {
        java, classpath, ..
    }) = Launcher::prepare(DriverKind::CuratorMutex)
    else {
        panic!("Curator's driver runs in a JVM");
    };
    let dir = tempfile::tempdir().unwrap();
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/CuratorDriverCases.java");
    let built = Command::new(locate::javac())
        .arg("-d")
        .arg(dir.path())
        .args(["-cp", &classpath])
        .arg(source)
        .output()
        .expect("javac runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(java)
        .arg("-cp")
        .arg(format!("{}:{classpath}", dir.path().display()))
        .args(["CuratorDriverCases", name])
        .output()
        .expect("java runs");
    assert!(
        out.status.success(),
        "case {name} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

/// Curator's driver starts on the archive of its classes: a JVM told to use that archive
/// and fail without it (`-Xshare:on`) runs the driver, and Curator's lock classes come
/// from the archive, not from their jars.
#[test]
fn curators_driver_starts_on_its_class_archive() {
    if super::driver(DriverKind::CuratorMutex).is_none() {
        return;
    }
    let Ok(Launcher::Java {
        java,
        classpath,
        archive,
    }) = Launcher::prepare(DriverKind::CuratorMutex)
    else {
        panic!("Curator's driver runs in a JVM");
    };
    let archive = archive.expect("an archive: the JDK has its jar tool");
    let out = Command::new(java)
        .args(locate::JVM_OPTIONS)
        .arg("-Xshare:on")
        .arg(format!("-XX:SharedArchiveFile={}", archive.display()))
        .arg("-Xlog:class+load=info:stdout")
        .args(["-cp", &classpath, "ZklockCuratorDriver", "train"])
        .output()
        .expect("java runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("org.apache.curator.framework.recipes.locks.InterProcessMutex "))
        .expect("the JVM loads InterProcessMutex");
    assert!(line.contains("shared objects file"), "{line}");
}

/// A dropped acquire's cancel can reach the driver before the owner thread starts the
/// acquire; the driver once looked for the acquire to interrupt only once it had started,
/// losing the cancel.
#[test]
fn curators_driver_keeps_a_cancel_sent_before_its_acquire_starts() {
    let Some(reports) = case("cancel_sent_before_its_acquire_starts") else {
        return;
    };
    assert_eq!(
        reports,
        [r#"{"event":"not_acquired","id":1,"reason":"cancelled"}"#],
    );
}

/// A hold whose token cannot be read was once reported as an error and kept, so the
/// workload believed it held nothing while everyone else waited behind its node.
#[test]
fn curators_driver_gives_back_a_hold_whose_token_read_fails() {
    let Some(reports) = case("token_read_fails") else {
        return;
    };
    // The release comes first: the report is written once the hold is given back.
    let [released, error] = reports.as_slice() else {
        panic!("two lines expected: {reports:?}");
    };
    assert_eq!(released, "stand-in released");
    let head = r#"{"event":"error","id":1,"message":"acquired, but its token could not be read ("#;
    assert!(
        error.starts_with(head) && error.ends_with(r#"); released"}"#),
        "{error}"
    );
}
