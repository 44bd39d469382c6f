//! `zklock bench`: its flags handed to zklock-bench, which measures and prints.

use crate::Status;
use crate::cli::BenchArgs;
use zklock_bench::BenchOptions;
use zklock_checker::registry::Recipes;

pub fn run(a: BenchArgs, recipes: &Recipes) -> anyhow::Result<Status> {
    let search = a.search;
    let o = BenchOptions {
        seeds: a.seeds,
        sim_rounds: a.sim_rounds,
        sim_drop_every: a.sim_drop_every,
        exhaustive_limit_s: a.exhaustive_limit_s,
        instructions_clients: a.instructions_clients,
        search_starts: a.search_starts,
        search_seeds: a.search_seeds,
        search_in: a.search_in,
        search_recipes: a.search_recipes,
        search_strategies: a
            .search_strategies
            .map(|s| s.into_iter().map(Into::into).collect()),
        search_rate_seeds: a.search_rate_seeds,
        sim_only: a.sim_only,
        real_only: a.real_only,
        real_cell_s: a.real_cell_s,
        real_rounds: a.real_rounds,
        real_clients: a.real_clients,
        real_locks: a.real_locks,
        real_executor: a.real_executor,
        real_quick_jit: a.real_quick_jit,
        real_force_sync: a.real_force_sync,
    };
    if search {
        zklock_bench::search::run(&o, recipes)?;
    } else {
        zklock_bench::run(&o)?;
    }
    Ok(Status::Held)
}
