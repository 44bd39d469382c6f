//! The search's workers: each runs one plan at a time on a ZooKeeper server of its own.

use crate::error::SearchError;
use crate::fault_free::Controls;
use crate::frontier::Point;
use crate::journal::{CONTROL_KEY_PREFIX, Journal, plan_key};
use crate::setup::{Outcome, Setup};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use zklock_real::servers::Servers;

/// A run the workers make: the points of a plan, or, with `control`, the script without
/// a fault (the control run of that index; its plan is empty).
pub(crate) struct Job {
    pub(crate) plan: Vec<Point>,
    pub(crate) control: Option<u64>,
}

impl Job {
    pub(crate) fn point(plan: Vec<Point>) -> Job {
        Job {
            plan,
            control: None,
        }
    }

    /// Its name in a journal.
    pub(crate) fn key(&self) -> String {
        match self.control {
            Some(i) => format!("{CONTROL_KEY_PREFIX}{i}"),
            None => plan_key(&self.plan),
        }
    }
}

/// When a search stops dispatching: Ctrl-C, or `--max-runs` runs done.
pub(crate) struct Limit<'a> {
    pub(crate) stop: &'a Arc<AtomicBool>,
    pub(crate) max_runs: u64,
    pub(crate) runs: Cell<u64>,
}

impl Limit<'_> {
    pub(crate) fn reached(&self) -> bool {
        self.stop.load(Ordering::Acquire) || (self.max_runs > 0 && self.runs.get() >= self.max_runs)
    }
}

/// A job and its run's outcome (or the run's error), from a worker.
type Done = (Job, Result<Outcome, SearchError>);

/// The workers: each runs one plan at a time on a server of its own.
pub(crate) struct Pool {
    plans: Option<mpsc::Sender<Job>>,
    done: mpsc::Receiver<Done>,
    workers: Vec<std::thread::JoinHandle<()>>,
    jobs: usize,
}

impl Pool {
    /// One worker per server in `servers`.
    pub(crate) fn new(
        setup: &Arc<Setup>,
        runtime: &Arc<tokio::runtime::Runtime>,
        stop: &Arc<AtomicBool>,
        servers: Vec<Servers>,
    ) -> Pool {
        let (plans, plan_rx) = mpsc::channel::<Job>();
        let plan_rx = Arc::new(Mutex::new(plan_rx));
        let (done_tx, done) = mpsc::channel();
        let jobs = servers.len();
        let workers = servers
            .into_iter()
            .map(|first| {
                let (setup, runtime, stop) =
                    (Arc::clone(setup), Arc::clone(runtime), Arc::clone(stop));
                let (plan_rx, done_tx) = (Arc::clone(&plan_rx), done_tx.clone());
                std::thread::spawn(move || {
                    let mut servers = Some(first);
                    loop {
                        let next = plan_rx
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .recv();
                        let (Ok(job), Some(these)) = (next, servers.take()) else {
                            return;
                        };
                        let result = match setup.run(&runtime, these, &job.plan, &stop) {
                            Ok((outcome, back)) => {
                                servers = Some(back);
                                Ok(outcome)
                            }
                            Err(e) => Err(e),
                        };
                        if done_tx.send((job, result)).is_err() || servers.is_none() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Pool {
            plans: Some(plans),
            done,
            workers,
            jobs,
        }
    }

    /// Runs the jobs `next` hands out, `jobs` at once, until it has none or `limit` is
    /// reached; each result goes to the journal, then to `on_result`. A job the journal
    /// judged already is not run: its saved outcome goes to `on_result`.
    pub(crate) fn drive(
        &mut self,
        limit: &Limit<'_>,
        journal: &mut Journal,
        mut next: impl FnMut() -> Option<Job>,
        mut on_result: impl FnMut(&Job, Outcome) -> Result<(), SearchError>,
    ) -> Result<(), SearchError> {
        let mut in_flight = 0;
        loop {
            while in_flight < self.jobs && !limit.reached() {
                let Some(job) = next() else {
                    break;
                };
                if let Some(outcome) = journal.judged(&job) {
                    on_result(&job, outcome)?;
                    continue;
                }
                let ended = || SearchError::workers("the search's workers ended");
                let plans = self.plans.as_ref().ok_or_else(ended)?;
                plans.send(job).map_err(|_| ended())?;
                in_flight += 1;
                limit.runs.set(limit.runs.get() + 1);
            }
            if in_flight == 0 {
                return Ok(());
            }
            let (job, outcome) = (self.done.recv())
                .map_err(|_| SearchError::workers("the search's workers ended"))?;
            in_flight -= 1;
            // A run cut short by Ctrl-C or SIGTERM healed early: its verdict says nothing
            // of its point. Nor does its failure: the signal may have reached its server
            // or driver too (a CI runner's cancel signals every process of the job).
            if limit.stop.load(Ordering::Acquire) {
                continue;
            }
            let outcome = outcome?;
            journal.write(&job, &outcome)?;
            on_result(&job, outcome)?;
        }
    }
}

impl Drop for Pool {
    /// Lets each worker finish its run, and its servers stop.
    fn drop(&mut self) {
        self.plans = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Hands out the next job: a control run when one is due, else the next plan of `pop`
/// (a control run follows every `--control-every` plans).
pub(crate) fn with_controls(
    controls: &RefCell<Controls>,
    due: &mut Option<u64>,
    pop: impl FnOnce() -> Option<Vec<Point>>,
) -> Option<Job> {
    if let Some(i) = due.take() {
        return Some(Job {
            plan: Vec::new(),
            control: Some(i),
        });
    }
    let plan = pop()?;
    *due = controls.borrow_mut().after_point();
    Some(Job::point(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_run_follows_every_nth_plan_and_the_plans_go_on_after_it() {
        let controls = RefCell::new(Controls::new(2));
        let mut due = None;
        let mut plans = vec![Vec::new(); 5].into_iter();
        let mut handed = Vec::new();
        while let Some(job) = with_controls(&controls, &mut due, || plans.next()) {
            handed.push(job.key());
        }
        let plan = plan_key(&[]);
        assert_eq!(
            handed,
            [&plan, &plan, "control:0", &plan, &plan, "control:1", &plan]
        );
    }
}
