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
mod sim;
pub mod tree;
mod world;

pub use chooser::{ChoiceKind, Chooser, GuidedChooser, RandomChooser, ReplayChooser};
pub use client::SimClient;
pub use config::{ClientConfig, SimConfig};
pub use scenario::{
    FaultMode, Faults, LockUnderTest, Rate, Recipe, RunOutcome, Scenario, ScenarioError,
    ShippedLock, ShippedRecipe, run_scenario, run_scenario_with,
};
pub use sim::{Sim, SimError, SimTask, run};
pub use world::request::{REQUEST_BYTES_MAX, RequestKind};
pub use world::{ClientId, MULTI_CREATE_STAT, ResourceReply, SYSTEM_SESSION, ServerCtl};
