//! The workload's shape as a choice: which mode each acquire attempt takes, how many
//! attempts a client makes, and how long a bounded partition or pause lasts. Fixed by
//! default (the mix of [`Scenario::mix_offset`](super::Scenario::mix_offset), every
//! attempt made, faults that outlive the session); an exhaustive check that chooses
//! them sees waiters that give up, holders that come back, and faults that end before,
//! at and after the session timeout.
//!
//! Every shape choice answers 0 with the fixed behaviour's option where there is one
//! (another attempt, the longest fault), so a schedule that makes no shape choice, or a
//! shrunk trace past its end, runs the fixed shape.

use serde::{Deserialize, Serialize};
use zklock_recipe::history::AcquireMode;

/// An acquire mode, without its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeKind {
    /// Waits until it holds.
    Blocking,
    /// Gives up at once if another holds.
    Try,
    /// Gives up after `Scenario::acquire_timeout_ms`.
    Timed,
    /// A blocking acquire whose future is dropped after a delay the chooser draws in
    /// `0..=Scenario::drop_after_ms_max`.
    Dropped,
}

impl ModeKind {
    /// Every mode, in the order `--modes all` lists them.
    pub const ALL: [ModeKind; 4] = [
        ModeKind::Blocking,
        ModeKind::Try,
        ModeKind::Timed,
        ModeKind::Dropped,
    ];

    /// The name `--modes` takes.
    pub fn name(self) -> &'static str {
        match self {
            ModeKind::Blocking => "blocking",
            ModeKind::Try => "try",
            ModeKind::Timed => "timed",
            ModeKind::Dropped => "dropped",
        }
    }

    /// The mode of that name.
    pub fn from_name(name: &str) -> Option<ModeKind> {
        ModeKind::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode with its parameters; a dropped attempt's delay is drawn later.
    pub fn mode(self, acquire_timeout_ms: u64) -> AcquireMode {
        match self {
            ModeKind::Blocking => AcquireMode::Blocking,
            ModeKind::Try => AcquireMode::Try,
            ModeKind::Timed => AcquireMode::Timeout {
                timeout_ms: acquire_timeout_ms,
            },
            ModeKind::Dropped => AcquireMode::Dropped { after_ms: 0 },
        }
    }
}

/// The workload's shape: which of its decisions the chooser makes. The default is the
/// fixed shape, and a scenario of the fixed shape serializes as it always did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Shape {
    /// The modes each attempt chooses among (a choice of kind
    /// [`ChoiceKind::AcquireMode`](crate::ChoiceKind::AcquireMode), answered by index in
    /// this list; one mode is no choice). Each mode at most once, so at most
    /// [`ModeKind::ALL`]`.len()`. Default empty: the fixed mix of `mix_offset` and
    /// `drop_every`.
    pub modes: Vec<ModeKind>,
    /// Whether a client may stop after any attempt but its last (a choice of kind
    /// [`ChoiceKind::AcquireCount`](crate::ChoiceKind::AcquireCount): 0 goes on, 1
    /// stops), so that it makes anything from 1 to `acquisitions_per_client` attempts.
    /// Default false: every client makes them all.
    pub count_chosen: bool,
    /// Whether a bounded partition or pause lasts, by the chooser's pick (kind
    /// [`ChoiceKind::FaultDuration`](crate::ChoiceKind::FaultDuration)), the longest
    /// allowed (`faults.partition_ms_max`, `faults.pause_ms_max`: past the session
    /// timeout by default), exactly the session timeout, or three quarters of it (the
    /// client sees its connection lost, the server keeps its session). Random faults draw
    /// their durations anyway. Default false: the longest.
    pub fault_durations_chosen: bool,
    /// Whether each hold (a lock's critical section, a queue item's processing) lasts,
    /// by the chooser's pick (kind [`ChoiceKind::HoldLength`](crate::ChoiceKind::HoldLength)),
    /// `hold_ms` or a session timeout longer ([`hold_lengths_ms`]): a holder still
    /// holds when a session another client lost at its start has expired, which the
    /// lost-before-granted bugs need. Not part of [`Shape::all`], whose searches it
    /// would double at every hold. Default false: `hold_ms`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub holds_chosen: bool,
}

impl Shape {
    /// The fixed shape (the default).
    pub fn fixed() -> Shape {
        Shape::default()
    }

    /// Every decision a choice: every mode, the count, fault durations.
    pub fn all() -> Shape {
        Shape {
            modes: ModeKind::ALL.to_vec(),
            count_chosen: true,
            fault_durations_chosen: true,
            holds_chosen: false,
        }
    }

    /// Whether this is the fixed shape (which a trace then leaves out).
    pub fn is_fixed(&self) -> bool {
        *self == Shape::default()
    }

    /// The first mode listed twice, if any.
    pub fn repeated_mode(&self) -> Option<ModeKind> {
        self.modes
            .iter()
            .enumerate()
            .find(|(i, m)| self.modes[..*i].contains(m))
            .map(|(_, &m)| m)
    }
}

/// The durations, in milliseconds, a bounded partition or pause of a client with session
/// timeout `session_timeout_ms` chooses among when durations are chosen: the longest
/// allowed first (the fixed shape's), then the session timeout and three quarters of
/// it where they are shorter than it, without repeats.
pub fn fault_durations_ms(max_ms: u64, session_timeout_ms: u64) -> Vec<u64> {
    let mut out = vec![max_ms];
    for ms in [session_timeout_ms, session_timeout_ms * 3 / 4] {
        if ms > 0 && ms < max_ms && !out.contains(&ms) {
            out.push(ms);
        }
    }
    out
}

/// The lengths, in milliseconds, a hold chooses between when holds are chosen: the
/// scenario's `hold_ms` first (the fixed shape's), then one a session timeout longer.
pub fn hold_lengths_ms(hold_ms: u64, session_timeout_ms: u64) -> [u64; 2] {
    [hold_ms, hold_ms.saturating_add(session_timeout_ms)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_durations_are_after_at_and_before_the_session_timeout() {
        assert_eq!(fault_durations_ms(12_000, 6000), [12_000, 6000, 4500]);
        // A maximum shorter than the session timeout leaves only what fits under it.
        assert_eq!(fault_durations_ms(5000, 6000), [5000, 4500]);
        assert_eq!(fault_durations_ms(4500, 6000), [4500]);
    }

    #[test]
    fn mode_names_round_trip() {
        for m in ModeKind::ALL {
            assert_eq!(ModeKind::from_name(m.name()), Some(m));
        }
        assert_eq!(ModeKind::from_name("bogus"), None);
    }

    #[test]
    fn a_repeated_mode_is_named() {
        let s = Shape {
            modes: vec![ModeKind::Try, ModeKind::Blocking, ModeKind::Try],
            ..Shape::default()
        };
        assert_eq!(s.repeated_mode(), Some(ModeKind::Try));
        assert_eq!(Shape::all().repeated_mode(), None);
    }
}
