//! The recipes `zklock real --recipe NAME` runs on real servers: zklock's lock (the
//! default), its counting semaphore, and the canaries, each by the name `zklock recipes`
//! lists for the simulation. A recipe plugs in here with a [`RealRecipeKind`] variant and
//! its run (a [`RealRecipe`] for [`run_recipe`], or a workload of its own) and shape.

use std::fmt;
use std::sync::Arc;
use zklock_canaries::{
    Bug, Canary, CanaryLock, LEASE_OUTSIDE_LOCK, LEASE_OUTSIDE_LOCK_CAUGHT_BY, LeaseCanaryLock,
    QueueBug,
};
use zklock_checker::registry::SHIPPED_NAME;
use zklock_real::RealError;
use zklock_real::faults::FaultConfig;
use zklock_real::recording::RecordingClient;
use zklock_real::servers::Servers;
use zklock_real::workload::{
    QueueWorkload, RealRecipe, RealRun, SemaphoreRealRecipe, WorkloadConfig, run_queue, run_recipe,
    run_workload,
};
use zklock_recipe::history::LockRole;

/// The semaphore's name, as `zklock recipes` lists it.
pub const SEMAPHORE_NAME: &str = "semaphore";
/// The work queues' names, as `zklock recipes` lists them.
pub const QUEUE_NAME: &str = "queue";
pub const QUEUE_NAIVE_NAME: &str = "queue-naive";

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
            RealRecipeKind::Shipped | RealRecipeKind::Semaphore | RealRecipeKind::Queue { .. } => {
                None
            }
            RealRecipeKind::Canary(bug) => Some(bug.caught_by()),
            RealRecipeKind::LeaseOutsideLock => Some(LEASE_OUTSIDE_LOCK_CAUGHT_BY),
            RealRecipeKind::QueueCanary(bug) => Some(bug.caught_by()),
        }
    }

    /// Whether its clients may take the read lock (`--readers`): the semaphore's all
    /// hold leases as readers of the resource.
    pub fn has_readers(self) -> bool {
        matches!(self, RealRecipeKind::Shipped | RealRecipeKind::Canary(_))
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
        let e = RealRecipeKind::parse("queue-of-dreams").unwrap_err();
        assert!(e.contains("semaphore") && e.contains("zklock"), "{e}");
    }
}
