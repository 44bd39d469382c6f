//! The work queue's canaries, each caught by explore within the default budget (100
//! seeds, every fault on) on the property it must violate.

use zklock_canaries::{QueueBug, QueueCanary};
use zklock_checker::{Budget, explore};
use zklock_sim::Scenario;

fn caught(bug: QueueBug) {
    let e = explore(
        &Scenario::default(),
        &QueueCanary(bug),
        &Budget::default(),
        &|_, _| {},
    )
    .unwrap();
    let (seed, run) = e
        .failure
        .unwrap_or_else(|| panic!("{} survived the default budget", bug.name()));
    assert!(
        run.violates(bug.caught_by()),
        "{} seed {seed}: {}",
        bug.name(),
        run.report
    );
}

#[test]
fn a_consumer_that_skips_the_existence_check_is_caught() {
    caught(QueueBug::NoExistsCheck);
}

#[test]
fn a_consumer_whose_item_locks_are_persistent_is_caught() {
    caught(QueueBug::PersistentLock);
}

#[test]
fn a_consumer_that_deletes_the_item_before_processing_is_caught() {
    caught(QueueBug::DeleteBeforeDone);
}

/// Each canary's minimized trace (saved with `zklock replay ... --save`) replays
/// exactly to the property it must violate.
#[test]
fn the_queue_canaries_traces_replay_to_their_violations() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/queue");
    for bug in QueueBug::ALL {
        let trace = zklock_checker::Trace::read(&dir.join(format!("{}.json", bug.name()))).unwrap();
        assert_eq!(trace.recipe, bug.name());
        let run = zklock_checker::replay(&trace, &QueueCanary(bug)).unwrap();
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
