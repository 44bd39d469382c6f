//! The `zklock` binary: the command line (the `zklock` library) on the recipes it ships.

use std::process::ExitCode;
use zklock::Recipes;

// A simulation allocates and frees many small strings and vectors per step; mimalloc
// serves them in a fraction of glibc's instructions (see docs/figures.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Every recipe this binary offers by name: `--recipe NAME`, and the recipe a trace
/// recorded on `replay` and `shrink`: the shipped lock and every canary (each a known
/// bug, so that a failure can be watched being found, replayed and shrunk). Register
/// further recipes here.
fn recipes() -> Recipes {
    let mut recipes = Recipes::shipped();
    recipes
        .register(
            "semaphore",
            "zklock's counting semaphore of 2 leases, taken under its inner lock",
            zklock_sim::SemaphoreRecipe::default(),
        )
        .expect("the semaphore's name is valid and unique");
    recipes
        .register(
            "queue",
            "zklock's work queue: a producer, and consumers that take items under a take lock (herd-free)",
            zklock_sim::QueueRecipe::default(),
        )
        .expect("the queue's name is valid and unique");
    recipes
        .register(
            "queue-naive",
            "zklock's work queue with naive consumers: each watches the whole queue (a herd)",
            zklock_sim::QueueRecipe::naive(),
        )
        .expect("the naive queue's name is valid and unique");
    recipes
        .register(
            "election-latch",
            "zklock's leader latch: the lowest node leads, each contender watches its predecessor",
            zklock_sim::ElectionRecipe::default(),
        )
        .expect("the latch's name is valid and unique");
    recipes
        .register(
            "election-selector",
            "zklock's leader selector: leads through the lock, runs its task, queues again",
            zklock_sim::ElectionRecipe::selector(),
        )
        .expect("the selector's name is valid and unique");
    recipes
        .register(
            "revocable",
            "zklock's read/write lock with revocation: a revoker asks readers and writers to give up",
            zklock_sim::RevocableRecipe::default(),
        )
        .expect("the revocable lock's name is valid and unique");
    zklock_canaries::register_all(&mut recipes).expect("the canaries' names are valid and unique");
    recipes
}

fn main() -> ExitCode {
    // Its commands are printed as the README runs them, from a checkout of zklock.
    zklock::CommandLine::new(recipes())
        .invoked_as("cargo run --release --")
        .commit(zklock_checker::ZKLOCK_COMMIT)
        .main()
}
