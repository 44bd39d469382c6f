//! The one source of nondeterminism: every decision the simulated world makes is drawn
//! from a [`Chooser`]. Random mode draws from ChaCha8 seeded with a u64; replay mode reads a
//! recorded list; the explorer drives its own implementation.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use crate::world::folds::Folds;
pub use crate::world::footprint::{Footprint, Offer};

/// What a choice decides. Carried for traces and for explorers that treat kinds
/// differently (for example, bounding faults); it never changes the meaning of an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ChoiceKind {
    /// Which client's pending request the server applies next.
    NextRequest,
    /// How many in-flight requests reached the server before a connection broke.
    AppliedPrefix,
    /// Whether a fault strikes at this step (0 = no), and which.
    Fault,
    /// Which client a fault strikes.
    FaultTarget,
    /// A delay, in units of the delay's granularity.
    Delay,
    /// Which lock directory an acquisition takes, in a run of several locks.
    Lock,
    /// Which mode an acquire attempt takes, when the scenario's shape chooses modes.
    AcquireMode,
    /// Whether a client goes on (0) or stops (1) after an attempt, when the scenario's
    /// shape chooses counts.
    AcquireCount,
    /// How long a bounded partition or pause lasts, when the scenario's shape chooses
    /// fault durations.
    FaultDuration,
    /// Whether a hold (or an item's processing) lasts the scenario's `hold_ms` (0) or
    /// outlasts a session timeout (1), when the scenario's shape chooses holds.
    HoldLength,
    /// A client's priority, or whether this step is a priority change point, when the
    /// scenario orders requests by priorities
    /// ([`Scenario::priorities`](crate::Scenario::priorities)).
    Priority,
    /// Which node of its listing a revoker asks to give up
    /// ([`Scenario::revokers`](crate::Scenario::revokers)).
    RevokeTarget,
}

/// A source of decisions. `choose(kind, n)` returns an index in `0..n`; it is only called
/// with `n >= 2` (a forced choice is not a choice and is not recorded).
///
/// A chooser that always takes the first option, run against the shipped lock:
///
/// ```
/// use zklock_sim::{ChoiceKind, Chooser, Scenario, ShippedRecipe, run_scenario_with};
///
/// struct First;
///
/// impl Chooser for First {
///     fn choose(&mut self, _kind: ChoiceKind, _n: usize) -> usize {
///         0
///     }
/// }
///
/// let run = run_scenario_with(&Scenario::default(), 0, Box::new(First), &ShippedRecipe::default());
/// assert!(run.choices.iter().all(|&c| c == 0));
/// ```
pub trait Chooser: Send {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize;
    /// Whether this chooser wants [`at_state`](Chooser::at_state) digests. They cost a
    /// hash of the whole state per step, so only explorers ask.
    fn wants_digests(&self) -> bool {
        false
    }
    /// Called at each step before its choices with a digest of the whole state; `false`
    /// prunes the run here (an explorer has already seen, or will see, everything that
    /// can follow this state).
    fn at_state(&mut self, _digest: u128) -> bool {
        true
    }
    /// Whether the next step's [`at_state`](Chooser::at_state) would use its digest: an
    /// explorer replaying a prefix it has explored already would not, and the world then
    /// spares the digest (and calls `at_state` with 0). Default true.
    fn needs_digest(&self) -> bool {
        true
    }
    /// Whether digests (here and at the end) should be the same for states that differ
    /// only by a permutation of interchangeable clients (see the world's `symmetry`
    /// module). Default false.
    fn wants_symmetry(&self) -> bool {
        false
    }
    /// Whether [`at_state`](Chooser::at_state) gets those symmetric digests (else plain
    /// ones, and symmetric ones only at the end). Default false.
    fn prunes_by_symmetry(&self) -> bool {
        false
    }
    /// Called once when a run that was not pruned ends, with the digest of its final
    /// state.
    fn at_end(&mut self, _digest: u128) {}
    /// Whether this chooser reduces by partial order: then the world calls
    /// [`after_transition`](Chooser::after_transition) and
    /// [`offer_requests`](Chooser::offer_requests). Only with digests. Default false.
    fn wants_partial_order(&self) -> bool {
        false
    }
    /// Whether the world folds what an actor says it keeps of a reply in that reply's
    /// place ([`Coordination::keep_only`](zklock_recipe::Coordination::keep_only)).
    /// Only with digests. Default false.
    fn honours_keep_only(&self) -> bool {
        false
    }
    /// Called at each state, before [`at_state`](Chooser::at_state), with what the
    /// request transition since the last state touched, or `None` when what happened
    /// since was not one request transition (a fault, time passing, the start).
    fn after_transition(&mut self, _transition: Option<&Footprint>) {}
    /// Called before each choice of a next request (and before a forced one, when only
    /// one client has a request ready) with the requests on offer, in choice order;
    /// `false` prunes the run here. Default true.
    fn offer_requests(&mut self, _offers: &[Offer]) -> bool {
        true
    }
    /// Asked once, as a run with digests starts: the position of a choice and every
    /// fold of what actors were given (see [`Folds`]) as an earlier run of the same
    /// scenario had them when it reached that choice, having made the same choices
    /// before it as this run will. The world then folds nothing until this run reaches
    /// that choice, and takes these folds there: digests from that choice on are the
    /// same, and the replay before it costs no folding. Default `None`: fold everything.
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        None
    }
    /// Whether the world hands this chooser its folds at each choice
    /// ([`keep_folds`](Chooser::keep_folds)), for a later run's
    /// [`saved_folds`](Chooser::saved_folds). Only with digests. Default false.
    fn keeps_folds(&self) -> bool {
        false
    }
    /// Called before each choice at `position` (among this run's choices) from the
    /// first whose folds are known on (every one, or from the one
    /// [`saved_folds`](Chooser::saved_folds) named), with the folds then.
    fn keep_folds(&mut self, _position: usize, _folds: &Folds) {}
}

/// Random mode: ChaCha8 from a seed, so a seed reproduces the run.
#[derive(Debug, Clone)]
pub struct RandomChooser {
    rng: ChaCha8Rng,
}

impl RandomChooser {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Chooser for RandomChooser {
    fn choose(&mut self, _kind: ChoiceKind, n: usize) -> usize {
        self.rng.random_range(0..n)
    }
}

/// Replay mode: reads a recorded list of indices. Past the end of the list (a shrunk
/// trace), it answers 0, the "nothing happens / first option" choice, so a shortened list
/// is still a valid schedule.
#[derive(Debug, Clone, Default)]
pub struct ReplayChooser {
    choices: Vec<u32>,
    next: usize,
    /// Choices that were out of range for the `n` asked (clamped): a sign the list was
    /// recorded by a different scenario or version.
    pub mismatches: u32,
}

impl ReplayChooser {
    pub fn new(choices: Vec<u32>) -> Self {
        Self {
            choices,
            next: 0,
            mismatches: 0,
        }
    }
}

impl Chooser for ReplayChooser {
    fn choose(&mut self, _kind: ChoiceKind, n: usize) -> usize {
        let c = self.choices.get(self.next).copied().unwrap_or(0) as usize;
        self.next += 1;
        if c >= n {
            self.mismatches += 1;
            n - 1
        } else {
            c
        }
    }
}

/// Explorer mode: follows a given prefix of choices, answers 0 past it, and records the
/// arity of every choice it was asked. A depth-first explorer runs the world, then
/// backtracks by incrementing the last choice that has an untried alternative.
#[derive(Debug, Clone, Default)]
pub struct GuidedChooser {
    prefix: Vec<u32>,
    /// (kind, arity, answer) of every choice made so far.
    pub made: Vec<(ChoiceKind, u32, u32)>,
}

impl GuidedChooser {
    pub fn new(prefix: Vec<u32>) -> Self {
        Self {
            prefix,
            made: Vec::new(),
        }
    }

    /// The prefix this chooser follows.
    pub fn prefix(&self) -> &[u32] {
        &self.prefix
    }

    /// The next prefix to explore after a run that made `made`: the last choice with an
    /// untried alternative, incremented, with everything after it dropped. `None` when
    /// every schedule has been explored.
    pub fn next_prefix(made: &[(ChoiceKind, u32, u32)]) -> Option<Vec<u32>> {
        let i = made.iter().rposition(|&(_, n, c)| c + 1 < n)?;
        Some(Self::prefix_to(made, i))
    }

    /// The choices of `made` before position `i`, then the one after `made`'s at `i`:
    /// the prefix of the next alternative at `i`.
    pub fn prefix_to(made: &[(ChoiceKind, u32, u32)], i: usize) -> Vec<u32> {
        let mut p: Vec<u32> = made[..i].iter().map(|&(_, _, c)| c).collect();
        p.push(made[i].2 + 1);
        p
    }
}

impl Chooser for GuidedChooser {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        let i = self.made.len();
        let c = (self.prefix.get(i).copied().unwrap_or(0) as usize).min(n - 1);
        self.made.push((kind, n as u32, c as u32));
        c
    }
}

/// Shares one chooser between the world and whoever reads it after the run.
impl<C: Chooser> Chooser for std::sync::Arc<std::sync::Mutex<C>> {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        self.lock().expect("chooser lock").choose(kind, n)
    }
    fn wants_digests(&self) -> bool {
        self.lock().expect("chooser lock").wants_digests()
    }
    fn at_state(&mut self, digest: u128) -> bool {
        self.lock().expect("chooser lock").at_state(digest)
    }
    fn needs_digest(&self) -> bool {
        self.lock().expect("chooser lock").needs_digest()
    }
    fn wants_symmetry(&self) -> bool {
        self.lock().expect("chooser lock").wants_symmetry()
    }
    fn prunes_by_symmetry(&self) -> bool {
        self.lock().expect("chooser lock").prunes_by_symmetry()
    }
    fn at_end(&mut self, digest: u128) {
        self.lock().expect("chooser lock").at_end(digest)
    }
    fn wants_partial_order(&self) -> bool {
        self.lock().expect("chooser lock").wants_partial_order()
    }
    fn honours_keep_only(&self) -> bool {
        self.lock().expect("chooser lock").honours_keep_only()
    }
    fn after_transition(&mut self, transition: Option<&Footprint>) {
        self.lock()
            .expect("chooser lock")
            .after_transition(transition)
    }
    fn offer_requests(&mut self, offers: &[Offer]) -> bool {
        self.lock().expect("chooser lock").offer_requests(offers)
    }
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        self.lock().expect("chooser lock").saved_folds()
    }
    fn keeps_folds(&self) -> bool {
        self.lock().expect("chooser lock").keeps_folds()
    }
    fn keep_folds(&mut self, position: usize, folds: &Folds) {
        self.lock()
            .expect("chooser lock")
            .keep_folds(position, folds)
    }
}

impl Chooser for Box<dyn Chooser> {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        (**self).choose(kind, n)
    }
    fn wants_digests(&self) -> bool {
        (**self).wants_digests()
    }
    fn at_state(&mut self, digest: u128) -> bool {
        (**self).at_state(digest)
    }
    fn needs_digest(&self) -> bool {
        (**self).needs_digest()
    }
    fn wants_symmetry(&self) -> bool {
        (**self).wants_symmetry()
    }
    fn prunes_by_symmetry(&self) -> bool {
        (**self).prunes_by_symmetry()
    }
    fn at_end(&mut self, digest: u128) {
        (**self).at_end(digest)
    }
    fn wants_partial_order(&self) -> bool {
        (**self).wants_partial_order()
    }
    fn honours_keep_only(&self) -> bool {
        (**self).honours_keep_only()
    }
    fn after_transition(&mut self, transition: Option<&Footprint>) {
        (**self).after_transition(transition)
    }
    fn offer_requests(&mut self, offers: &[Offer]) -> bool {
        (**self).offer_requests(offers)
    }
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        (**self).saved_folds()
    }
    fn keeps_folds(&self) -> bool {
        (**self).keeps_folds()
    }
    fn keep_folds(&mut self, position: usize, folds: &Folds) {
        (**self).keep_folds(position, folds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_choices() {
        let mut a = RandomChooser::new(42);
        let mut b = RandomChooser::new(42);
        let xs: Vec<usize> = (0..100)
            .map(|i| a.choose(ChoiceKind::Delay, 2 + i % 7))
            .collect();
        let ys: Vec<usize> = (0..100)
            .map(|i| b.choose(ChoiceKind::Delay, 2 + i % 7))
            .collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().enumerate().all(|(i, &x)| x < 2 + i % 7));
    }

    #[test]
    fn guided_next_prefix_backtracks_depth_first() {
        use ChoiceKind::NextRequest as K;
        assert_eq!(
            GuidedChooser::next_prefix(&[(K, 2, 0), (K, 3, 1), (K, 2, 1)]),
            Some(vec![0, 2])
        );
        assert_eq!(GuidedChooser::next_prefix(&[(K, 2, 1), (K, 3, 2)]), None);
    }

    #[test]
    fn replay_past_end_answers_zero_and_clamps() {
        let mut r = ReplayChooser::new(vec![1, 5]);
        assert_eq!(r.choose(ChoiceKind::NextRequest, 3), 1);
        assert_eq!(r.choose(ChoiceKind::NextRequest, 3), 2);
        assert_eq!(r.mismatches, 1);
        assert_eq!(r.choose(ChoiceKind::NextRequest, 3), 0);
    }
}
