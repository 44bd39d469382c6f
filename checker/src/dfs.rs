//! One run of the depth-first search: the chooser that follows a prefix and prunes at
//! seen states, and the judging of a run it stopped. The search on one thread
//! ([`crate::exhaustive`]) and on several ([`crate::parallel`]) both drive it.

use crate::run::{CheckedRun, judge, prefix_broke_a_property};
use crate::seen::SeenStates;
use crate::shard::Shard;
use crate::sleep_sets::{Explored, RunSleep, SleepingStates};
use std::sync::{Arc, Mutex};
use zklock_sim::{
    ChoiceKind, Chooser, Folds, Footprint, GuidedChooser, Offer, Recipe, RunOutcome, SavedFolds,
    Scenario, run_scenario_with,
};

/// Schedules between two calls of an exhaustive check's `progress`.
pub const PROGRESS_EVERY_SCHEDULES: u64 = 1024;

/// The chooser of one run of a depth-first search, on one thread or several.
pub(crate) struct DfsChooser {
    pub(crate) guided: GuidedChooser,
    prefix_len: usize,
    visited: Arc<SeenStates>,
    prune: bool,
    /// Prune by symmetric digests.
    symmetry: bool,
    /// Fold what recipes keep of replies in the replies' place (see [`Bounds::keep_only`](crate::Bounds::keep_only)).
    keep_only: bool,
    /// Collect final states up to symmetry (so every digest is symmetric where it can be).
    finals: Option<Arc<Mutex<std::collections::BTreeSet<u128>>>>,
    /// With partial-order reduction: this run's sleep sets, what was explored at the
    /// prefix's choices, and the states seen with a sleep set.
    por: Option<Por>,
    /// The folds of earlier runs at their choices, carried from run to run, and whether
    /// this run takes them over for its prefix (see [`SavedFolds`]).
    pub(crate) folds: SavedFolds,
    reuse_folds: bool,
    /// A shard's search: it takes only the first faults of the kinds it owns
    /// ([`Shard::owns_first_fault`]).
    shard: Option<Shard>,
    /// Whether this run has made its first fault.
    faulted: bool,
    /// Whether its first fault is another shard's: the run stops at its next state,
    /// which it leaves out of the seen states.
    others: bool,
}

impl DfsChooser {
    /// A run that follows `prefix`, then answers 0, pruning at states in `visited` (when
    /// `prune`), without partial-order reduction.
    pub(crate) fn new(
        prefix: Vec<u32>,
        visited: Arc<SeenStates>,
        prune: bool,
        symmetry: bool,
        finals: Option<Arc<Mutex<std::collections::BTreeSet<u128>>>>,
        folds: SavedFolds,
        reuse_folds: bool,
    ) -> DfsChooser {
        DfsChooser {
            prefix_len: prefix.len(),
            guided: GuidedChooser::new(prefix),
            visited,
            prune,
            symmetry,
            keep_only: false,
            finals,
            por: None,
            folds,
            reuse_folds,
            shard: None,
            faulted: false,
            others: false,
        }
    }

    /// The same, searching only `shard`'s part of the tree (see [`crate::shard`]).
    pub(crate) fn in_shard(self, shard: Option<Shard>) -> DfsChooser {
        DfsChooser { shard, ..self }
    }

    /// The same, folding what recipes keep of replies in the replies' place when
    /// `keep_only` (see [`Bounds::keep_only`](crate::Bounds::keep_only)).
    pub(crate) fn keeping_only(self, keep_only: bool) -> DfsChooser {
        DfsChooser { keep_only, ..self }
    }

    /// This run's sleep sets, when it reduced by partial order.
    pub(crate) fn take_por(&mut self) -> Option<Por> {
        self.por.take()
    }

    /// The same, reducing by partial order with `por`'s sleep sets when given.
    pub(crate) fn with_por(self, por: Option<Por>) -> DfsChooser {
        DfsChooser { por, ..self }
    }
}

pub(crate) struct Por {
    pub(crate) run: RunSleep,
    pub(crate) explored: Arc<Mutex<Explored>>,
    pub(crate) sleeping: Arc<Mutex<SleepingStates>>,
}

impl Chooser for DfsChooser {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        match &mut self.por {
            Some(p) if kind == ChoiceKind::NextRequest => {
                let position = self.guided.made.len();
                let explored = p.explored.lock().expect("explored lock");
                let c = p.run.choose(position, n, explored.at(position));
                self.guided.made.push((kind, n as u32, c as u32));
                c
            }
            _ => {
                let c = self.guided.choose(kind, n);
                if kind == ChoiceKind::Fault && c != 0 && !self.faulted {
                    self.faulted = true;
                    self.others = self.shard.is_some_and(|s| !s.owns_first_fault(c));
                }
                c
            }
        }
    }
    fn wants_digests(&self) -> bool {
        true
    }
    fn at_state(&mut self, digest: u128) -> bool {
        // Another shard's first fault: its states are that shard's to see.
        if self.others {
            return false;
        }
        // Re-executing the prefix revisits its own states: never prune there.
        if self.guided.made.len() < self.prefix_len {
            return true;
        }
        let fresh = self.visited.insert(digest);
        let Some(p) = &mut self.por else {
            return fresh || !self.prune;
        };
        let z = p.run.sleep_offers();
        let mut sleeping = p.sleeping.lock().expect("sleeping lock");
        if fresh {
            sleeping.first(digest, z);
            return true;
        }
        !sleeping.prune_revisit(digest, &z, self.symmetry)
    }
    fn needs_digest(&self) -> bool {
        self.guided.made.len() >= self.prefix_len
    }
    fn wants_symmetry(&self) -> bool {
        self.symmetry || self.finals.is_some()
    }
    fn prunes_by_symmetry(&self) -> bool {
        self.symmetry
    }
    fn at_end(&mut self, digest: u128) {
        if let Some(f) = &self.finals {
            f.lock().expect("finals lock").insert(digest);
        }
    }
    fn wants_partial_order(&self) -> bool {
        self.por.is_some()
    }
    fn honours_keep_only(&self) -> bool {
        self.keep_only
    }
    fn after_transition(&mut self, transition: Option<&Footprint>) {
        if let Some(p) = &mut self.por {
            p.run.after_transition(transition);
        }
    }
    fn offer_requests(&mut self, offers: &[Offer]) -> bool {
        self.por.as_mut().is_none_or(|p| p.run.offer(offers))
    }
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        self.reuse_folds
            .then(|| self.folds.for_prefix(self.guided.prefix()))?
    }
    fn keeps_folds(&self) -> bool {
        self.reuse_folds
    }
    fn keep_folds(&mut self, position: usize, folds: &Folds) {
        debug_assert_eq!(position, self.guided.made.len());
        self.folds
            .keep(self.guided.made.iter().map(|&(_, _, c)| c), folds);
    }
}

/// Judges a run stopped at a seen state: its history as far as it went, and when that
/// broke a property already, the same schedule run to its end without pruning, so that a
/// violation is reported, and its trace replays, as a whole run. That run, if `failing`
/// accepts it.
pub(crate) fn judge_pruned<R: Recipe>(
    scenario: &Scenario,
    recipe: &R,
    out: RunOutcome,
    made: &[(ChoiceKind, u32, u32)],
    failing: &(dyn Fn(&CheckedRun) -> bool + Sync),
) -> Option<CheckedRun> {
    if !prefix_broke_a_property(scenario, out) {
        return None;
    }
    let choices = made.iter().map(|&(_, _, c)| c).collect();
    let whole = run_scenario_with(scenario, 0, Box::new(GuidedChooser::new(choices)), recipe);
    let run = judge(scenario, whole);
    failing(&run).then_some(run)
}
