//! An exhaustive check split over processes (`zklock check --shard K/N`).
//!
//! **The split.** A shard searches the schedules whose first fault is of a kind it
//! owns: the `i`-th of the check's fault kinds (in the order a fault choice lists them)
//! belongs to shard `i mod N + 1`. Schedules without a fault are every shard's. A run
//! whose first fault is another shard's stops at its next state, and leaves that state
//! out of its seen set. The split is a pure function of the scenario and N.
//!
//! **Why a shard is sound on its own, and why it divides the work.** A state's digest
//! counts the faults injected, so a state after a fault is never one without. Each shard
//! searches every fault-free state, with a seen set of its own: the first visit of one
//! takes every continuation the shard allows (no fault, or a first fault it owns), and the
//! shard allows the same continuations at every visit, so pruning a later visit loses
//! nothing; after the first fault it allows everything, as the check in one piece does.
//! The shards together thus reach every state of the tree: the same final states and
//! the same verdict as the check in one piece. What they share is the fault-free part,
//! small beside the rest (3 clients: 11,177 states of 602,835 with a fault), and the
//! states two kinds of first fault both lead to. An earlier split at a prefix of the
//! tree's choices shared nearly everything: the first choices (where a fault strikes,
//! whose request runs first) are made before anything tells them apart, so subtrees met
//! again within a few steps. Past as many shards as the check has fault kinds, a shard
//! owns no kind and searches the fault-free part only: under symmetry, the client a fault
//! strikes does not keep states apart, so there is nothing further to split on.
//!
//! **Counting the duplicated work.** Each shard keeps a sketch of its seen states: the
//! [`SKETCH_STATES`] smallest of their digests re-hashed to 64 bits (the canonical
//! digests of symmetry reduction are minima, not uniform; the re-hash makes them so). The
//! union's count is then estimated from the merged sketches (k-minimum values, about
//! 1.6 % standard error at 4096), or counted exactly when every shard's sketch holds all
//! its states.

use crate::seen::SeenStates;
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;
use std::fmt;
use zklock_sim::Scenario;

/// Shards of one check at most: a split into more pieces than this costs more in the
/// states shards share than it gains.
pub const SHARDS_MAX: u32 = 1024;
/// State digests a shard's sketch keeps (8 bytes each).
pub const SKETCH_STATES: usize = 4096;

/// Shard `index` of `count` (from 1: `K/N` on the command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// A shard that is none of the check's.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardError {
    /// Not of the form `K/N` with two whole numbers.
    Malformed(String),
    /// N is 0.
    NoShards,
    /// K is 0 or above N.
    IndexOutOfRange { index: u32, count: u32 },
    /// N is above [`SHARDS_MAX`].
    TooMany { count: u32, max: u32 },
    /// A search that reduces by partial order cannot be split: its sleep sets follow one
    /// run after another across the whole tree.
    PartialOrder,
}

impl fmt::Display for ShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardError::Malformed(s) => {
                write!(f, "a shard is K/N (for example 2/8), got {s:?}")
            }
            ShardError::NoShards => write!(f, "a check splits into at least 1 shard, got 0"),
            ShardError::IndexOutOfRange { index, count } => {
                write!(f, "shard {index}/{count}: K must be 1 to {count}")
            }
            ShardError::TooMany { count, max } => {
                write!(f, "{count} shards: a check splits into at most {max}")
            }
            ShardError::PartialOrder => write!(
                f,
                "a search reducing by partial order cannot be split into shards: its sleep \
                 sets follow one run after another"
            ),
        }
    }
}

impl std::error::Error for ShardError {}

impl Shard {
    /// Shard `index` (from 1) of `count`, both within bounds.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if count > SHARDS_MAX {
            return Err(ShardError::TooMany {
                count,
                max: SHARDS_MAX,
            });
        }
        if index == 0 || index > count {
            return Err(ShardError::IndexOutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// Whether the `i`-th fault kind (from 0) is this shard's.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count as usize + 1 == self.index as usize
    }

    /// Whether a run whose first fault is option `option` of its fault choice (option
    /// 0 is no fault) is this shard's.
    pub fn owns_first_fault(&self, option: usize) -> bool {
        option == 0 || self.owns(option - 1)
    }

    /// How many of `kinds` fault kinds are this shard's.
    pub fn kinds_of(&self, kinds: u64) -> u64 {
        let (n, k) = (u64::from(self.count), u64::from(self.index - 1));
        kinds / n + u64::from(kinds % n > k)
    }

    /// The name a shard's checkpoint gives its recipe, so that a checkpoint of one shard
    /// (or of the whole check) never resumes another.
    pub(crate) fn checkpoint_recipe(&self, recipe: &str) -> String {
        format!("{recipe} (shard {self})")
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let malformed = || ShardError::Malformed(s.to_owned());
        let (k, n) = s.split_once('/').ok_or_else(malformed)?;
        let k: u32 = k.trim().parse().map_err(|_| malformed())?;
        let n: u32 = n.trim().parse().map_err(|_| malformed())?;
        Shard::new(k, n)
    }
}

/// The kinds of fault a check places, as its fault choices list them: those whose
/// rate is not never.
pub fn fault_kinds(scenario: &Scenario) -> u64 {
    scenario.faults.kinds_on() as u64
}

/// A 64-bit re-hash of a state digest (splitmix64's finaliser over both halves), uniform
/// where the digest may not be.
fn mix(d: u128) -> u64 {
    fn fin(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fin(d as u64 ^ fin((d >> 64) as u64))
}

/// The [`SKETCH_STATES`] smallest re-hashed digests of `seen`, ascending.
pub(crate) fn sketch(seen: &SeenStates) -> Vec<u64> {
    let mut heap = BinaryHeap::with_capacity(SKETCH_STATES + 1);
    seen.for_each(|d| {
        let h = mix(d);
        if heap.len() < SKETCH_STATES {
            heap.push(h);
        } else if heap.peek().is_some_and(|&top| h < top) {
            heap.pop();
            heap.push(h);
        }
    });
    let mut v = heap.into_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// The number of distinct states of the shards together, from their sketches and
/// counts: exact (`true`) when every sketch holds all its shard's states, else the
/// k-minimum-values estimate.
pub fn union_states(shards: &[(&[u64], u64)]) -> (u64, bool) {
    let mut all: Vec<u64> = shards.iter().flat_map(|(s, _)| s.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    if shards.iter().all(|(s, n)| s.len() as u64 >= *n) {
        return (all.len() as u64, true);
    }
    // Only the k smallest of the union are its k smallest: a shard's sketch holds none
    // past its own k-th.
    let k = SKETCH_STATES.min(all.len());
    if k < 2 {
        return (shards.iter().map(|(_, n)| n).sum(), false);
    }
    let kth = all[k - 1] as f64 + 1.0;
    let estimate = (k - 1) as f64 * (u64::MAX as f64 + 1.0) / kth;
    (estimate.round() as u64, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_k_of_n_within_bounds() {
        assert_eq!("2/8".parse(), Ok(Shard { index: 2, count: 8 }));
        assert_eq!(
            "0/8".parse::<Shard>(),
            Err(ShardError::IndexOutOfRange { index: 0, count: 8 })
        );
        assert_eq!(
            "9/8".parse::<Shard>(),
            Err(ShardError::IndexOutOfRange { index: 9, count: 8 })
        );
        assert_eq!("1/0".parse::<Shard>(), Err(ShardError::NoShards));
        assert_eq!(
            "1/1025".parse::<Shard>(),
            Err(ShardError::TooMany {
                count: 1025,
                max: SHARDS_MAX
            })
        );
        assert!(matches!(
            "2".parse::<Shard>(),
            Err(ShardError::Malformed(_))
        ));
        assert!(matches!(
            "a/b".parse::<Shard>(),
            Err(ShardError::Malformed(_))
        ));
    }

    #[test]
    fn every_fault_kind_belongs_to_exactly_one_shard_and_no_fault_to_all() {
        for n in 1..=10u32 {
            let shards: Vec<Shard> = (1..=n).map(|k| Shard::new(k, n).unwrap()).collect();
            for i in 0..8 {
                assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1);
                assert_eq!(
                    shards.iter().filter(|s| s.owns_first_fault(i + 1)).count(),
                    1
                );
            }
            assert!(shards.iter().all(|s| s.owns_first_fault(0)));
            let total: u64 = shards.iter().map(|s| s.kinds_of(8)).sum();
            assert_eq!(total, 8);
            for s in &shards {
                assert_eq!(s.kinds_of(8), (0..8).filter(|&i| s.owns(i)).count() as u64);
            }
        }
        assert_eq!(fault_kinds(&Scenario::default()), 8);
    }

    #[test]
    fn the_union_is_exact_from_whole_sketches_and_close_from_partial_ones() {
        let seen = |r: std::ops::Range<u128>| SeenStates::new(r.map(|i| i * 7919));
        let (a, b) = (seen(0..1000), seen(500..1800));
        let (sa, sb) = (sketch(&a), sketch(&b));
        assert_eq!(union_states(&[(&sa, 1000), (&sb, 1300)]), (1800, true));
        let (a, b) = (seen(0..60_000), seen(30_000..100_000));
        let (sa, sb) = (sketch(&a), sketch(&b));
        let (n, exact) = union_states(&[(&sa, 60_000), (&sb, 70_000)]);
        assert!(!exact);
        // Ten standard errors of the estimate either side.
        assert!((84_000..116_000).contains(&n), "{n}");
    }
}
