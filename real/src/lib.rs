//! zklock on a real ZooKeeper.
//!
//! * [`ZkClient`] implements [`zklock_recipe::Coordination`] over the
//!   [`zookeeper-client`](https://docs.rs/zookeeper-client) crate, so a lock recipe written
//!   for zklock's simulation runs unchanged against a real server or ensemble.
//! * [`harness`] starts and stops real ZooKeeper servers for tests ([`harness::TestServer`],
//!   [`harness::TestCluster`]), kills and restarts them, and forces sessions to expire.
//! * [`proxy`] is a fault-injecting TCP proxy that understands ZooKeeper's framing: it cuts
//!   connections, loses create responses, black-holes clients, and keeps a session that
//!   its client declared expired on its own from reaching the server.
//! * [`driver`] drives a lock of another library (Curator, Kazoo, zookeeper-client) in a
//!   process of its own through a documented JSON-lines protocol, as a
//!   [`workload::RealRecipe`];
//! * [`process`] pauses a client process, as a GC pause does, while its proxies hold its
//!   traffic, and crashes it, keeping its session from the server.
//! * [`workload`] runs the simulation's workload with the shipped recipe, or any
//!   [`workload::RealRecipe`] ([`workload::run_recipe`]), on real servers
//!   ([`servers::Servers`]), N clients each on its own session, with faults
//!   ([`faults`]) until a heal time, and records the same
//!   [`History`](zklock_recipe::history::History) as a simulated run, for the same checker:
//!   [`recorder::Recorder`] stamps every event from one monotonic clock under one lock,
//!   [`recording::RecordingClient`] records each ZooKeeper request and session change, and
//!   [`resource`] is the fenced and unfenced in-process resource. (The checker's
//!   `concurrent` module tells apart events that are only ordered by the recording lock.)
//!
//! A real run once found a ZooKeeper 3.8.0 (Debian) inconsistency: a leader killed while a
//! create was in flight came back after a restart with that create applied (sequence N of
//! the lock directory, an ephemeral of a live session), while the new quorum had given
//! sequence N to another client's node. Clients of the restarted server waited on the
//! phantom node for good, and the checker reported a stuck lock. ZooKeeper's tracker
//! describes this class (a rejoining server keeping a transaction the quorum never
//! committed, synchronised by DIFF without a truncation) in ZOOKEEPER-1154, -2832 and
//! -5010. So a killed leader stays down by default
//! ([`faults::FaultConfig::restart_killed_leader`] is false; `zklock real
//! --restart-killed-leader` turns restarts on, to test the ensemble as well).
//!
//! [`ZkClient`] sets TCP_NODELAY on its connections, as ZooKeeper's Java client and Kazoo
//! do: zookeeper-client leaves Nagle's algorithm on, which holds a request sent behind an
//! unanswered one (the recipe's listing behind its create) for a round trip.
//!
//! Everything runs on tokio; the harness needs Java and Debian's `zookeeper` package (see
//! [`harness::availability`]). [`reactor::block_on`] runs clients on the thread of
//! async-io's reactor, where zookeeper-client does its socket IO, which spares each reply
//! a crossing between threads (the benchmark runs its clients so).
//!
//! ```no_run
//! use zklock_real::harness::{self, TestServer};
//! use zklock_real::proxy::Proxy;
//! use zklock_real::ZkClient;
//! use zklock_recipe::{Coordination, CreateMode, ZkError};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     if let Err(why) = harness::availability() {
//!         eprintln!("skipping: {why}");
//!         return Ok(());
//!     }
//!     let server = TestServer::start()?;
//!     let proxy = Proxy::start(server.addr()).await?;
//!     // Session timeout 5 s; give up connecting after 10 s.
//!     let client = ZkClient::connect(&proxy.connect_string(), 5_000, 10_000).await?;
//!     client.create("/locks", b"", CreateMode::Persistent).await?;
//!
//!     // A create applied by the server whose reply never arrives.
//!     proxy.lose_next_create_response();
//!     let lost = client.create("/locks/lock-", b"", CreateMode::EphemeralSequential).await;
//!     assert_eq!(lost, Err(ZkError::ConnectionLoss));
//!
//!     // Curator's KillSession: the client learns Expired, its ephemerals are gone.
//!     server.expire_session(&client).await?;
//!     Ok(())
//! }
//! ```

mod aimed;
mod client;
mod convert;
mod detached;
pub mod driver;
mod error;
pub mod faults;
pub mod goal;
pub mod harness;
pub mod link;
mod nodelay;
pub use nodelay::set_on_connections_to as set_nodelay_on_connections_to;
pub mod plan;
pub mod process;
pub mod proxy;
pub mod reactor;
pub mod recorder;
pub mod recording;
pub mod resource;
pub mod servers;
pub mod shapes;
mod watch;
pub mod workload;

pub use client::{ZkClient, monotonic_now};
pub use error::{INSTALL_HINT, RealError};
