//! Judging a run of several locks: every property per lock directory.
//!
//! Exclusion, fencing, fifo, the herd and liveness hold within one lock, never across
//! two: two clients may hold two different locks at once. A run of several locks is
//! therefore judged once per lock, on the history as that lock saw it ([`project`]):
//! every acquisition of that lock, with what its holder did in it (the resource of that
//! lock), every request on that lock's directory, and everything that concerns no lock
//! in particular (sessions, faults, requests elsewhere, the end of a workload). The
//! violations name events of the whole history, and the report holds, per property, the
//! first lock's failure (or else its first report).

use crate::properties::{CheckConfig, Report, Verdict, Violation, check_all, semaphore_leases};
use std::collections::BTreeMap;
use zklock_recipe::history::{EventKind, History};

/// The events of `history` that lock directory `path` (one of `paths`) saw, and for each
/// its index in `history`.
pub fn project(history: &History, path: &str, paths: &[String]) -> (History, Vec<usize>) {
    let owner = |p: &str| {
        paths
            .iter()
            .position(|d| p == d || (p.starts_with(d.as_str()) && p[d.len()..].starts_with('/')))
    };
    let me = paths.iter().position(|d| d == path);
    // Each client's acquisition under way: which lock it is for.
    let mut current: BTreeMap<u32, Option<usize>> = BTreeMap::new();
    // Requests on another lock's directory, by op id, left out with their replies.
    let mut elsewhere: BTreeMap<u64, ()> = BTreeMap::new();
    let mut events = Vec::new();
    let mut index = Vec::new();
    for (i, e) in history.events.iter().enumerate() {
        let keep = match &e.kind {
            EventKind::AcquireInvoked { lock, .. } => {
                let of = lock.as_deref().map_or(Some(0), owner);
                current.insert(e.client, of);
                of == me
            }
            EventKind::Acquired { .. }
            | EventKind::AcquireFailed { .. }
            | EventKind::ReleaseInvoked
            | EventKind::Released
            | EventKind::ReleaseFailed { .. }
            | EventKind::Lost { .. }
            | EventKind::ResourceRead { .. }
            | EventKind::ResourceWrite { .. } => current.get(&e.client).copied().flatten() == me,
            EventKind::OpInvoke { op_id, path: p, .. } => match owner(p) {
                Some(o) if Some(o) != me => {
                    elsewhere.insert(*op_id, ());
                    false
                }
                _ => true,
            },
            EventKind::OpOk { op_id }
            | EventKind::OpFail { op_id, .. }
            | EventKind::OpUnknown { op_id } => !elsewhere.contains_key(op_id),
            _ => true,
        };
        if keep {
            events.push(e.clone());
            index.push(i);
        }
    }
    (History { events }, index)
}

/// Every property judged per lock: `cfg` with each of `locks` (directory, its final
/// children) in turn, on the history as that lock saw it. The counters are summed over
/// the locks, but for the faults, which every lock saw and are counted once.
pub fn check_per_lock(
    history: &History,
    cfg: &CheckConfig,
    locks: &[(String, Vec<String>)],
) -> Report {
    let paths: Vec<String> = locks.iter().map(|(p, _)| p.clone()).collect();
    let mut merged: Option<Report> = None;
    for (path, children) in locks {
        let (seen, index) = project(history, path, &paths);
        let cfg = CheckConfig {
            lock_path: path.clone(),
            final_lock_children: children.clone(),
            ..cfg.clone()
        };
        let mut report = check_all(&seen, &cfg);
        for v in &mut report.verdicts {
            if let Some(violation) = &mut v.report {
                renumber(violation, &index, path);
            }
        }
        merged = Some(match merged {
            None => report,
            Some(mut m) => {
                let faults = m.counters.faults.clone();
                m.counters.merge(&report.counters);
                m.counters.faults = faults;
                for (kept, new) in m.verdicts.iter_mut().zip(report.verdicts) {
                    let better =
                        (kept.ok && !new.ok) || (kept.report.is_none() && new.report.is_some());
                    if better {
                        *kept = new;
                    }
                }
                m
            }
        });
    }
    merged.unwrap_or_else(|| check_all(history, cfg))
}

/// `semaphore_leases` of a semaphore of `leases` leases judged per lock directory of
/// `paths` (each a semaphore of its own): the first lock's failure, else its first
/// known-unavoidable report, else the first verdict.
pub fn semaphore_leases_per_lock(
    history: &History,
    leases: u32,
    pauses_on: bool,
    paths: &[String],
) -> Verdict {
    let verdicts = paths.iter().map(|path| {
        if paths.len() == 1 {
            return semaphore_leases::check(history, leases, pauses_on);
        }
        let (seen, index) = project(history, path, paths);
        let mut v = semaphore_leases::check(&seen, leases, pauses_on);
        if let Some(violation) = &mut v.report {
            renumber(violation, &index, path);
        }
        v
    });
    verdicts
        .reduce(|kept, new| {
            let better = (kept.ok && !new.ok) || (kept.report.is_none() && new.report.is_some());
            if better { new } else { kept }
        })
        .unwrap_or_else(|| semaphore_leases::check(history, leases, pauses_on))
}

/// A projected history's violation, told in the whole history's event numbers.
pub(crate) fn renumber(v: &mut Violation, index: &[usize], path: &str) {
    for e in v.events.iter_mut().chain(v.faults_before.iter_mut()) {
        e.index = index[e.index];
    }
    v.summary = format!("on lock {path}: {}", v.summary);
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_sim::{Scenario, ShippedRecipe, run_scenario};

    #[test]
    fn each_lock_sees_its_own_acquisitions_and_the_shared_events() {
        let scenario = Scenario {
            clients: 4,
            acquisitions_per_client: 6,
            locks: 2,
            ..Scenario::default()
        };
        let run = run_scenario(&scenario, 3, &ShippedRecipe::default());
        assert!(run.error.is_none(), "{:?}", run.error);
        let paths = scenario.lock_paths();
        let (a, ia) = project(&run.history, &paths[0], &paths);
        let (b, ib) = project(&run.history, &paths[1], &paths);
        let acquired = |h: &History| {
            h.events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Acquired { .. }))
                .count()
        };
        // Every acquisition belongs to exactly one lock, and both locks were taken.
        assert!(acquired(&a) > 0 && acquired(&b) > 0);
        assert_eq!(acquired(&a) + acquired(&b), acquired(&run.history));
        // A lock's view never holds a request on the other lock's directory.
        for e in &a.events {
            if let EventKind::OpInvoke { path, .. } = &e.kind {
                assert!(!path.starts_with(&paths[1]), "{path}");
            }
        }
        assert!(ia.windows(2).all(|w| w[0] < w[1]) && ib.len() < run.history.events.len());
    }

    /// Two clients holding two different locks at once is no violation; judged as one
    /// lock, the same history would be.
    #[test]
    fn holds_of_different_locks_may_overlap_and_each_lock_is_judged_alone() {
        let scenario = Scenario {
            clients: 5,
            acquisitions_per_client: 10,
            locks: 3,
            ..Scenario::default()
        };
        let mut across = 0;
        for seed in 0..20 {
            let run = crate::check_seed(&scenario, seed, &ShippedRecipe::default());
            assert!(run.report.ok(), "seed {seed}: {}", run.report);
            let whole = check_all(&run.outcome.history, &CheckConfig::from_scenario(&scenario));
            if !whole.verdict("mutual_exclusion").unwrap().ok {
                across += 1;
            }
        }
        assert!(across > 0, "no run held two locks at once");
    }
}
