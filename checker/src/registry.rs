//! Recipes by name: what a command line needs to run any number of lock recipes of
//! different types, chosen at run time (`zklock explore --recipe NAME`, and the recipe a
//! trace recorded on `zklock replay` and `zklock shrink`).
//!
//! [`AnyRecipe`] is an object-safe view of a [`Recipe`]: every engine the command line
//! runs (a seed sweep, an exhaustive check, a replay, a shrink), without the recipe's
//! lock type in its signature. Every `R: Recipe + 'static` is one. [`Recipes`] is an
//! ordered set of them, each under the name traces record and a one-line description.
//!
//! ```
//! use zklock_checker::registry::Recipes;
//! use zklock_checker::Budget;
//! use zklock_sim::{Scenario, ShippedRecipe};
//!
//! let mut recipes = Recipes::shipped();
//! // A second lock of your own goes in the same way (here, the shipped one again).
//! recipes
//!     .register("my-lock", "the shipped lock under another name", ShippedRecipe::default())
//!     .unwrap();
//! assert_eq!(recipes.names().collect::<Vec<_>>(), ["zklock", "my-lock"]);
//!
//! let budget = Budget { seeds: 2, threads: 1, ..Budget::default() };
//! let lock = recipes.get("my-lock").unwrap();
//! let explored = lock.explore(&Scenario::default(), &budget, &|_, _| {}).unwrap();
//! assert_eq!(explored.summary.seeds_run, 2);
//! assert!(explored.failure.is_none());
//! assert!(recipes.get("no-such-lock").is_none());
//! ```

use crate::exhaustive::{
    Bounds, Control, ExhaustiveReport, SearchError, check_exhaustive_controlled,
};
use crate::explore::{Budget, Explored, explore};
use crate::limits::LimitError;
use crate::run::{CheckedRun, replay};
use crate::shrink::{ShrinkError, ShrinkLimits, Shrunk, shrink};
use crate::trace::Trace;
use std::fmt;
use zklock_sim::{Recipe, Scenario, ScenarioError, ShippedRecipe};

/// The name the shipped lock is registered under, and the one its traces record.
pub const SHIPPED_NAME: &str = "zklock";

/// The longest recipe name accepted, in bytes.
pub const NAME_LEN_MAX: usize = 64;

/// A lock recipe with its lock type erased: every engine the command line runs on it.
///
/// Implemented for every `R: Recipe + 'static`; implement [`Recipe`] for your lock, not
/// this trait.
pub trait AnyRecipe: Send + Sync {
    /// The recipe's own name ([`Recipe::name`]).
    fn recipe_name(&self) -> String;
    /// The scenario it runs in when no flag overrides it ([`Recipe::scenario`]).
    fn scenario(&self) -> Scenario;
    /// A seed sweep (see [`explore()`]); `progress(done, total)` after each seed.
    fn explore(
        &self,
        scenario: &Scenario,
        budget: &Budget,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Explored, LimitError>;
    /// A bounded exhaustive check, stopping at the first schedule that fails, resumed,
    /// interrupted and checkpointed as `control` says (see
    /// [`check_exhaustive_controlled`]); `progress(schedules, distinct_states)` now and
    /// then.
    fn check_exhaustive(
        &self,
        base: &Scenario,
        bounds: &Bounds,
        progress: &(dyn Fn(u64, u64) + Sync),
        control: Control,
    ) -> Result<ExhaustiveReport, SearchError>;
    /// The trace's choices run again, and judged (see [`replay()`]).
    fn replay(&self, trace: &Trace) -> Result<CheckedRun, ScenarioError>;
    /// A failing trace minimized (see [`shrink()`]).
    fn shrink(&self, trace: &Trace, limits: &ShrinkLimits) -> Result<Shrunk, ShrinkError>;
    /// The recipe's leases ([`Recipe::leases`]): `Some(n)` for a counting semaphore.
    fn leases(&self) -> Option<u32> {
        None
    }
    /// Whether the recipe is a work queue ([`Recipe::work_queue`]), whose clients
    /// produce and consume rather than acquire.
    fn is_work_queue(&self) -> bool {
        false
    }
    /// Whether the recipe is a leader election ([`Recipe::election`]), whose clients
    /// contend for leadership of one path in a workload of their own.
    fn is_election(&self) -> bool {
        false
    }
}

impl<R: Recipe + 'static> AnyRecipe for R {
    fn recipe_name(&self) -> String {
        self.name()
    }
    fn scenario(&self) -> Scenario {
        Recipe::scenario(self)
    }
    fn explore(
        &self,
        scenario: &Scenario,
        budget: &Budget,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Explored, LimitError> {
        explore(scenario, self, budget, progress)
    }
    fn check_exhaustive(
        &self,
        base: &Scenario,
        bounds: &Bounds,
        progress: &(dyn Fn(u64, u64) + Sync),
        control: Control,
    ) -> Result<ExhaustiveReport, SearchError> {
        let failing = &|run: &CheckedRun| run.failure().is_some();
        check_exhaustive_controlled(base, self, bounds, failing, progress, control)
    }
    fn replay(&self, trace: &Trace) -> Result<CheckedRun, ScenarioError> {
        replay(trace, self)
    }
    fn shrink(&self, trace: &Trace, limits: &ShrinkLimits) -> Result<Shrunk, ShrinkError> {
        shrink(trace, self, limits)
    }
    fn leases(&self) -> Option<u32> {
        Recipe::leases(self)
    }
    fn is_work_queue(&self) -> bool {
        self.work_queue().is_some()
    }
    fn is_election(&self) -> bool {
        self.election().is_some()
    }
}

/// One registered recipe.
pub struct Entry {
    name: String,
    description: String,
    recipe: Box<dyn AnyRecipe>,
}

impl Entry {
    /// The name it is registered, chosen and recorded in traces under.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// One line saying what it is.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The recipe.
    pub fn recipe(&self) -> &dyn AnyRecipe {
        self.recipe.as_ref()
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// Why a recipe could not be registered.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// Another recipe is registered under this name already.
    Duplicate { name: String },
    /// The name is empty, longer than [`NAME_LEN_MAX`], or holds a character other than
    /// an ASCII letter, digit, `-`, `_` or `.` (it is typed on command lines).
    InvalidName { name: String },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Duplicate { name } => {
                write!(f, "a recipe named {name:?} is registered already")
            }
            RegistryError::InvalidName { name } => write!(
                f,
                "{name:?} is not a recipe name: 1 to {NAME_LEN_MAX} ASCII letters, digits, \
                 '-', '_' or '.'"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Whether `name` may name a recipe: 1 to [`NAME_LEN_MAX`] ASCII letters, digits, `-`, `_`
/// or `.` (it is typed on command lines). [`Recipes::register`] checks it; so does any
/// other registry of recipes by name (`zklock::CommandLine::real_recipe`), by the same rule.
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    let valid = !name.is_empty()
        && name.len() <= NAME_LEN_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(RegistryError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// Recipes by name, in the order they were registered.
#[derive(Debug, Default)]
pub struct Recipes {
    entries: Vec<Entry>,
}

impl Recipes {
    /// No recipe.
    pub fn new() -> Recipes {
        Recipes::default()
    }

    /// The shipped lock ([`ShippedRecipe`]) under [`SHIPPED_NAME`]: the exclusive lock,
    /// or the read/write lock when the scenario has readers ([`Scenario::readers`]).
    pub fn shipped() -> Recipes {
        let mut r = Recipes::new();
        r.register(
            SHIPPED_NAME,
            "zklock's lock: exclusive, or read/write when the scenario has readers",
            ShippedRecipe::default(),
        )
        .expect("the first name of an empty registry");
        r
    }

    /// Adds `recipe` under `name` (what `--recipe` takes and traces record), after the
    /// recipes already there.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        recipe: impl AnyRecipe + 'static,
    ) -> Result<&mut Recipes, RegistryError> {
        let name = name.into();
        check_name(&name)?;
        if self.get(&name).is_some() {
            return Err(RegistryError::Duplicate { name });
        }
        self.entries.push(Entry {
            name,
            description: description.into(),
            recipe: Box::new(recipe),
        });
        Ok(self)
    }

    /// The recipe registered under `name`; else the one recipe whose own name
    /// ([`Recipe::name`], its type's name by default) is `name`. A trace written by a
    /// test's [`Sweep`](crate::Sweep) records the recipe's own name, and the user's
    /// command line, registering it as `blind-lock`, replays it all the same.
    pub fn get(&self, name: &str) -> Option<&dyn AnyRecipe> {
        if let Some(e) = self.entries.iter().find(|e| e.name == name) {
            return Some(e.recipe());
        }
        let mut own = self
            .entries
            .iter()
            .filter(|e| e.recipe.recipe_name() == name);
        match (own.next(), own.next()) {
            (Some(e), None) => Some(e.recipe()),
            // Two recipes of one type under two names: which one is not known.
            _ => None,
        }
    }

    /// Every entry, in registration order.
    pub fn iter(&self) -> std::slice::Iter<'_, Entry> {
        self.entries.iter()
    }

    /// Every name, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(Entry::name)
    }

    /// How many recipes there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Recipes {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of `check_seeds` names `BlindRecipe`; the user's binary registers it as
    /// `blind-lock`, and its replay refused the trace.
    #[test]
    fn a_recipe_is_found_by_its_own_name_too() {
        struct BlindRecipe;
        impl Recipe for BlindRecipe {
            type Lock = <ShippedRecipe as Recipe>::Lock;
            fn lock(
                &self,
                client: zklock_sim::SimClient,
                role: zklock_recipe::history::LockRole,
                path: &str,
            ) -> Self::Lock {
                ShippedRecipe::default().lock(client, role, path)
            }
        }
        let mut r = Recipes::new();
        r.register("blind-lock", "a lock", BlindRecipe).unwrap();
        assert!(r.get("blind-lock").is_some());
        assert_eq!(
            r.get("BlindRecipe").map(|l| l.recipe_name()).as_deref(),
            Some("BlindRecipe")
        );
        assert!(r.get("OtherRecipe").is_none());
        // Two names of one type: the type's name is ambiguous, and refused.
        r.register("blind-lock-2", "the same", BlindRecipe).unwrap();
        assert!(r.get("BlindRecipe").is_none());
    }

    #[test]
    fn names_are_unique_and_typeable() {
        let mut r = Recipes::shipped();
        let again = r.register(SHIPPED_NAME, "", ShippedRecipe::default());
        assert_eq!(
            again.unwrap_err(),
            RegistryError::Duplicate {
                name: SHIPPED_NAME.into()
            }
        );
        for bad in ["", "two words", "é", &"x".repeat(NAME_LEN_MAX + 1)] {
            let e = r.register(bad, "", ShippedRecipe::default()).unwrap_err();
            assert!(matches!(e, RegistryError::InvalidName { .. }), "{bad:?}");
        }
        r.register("canary-watch-parent.v2_x", "ok", ShippedRecipe::default())
            .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r.iter().nth(1).unwrap().description(), "ok");
    }

    #[test]
    fn the_shipped_entry_is_the_shipped_recipe_by_the_name_its_traces_record() {
        let r = Recipes::shipped();
        let lock = r.get(SHIPPED_NAME).unwrap();
        assert_eq!(lock.recipe_name(), ShippedRecipe::default().name());
    }
}
