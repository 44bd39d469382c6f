//! The leader latch: the lowest ephemeral-sequential node under the election path leads.

use super::ElectionError;
use crate::Coordination;
use crate::lock::retry::delete_until_gone;
use crate::lock::{Lock, LockGuard, LockOptions, LostReason};
use futures_channel::oneshot;
use std::sync::{Arc, Mutex, MutexGuard};

/// One term of leadership: its epoch (the leader's node's czxid, the fencing token) and
/// the leader's node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// Strictly increasing across successive leaders: hand it to what the leader writes.
    pub epoch: i64,
    /// The leader's node (full path, with its sequence suffix).
    pub node: String,
}

/// What a latch's listeners hear.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeadershipChange {
    /// This contender was elected, for `Term`.
    IsLeader(Term),
    /// It no longer leads (lost, given up, or closed), with why.
    NotLeader { reason: String },
}

type Listener = Box<dyn Fn(&LeadershipChange) + Send + Sync>;

/// A leader latch on an election path: see the [module docs](super) for what it does on
/// Disconnected, Expired and close. One contender at a time: a latch object is one
/// participant.
pub struct LeaderLatch<C: Coordination> {
    lock: Lock<C>,
    state: Mutex<State<C>>,
    listeners: Mutex<Vec<Listener>>,
}

struct State<C: Coordination> {
    closed: bool,
    /// Wakes the contender waiting in `await_leadership`, if one is.
    close_signal: Option<oneshot::Sender<()>>,
    /// The term held, if any; shared with a `lost` in progress.
    held: Option<Arc<LockGuard<C>>>,
}

impl<C: Coordination + Clone> std::fmt::Debug for LeaderLatch<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderLatch")
            .field("path", &self.lock.path())
            .finish_non_exhaustive()
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LeaderLatch<C> {
    /// A latch on election path `path` (created, with its ancestors, when missing); fails
    /// on an invalid path.
    pub fn new(client: C, path: &str) -> Result<LeaderLatch<C>, ElectionError> {
        LeaderLatch::with_options(client, path, LockOptions::default())
    }

    /// A latch with the lock's options (its guid, retry policy, when leadership is lost:
    /// [`LockOptions`]).
    pub fn with_options(
        client: C,
        path: &str,
        options: LockOptions,
    ) -> Result<LeaderLatch<C>, ElectionError> {
        Ok(LeaderLatch {
            lock: Lock::new(client, path, options)?,
            state: Mutex::new(State {
                closed: false,
                close_signal: None,
                held: None,
            }),
            listeners: Mutex::new(Vec::new()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State<C>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tell(&self, change: &LeadershipChange) {
        let listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        for l in listeners.iter() {
            l(change);
        }
    }

    /// Adds a listener, called on each election of this contender (before
    /// `await_leadership` returns) and at the end of each term (when `lost` sees it,
    /// when a new `await_leadership` gives it up, or at `close`), in the caller's task.
    pub fn add_listener(&self, listener: impl Fn(&LeadershipChange) + Send + Sync + 'static) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.push(Box::new(listener));
    }

    /// Joins the election and waits until this contender leads; its term. A term still
    /// held (one whose leadership was lost on a disconnect) is given up first, its node
    /// deleted: leadership is never re-asserted on an old node. `Closed` once the latch
    /// is closed, also when the close comes while it waits.
    pub async fn await_leadership(&self) -> Result<Term, ElectionError> {
        let (signal, closed) = oneshot::channel();
        let old = {
            let mut s = self.state();
            if s.closed {
                return Err(ElectionError::Closed);
            }
            s.close_signal = Some(signal);
            s.held.take()
        };
        if let Some(old) = old {
            self.give_up(old, "given up to contend again").await?;
        }
        let guard = self
            .lock
            .acquire_until(async {
                let _ = closed.await;
            })
            .await?;
        let term = Term {
            epoch: guard.fencing_token().0,
            node: guard.path().to_owned(),
        };
        // Closed as the grant came: no leadership after close. Looked at and recorded
        // under one lock, so that a close cannot come between.
        let refused = {
            let mut s = self.state();
            s.close_signal = None;
            if s.closed {
                Some(guard)
            } else {
                s.held = Some(Arc::new(guard));
                None
            }
        };
        if let Some(guard) = refused {
            guard.release().await?;
            return Err(ElectionError::Closed);
        }
        self.tell(&LeadershipChange::IsLeader(term.clone()));
        Ok(term)
    }

    /// Whether this contender leads now, as far as it has observed: a term is held and
    /// its trust has not ended (Disconnected, Expired, our node deleted).
    pub fn has_leadership(&self) -> bool {
        let s = self.state();
        s.held.as_ref().is_some_and(|g| g.is_lost().is_none())
    }

    /// Resolves when the term held can no longer be trusted, with why (listeners hear
    /// `NotLeader`); `None` at once when no term is held. The node is not deleted: the
    /// next `await_leadership` or `close` does that.
    pub async fn lost(&self) -> Option<LostReason> {
        let held = self.state().held.clone()?;
        let reason = held.lost().await;
        self.tell(&LeadershipChange::NotLeader {
            reason: reason.to_string(),
        });
        Some(reason)
    }

    /// Leaves the election for good: wakes a contender that waits (its node is deleted
    /// before its `await_leadership` returns `Closed`), gives up a term held (deleting its
    /// node, retried through connection loss while the session lives), and every later
    /// call returns `Closed`.
    pub async fn close(&self) -> Result<(), ElectionError> {
        let (signal, held) = {
            let mut s = self.state();
            s.closed = true;
            (s.close_signal.take(), s.held.take())
        };
        if let Some(signal) = signal {
            let _ = signal.send(());
        }
        match held {
            Some(g) => self.give_up(g, "closed").await,
            None => Ok(()),
        }
    }

    /// Ends the term of `guard`: listeners hear `NotLeader`, the node is deleted.
    async fn give_up(&self, guard: Arc<LockGuard<C>>, why: &str) -> Result<(), ElectionError> {
        self.tell(&LeadershipChange::NotLeader { reason: why.into() });
        match Arc::try_unwrap(guard) {
            Ok(g) => Ok(g.release().await?),
            // A `lost` still awaits it: delete the node by its path; the guard, dropped
            // with that future, finds it gone.
            Err(shared) => {
                let c = self.lock.client();
                let policy = &self.lock.options().retry;
                delete_until_gone(c, policy, shared.path())
                    .await
                    .map_err(|e| ElectionError::Lock(e.into()))
            }
        }
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The client this latch uses.
    pub fn client(&self) -> &C {
        self.lock.client()
    }
}
