//! zookeeper-client's one-shot watchers as the recipe's [`Watch`].
//!
//! The recipe's `Watch` polls zookeeper-client's watcher itself ([`Watch::polled`]), so
//! the event wakes the recipe's task directly; a forwarding task would add a task switch
//! to every handoff. Polling alone would not keep ZooKeeper's ordering guarantee (a client
//! sees a watch event before the reply to any later request of its own): the recipe may
//! poll the later reply first. So every operation also *flushes* before handing its reply
//! over: it polls each pending watcher once and keeps the outcome of those whose event
//! has arrived. The session delivers the event before the later reply, so the flush always
//! finds it.

use crate::convert;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use zklock_recipe::{Watch, WatchSource, WatchedEvent, ZkError};
use zookeeper_client as zk;

type EventFuture = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// Told of each watch event as it arrives from zookeeper-client (a real run records it in
/// its history).
pub(crate) type WatchHook = Arc<dyn Fn(&WatchedEvent) + Send + Sync>;

/// One watch between zookeeper-client and the recipe.
struct Pending {
    /// `None` once the event arrived or the recipe dropped its `Watch` (dropping
    /// zookeeper-client's watcher also removes it from the session).
    event: Option<EventFuture>,
    /// The outcome a flush found, until the recipe's `Watch` takes it.
    outcome: Option<Result<WatchedEvent, ZkError>>,
    /// The waker of the recipe's last poll, which a flush polls with and wakes.
    waker: Option<Waker>,
    /// Told of the event when it arrives.
    hook: Option<WatchHook>,
}

impl Pending {
    /// Polls the event once and keeps its outcome if it has arrived. True when no event
    /// is awaited any more.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(event) = self.event.as_mut() else {
            return true;
        };
        match event.as_mut().poll(cx) {
            Poll::Pending => false,
            Poll::Ready(event) => {
                self.event = None;
                let outcome = convert::watch_outcome(event);
                if let (Ok(event), Some(hook)) = (&outcome, &self.hook) {
                    hook(event);
                }
                self.outcome = Some(outcome);
                true
            }
        }
    }
}

/// The recipe's end: its `Watch` polls this.
struct Source(Arc<Mutex<Pending>>);

impl WatchSource for Source {
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Result<WatchedEvent, ZkError>> {
        let mut pending = lock(&self.0);
        pending.poll_event(cx);
        match pending.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            // Polled again after its outcome was taken: nothing more can come.
            None if pending.event.is_none() => Poll::Ready(Err(ZkError::SessionClosed)),
            None => {
                if !pending
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    pending.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        let mut pending = lock(&self.0);
        pending.event = None;
        pending.outcome = None;
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
    hook: Mutex<Option<WatchHook>>,
}

impl std::fmt::Debug for WatchForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchForwarder")
            .field("pending", &lock(&self.pending).len())
            .finish()
    }
}

impl WatchForwarder {
    /// Turns a zookeeper-client watcher into a recipe `Watch`.
    pub(crate) fn forward(&self, watcher: zk::OneshotWatcher) -> Watch {
        self.forward_event(Box::pin(watcher.changed()))
    }

    /// Tells `hook` of every event of the watches forwarded from now on, as it arrives.
    pub(crate) fn set_hook(&self, hook: WatchHook) {
        *lock(&self.hook) = Some(hook);
    }

    fn forward_event(&self, event: EventFuture) -> Watch {
        let slot = Arc::new(Mutex::new(Pending {
            event: Some(event),
            outcome: None,
            waker: None,
            hook: lock(&self.hook).clone(),
        }));
        lock(&self.pending).push(Arc::clone(&slot));
        Watch::polled(Box::new(Source(slot)))
    }

    /// Fails every pending watch with `error`, events that arrived but were not taken
    /// too, and wakes the recipe where it waits: the session they were left on is over.
    pub(crate) fn fail_all(&self, error: &ZkError) {
        for slot in lock(&self.pending).drain(..) {
            let mut pending = lock(&slot);
            if pending.event.take().is_some() {
                pending.outcome = Some(Err(error.clone()));
                if let Some(waker) = pending.waker.take() {
                    waker.wake();
                }
            }
        }
    }

    /// Takes the outcome of every watch whose event has already arrived, and wakes the
    /// recipe if it waits on it. Called before a reply is handed to the recipe.
    pub(crate) fn flush(&self) {
        lock(&self.pending).retain(|slot| {
            let mut pending = lock(slot);
            // Before the recipe first polled there is no waker; its first poll registers
            // one (and finds any outcome kept here), so a no-op waker is safe.
            let waker = pending.waker.clone();
            let done = pending.poll_event(&mut Context::from_waker(
                waker.as_ref().unwrap_or(Waker::noop()),
            ));
            if done
                && pending.outcome.is_some()
                && let Some(waker) = waker
            {
                waker.wake();
            }
            !done
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;
    use tokio::sync::oneshot;
    use zklock_recipe::EventType;

    /// An event future the test fires by hand; `dropped` tells when the watch let go of it.
    fn event() -> (oneshot::Sender<zk::WatchedEvent>, EventFuture, Arc<()>) {
        let (tx, rx) = oneshot::channel();
        let alive = Arc::new(());
        let held = Arc::clone(&alive);
        let future = Box::pin(async move {
            let _held = held;
            rx.await.expect("the test keeps the sender")
        });
        (tx, future, alive)
    }

    #[derive(Default)]
    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn deleted() -> zk::WatchedEvent {
        zk::WatchedEvent::new(zk::EventType::NodeDeleted, "/a")
    }

    fn pending_count(forwarder: &WatchForwarder) -> usize {
        lock(&forwarder.pending).len()
    }

    #[test]
    fn the_hook_hears_each_event_once_as_it_arrives() {
        let forwarder = WatchForwarder::default();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        forwarder.set_hook(Arc::new(move |e: &WatchedEvent| {
            lock(&sink).push(e.clone());
        }));
        let (tx, future, _) = event();
        let _watch = forwarder.forward_event(future);
        forwarder.flush();
        assert!(lock(&heard).is_empty(), "nothing arrived yet");
        tx.send(deleted()).unwrap();
        forwarder.flush();
        forwarder.flush();
        let heard = lock(&heard).clone();
        assert_eq!(heard.len(), 1, "{heard:?}");
        assert_eq!(heard[0].event_type, EventType::NodeDeleted);
        assert_eq!(heard[0].path, "/a");
    }

    #[test]
    fn a_flush_keeps_an_arrived_event_for_a_watch_not_yet_polled() {
        let forwarder = WatchForwarder::default();
        let (tx, future, _) = event();
        let mut watch = forwarder.forward_event(future);
        forwarder.flush();
        assert_eq!(pending_count(&forwarder), 1, "nothing arrived yet");
        tx.send(deleted()).unwrap();
        forwarder.flush();
        assert_eq!(pending_count(&forwarder), 0);
        let expected = zklock_recipe::WatchedEvent {
            event_type: EventType::NodeDeleted,
            path: "/a".into(),
        };
        assert_eq!(watch.try_take(), Some(Ok(expected)));
    }

    #[test]
    fn a_flush_wakes_the_recipe_waiting_on_the_watch() {
        let forwarder = WatchForwarder::default();
        let (tx, future, _) = event();
        let mut watch = forwarder.forward_event(future);
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut watch).poll(&mut cx).is_pending());
        // The event arrives; the recipe is woken by the event's own channel here, and by
        // the flush when a reply's flush takes the event first.
        tx.send(deleted()).unwrap();
        let woken_by_event = counter.0.load(Ordering::SeqCst);
        forwarder.flush();
        assert_eq!(counter.0.load(Ordering::SeqCst), woken_by_event + 1);
        assert!(matches!(
            Pin::new(&mut watch).poll(&mut cx),
            Poll::Ready(Ok(ref e)) if e.event_type == EventType::NodeDeleted
        ));
    }

    #[test]
    fn failing_all_fails_pending_watches_and_wakes_their_waiters() {
        let forwarder = WatchForwarder::default();
        let (_tx, future, _) = event();
        let mut waiting = forwarder.forward_event(future);
        // An event that arrived but was not taken goes with the session too.
        let (arrived_tx, future, _) = event();
        let mut arrived = forwarder.forward_event(future);
        arrived_tx.send(deleted()).unwrap();
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut waiting).poll(&mut cx).is_pending());
        forwarder.fail_all(&ZkError::SessionExpired);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "the waiter was woken");
        assert_eq!(pending_count(&forwarder), 0);
        for watch in [&mut waiting, &mut arrived] {
            assert!(matches!(
                Pin::new(watch).poll(&mut cx),
                Poll::Ready(Err(ZkError::SessionExpired))
            ));
        }
    }

    #[test]
    fn a_dropped_watch_lets_go_of_the_watcher_at_once() {
        let forwarder = WatchForwarder::default();
        let (_tx, future, alive) = event();
        let watch = forwarder.forward_event(future);
        assert_eq!(Arc::strong_count(&alive), 2);
        drop(watch);
        assert_eq!(
            Arc::strong_count(&alive),
            1,
            "the watcher went with the watch"
        );
        forwarder.flush();
        assert_eq!(pending_count(&forwarder), 0);
    }
}
