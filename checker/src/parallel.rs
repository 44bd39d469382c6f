//! The exhaustive search on several threads ([`Bounds::threads`]).
//!
//! **Jobs.** The tree of schedules is cut into jobs: a job is the subtree below a root
//! prefix, searched depth first as the one-thread search does. When a worker is idle and
//! nothing is queued, a busy worker splits its job: it hands over the untried
//! alternatives at the shallowest position of its subtree, which its own search then
//! leaves alone. Every schedule is in exactly one job.
//!
//! **One set of seen states.** The workers share the seen states: whichever run reaches a
//! state first explores every continuation from it (through its job's backtracking), and
//! any later run reaching it, in any job, stops there. That is the one-thread search's
//! argument (see [`crate::exhaustive`]) with "first" meaning first in time rather than in
//! search order, so a complete search reaches every state the one-thread search reaches:
//! the same distinct states, the same final states, and a violation of a property judged
//! on states wherever the one-thread search finds one. Which runs reach a state first
//! depends on the threads' timing, so the counts of schedules and pruned runs vary, as
//! does which violating run a worker meets first.
//!
//! **One report.** The workers stop at the first violation any of them finds; the check
//! then reports the one-thread search's first violation, found by that search run again
//! within what is left of the time limit
//! ([`crate::exhaustive::check_exhaustive_controlled`]), so that the violation reported,
//! its counts and its trace do not depend on timing (a resumed search's too: that search
//! runs from the start, as where a checkpoint's work was split depends on timing). Only
//! when that search reaches no violation in time, or none at all (a property of whole
//! paths, judged on the runs that reach their end, which the threads' timing chooses), is
//! the threads' own violation reported: a real schedule that violates, but not the
//! one-thread search's.
//!
//! **Stopping and resuming.** A bound or an interrupt stops the workers between two
//! runs: each puts its job back with its next prefix, so that the queue then holds every
//! unfinished piece of work, and a checkpoint ([`crate::checkpoint`]) keeps it, with the
//! seen states and the counters. A search resumed from it starts with those jobs and that
//! seen set. The argument above carries over the stop: a seen state was reached first by
//! a run of some job, and every continuation of it is either explored already or in the
//! work of that job or of a job split from it, all of which the checkpoint holds; so the
//! resumed search explores every continuation of every seen state, and a complete
//! resumed search, on any number of threads (one runs the jobs one after another),
//! reaches the same states as the search run in one go. The jobs' caps are kept with
//! them, so that no schedule is in two jobs; the folds a job carries from run to run are
//! not (its first run after resuming folds its prefix again, with the same digests).
//!
//! A search that reduces by partial order runs on one thread: its sleep sets follow one
//! run after another.

use crate::bounds::Bounds;
use crate::checkpoint::Subtree;
use crate::dfs::{DfsChooser, PROGRESS_EVERY_SCHEDULES, judge_pruned};
use crate::exercised::Exercised;
use crate::explore::Interrupt;
use crate::run::{CheckedRun, judge};
use crate::seen::SeenStates;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;
use zklock_sim::{
    ChoiceKind, GuidedChooser, Recipe, SavedFolds, Scenario, SimError, run_scenario_with,
};

/// A subtree of schedules: those whose first `root_len` choices are the root's.
#[derive(Debug)]
struct Job {
    root_len: usize,
    /// The next prefix to run.
    next: Option<Vec<u32>>,
    /// (position, alternatives kept): the alternatives past them were handed over.
    caps: Vec<(usize, u32)>,
    /// The folds the job's runs had at their choices, for the next run's replay.
    folds: SavedFolds,
}

impl Job {
    fn from_subtree(w: Subtree) -> Job {
        Job {
            root_len: w.root_len as usize,
            next: Some(w.next_prefix),
            caps: w.caps.iter().map(|&(at, c)| (at as usize, c)).collect(),
            folds: SavedFolds::default(),
        }
    }

    /// The work left of a job stopped between two runs.
    fn into_subtree(self) -> Option<Subtree> {
        Some(Subtree {
            root_len: self.root_len as u32,
            next_prefix: self.next?,
            // A job splits at increasing positions: its caps are in order.
            caps: self.caps.iter().map(|&(at, c)| (at as u32, c)).collect(),
        })
    }

    fn cap(&self, i: usize, n: u32) -> u32 {
        self.caps
            .iter()
            .filter(|(at, _)| *at == i)
            .fold(n, |n, (_, c)| n.min(*c))
    }

    /// The shallowest or the deepest position of the subtree with an untried
    /// alternative.
    fn untried(&self, made: &[(ChoiceKind, u32, u32)], deepest: bool) -> Option<usize> {
        let open = |&i: &usize| made[i].2 + 1 < self.cap(i, made[i].1);
        let mut range = self.root_len..made.len();
        if deepest {
            range.rev().find(open)
        } else {
            range.find(open)
        }
    }
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Workers running a job.
    active: usize,
    /// A bound or an interrupt stopped the search.
    cut: bool,
    violation: Option<CheckedRun>,
}

/// What the search found, for the report (the counts of this search only).
pub(crate) struct Found {
    pub(crate) schedules: u64,
    pub(crate) pruned: u64,
    pub(crate) distinct_states: u64,
    pub(crate) max_depth: usize,
    pub(crate) complete: bool,
    pub(crate) violation: Option<CheckedRun>,
    pub(crate) interrupted: bool,
    pub(crate) final_states: Option<BTreeSet<u128>>,
    /// When a bound or an interrupt stopped the search: every job left, each where its
    /// worker stopped.
    pub(crate) left: Vec<Subtree>,
    /// Every state digest seen, sorted, when the work left is kept.
    pub(crate) seen: Vec<u128>,
    /// What the schedules run exercised.
    pub(crate) exercised: Exercised,
}

/// One search's inputs.
pub(crate) struct Search<'a, R: Recipe> {
    pub(crate) scenario: &'a Scenario,
    pub(crate) recipe: &'a R,
    pub(crate) bounds: &'a Bounds,
    pub(crate) symmetry: bool,
    pub(crate) failing: &'a (dyn Fn(&CheckedRun) -> bool + Sync),
    pub(crate) progress: &'a (dyn Fn(u64, u64) + Sync),
    pub(crate) interrupt: &'a Interrupt,
    pub(crate) deadline: Instant,
    pub(crate) final_states: bool,
    /// Take over the folds of a replayed prefix (see `Control::fold_replayed_prefix`).
    pub(crate) reuse_folds: bool,
    /// The work to do: the whole tree, or the work a checkpoint left.
    pub(crate) start: Vec<Subtree>,
    /// The states seen before (a checkpoint's), then by this search.
    pub(crate) seen: Arc<SeenStates>,
    /// Schedules run before (a checkpoint's), for the progress display.
    pub(crate) schedules_before: u64,
    /// Keep the work left and the seen states when a bound or an interrupt stops it.
    pub(crate) keep_left: bool,
    /// The shard searched, if the check is split ([`crate::shard`]).
    pub(crate) shard: Option<crate::shard::Shard>,
}

struct Shared {
    seen: Arc<SeenStates>,
    finals: Option<Arc<Mutex<BTreeSet<u128>>>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Workers waiting for a job.
    idle: AtomicUsize,
    stop: AtomicBool,
    schedules: AtomicU64,
    pruned: AtomicU64,
    max_depth: AtomicUsize,
    interrupted: AtomicBool,
    /// Each worker's counts, merged as it ends.
    exercised: Mutex<Exercised>,
}

impl<R: Recipe> Search<'_, R> {
    /// Searches on `workers` threads until every schedule is explored, a violation is
    /// found, or a bound or an interrupt stops the search.
    pub(crate) fn run(&self, workers: usize) -> Found {
        let shared = Shared {
            seen: self.seen.clone(),
            finals: self
                .final_states
                .then(|| Arc::new(Mutex::new(BTreeSet::new()))),
            queue: Mutex::new(Queue {
                // Reversed, as workers take the last: the first subtree goes first.
                jobs: self
                    .start
                    .iter()
                    .rev()
                    .cloned()
                    .map(Job::from_subtree)
                    .collect(),
                ..Queue::default()
            }),
            wake: Condvar::new(),
            idle: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            schedules: AtomicU64::new(0),
            pruned: AtomicU64::new(0),
            max_depth: AtomicUsize::new(0),
            interrupted: AtomicBool::new(false),
            exercised: Mutex::new(Exercised::default()),
        };
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| self.work(&shared));
            }
        });
        let q = shared.queue.into_inner().expect("queue lock");
        let keep = self.keep_left && q.cut && q.violation.is_none();
        Found {
            // In the order they would be taken.
            left: if keep {
                q.jobs
                    .into_iter()
                    .rev()
                    .filter_map(Job::into_subtree)
                    .collect()
            } else {
                Vec::new()
            },
            seen: if keep {
                shared.seen.sorted()
            } else {
                Vec::new()
            },
            schedules: shared.schedules.into_inner(),
            pruned: shared.pruned.into_inner(),
            distinct_states: shared.seen.len(),
            max_depth: shared.max_depth.into_inner(),
            complete: !q.cut && q.violation.is_none(),
            violation: q.violation,
            interrupted: shared.interrupted.into_inner(),
            final_states: shared
                .finals
                .map(|f| std::mem::take(&mut *f.lock().expect("finals lock"))),
            exercised: shared.exercised.into_inner().expect("exercised lock"),
        }
    }

    fn work(&self, sh: &Shared) {
        // Counted locally, merged once: no lock taken per schedule.
        let mut exercised = Exercised::default();
        while let Some(mut job) = self.take(sh) {
            let found = self.run_job(sh, &mut job, &mut exercised);
            let mut q = sh.queue.lock().expect("queue lock");
            q.active -= 1;
            match found {
                Some(run) => {
                    q.violation.get_or_insert(run);
                    sh.stop.store(true, Ordering::SeqCst);
                }
                None if job.next.is_some() => q.jobs.push(job),
                None => {}
            }
            sh.wake.notify_all();
        }
        sh.exercised
            .lock()
            .expect("exercised lock")
            .merge(&exercised);
    }

    /// A job to run, waiting while others run and none is queued; `None` once the
    /// search is over.
    fn take(&self, sh: &Shared) -> Option<Job> {
        let mut q = sh.queue.lock().expect("queue lock");
        loop {
            if sh.stop.load(Ordering::SeqCst) {
                return None;
            }
            if let Some(job) = q.jobs.pop() {
                q.active += 1;
                return Some(job);
            }
            if q.active == 0 {
                // Nothing queued, nothing running: every schedule is explored.
                sh.stop.store(true, Ordering::SeqCst);
                sh.wake.notify_all();
                return None;
            }
            sh.idle.fetch_add(1, Ordering::SeqCst);
            q = sh.wake.wait(q).expect("queue lock");
            sh.idle.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Runs `job`'s schedules in order until it is done, one fails, or the search
    /// stops (the job then keeps its next prefix).
    fn run_job(&self, sh: &Shared, job: &mut Job, exercised: &mut Exercised) -> Option<CheckedRun> {
        while let Some(prefix) = job.next.take() {
            if sh.stop.load(Ordering::SeqCst) {
                job.next = Some(prefix);
                return None;
            }
            let interrupted = self.interrupt.is_set();
            // Counted before it runs, so that no more than the bound run.
            let n = sh.schedules.fetch_add(1, Ordering::Relaxed) + 1;
            if interrupted || n > self.bounds.schedules_max || Instant::now() >= self.deadline {
                sh.schedules.fetch_sub(1, Ordering::Relaxed);
                job.next = Some(prefix);
                sh.interrupted.fetch_or(interrupted, Ordering::SeqCst);
                // Set under the queue's lock, so that no waiting worker misses it.
                let mut q = sh.queue.lock().expect("queue lock");
                sh.stop.store(true, Ordering::SeqCst);
                q.cut = true;
                sh.wake.notify_all();
                return None;
            }
            let chooser = Arc::new(Mutex::new(
                DfsChooser::new(
                    prefix,
                    sh.seen.clone(),
                    self.bounds.prune,
                    self.symmetry,
                    sh.finals.clone(),
                    std::mem::take(&mut job.folds),
                    self.reuse_folds,
                )
                .keeping_only(self.bounds.reduces_by_keep_only())
                .in_shard(self.shard),
            ));
            let out = run_scenario_with(self.scenario, 0, Box::new(chooser.clone()), self.recipe);
            let made = {
                let mut c = chooser.lock().expect("chooser lock");
                job.folds = std::mem::take(&mut c.folds);
                std::mem::take(&mut c.guided.made)
            };
            let total = self.schedules_before + n;
            if total.is_multiple_of(PROGRESS_EVERY_SCHEDULES) {
                (self.progress)(total, sh.seen.len());
            }
            sh.max_depth.fetch_max(made.len(), Ordering::Relaxed);
            exercised.merge(&Exercised::of(&out.history));
            if out.error == Some(SimError::Pruned) {
                sh.pruned.fetch_add(1, Ordering::Relaxed);
                let run = judge_pruned(self.scenario, self.recipe, out, &made, self.failing);
                if run.is_some() {
                    return run;
                }
            } else {
                let run = judge(self.scenario, out);
                if (self.failing)(&run) {
                    return Some(run);
                }
            }
            if sh.idle.load(Ordering::SeqCst) > 0 {
                self.split(sh, job, &made);
            }
            job.next = job
                .untried(&made, true)
                .map(|i| GuidedChooser::prefix_to(&made, i));
        }
        None
    }

    /// Hands the untried alternatives at the shallowest open position of `job` to a new
    /// job, when nothing is queued for an idle worker: the largest piece of work it has.
    fn split(&self, sh: &Shared, job: &mut Job, made: &[(ChoiceKind, u32, u32)]) {
        let mut q = sh.queue.lock().expect("queue lock");
        if !q.jobs.is_empty() {
            return;
        }
        let Some(i) = job.untried(made, false) else {
            return;
        };
        job.caps.push((i, made[i].2 + 1));
        q.jobs.push(Job {
            root_len: i,
            next: Some(GuidedChooser::prefix_to(made, i)),
            caps: Vec::new(),
            // Its first run replays the choices before `i`, as this job's runs did.
            folds: job.folds.clone(),
        });
        sh.wake.notify_all();
    }
}
