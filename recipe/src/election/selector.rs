//! The leader selector: takes leadership through the lock, runs the user's task, gives
//! leadership up and queues again.

use super::{ElectionError, Term};
use crate::Coordination;
use crate::lock::{Lock, LockOptions};
use futures_channel::oneshot;
use futures_util::future::{BoxFuture, Either, select};
use std::pin::pin;
use std::sync::{Mutex, MutexGuard};

/// What a [`LeaderSelector`] calls, in its caller's task, as Curator's
/// `LeaderSelectorListener` is called. Only [`lead`](SelectorListener::lead) does work;
/// the others say where the selector is, so that a caller (or zklock's workload, which
/// records each step) can follow it.
pub trait SelectorListener: Send + Sync {
    /// The selector queues for leadership (again).
    fn queued(&self) {}
    /// Queuing ended without leadership, with why (cancelled, the session ended, an
    /// error); no task runs for it.
    fn not_elected(&self, _reason: &str) {}
    /// The task of one term: leadership is held while it runs. The selector drops it at
    /// its next await point when leadership is lost or the selector is cancelled.
    fn lead<'a>(&'a self, term: &'a Term) -> BoxFuture<'a, ()>;
    /// The task was stopped before it ended, with why.
    fn interrupted(&self, _reason: &str) {}
    /// The term ends: the selector is about to give leadership up (delete its node).
    fn relinquishing(&self) {}
    /// Leadership was given up: `Ok` once the node is gone.
    fn relinquished(&self, _result: Result<(), &ElectionError>) {}
}

/// A leader selector on an election path: see the [module docs](super) for what it does
/// on Disconnected, Expired and cancel.
pub struct LeaderSelector<C: Coordination> {
    lock: Lock<C>,
    cancel: Mutex<Cancel>,
}

#[derive(Default)]
struct Cancel {
    cancelled: bool,
    /// Wakes whatever waits on the cancel now (a queued contender, a running task).
    signals: Vec<oneshot::Sender<()>>,
}

impl<C: Coordination + Clone> std::fmt::Debug for LeaderSelector<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector")
            .field("path", &self.lock.path())
            .finish_non_exhaustive()
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LeaderSelector<C> {
    /// A selector on election path `path` (created, with its ancestors, when missing);
    /// fails on an invalid path.
    pub fn new(client: C, path: &str) -> Result<LeaderSelector<C>, ElectionError> {
        LeaderSelector::with_options(client, path, LockOptions::default())
    }

    /// A selector with the lock's options ([`LockOptions`]).
    pub fn with_options(
        client: C,
        path: &str,
        options: LockOptions,
    ) -> Result<LeaderSelector<C>, ElectionError> {
        Ok(LeaderSelector {
            lock: Lock::new(client, path, options)?,
            cancel: Mutex::new(Cancel::default()),
        })
    }

    fn cancel_state(&self) -> MutexGuard<'_, Cancel> {
        self.cancel.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A future that resolves once the selector is cancelled (at once if it is).
    fn cancelled(&self) -> impl std::future::Future<Output = ()> + Send + use<C> {
        let (signal, fired) = oneshot::channel();
        let mut c = self.cancel_state();
        if c.cancelled {
            let _ = signal.send(());
        } else {
            c.signals.push(signal);
        }
        async move {
            let _ = fired.await;
        }
    }

    /// Whether [`cancel`](LeaderSelector::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancel_state().cancelled
    }

    /// Stops the selector for good: a queued contender leaves the queue (its node
    /// deleted), a running task is dropped and leadership given up, and no term starts
    /// after it. [`run`](LeaderSelector::run) then returns `Ok`.
    pub fn cancel(&self) {
        let signals = {
            let mut c = self.cancel_state();
            c.cancelled = true;
            std::mem::take(&mut c.signals)
        };
        for s in signals {
            let _ = s.send(());
        }
    }

    /// Queues, leads by running `listener`'s task, gives leadership up, and queues again,
    /// until cancelled (`Ok`) or the lock fails (the session's end: the error). A task
    /// is stopped when its leadership is lost (Disconnected, Expired, its node deleted)
    /// or the selector is cancelled; leadership is given up either way before the next
    /// term.
    pub async fn run(&self, listener: &dyn SelectorListener) -> Result<(), ElectionError> {
        loop {
            if self.is_cancelled() {
                return Ok(());
            }
            listener.queued();
            let guard = match self.lock.acquire_until(self.cancelled()).await {
                Ok(g) => g,
                Err(e) => {
                    let e = ElectionError::from(e);
                    listener.not_elected(&e.to_string());
                    return match e {
                        ElectionError::Closed => Ok(()),
                        e => Err(e),
                    };
                }
            };
            if self.is_cancelled() {
                // Cancelled as the grant came: no task after cancel.
                listener.not_elected(&ElectionError::Closed.to_string());
                guard.release().await?;
                return Ok(());
            }
            let term = Term {
                epoch: guard.fencing_token().0,
                node: guard.path().to_owned(),
            };
            let stopped = {
                let task = pin!(listener.lead(&term));
                let lost = pin!(guard.lost());
                let cancelled = pin!(self.cancelled());
                match select(task, select(lost, cancelled)).await {
                    Either::Left(((), _)) => None,
                    Either::Right((Either::Left((reason, _)), _)) => Some(reason.to_string()),
                    Either::Right((Either::Right(((), _)), _)) => {
                        Some(ElectionError::Closed.to_string())
                    }
                }
            };
            if let Some(reason) = stopped {
                listener.interrupted(&reason);
            }
            listener.relinquishing();
            let released = guard.release().await.map_err(ElectionError::from);
            listener.relinquished(released.as_ref().map(|_| ()));
            released?;
        }
    }

    /// The election path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The client this selector uses.
    pub fn client(&self) -> &C {
        self.lock.client()
    }
}
