//! The recipes `zklock real --recipe NAME` and `zklock search --lock NAME` run on real
//! servers: [`zklock_search::recipes`].

#[cfg(test)]
pub(crate) use zklock_search::recipes::RealRecipeKind;
pub(crate) use zklock_search::recipes::{QueueShape, RealPick, RealRecipes};
