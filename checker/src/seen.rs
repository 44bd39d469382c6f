//! The digests of the states an exhaustive search has seen, shared by its threads.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Digests are uniform already: a set of them needs no further hashing.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type DigestSet = HashSet<u128, BuildHasherDefault<DigestHasher>>;

/// Shards, so that threads seldom wait for each other.
const SHARDS: usize = 64;

/// A set of state digests that several threads insert into.
pub(crate) struct SeenStates {
    shards: Vec<Mutex<DigestSet>>,
    len: AtomicU64,
}

impl SeenStates {
    pub(crate) fn new(digests: impl IntoIterator<Item = u128>) -> SeenStates {
        let seen = SeenStates {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            len: AtomicU64::new(0),
        };
        for d in digests {
            seen.insert(d);
        }
        seen
    }

    fn shard(&self, d: u128) -> &Mutex<DigestSet> {
        // The high half picks the shard, the low half hashes within it.
        &self.shards[(d >> 64) as usize % SHARDS]
    }

    /// Whether `d` was new (it is seen from now on).
    pub(crate) fn insert(&self, d: u128) -> bool {
        let fresh = self.shard(d).lock().expect("seen lock").insert(d);
        if fresh {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        fresh
    }

    /// States seen.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    /// Calls `f` with every digest, in no particular order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(u128)) {
        for s in &self.shards {
            s.lock().expect("seen lock").iter().for_each(|&d| f(d));
        }
    }

    /// Every digest, in order.
    pub(crate) fn sorted(&self) -> Vec<u128> {
        let mut all: Vec<u128> = self
            .shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .expect("seen lock")
                    .iter()
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_unstable();
        all
    }
}
