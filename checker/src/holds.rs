//! Belief: which clients think they hold the lock, event by event.
//!
//! A client holds from its `Acquired` until its `ReleaseInvoked` or `Lost`. Its session
//! expiring does not end the belief: a recipe that ignores `Expired` keeps believing, and
//! that is exactly the bug class the belief properties catch. A crash does end it: a dead
//! process believes nothing and can touch nothing (its session expires later on its own).

use std::collections::BTreeMap;
use zklock_recipe::SessionId;
use zklock_recipe::history::{AcquireMode, Event, EventKind, FaultKind, History, LockRole};
use zklock_recipe::lock::naming::parse_sequence;

/// One hold: a client's belief from its `Acquired` to the event that ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub client: u32,
    pub session: SessionId,
    /// From the client's preceding `AcquireInvoked`; `Exclusive` when there was none.
    pub role: LockRole,
    pub token: i64,
    pub node: String,
    /// Index of the `Acquired` event.
    pub start: usize,
    /// Index of the `ReleaseInvoked`, `Lost` or crash that ended it; `None` if the
    /// history ends first.
    pub end: Option<usize>,
}

impl Hold {
    /// Whether this hold excludes every other (exclusive or write).
    pub fn is_writer(&self) -> bool {
        is_writer(self.role)
    }

    /// Whether the hold was still believed at event `index` (after it was applied).
    pub fn open_at(&self, index: usize) -> bool {
        self.start <= index && self.end.is_none_or(|e| e > index)
    }

    /// Short label for holder sets: `cN` exclusive, `wN` writer, `rN` reader.
    pub fn label(&self) -> String {
        let prefix = match self.role {
            LockRole::Exclusive => 'c',
            LockRole::Write => 'w',
            LockRole::Read => 'r',
        };
        format!("{prefix}{}", self.client)
    }
}

/// Whether a role excludes everyone (exclusive and write locks).
pub fn is_writer(role: LockRole) -> bool {
    !matches!(role, LockRole::Read)
}

/// Whether the event is a crash of its target client (fault events name the target).
pub fn is_crash(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::Fault {
            fault: FaultKind::Crash
        }
    )
}

/// The timeout of a timed acquire's `AcquireInvoked`, in ms; `None` for any other event.
pub fn timed_acquire_ms(event: &Event) -> Option<u64> {
    match event.kind {
        EventKind::AcquireInvoked {
            mode: AcquireMode::Timeout { timeout_ms },
            ..
        } => Some(timeout_ms),
        _ => None,
    }
}

/// When a timed acquire's `AcquireInvoked` reaches its timeout, in µs (saturating); `None`
/// for any other event.
pub fn timed_deadline_us(event: &Event) -> Option<u64> {
    timed_acquire_ms(event).map(|ms| event.time_us.saturating_add(ms.saturating_mul(1000)))
}

/// Feeds events in history order and keeps the set of open holds.
#[derive(Clone, Debug, Default)]
pub struct BeliefTracker {
    pending_role: BTreeMap<u32, LockRole>,
    open: BTreeMap<u32, Hold>,
}

impl BeliefTracker {
    /// Applies event `index`; returns the hold it ended, if any (a second `Acquired`
    /// without a release replaces the first hold, which ends there).
    pub fn observe(&mut self, index: usize, event: &Event) -> Option<Hold> {
        let c = event.client;
        match &event.kind {
            EventKind::AcquireInvoked { role, .. } => {
                self.pending_role.insert(c, *role);
                None
            }
            EventKind::Acquired { token, node } => {
                let role = self
                    .pending_role
                    .get(&c)
                    .copied()
                    .unwrap_or(LockRole::Exclusive);
                let hold = Hold {
                    client: c,
                    session: event.session,
                    role,
                    token: *token,
                    node: node.clone(),
                    start: index,
                    end: None,
                };
                self.open.insert(c, hold).map(|h| ended(h, index))
            }
            EventKind::ReleaseInvoked | EventKind::Lost { .. } => {
                self.open.remove(&c).map(|h| ended(h, index))
            }
            _ if is_crash(event) => {
                self.pending_role.remove(&c);
                self.open.remove(&c).map(|h| ended(h, index))
            }
            _ => None,
        }
    }

    /// The holds open now, by client.
    pub fn open(&self) -> impl Iterator<Item = &Hold> {
        self.open.values()
    }

    /// The open hold of `client`, if any.
    pub fn hold_of(&self, client: u32) -> Option<&Hold> {
        self.open.get(&client)
    }

    /// The role of the client's latest acquire, if it ever invoked one.
    pub fn role_of(&self, client: u32) -> Option<LockRole> {
        self.pending_role.get(&client).copied()
    }

    /// The holder set as `{c1, r2}`, in client order.
    pub fn holder_set(&self) -> String {
        let labels: Vec<String> = self.open.values().map(Hold::label).collect();
        format!("{{{}}}", labels.join(", "))
    }
}

fn ended(mut hold: Hold, index: usize) -> Hold {
    hold.end = Some(index);
    hold
}

/// Every hold of the history, ordered by start.
pub fn all_holds(history: &History) -> Vec<Hold> {
    let mut tracker = BeliefTracker::default();
    let mut done = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        done.extend(tracker.observe(i, e));
    }
    done.extend(tracker.open().cloned());
    done.sort_by_key(|h| h.start);
    done
}

/// The sequential suffix of a lock node, if it has one: ZooKeeper's counter, negative
/// once it wrapped past 2147483647 (see
/// [`parse_sequence`]), or, for a recipe of
/// its own that names nodes so, any ten digits.
pub fn sequence_of(node: &str) -> Option<i64> {
    // The recipe's reader takes ten digits at once; it leaves suffixes past 2^31 (and
    // non-digits) to the byte loop below.
    if let Some(seq) = parse_sequence(node) {
        return Some(i64::from(seq));
    }
    let digits = node.len().checked_sub(10).and_then(|at| node.get(at..))?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// The last path component (nodes may be recorded as full paths or names).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `basename(a) == basename(b)`, without searching either for its last '/'.
#[inline]
pub(crate) fn same_basename(a: &str, b: &str) -> bool {
    // Sibling nodes differ in their last digits: most pairs are told apart at once.
    match (a.as_bytes().last(), b.as_bytes().last()) {
        (Some(p), Some(q)) if p != q => false,
        _ => same_basename_slow(a.as_bytes(), b.as_bytes()),
    }
}

fn same_basename_slow(x: &[u8], y: &[u8]) -> bool {
    // A node is mostly named by the same full path each time.
    if x == y {
        return true;
    }
    // The common tail, up to a '/': the names match if it reaches the start of both.
    let tail = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take_while(|(p, q)| p == q && **p != b'/')
        .count();
    let starts = |z: &[u8]| z.len() == tail || z[z.len() - tail - 1] == b'/';
    starts(x) && starts(y)
}

#[cfg(test)]
mod tests {
    use super::{basename, same_basename};

    #[test]
    fn same_basename_agrees_with_basename() {
        let paths = [
            "",
            "/",
            "//",
            "a",
            "/a",
            "a/",
            "b/a",
            "/l/lock-0000000001",
            "/l/lock-0000000011",
            "/m/lock-0000000001",
            "lock-0000000001",
            "/l/x-lock-0000000001",
        ];
        for a in paths {
            for b in paths {
                assert_eq!(
                    same_basename(a, b),
                    basename(a) == basename(b),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
