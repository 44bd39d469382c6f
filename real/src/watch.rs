//! Forwarding zookeeper-client's one-shot watchers into the recipe's [`Watch`].
//!
//! Each watch gets a spawned task that waits for the event and fires the recipe's `Watch`.
//! A task alone would not keep ZooKeeper's ordering guarantee (a client sees a watch event
//! before the reply to any later request of its own): the task may run after the recipe
//! already saw that later reply. So every operation also *flushes* before handing its reply
//! over: it polls each pending watcher once and fires those whose event has arrived. The
//! session delivers the event before the later reply, so the flush always finds it.

use crate::convert;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use zklock_recipe::{Watch, WatchSender};
use zookeeper_client as zk;

/// How often a waiting forwarder checks whether the recipe dropped its `Watch`, so that an
/// abandoned watch does not hold a task and a server-side watch until the session ends.
const ABANDON_CHECK_INTERVAL: Duration = Duration::from_secs(1);

type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// One watch on its way from zookeeper-client to the recipe.
struct Pending {
    /// `None` once the event was delivered or the watch abandoned.
    event: Option<EventFuture>,
    sender: Option<WatchSender>,
    /// The forwarder task's waker. A flush polls with it, so the task stays the one woken.
    waker: Option<Waker>,
}

impl Pending {
    fn is_done(&self) -> bool {
        self.event.is_none()
    }

    fn abandon_if_dropped(&mut self) {
        if self.sender.as_ref().is_none_or(WatchSender::is_abandoned) {
            // Dropping zookeeper-client's watcher also removes it from the session.
            self.event = None;
            self.sender = None;
        }
    }

    /// Polls the event once and delivers it if it has arrived. True when nothing is left.
    fn poll_deliver(&mut self, cx: &mut Context<'_>) -> bool {
        self.abandon_if_dropped();
        let Some(event) = self.event.as_mut() else {
            return true;
        };
        match event.as_mut().poll(cx) {
            Poll::Pending => false,
            Poll::Ready(event) => {
                self.event = None;
                if let Some(sender) = self.sender.take() {
                    match convert::watch_outcome(event) {
                        Ok(event) => sender.fire(event),
                        Err(error) => sender.fail(error),
                    }
                }
                true
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves the data consistent (every update is a single assignment).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The pending watches of one client.
#[derive(Default)]
pub(crate) struct WatchForwarder {
    pending: Mutex<Vec<Arc<Mutex<Pending>>>>,
}

impl std::fmt::Debug for WatchForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchForwarder")
            .field("pending", &lock(&self.pending).len())
            .finish()
    }
}

impl WatchForwarder {
    /// Turns a zookeeper-client watcher into a recipe `Watch`. Must run inside a tokio
    /// runtime.
    pub(crate) fn forward(&self, watcher: zk::OneshotWatcher) -> Watch {
        let (sender, watch) = Watch::channel();
        let slot = Arc::new(Mutex::new(Pending {
            event: Some(Box::pin(watcher.changed())),
            sender: Some(sender),
            waker: None,
        }));
        lock(&self.pending).push(Arc::clone(&slot));
        tokio::spawn(async move {
            loop {
                let delivered = poll_fn(|cx| {
                    let mut pending = lock(&slot);
                    pending.waker = Some(cx.waker().clone());
                    if pending.poll_deliver(cx) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                });
                if tokio::time::timeout(ABANDON_CHECK_INTERVAL, delivered)
                    .await
                    .is_ok()
                {
                    return;
                }
                let mut pending = lock(&slot);
                pending.abandon_if_dropped();
                if pending.is_done() {
                    return;
                }
            }
        });
        watch
    }

    /// Fires every watch whose event has already arrived. Called before a reply is handed
    /// to the recipe.
    pub(crate) fn flush(&self) {
        lock(&self.pending).retain(|slot| {
            let mut pending = lock(slot);
            // Before its task first ran there is no task waker; the task polls (and so
            // registers itself) when it runs, so a no-op waker is safe here.
            let waker = pending
                .waker
                .clone()
                .unwrap_or_else(|| Waker::noop().clone());
            !pending.poll_deliver(&mut Context::from_waker(&waker))
        });
    }
}
