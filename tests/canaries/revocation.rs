//! Revocation's canaries, each caught by explore within the default budget on the
//! property it must violate, and by the exhaustive check at a pinned bound; and the
//! shipped revocable lock, which holds at the same bounds.

use super::election::zklock;
use zklock_canaries::{RevocationBug, RevocationCanary};
use zklock_checker::{Bounds, Budget, check_exhaustive, explore_until};
use zklock_sim::{Recipe, RevocableRecipe};

#[test]
fn every_revocation_canary_is_caught_by_explore_from_its_own_scenario() {
    for bug in RevocationBug::ALL {
        let canary = RevocationCanary(bug);
        let e = explore_until(
            &canary.scenario(),
            &canary,
            &Budget::default(),
            &|_, _| {},
            &|r| r.violates(bug.caught_by()),
        )
        .unwrap();
        assert!(
            e.failure.is_some(),
            "{} survived the default budget on {}",
            bug.name(),
            bug.caught_by()
        );
    }
}

/// The bound at which `check` catches `bug`: a holder and a revoker, no fault; the
/// sticky flag needs a second hold of the revoked lock object.
fn bound_of(bug: RevocationBug) -> Bounds {
    Bounds {
        faults_max: 0,
        acquisitions_per_client: match bug {
            RevocationBug::StickyFlag => 2,
            _ => 1,
        },
        ..Bounds::default()
    }
}

/// The schedules `check` explores before it finds each canary, at [`bound_of`]. Pinned,
/// as the lock's canaries' are: update them knowingly. Each bug shows on the first
/// schedule, with no fault: the revoker's one request lands in the hold.
fn schedules_to(bug: RevocationBug) -> u64 {
    match bug {
        RevocationBug::Unwatched => 1,
        RevocationBug::ForcedDelete => 1,
        RevocationBug::StickyFlag => 1,
    }
}

#[test]
fn check_catches_every_revocation_canary_at_its_pinned_bound() {
    for bug in RevocationBug::ALL {
        let canary = RevocationCanary(bug);
        let r = check_exhaustive(&canary.scenario(), &canary, &bound_of(bug)).unwrap();
        let run = r
            .violation
            .as_ref()
            .unwrap_or_else(|| panic!("{} survived the check: {r}", bug.name()));
        assert!(
            run.violates(bug.caught_by()),
            "{}: {}",
            bug.name(),
            run.report
        );
        assert_eq!(r.schedules, schedules_to(bug), "{}: {r}", bug.name());
    }
}

/// The shipped revocable lock holds on every schedule of the canaries' bounds, and of
/// `zklock check`'s default bound (a holder and a revoker, one fault), and at three
/// clients (a reader, a writer and a revoker) without a fault. The counts are pinned:
/// update them knowingly.
#[test]
fn the_shipped_revocable_lock_holds_on_every_schedule_of_small_bounds() {
    let recipe = RevocableRecipe::default();
    let sc = recipe.scenario();
    let three = Bounds {
        clients: 3,
        faults_max: 0,
        ..Bounds::default()
    };
    let twice = bound_of(RevocationBug::StickyFlag);
    let counts = [&Bounds::default(), &three, &twice].map(|b| {
        let r = check_exhaustive(&sc, &recipe, b).unwrap();
        assert!(r.complete && r.violation.is_none(), "{b:?}: {r}");
        r.schedules
    });
    assert_eq!(counts, [272, 372, 1]);
}

/// Each canary's minimized trace (explore's shrunk trace, saved with `zklock replay ...
/// --save`) replays exactly to the property it must violate.
#[test]
fn the_revocation_canaries_traces_replay_to_their_violations() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/revocation");
    for bug in RevocationBug::ALL {
        let trace = zklock_checker::Trace::read(&dir.join(format!("{}.json", bug.name()))).unwrap();
        assert_eq!(trace.recipe, bug.name());
        let run = zklock_checker::replay(&trace, &RevocationCanary(bug)).unwrap();
        assert!(
            trace.same_history(&run.outcome.history),
            "{}: the replay parted from the trace",
            bug.name()
        );
        assert!(
            run.violates(bug.caught_by()),
            "{}: {}",
            bug.name(),
            run.report
        );
    }
}

/// `zklock explore --recipe NAME` with no other flag catches each revocation canary
/// (exit 1, a violation), and holds on the shipped revocable lock over its first seeds;
/// revokers are refused where no lock is held.
#[test]
fn the_binary_catches_every_revocation_canary_by_name_and_refuses_revokers_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    for bug in RevocationBug::ALL {
        let (code, text) = zklock(
            &["explore", "--recipe", bug.name(), "--no-shrink"],
            dir.path(),
        );
        assert_eq!(code, Some(1), "{}: {text}", bug.name());
        assert!(text.contains("VIOLATED"), "{}: {text}", bug.name());
        assert!(text.contains(bug.caught_by()), "{}: {text}", bug.name());
    }
    let (code, text) = zklock(
        &["explore", "--recipe", "revocable", "--seeds", "200"],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("revocation: "), "{text}");
    assert!(text.contains("holds given up when asked"), "{text}");
    for (recipe, family) in [
        ("semaphore", "the semaphore"),
        ("queue", "the work queue"),
        ("election-latch", "the election"),
    ] {
        let (code, text) = zklock(
            &["explore", "--recipe", recipe, "--revokers", "1"],
            dir.path(),
        );
        assert_eq!(code, Some(2), "{recipe}: {text}");
        assert!(
            text.contains(&format!("--revokers does not apply to {family}")),
            "{recipe}: {text}"
        );
    }
    let (code, text) = zklock(
        &[
            "explore",
            "--clients",
            "3",
            "--readers",
            "2",
            "--revokers",
            "1",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("leave no writer"), "{text}");
}
