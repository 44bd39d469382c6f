use super::{
    TRACE_BYTES_MAX, TRACE_FORMAT_VERSION, Trace, TraceError, ZKLOCK_COMMIT, ZKLOCK_VERSION,
};
use crate::properties::{CheckConfig, check_all};
use crate::testkit::Hb;
use crate::trace::SavedReport;
use std::fs;
use std::path::{Path, PathBuf};
use zklock_recipe::history::{EventKind, History};
use zklock_recipe::{EventType, SessionState};
use zklock_sim::{Scenario, ScenarioError};

fn sample() -> Trace {
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.write(1, 1, true, false, false);
    h.release(1, 1);
    Trace::new(
        Scenario::default(),
        42,
        vec![0, 3, 1, 2],
        "mutex",
        h.build(),
        Some("mutual_exclusion".into()),
    )
}

/// Writes `text` as a trace file in a fresh directory.
fn file_with(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("bad.json");
    fs::write(&path, text).unwrap();
    path
}

fn sample_json() -> serde_json::Value {
    serde_json::to_value(sample()).unwrap()
}

#[test]
fn write_then_read_round_trips_with_a_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let trace = sample();
    trace.write(&path).unwrap();
    assert_eq!(Trace::read(&path).unwrap(), trace);
    assert_eq!(trace.format_version, TRACE_FORMAT_VERSION);
    assert_eq!(trace.zklock_version, ZKLOCK_VERSION);
    let timeline = fs::read_to_string(Trace::timeline_path(&path)).unwrap();
    assert_eq!(timeline, trace.timeline());
    assert!(timeline.contains("recipe mutex, seed 42"));
    assert!(timeline.contains("legend:"));
    // Overwriting works, and no temporary file is left behind.
    trace.write(&path).unwrap();
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "run.json",
            "run.json.timeline.html",
            "run.json.timeline.txt"
        ]
    );
    let html = fs::read_to_string(Trace::html_path(&path)).unwrap();
    assert_eq!(html, trace.timeline_html());
}

#[test]
fn timeline_path_appends_a_suffix() {
    assert_eq!(
        Trace::timeline_path(Path::new("traces/a.json")),
        PathBuf::from("traces/a.json.timeline.txt")
    );
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.json");
    let err = Trace::read(&path).unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }), "{err:?}");
    assert_eq!(err.path(), path);
    assert!(err.to_string().contains("absent.json"), "{err}");
}

#[test]
fn write_into_a_missing_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/run.json");
    let err = sample().write(&path).unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("run.json"), "{err}");
}

#[test]
fn truncated_file_is_reported_as_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let full = serde_json::to_string_pretty(&sample()).unwrap();
    let path = file_with(&dir, &full[..full.len() / 2]);
    let err = Trace::read(&path).unwrap_err();
    assert!(matches!(err, TraceError::Truncated { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("bad.json") && msg.contains("truncated"),
        "{msg}"
    );
}

#[test]
fn empty_file_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let err = Trace::read(&file_with(&dir, "")).unwrap_err();
    assert!(matches!(err, TraceError::Truncated { .. }), "{err:?}");
}

#[test]
fn bad_json_is_corrupt_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_with(&dir, "{\n  \"format_version\": 1,\n  \"seed\": oops\n}\n");
    let err = Trace::read(&path).unwrap_err();
    match &err {
        TraceError::Corrupt { line, column, .. } => assert_eq!((*line, *column), (3, 11)),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("bad.json is corrupt at line 3, column 11"),
        "{msg}"
    );
}

#[test]
fn binary_garbage_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    fs::write(&path, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    let err = Trace::read(&path).unwrap_err();
    assert!(matches!(err, TraceError::Corrupt { .. }), "{err:?}");
}

#[test]
fn wrong_type_is_corrupt_and_says_what() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample_json();
    v["seed"] = serde_json::json!("forty-two");
    let path = file_with(&dir, &serde_json::to_string_pretty(&v).unwrap());
    let err = Trace::read(&path).unwrap_err();
    match &err {
        TraceError::Corrupt { line, what, .. } => {
            assert!(*line > 0);
            assert!(what.contains("invalid type"), "{what}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn not_an_object_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let err = Trace::read(&file_with(&dir, "[1, 2, 3]")).unwrap_err();
    assert!(matches!(err, TraceError::Corrupt { .. }), "{err:?}");
    let err = Trace::read(&file_with(&dir, "{\"format_version\": -1}")).unwrap_err();
    assert!(err.to_string().contains("format_version"), "{err}");
}

#[test]
fn newer_format_is_reported_before_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample_json();
    v["format_version"] = serde_json::json!(TRACE_FORMAT_VERSION + 1);
    v["history"] = serde_json::json!({"a_shape": "this zklock does not know"});
    v["new_field"] = serde_json::json!(true);
    let path = file_with(&dir, &v.to_string());
    let err = Trace::read(&path).unwrap_err();
    match &err {
        TraceError::NewerFormat {
            found, supported, ..
        } => assert_eq!(
            (*found, *supported),
            (TRACE_FORMAT_VERSION + 1, TRACE_FORMAT_VERSION)
        ),
        other => panic!("expected NewerFormat, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("bad.json") && msg.contains("newer zklock"),
        "{msg}"
    );
}

#[test]
fn missing_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = sample_json();
    v.as_object_mut().unwrap().remove("seed");
    let err = Trace::read(&file_with(&dir, &v.to_string())).unwrap_err();
    match &err {
        TraceError::MissingField { field, .. } => assert_eq!(field, "seed"),
        other => panic!("expected MissingField, got {other:?}"),
    }
    assert!(err.to_string().contains("`seed`"), "{err}");

    v.as_object_mut().unwrap().remove("format_version");
    let err = Trace::read(&file_with(&dir, &v.to_string())).unwrap_err();
    assert!(
        matches!(&err, TraceError::MissingField { field, .. } if field == "format_version"),
        "{err:?}"
    );
}

#[test]
fn a_trace_names_its_commit_and_one_without_a_commit_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sample();
    assert_eq!(trace.zklock_commit, ZKLOCK_COMMIT);
    // Built from a git checkout, as the tests are: a commit is known.
    assert_eq!(ZKLOCK_COMMIT.len(), 12, "{ZKLOCK_COMMIT:?}");
    assert!(
        trace
            .timeline()
            .contains(&format!("(commit {ZKLOCK_COMMIT})"))
    );
    // Traces written before the commit was recorded have no such field.
    let mut old = sample_json();
    old.as_object_mut().unwrap().remove("zklock_commit");
    let path = file_with(&dir, &old.to_string());
    let read = Trace::read(&path).unwrap();
    assert_eq!(read.zklock_commit, "");
    assert!(!read.timeline().contains("commit"));
}

/// Traces and timelines were written 0644, readable by every user of the machine.
#[cfg(unix)]
#[test]
fn trace_files_are_private_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    sample().write(&path).unwrap();
    for p in [path.clone(), Trace::timeline_path(&path)] {
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", p.display());
    }
}

#[test]
fn a_lock_path_of_empty_or_doubled_slash_is_refused_when_loaded() {
    // Such a trace once panicked in the shipped recipe's constructor on replay and shrink.
    let dir = tempfile::tempdir().unwrap();
    for path in ["", "//"] {
        let mut v = sample_json();
        v["scenario"]["lock_path"] = serde_json::json!(path);
        let err = Trace::read(&file_with(&dir, &v.to_string())).unwrap_err();
        assert!(
            matches!(
                &err,
                TraceError::Invalid {
                    error: ScenarioError::LockPath { .. },
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("bad.json") && msg.contains("lock_path"),
            "{msg}"
        );
    }
}

#[test]
fn a_trace_is_checked_against_the_scenario_bounds_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (field, value) in [
        (
            "acquisitions_per_client",
            serde_json::json!(4_294_967_295u64),
        ),
        ("time_limit_ms", serde_json::json!(u64::MAX)),
        ("heal_ms", serde_json::json!(u64::MAX)),
        ("session_timeout_ms", serde_json::json!(u64::MAX)),
        ("clients", serde_json::json!(65)),
    ] {
        let mut v = sample_json();
        v["scenario"][field] = value;
        let err = Trace::read(&file_with(&dir, &v.to_string())).unwrap_err();
        assert!(
            matches!(&err, TraceError::Invalid { .. }),
            "{field}: {err:?}"
        );
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn a_file_past_trace_bytes_max_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    // Sparse: no disk is used, and nothing is read.
    fs::File::create(&path)
        .unwrap()
        .set_len(TRACE_BYTES_MAX + 1)
        .unwrap();
    let err = Trace::read(&path).unwrap_err();
    match &err {
        TraceError::TooLarge { bytes, max, .. } => {
            assert_eq!((*bytes, *max), (TRACE_BYTES_MAX + 1, TRACE_BYTES_MAX))
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(err.to_string().contains("huge.json"), "{err}");
}

/// Two clients believe they hold at once after a forced expiry of the first; the second
/// is woken by a watch event.
fn overlapping() -> (History, SavedReport) {
    use zklock_recipe::history::FaultKind;
    let mut h = Hb::new();
    h.acquire(1, 1);
    h.at_ms(5);
    h.fault(1, FaultKind::ForcedExpiry);
    h.ev(
        2,
        EventKind::WatchEvent {
            event_type: EventType::NodeDeleted,
            path: "/zklock/lock/_c_1-1-lock-0000000001".into(),
        },
    );
    h.acquire(2, 2);
    h.at_ms(9);
    h.session(1, SessionState::Expired);
    h.release(1, 1);
    let history = h.build();
    let report = check_all(&history, &CheckConfig::default());
    assert_eq!(report.violated(), ["mutual_exclusion"], "{report}");
    (history, SavedReport::of_report(&report))
}

fn with_report() -> Trace {
    let (history, report) = overlapping();
    Trace::new(
        Scenario::default(),
        7,
        vec![1, 2],
        "mutex",
        history,
        Some("mutual_exclusion".into()),
    )
    .with_report(report)
}

#[test]
fn the_report_travels_with_the_trace_and_marks_its_events_in_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let trace = with_report();
    trace.write(&path).unwrap();
    let back = Trace::read(&path).unwrap();
    assert_eq!(back, trace);
    let report = back.report.as_ref().unwrap();
    let v = &report.violations[0];
    assert_eq!(v.property, "mutual_exclusion");
    assert!(!v.events.is_empty() && !v.faults_before.is_empty(), "{v:?}");
    let timeline = back.timeline();
    assert!(
        timeline.contains("VIOLATED: mutual_exclusion"),
        "{timeline}"
    );
    for e in &v.events {
        let line = timeline
            .lines()
            .filter(|l| l.contains(" ms  c") && l.contains("  holders {"))
            .nth(e.index)
            .unwrap();
        assert!(
            line.contains(&format!("<- mutual_exclusion: {}", e.role)),
            "event #{} unmarked: {line}",
            e.index
        );
    }
    assert!(timeline.contains("mutual_exclusion: fault just before"));
    assert!(timeline.contains("watch event NodeDeleted /zklock/lock/"));
}

#[test]
fn a_report_naming_an_event_past_the_history_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let mut json = serde_json::to_value(with_report()).unwrap();
    json["report"]["violations"][0]["events"][0]["index"] = 9999.into();
    let path = file_with(&dir, &json.to_string());
    let e = Trace::read(&path).unwrap_err();
    assert!(matches!(e, TraceError::Corrupt { .. }), "{e:?}");
    assert!(e.to_string().contains("names event #9999"), "{e}");
}

#[test]
fn a_format_1_trace_without_watch_events_replays_as_the_same_history() {
    let mut old = sample();
    old.format_version = 1;
    let mut replayed = old.history.clone();
    let watch = replayed.events[0].clone();
    replayed.events.insert(
        1,
        zklock_recipe::history::Event {
            kind: EventKind::WatchEvent {
                event_type: EventType::NodeDeleted,
                path: "/a".into(),
            },
            ..watch
        },
    );
    assert!(old.same_history(&old.history));
    assert!(old.same_history(&replayed));
    // A current trace records its watch events: leaving one out is a difference.
    let current = Trace {
        format_version: TRACE_FORMAT_VERSION,
        ..old.clone()
    };
    assert!(!current.same_history(&replayed));
    // And a format-1 history that differs otherwise still differs.
    replayed.events.pop();
    assert!(!old.same_history(&replayed));
}

#[test]
fn a_format_2_trace_without_produce_calls_replays_as_the_same_history() {
    let mut old = sample();
    old.format_version = 2;
    let mut replayed = old.history.clone();
    let first = replayed.events[0].clone();
    let at = |kind| zklock_recipe::history::Event {
        kind,
        ..first.clone()
    };
    replayed.events.insert(1, at(EventKind::ProduceInvoked));
    replayed.events.insert(
        2,
        at(EventKind::ProduceFailed {
            reason: "session expired".into(),
        }),
    );
    assert!(old.same_history(&replayed));
    // A format-2 history records its watch events: leaving one out is a difference.
    let watch = at(EventKind::WatchEvent {
        event_type: EventType::NodeDeleted,
        path: "/a".into(),
    });
    let mut with_watch = replayed.clone();
    with_watch.events.insert(1, watch);
    assert!(!old.same_history(&with_watch));
    // A current trace records its produce calls: leaving them out is a difference.
    let current = Trace {
        format_version: TRACE_FORMAT_VERSION,
        ..old.clone()
    };
    assert!(!current.same_history(&replayed));
    assert!(current.same_history(&old.history));
}

/// A trace whose session timeout was 0 replayed (and failed, exit 1), where `real`
/// refuses anything below 400 ms.
#[test]
fn a_trace_outside_the_flags_bounds_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = sample();
    t.scenario.session_timeout_ms = 0;
    let path = dir.path().join("zero.json");
    t.write(&path).unwrap();
    let err = Trace::read(&path).unwrap_err().to_string();
    assert!(err.contains("session_timeout_ms is 0"), "{err}");
    let ok = dir.path().join("ok.json");
    sample().write(&ok).unwrap();
    assert!(Trace::read(&ok).is_ok());
}
