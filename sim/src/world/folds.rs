//! Folds taken over from an earlier run, so that replaying a prefix costs no folding.
//!
//! A digest holds, for each client, a fold of every value delivered to its actor (`obs`,
//! and with symmetry `obs_sym` and `obs_sig`: see `digest` and `symmetry`), and a fold
//! of the clock reads made outside any client's handle (`outside_obs`). A stateless
//! explorer runs each schedule from the start, replaying a prefix of choices an earlier
//! run made, and uses digests only past that prefix. A run is a function of its choices,
//! so its folds when it reaches its k-th choice are the folds every run that made the
//! same k choices before had there. An explorer keeps the folds its runs had at each
//! choice ([`SavedFolds`]) and hands the next run those at its prefix's last choice
//! ([`Chooser::saved_folds`]); that run folds nothing until it reaches that choice and
//! takes them there, before the choice is drawn, so every delivery after it is folded
//! as ever. The first digest an explorer uses comes after that choice: from it on,
//! digests are the same as if the run had folded from the start. Built with debug
//! assertions, the world folds anyway and checks the saved folds against its own.
//!
//! Only folding is skipped: what a delivery touches, for partial-order reduction, is
//! recorded as ever.

use super::World;
use crate::chooser::Chooser;

/// Every fold of what actors were given, at one point of a run: opaque, to hand back to
/// a run of the same scenario ([`Chooser::saved_folds`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folds(Vec<u64>);

/// An explorer's store of the folds its runs had at their choices, for later runs that
/// replay the same choices.
#[derive(Clone, Debug, Default)]
pub struct SavedFolds {
    /// `at[j]`, for `j < live`: the folds before a choice at position `j`, taken after
    /// the choices `path[..j]`. Entries past `live` are spare allocations.
    at: Vec<Folds>,
    live: usize,
    /// The choices made before the folds last kept.
    path: Vec<u32>,
}

impl SavedFolds {
    /// Keeps `folds`, taken by a run before its choice at position `made.len()`, `made`
    /// being the choices it made before. Folds taken after other choices are forgotten.
    pub fn keep(&mut self, made: impl Iterator<Item = u32>, folds: &Folds) {
        // The entries at j stay valid while the path up to j is unchanged.
        let mut common = None;
        let mut position = 0;
        for (i, c) in made.enumerate() {
            if common.is_none() && self.path.get(i) != Some(&c) {
                common = Some(i);
            }
            match self.path.get_mut(i) {
                Some(p) => *p = c,
                None => self.path.push(c),
            }
            position = i + 1;
        }
        let common = common.unwrap_or(position.min(self.path.len()));
        self.path.truncate(position);
        self.live = self.live.min(common + 1).min(position);
        if self.live < position {
            // A gap: nothing is known at the positions between.
            return;
        }
        match self.at.get_mut(position) {
            Some(f) => f.0.clone_from(&folds.0),
            None => self.at.push(folds.clone()),
        }
        self.live = position + 1;
    }

    /// The folds before the last choice of `prefix`, when they were taken after the
    /// choices before it: what [`Chooser::saved_folds`] answers for a run that follows
    /// `prefix`.
    pub fn for_prefix(&self, prefix: &[u32]) -> Option<(usize, Folds)> {
        let k = prefix.len().checked_sub(1)?;
        (k < self.live && self.path.get(..k) == Some(&prefix[..k])).then(|| (k, self.at[k].clone()))
    }
}

/// What a run does with saved folds.
#[derive(Default)]
pub(super) struct Reuse {
    /// The position of the choice at which to take saved folds, and they; `None` once
    /// the run's folds are known (taken, or folded from the start).
    restore: Option<(usize, Folds)>,
    /// Whether the chooser keeps folds.
    keeps: bool,
    /// The folds handed to the chooser, kept to spare an allocation per choice.
    scratch: Folds,
}

impl Reuse {
    pub(super) fn new(chooser: &mut dyn Chooser, digesting: bool) -> Reuse {
        if !digesting {
            return Reuse::default();
        }
        Reuse {
            restore: chooser.saved_folds(),
            keeps: chooser.keeps_folds(),
            scratch: Folds::default(),
        }
    }
}

impl World {
    /// Whether the run's folds are what folding from the start would have made.
    pub(super) fn folds_known(&self) -> bool {
        self.reuse.restore.is_none()
    }

    /// A digest is about to be taken: its folds must be known, or it would be wrong.
    pub(super) fn assert_folds_known(&self) {
        assert!(
            self.folds_known(),
            "a digest was asked for before the choice whose saved folds this run takes"
        );
    }

    /// Whether deliveries are folded now: once the folds are known, and always with
    /// debug assertions (to check the saved folds).
    pub(super) fn folding(&self) -> bool {
        cfg!(debug_assertions) || self.folds_known()
    }

    /// Before a choice is drawn: takes the saved folds if they were taken at this
    /// choice, then hands the chooser the folds, if it keeps them and they are known.
    pub(super) fn folds_at_choice(&mut self) {
        let position = self.choices.len();
        if let Some((k, _)) = &self.reuse.restore
            && *k == position
        {
            let (_, saved) = self.reuse.restore.take().expect("saved folds");
            if cfg!(debug_assertions) {
                let mut mine = Folds::default();
                self.write_folds(&mut mine);
                assert_eq!(
                    mine, saved,
                    "the folds saved at choice {position} are not this run's: the \
                     explorer replayed other choices than the run that saved them"
                );
            }
            self.read_folds(&saved);
        }
        if self.reuse.keeps && self.folds_known() {
            let mut f = std::mem::take(&mut self.reuse.scratch);
            self.write_folds(&mut f);
            self.chooser.keep_folds(position, &f);
            self.reuse.scratch = f;
        }
    }

    /// Every fold, in a fixed order: `outside_obs`, then each client's `obs`, `obs_sig`,
    /// then `obs_sym`.
    fn write_folds(&self, out: &mut Folds) {
        out.0.clear();
        out.0.push(self.outside_obs);
        for cl in &self.clients {
            out.0.extend([cl.obs, cl.obs_sig]);
            out.0.extend_from_slice(&cl.obs_sym);
        }
    }

    /// Takes every fold from `f`, written by `write_folds` in a run of the same scenario.
    fn read_folds(&mut self, f: &Folds) {
        let mut it = f.0.iter().copied();
        self.outside_obs = it.next().expect("the world's own fold");
        for cl in &mut self.clients {
            let mut next = || it.next().expect("folds of as many clients");
            cl.obs = next();
            cl.obs_sig = next();
            for s in cl.obs_sym.iter_mut() {
                *s = next();
            }
        }
        assert!(it.next().is_none(), "folds of as many clients");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::recorder::Recorder;
    use crate::{FaultMode, Recipe, Scenario, SemaphoreRecipe, Shape, ShippedRecipe};
    use std::sync::{Arc, Mutex};

    /// One run of `scenario` following `prefix`, taking `saved` folds if any.
    fn run<R: Recipe>(
        scenario: &Scenario,
        recipe: &R,
        prefix: &[u32],
        saved: Option<(usize, Folds)>,
        symmetry: bool,
    ) -> Recorder {
        let r = Arc::new(Mutex::new(Recorder {
            prefix: prefix.to_vec(),
            symmetry,
            saved,
            ..Recorder::default()
        }));
        crate::run_scenario_with(scenario, 0, Box::new(r.clone()), recipe);
        std::mem::take(&mut *r.lock().unwrap())
    }

    /// A first run from the start; then, for each of its choices with an alternative,
    /// the next schedule a depth-first search would run there, once taking over the
    /// first run's folds at that choice and once folding from the start: the same
    /// digests at every state from the prefix's end on, and at the end.
    fn same_digests_with_folds_taken_over<R: Recipe>(scenario: &Scenario, recipe: &R) {
        for symmetry in [false, true] {
            let first = run(scenario, recipe, &[], None, symmetry);
            assert_eq!(first.kept.len(), first.made.len(), "folds at every choice");
            let mut compared = 0;
            for (k, &(n, c)) in first.made.iter().enumerate() {
                if c + 1 >= n {
                    continue;
                }
                let mut prefix: Vec<u32> = first.made[..k].iter().map(|m| m.1).collect();
                prefix.push(c + 1);
                let (at, folds) = first.kept[k].clone();
                assert_eq!(at, k);
                let taken = run(scenario, recipe, &prefix, Some((k, folds)), symmetry);
                let folded = run(scenario, recipe, &prefix, None, symmetry);
                assert!(!folded.digests.is_empty());
                assert_eq!(
                    taken.digests, folded.digests,
                    "prefix {prefix:?}, symmetry {symmetry}"
                );
                // The run that took folds over keeps the same ones from there on.
                assert_eq!(taken.kept[..], folded.kept[k..], "prefix {prefix:?}");
                compared += 1;
            }
            assert!(compared >= 5, "only {compared} schedules compared");
        }
    }

    fn bounded(clients: u32, faults_max: u32, shape: Shape) -> Scenario {
        let base = Scenario::default();
        Scenario {
            clients,
            fault_mode: FaultMode::Bounded { faults_max },
            heal_ms: base.time_limit_ms,
            shape,
            ..base
        }
    }

    #[test]
    fn folds_taken_over_at_a_prefix_give_the_digests_of_folding_from_the_start() {
        same_digests_with_folds_taken_over(
            &bounded(3, 1, Shape::fixed()),
            &ShippedRecipe::default(),
        );
        // Every mode a choice: timed and try attempts read the clock.
        same_digests_with_folds_taken_over(
            &bounded(2, 1, Shape::all()),
            &SemaphoreRecipe::default(),
        );
    }

    /// Built with debug assertions, the world checks the folds it is handed against its
    /// own, so an explorer that hands over another schedule's folds is caught.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "are not this run's")]
    fn folds_of_other_choices_are_caught_with_debug_assertions() {
        let scenario = bounded(2, 1, Shape::fixed());
        let recipe = ShippedRecipe::default();
        let first = run(&scenario, &recipe, &[], None, false);
        let k = first.made.len() - 1;
        let (_, mut folds) = first.kept[k].clone();
        // Client 0's fold.
        folds.0[1] ^= 1;
        let prefix: Vec<u32> = first.made.iter().map(|m| m.1).collect();
        run(&scenario, &recipe, &prefix, Some((k, folds)), false);
    }

    fn folds(v: u64) -> Folds {
        Folds(vec![v])
    }

    #[test]
    fn saved_folds_serve_prefixes_that_share_the_choices_before_them() {
        let mut s = SavedFolds::default();
        // A run from the start: choices 1, 0, 2.
        s.keep([].into_iter(), &folds(10));
        s.keep([1].into_iter(), &folds(11));
        s.keep([1, 0].into_iter(), &folds(12));
        assert_eq!(s.for_prefix(&[1, 0, 3]), Some((2, folds(12))));
        assert_eq!(s.for_prefix(&[1, 1]), Some((1, folds(11))));
        assert_eq!(s.for_prefix(&[2]), Some((0, folds(10))));
        assert_eq!(s.for_prefix(&[0, 1]), None, "after another first choice");
        assert_eq!(s.for_prefix(&[1, 0, 2, 1]), None, "never reached");
        assert_eq!(
            s.for_prefix(&[]),
            None,
            "an empty prefix folds from the start"
        );
        // A run that follows [1, 1] from its last choice on: what came after [1, 0] goes.
        s.keep([1].into_iter(), &folds(11));
        s.keep([1, 1].into_iter(), &folds(22));
        assert_eq!(s.for_prefix(&[1, 1, 1]), Some((2, folds(22))));
        assert_eq!(s.for_prefix(&[1, 0, 3]), None);
        assert_eq!(s.for_prefix(&[1, 2]), Some((1, folds(11))));
        // A run that keeps folds past a gap keeps nothing there.
        s.keep([1, 1, 0, 0].into_iter(), &folds(44));
        assert_eq!(s.for_prefix(&[1, 1, 0, 0, 1]), None);
        assert_eq!(s.for_prefix(&[1, 1, 1]), Some((2, folds(22))));
    }
}
