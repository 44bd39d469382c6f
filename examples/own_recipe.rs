//! Checking your own lock recipe with zklock, from a plain `#[test]`.
//!
//! The recipe here is the simplest ZooKeeper lock: one ephemeral node `<dir>/owner`; whoever
//! creates it holds the lock, everyone else watches it and tries again when it goes. It is
//! safe, but every release wakes every waiter: a herd. The tests show zklock proving the
//! first and catching the second in simulation, and the same lock code caught herding on
//! a real ZooKeeper (when Java and Debian's `zookeeper` are installed). It has a second
//! bug the tests leave alone: an acquire dropped while its create is in flight leaves the
//! owner node behind, and every later acquire waits on it (liveness_after_heal). A
//! simulated sweep of 1000 seeds shows it; the real run here drops no acquire, so that it
//! shows the herd alone.
//!
//! Run it with `cargo test --example own_recipe`, or as a program with
//! `cargo run --example own_recipe` to print the verdicts.

use std::time::Duration;
use zklock_checker::concurrent::judge_parallel;
use zklock_checker::{CheckConfig, check_all};
use zklock_real::faults::FaultConfig;
use zklock_real::harness::{self, ServerOptions};
use zklock_real::recording::RecordingClient;
use zklock_real::servers::Servers;
use zklock_real::workload::{RealRecipe, RunGoal, WorkloadConfig, run_recipe};
use zklock_recipe::history::LockRole;
use zklock_recipe::{Coordination, CreateMode, SessionState, ZkError};
use zklock_sim::{LockUnderTest, Recipe, Scenario, SimClient, run_scenario};

/// The recipe under test: one lock object per client, on any `Coordination` client (the
/// simulation's, or a real session's).
struct OwnerNodeLock<C> {
    client: C,
    node: String,
}

/// A hold: the fencing token is the owner node's czxid.
struct Hold {
    czxid: i64,
}

impl<C: Coordination> OwnerNodeLock<C> {
    async fn attempt(&self) -> Result<Option<Hold>, String> {
        loop {
            match self
                .client
                .create(&self.node, b"", CreateMode::Ephemeral)
                .await
            {
                Ok((_, stat)) => return Ok(Some(Hold { czxid: stat.czxid })),
                Err(ZkError::NodeExists) => return Ok(None),
                Err(ZkError::NoNode) => {
                    let dir = &self.node[..self.node.rfind('/').unwrap_or(0)];
                    let _ = self
                        .client
                        .create("/zklock", b"", CreateMode::Persistent)
                        .await;
                    let _ = self.client.create(dir, b"", CreateMode::Persistent).await;
                }
                // Did our create land before the connection broke? Ask the server.
                Err(ZkError::ConnectionLoss) => loop {
                    match self.client.exists(&self.node).await {
                        Ok(Some(s)) if s.ephemeral_owner == self.client.session_id().0 => {
                            return Ok(Some(Hold { czxid: s.czxid }));
                        }
                        Ok(_) => break,
                        Err(ZkError::ConnectionLoss) => {
                            self.client.sleep(Duration::from_millis(100)).await
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                },
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl<C: Coordination + Send + Sync + 'static> LockUnderTest for OwnerNodeLock<C> {
    type Guard = Hold;

    async fn acquire(&self) -> Result<Hold, String> {
        loop {
            if let Some(h) = self.attempt().await? {
                return Ok(h);
            }
            // Everyone waits on the same node: each release wakes them all.
            match self.client.exists_watch(&self.node).await {
                Ok((Some(_), w)) => {
                    let _ = w.await;
                }
                Ok((None, _)) => {}
                Err(ZkError::ConnectionLoss) => self.client.sleep(Duration::from_millis(100)).await,
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    async fn try_acquire(&self) -> Result<Option<Hold>, String> {
        self.attempt().await
    }

    async fn acquire_timeout(&self, _timeout: Duration) -> Result<Option<Hold>, String> {
        // Kept short: a single attempt stands in for the timed mode.
        self.attempt().await
    }

    fn token(&self, hold: &Hold) -> i64 {
        hold.czxid
    }

    fn node(&self, _hold: &Hold) -> String {
        self.node.clone()
    }

    async fn lost<'a>(&'a self, _hold: &'a Hold) -> String {
        let mut events = self.client.session_events();
        loop {
            match events.next().await {
                Some(SessionState::Disconnected) => return "disconnected".into(),
                Some(SessionState::Expired) | None => return "expired".into(),
                Some(_) => {}
            }
        }
    }

    async fn release(&self, _hold: Hold) -> Result<(), String> {
        loop {
            match self.client.delete(&self.node, None).await {
                Ok(()) | Err(ZkError::NoNode) => return Ok(()),
                Err(ZkError::ConnectionLoss) => self.client.sleep(Duration::from_millis(100)).await,
                // The session is gone, and its ephemeral node with it.
                Err(ZkError::SessionExpired | ZkError::SessionClosed) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

struct OwnerNodeRecipe;

impl Recipe for OwnerNodeRecipe {
    type Lock = OwnerNodeLock<SimClient>;
    fn name(&self) -> String {
        "owner-node".into()
    }
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> Self::Lock {
        OwnerNodeLock {
            client,
            node: format!("{path}/owner"),
        }
    }
}

/// The same recipe on a real server.
impl RealRecipe for OwnerNodeRecipe {
    type Lock = OwnerNodeLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, _role: LockRole, path: &str) -> Self::Lock {
        OwnerNodeLock {
            client,
            node: format!("{path}/owner"),
        }
    }
}

/// Runs `seeds` seeds and returns the names of the properties that failed on any.
fn sweep(seeds: u64) -> Vec<&'static str> {
    let sc = Scenario {
        clients: 4,
        acquisitions_per_client: 6,
        ..Scenario::default()
    };
    let mut failed = Vec::new();
    for seed in 0..seeds {
        let out = run_scenario(&sc, seed, &OwnerNodeRecipe);
        let cfg = CheckConfig::from_scenario(&sc)
            .with_final_children(out.final_lock_children.clone())
            .with_run_end_us(out.end_time_us);
        for v in check_all(&out.history, &cfg).violated() {
            if !failed.contains(&v) {
                failed.push(v);
            }
        }
    }
    failed.sort_unstable();
    failed
}

/// Runs the recipe for 3 s on a ZooKeeper server started for it (no faults, no dropped
/// acquires), and on until the checker has seen a herd (at most two minutes: a lock that
/// never herds ends there), and returns the names of the properties that failed; `None`
/// without Java and ZooKeeper (under `CI=true`, where they must be installed, a panic).
fn on_a_real_server() -> Option<Vec<&'static str>> {
    if !harness::available_for_tests() {
        return None;
    }
    let servers = Servers::start(1, ServerOptions::default()).expect("the server starts");
    let config = WorkloadConfig {
        clients: 4,
        duration_ms: 3_000,
        drop_every: 0,
        until: Some(RunGoal::new(|history, facts| {
            let cfg = CheckConfig::from(facts.clone());
            judge_parallel(history, &cfg)
                .report
                .violated()
                .contains(&"no_herd")
        })),
        goal_deadline_ms: 120_000,
        ..WorkloadConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let run = runtime
        .block_on(run_recipe(
            servers,
            &config,
            &FaultConfig::default(),
            OwnerNodeRecipe,
        ))
        .expect("the run completes");
    let cfg = CheckConfig::from(run.facts());
    let mut failed = judge_parallel(&run.history, &cfg).report.violated();
    failed.sort_unstable();
    Some(failed)
}

fn main() {
    println!("properties violated over 30 seeds: {:?}", sweep(30));
    if let Some(failed) = on_a_real_server() {
        println!("properties violated on a real server: {failed:?}");
    }
}

#[test]
fn owner_node_lock_is_safe_but_herds() {
    let failed = sweep(30);
    assert!(!failed.contains(&"mutual_exclusion"), "{failed:?}");
    assert!(!failed.contains(&"fenced_resource"), "{failed:?}");
    assert!(
        failed.contains(&"no_herd"),
        "the herd must be caught: {failed:?}"
    );
}

#[test]
fn the_same_lock_herds_on_a_real_server() {
    let Some(failed) = on_a_real_server() else {
        return;
    };
    assert!(!failed.contains(&"mutual_exclusion"), "{failed:?}");
    assert!(
        failed.contains(&"no_herd"),
        "the herd must be caught on a real server too: {failed:?}"
    );
}
