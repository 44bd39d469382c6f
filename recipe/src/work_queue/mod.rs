//! A work queue with item locks, after ZooKeeper's queue recipe as consumers usually run
//! it: producers add items as persistent-sequential children of the queue directory
//! (`/queue/item-<guid>-0000000007`); a consumer takes an item by creating the ephemeral
//! node `/queue_lock/<item>`, checks that the item still exists (it may have been
//! completed between the consumer's listing and its lock), processes it, then deletes
//! the item and, last, its lock node. Item locks are ephemeral, so the item of a consumer
//! that crashed or whose session expired is taken again.
//!
//! Two consumers:
//! - [`NaiveConsumer`] watches the queue's children and every locked item's lock node,
//!   and on each change lists the queue again and tries every item in turn: every
//!   produce and every completion wakes every idle consumer (a herd).
//! - [`Consumer`] takes items only while it holds the queue's take lock (zklock's lock on
//!   `<lock dir>.take`, whose waiters each watch their predecessor): only that holder
//!   lists and watches the queue, plus the lock node of the lowest locked item, so a
//!   change wakes one consumer.
//!
//! Both create items' locks with recovery from lost replies (a lock node found after a
//! ConnectionLoss is ours if its ephemeral owner is our session), and [`Producer`] names
//! its items with a guid so that a lost create reply never makes a second item.
//!
//! ```
//! use zklock_recipe::work_queue::{Consumer, Producer, QueueError, QueuePaths};
//! use zklock_sim::{SimConfig, run};
//!
//! let left = run(SimConfig::with_seed(7), |sim| async move {
//!     let paths = QueuePaths::default(); // /queue and /queue_lock
//!     let producer = Producer::new(sim.client(), &paths)?;
//!     let consumer = Consumer::new(sim.client(), &paths)?;
//!     let item = producer.produce(b"job").await?;
//!     let taken = consumer.take().await?;
//!     assert_eq!(taken.item, item);
//!     // ... process the item, then:
//!     consumer.complete(taken).await?;
//!     Ok::<_, QueueError>((sim.server_children("/queue"), sim.server_children("/queue_lock")))
//! })
//! .expect("the simulation ran to the end")
//! .expect("the queue calls succeeded");
//! assert_eq!(left, (vec![], vec![])); // the item is done and its lock gone
//! ```

mod consumer;
mod error;
pub mod items;
mod naive;
mod producer;
pub mod under_test;

pub use consumer::Consumer;
pub use error::QueueError;
pub use items::{QueuePaths, Taken};
pub use naive::NaiveConsumer;
pub use producer::Producer;
pub use under_test::{ConsumerUnderTest, ProducerUnderTest};
