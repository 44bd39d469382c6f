//! A real run of several locks: their directories, and which one each acquisition takes.
//!
//! The simulation draws each acquisition's lock from its Chooser; a real run has no
//! chooser, so the lock of client `c`'s `k`th attempt is a fixed hash of the run's seed,
//! `c` and `k`: the same seed gives every client the same sequence of locks on every run
//! and machine, whatever the servers' timing.

/// The most lock directories a run takes, as a simulated scenario.
pub const MAX_LOCKS: u32 = 64;

/// The run's lock directories: `lock_path` itself for one lock, else `<lock_path>-0` to
/// `<lock_path>-N-1` (siblings, so that no lock's directory holds another's), as
/// `zklock_sim::Scenario::lock_paths` names them.
pub fn lock_paths(lock_path: &str, locks: u32) -> Vec<String> {
    if locks <= 1 {
        return vec![lock_path.to_owned()];
    }
    (0..locks)
        .map(|i| format!("{}-{i}", lock_path.trim_end_matches('/')))
        .collect()
}

/// The lock (an index into [`lock_paths`]) of client `client`'s attempt `attempt` in a
/// run of `locks` locks seeded by `seed`.
pub fn lock_of(seed: u64, client: usize, attempt: u64, locks: u32) -> usize {
    if locks <= 1 {
        return 0;
    }
    let mixed = splitmix64(
        seed ^ splitmix64((client as u64).wrapping_mul(0x1_0000_0001) ^ attempt.rotate_left(17)),
    );
    (mixed % u64::from(locks)) as usize
}

/// SplitMix64's finalizer: a fixed, well-spread hash of a u64.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_attempts_lock_comes_from_the_seed_and_covers_every_lock() {
        let picks = |seed| -> Vec<usize> {
            (0..4)
                .flat_map(|c| (0..16).map(move |k| lock_of(seed, c, k, 3)))
                .collect()
        };
        assert_eq!(picks(7), picks(7));
        assert_ne!(picks(7), picks(8));
        for lock in 0..3 {
            assert!(picks(7).contains(&lock), "lock {lock} never taken");
        }
        assert!((0..100).all(|k| lock_of(7, 0, k, 1) == 0));
        assert_eq!(lock_paths("/z/lock", 1), ["/z/lock"]);
        assert_eq!(lock_paths("/z/lock/", 2), ["/z/lock-0", "/z/lock-1"]);
    }
}
