//! The scenario runner.

use super::limits::SCENARIO_STEPS_MAX;
use super::world_run::{RunOutcome, hold_length, outcome, prepare_world, settle};
use super::{LockUnderTest, Recipe, Scenario, ScenarioError};
use crate::chooser::{ChoiceKind, Chooser, RandomChooser};
use crate::world::ResourceOp;
use crate::{Sim, SimClient, SimConfig, SimError};
use futures_channel::{mpsc, oneshot};
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use std::pin::pin;
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_recipe::history::{AcquireMode, EventKind, History, LockRole};

/// Runs `scenario` with the random Chooser seeded by `seed`.
pub fn run_scenario<R: Recipe>(scenario: &Scenario, seed: u64, recipe: &R) -> RunOutcome {
    run_scenario_with(scenario, seed, Box::new(RandomChooser::new(seed)), recipe)
}

/// Runs `scenario` drawing every decision from `chooser` (replay, or an explorer's).
/// `seed` only names the run: every decision comes from `chooser`. The run needs no
/// runtime (see [`Sim::run`]), so none is built.
pub fn run_scenario_with<R: Recipe>(
    scenario: &Scenario,
    seed: u64,
    chooser: Box<dyn Chooser>,
    recipe: &R,
) -> RunOutcome {
    // Out of bounds, a scenario could overflow, panic in a recipe's constructor, or run
    // for hours: nothing runs, and the outcome says why.
    if let Err(e) = scenario.validate() {
        return not_run(recipe, SimError::InvalidScenario(e));
    }
    let cfg = SimConfig {
        seed,
        session_timeout_ms: scenario.session_timeout_ms,
        time_limit_ms: scenario.time_limit_ms,
        steps_max: SCENARIO_STEPS_MAX,
        request_time_us: scenario.request_time_us,
        ..SimConfig::default()
    };
    let sim = Sim::with_chooser(cfg, chooser);
    let family = match (recipe.work_queue().is_some(), recipe.election().is_some()) {
        (true, _) => Some("a work queue"),
        (_, true) => Some("an election"),
        _ => None,
    };
    if let (Some(family), true) = (family, scenario.revokers > 0) {
        let why = format!("revokers ask a lock's holders to give up; {family} has none");
        return refused(scenario, recipe, &why);
    }
    if let Some(queue) = recipe.work_queue() {
        return super::work_queue::run(sim, scenario, queue);
    }
    if let Some(election) = recipe.election() {
        return super::election::run(sim, scenario, election);
    }
    if scenario.revokers > 0 && recipe.leases().is_some() {
        let why = "revokers ask a lock's holders to give up; a semaphore's leases cannot be";
        return refused(scenario, recipe, why);
    }
    let lock_paths = scenario.lock_paths();
    let holders = scenario.clients - scenario.revokers;
    // Readers, writers (or exclusive holders) and revokers: interchangeable within a role.
    let roles: Vec<u32> = (0..scenario.clients)
        .map(|i| match i {
            _ if i >= holders => 2,
            _ => u32::from(recipe.leases().is_none() && i < scenario.readers),
        })
        .collect();
    prepare_world(&sim, scenario, &lock_paths, &roles);
    let clients: Vec<SimClient> = (0..scenario.clients).map(|_| sim.client()).collect();
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // A semaphore's holders share the resource, as readers do.
            let role = if recipe.leases().is_some() || (i as u32) < scenario.readers {
                LockRole::Read
            } else if scenario.readers > 0 {
                LockRole::Write
            } else {
                LockRole::Exclusive
            };
            let locks = locks_of(recipe, c, role, &lock_paths);
            (c.clone(), role, locks)
        })
        .collect();
    // Workers ask the main actor for the lock of a new session: only it may borrow
    // `recipe`, since the run ends within this call but a spawned actor must be 'static.
    let (renew_tx, mut renew_rx) = mpsc::unbounded::<NewLock<R::Lock>>();
    let main = {
        let sim = sim.clone();
        let scenario = scenario.clone();
        let lock_paths = lock_paths.clone();
        async move {
            let mut tasks = Vec::new();
            for (i, (c, role, locks)) in workers.into_iter().enumerate() {
                let renew = renew_tx.clone();
                let (sim2, c2, sc) = (sim.clone(), c.clone(), scenario.clone());
                let revokes = i as u32 >= holders;
                let (finisher, client) = (sim.clone(), c.clone());
                // Once the worker returns, nothing reads what this client is given.
                let t = sim.spawn(async move {
                    if revokes {
                        revoker(sim2, c2, role, locks, sc, renew).await;
                    } else {
                        worker(sim2, c2, role, locks, sc, renew).await;
                    }
                    finisher.finish(&client);
                });
                tasks.push((t, c));
            }
            drop(renew_tx);
            let all_done = async {
                for (t, c) in tasks {
                    // A crashed client never finishes: stop waiting for it when it crashes.
                    let crashed = sim.until_crashed(&c);
                    match select(t, pin!(crashed)).await {
                        Either::Left(_) => {}
                        Either::Right((_, t)) => t.abort(),
                    }
                }
            };
            let serve = async {
                while let Some(NewLock {
                    client,
                    role,
                    reply,
                }) = renew_rx.next().await
                {
                    let _ = reply.send(locks_of(recipe, &client, role, &lock_paths));
                }
            };
            select(pin!(all_done), pin!(serve)).await;
            settle(&sim, &scenario).await;
        }
    };
    let error = crate::sim::complete(sim.run(main)).err();
    outcome(&sim, &lock_paths, error, recipe.leases(), None)
}

/// The outcome of a run that never started, and why.
fn not_run<R: Recipe>(recipe: &R, error: SimError) -> RunOutcome {
    RunOutcome {
        history: History::default(),
        choices: Vec::new(),
        final_lock_children: Vec::new(),
        final_children_by_lock: Vec::new(),
        error: Some(error),
        leases: recipe.leases(),
        work_queue: recipe.work_queue().map(|q| q.paths),
        election: recipe.election().is_some(),
        faults_injected: 0,
        steps: 0,
        end_time_us: 0,
    }
}

/// A scenario this recipe's workload cannot run: nothing runs.
fn refused<R: Recipe>(scenario: &Scenario, recipe: &R, why: &str) -> RunOutcome {
    let error = ScenarioError::Unsupported {
        field: "revokers",
        value: u64::from(scenario.revokers),
        why: why.to_owned(),
    };
    not_run(recipe, SimError::InvalidScenario(error))
}

/// Client `c`'s lock object of each lock directory, in lock order.
fn locks_of<R: Recipe>(
    recipe: &R,
    c: &SimClient,
    role: LockRole,
    paths: &[String],
) -> Vec<R::Lock> {
    paths
        .iter()
        .map(|p| recipe.lock(c.clone(), role, p))
        .collect()
}

/// A new session for `c` and its locks, once the client can reach the server again;
/// `None` if the main actor is gone (the run is ending).
async fn new_session<L>(
    sim: &Sim,
    c: &SimClient,
    role: LockRole,
    renew: &mpsc::UnboundedSender<NewLock<L>>,
) -> Option<(SimClient, Vec<L>)> {
    let client = loop {
        // As a real client library waits before it connects again.
        c.sleep(sim.reconnect_delay()).await;
        if let Some(fresh) = sim.renew_session(c).await {
            break fresh;
        }
    };
    let (reply, lock) = oneshot::channel();
    let ask = NewLock {
        client: client.clone(),
        role,
        reply,
    };
    renew.unbounded_send(ask).ok()?;
    Some((client, lock.await.ok()?))
}

/// A worker's request to the main actor: the locks for `client`'s new session.
struct NewLock<L> {
    client: SimClient,
    role: LockRole,
    reply: oneshot::Sender<Vec<L>>,
}

/// One client's loop; `renew` asks the main actor for a new session's lock.
async fn worker<L: LockUnderTest>(
    sim: Sim,
    mut c: SimClient,
    role: LockRole,
    mut locks: Vec<L>,
    sc: Scenario,
    renew: mpsc::UnboundedSender<NewLock<L>>,
) {
    let lock_paths = sc.lock_paths();
    for k in 0..sc.acquisitions_per_client {
        if stops_before(&sim, &c, &sc, k).await {
            break;
        }
        if c.session_state().is_terminal() {
            // The session is gone for good: open a new one, with a new lock, as a real
            // process would (and as `zklock real` does).
            let Some((fresh, fresh_locks)) = new_session(&sim, &c, role, &renew).await else {
                break;
            };
            (c, locks) = (fresh, fresh_locks);
        }
        // Which lock this acquisition takes: a choice only when there are several, so a
        // run of one lock draws what it always drew.
        let which = if locks.len() > 1 {
            sim.choose(&c, ChoiceKind::Lock, locks.len()).await
        } else {
            0
        };
        let lock = &locks[which];
        let lock_path = (sc.locks > 1).then(|| lock_paths[which].clone());
        let mut mode = attempt_mode(&sim, &c, &sc, k).await;
        if let AcquireMode::Dropped { after_ms } = &mut mode {
            // Drawn only for a dropped attempt, so the others make no choice.
            let n = sc.drop_after_ms_max.saturating_add(1).min(1 << 16) as usize;
            *after_ms = sim.choose(&c, ChoiceKind::Delay, n).await as u64;
        }
        sim.record(
            &c,
            EventKind::AcquireInvoked {
                role,
                mode,
                lock: lock_path,
            },
        );
        let got = match mode {
            AcquireMode::Blocking => lock.acquire().await.map(Some),
            AcquireMode::Try => lock.try_acquire().await,
            AcquireMode::Timeout { timeout_ms } => {
                lock.acquire_timeout(Duration::from_millis(timeout_ms))
                    .await
            }
            AcquireMode::Dropped { after_ms } => {
                let acquire = pin!(lock.acquire());
                let after = pin!(c.sleep(Duration::from_millis(after_ms)));
                match select(acquire, after).await {
                    Either::Left((got, _)) => got.map(Some),
                    // The acquire's future is dropped here, wherever it was.
                    Either::Right(_) => Ok(None),
                }
            }
        };
        let guard = match got {
            Ok(Some(g)) => g,
            Ok(None) => {
                let reason = match mode {
                    AcquireMode::Try => "held by another",
                    AcquireMode::Dropped { .. } => "dropped",
                    _ => "timed out",
                };
                sim.record(
                    &c,
                    EventKind::AcquireFailed {
                        reason: reason.into(),
                    },
                );
                continue;
            }
            Err(e) => {
                sim.record(&c, EventKind::AcquireFailed { reason: e });
                c.sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let token = lock.token(&guard);
        sim.record(
            &c,
            EventKind::Acquired {
                token,
                node: lock.node(&guard),
            },
        );
        // The critical section: read, work, write value + 1 with the fencing token,
        // unless the lost signal fires first.
        let resource = which as u32;
        let read = sim
            .resource(
                &c,
                ResourceOp::Read {
                    token,
                    lock: resource,
                },
            )
            .await;
        let hold = hold_length(&sim, &c, &sc).await;
        let ended = {
            let work = pin!(c.sleep(hold));
            if sc.revokers > 0 {
                // A revocable hold: given up when asked, unless lost first.
                let asked = pin!(lock.revocation(&guard));
                match select(work, asked).await {
                    Either::Left(_) => HoldEnd::Worked,
                    Either::Right((Ok(()), _)) => HoldEnd::Revoked,
                    Either::Right((Err(reason), _)) => HoldEnd::Lost(reason),
                }
            } else {
                let lost = pin!(lock.lost(&guard));
                match select(work, lost).await {
                    Either::Left(_) => HoldEnd::Worked,
                    Either::Right((reason, _)) => HoldEnd::Lost(reason),
                }
            }
        };
        match ended {
            // Readers only read: their holds are shared.
            HoldEnd::Worked if role == LockRole::Read => {}
            HoldEnd::Worked => {
                let op = ResourceOp::Write {
                    token,
                    read_fenced: read.fenced,
                    read_unfenced: read.unfenced,
                    lock: resource,
                };
                sim.resource(&c, op).await;
            }
            // Asked to give up, it gives up before its write.
            HoldEnd::Revoked => sim.record(&c, EventKind::RevokeObserved),
            HoldEnd::Lost(reason) => sim.record(&c, EventKind::Lost { reason }),
        }
        sim.record(&c, EventKind::ReleaseInvoked);
        match lock.release(guard).await {
            Ok(()) => sim.record(&c, EventKind::Released),
            Err(reason) => sim.record(&c, EventKind::ReleaseFailed { reason }),
        }
    }
    sim.record(&c, EventKind::Done);
}

/// How a hold's critical section ended.
enum HoldEnd {
    /// Its work was done.
    Worked,
    /// The holder was asked to give up (a run with revokers).
    Revoked,
    /// The holder lost its trust in the hold, with why.
    Lost(String),
}

/// One revoker's loop (`Scenario::revokers`): once for each acquire attempt of each
/// holder, wait half a hold, list the first lock's directory and ask the holder of one of
/// its nodes, the chooser's pick, to give up. A listing that fails or finds no node asks
/// nobody.
async fn revoker<L: LockUnderTest>(
    sim: Sim,
    mut c: SimClient,
    role: LockRole,
    mut locks: Vec<L>,
    sc: Scenario,
    renew: mpsc::UnboundedSender<NewLock<L>>,
) {
    let dir = sc.lock_paths().swap_remove(0);
    let pause = Duration::from_millis((sc.hold_ms / 2).max(1));
    let holders = sc.clients - sc.revokers;
    for _ in 0..sc.acquisitions_per_client * holders {
        if c.session_state().is_terminal() {
            let Some((fresh, fresh_locks)) = new_session(&sim, &c, role, &renew).await else {
                break;
            };
            (c, locks) = (fresh, fresh_locks);
        }
        c.sleep(pause).await;
        let Ok(mut children) = c.get_children(&dir).await else {
            continue;
        };
        // In name order, whatever order the server lists them in.
        children.sort();
        let i = match children.len() {
            0 => continue,
            1 => 0,
            n => sim.choose(&c, ChoiceKind::RevokeTarget, n).await,
        };
        let Some(name) = children.get(i) else {
            continue;
        };
        let node = zklock_recipe::path::join(&dir, name);
        sim.record(&c, EventKind::RevokeRequested { node: node.clone() });
        // What it sent and what came back are in the history's requests.
        let _ = locks[0].revoke(&node).await;
    }
    sim.record(&c, EventKind::Done);
}

/// The mode of attempt `k`: the fixed mix's, or the chooser's pick among the shape's
/// modes.
async fn attempt_mode(sim: &Sim, c: &SimClient, sc: &Scenario, k: u32) -> AcquireMode {
    let modes = &sc.shape.modes;
    if modes.is_empty() {
        let attempt = u64::from(k) + u64::from(sc.mix_offset);
        return AcquireMode::of_attempt(attempt, sc.drop_every, sc.acquire_timeout_ms, 0);
    }
    let i = if modes.len() > 1 {
        sim.choose(c, ChoiceKind::AcquireMode, modes.len()).await
    } else {
        0
    };
    modes[i].mode(sc.acquire_timeout_ms)
}

/// Whether the client stops before attempt `k`, however the one before it ended: the
/// chooser's pick when the shape chooses counts (never before the first), never
/// otherwise.
async fn stops_before(sim: &Sim, c: &SimClient, sc: &Scenario, k: u32) -> bool {
    k > 0 && sc.shape.count_chosen && sim.choose(c, ChoiceKind::AcquireCount, 2).await == 1
}
