//! The election's canaries on a real server: `zklock real --recipe canary-election-...`
//! runs a latch-shaped canary as `--recipe election-latch` runs the shipped latch, and
//! the run says whether it caught it.

use super::zklock;

/// The latch that takes the node bearing its id for its own, whichever session owns it,
/// is caught once a client declares its session expired while the server still holds
/// it: the aimed isolation at the client's listing after its create (its second
/// getChildren) cuts it off for 4 s while the server keeps the session; zookeeper-client
/// declares it expired after 2.8 s; the client's next session joins (a try, which a
/// latch cannot do, then a timed attempt) and leads on the old session's node. The
/// shipped latch, on the same schedule, checks the node's owner and holds.
#[test]
fn the_reassert_canary_leads_on_a_kept_sessions_node_after_an_isolation_on_a_real_server() {
    if !zklock_real::harness::available_for_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |recipe: &str| {
        zklock(
            &[
                "real",
                "--recipe",
                recipe,
                "--clients",
                "1",
                "--attempts",
                "3",
                "--session-timeout-ms",
                "2000",
                "--faults",
                "none",
                "--warm-up-runs",
                "0",
                "--aim",
                "0:isolate-4000ms:get-children:/zklock/lock:2",
            ],
            dir.path(),
        )
    };
    let (code, out, err) = run("canary-election-reassert-without-owner");
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "canary canary-election-reassert-without-owner: caught \
             (election_leader_owns_node violated, as it must be)"
        ),
        "{out}{err}"
    );
    assert!(out.contains("faults: 1 (partition 1)"), "{out}");
    let (code, out, err) = run("election-latch");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("terms, each on its session's own node")
            && out.contains("faults: 1 (partition 1)"),
        "{out}"
    );
}
