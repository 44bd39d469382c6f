//! zklock's leader latch on a real run, driven as a lock: an attempt joins the election
//! and waits to lead ([`LeaderLatch::await_leadership`]), a term is a hold (its token the
//! term's epoch, its node the leader's), and the hold's end leaves the election
//! ([`LeaderLatch::close`]), so that the next attempt joins again with a new latch.
//! Leadership recorded as holds is what the simulated election records, so the lock's
//! properties judge it as they judge the election in the simulation
//! (`zklock_checker::properties::election`), with `election_leader_owns_node` beside them.
//! `election_no_leadership_after_close` is not judged here: a run records a term's end as
//! a release, never a close while waiting. Any latch runs so ([`LatchRealRecipe::of`]):
//! the election's canaries do.

use super::RealRecipe;
use crate::recording::RecordingClient;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use zklock_recipe::election::{LatchUnderTest, LeaderLatch, Term};
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;
use zklock_recipe::under_test::LockUnderTest;

/// Makes client `index`'s latch on `path` (a new one for each time it joins).
pub type MakeLatch = Arc<
    dyn Fn(RecordingClient, u32, &str) -> Result<Arc<dyn LatchUnderTest>, String> + Send + Sync,
>;

/// zklock's [`LeaderLatch`], or another latch ([`LatchRealRecipe::of`]), each client a
/// contender on the run's lock path (every role the same: an election has no readers).
/// `real --recipe election-latch` runs zklock's.
#[derive(Clone, Default)]
pub struct LatchRealRecipe {
    /// The latches' lock options. Default: [`LockOptions::default`].
    pub options: LockOptions,
    /// The latch, when it is not zklock's.
    make: Option<MakeLatch>,
}

impl std::fmt::Debug for LatchRealRecipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatchRealRecipe")
            .field("options", &self.options)
            .field("own_latch", &self.make.is_none())
            .finish()
    }
}

impl LatchRealRecipe {
    /// The latches `make` makes, in place of zklock's.
    pub fn of(make: MakeLatch) -> LatchRealRecipe {
        LatchRealRecipe {
            options: LockOptions::default(),
            make: Some(make),
        }
    }
}

impl RealRecipe for LatchRealRecipe {
    type Lock = LatchLock;
    fn lock(&self, client: RecordingClient, _role: LockRole, path: &str) -> LatchLock {
        LatchLock {
            client,
            path: path.to_owned(),
            options: self.options.clone(),
            make: self.make.clone(),
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
    make: Option<MakeLatch>,
    latch: Mutex<Option<Arc<dyn LatchUnderTest>>>,
}

impl std::fmt::Debug for LatchLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatchLock")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A term of leadership: the latch that leads, and its term.
pub struct Leadership {
    latch: Arc<dyn LatchUnderTest>,
    term: Term,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("term", &self.term)
            .finish_non_exhaustive()
    }
}

impl LatchLock {
    /// The latch this contender is in the election with; a new one when it left.
    fn latch(&self) -> Result<Arc<dyn LatchUnderTest>, String> {
        let mut held = self.latch.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(latch) = &*held {
            return Ok(Arc::clone(latch));
        }
        let latch: Arc<dyn LatchUnderTest> = match &self.make {
            Some(make) => make(self.client.clone(), self.client.index(), &self.path)?,
            None => Arc::new(
                LeaderLatch::with_options(self.client.clone(), &self.path, self.options.clone())
                    .map_err(|e| e.to_string())?,
            ),
        };
        Ok(Arc::clone(held.insert(latch)))
    }

    /// Leaves the election: `latch` is closed (its node deleted) and forgotten, so that
    /// the next attempt joins with a new one.
    async fn leave(&self, latch: &Arc<dyn LatchUnderTest>) -> Result<(), String> {
        {
            let mut held = self.latch.lock().unwrap_or_else(PoisonError::into_inner);
            if held.as_ref().is_some_and(|l| Arc::ptr_eq(l, latch)) {
                *held = None;
            }
        }
        latch.close().await
    }
}

impl LockUnderTest for LatchLock {
    type Guard = Leadership;

    async fn acquire(&self) -> Result<Leadership, String> {
        let latch = self.latch()?;
        let term = latch.await_leadership().await?;
        Ok(Leadership { latch, term })
    }

    /// Waits at most `timeout` to lead, then leaves the election. A latch has no try: at
    /// a zero timeout it gives up once its first wait would block, which on a real server
    /// is always (it must create its node first).
    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, String> {
        let latch = self.latch()?;
        match tokio::time::timeout(timeout, latch.await_leadership()).await {
            Ok(term) => Ok(Some(Leadership { term: term?, latch })),
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
        guard.latch.lost().await
    }

    async fn release(&self, guard: Leadership) -> Result<(), String> {
        self.leave(&guard.latch).await
    }
}
