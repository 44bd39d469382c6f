//! The recipes a real run drives: what a recipe provides per client session, and zklock's shipped lock.

use super::*;

/// Makes one lock per client session of a real run: the recipe under test, as
/// `zklock_sim::Recipe` makes them for simulated clients. Implement it for a recipe of
/// your own, or a changed copy of the shipped one, and [`run_recipe`] runs it on real
/// servers with the same workload and faults as the shipped recipe.
///
/// ```
/// use zklock_real::recording::RecordingClient;
/// use zklock_real::workload::RealRecipe;
/// use zklock_recipe::history::LockRole;
/// use zklock_recipe::lock::LockOptions;
/// use zklock_recipe::under_test::ShippedLock;
///
/// /// zklock's lock with options of your own.
/// struct Mine(LockOptions);
///
/// impl RealRecipe for Mine {
///     type Lock = ShippedLock<RecordingClient>;
///     fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
///         ShippedLock::new(client, role, path, self.0.clone()).expect("a valid path")
///     }
/// }
/// ```
pub trait RealRecipe: Send + Sync + 'static {
    type Lock: LockUnderTest;
    /// The lock object client `client` uses in role `role` on directory `path` (a valid
    /// path: the run checks it first). Called again with the new session's client when a
    /// client opens a new session after an expiry.
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock;

    /// A new lock object for the same client session as `current`, for an attempt that
    /// uses a fresh lock object ([`WorkloadConfig::fresh_lock_every`]): it knows nothing of
    /// what `current` left behind. Default: [`lock`](RealRecipe::lock) again. (A driver's
    /// lock asks its process for a new library lock object instead of a new process.)
    fn fresh_lock(
        &self,
        current: &Self::Lock,
        client: RecordingClient,
        role: LockRole,
        path: &str,
    ) -> Self::Lock {
        let _ = current;
        self.lock(client, role, path)
    }

    /// The directory whose children are the lock's nodes, read when the run ends for
    /// orphans. Default: the lock path itself. (Curator's semaphores keep their nodes in
    /// `<path>/leases` and `<path>/locks`.)
    fn nodes_dir(&self, lock_path: &str) -> String {
        lock_path.to_owned()
    }

    /// `Some(n)` for a counting semaphore of `n` leases (1 to
    /// `zklock_recipe::semaphore::LEASES_MAX`): every client then holds a lease as a reader
    /// of the resource, whatever its role, and the run is judged with `semaphore_leases`.
    /// Default `None`: a lock.
    fn leases(&self) -> Option<u32> {
        None
    }

    /// The tokens its locks report are their nodes' czxids, as the shipped recipes' and
    /// the drivers' are: the checker's `fifo` then tells a node made earlier by its token,
    /// so that a directory ZooKeeper deleted and made again mid-run (an empty container,
    /// such as Curator's) is not read as a node passed over. Default `false`: sequence
    /// order alone.
    fn tokens_are_czxids(&self) -> bool {
        false
    }

    /// Whether its locks are a leader election's contenders, each hold a term of
    /// leadership ([`LatchRealRecipe`]): the run is judged with the election's own
    /// property too. Default `false`.
    fn election(&self) -> bool {
        false
    }

    /// Called with each of a client's lock objects when the client is done with its
    /// script, before the objects are kept, idle, until the run has been read, and with
    /// the lock of an attempt that gave up before the client idles
    /// ([`WorkloadConfig::idle_after_give_up_ms`]): what its cancelled acquires may still
    /// hold is given back here, as its next acquire would have. It may be cut short (at
    /// the idle's end): a later call, or the next acquire, takes up what is left.
    /// Default: nothing. (A driver's lock releases a hold its library took after the
    /// acquire was cancelled.)
    fn retire(&self, lock: &Self::Lock) -> impl std::future::Future<Output = ()> + Send {
        let _ = lock;
        async {}
    }

    /// Called once before the clients start, with where each connects and its process's
    /// switches: a recipe whose locks run in processes of their own
    /// ([`crate::driver`]) starts them here. Default: nothing.
    fn start(
        &self,
        run: &RunStart,
    ) -> impl std::future::Future<Output = Result<(), RealError>> + Send {
        let _ = run;
        async { Ok(()) }
    }
}

/// A recipe behind an [`Arc`] runs as the recipe itself does: one registered recipe serves
/// every run of a search. Every method is forwarded; a method the trait gains is forwarded
/// here too, next to its definition, or the shared recipe would take its default.
impl<R: RealRecipe> RealRecipe for Arc<R> {
    type Lock = R::Lock;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        R::lock(self, client, role, path)
    }
    fn fresh_lock(
        &self,
        current: &Self::Lock,
        client: RecordingClient,
        role: LockRole,
        path: &str,
    ) -> Self::Lock {
        R::fresh_lock(self, current, client, role, path)
    }
    fn nodes_dir(&self, lock_path: &str) -> String {
        R::nodes_dir(self, lock_path)
    }
    fn leases(&self) -> Option<u32> {
        R::leases(self)
    }
    fn tokens_are_czxids(&self) -> bool {
        R::tokens_are_czxids(self)
    }
    fn election(&self) -> bool {
        R::election(self)
    }
    fn retire(&self, lock: &Self::Lock) -> impl std::future::Future<Output = ()> + Send {
        R::retire(self, lock)
    }
    fn start(
        &self,
        run: &RunStart,
    ) -> impl std::future::Future<Output = Result<(), RealError>> + Send {
        R::start(self, run)
    }
}

/// What [`RealRecipe::start`] is given, per client (by index).
#[derive(Debug)]
pub struct RunStart {
    /// Where each client connects (its proxies, or the servers).
    pub connect: Vec<String>,
    /// Each client's process switches (pause, crash).
    pub processes: Vec<Arc<ProcessControl>>,
    /// Each client's role.
    pub roles: Vec<LockRole>,
    pub lock_path: String,
    pub session_timeout_ms: u64,
    pub recorder: Arc<Recorder>,
}

/// zklock's shipped lock on a real run: the exclusive lock, or the read/write lock's
/// sides for readers and writers.
#[derive(Clone, Debug, Default)]
pub struct ShippedRealRecipe {
    pub options: LockOptions,
}

impl RealRecipe for ShippedRealRecipe {
    type Lock = ShippedLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        ShippedLock::new(client, role, path, self.options.clone())
            .expect("the workload's lock path was validated")
    }
    fn tokens_are_czxids(&self) -> bool {
        true
    }
}
