//! What a symmetric digest remembers across runs: the tree's renamed digests, and the
//! renamings of sessions.
//!
//! A stateless explorer runs each schedule from the start, so what a digest works out
//! comes back run after run: most steps leave the tree alone and sibling schedules share
//! it, and the server opens the same sessions for the same clients in schedule after
//! schedule. Each is a function of a key:
//! - a renamed tree (`symmetry::encode_tree`: every node's path, stat and children
//!   renamed, then sorted), of the tree's plain digest (which hashes the same content:
//!   paths, data, stats, counters, children, the last zxid and the watches) and the
//!   renaming's key (a hash of its pairs of session and label). Renaming the tree again
//!   at each digest was a tenth of an exhaustive check.
//! - the renamings of a state (`World::renamings`), of the clients' roles and each
//!   session's number, owner and rank among its owner's sessions, which are all they read.
//!
//! These are caches and nothing else: a hit gives what working it out again would give
//! (for a tree, up to a collision of 128-bit keys, as for every digest), so no run, and no
//! explorer's verdict, depends on what they hold; they are looked up, never iterated, so
//! their order is nothing. They are per thread, so the threads of a parallel check never
//! wait on each other for them, and bounded: each is emptied when full.

use super::renaming::Renaming;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Renamed trees a thread keeps before it empties its cache: about 64 MiB a thread, full.
const TREES_MAX: usize = 1 << 20;
/// Sets of renamings a thread keeps before it empties its cache.
const RENAMINGS_MAX: usize = 1 << 12;

/// The trees' keys are hashes already: their low bits are the hash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(w);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = self.0.rotate_left(5) ^ (v as u64) ^ ((v >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Trees = HashMap<(u128, u128), u128, BuildHasherDefault<KeyHasher>>;
/// Each session as (number, owner, rank), in number order.
pub(super) type Owners = Vec<(i64, usize, i64)>;
type Renamings = HashMap<(Vec<u32>, Owners), Arc<[Renaming]>>;

thread_local! {
    static TREES: RefCell<Trees> = RefCell::default();
    static RENAMINGS: RefCell<Renamings> = RefCell::default();
}

/// The renamed digest of the tree whose plain digest is `tree` under the renaming keyed
/// `renaming`: remembered, or made by `encode` and remembered.
pub(super) fn renamed_tree(tree: u128, renaming: u128, encode: impl FnOnce() -> u128) -> u128 {
    if let Some(d) = TREES.with(|m| m.borrow().get(&(tree, renaming)).copied()) {
        return d;
    }
    let d = encode();
    TREES.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= TREES_MAX {
            m.clear();
        }
        m.insert((tree, renaming), d);
    });
    d
}

/// The renamings of a state whose clients have `roles` and whose sessions are `owners`:
/// remembered, or made by `make` and remembered.
pub(super) fn renamings(
    roles: &[u32],
    owners: Owners,
    make: impl FnOnce() -> Vec<Renaming>,
) -> Arc<[Renaming]> {
    let key = (roles.to_vec(), owners);
    if let Some(r) = RENAMINGS.with(|m| m.borrow().get(&key).cloned()) {
        return r;
    }
    let r: Arc<[Renaming]> = make().into();
    RENAMINGS.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= RENAMINGS_MAX {
            m.clear();
        }
        m.insert(key, r.clone());
    });
    r
}

#[cfg(test)]
mod tests {
    use super::renamed_tree;

    #[test]
    fn a_remembered_tree_is_given_back_without_encoding_it_again() {
        assert_eq!(renamed_tree(1, 2, || 7), 7);
        assert_eq!(renamed_tree(1, 2, || unreachable!("remembered")), 7);
        // Another renaming of the same tree, or another tree, is its own entry.
        assert_eq!(renamed_tree(1, 3, || 8), 8);
        assert_eq!(renamed_tree(4, 2, || 9), 9);
    }
}
