//! `zklock bench`: zklock's benchmark figures (docs/figures.md), a crate of its own so
//! that zklock's libraries carry no bench. Not published: the command line's `bench`
//! feature builds it in, and `zklock bench` parses its flags into [`BenchOptions`].
//!
//! * [`run`]: the simulation's, the exhaustive search's and real ZooKeeper's figures,
//!   printed as a table and written as JSON under target/zklock-bench/;
//! * [`search::run`]: how long each search strategy takes to catch each canary;
//! * [`cells`]: the measurement on a real server (the shipped recipe, zookeeper-client's
//!   `Client::lock`, Kazoo's `Lock`, Curator's `InterProcessMutex`).
//!
//! Figures are judged by reading them, never by a timed test.

#[macro_use]
mod out;
pub mod cells;
mod figures;
mod instructions;
mod real;
pub mod search;

pub use figures::run;

/// What `zklock bench` measures: its flags, one field each, bounds checked by [`run`]
/// and [`search::run`] (each names the flag it refuses). docs/cli.md gives every default.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Simulation seeds per sweep, all rounds together (1 to 100,000,000).
    pub seeds: u64,
    /// Rounds the sweeps are split into, interleaved (1 to 100).
    pub sim_rounds: u32,
    /// Drop every N-th acquire (0: none, the standard figures).
    pub sim_drop_every: u32,
    /// Time limit of each exhaustive configuration, in seconds (the checker's bound).
    pub exhaustive_limit_s: u64,
    /// Clients of the check whose instructions per state cachegrind counts (0 to 4; 0:
    /// not counted).
    pub instructions_clients: u32,
    /// Search figures: starting seeds per canary and strategy (1 to 1,000).
    pub search_starts: u64,
    /// Search figures: seeds a search runs at most before it counts as not caught (1 to
    /// 100,000,000).
    pub search_seeds: u64,
    /// Search figures: each canary in its own scenario (`own`) or all in the default one
    /// (`default`).
    pub search_in: String,
    /// Search figures: only these canaries (`None`: every `canary-*` recipe).
    pub search_recipes: Option<Vec<String>>,
    /// Search figures: only these strategies, in this order (`None`: every strategy).
    pub search_strategies: Option<Vec<zklock_checker::Strategy>>,
    /// Search figures: seeds of the shipped lock each strategy's per-core rate is
    /// measured on (1 to 100,000,000).
    pub search_rate_seeds: u64,
    /// Only the simulation and exhaustive parts.
    pub sim_only: bool,
    /// Only the real-ZooKeeper part.
    pub real_only: bool,
    /// Measured seconds per real cell, all rounds together (0 < S <= 3600).
    pub real_cell_s: f64,
    /// Rounds each real cell is split into, interleaved (1 to 100).
    pub real_rounds: u32,
    /// Client counts of the real cells, comma-separated (each 1 to 256).
    pub real_clients: String,
    /// Only these contenders, comma-separated keys ([`cells::Contender::key`]).
    pub real_locks: Option<String>,
    /// How the shipped recipe's clients run: `reactor` or `tokio`.
    pub real_executor: String,
    /// Curator's JVM with the quick JIT only.
    pub real_quick_jit: bool,
    /// The server's `forceSync`: `on`, `off` or `both`.
    pub real_force_sync: String,
}
