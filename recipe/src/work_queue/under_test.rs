//! The work queue as zklock's runners drive it: object-safe traits, so that a runner
//! holds any consumer (the shipped ones, a canary, a user's) behind one type. Errors are
//! text: the runners record them in the history.

use super::items::{delete_item, release_item};
use super::{Consumer, NaiveConsumer, Producer, Taken};
use crate::Coordination;
use crate::lock::RetryPolicy;
use futures_util::future::BoxFuture;

/// A consumer as the runners drive it: take an item (waiting while none is free),
/// process it while racing [`lost`](ConsumerUnderTest::lost), then complete it (delete
/// the item, still racing `lost`) and release its lock; or, once the trust is lost,
/// release the lock unprocessed.
pub trait ConsumerUnderTest: Send + Sync + 'static {
    /// Waits until the consumer holds an item's lock and may process the item.
    fn take(&self) -> BoxFuture<'_, Result<Taken, String>>;
    /// Resolves when the consumer can no longer trust its item's lock, with why.
    fn lost(&self) -> BoxFuture<'_, String>;
    /// Deletes the processed item, which completes it (its lock stays until
    /// [`release`](ConsumerUnderTest::release)). `Ok` only if this consumer's delete
    /// removed the item.
    fn complete<'a>(&'a self, taken: &'a Taken) -> BoxFuture<'a, Result<(), String>>;
    /// Deletes the item's lock: after completing it, or to give it back unprocessed.
    fn release(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>>;
}

/// A producer as the runners drive it.
pub trait ProducerUnderTest: Send + Sync + 'static {
    /// Adds an item; its name.
    fn produce(&self) -> BoxFuture<'_, Result<String, String>>;
}

impl<C: Coordination + Clone + Send + Sync + 'static> ConsumerUnderTest for Consumer<C> {
    fn take(&self) -> BoxFuture<'_, Result<Taken, String>> {
        Box::pin(async move { Consumer::take(self).await.map_err(|e| e.to_string()) })
    }
    fn lost(&self) -> BoxFuture<'_, String> {
        Box::pin(super::items::lost(self.client()))
    }
    fn complete<'a>(&'a self, taken: &'a Taken) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            delete_item(self.client(), self.paths(), &RetryPolicy::default(), taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn release(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            release_item(self.client(), &RetryPolicy::default(), &taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

impl<C: Coordination + Send + Sync + 'static> ConsumerUnderTest for NaiveConsumer<C> {
    fn take(&self) -> BoxFuture<'_, Result<Taken, String>> {
        Box::pin(async move { NaiveConsumer::take(self).await.map_err(|e| e.to_string()) })
    }
    fn lost(&self) -> BoxFuture<'_, String> {
        Box::pin(super::items::lost(self.client()))
    }
    fn complete<'a>(&'a self, taken: &'a Taken) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            delete_item(self.client(), self.paths(), &RetryPolicy::default(), taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn release(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            release_item(self.client(), &RetryPolicy::default(), &taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

impl<C: Coordination + Send + Sync + 'static> ProducerUnderTest for Producer<C> {
    fn produce(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            Producer::produce(self, b"")
                .await
                .map_err(|e| e.to_string())
        })
    }
}
