//! zklock's whole command line for this crate's locks, as zklock's docs/your-lock.md
//! tells: `cargo run --bin user-zklock -- explore --recipe herding-queue` finds the herd,
//! writes its trace, and prints the command that replays it with this binary.

use std::process::ExitCode;
use user_crate::{QueueLock, Waits};
use zklock_recipe::history::LockRole;
use zklock_sim::{Recipe, SimClient};

/// The queue lock, waiting as told, for the simulation's clients.
struct Queue(Waits);

impl Recipe for Queue {
    type Lock = QueueLock<SimClient>;
    fn lock(&self, client: SimClient, _role: LockRole, path: &str) -> Self::Lock {
        QueueLock::new(client, path, self.0)
    }
}

fn main() -> ExitCode {
    let mut recipes = zklock::Recipes::new();
    recipes
        .register("queue", "our queue lock", Queue(Waits::OnPredecessor))
        .expect("a new, valid name");
    recipes
        .register(
            "herding-queue",
            "our queue lock's first version: every waiter watches the directory",
            Queue(Waits::OnDirectory),
        )
        .expect("a new, valid name");
    zklock::main_with(recipes)
}
