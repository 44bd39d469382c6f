//! Judging runs an exploring search stopped at a seen state.

use super::*;
use crate::dfs::judge_pruned;
use crate::testkit::{Hb, node};
use std::time::Duration;
use zklock_recipe::history::{EventKind, LockRole};
use zklock_sim::{ChoiceKind, Chooser, LockUnderTest, SimClient};

/// A history cut short, as an explorer leaves it: nothing after `events`, lock nodes
/// still on the server.
fn pruned(events: &Hb, children: &[String]) -> RunOutcome {
    RunOutcome {
        history: events.build(),
        choices: Vec::new(),
        final_lock_children: children.to_vec(),
        final_children_by_lock: vec![children.to_vec()],
        error: Some(SimError::Pruned),
        leases: None,
        work_queue: None,
        election: false,
        faults_injected: 0,
        steps: 0,
        end_time_us: 0,
    }
}

#[test]
fn a_pruned_runs_history_breaks_what_a_prefix_can_show_and_nothing_else() {
    let sc = Scenario::default();
    // Two holders at once: no continuation mends that.
    let mut two = Hb::new();
    two.acquire(0, 0);
    two.acquire(1, 1);
    assert!(prefix_broke_a_property(&sc, pruned(&two, &[])));

    // Every client done with a node left, and a wait open long past its deadline: a whole
    // run that ended so would fail liveness (an orphan, a stuck waiter), but a run stopped
    // here goes on (sessions expire, the wait may yet be served).
    let mut open = Hb::new();
    open.acquire(0, 0);
    open.release(0, 0);
    open.ev(0, EventKind::Done);
    open.invoke_acquire(1, LockRole::Exclusive);
    open.at_ms(sc.heal_ms + sc.liveness_bound_ms + 1000);
    open.ev(1, EventKind::Done);
    let left = [node(0, 0)];
    let whole = RunOutcome {
        error: None,
        ..pruned(&open, &left)
    };
    let judged = judge(&sc, whole);
    assert_eq!(
        judged.violated(),
        ["liveness_after_heal"],
        "{}",
        judged.report
    );
    assert!(!prefix_broke_a_property(&sc, pruned(&open, &left)));
}

/// A lock that never waits: every client holds at once.
struct Open;
struct OpenLock;

impl Recipe for Open {
    type Lock = OpenLock;
    fn name(&self) -> String {
        "open".into()
    }
    fn lock(&self, _: SimClient, _: LockRole, _: &str) -> OpenLock {
        OpenLock
    }
}

impl LockUnderTest for OpenLock {
    type Guard = ();
    async fn acquire(&self) -> Result<(), String> {
        Ok(())
    }
    async fn acquire_timeout(&self, _: Duration) -> Result<Option<()>, String> {
        Ok(Some(()))
    }
    fn token(&self, _: &()) -> i64 {
        0
    }
    fn node(&self, _: &()) -> String {
        "none".into()
    }
    async fn lost<'a>(&'a self, _: &'a ()) -> String {
        std::future::pending().await
    }
    async fn release(&self, _: ()) -> Result<(), String> {
        Ok(())
    }
}

/// Takes the first option at every choice and stops the run at its `stop_at`-th state
/// seen (never, with `None`), counting them.
#[derive(Default)]
struct StopAt {
    stop_at: Option<usize>,
    states: usize,
    made: Vec<(ChoiceKind, u32, u32)>,
}

impl Chooser for StopAt {
    fn choose(&mut self, kind: ChoiceKind, n: usize) -> usize {
        self.made.push((kind, n as u32, 0));
        0
    }
    fn wants_digests(&self) -> bool {
        true
    }
    fn at_state(&mut self, _: u128) -> bool {
        self.states += 1;
        Some(self.states) != self.stop_at
    }
}

/// `sc` with the lock that never waits, every choice its first, run to its end and then
/// again stopped at its last state, as if an explorer had seen it: (the whole run, the
/// stopped run, the stopped run's choices).
fn whole_and_stopped(sc: &Scenario) -> (RunOutcome, RunOutcome, Vec<(ChoiceKind, u32, u32)>) {
    let run = |stop_at| {
        let chooser = std::sync::Arc::new(std::sync::Mutex::new(StopAt {
            stop_at,
            ..StopAt::default()
        }));
        let out = run_scenario_with(sc, 0, Box::new(chooser.clone()), &Open);
        let c = std::mem::take(&mut *chooser.lock().unwrap());
        (out, c)
    };
    let (whole, counted) = run(None);
    assert!(
        whole.error.is_none() && counted.states > 0,
        "{:?}",
        whole.error
    );
    let (stopped, c) = run(Some(counted.states));
    assert_eq!(stopped.error, Some(SimError::Pruned));
    (whole, stopped, c.made)
}

#[test]
fn a_violation_on_a_run_stopped_at_a_seen_state_is_reported_as_its_whole_run() {
    let sc = Scenario {
        clients: 2,
        faults: zklock_sim::Faults::none(),
        ..Scenario::default()
    };
    let (whole, stopped, made) = whole_and_stopped(&sc);
    let failing = |r: &CheckedRun| r.failure().is_some();
    let run = judge_pruned(&sc, &Open, stopped, &made, &failing).expect("reported");
    assert_eq!(run.outcome.error, None, "reported as the whole run");
    assert_eq!(run.outcome.history, whole.history);
    assert!(
        run.violated().contains(&"mutual_exclusion"),
        "{}",
        run.report
    );

    // The whole run decides: a prefix's violation that `failing` does not take is not one.
    let (_, stopped, made) = whole_and_stopped(&sc);
    assert!(judge_pruned(&sc, &Open, stopped, &made, &|_| false).is_none());
}
