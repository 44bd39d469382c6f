//! The work queue as zklock's runners drive it: object-safe traits, so that a runner
//! holds any consumer (the shipped ones, a canary, a user's) behind one type. Each method
//! is a call of the consumer's public API, so that what a user calls is what runs under
//! `explore`, `check` and `real`. Errors are text: the runners record them in the history.

use super::{Consumer, NaiveConsumer, Producer, Taken};
use crate::Coordination;
use futures_util::future::BoxFuture;

/// A consumer as the runners drive it: take an item (waiting while none is free),
/// process it while racing [`lost`](ConsumerUnderTest::lost), then
/// [`complete`](ConsumerUnderTest::complete) it, still racing `lost`; or, once the trust
/// is lost, [`abandon`](ConsumerUnderTest::abandon) it.
pub trait ConsumerUnderTest: Send + Sync + 'static {
    /// Waits until the consumer holds an item's lock and may process the item.
    fn take(&self) -> BoxFuture<'_, Result<Taken, String>>;
    /// Resolves when the consumer can no longer trust its item's lock, with why.
    fn lost(&self) -> BoxFuture<'_, String>;
    /// Completes the processed item: deletes it, then its lock. `Ok` only if this
    /// consumer's delete removed the item and its lock is gone.
    fn complete(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>>;
    /// Gives the item back unprocessed: deletes its lock.
    fn abandon(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>>;
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
    fn complete(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            Consumer::complete(self, taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn abandon(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            Consumer::abandon(self, taken)
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
    fn complete(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            NaiveConsumer::complete(self, taken)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn abandon(&self, taken: Taken) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            NaiveConsumer::abandon(self, taken)
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
