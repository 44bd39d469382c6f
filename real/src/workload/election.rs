//! zklock's leader latch on a real run, driven as a lock: an attempt joins the election
//! and waits to lead ([`LeaderLatch::await_leadership`]), a term is a hold (its token the
//! term's epoch, its node the leader's), and the hold's end leaves the election
//! ([`LeaderLatch::close`]), so that the next attempt joins again with a new latch.
//! Leadership recorded as holds is what the simulated election records, so the lock's
//! properties judge it as they judge the election in the simulation
//! (`zklock_checker::properties::election`), with `election_leader_owns_node` beside them.
//! `election_no_leadership_after_close` is not judged here: a run records a term's end as
//! a release, never a close while waiting.

use super::RealRecipe;
use crate::recording::RecordingClient;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use zklock_recipe::election::{LeaderLatch, Term};
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::LockUnderTest;

/// zklock's [`LeaderLatch`], each client a contender on the run's lock path (every role
/// the same: an election has no readers). `real --recipe election-latch` runs it.
#[derive(Clone, Debug, Default)]
pub struct LatchRealRecipe {
    /// The latches' lock options. Default: [`LockOptions::default`].
    pub options: LockOptions,
}

impl RealRecipe for LatchRealRecipe {
    type Lock = LatchLock;
    fn lock(&self, client: RecordingClient, _role: LockRole, path: &str) -> LatchLock {
        LatchLock {
            client,
            path: path.to_owned(),
            options: self.options.clone(),
            latch: Mutex::new(None),
        }
    }
    /// A term's epoch is its node's czxid.
    fn tokens_are_czxids(&self) -> bool {
        true
    }
    fn election(&self) -> bool {
        true
    }
}

/// One client session's contender: the latch it is in the election with, if any.
pub struct LatchLock {
    client: RecordingClient,
    path: String,
    options: LockOptions,
    latch: Mutex<Option<Arc<LeaderLatch<RecordingClient>>>>,
}

impl std::fmt::Debug for LatchLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatchLock")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A term of leadership: the latch that leads, and its term.
#[derive(Debug)]
pub struct Leadership {
    latch: Arc<LeaderLatch<RecordingClient>>,
    term: Term,
}

impl LatchLock {
    /// The latch this contender is in the election with; a new one when it left.
    fn latch(&self) -> Result<Arc<LeaderLatch<RecordingClient>>, String> {
        let mut held = self.latch.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(latch) = &*held {
            return Ok(Arc::clone(latch));
        }
        let latch =
            LeaderLatch::with_options(self.client.clone(), &self.path, self.options.clone())
                .map_err(|e| e.to_string())?;
        Ok(Arc::clone(held.insert(Arc::new(latch))))
    }

    /// Leaves the election: `latch` is closed (its node deleted) and forgotten, so that
    /// the next attempt joins with a new one.
    async fn leave(&self, latch: &Arc<LeaderLatch<RecordingClient>>) -> Result<(), String> {
        {
            let mut held = self.latch.lock().unwrap_or_else(PoisonError::into_inner);
            if held.as_ref().is_some_and(|l| Arc::ptr_eq(l, latch)) {
                *held = None;
            }
        }
        latch.close().await.map_err(|e| e.to_string())
    }
}

impl LockUnderTest for LatchLock {
    type Guard = Leadership;

    async fn acquire(&self) -> Result<Leadership, String> {
        let latch = self.latch()?;
        let term = latch.await_leadership().await.map_err(|e| e.to_string())?;
        Ok(Leadership { latch, term })
    }

    /// Waits at most `timeout` to lead, then leaves the election. A latch has no try: at
    /// a zero timeout it gives up once its first wait would block, which on a real server
    /// is always (it must create its node first).
    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, String> {
        let latch = self.latch()?;
        match tokio::time::timeout(timeout, latch.await_leadership()).await {
            Ok(term) => Ok(Some(Leadership {
                term: term.map_err(|e| e.to_string())?,
                latch,
            })),
            Err(_) => {
                self.leave(&latch).await?;
                Ok(None)
            }
        }
    }

    fn token(&self, guard: &Leadership) -> i64 {
        guard.term.epoch
    }

    fn node(&self, guard: &Leadership) -> String {
        guard.term.node.clone()
    }

    async fn lost<'a>(&'a self, guard: &'a Leadership) -> String {
        match guard.latch.lost().await {
            Some(reason) => reason.to_string(),
            // No term held: its end was already seen.
            None => "not leading".into(),
        }
    }

    async fn release(&self, guard: Leadership) -> Result<(), String> {
        self.leave(&guard.latch).await
    }
}
