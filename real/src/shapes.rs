//! The workload shapes of a fault-point search: variants of its script, each run once
//! without a fault and judged like any point. Some bugs need no fault, only a shape of
//! contention the default script never makes: a timed acquire woken with its deadline
//! near, by a predecessor that gave up, waits its whole timeout again (Kazoo's
//! `Lock._inner_acquire`); a node a give-up left behind blocks the others only when the
//! client that left it stays connected and idle.

use crate::workload::WorkloadConfig;

/// One variant of a search's script. Each is the search's own script with a few of its
/// knobs changed ([`Shape::script`]), so a shape's violation reproduces with one
/// `zklock real` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Shape {
    /// Timed acquires queued behind timed acquires, behind a holder that outlasts their
    /// deadlines: the first waiter times out and leaves, which wakes the second with its
    /// own deadline near.
    TimedQueue,
    /// A new lock object for every attempt, in the same session: a node an earlier
    /// object left is never found again by its client.
    FreshObjects,
    /// A contender that gave up stays connected and idle for the leak bound: whatever
    /// its give-up left blocks the others that long.
    IdleAfterGiveUp,
    /// Every second attempt holds past the session timeout.
    LongHolds,
    /// Five contenders (or the script's clients, if more).
    Crowd,
}

/// The timed acquires' timeout in [`Shape::TimedQueue`], at least: past the 1 s grace
/// `timed_acquire_in_time` allows, so that a wait begun again after a wake-up shows.
pub const TIMED_QUEUE_TIMEOUT_MS_MIN: u64 = 3_000;

impl Shape {
    /// Every shape, in the order a search runs them.
    pub const ALL: [Shape; 5] = [
        Shape::TimedQueue,
        Shape::FreshObjects,
        Shape::IdleAfterGiveUp,
        Shape::LongHolds,
        Shape::Crowd,
    ];

    /// The shape's name, as `zklock search --shapes` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Shape::TimedQueue => "timed-queue",
            Shape::FreshObjects => "fresh-objects",
            Shape::IdleAfterGiveUp => "idle-after-give-up",
            Shape::LongHolds => "long-holds",
            Shape::Crowd => "crowd",
        }
    }

    /// The shape named `name`, if any.
    pub fn parse(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The search's script `base`, in this shape. Bounds: clients at most
    /// [`crate::workload::MAX_CLIENTS`], as `base`'s.
    pub fn script(self, base: &WorkloadConfig) -> WorkloadConfig {
        let mut w = base.clone();
        match self {
            Shape::TimedQueue => {
                // Three contenders, each one timed attempt (the mix's third mode),
                // queued in turn a third of the timeout apart; the first keeps the lock
                // for two and a half timeouts: the second times out and leaves while
                // the third, its own deadline that far off, waits behind it.
                w.clients = w.clients.max(3);
                w.attempts_per_client = 1;
                w.mix_offset = 2;
                w.drop_every = 0;
                w.acquire_timeout_ms = w.acquire_timeout_ms.max(TIMED_QUEUE_TIMEOUT_MS_MIN);
                w.long_hold_every = 1;
                w.long_hold_ms = w.acquire_timeout_ms.saturating_mul(5) / 2;
                w.start_stagger_ms = w.acquire_timeout_ms / 3;
            }
            Shape::FreshObjects => w.fresh_lock_every = 1,
            Shape::IdleAfterGiveUp => w.idle_after_give_up_ms = w.leak_bound_in_force_ms(),
            Shape::LongHolds => {
                w.long_hold_every = 2;
                w.long_hold_ms = w.session_timeout_ms.saturating_mul(3) / 2;
            }
            Shape::Crowd => w.clients = w.clients.max(5),
        }
        w
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_parses_by_its_name_and_changes_the_script_validly() {
        // The search's script.
        let base = WorkloadConfig {
            clients: 2,
            attempts_per_client: 4,
            session_timeout_ms: 2_000,
            acquire_timeout_ms: 1_000,
            ..WorkloadConfig::default()
        };
        for shape in Shape::ALL {
            assert_eq!(Shape::parse(shape.name()), Some(shape));
            let w = shape.script(&base);
            assert_ne!(
                format!("{w:?}"),
                format!("{base:?}"),
                "{shape} changes nothing"
            );
            w.validate().unwrap();
        }
        assert_eq!(Shape::parse("none"), None);
    }

    #[test]
    fn the_timed_queue_holds_past_two_timeouts_and_times_every_attempt() {
        let base = WorkloadConfig {
            clients: 2,
            attempts_per_client: 4,
            drop_every: 4,
            ..WorkloadConfig::default()
        };
        let w = Shape::TimedQueue.script(&base);
        let timeout = w.acquire_timeout_ms;
        assert!(timeout >= TIMED_QUEUE_TIMEOUT_MS_MIN);
        assert!(w.long_hold_ms > 2 * timeout);
        assert_eq!(
            crate::workload::mode_of(0, 0, &w),
            zklock_recipe::history::AcquireMode::Timeout {
                timeout_ms: timeout
            }
        );
        assert_eq!(w.clients, 3);
    }
}
