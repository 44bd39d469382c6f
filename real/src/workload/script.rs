//! Each client's script: its role, each attempt's acquire mode and hold.

use super::*;

/// The longest delay before a dropped acquire is dropped, as the simulation caps it.
pub const MAX_DROP_AFTER_MS: u64 = 65_535;

/// Client `index`'s role, as the simulation assigns them: the first `readers` read, the
/// rest write; with no readers, everyone takes the exclusive lock.
pub fn role_of(index: usize, config: &WorkloadConfig) -> LockRole {
    if (index as u32) < config.readers {
        LockRole::Read
    } else if config.readers > 0 {
        LockRole::Write
    } else {
        LockRole::Exclusive
    }
}

/// Client `index`'s role with a recipe of `leases` ([`RealRecipe::leases`]): a semaphore's
/// holders share the resource, as readers do; a lock's, [`role_of`].
pub fn role_in(index: usize, config: &WorkloadConfig, leases: Option<u32>) -> LockRole {
    if leases.is_some() {
        LockRole::Read
    } else {
        role_of(index, config)
    }
}

/// The acquire mode of client `index`'s `k`th attempt: the simulation's mix
/// ([`AcquireMode::of_attempt`]), with the delay of a dropped acquire spread over its
/// range by `index` and `k` (no chooser here).
pub fn mode_of(index: usize, k: u64, config: &WorkloadConfig) -> AcquireMode {
    let k = k.saturating_add(u64::from(config.mix_offset));
    let every = u64::from(config.drop_every.max(1));
    let spread = (k / every).wrapping_mul(7).wrapping_add(index as u64 * 3);
    let after_ms = spread % config.drop_after_ms_max.saturating_add(1);
    AcquireMode::of_attempt(k, config.drop_every, config.acquire_timeout_ms, after_ms)
}

/// How long the hold of a client's `k`th attempt (counted from 1) lasts:
/// [`WorkloadConfig::long_hold_ms`] every [`WorkloadConfig::long_hold_every`]-th attempt,
/// [`WorkloadConfig::hold_ms`] otherwise.
pub(super) fn hold_of(k: u64, config: &WorkloadConfig) -> Duration {
    let every = u64::from(config.long_hold_every);
    let ms = match every > 0 && k.is_multiple_of(every) {
        true => config.long_hold_ms,
        false => config.hold_ms,
    };
    Duration::from_millis(ms)
}
