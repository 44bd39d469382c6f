//! Kazoo's driver against stand-ins for Kazoo's Lock and client
//! (`kazoo_driver_cases.py`, beside this file): each case scripts an order of events a
//! real server makes only by chance, so that it happens every time. Needs Python with
//! Kazoo (`python3-kazoo`); without it a case prints "skipping: ..." and passes, except
//! under `CI=true`.

use std::path::Path;
use std::process::Command;

fn case(name: &str) {
    let Some(python) = crate::common::kazoo_python() else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg(root.join("tests/drivers/kazoo_driver_cases.py"))
        .arg(root.join("../drivers/kazoo/zklock_driver.py"))
        .arg(name)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == format!("ok {name}"),
        "case {name} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A dropped acquire's cancel can reach the driver before the acquire's thread starts;
/// the driver once cleared Kazoo's cancel flag on that thread, losing the cancel.
#[test]
fn kazoos_driver_keeps_a_cancel_sent_before_its_acquire_starts() {
    case("cancel_sent_before_its_acquire_starts");
}

/// A connection lost between Kazoo's grant and the driver's read of the token: the
/// driver once reported an error and left Kazoo holding (see `drivers.rs` for the same
/// on a real server).
#[test]
fn kazoos_driver_gives_back_a_hold_whose_token_read_fails() {
    case("hold_whose_token_read_fails");
}

/// A grant whose node is gone by the token's read is the library's to answer for: it
/// is reported as a hold with token -1 for the checker to judge, not given back (as
/// `drivers::expiry` needs of Curator's).
#[test]
fn kazoos_driver_reports_a_grant_whose_node_is_gone() {
    case("grant_whose_node_is_gone");
}

/// Kazoo's blocking acquire of a Lock that believes it holds retries forever and reads
/// no cancel: the driver answers with an error instead of hanging.
#[test]
fn kazoos_driver_refuses_an_acquire_while_kazoo_still_holds() {
    case("acquire_of_a_lock_that_still_holds");
}

/// Protocol 2's `fresh` acquire gives the driver a new Kazoo object, which a stale one
/// (believing it still holds) no longer blocks, and a cancel reaches the new one.
#[test]
fn kazoos_driver_takes_a_fresh_lock_object_when_asked() {
    case("a_fresh_object_replaces_a_lock_that_still_holds");
}

/// Protocol 3's reset: the driver answers it only once the old session's requests have
/// ended (their answers come first), reports nothing of that session after it, and gives
/// up (the process then exits, and is not kept) on a request that stays stuck.
#[test]
fn kazoos_driver_resets_only_once_the_old_sessions_requests_have_ended() {
    case("a_reset_waits_for_its_requests_and_gives_up_on_a_stuck_one");
}
