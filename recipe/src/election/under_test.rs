//! The election as zklock's runners drive it: object-safe traits, so that a runner holds
//! any latch or selector (the shipped ones, a canary, a user's) behind one type. Each
//! method is a call of the recipe's public API, so what a user calls is what runs under
//! `explore` and `check`. Errors are text: the runners record them in the history.

use super::{LeaderLatch, LeaderSelector, SelectorListener, Term};
use crate::Coordination;
use futures_util::future::BoxFuture;

/// A latch as the runners drive it.
pub trait LatchUnderTest: Send + Sync + 'static {
    /// Joins the election and waits until it leads ([`LeaderLatch::await_leadership`]).
    fn await_leadership(&self) -> BoxFuture<'_, Result<Term, String>>;
    /// Resolves when the term held can no longer be trusted, with why
    /// ([`LeaderLatch::lost`]); at once when none is held.
    fn lost(&self) -> BoxFuture<'_, String>;
    /// Leaves the election for good ([`LeaderLatch::close`]). The runner may call it while
    /// `await_leadership` waits: that call must then end without leadership.
    fn close(&self) -> BoxFuture<'_, Result<(), String>>;
}

/// A selector as the runners drive it.
pub trait SelectorUnderTest: Send + Sync + 'static {
    /// Queues, leads, gives up and queues again until cancelled ([`LeaderSelector::run`]).
    fn run<'a>(&'a self, listener: &'a dyn SelectorListener) -> BoxFuture<'a, Result<(), String>>;
    /// Stops it for good ([`LeaderSelector::cancel`]): no task runs after it.
    fn cancel(&self);
}

/// One contender of an election, in either shape.
pub enum ElectionUnderTest {
    Latch(Box<dyn LatchUnderTest>),
    Selector(Box<dyn SelectorUnderTest>),
}

impl std::fmt::Debug for ElectionUnderTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ElectionUnderTest::Latch(_) => "Latch",
            ElectionUnderTest::Selector(_) => "Selector",
        })
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> LatchUnderTest for LeaderLatch<C> {
    fn await_leadership(&self) -> BoxFuture<'_, Result<Term, String>> {
        Box::pin(async move {
            LeaderLatch::await_leadership(self)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn lost(&self) -> BoxFuture<'_, String> {
        Box::pin(async move {
            match LeaderLatch::lost(self).await {
                Some(reason) => format!("{reason:?}"),
                None => "not leading".into(),
            }
        })
    }
    fn close(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move { LeaderLatch::close(self).await.map_err(|e| e.to_string()) })
    }
}

impl<C: Coordination + Clone + Send + Sync + 'static> SelectorUnderTest for LeaderSelector<C> {
    fn run<'a>(&'a self, listener: &'a dyn SelectorListener) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            LeaderSelector::run(self, listener)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn cancel(&self) {
        LeaderSelector::cancel(self);
    }
}
