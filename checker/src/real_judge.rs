//! Judging a real run (or any history recorded by parallel clients) as a simulated run of
//! the same shape is judged: every property per lock directory in a run of several locks,
//! and a semaphore's own property first in a semaphore's run, with waiters caught
//! mid-step re-judged as [`judge_parallel`] does.

use crate::concurrent::{Judged, judge_parallel, rejudge_mid_steps};
use crate::per_lock::{check_per_lock, semaphore_leases_per_lock};
use crate::properties::election::leader_owns_node;
use crate::properties::queue::{Changes, QueueFacts, check_queue_with};
use crate::properties::revocation::check_revocation;
use crate::properties::{CheckConfig, node_outlives_attempt};
use zklock_recipe::history::{History, NodeLives};

/// What a run is besides its history and [`CheckConfig`]: its lock directories, each with
/// its children once the run was done, and the lease count of a semaphore's run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunShape {
    /// Every lock directory of the run and its final children. Empty or one: the one lock
    /// of the [`CheckConfig`] (`lock_path`, `final_lock_children`).
    pub locks: Vec<(String, Vec<String>)>,
    /// `Some(n)` for a counting semaphore of `n` leases: `semaphore_leases` is judged too.
    pub leases: Option<u32>,
    /// Other directories the library created nodes in, each with the ephemeral nodes left
    /// in it at the end ([`CheckConfig::touched_children`]); judged in a run of one lock.
    pub touched: Vec<(String, Vec<String>)>,
    /// The ephemeral nodes the run's proxies saw made and deleted, and the leak bound:
    /// `node_outlives_attempt` is judged too. `None` (a run without proxies): it is not.
    pub nodes: Option<NodeLives>,
    /// A leader election's run, leadership recorded as holds: the election's
    /// `election_leader_owns_node` is judged too, after the lock's.
    pub election: bool,
    /// A run with revokers: the bound a holder asked to give up has, in ms; the run is
    /// judged by the revocation properties too.
    pub revoke_bound_ms: Option<u64>,
}

/// Every property on `history`, per lock when `shape` has several, `semaphore_leases`
/// first when it is a semaphore's run, `node_outlives_attempt` after the lock's when the
/// shape has the run's nodes, and `election_leader_owns_node` last in an election's run.
pub fn judge_real(history: &History, cfg: &CheckConfig, shape: &RunShape) -> Judged {
    let mut judged = if shape.locks.len() <= 1 {
        let cfg = match shape.locks.first() {
            Some((path, children)) => CheckConfig {
                lock_path: path.clone(),
                final_lock_children: children.clone(),
                touched_children: shape.touched.clone(),
                ..cfg.clone()
            },
            None => CheckConfig {
                touched_children: shape.touched.clone(),
                ..cfg.clone()
            },
        };
        judge_parallel(history, &cfg)
    } else {
        judge_parallel_per_lock(history, cfg, &shape.locks)
    };
    if let Some(leases) = shape.leases {
        let mut paths: Vec<String> = shape.locks.iter().map(|(p, _)| p.clone()).collect();
        if paths.is_empty() {
            paths.push(cfg.lock_path.clone());
        }
        let verdict = semaphore_leases_per_lock(&judged.history, leases, cfg.pauses_on, &paths);
        // A semaphore's own property comes first, as in a simulated run's report.
        judged.report.verdicts.insert(0, verdict);
    }
    if let Some(nodes) = &shape.nodes {
        let verdict = node_outlives_attempt::check(&judged.history, nodes);
        judged.report.verdicts.push(verdict);
    }
    if shape.election {
        let verdict = leader_owns_node::check(&judged.history);
        judged.report.verdicts.push(verdict);
    }
    if let Some(bound_ms) = shape.revoke_bound_ms {
        let end_us = cfg
            .run_end_us
            .or(judged.history.events.last().map(|e| e.time_us))
            .unwrap_or(0);
        let verdicts = check_revocation(&judged.history, bound_ms, end_us);
        judged.report.verdicts.extend(verdicts);
    }
    judged
}

/// Every work-queue property on a real run's `history` (its changes charged to the
/// writes that caused them, [`Changes::Parallel`]), with the queue's final children in
/// `facts`.
pub fn judge_real_queue(history: &History, cfg: &CheckConfig, facts: &QueueFacts) -> Judged {
    Judged {
        report: check_queue_with(history, cfg, facts, Changes::Parallel),
        history: history.clone(),
        reordered: 0,
    }
}

/// [`judge_parallel`] over [`check_per_lock`]: a `no_herd` violation of any lock whose
/// extra wake is a waiter caught mid-step is re-judged with that request moved back.
fn judge_parallel_per_lock(
    history: &History,
    cfg: &CheckConfig,
    locks: &[(String, Vec<String>)],
) -> Judged {
    let paths: Vec<&str> = locks.iter().map(|(path, _)| path.as_str()).collect();
    rejudge_mid_steps(history, &paths, |h| check_per_lock(h, cfg, locks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckConfig;
    use zklock_sim::{Scenario, SemaphoreRecipe, ShippedRecipe};

    /// A simulated run judged as a real one is: the same verdicts as the simulation's own
    /// judging, per lock and with the semaphore's property.
    #[test]
    fn a_run_judged_by_shape_gets_the_simulations_verdicts() {
        for (scenario, leases) in [
            (
                Scenario {
                    locks: 3,
                    ..Scenario::default()
                },
                None,
            ),
            (Scenario::default(), Some(2)),
        ] {
            for seed in 0..4 {
                let run = match leases {
                    None => crate::check_seed(&scenario, seed, &ShippedRecipe::default()),
                    Some(_) => crate::check_seed(&scenario, seed, &SemaphoreRecipe::default()),
                };
                let o = &run.outcome;
                let cfg = CheckConfig::from_scenario(&scenario)
                    .with_final_children(o.final_lock_children.clone())
                    .with_run_end_us(o.end_time_us);
                let shape = RunShape {
                    locks: scenario
                        .lock_paths()
                        .into_iter()
                        .zip(o.final_children_by_lock.iter().cloned())
                        .collect(),
                    leases,
                    ..RunShape::default()
                };
                let judged = judge_real(&o.history, &cfg, &shape);
                assert_eq!(judged.reordered, 0);
                assert_eq!(judged.report.verdicts, run.report.verdicts, "seed {seed}");
                let first = judged.report.verdicts[0].property;
                assert_eq!(first == "semaphore_leases", leases.is_some());
            }
        }
    }
}
