//! The recipes `zklock real --recipe NAME` runs on real servers: zklock's lock (the
//! default), its counting semaphore, and the canaries, each by the name `zklock recipes`
//! lists for the simulation, and a user's own ([`RealRecipes`], registered with
//! `CommandLine::real_recipe`). A shipped recipe plugs in here with a [`RealRecipeKind`]
//! variant and its run (a [`RealRecipe`] for [`run_recipe`], or a workload of its own) and
//! shape.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use zklock_canaries::{
    Bug, Canary, CanaryLock, ElectionBug, LEASE_OUTSIDE_LOCK, LEASE_OUTSIDE_LOCK_CAUGHT_BY,
    LeaseCanaryLock, QueueBug,
};
use zklock_checker::registry::{RegistryError, SHIPPED_NAME, check_name};
use zklock_real::RealError;
use zklock_real::faults::FaultConfig;
use zklock_real::recording::RecordingClient;
use zklock_real::servers::Servers;
use zklock_real::workload::{
    LatchRealRecipe, MakeLatch, QueueWorkload, RealRecipe, RealRun, SemaphoreRealRecipe,
    WorkloadConfig, run_queue, run_recipe, run_workload,
};
use zklock_recipe::election::ElectionUnderTest;
use zklock_recipe::history::LockRole;

/// Whether an election canary is of the latch's shape (the real runs drive latches only).
fn is_latch(bug: ElectionBug) -> bool {
    bug != ElectionBug::RequeueAfterCancel
}

/// The semaphore's name, as `zklock recipes` lists it.
pub const SEMAPHORE_NAME: &str = "semaphore";
/// The work queues' names, as `zklock recipes` lists them.
pub const QUEUE_NAME: &str = "queue";
pub const QUEUE_NAIVE_NAME: &str = "queue-naive";
/// The leader latch's name, as `zklock recipes` lists the simulated election's.
pub const ELECTION_LATCH_NAME: &str = "election-latch";

/// A work queue's run: producers among the clients, and items each adds
/// (`zklock real --producers --items`, bounded by `QueueWorkload::validate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueShape {
    pub producers: u32,
    pub items_per_producer: u32,
}

/// A recipe a real run can run, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealRecipeKind {
    /// zklock's lock: exclusive, or read/write with `--readers`.
    Shipped,
    /// zklock's counting semaphore of 2 leases, judged with `semaphore_leases`.
    Semaphore,
    /// A lock canary: the shipped lock with one known bug.
    Canary(Bug),
    /// The semaphore canary: a lease taken outside the inner lock.
    LeaseOutsideLock,
    /// The work queue: producers and consumers, herd-free or (`naive`) every idle consumer
    /// watching the whole queue, judged with the queue's properties.
    Queue { naive: bool },
    /// A work-queue canary: the herd-free consumer with one known bug.
    QueueCanary(QueueBug),
    /// zklock's leader latch, each hold a term of leadership ([`LatchRealRecipe`]),
    /// judged with the election's properties.
    ElectionLatch,
    /// An election canary of the latch's shape (every one but the selector's
    /// `RequeueAfterCancel`), run as the leader latch is.
    ElectionCanary(ElectionBug),
}

impl RealRecipeKind {
    /// Every recipe a real run takes, the shipped ones first.
    pub fn all() -> Vec<RealRecipeKind> {
        let mut all = vec![RealRecipeKind::Shipped, RealRecipeKind::Semaphore];
        all.extend(Bug::ALL.into_iter().map(RealRecipeKind::Canary));
        all.push(RealRecipeKind::LeaseOutsideLock);
        all.push(RealRecipeKind::Queue { naive: false });
        all.push(RealRecipeKind::Queue { naive: true });
        all.extend(QueueBug::ALL.into_iter().map(RealRecipeKind::QueueCanary));
        all.push(RealRecipeKind::ElectionLatch);
        all.extend(
            (ElectionBug::ALL.into_iter())
                .filter(|&bug| is_latch(bug))
                .map(RealRecipeKind::ElectionCanary),
        );
        all
    }

    /// The recipe of `name`; the error lists the names.
    pub fn parse(name: &str) -> Result<RealRecipeKind, String> {
        RealRecipeKind::all()
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = RealRecipeKind::all().iter().map(|k| k.name()).collect();
                format!(
                    "unknown recipe {name:?} for a real run (one of: {})",
                    names.join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            RealRecipeKind::Shipped => SHIPPED_NAME,
            RealRecipeKind::Semaphore => SEMAPHORE_NAME,
            RealRecipeKind::Canary(bug) => bug.name(),
            RealRecipeKind::LeaseOutsideLock => LEASE_OUTSIDE_LOCK,
            RealRecipeKind::Queue { naive: false } => QUEUE_NAME,
            RealRecipeKind::Queue { naive: true } => QUEUE_NAIVE_NAME,
            RealRecipeKind::QueueCanary(bug) => bug.name(),
            RealRecipeKind::ElectionLatch => ELECTION_LATCH_NAME,
            RealRecipeKind::ElectionCanary(bug) => bug.name(),
        }
    }

    /// Whether it is a work queue's run, judged with the queue's properties.
    pub fn is_queue(self) -> bool {
        matches!(
            self,
            RealRecipeKind::Queue { .. } | RealRecipeKind::QueueCanary(_)
        )
    }

    /// For a canary, the property it must violate: a run of it is a test that the
    /// checker catches it.
    pub fn must_violate(self) -> Option<&'static str> {
        match self {
            RealRecipeKind::Shipped
            | RealRecipeKind::Semaphore
            | RealRecipeKind::Queue { .. }
            | RealRecipeKind::ElectionLatch => None,
            RealRecipeKind::Canary(bug) => Some(bug.caught_by()),
            RealRecipeKind::LeaseOutsideLock => Some(LEASE_OUTSIDE_LOCK_CAUGHT_BY),
            RealRecipeKind::QueueCanary(bug) => Some(bug.caught_by()),
            RealRecipeKind::ElectionCanary(bug) => Some(bug.caught_by()),
        }
    }

    /// Whether its clients may take the read lock (`--readers`): the semaphore's all
    /// hold leases as readers of the resource.
    pub fn has_readers(self) -> bool {
        matches!(self, RealRecipeKind::Shipped | RealRecipeKind::Canary(_))
    }

    /// Whether its holders can be asked to give up (`--revokers`): zklock's lock only.
    pub fn is_revocable(self) -> bool {
        matches!(self, RealRecipeKind::Shipped)
    }

    /// Runs the workload with this recipe on `servers`; a queue's with `queue`'s roles and
    /// item count.
    pub async fn run(
        self,
        servers: Servers,
        workload: &WorkloadConfig,
        faults: &FaultConfig,
        queue: &QueueShape,
    ) -> Result<RealRun, RealError> {
        match self {
            RealRecipeKind::Shipped => run_workload(servers, workload, faults).await,
            RealRecipeKind::Semaphore => {
                run_recipe(servers, workload, faults, SemaphoreRealRecipe::default()).await
            }
            RealRecipeKind::Canary(bug) => {
                run_recipe(servers, workload, faults, RealCanary(bug)).await
            }
            RealRecipeKind::LeaseOutsideLock => {
                run_recipe(servers, workload, faults, RealLeaseCanary::default()).await
            }
            RealRecipeKind::ElectionLatch => {
                run_recipe(servers, workload, faults, LatchRealRecipe::default()).await
            }
            RealRecipeKind::ElectionCanary(bug) => {
                let make: MakeLatch = Arc::new(move |client, index, path: &str| {
                    match bug.contender(client, index, path) {
                        ElectionUnderTest::Latch(latch) => Ok(Arc::from(latch)),
                        other => Err(format!("{bug:?} is no latch: {other:?}")),
                    }
                });
                run_recipe(servers, workload, faults, LatchRealRecipe::of(make)).await
            }
            RealRecipeKind::Queue { .. } | RealRecipeKind::QueueCanary(_) => {
                let mut spec = match self {
                    RealRecipeKind::Queue { naive: true } => QueueWorkload::naive(),
                    RealRecipeKind::QueueCanary(bug) => QueueWorkload {
                        producer: Arc::new(move |c, paths| bug.producer(c, paths)),
                        ..QueueWorkload::new(Arc::new(move |c, paths| bug.consumer(c, paths)))
                    },
                    _ => QueueWorkload::herd_free(),
                };
                spec.producers = queue.producers;
                spec.items_per_producer = queue.items_per_producer;
                run_queue(servers, workload, faults, spec).await
            }
        }
    }
}

impl fmt::Display for RealRecipeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A real run of a user's recipe, its type erased so that recipes of any type sit in one
/// list (implemented for every shared [`RealRecipe`]).
pub trait UserRun: Send + Sync {
    fn run<'a>(
        &'a self,
        servers: Servers,
        workload: &'a WorkloadConfig,
        faults: &'a FaultConfig,
    ) -> Pin<Box<dyn Future<Output = Result<RealRun, RealError>> + 'a>>;
    fn leases(&self) -> Option<u32>;
}

impl<R: RealRecipe> UserRun for Arc<R> {
    fn run<'a>(
        &'a self,
        servers: Servers,
        workload: &'a WorkloadConfig,
        faults: &'a FaultConfig,
    ) -> Pin<Box<dyn Future<Output = Result<RealRun, RealError>> + 'a>> {
        // `run_recipe` takes its recipe by value: the registered one, shared.
        Box::pin(run_recipe(servers, workload, faults, Arc::clone(self)))
    }
    fn leases(&self) -> Option<u32> {
        RealRecipe::leases(self.as_ref())
    }
}

/// The real sides of a program's own recipes, by name, in registration order: with the
/// shipped ones ([`RealRecipeKind`]), what `real --recipe` and `search --lock` take. A
/// user's name comes first: one that is also a shipped recipe's runs the user's.
#[derive(Clone, Default)]
pub struct RealRecipes {
    user: Vec<(String, Arc<dyn UserRun>)>,
}

impl fmt::Debug for RealRecipes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.user.iter().map(|(name, _)| name))
            .finish()
    }
}

impl RealRecipes {
    /// Adds `recipe` under `name`: a new name, by the simulation's rule for names.
    pub fn register<R: RealRecipe>(
        &mut self,
        name: String,
        recipe: R,
    ) -> Result<(), RegistryError> {
        check_name(&name)?;
        if self.user.iter().any(|(n, _)| *n == name) {
            return Err(RegistryError::Duplicate { name });
        }
        self.user.push((name, Arc::new(Arc::new(recipe))));
        Ok(())
    }

    /// Every name a real run takes: the shipped recipes' not taken by a user's, then the
    /// user's.
    pub fn names(&self) -> Vec<&str> {
        let shipped = RealRecipeKind::all()
            .into_iter()
            .map(|k| -> &str { k.name() })
            .filter(|n| !self.user.iter().any(|(u, _)| u == n));
        shipped
            .chain(self.user.iter().map(|(n, _)| n.as_str()))
            .collect()
    }

    /// The recipe of `name`; the error lists the names.
    pub fn parse(&self, name: &str) -> Result<RealPick, String> {
        if let Some((n, run)) = self.user.iter().find(|(n, _)| n == name) {
            return Ok(RealPick::User(n.clone(), Arc::clone(run)));
        }
        RealRecipeKind::parse(name)
            .map(RealPick::Shipped)
            .map_err(|_| {
                format!(
                    "unknown recipe {name:?} for a real run (one of: {})",
                    self.names().join(", ")
                )
            })
    }
}

/// The recipe of a real run: a shipped one, or a program's own.
#[non_exhaustive]
#[derive(Clone)]
pub enum RealPick {
    Shipped(RealRecipeKind),
    User(String, Arc<dyn UserRun>),
}

impl fmt::Debug for RealPick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RealPick::Shipped(kind) => write!(f, "Shipped({kind:?})"),
            RealPick::User(name, _) => write!(f, "User({name:?})"),
        }
    }
}

impl RealPick {
    /// A program's own recipe, named `name`.
    pub fn user<R: RealRecipe>(name: String, recipe: R) -> RealPick {
        RealPick::User(name, Arc::new(Arc::new(recipe)))
    }

    /// The shipped recipe, if it is one.
    pub fn kind(&self) -> Option<RealRecipeKind> {
        match self {
            RealPick::Shipped(kind) => Some(*kind),
            RealPick::User(..) => None,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            RealPick::Shipped(kind) => kind.name(),
            RealPick::User(name, _) => name,
        }
    }

    /// See [`RealRecipeKind::is_queue`]: a user's recipe is a lock or a semaphore.
    pub fn is_queue(&self) -> bool {
        self.kind().is_some_and(RealRecipeKind::is_queue)
    }

    /// See [`RealRecipeKind::must_violate`]: a user's recipe is no canary of zklock's.
    pub fn must_violate(&self) -> Option<&'static str> {
        self.kind().and_then(RealRecipeKind::must_violate)
    }

    /// See [`RealRecipeKind::has_readers`]: a user's lock is given each client's role,
    /// and a semaphore's clients all hold leases as readers.
    pub fn has_readers(&self) -> bool {
        match self {
            RealPick::Shipped(kind) => kind.has_readers(),
            RealPick::User(_, run) => run.leases().is_none(),
        }
    }

    /// See [`RealRecipeKind::is_revocable`]: a user's lock may be revocable (a run whose
    /// revokers saw no holder give up says revocation was not checked).
    pub fn is_revocable(&self) -> bool {
        match self {
            RealPick::Shipped(kind) => kind.is_revocable(),
            RealPick::User(_, run) => run.leases().is_none(),
        }
    }

    /// Runs the workload with this recipe on `servers` (see [`RealRecipeKind::run`]).
    pub async fn run(
        &self,
        servers: Servers,
        workload: &WorkloadConfig,
        faults: &FaultConfig,
        queue: &QueueShape,
    ) -> Result<RealRun, RealError> {
        match self {
            RealPick::Shipped(kind) => kind.run(servers, workload, faults, queue).await,
            RealPick::User(_, run) => run.run(servers, workload, faults).await,
        }
    }
}

impl fmt::Display for RealPick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A lock canary on a real run: the simulation's canary lock on a recording client.
#[derive(Clone, Copy, Debug)]
struct RealCanary(Bug);

impl RealRecipe for RealCanary {
    type Lock = CanaryLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
        let index = client.index();
        Canary(self.0).lock_on(client, index, role, path)
    }
}

/// The semaphore canary on a real run, of the simulation's 2 leases.
#[derive(Clone, Copy, Debug)]
struct RealLeaseCanary {
    leases: u32,
}

impl Default for RealLeaseCanary {
    fn default() -> Self {
        RealLeaseCanary {
            leases: SemaphoreRealRecipe::default().leases,
        }
    }
}

impl RealRecipe for RealLeaseCanary {
    type Lock = LeaseCanaryLock<RecordingClient>;
    fn lock(&self, client: RecordingClient, _role: LockRole, path: &str) -> Self::Lock {
        LeaseCanaryLock::new(client, path, self.leases)
    }

    fn leases(&self) -> Option<u32> {
        Some(self.leases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_real_recipe_is_named_as_the_simulation_names_it() {
        for kind in RealRecipeKind::all() {
            assert_eq!(RealRecipeKind::parse(kind.name()), Ok(kind));
        }
        assert_eq!(
            RealRecipeKind::parse("canary-lease-outside-lock"),
            Ok(RealRecipeKind::LeaseOutsideLock)
        );
        assert_eq!(
            RealRecipeKind::LeaseOutsideLock.must_violate(),
            Some("semaphore_leases")
        );
        assert_eq!(RealRecipeKind::Semaphore.must_violate(), None);
        assert_eq!(
            RealRecipeKind::parse("queue-naive"),
            Ok(RealRecipeKind::Queue { naive: true })
        );
        assert_eq!(
            RealRecipeKind::parse("canary-queue-no-exists-check")
                .unwrap()
                .must_violate(),
            Some("queue_no_process_after_complete")
        );
        let latch = RealRecipeKind::parse(ELECTION_LATCH_NAME).unwrap();
        assert!(!latch.is_queue() && !latch.has_readers() && latch.must_violate().is_none());
        let e = RealRecipeKind::parse("queue-of-dreams").unwrap_err();
        assert!(e.contains("semaphore") && e.contains("zklock"), "{e}");
    }

    /// A program's own recipes join zklock's by name; one named as zklock's runs in its
    /// place, and is listed once.
    #[test]
    fn a_programs_own_recipes_are_taken_and_listed_beside_zklocks() {
        use zklock_real::workload::ShippedRealRecipe;
        let mut recipes = RealRecipes::default();
        recipes
            .register("mine".into(), ShippedRealRecipe::default())
            .unwrap();
        recipes
            .register(QUEUE_NAME.into(), SemaphoreRealRecipe::default())
            .unwrap();
        let again = recipes.register("mine".into(), ShippedRealRecipe::default());
        assert_eq!(
            again,
            Err(RegistryError::Duplicate {
                name: "mine".into()
            })
        );
        let names = recipes.names();
        assert_eq!(names.iter().filter(|&&n| n == QUEUE_NAME).count(), 1);
        assert_eq!(names.last(), Some(&QUEUE_NAME));
        assert!(names.contains(&SHIPPED_NAME) && names.contains(&"mine"));
        let queue = recipes.parse(QUEUE_NAME).unwrap();
        assert_eq!(queue.kind(), None);
        assert!(!queue.is_queue() && !queue.has_readers());
        let mine = recipes.parse("mine").unwrap();
        assert!(mine.has_readers() && mine.must_violate().is_none());
        assert_eq!(
            recipes.parse(SEMAPHORE_NAME).unwrap().kind(),
            Some(RealRecipeKind::Semaphore)
        );
        let e = recipes.parse("yours").unwrap_err();
        assert!(e.contains("\"yours\"") && e.contains("mine"), "{e}");
    }
}
