//! The election recipes on the simulated ZooKeeper: the latch's leadership, listeners and
//! close, the selector's terms and cancel, and the election workload run to its end.

use futures_util::future::{BoxFuture, join};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_recipe::election::{
    ElectionError, LeaderLatch, LeaderSelector, LeadershipChange, SelectorListener, Term,
};
use zklock_recipe::history::EventKind;
use zklock_sim::{ElectionRecipe, Faults, Scenario, SimConfig, run, run_scenario};

const PATH: &str = "/app/election";

#[test]
fn a_latch_tells_its_listeners_and_a_close_ends_a_wait_without_leadership() {
    let (heard, left_waiting, left) = run(SimConfig::with_seed(1), |sim| async move {
        let a = LeaderLatch::new(sim.client(), PATH)?;
        let b = LeaderLatch::new(sim.client(), PATH)?;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        a.add_listener(move |change| h.lock().unwrap().push(change.clone()));
        let term = a.await_leadership().await?;
        assert!(a.has_leadership());
        assert!(!b.has_leadership());
        // b waits behind a until it closes; the close ends its wait, without leadership.
        let closer = sim.client();
        let (waited, closed) = join(b.await_leadership(), async {
            closer.sleep(Duration::from_millis(50)).await;
            b.close().await
        })
        .await;
        assert_eq!(waited, Err(ElectionError::Closed));
        closed?;
        let left_waiting = sim.server_children(PATH);
        a.close().await?;
        assert!(!a.has_leadership());
        assert_eq!(a.await_leadership().await, Err(ElectionError::Closed));
        let heard = heard.lock().unwrap().clone();
        assert_eq!(heard[0], LeadershipChange::IsLeader(term));
        Ok::<_, ElectionError>((heard, left_waiting, sim.server_children(PATH)))
    })
    .unwrap()
    .unwrap();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(matches!(heard[1], LeadershipChange::NotLeader { .. }));
    assert_eq!(
        left_waiting.len(),
        1,
        "only the leader's node: {left_waiting:?}"
    );
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_latch_is_elected_when_its_path_was_deleted_before_it_joined() {
    let epochs = run(SimConfig::with_seed(2), |sim| async move {
        let first = LeaderLatch::new(sim.client(), PATH)?;
        let t1 = first.await_leadership().await?;
        first.close().await?;
        // The path reaped, as ZooKeeper reaps an empty container.
        let admin = sim.client();
        admin
            .delete(PATH, None)
            .await
            .expect("the empty path is deleted");
        let second = LeaderLatch::new(sim.client(), PATH)?;
        let t2 = second.await_leadership().await?;
        second.close().await?;
        Ok::<_, ElectionError>((t1.epoch, t2.epoch))
    })
    .unwrap()
    .unwrap();
    // The sequence counter starts over with the path; the epoch (a czxid) does not.
    assert!(epochs.1 > epochs.0, "{epochs:?}");
}

/// A listener that records each term's epoch and cancels its selector after `terms`.
struct Terms {
    selector: Arc<LeaderSelector<zklock_sim::SimClient>>,
    terms: u32,
    epochs: Mutex<Vec<i64>>,
    interrupted: AtomicU32,
}

impl SelectorListener for Terms {
    fn lead<'a>(&'a self, term: &'a Term) -> BoxFuture<'a, ()> {
        let mut epochs = self.epochs.lock().unwrap();
        epochs.push(term.epoch);
        if epochs.len() as u32 >= self.terms {
            self.selector.cancel();
        }
        Box::pin(async {})
    }
    fn interrupted(&self, _reason: &str) {
        self.interrupted.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_selector_queues_again_after_each_term_until_cancelled() {
    let (epochs, interrupted, left) = run(SimConfig::with_seed(3), |sim| async move {
        let selector = Arc::new(LeaderSelector::new(sim.client(), PATH)?);
        let listener = Terms {
            selector: selector.clone(),
            terms: 3,
            epochs: Mutex::new(Vec::new()),
            interrupted: AtomicU32::new(0),
        };
        selector.run(&listener).await?;
        let epochs = listener.epochs.lock().unwrap().clone();
        let interrupted = listener.interrupted.load(Ordering::Relaxed);
        Ok::<_, ElectionError>((epochs, interrupted, sim.server_children(PATH)))
    })
    .unwrap()
    .unwrap();
    assert_eq!(epochs.len(), 3, "{epochs:?}");
    assert!(epochs.windows(2).all(|w| w[0] < w[1]), "{epochs:?}");
    // The third task ends as it cancels (it has nothing to await): not interrupted, and
    // no fourth term.
    assert_eq!(interrupted, 0);
    assert!(left.is_empty(), "{left:?}");
}

/// A listener whose task never ends by itself.
struct Forever {
    started: AtomicU32,
    interrupted: Mutex<Vec<String>>,
}

impl SelectorListener for Forever {
    fn lead<'a>(&'a self, _term: &'a Term) -> BoxFuture<'a, ()> {
        self.started.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::pending())
    }
    fn interrupted(&self, reason: &str) {
        self.interrupted.lock().unwrap().push(reason.to_owned());
    }
}

#[test]
fn a_cancel_in_the_middle_of_the_task_stops_it_and_no_task_runs_after() {
    let (started, interrupted, left) = run(SimConfig::with_seed(4), |sim| async move {
        let selector = LeaderSelector::new(sim.client(), PATH)?;
        let listener = Forever {
            started: AtomicU32::new(0),
            interrupted: Mutex::new(Vec::new()),
        };
        let timer = sim.client();
        let (ran, ()) = join(selector.run(&listener), async {
            timer.sleep(Duration::from_millis(100)).await;
            selector.cancel();
        })
        .await;
        ran?;
        let interrupted = listener.interrupted.lock().unwrap().clone();
        let started = listener.started.load(Ordering::Relaxed);
        Ok::<_, ElectionError>((started, interrupted, sim.server_children(PATH)))
    })
    .unwrap()
    .unwrap();
    assert_eq!(started, 1);
    assert_eq!(interrupted, [ElectionError::Closed.to_string()]);
    assert!(left.is_empty(), "{left:?}");
}

fn count(run: &zklock_sim::RunOutcome, f: impl Fn(&EventKind) -> bool) -> usize {
    run.history.events.iter().filter(|e| f(&e.kind)).count()
}

#[test]
fn without_faults_the_election_workload_elects_and_leaves_nothing_behind() {
    for recipe in [ElectionRecipe::default(), ElectionRecipe::selector()] {
        let scenario = Scenario {
            faults: Faults::none(),
            ..ElectionRecipe::default_scenario()
        };
        let run = run_scenario(&scenario, 5, &recipe);
        assert!(run.error.is_none(), "{:?}", run.error);
        assert!(run.election);
        let terms = count(&run, |k| matches!(k, EventKind::Acquired { .. }));
        let closes = count(&run, |k| matches!(k, EventKind::Closed));
        let lost = count(&run, |k| matches!(k, EventKind::Lost { .. }));
        if recipe.selector {
            // Every 4th term of each contender is cancelled mid-task, which ends its
            // selector: 5 of 20 each, but a cancel may come after the task is done.
            assert_eq!(terms, 100, "{recipe:?}");
            assert!(
                closes >= 5 * 5 && lost <= 25,
                "{closes} closes, {lost} lost"
            );
        } else {
            // Every 4th attempt closes while it waits (unless elected first).
            assert!((75..=100).contains(&terms), "{terms} terms");
            assert_eq!(closes, 100, "{recipe:?}");
            assert_eq!(lost, 0);
        }
        assert_eq!(run.final_lock_children, Vec::<String>::new());
    }
}

/// On Disconnected a leader's `lost` resolves and it no longer leads; its next
/// `await_leadership` deletes the old node and contends with a new one (a later epoch),
/// never re-asserting leadership on the old node. On Expired, `lost` resolves and the
/// latch's next call fails with the session's end.
#[test]
fn a_leader_stops_leading_at_a_disconnect_and_contends_again_with_a_new_node() {
    let (old, new, after_expiry, left) = run(SimConfig::with_seed(6), |sim| async move {
        let c = sim.client();
        let latch = LeaderLatch::new(c.clone(), PATH)?;
        let old = latch.await_leadership().await?;
        sim.disconnect(&c);
        let reason = latch.lost().await;
        assert_eq!(reason, Some(zklock_recipe::LostReason::Disconnected));
        assert!(!latch.has_leadership());
        let new = latch.await_leadership().await?;
        assert!(latch.has_leadership());
        sim.expire(&c);
        assert!(latch.lost().await.is_some());
        let after_expiry = latch.await_leadership().await;
        Ok::<_, ElectionError>((old, new, after_expiry, sim.server_children(PATH)))
    })
    .unwrap()
    .unwrap();
    assert_ne!(old.node, new.node);
    assert!(new.epoch > old.epoch);
    assert!(
        matches!(after_expiry, Err(ElectionError::Lock(_))),
        "{after_expiry:?}"
    );
    assert!(left.is_empty(), "{left:?}");
}
