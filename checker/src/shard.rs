//! An exhaustive check split over processes (`zklock check --shard K/N`).
//!
//! **The split.** The tree of choices is cut at a prefix depth: every prefix of that many
//! choices roots a subtree (a schedule that ends before the depth is a subtree of its
//! own). The depth is the smallest at which there are at least
//! [`SUBTREES_PER_SHARD`] × N subtrees, or at which no schedule goes deeper, at most
//! [`SPLIT_DEPTH_MAX`]. Finding it runs one schedule per prefix above the depth
//! (unpruned: no shard's seen states may shape it), so every shard computes the same
//! subtrees from the recipe, the scenario and N alone. The subtrees are numbered in
//! depth-first order, and subtree `i` belongs to shard `i mod N + 1`: a pure function of
//! the subtree and N, and neighbouring subtrees, which are often alike, go to different
//! shards.
//!
//! **Why a shard is sound on its own.** A shard searches its subtrees as the search on
//! several threads searches its jobs ([`crate::parallel`]), with a seen set of its own. A
//! state enters that set only past a run's replayed prefix, so past the split depth,
//! where every continuation of the state lies in the subtree that reached it: the first
//! run to reach it explores them all by its subtree's backtracking, and pruning a later
//! visit in the same shard loses nothing. Each shard therefore reaches every state its
//! subtrees reach, and the shards together every state of the tree: the same final
//! states and, for the properties judged on states, the same verdict as the check in one
//! piece. A state that several shards reach is searched by each of them: that is the
//! price of splitting, which a merge estimates.
//!
//! **Counting the duplicated work.** Each shard keeps a sketch of its seen states: the
//! [`SKETCH_STATES`] smallest of their digests re-hashed to 64 bits (the canonical
//! digests of symmetry reduction are minima, not uniform; the re-hash makes them so). The
//! union's count is then estimated from the merged sketches (k-minimum values, about
//! 1.6 % standard error at 4096), or counted exactly when every shard's sketch holds all
//! its states.

use crate::checkpoint::Subtree;
use crate::seen::SeenStates;
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::{Arc, Mutex};
use zklock_sim::{GuidedChooser, Recipe, Scenario, run_scenario_with};

/// Shards of one check at most: a split into more pieces than this costs more in the
/// states shards share than it gains.
pub const SHARDS_MAX: u32 = 1024;
/// Subtrees per shard the split aims at, at least: many more subtrees than shards
/// spread the uneven subtrees evenly.
pub const SUBTREES_PER_SHARD: usize = 32;
/// The deepest split, in choices.
pub const SPLIT_DEPTH_MAX: usize = 64;
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

    /// Whether subtree `i` (in depth-first order) is this shard's.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count as usize + 1 == self.index as usize
    }

    /// How many of `subtrees` are this shard's.
    pub fn subtrees_of(&self, subtrees: u64) -> u64 {
        let (n, k) = (u64::from(self.count), u64::from(self.index - 1));
        subtrees / n + u64::from(subtrees % n > k)
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

/// The tree of choices cut at a depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Choices in a subtree's root (fewer for a schedule that ends above it).
    pub depth: usize,
    /// Every subtree's root, in depth-first order.
    pub roots: Vec<Vec<u32>>,
    /// Schedules run to find them.
    pub runs: u64,
}

impl Split {
    /// The subtrees of `shard`, in depth-first order.
    pub fn work_of(&self, shard: Shard) -> Vec<Subtree> {
        self.roots
            .iter()
            .enumerate()
            .filter(|(i, _)| shard.owns(*i))
            .map(|(_, r)| Subtree {
                root_len: r.len() as u32,
                next_prefix: r.clone(),
                caps: Vec::new(),
            })
            .collect()
    }
}

/// Cuts the tree of `recipe`'s schedules of `scenario` for `count` shards (see the
/// module docs).
pub fn split<R: Recipe>(scenario: &Scenario, recipe: &R, count: u32) -> Split {
    let want = (count as usize).saturating_mul(SUBTREES_PER_SHARD);
    // (root, whether a schedule ends at it).
    let mut roots: Vec<(Vec<u32>, bool)> = vec![(Vec::new(), false)];
    let (mut depth, mut runs) = (0, 0u64);
    while roots.len() < want && depth < SPLIT_DEPTH_MAX && roots.iter().any(|(_, leaf)| !leaf) {
        let mut next = Vec::with_capacity(roots.len() * 2);
        for (root, leaf) in roots {
            if leaf {
                next.push((root, true));
                continue;
            }
            let chooser = Arc::new(Mutex::new(GuidedChooser::new(root.clone())));
            run_scenario_with(scenario, 0, Box::new(chooser.clone()), recipe);
            runs += 1;
            let made = std::mem::take(&mut chooser.lock().expect("chooser lock").made);
            match made.get(depth) {
                None => next.push((root, true)),
                Some(&(_, n, _)) => next.extend((0..n).map(|c| {
                    let mut r = root.clone();
                    r.push(c);
                    (r, false)
                })),
            }
        }
        roots = next;
        depth += 1;
    }
    Split {
        depth,
        roots: roots.into_iter().map(|(r, _)| r).collect(),
        runs,
    }
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
    fn every_subtree_belongs_to_exactly_one_shard() {
        for n in 1..=7u32 {
            let shards: Vec<Shard> = (1..=n).map(|k| Shard::new(k, n).unwrap()).collect();
            for i in 0..50 {
                assert_eq!(shards.iter().filter(|s| s.owns(i)).count(), 1);
            }
            let total: u64 = shards.iter().map(|s| s.subtrees_of(50)).sum();
            assert_eq!(total, 50);
            for s in &shards {
                assert_eq!(
                    s.subtrees_of(50),
                    (0..50).filter(|&i| s.owns(i)).count() as u64
                );
            }
        }
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
