//! `zklock check --request-time-us`: requests take no virtual time by default, the report
//! names any other request time, a violation's trace records it so that `replay` runs the
//! schedule as the check ran it, and a value past its bound is refused.

use super::{replayed_trace, zklock};

#[test]
fn check_records_its_request_time_in_the_trace_and_replay_runs_it_so() {
    let dir = tempfile::tempdir().unwrap();
    for us in [0u64, 100] {
        let out_dir = format!("out-{us}");
        let args = [
            "check",
            "--recipe",
            "canary-deaf-holder",
            "--clients",
            "2",
            "--faults-max",
            "1",
            "--threads",
            "1",
            "--request-time-us",
            &us.to_string(),
            "--out",
            &out_dir,
        ];
        let (code, out, err) = zklock(&args, dir.path());
        assert_eq!(code, 1, "{out}{err}");
        assert_eq!(
            out.contains(&format!(", requests of {us} us,")),
            us != 0,
            "{out}"
        );
        let trace = replayed_trace(dir.path(), &out);
        assert_eq!(trace.scenario.request_time_us, us);
    }
}

#[test]
fn check_refuses_a_request_time_past_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = zklock(&["check", "--request-time-us", "1000001"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("request_time_us is 1000001, more than its maximum of 1000000"),
        "{err}"
    );
    let (code, _, err) = zklock(&["check", "--request-time-us", "-1"], dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--request-time-us"), "{err}");
}
