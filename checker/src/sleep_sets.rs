//! Sleep sets, the mechanism of the partial-order reduction: each run's, what was explored
//! at each choice of the current prefix, and the states seen with a sleep set.
//! [`crate::partial_order`] gives the argument and the evidence.

use std::collections::HashMap;
use zklock_sim::{ChoiceKind, Footprint, Offer};

/// A transition explored or asleep, with what it touched.
#[derive(Clone, Debug)]
pub(crate) struct Sleeper {
    offer: Offer,
    footprint: Footprint,
}

/// The transition a run took last, until the world says what it touched.
#[derive(Debug)]
struct Pending {
    /// Its choice's position among the run's choices, when it was one (not forced).
    position: Option<usize>,
    offer: Offer,
    /// Those that may sleep after it: the sleep set, and those explored before it here.
    candidates: Vec<Sleeper>,
}

/// One run's sleep sets.
#[derive(Debug, Default)]
pub(crate) struct RunSleep {
    /// The prefix this run follows.
    prefix: Vec<u32>,
    /// The current state's sleep set.
    sleep: Vec<Sleeper>,
    offers: Vec<Offer>,
    /// Which offers sleep, as bits by choice index (indices from 64 never sleep).
    asleep: u64,
    pending: Option<Pending>,
    /// By choice position: the offers asleep there (0 for other kinds of choice).
    pub(crate) masks: Vec<u64>,
    /// The transitions taken at choices, by position, with what they touched, when that
    /// was not global.
    pub(crate) taken: Vec<(usize, Sleeper)>,
}

impl RunSleep {
    pub(crate) fn new(prefix: Vec<u32>) -> RunSleep {
        RunSleep {
            prefix,
            ..RunSleep::default()
        }
    }

    /// The world reached a state: what led here sets its sleep set.
    pub(crate) fn after_transition(&mut self, t: Option<&Footprint>) {
        let pending = self.pending.take();
        self.sleep = match (pending, t) {
            (Some(p), Some(f)) if !f.global && f.client == p.offer.client => {
                if let Some(position) = p.position {
                    let s = Sleeper {
                        offer: p.offer,
                        footprint: f.clone(),
                    };
                    self.taken.push((position, s));
                }
                p.candidates
                    .into_iter()
                    .filter(|u| u.footprint.independent(f))
                    .collect()
            }
            _ => Vec::new(),
        };
    }

    /// The requests on offer; `false` when every one sleeps (the run stops here).
    pub(crate) fn offer(&mut self, offers: &[Offer]) -> bool {
        self.offers.clear();
        self.offers.extend_from_slice(offers);
        self.asleep = 0;
        for (i, o) in offers.iter().enumerate().take(64) {
            if self.sleep.iter().any(|s| s.offer == *o) {
                self.asleep |= 1 << i;
            }
        }
        if offers.len() <= 64 && self.asleep.count_ones() as usize == offers.len() {
            return false;
        }
        if offers.len() == 1 {
            self.pending = Some(Pending {
                position: None,
                offer: offers[0],
                candidates: self.sleep.clone(),
            });
        }
        true
    }

    /// The index to take at choice `position` among `n` requests: the prefix's, or the
    /// first awake one from it. `done` holds the transitions explored at this choice.
    pub(crate) fn choose(&mut self, position: usize, n: usize, done: &[Sleeper]) -> usize {
        let want = (self.prefix.get(position).copied().unwrap_or(0) as usize).min(n - 1);
        let c = (want..n).find(|&i| !asleep(self.asleep, i)).unwrap_or(want);
        if self.masks.len() <= position {
            self.masks.resize(position + 1, 0);
        }
        self.masks[position] = self.asleep;
        let mut candidates = self.sleep.clone();
        candidates.extend_from_slice(done);
        self.pending = Some(Pending {
            position: Some(position),
            offer: self.offers[c],
            candidates,
        });
        c
    }

    /// The offers of the current sleep set, sorted, to keep with a state.
    pub(crate) fn sleep_offers(&self) -> Vec<Offer> {
        let mut v: Vec<Offer> = self.sleep.iter().map(|s| s.offer).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn asleep(mask: u64, i: usize) -> bool {
    i < 64 && mask & (1 << i) != 0
}

/// The states seen with a non-empty sleep set, and that set (sorted): a state seen but
/// not here was explored with every transition.
#[derive(Debug, Default)]
pub(crate) struct SleepingStates(HashMap<u128, Vec<Offer>>);

impl SleepingStates {
    /// A first visit with sleep set `z`.
    pub(crate) fn first(&mut self, digest: u128, z: Vec<Offer>) {
        if !z.is_empty() {
            self.0.insert(digest, z);
        }
    }

    /// A revisit with sleep set `z`: whether to prune it (see the module docs).
    pub(crate) fn prune_revisit(&mut self, digest: u128, z: &[Offer], symmetry: bool) -> bool {
        let Some(s) = self.0.get_mut(&digest) else {
            return true;
        };
        if symmetry {
            return false;
        }
        if s.iter().all(|o| z.binary_search(o).is_ok()) {
            return true;
        }
        s.retain(|o| z.binary_search(o).is_ok());
        if s.is_empty() {
            self.0.remove(&digest);
        }
        false
    }
}

/// What a reduced search keeps across runs: the transitions explored at each choice of
/// the current prefix.
#[derive(Debug, Default)]
pub(crate) struct Explored(pub(crate) Vec<Vec<Sleeper>>);

impl Explored {
    /// The next prefix after a run that made `made` (skipping alternatives asleep there),
    /// updating what was explored at its choices. `None` when the search is done.
    pub(crate) fn next_prefix(
        &mut self,
        made: &[(ChoiceKind, u32, u32)],
        run: &RunSleep,
    ) -> Option<Vec<u32>> {
        let mask = |k: usize| run.masks.get(k).copied().unwrap_or(0);
        let (k, next) = made.iter().enumerate().rev().find_map(|(k, &(_, n, c))| {
            (c + 1..n)
                .find(|&x| !asleep(mask(k), x as usize))
                .map(|x| (k, x))
        })?;
        let stack = &mut self.0;
        if stack.len() < k + 1 {
            stack.resize(k + 1, Vec::new());
        }
        stack.truncate(k + 1);
        if let Some((_, s)) = run.taken.iter().rev().find(|(p, _)| *p == k) {
            stack[k].push(s.clone());
        }
        let mut p: Vec<u32> = made[..k].iter().map(|&(_, _, c)| c).collect();
        p.push(next);
        Some(p)
    }

    /// The transitions explored at choice `position` of the current prefix.
    pub(crate) fn at(&self, position: usize) -> &[Sleeper] {
        self.0.get(position).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(client: u32) -> Offer {
        Offer {
            client,
            fingerprint: 7,
        }
    }

    #[test]
    fn a_revisit_is_pruned_only_when_what_slept_there_sleeps_now() {
        let mut s = SleepingStates::default();
        s.first(1, Vec::new());
        assert!(
            s.prune_revisit(1, &[], false),
            "explored with nothing asleep"
        );
        s.first(2, vec![offer(0), offer(1)]);
        assert!(!s.prune_revisit(2, &[offer(1)], false));
        // Client 0's request has been explored from it now: only client 1's slept twice.
        assert!(s.prune_revisit(2, &[offer(1)], false));
        s.first(3, vec![offer(0)]);
        assert!(
            !s.prune_revisit(3, &[offer(0)], true),
            "a permutation names other clients"
        );
    }

    #[test]
    fn backtracking_skips_the_requests_asleep_at_a_choice() {
        use ChoiceKind::{Fault, NextRequest};
        let mut run = RunSleep::new(Vec::new());
        run.masks = vec![0, 0b110];
        let mut explored = Explored::default();
        // At choice 1, indices 1 and 2 sleep: the next alternative is choice 0's.
        let made = [(Fault, 2, 0), (NextRequest, 3, 0)];
        assert_eq!(explored.next_prefix(&made, &run), Some(vec![1]));
        run.masks = vec![0, 0b010];
        assert_eq!(explored.next_prefix(&made, &run), Some(vec![0, 2]));
        let last = [(Fault, 2, 1), (NextRequest, 3, 2)];
        assert_eq!(explored.next_prefix(&last, &run), None);
    }
}
