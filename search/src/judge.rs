//! Real runs judged by the checker: a lock's run by the lock's properties, a work
//! queue's by the queue's, with what the run's proxies saw of a stuck client.

use zklock_checker::CheckConfig;
use zklock_checker::concurrent::Judged;
use zklock_checker::properties::Report;
use zklock_checker::properties::queue::QueueFacts;
use zklock_checker::real_judge::{RunShape, judge_real, judge_real_queue};
use zklock_real::workload::RealRun;

/// Judges a run with the checker: the lock's properties, or a work queue's.
pub fn judge(run: &RealRun) -> Judged {
    // With pauses on, an overlap of a paused holder is the known, unavoidable class.
    let cfg = CheckConfig::from(run.facts());
    let shape = RunShape {
        locks: run.final_children_by_lock.clone(),
        leases: run.leases,
        touched: run.final_children_touched.clone(),
        nodes: run.nodes.clone(),
        election: run.election,
        revoke_bound_ms: run.revoke_bound_ms,
    };
    match &run.queue {
        Some(paths) => {
            let left = |i: usize| {
                run.final_children_by_lock
                    .get(i)
                    .map(|(_, c)| c.clone())
                    .unwrap_or_default()
            };
            let facts = QueueFacts {
                paths: paths.clone(),
                final_items: left(0),
                final_locks: left(1),
            };
            judge_real_queue(&run.history, &cfg, &facts)
        }
        None => judge_real(&run.history, &cfg, &shape),
    }
}

/// How many of a stuck client's last requests a report lists.
const LAST_REQUESTS_SHOWN: usize = 8;

/// When `liveness_after_heal` caught a stuck lock call (a lock or release that never
/// returned), the stuck client's last requests as its proxies saw them, in one line;
/// `None` otherwise, or when the run had no proxies.
pub fn stuck_client_requests(run: &RealRun, report: &Report) -> Option<String> {
    let violation = report
        .verdict(zklock_checker::properties::liveness_after_heal::NAME)?
        .report
        .as_ref()?;
    if !violation.summary.contains(": a stuck") {
        return None;
    }
    let c = violation.events.first()?.client;
    let (seen, past_bound) = run.requests.get(c as usize)?;
    if seen.is_empty() {
        return None;
    }
    let shown = &seen[seen.len().saturating_sub(LAST_REQUESTS_SHOWN)..];
    let list: Vec<String> = shown
        .iter()
        .map(|r| {
            let name = zklock_real::plan::op::name_of(r.op).unwrap_or("op");
            format!("{name} {}", r.path)
        })
        .collect();
    let more = match past_bound {
        0 => String::new(),
        n => format!(" ({n} more came past the proxies' record)"),
    };
    Some(format!(
        "c{c}'s last {} of {} requests, as its proxies saw them{more}: {}",
        shown.len(),
        seen.len(),
        list.join("; ")
    ))
}
