//! Lock recipes for ZooKeeper, written once against the [`Coordination`] trait.
//!
//! The crate has no runtime, clock, RNG or I/O of its own: everything comes through
//! `Coordination`, so the same recipe code runs on zklock's simulated ZooKeeper, under its
//! exhaustive explorer, and on a real server.
//!
//! It provides an exclusive [`Lock`] and a read/write [`RwLock`], after ZooKeeper's lock
//! recipe as Curator's `InterProcessMutex` runs it, with fencing tokens, a lost signal and
//! cooperative revocation (module [`lock`]).
//!
//! # Example
//!
//! Two clients of the simulated ZooKeeper contend for one lock:
//!
//! ```
//! use zklock_recipe::{Lock, LockError, LockOptions};
//! use zklock_sim::{SimConfig, run};
//!
//! let left = run(SimConfig::with_seed(7), |sim| async move {
//!     let a = Lock::new(sim.client(), "/locks/jobs", LockOptions::default())?;
//!     let b = Lock::new(sim.client(), "/locks/jobs", LockOptions::default())?;
//!
//!     let guard = a.acquire().await?;
//!     assert!(b.try_acquire().await?.is_none()); // held by a; b leaves no node behind
//!     let token = guard.fencing_token(); // pass it to the resource you protect
//!     guard.release().await?;
//!
//!     // with_lock releases after the closure, and stops it if the lock is lost.
//!     let later = b.with_lock(|t| async move { t }).await?;
//!     assert!(later > token);
//!     Ok::<_, LockError>(sim.server_children("/locks/jobs"))
//! })
//! .expect("the simulation ran to the end")
//! .expect("the lock calls succeeded");
//! assert!(left.is_empty()); // no lock node left behind
//! ```
//!
//! # Guarantees, and why they hold
//!
//! - **One holder at a time (as believed).** Contenders create ephemeral-sequential nodes;
//!   the lowest sequence number holds. Names are ordered by their numeric 10-digit suffix,
//!   never by full name, since the guid prefix would otherwise decide the order. A guard's
//!   [`lost`](LockGuard::lost) signal fires on Disconnected by default: the client reports
//!   Disconnected after 2/3 of the session timeout, the server expires the session only
//!   after the full timeout, so the holder stops believing before anyone else can be
//!   granted the lock ([`LostPolicy`]). A process pause defeats any such belief, which is
//!   why there are fencing tokens.
//! - **Fencing.** [`FencingToken`] is the czxid of the holder's node: ZooKeeper's global
//!   write order, strictly increasing across successive holders even when the lock
//!   directory is recreated (the sequence counter would restart).
//! - **No lost wakeup.** A waiter sets a watch on the node it waits for *after* listing
//!   the children; if that node is already gone, the watch request says so (`NoNode`) and
//!   the waiter lists again at once, otherwise the watch fires on its deletion.
//! - **No herd.** A waiter watches only its immediate predecessor (a reader: the nearest
//!   lower writer), so a release wakes one waiter, or the run of readers behind a writer.
//! - **No orphan from a lost create reply.** Node names carry a guid (Curator's `_c_<guid>-`
//!   protection). After `ConnectionLoss` on create, the recipe lists the children and
//!   adopts a node with its guid, only if that node's `ephemeral_owner` is its session;
//!   otherwise it creates again. Retries are bounded ([`RetryPolicy`]).
//! - **Nothing left behind.** `try_acquire`, `acquire_timeout`, `acquire_until` and failed
//!   acquires delete their node before returning, retrying through connection loss until
//!   the node or the session is gone; `release` does the same. A *dropped* acquire future,
//!   or a guard dropped without release, cannot await: it hands its node to the runner
//!   ([`Coordination::cleanup_detached`]), which deletes it in the background with the
//!   same retry rule, as Curator's background executor does;
//!   [`release_in_background`](LockGuard::release_in_background) does that on purpose,
//!   for a caller that need not wait for the delete. So a dropped acquire leaves
//!   no node behind once that background cleanup completes, with no further call on the
//!   lock object. If the create's reply never came, the runner finds the node by its guid
//!   and our session as owner.
//! - **Determinism.** Guids come from the caller or from the session id and a per-lock
//!   counter ([`LockOptions::guid`]), backoff has no jitter, and time is the runner's, so a
//!   simulated run is reproducible from its seed.
//!
//! - **No request beyond Curator's.** Acquiring sends the create with the first listing
//!   right behind it (one round trip: a session's requests are applied in order), then,
//!   if blocked, the blocker's watch and the listing again once it fires; release deletes.
//!   The watch on our own node (its deletion, revocation requests) is set when the
//!   guard's [`lost`](LockGuard::lost) or [`revocation`](LockGuard::revocation) is first
//!   awaited; that first read reports a deletion at any time since the grant.
//!
//! Revocation is cooperative: another client sets [`lock::REVOKE_MESSAGE`] on a holder's
//! node ([`lock::request_revoke`]) and the holder sees
//! [`revoke_requested`](LockGuard::revoke_requested) once it awaits
//! [`revocation`](LockGuard::revocation); releasing is up to it.
//!
//! The recipes are not reentrant: a lock object has one contender at a time.

mod children;
mod coordination;
pub mod election;
pub mod history;
pub mod lock;
pub mod path;
pub mod semaphore;
mod types;
pub mod under_test;
pub mod work_queue;

pub use children::{ChildNames, Children};
pub use coordination::{
    Coordination, DetachedCleanup, SessionBroadcast, SessionEvents, Watch, WatchSender, WatchSource,
};
pub use lock::{
    FencingToken, Lock, LockError, LockGuard, LockNode, LockOptions, LostPolicy, LostReason,
    NodeKind, RetryPolicy, RwLock,
};
pub use types::{
    CreateMode, EventType, Op, OpResult, SessionId, SessionState, Stat, WatchedEvent, ZkError,
};
pub use under_test::{GuardedLock, LockUnderTest, Wait};
