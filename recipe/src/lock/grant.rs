//! Handing over a grant: what a recipe was granted (a lock node, a semaphore's lease, a
//! queue item's lock) is handed to its caller only while the session still vouches for
//! it.
//!
//! A grant's trust ends at the session's first Disconnected (under the default
//! [`LostPolicy`]), Expired or Closed after the grant. A recipe that awaits anything
//! between the grant and its return (releasing an inner lock, checking an item, a
//! revocation handshake, taking a second lock) can see the trust end meanwhile: the server
//! may then expire the session and give the node to another client while this one still
//! holds the grant in hand. [`hand_over`] is the one place that looks: every recipe that
//! awaits after its grant returns through it, so none hands over a grant whose trust
//! ended; it gives such a grant back and fails instead.
//!
//! A lock taken under another (docs/your-lock.md shows this one):
//!
//! ```
//! use zklock_recipe::lock::{Lock, LockError, LockGuard, hand_over};
//! use zklock_recipe::Coordination;
//!
//! /// Takes `inner` under `outer`: the outer lock only orders the takers.
//! async fn take_under<C: Coordination + Clone>(
//!     client: &C,
//!     outer: &Lock<C>,
//!     inner: &Lock<C>,
//! ) -> Result<LockGuard<C>, LockError> {
//!     let o = outer.acquire().await?;
//!     let i = inner.acquire().await?;
//!     // Not `o.release().await?; Ok(i)`: the release can outlast `i`'s trust.
//!     let (i, released) = hand_over(client, i, o.release()).await?;
//!     released?;
//!     Ok(i)
//! }
//! ```
//!
//! Run on the simulation, without faults:
//!
//! ```
//! use zklock_recipe::lock::{Lock, LockError, LockOptions, hand_over};
//! use zklock_sim::{SimConfig, run};
//!
//! // A lock taken under another: the outer lock orders the takers, the inner one is
//! // the grant, handed over only if its trust outlasted the outer lock's release.
//! let held = run(SimConfig::with_seed(3), |sim| async move {
//!     let outer = Lock::new(sim.client(), "/outer", LockOptions::default())?;
//!     let inner = Lock::new(sim.client(), "/inner", LockOptions::default())?;
//!     let o = outer.acquire().await?;
//!     let i = inner.acquire().await?;
//!     let (i, released) = hand_over(&sim.client(), i, o.release()).await?;
//!     released?;
//!     let path = i.path().to_owned();
//!     i.release().await?;
//!     Ok::<_, LockError>(path)
//! })
//! .expect("the simulation ran to the end")
//! .expect("no fault, so the grant was handed over");
//! assert!(held.starts_with("/inner/"));
//! ```

use super::error::{LockError, LostReason};
use super::{LockGuard, LostPolicy};
use crate::{Coordination, SessionEvents, SessionState};
use std::future::Future;

/// The session's word on a grant, from the moment it was made: [`ended`](Trust::ended)
/// says whether the session has since been Disconnected (under the default
/// [`LostPolicy`]), Expired or Closed. A reconnect does not restore it: while the
/// connection was down, the server may have expired the session.
#[derive(Debug)]
pub struct Trust {
    events: SessionEvents,
    counts_disconnect: bool,
    ended: Option<LostReason>,
}

impl Trust {
    /// Trust in what `client`'s session was just granted: call it right after the reply
    /// that granted it, with no await in between. Ended at once if the session is not
    /// connected now.
    pub fn begin<C: Coordination>(client: &C, policy: LostPolicy) -> Trust {
        let counts_disconnect = policy == LostPolicy::DisconnectedOrExpired;
        let mut trust = Trust {
            events: client.session_events(),
            counts_disconnect,
            ended: None,
        };
        trust.see(client.session_state());
        trust
    }

    fn see(&mut self, state: SessionState) {
        let reason = match state {
            SessionState::Connected => return,
            SessionState::Disconnected if !self.counts_disconnect => return,
            SessionState::Disconnected => LostReason::Disconnected,
            SessionState::Expired => LostReason::Expired,
            SessionState::Closed => LostReason::SessionClosed,
        };
        // The first end is the reason; an Expired that follows a Disconnected is
        // kept by the caller's look at the session (see `lost_error`).
        self.ended.get_or_insert(reason);
    }

    /// Why the trust ended, if it has: takes in the session changes queued since.
    pub fn ended(&mut self) -> Option<LostReason> {
        while self.ended.is_none() {
            let Some(state) = self.events.try_next() else {
                break;
            };
            self.see(state);
        }
        self.ended
    }

    /// Resolves when the trust ends, with why.
    pub async fn lost(&mut self) -> LostReason {
        loop {
            if let Some(reason) = self.ended() {
                return reason;
            }
            match self.events.next().await {
                Some(state) => self.see(state),
                None => {
                    self.ended.get_or_insert(LostReason::SessionClosed);
                }
            }
        }
    }
}

/// What a recipe was granted and may hand over: a lock guard, a lease, a queue item's
/// lock. See [`hand_over`].
pub trait Grant: Send {
    /// Why its trust ended, if it has, as far as observed now.
    fn trust_ended(&mut self) -> Option<LostReason>;
    /// The node it holds, for the error that names it.
    fn node_path(&self) -> &str;
    /// Gives it back: deletes its node, or leaves that to the client's background
    /// cleanup if the delete cannot be done now.
    fn give_back(self) -> impl Future<Output = ()> + Send;
}

impl<C: Coordination> Grant for LockGuard<C> {
    fn trust_ended(&mut self) -> Option<LostReason> {
        self.is_lost()
    }
    fn node_path(&self) -> &str {
        self.path()
    }
    async fn give_back(self) {
        // A failed release leaves the node to the background cleanup (see `release`).
        drop(self.release().await);
    }
}

/// Holds `grant` while `meanwhile` runs (releasing an inner lock, checking what the grant
/// is for), then hands it over with `meanwhile`'s output if its trust lasted. If the
/// trust ended before or during `meanwhile`, gives the grant back and fails: with
/// [`LockError::SessionExpired`] or [`LockError::SessionClosed`] when the session is
/// over, [`LockError::NodeDeleted`] when another client deleted the node, and
/// [`LockError::LostBeforeGranted`] after a disconnect.
///
/// `meanwhile` runs to its end either way, so what it releases is released.
pub async fn hand_over<C, G, T, F>(
    client: &C,
    mut grant: G,
    meanwhile: F,
) -> Result<(G, T), LockError>
where
    C: Coordination,
    G: Grant,
    F: Future<Output = T>,
{
    let out = meanwhile.await;
    match grant.trust_ended() {
        None => Ok((grant, out)),
        Some(reason) => {
            let path = grant.node_path().to_owned();
            grant.give_back().await;
            Err(lost_error(client, reason, &path))
        }
    }
}

/// The error for a grant at `path` whose trust ended for `reason`.
pub fn lost_error<C: Coordination>(client: &C, reason: LostReason, path: &str) -> LockError {
    // The session's end, once known, says more than the disconnect that came before it.
    let reason = match client.session_state() {
        SessionState::Expired => LostReason::Expired,
        SessionState::Closed => LostReason::SessionClosed,
        _ => reason,
    };
    match reason {
        LostReason::Expired => LockError::SessionExpired,
        LostReason::SessionClosed => LockError::SessionClosed,
        LostReason::NodeDeleted => LockError::NodeDeleted {
            path: path.to_owned(),
        },
        LostReason::Disconnected => LockError::LostBeforeGranted(reason),
    }
}
