//! The shipped recipes, adapted to [`LockUnderTest`](super::LockUnderTest).

use super::Recipe;
use crate::SimClient;
use zklock_recipe::history::LockRole;
use zklock_recipe::lock::LockOptions;

/// zklock's exclusive lock (role Exclusive) and read/write lock (roles Read, Write).
#[derive(Clone, Debug, Default)]
pub struct ShippedRecipe {
    pub options: LockOptions,
}

/// One client's lock object of the shipped recipe.
pub type ShippedLock = zklock_recipe::under_test::ShippedLock<SimClient>;

impl Recipe for ShippedRecipe {
    type Lock = ShippedLock;
    fn name(&self) -> String {
        "zklock".into()
    }
    fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
        ShippedLock::new(client, role, path, self.options.clone())
            .expect("the scenario's lock path is valid")
    }
}
