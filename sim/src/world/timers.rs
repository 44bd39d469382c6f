//! The world's pending timers, due in (time, creation) order.
//!
//! A handful are pending at once (a sleep or two per client, a session's expiry), so a
//! sorted vector beats a map: the next one due sits at the end, and a new one shifts a
//! few entries at most.

use super::Timer;

#[derive(Default)]
pub(crate) struct Timers {
    /// (due time, creation number, timer), latest first: the next one due is last.
    queue: Vec<(u64, u64, Timer)>,
    created: u64,
}

impl Timers {
    pub(crate) fn set(&mut self, at: u64, t: Timer) {
        self.created += 1;
        // Later than every timer due at the same time: created after them all.
        let i = self.queue.partition_point(|&(due, _, _)| due > at);
        self.queue.insert(i, (at, self.created, t));
    }

    /// When the next timer is due.
    pub(crate) fn next_at(&self) -> Option<u64> {
        self.queue.last().map(|&(at, _, _)| at)
    }

    /// Takes the next timer if it is due by `now`.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<Timer> {
        match self.queue.last() {
            Some(&(at, _, _)) if at <= now => self.queue.pop().map(|(_, _, t)| t),
            _ => None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Every pending timer with its due time, in the order they fire.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &Timer)> {
        self.queue.iter().rev().map(|(at, _, t)| (*at, t))
    }
}
