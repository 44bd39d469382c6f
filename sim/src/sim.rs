//! The [`Sim`] handle: builds a world, runs actors on its own executor, drives the world at
//! quiescent points, and offers scripted faults and server inspection to tests.

use crate::actor::{Actors, Join, JoinState, Round, Runner, Slot, lock_join};
use crate::chooser::{ChoiceKind, Chooser, RandomChooser};
use crate::client::SimClient;
use crate::config::{ClientConfig, SimConfig};
use crate::shared::Shared;
use crate::world::delivery::Delivered;
use crate::world::request::RequestKind;
use crate::world::{Control, ResourceOp, ResourceReply, ServerCtl, Staged, Step, World};
use futures_channel::oneshot;
use futures_util::future::poll_fn;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use zklock_recipe::Stat;

/// Why a simulation stopped before its main actor finished.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// Every actor is blocked and nothing can ever wake one: no request can be applied
    /// and no timer is set. For a lock recipe this is a liveness failure (a stuck waiter).
    Stuck {
        at_ms: u64,
        /// Requests queued at disconnected or frozen clients.
        requests_waiting: usize,
    },
    /// Virtual time passed `SimConfig::time_limit_ms`.
    TimeLimit { limit_ms: u64 },
    /// The world took `SimConfig::steps_max` steps.
    StepLimit { steps_max: u64 },
    /// The Chooser pruned the run at a state an explorer had already seen.
    Pruned,
    /// The scenario is outside its bounds (see [`Scenario::validate`](crate::Scenario)):
    /// nothing ran.
    InvalidScenario(crate::ScenarioError),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Stuck {
                at_ms,
                requests_waiting,
            } => {
                write!(
                    f,
                    "simulation stuck at {at_ms} ms: every client waits, and no reply, watch \
                     event or timer is left to wake one"
                )?;
                if *requests_waiting > 0 {
                    write!(
                        f,
                        " ({requests_waiting} requests unsent by clients that cannot reach \
                         the server)"
                    )?;
                }
                f.write_str("; a waiter never got its wake-up")
            }
            SimError::TimeLimit { limit_ms } => write!(
                f,
                "virtual time limit of {limit_ms} ms reached; raise SimConfig::time_limit_ms \
                 if the scenario needs longer"
            ),
            SimError::Pruned => f.write_str("pruned: the explorer had seen this state"),
            SimError::StepLimit { steps_max } => write!(
                f,
                "step limit of {steps_max} reached; raise SimConfig::steps_max if the \
                 scenario needs more"
            ),
            SimError::InvalidScenario(e) => write!(f, "nothing ran: {e}"),
        }
    }
}

impl std::error::Error for SimError {}

/// A simulated world: one ZooKeeper server and its clients, under virtual time.
/// Cheap to clone; all clones share the world.
#[derive(Clone)]
pub struct Sim {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w = self.shared.world();
        f.debug_struct("Sim")
            .field("now_us", &w.now_us)
            .field("clients", &w.clients.len())
            .finish()
    }
}

/// Runs `f`'s future as the main actor of a new simulated world, on the calling thread.
/// For a plain `#[test]`. Inside `#[madsim::test]`, use [`Sim::new`] and [`Sim::run`].
///
/// Built with `--cfg madsim`, the world is hosted on a new madsim runtime (seeded with
/// [`SimConfig::madsim_seed`]), whose clock keeps in step with the world's, for code that
/// reads madsim's time; without it no runtime is needed, since the simulation never waits
/// on anything outside its world. The outcome is the same either way.
pub fn run<F, Fut>(config: SimConfig, f: F) -> Result<Fut::Output, SimError>
where
    F: FnOnce(Sim) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    #[cfg(madsim)]
    let rt = {
        let madsim_seed = config.madsim_seed.unwrap_or(config.seed);
        madsim::runtime::Runtime::with_seed_and_config(madsim_seed, Default::default())
    };
    let sim = Sim::new(config);
    let fut = f(sim.clone());
    #[cfg(madsim)]
    let out = rt.block_on(async move { sim.run(fut).await });
    #[cfg(not(madsim))]
    let out = complete(sim.run(fut));
    out
}

impl Sim {
    /// A new world whose Chooser is ChaCha8 seeded with `config.seed`.
    pub fn new(config: SimConfig) -> Sim {
        let chooser = RandomChooser::new(config.seed);
        Sim::with_chooser(config, Box::new(chooser))
    }

    /// A new world seeded from the current madsim runtime, for a user's own
    /// `#[madsim::test]` suite: `MADSIM_TEST_SEED=S` reproduces a run and
    /// `MADSIM_TEST_NUM=N` sweeps N seeds from it. Must be called inside a madsim runtime.
    /// Only with madsim turned on: built with `--cfg madsim` (madsim's own switch), which
    /// also makes `madsim` a dependency of this crate.
    #[cfg(madsim)]
    pub fn from_madsim(config: SimConfig) -> Sim {
        let seed = madsim::runtime::Handle::current().seed();
        Sim::new(SimConfig { seed, ..config })
    }

    /// The seed of this world's random Chooser.
    pub fn seed(&self) -> u64 {
        self.shared.world().cfg.seed
    }

    /// A new world drawing every decision from `chooser`.
    pub fn with_chooser(config: SimConfig, chooser: Box<dyn Chooser>) -> Sim {
        Sim {
            shared: Arc::new(Shared {
                world: Mutex::new(World::new(config, chooser)),
                actors: Arc::new(Actors::default()),
            }),
        }
    }

    /// Runs `fut` as the main actor while driving the world. Ends with the future's
    /// output, or with why the world stopped.
    ///
    /// The whole simulation runs inside this call, which never waits on anything outside
    /// the world: actors are polled in id order until every one is blocked, then the
    /// world steps until an actor is woken, and so on (see the `actor` module). Actors still running when
    /// it ends are dropped, each as itself. Awaited inside a madsim runtime (as in a
    /// `#[madsim::test]`), it keeps madsim's clock in step with the world's.
    pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output, SimError> {
        #[cfg(madsim)]
        {
            self.shared.world().madsim_clock = madsim::time::TimeHandle::try_current();
        }
        let actors = self.shared.actors.clone();
        let mut main = Slot::new(&actors, actors.new_id());
        actors.wake(main.id());
        let mut runner = Runner::new(actors);
        // Boxed so that, should the world stop first, it can be dropped as the main actor.
        let mut fut = Some(Box::pin(fut));
        let out = poll_fn(|_| {
            loop {
                let f = fut.as_mut().expect("taken once the run is over");
                match runner.round(&mut main, |cx| f.as_mut().poll(cx)) {
                    Round::Done(v) => return Poll::Ready(Ok(v)),
                    Round::Ran => continue,
                    Round::Quiescent => {}
                }
                if let Err(e) = step(&self.shared) {
                    return Poll::Ready(Err(e));
                }
            }
        })
        .await;
        let f = fut.take();
        main.enter(|_| drop(f));
        runner.clear();
        out
    }

    /// Spawns another actor. Its output is the output of the returned task.
    pub fn spawn<F>(&self, fut: F) -> SimTask<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let join: Join<F::Output> = Arc::new(Mutex::new(JoinState::default()));
        let done = join.clone();
        let id = self.shared.actors.spawn(Box::pin(async move {
            let v = fut.await;
            let waiter = {
                let mut j = lock_join(&done);
                j.output = Some(v);
                j.waiter.take()
            };
            if let Some(w) = waiter {
                w.wake();
            }
        }));
        SimTask {
            id,
            join,
            actors: self.shared.actors.clone(),
        }
    }

    /// A new client with its own session, connected. Create clients from one actor (or
    /// before running) so that their ids, and so the history, do not depend on task order.
    ///
    /// # Panics
    /// When the world already has `SimConfig::clients_max` clients.
    pub fn client(&self) -> SimClient {
        self.client_with(ClientConfig::default())
    }

    /// A new client with its own settings.
    pub fn client_with(&self, cc: ClientConfig) -> SimClient {
        let (id, session) = {
            let mut w = self.shared.world();
            let max = w.cfg.clients_max;
            w.add_client(&cc)
                .unwrap_or_else(|| panic!("more than clients_max = {max} clients"))
        };
        SimClient::new(self.shared.clone(), id, session)
    }

    /// A new session for `client` once its session ended (Expired or Closed), as a
    /// process opens a new ZooKeeper client: a handle on the same client (the same index,
    /// process and link, so faults still reach it) with a new session, Connected at the
    /// world's next step. `None` while the session has not ended or the client cannot
    /// reach the server (crashed, paused or cut off): sleep a while and ask again. The
    /// history shows the new session as `Connected`; handles on the old one stay on it.
    ///
    /// ```
    /// use zklock_recipe::{Coordination, SessionState, ZkError};
    /// use zklock_sim::{SimConfig, run};
    ///
    /// run(SimConfig::with_seed(1), |sim| async move {
    ///     let a = sim.client();
    ///     let mut events = a.session_events();
    ///     sim.expire(&a);
    ///     while events.next().await.is_some() {} // Disconnected, then Expired
    ///     let a2 = sim.renew_session(&a).await.expect("the session ended");
    ///     assert_eq!(a2.session_state(), SessionState::Connected);
    ///     assert_eq!(a.exists("/").await, Err(ZkError::SessionExpired));
    ///     assert!(a2.exists("/").await.unwrap().is_some());
    /// })
    /// .unwrap();
    /// ```
    pub async fn renew_session(&self, client: &SimClient) -> Option<SimClient> {
        let id = client.index();
        let session = self
            .shared
            .awaited(
                move |reply| Staged::Renew { client: id, reply },
                |d| match d {
                    Delivered::Renewed(s) => s,
                    other => unreachable!("a renewal was answered with {other:?}"),
                },
            )
            .await?;
        Some(SimClient::new(self.shared.clone(), id, session))
    }

    /// The delay before a client reconnects (`SimConfig::reconnect_delay_ms`).
    pub(crate) fn reconnect_delay(&self) -> Duration {
        Duration::from_millis(self.shared.world().cfg.reconnect_delay_ms)
    }

    /// Scripted faults and hooks are staged like requests: they take effect at the next
    /// quiescent point, that is, at the calling actor's next await, before the world
    /// does anything else. Inspect the server only after that await.
    fn control(&self, c: Control) {
        self.shared.stage(Staged::Control(c));
    }

    /// Connection loss now: in-flight requests reached the server or not (the Chooser
    /// decides), callers get ConnectionLoss, the client sees Disconnected and reconnects
    /// after `reconnect_delay_ms`: Connected within the session timeout, else Expired.
    pub fn disconnect(&self, client: &SimClient) {
        self.control(Control::Disconnect(client.index()));
    }

    /// Forced expiry, as Curator's KillSession: ephemerals are deleted at once; the client
    /// sees Disconnected, then Expired when it reconnects.
    pub fn expire(&self, client: &SimClient) {
        self.control(Control::Expire(client.index()));
    }

    /// Expiry declared by the client library on its own, as Curator's does: the client
    /// sees Expired at once (requests in flight fail with SessionExpired, a prefix of them
    /// applied), while the server holds the session and its ephemerals until a session
    /// timeout from now. A no-op unless the client is connected and running.
    pub fn expire_locally(&self, client: &SimClient) {
        self.control(Control::ExpireLocally(client.index()));
    }

    /// The client hears nothing and is not heard for `duration`: it reports Disconnected
    /// after 2/3 of its timeout, and the server expires it after the full timeout.
    pub fn partition(&self, client: &SimClient, duration: Duration) {
        self.control(Control::Partition(
            client.index(),
            duration.as_micros() as u64,
        ));
    }

    /// A process pause: the client is frozen for `duration`, then resumes believing what
    /// it believed before.
    pub fn pause(&self, client: &SimClient, duration: Duration) {
        self.control(Control::Pause(client.index(), duration.as_micros() as u64));
    }

    /// A crash: the client never runs again; its session expires after its timeout.
    pub fn crash(&self, client: &SimClient) {
        self.control(Control::Crash(client.index()));
    }

    /// Replies and watch events to the client are held for `duration` (a slow link),
    /// then delivered in their order.
    pub fn delay_delivery(&self, client: &SimClient, duration: Duration) {
        self.control(Control::Delay(client.index(), duration.as_micros() as u64));
    }

    /// The client's next create is applied but its reply is lost with the connection.
    pub fn lose_next_create_response(&self, client: &SimClient) {
        self.control(Control::LoseNextCreateResponse(client.index()));
    }

    /// Runs `hook` atomically just before the server applies the client's next request of
    /// kind `kind`.
    pub fn before_next<H>(&self, client: &SimClient, kind: RequestKind, hook: H)
    where
        H: FnOnce(&mut ServerCtl<'_>) + Send + 'static,
    {
        self.control(Control::BeforeNext(client.index(), kind, Box::new(hook)));
    }

    /// Children of `path` on the server, sorted; empty if the node is absent.
    pub fn server_children(&self, path: &str) -> Vec<String> {
        self.shared
            .world()
            .outside_read()
            .tree
            .children(path)
            .unwrap_or_default()
    }

    /// Every node path on the server, sorted.
    pub fn server_paths(&self) -> Vec<String> {
        self.shared.world().outside_read().tree.paths()
    }

    /// A node's stat on the server.
    pub fn server_stat(&self, path: &str) -> Option<Stat> {
        self.shared.world().outside_read().tree.stat(path)
    }

    /// A node's data on the server.
    pub fn server_data(&self, path: &str) -> Option<Vec<u8>> {
        self.shared
            .world()
            .outside_read()
            .tree
            .data(path)
            .map(<[u8]>::to_vec)
    }

    /// Whether some node may still go without any client's help: a client library's
    /// background cleanup is unfinished on a session that can still finish it, or the
    /// server still holds a session its client abandoned (`ClientState::abandoned`). The server
    /// expires such a session a timeout after it last heard from it, and its nodes go
    /// with it, whether the client gave it up before its workload ended or after.
    pub(crate) fn settling(&self) -> bool {
        let mut w = self.shared.world();
        w.outside_read();
        let alive = |id| w.sessions.get(id).is_some_and(|s| s.alive);
        let cleanup_pending = w
            .clients
            .iter()
            .any(|cl| !cl.detached.is_empty() && alive(&cl.session));
        cleanup_pending
            || w.sessions
                .iter()
                .any(|(id, s)| s.alive && w.clients[s.client].abandoned(*id))
    }

    /// Background cleanup items (`Coordination::cleanup_detached`) the client library
    /// of `client` has not finished: nodes of dropped acquires or guards not yet deleted.
    pub fn detached_cleanups_pending(&self, client: &SimClient) -> usize {
        self.shared.world().outside_read().clients[client.index()]
            .detached
            .len()
    }

    /// Virtual time since the world began. A read during a run is part of the state an
    /// explorer digests, as a client's own reads are: the code that reads may keep it.
    pub fn now(&self) -> Duration {
        Duration::from_micros(self.shared.world().read_clock(None))
    }

    /// Every choice the world has drawn so far, in order.
    pub fn choices(&self) -> Vec<u32> {
        self.shared.world().choices.clone()
    }

    /// Records a workload event (acquire, release, lost...) in the history, at the
    /// current virtual time.
    pub fn record(&self, client: &SimClient, kind: zklock_recipe::history::EventKind) {
        self.shared.stage(Staged::Record {
            client: client.index(),
            kind,
        });
    }

    pub(crate) fn resource(
        &self,
        client: &SimClient,
        op: ResourceOp,
    ) -> impl Future<Output = ResourceReply> + Send + '_ {
        let client = client.index();
        self.shared.awaited(
            move |reply| Staged::Resource { client, op, reply },
            |d| match d {
                Delivered::Resource(r) => r,
                other => unreachable!("a resource operation was answered with {other:?}"),
            },
        )
    }

    /// A decision of `client`'s workload in `0..n`, drawn from the chooser at the world's
    /// next step.
    pub(crate) fn choose(
        &self,
        client: &SimClient,
        kind: ChoiceKind,
        n: usize,
    ) -> impl Future<Output = usize> + Send + '_ {
        let client = client.index();
        self.shared.awaited(
            move |reply| Staged::Choose {
                client,
                kind,
                n,
                reply,
            },
            |d| match d {
                Delivered::Chosen(v) => v,
                other => unreachable!("a choice was answered with {other:?}"),
            },
        )
    }

    /// Marks `client`'s workload over: no code of the client's will read what the world
    /// gives it any more, so an explorer's digest leaves out its fold (see `World::digest`).
    /// A workload that still uses the client after this breaks the digest's argument.
    pub(crate) fn finish(&self, client: &SimClient) {
        self.shared.stage(Staged::Finished {
            client: client.index(),
        });
    }

    /// Resolves when the client crashes (never, if it does not).
    pub async fn until_crashed(&self, client: &SimClient) {
        let (tx, rx) = oneshot::channel();
        self.shared.stage(Staged::CrashWatch {
            client: client.index(),
            done: tx,
        });
        if rx.await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Waits for `duration` of virtual time, independent of any client.
    pub async fn sleep(&self, duration: Duration) {
        self.shared
            .awaited(
                |done| Staged::Sleep {
                    client: usize::MAX,
                    duration_us: duration.as_micros() as u64,
                    done,
                },
                drop,
            )
            .await;
    }

    /// The history so far.
    pub fn history(&self) -> zklock_recipe::history::History {
        zklock_recipe::history::History {
            events: self.shared.world().history.clone(),
        }
    }

    /// World steps taken so far.
    pub fn steps(&self) -> u64 {
        self.shared.world().steps
    }
}

/// Runs a future that waits on nothing outside the world, such as [`Sim::run`]'s, to
/// completion on this thread, without a runtime.
pub(crate) fn complete<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = futures_util::task::noop_waker();
    match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("a simulation never waits outside its world"),
    }
}

/// Steps of the world, at a quiescent point, until one wakes an actor; `Err` when the
/// world stops.
fn step(shared: &Shared) -> Result<(), SimError> {
    let woken = || shared.actors.pending();
    let mut w = shared.world();
    loop {
        match w.step(woken) {
            Step::Progress if woken() => return Ok(()),
            // No actor can run: a round would find them all still blocked.
            Step::Progress => continue,
            stop => return Err(stopped(stop, &w)),
        }
    }
}

/// Why the world stopped, for a step other than `Progress`.
fn stopped(stop: Step, w: &World) -> SimError {
    match stop {
        Step::Progress => unreachable!("progress is no stop"),
        Step::Idle => SimError::Stuck {
            at_ms: w.now_us / 1000,
            requests_waiting: w.outbound_total(),
        },
        Step::OutOfTime => SimError::TimeLimit {
            limit_ms: w.cfg.time_limit_ms,
        },
        Step::Pruned => SimError::Pruned,
        Step::OutOfSteps => SimError::StepLimit {
            steps_max: w.cfg.steps_max,
        },
    }
}

/// A spawned actor; await it for its output.
pub struct SimTask<T> {
    id: usize,
    join: Join<T>,
    actors: Arc<Actors>,
}

impl<T> std::fmt::Debug for SimTask<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTask").field("actor", &self.id).finish()
    }
}

impl<T> SimTask<T> {
    /// Stops the actor (used to model a crashed process's code stopping). Its future is
    /// dropped before the world's next step, as the actor.
    pub fn abort(&self) {
        lock_join(&self.join).aborted = true;
        self.actors.abort(self.id);
    }
}

impl<T> Future for SimTask<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut j = lock_join(&self.join);
        if let Some(v) = j.output.take() {
            return Poll::Ready(v);
        }
        if j.aborted {
            panic!("simulated actor {} failed: it was aborted", self.id);
        }
        if !j.waiter.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            j.waiter = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}
