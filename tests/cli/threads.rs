//! `zklock check --threads`: the search on several threads reaches the states of one
//! thread and reports the same violation with the same trace, stops and resumes through
//! its checkpoint; out-of-range counts are refused.

use super::zklock;

/// The "recipe ..." line's counts after `: `, from distinct states on (the schedules
/// of a search on several threads include work done in vain).
fn states(out: &str) -> String {
    let line = out.lines().find(|l| l.starts_with("recipe ")).unwrap();
    let counts = line.split(": ").nth(1).unwrap();
    counts
        .split(", ")
        .filter(|p| p.contains("distinct states") || p.contains("complete"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn check_on_two_threads_reaches_the_states_of_one_and_reports_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--clients", "2", "--faults-max", "1"];
        args.extend_from_slice(extra);
        zklock(&args, dir.path())
    };
    let (code, one, err) = check(&["--threads", "1"]);
    assert_eq!(code, 0, "{one}{err}");
    assert!(!one.contains("threads"), "{one}");
    let (code, two, err) = check(&["--threads", "2"]);
    assert_eq!(code, 0, "{two}{err}");
    assert!(two.contains("symmetry on, 2 threads: "), "{two}");
    assert_eq!(states(&two), states(&one));
    assert!(states(&one).contains("7265 distinct states"), "{one}");

    // A canary: the same violation, and the same trace, on one thread and on two.
    let canary = |threads: &str, out: &str| {
        let args = [
            "check",
            "--recipe",
            "canary-deaf-holder",
            "--threads",
            threads,
            "--out",
            out,
        ];
        let (code, stdout, err) = zklock(&args, dir.path());
        assert_eq!(code, 1, "{stdout}{err}");
        let trace = std::fs::read_dir(dir.path().join(out))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap();
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
        trace["choices"].clone()
    };
    let one = canary("1", "one");
    assert!(one.as_array().is_some_and(|c| !c.is_empty()), "{one}");
    assert_eq!(canary("2", "two"), one);
}

#[test]
fn check_refuses_threads_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    for n in ["0", "1025", "many"] {
        let (code, _, err) = zklock(&["check", "--threads", n], dir.path());
        assert_eq!(code, 2, "--threads {n}: {err}");
        assert!(err.contains("--threads"), "{err}");
    }
}

/// `--threads 2 --checkpoint F` is accepted: stopped by `--schedules-max`, the check
/// writes F, and the same command resumes it (on two threads, then on one) until it
/// completes with the states of the check run in one go. Requests take 100 µs, which
/// the checkpoint records: a search large enough for three parts.
#[test]
fn check_on_two_threads_with_a_checkpoint_stops_writes_it_and_resumes_to_the_states_of_one_go() {
    let dir = tempfile::tempdir().unwrap();
    let part = |threads: &str| {
        let args = [
            "check",
            "--clients",
            "2",
            "--faults-max",
            "1",
            "--schedules-max",
            "4000",
            "--request-time-us",
            "100",
            "--checkpoint",
            "c.ckpt",
            "--threads",
            threads,
        ];
        zklock(&args, dir.path())
    };
    let (code, out, err) = part("2");
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("requests of 100 us, symmetry on, 2 threads: "),
        "{out}"
    );
    assert!(out.contains("checkpoint: c.ckpt"), "{out}");
    assert!(dir.path().join("c.ckpt").exists());
    let (code, out, err) = part("2");
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("resumed after 4000 schedules"), "{out}");
    let mut stops = 2;
    let last = loop {
        let (code, out, err) = part("1");
        if code == 0 {
            break out;
        }
        assert_eq!(code, 3, "{out}{err}");
        stops += 1;
        assert!(stops < 100, "{out}");
    };
    assert!(last.contains("resumed after "), "{last}");
    assert!(last.contains("ok: every property held"), "{last}");
    assert_eq!(states(&last), "39673 distinct states, complete", "{last}");
}

/// A canary stopped on two threads after its first schedule, before its violation, and
/// resumed on two from its checkpoint reports the violation of the search on one thread,
/// with its trace, and says where it comes from.
#[test]
fn a_canary_resumed_on_two_threads_from_its_checkpoint_reports_the_one_thread_trace() {
    let dir = tempfile::tempdir().unwrap();
    let check = |extra: &[&str], out: &str| {
        let mut args = vec!["check", "--recipe", "canary-deaf-holder", "--out", out];
        args.extend_from_slice(extra);
        zklock(&args, dir.path())
    };
    let trace = |out: &str| {
        let path = std::fs::read_dir(dir.path().join(out))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap();
        let t: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        t["choices"].clone()
    };
    let (code, one, err) = check(&["--threads", "1"], "one");
    assert_eq!(code, 1, "{one}{err}");
    let parts = ["--threads", "2", "--checkpoint", "c.ckpt"];
    let first: Vec<&str> = parts
        .iter()
        .copied()
        .chain(["--schedules-max", "1"])
        .collect();
    let (code, out, err) = check(&first, "two");
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("checkpoint: c.ckpt"), "{out}");
    let (code, out, err) = check(&parts, "two");
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("resumed after 1 schedule,"), "{out}");
    assert!(
        out.contains("the violation is the first of the search on one thread"),
        "{out}"
    );
    assert_eq!(trace("two"), trace("one"));
}
