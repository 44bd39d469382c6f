//! Leader election, the most common use of a ZooKeeper lock, in the two shapes libraries
//! ship (Curator's `LeaderLatch` and `LeaderSelector`, Kazoo's `Election`):
//!
//! - [`LeaderLatch`]: each contender creates an ephemeral-sequential node under the
//!   election path; the lowest leads, and each other contender watches its immediate
//!   predecessor. [`await_leadership`](LeaderLatch::await_leadership),
//!   [`has_leadership`](LeaderLatch::has_leadership), [`close`](LeaderLatch::close) and
//!   leadership listeners ([`LeaderLatch::add_listener`]).
//! - [`LeaderSelector`]: takes leadership through the lock, runs the user's task
//!   ([`SelectorListener::lead`]), gives leadership up when the task ends, and queues
//!   again, until [`cancel`](LeaderSelector::cancel)led.
//!
//! Both stand on zklock's [`Lock`](crate::Lock), and so keep its guarantees: a create
//! whose reply was lost is found again by its guid, and adopted only if its ephemeral
//! owner is our session; a contender watches only its predecessor (no herd); the
//! leadership epoch is the leader's node's czxid, which strictly increases across
//! successive leaders even when the election path is deleted and created again (the
//! sequence counter would restart), and is the fencing token to hand to whatever the
//! leader writes.
//!
//! **On Disconnected**, a leader stops trusting its leadership at once (its
//! [`lost`](LeaderLatch::lost) resolves, listeners hear
//! [`NotLeader`](LeadershipChange::NotLeader), a selector's task is stopped): the client
//! reports Disconnected after 2/3 of the session timeout, the server expires the session
//! only after the full timeout, so the leader stops believing before another contender
//! can be elected. Its node may still stand: a latch's next
//! [`await_leadership`](LeaderLatch::await_leadership) deletes it and contends anew with a
//! new node, never re-asserting leadership on the old one; a selector gives leadership up
//! (deleting the node, retried through connection loss while the session lives) and
//! queues again. A contender that is waiting keeps waiting through a disconnect: its
//! watch and its node survive while the session does.
//!
//! **On Expired**, the server has deleted the session's node: a leader's `lost` resolves,
//! and every later call of the latch or selector fails with the session's end
//! ([`ElectionError::Lock`]). Contend again with a new latch or selector on a new
//! session: one object never carries a node or a guid from one session to the next.
//!
//! **Close** ([`LeaderLatch::close`], [`LeaderSelector::cancel`]) wakes a contender that
//! waits, deletes its node (retried through connection loss while the session lives) and
//! ends leadership for good: no leadership is granted, nor a task run, after it.
//!
//! ```
//! use zklock_recipe::election::{ElectionError, LeaderLatch};
//! use zklock_sim::{SimConfig, run};
//!
//! let left = run(SimConfig::with_seed(7), |sim| async move {
//!     let a = LeaderLatch::new(sim.client(), "/election")?;
//!     let b = LeaderLatch::new(sim.client(), "/election")?;
//!     let term = a.await_leadership().await?;
//!     assert!(a.has_leadership());
//!     a.close().await?; // a leaves: b is elected, with a later epoch
//!     let next = b.await_leadership().await?;
//!     assert!(next.epoch > term.epoch);
//!     b.close().await?;
//!     assert_eq!(b.await_leadership().await, Err(ElectionError::Closed));
//!     Ok::<_, ElectionError>(sim.server_children("/election"))
//! })
//! .expect("the simulation ran to the end")
//! .expect("the election calls succeeded");
//! assert!(left.is_empty()); // no node left behind
//! ```

mod error;
mod latch;
mod selector;
pub mod under_test;

pub use error::ElectionError;
pub use latch::{LeaderLatch, LeadershipChange, Term};
pub use selector::{LeaderSelector, SelectorListener};
pub use under_test::{ElectionUnderTest, LatchUnderTest, SelectorUnderTest};
