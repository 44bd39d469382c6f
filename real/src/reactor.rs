//! Running clients on the thread of async-io's reactor, where zookeeper-client does its
//! socket IO.
//!
//! zookeeper-client reads and writes its socket through async-io, whose reactor runs on a
//! thread of its own unless some thread is inside [`async_io::block_on`]. Under a tokio
//! runtime every reply therefore crosses from that thread to a tokio worker (a futex wake)
//! before the session task, and then the caller, see it. [`block_on`] removes the crossing:
//! the calling thread drives the reactor, and it also polls zookeeper-client's session
//! tasks and the given future. On the benchmark machine (2 shared cores, the server on the
//! same cores), four contending clients awaiting their releases used about half the
//! client CPU per acquisition this way, and made 12% and 46% more acquisitions per second
//! in two runs (`zklock bench --real-executor tokio` against the default).
//!
//! What still needs tokio gets it from `runtime`, which [`block_on`] enters: timers, and
//! [`ZkClient`](crate::ZkClient)'s state task (spawned onto the runtime's workers; it is
//! not on a request's path).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use zklock_real::ZkClient;
//! use zklock_recipe::Coordination;
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! let found = zklock_real::reactor::block_on(&runtime, async {
//!     let client = ZkClient::connect("127.0.0.1:2181", 10_000, 10_000).await?;
//!     let found = client.exists("/").await.is_ok();
//!     client.close().await.ok();
//!     Ok::<_, zklock_real::RealError>(found)
//! })?;
//! assert!(found);
//! # Ok(())
//! # }
//! ```

use std::cell::Cell;
use std::future::Future;

/// Runs `future` to completion on the calling thread, which drives async-io's reactor
/// meanwhile, inside `runtime`'s context. Tasks that zookeeper-client spawns during the
/// call (each session's IO task) run on this thread too, and end with the call: clients
/// connected inside must be closed or dropped inside. So does the background cleanup of a
/// client connected inside (`release_in_background`, dropped guards): it awaits its
/// replies here, and stops with the call (the deletes it already sent still reach the
/// server).
///
/// `future` may use `tokio::task::spawn_local`. Must not be called from inside an async
/// task (it blocks the thread).
pub fn block_on<F: Future>(runtime: &tokio::runtime::Runtime, future: F) -> F::Output {
    let _inside = Inside::enter();
    let _context = runtime.enter();
    // zookeeper-client spawns through `spawns`, which asks this thread's spawner first.
    let _spawner = spawns::enter(&LocalSpawner);
    let local = tokio::task::LocalSet::new();
    async_io::block_on(local.run_until(future))
}

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is inside [`block_on`]. A [`ZkClient`](crate::ZkClient)
/// connected there keeps its background cleanup there too (`spawn_local`), next to its
/// session task, instead of handing each reply to a tokio worker.
pub(crate) fn inside() -> bool {
    INSIDE.with(Cell::get)
}

/// Marks the thread as inside [`block_on`] until dropped (restoring the previous mark,
/// so that nested calls unwind correctly).
struct Inside {
    before: bool,
}

impl Inside {
    fn enter() -> Inside {
        Inside {
            before: INSIDE.with(|inside| inside.replace(true)),
        }
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|inside| inside.set(self.before));
    }
}

/// Spawns onto the [`tokio::task::LocalSet`] that [`block_on`] is running.
#[derive(Debug)]
struct LocalSpawner;

impl spawns::Spawn for LocalSpawner {
    fn spawn(&self, task: spawns::Task) {
        drop(tokio::task::spawn_local(Box::into_pin(task.future)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_zookeeper_client_spawns_runs_on_the_calling_thread() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let caller = std::thread::current().id();
        let ran_on = block_on(&runtime, async {
            // The spawn zookeeper-client makes for each session (asyncs is `spawns`).
            spawns::spawn(async { std::thread::current().id() })
                .await
                .unwrap()
        });
        assert_eq!(ran_on, caller);
        // Outside the call the same spawn goes to the runtime's worker thread.
        let _context = runtime.enter();
        let elsewhere = runtime
            .block_on(async { spawns::spawn(async { std::thread::current().id() }).await })
            .unwrap();
        assert_ne!(elsewhere, caller);
    }
}
