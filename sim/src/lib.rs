//! A simulated in-memory ZooKeeper with fault injection, under virtual time.
//!
//! A [`Sim`] holds one ZooKeeper server with ZooKeeper's semantics (see
//! [`tree`]), its sessions and the clients' connections. [`SimClient`] implements
//! [`zklock_recipe::Coordination`], so a lock recipe runs on it unchanged.
//!
//! **Determinism.** Every decision the world makes (which pending request applies next,
//! which in-flight requests survive a broken connection, when and which fault strikes)
//! is drawn from a [`Chooser`]. Actors are polled by the simulation's own executor, in
//! id order, never by madsim's scheduler; the world acts only at quiescent points, when
//! every actor is blocked, and applies what actors issued in (actor, sequence) order. So
//! madsim's own task order (its seed) never changes an outcome.
//!
//! **madsim is optional.** No runtime is needed, so the crate builds without any flag.
//! Built with `--cfg madsim` (madsim's own switch), it depends on madsim: [`Sim::run`]
//! awaited in a madsim runtime keeps madsim's clock in step with the world's, [`run`]
//! hosts the world on a madsim runtime, and `Sim::from_madsim` seeds a world in a
//! `#[madsim::test]`.
//!
//! **Proven against ZooKeeper.** `real/tests/differential` runs random request sequences
//! (several sessions, every request kind, multis, watches, closes, invalid paths,
//! ZooKeeper's own nodes, requests at the size bound, pipelined batches, sessions in
//! flight at once) through [`SimClient`] and through a real 3.8 server, and compares
//! every result. As a fresh 3.8 server, the tree starts with `/zookeeper`,
//! `/zookeeper/config` and `/zookeeper/quota` ([`tree::DataTree::new`]); paths are judged
//! by UTF-16 code units ([`zklock_recipe::path::validate_path`]); a multi with an invalid
//! path is refused whole, naming that op; a request frame larger than
//! [`REQUEST_BYTES_MAX`] (1,048,575 bytes: jute.maxbuffer's default) drops the
//! connection, so it and the requests the client sent after it fail with ConnectionLoss,
//! unapplied; a multi's create answers with [`MULTI_CREATE_STAT`], as zookeeper-client
//! does.
//!
//! # What the simulation does not model
//!
//! - **ACLs and authentication.** Every node is open to all, except
//!   `/zookeeper/config`, whose world-readable ACL refuses setData and creates under it
//!   with NoAuth, as a real server does. No setACL, getACL or addAuth.
//! - **Quotas.** `/zookeeper/quota` is a plain node; creating under it sets no quota.
//! - **Zxids of failed writes and of sessions.** A real server spends a zxid on each
//!   failed write (an error transaction) and on each session's creation and close; the
//!   simulation spends zxids only on writes that change the tree. No client can tell
//!   but by the gaps: compare zxids by their order, never by their values.
//! - **Stat times and the ACL version.** `Stat` carries no ctime, mtime or aversion.
//! - **Where a path is judged.** A connected client's single request with an invalid
//!   path is refused by the simulated server, where a real client refuses it before
//!   sending; the error (BadArguments) is the same, but the request takes its turn at
//!   the server. A disconnected or ended session judges the path first, as a real
//!   client does.
//! - **Sizes other than the request's.** Only the request frame is bounded. A reply
//!   larger than jute.maxbuffer (a listing of very many children, or a node's data near
//!   the bound with its stat) is delivered; a real client may refuse to read it. When
//!   the connection drops for an oversized request, requests sent before it in the same
//!   pipeline are applied, but their replies may be lost (ConnectionLoss) as the
//!   world's chooser decides, where on a real server it is a matter of timing.
//! - **One server.** No followers, so no stale reads after a reconnect to a lagging one;
//!   no `sync`, reconfig, TTL or container nodes, persistent or recursive watches, or
//!   removeWatches.
//!
//! ```
//! use zklock_recipe::{Coordination, CreateMode};
//! use zklock_sim::{SimConfig, run};
//!
//! let names = run(SimConfig::with_seed(1), |sim| async move {
//!     let a = sim.client();
//!     a.create("/locks", b"", CreateMode::Persistent).await.unwrap();
//!     let (p, _) = a.create("/locks/n-", b"", CreateMode::EphemeralSequential).await.unwrap();
//!     assert_eq!(p, "/locks/n-0000000000");
//!     sim.server_children("/locks")
//! })
//! .unwrap();
//! assert_eq!(names, vec!["n-0000000000".to_string()]);
//! ```

mod actor;
pub mod chooser;
mod client;
mod config;
pub mod scenario;
mod shared;
mod sim;
pub mod tree;
mod world;

pub use chooser::{
    ChoiceKind, Chooser, Footprint, GuidedChooser, Offer, RandomChooser, ReplayChooser,
};
pub use client::SimClient;
pub use config::{ClientConfig, SimConfig};
pub use scenario::{
    Election, ElectionRecipe, FaultMode, Faults, LockUnderTest, ModeKind, Priorities, QueueRecipe,
    REVOKE_BOUND_MS_DEFAULT, Rate, Recipe, RevocableRecipe, RunOutcome, Scenario, ScenarioError,
    SemaphoreLock, SemaphoreRecipe, Shape, ShippedLock, ShippedRecipe, WorkQueue,
    fault_durations_ms, hold_lengths_ms, revocation_scenario, run_scenario, run_scenario_with,
};
pub use sim::{Sim, SimError, SimTask, run};
pub use world::folds::{Folds, SavedFolds};
pub use world::request::{REQUEST_BYTES_MAX, RequestKind};
pub use world::{ClientId, MULTI_CREATE_STAT, ResourceReply, SYSTEM_SESSION, ServerCtl};
