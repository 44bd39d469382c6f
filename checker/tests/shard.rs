//! A check split into shards (`zklock_checker::shard`) against the check in one piece:
//! the shards together reach the same verdict and the same final states, each shard's
//! checkpoint resumes that shard only, and a split that cannot be made is refused.

use std::collections::BTreeSet;
use zklock_checker::shard::{Shard, ShardError, union_states};
use zklock_checker::{
    Bounds, CheckpointError, Control, ExhaustiveReport, SearchError, check_exhaustive_controlled,
};
use zklock_sim::{Recipe, Scenario, ShippedRecipe};

fn search<R: Recipe>(
    recipe: &R,
    bounds: &Bounds,
    control: Control,
) -> Result<ExhaustiveReport, SearchError> {
    check_exhaustive_controlled(
        &Scenario::default(),
        recipe,
        bounds,
        &|r| r.failure().is_some(),
        &|_, _| {},
        control,
    )
}

fn with_finals(shard: Option<Shard>) -> Control {
    Control {
        final_states: true,
        shard,
        ..Control::default()
    }
}

/// Searches every shard of `n` and compares them, together, with the single check;
/// returns the states the shards searched, summed, and the single check's.
fn shards_agree_with_the_single_check(b: &Bounds, n: u32) -> (u64, u64) {
    let lock = ShippedRecipe::default();
    let one = search(&lock, b, with_finals(None)).unwrap();
    assert!(one.complete, "{one}");
    let mut finals = BTreeSet::new();
    let (mut violated, mut summed) = (false, 0);
    let mut sketches = Vec::new();
    for k in 1..=n {
        let r = search(&lock, b, with_finals(Some(Shard::new(k, n).unwrap()))).unwrap();
        let s = r.shard.clone().expect("a shard's report");
        eprintln!(
            "shard {k}/{n}: {r}; first faults of {} of {} kinds",
            s.shard_kinds, s.fault_kinds
        );
        assert!(r.complete || r.violation.is_some(), "shard {k}/{n}: {r}");
        assert_eq!(s.shard_kinds, s.shard.kinds_of(s.fault_kinds), "{s:?}");
        violated |= r.violation.is_some();
        summed += r.distinct_states;
        finals.extend(r.final_states.unwrap());
        sketches.push((s.sketch, r.distinct_states));
    }
    assert_eq!(violated, one.violation.is_some(), "{n} shards");
    assert_eq!(Some(&finals), one.final_states.as_ref(), "{n} shards");
    // Every state of a shard is one of the single check's, and every one of those is
    // some shard's.
    let parts: Vec<(&[u64], u64)> = sketches.iter().map(|(s, n)| (s.as_slice(), *n)).collect();
    let (union, _) = union_states(&parts);
    eprintln!(
        "{n} shards: {summed} states summed, about {union} distinct; one check {}",
        one.distinct_states
    );
    assert!(summed >= union.min(one.distinct_states), "{summed} {union}");
    let (lo, hi) = (one.distinct_states * 9 / 10, one.distinct_states * 11 / 10);
    assert!(
        (lo..=hi).contains(&union),
        "{union} vs {}",
        one.distinct_states
    );
    (summed, one.distinct_states)
}

#[test]
fn the_shards_of_two_clients_with_a_fault_reach_the_single_checks_verdict_and_final_states() {
    let b = Bounds {
        clients: 2,
        faults_max: 1,
        ..Bounds::default()
    };
    for n in [1, 2, 3, 4] {
        shards_agree_with_the_single_check(&b, n);
    }
}

#[test]
fn four_shards_of_three_clients_with_a_fault_reach_the_single_checks_verdict_and_final_states() {
    let b = Bounds {
        clients: 3,
        faults_max: 1,
        schedules_max: u64::MAX,
        time_limit_ms: 3_600_000,
        threads: 2,
        ..Bounds::default()
    };
    let (summed, one) = shards_agree_with_the_single_check(&b, 4);
    // The split divides the work: the shards share the fault-free states and a few that
    // two kinds of first fault both lead to (pinned: update knowingly).
    assert_eq!((summed, one), (SUMMED_3C1F_4, 74_950), "{summed} of {one}");
}

/// The states the 4 shards of 3 clients with a fault search, summed.
const SUMMED_3C1F_4: u64 = 81_348;

#[test]
fn a_shards_checkpoint_resumes_that_shard_only() {
    let lock = ShippedRecipe::default();
    let b = Bounds {
        clients: 2,
        faults_max: 1,
        threads: 1,
        ..Bounds::default()
    };
    let shard = Shard::new(1, 2).unwrap();
    let whole = search(&lock, &b, with_finals(Some(shard))).unwrap();
    assert!(whole.complete, "{whole}");
    let step = Bounds {
        schedules_max: whole.schedules / 2,
        ..b.clone()
    };
    let control = Control {
        checkpoint: true,
        shard: Some(shard),
        ..Control::default()
    };
    let r = search(&lock, &step, control).unwrap();
    assert!(!r.complete, "{r}");
    let checkpoint = r.checkpoint.expect("a checkpoint of the stopped shard");
    for other in [Some(Shard::new(2, 2).unwrap()), None] {
        let refused = search(
            &lock,
            &b,
            Control {
                resume: Some(checkpoint.clone()),
                shard: other,
                ..Control::default()
            },
        );
        assert!(
            matches!(
                refused,
                Err(SearchError::Checkpoint(CheckpointError::Mismatch {
                    what: "recipe",
                    ..
                }))
            ),
            "{other:?}: {refused:?}"
        );
    }
    let resumed = search(
        &lock,
        &b,
        Control {
            resume: Some(checkpoint),
            shard: Some(shard),
            final_states: true,
            ..Control::default()
        },
    )
    .unwrap();
    assert!(resumed.complete, "{resumed}");
    // On one thread, resuming runs exactly the schedules left.
    assert_eq!(resumed.schedules, whole.schedules, "{resumed}");
    assert_eq!(resumed.distinct_states, whole.distinct_states, "{resumed}");
}

#[test]
fn a_search_reducing_by_partial_order_is_not_split() {
    let b = Bounds {
        partial_order: true,
        ..Bounds::default()
    };
    let r = search(
        &ShippedRecipe::default(),
        &b,
        with_finals(Some(Shard::new(1, 2).unwrap())),
    );
    assert!(
        matches!(r, Err(SearchError::Shard(ShardError::PartialOrder))),
        "{r:?}"
    );
}
