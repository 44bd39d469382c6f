//! The properties: pure functions from a history (and a few scenario facts) to a verdict.
//!
//! | name                  | kind       | holds when                                                  |
//! |-----------------------|------------|-------------------------------------------------------------|
//! | `mutual_exclusion`    | always     | no two exclusive/writer holds overlap (judged by belief)    |
//! | `fenced_resource`     | always     | the fenced resource accepts writes in token order, no lost update |
//! | `fencing_token_order` | always     | each hold's token exceeds every earlier hold's it excludes, per lock |
//! | `rightful_write_accepted` | always | the fence refuses no write of a hold still valid on the server |
//! | `read_write_compat`   | always     | no reader's hold overlaps a writer's                        |
//! | `liveness_after_heal` | eventually | every live waiter is served, every release answered, within the bound after the heal; no orphan node |
//! | `no_herd`             | always     | a release wakes at most one waiter (or, a writer's, the readers directly behind it) |
//! | `fifo`                | always     | grants follow sequence order                                |
//! | `timed_acquire_in_time` | always   | a timed acquire returns by its deadline, plus its client's faults |
//! | `semaphore_leases`    | always     | a semaphore of N leases never has more than N holders (a semaphore's run only) |
//! | `node_outlives_attempt` | always   | no ephemeral node outlives its attempt by more than the leak bound while its session lives (a real run with proxies only) |
//!
//! A work queue's run is judged by [`queue`]'s properties instead; a leader election's
//! by these and [`election`]'s own; a run with revokers by these and [`revocation`]'s.

mod beliefs;
mod config;
pub(crate) mod counters;
pub mod election;
pub mod fenced_resource;
pub mod fencing_token_order;
pub mod fifo;
pub mod liveness_after_heal;
pub mod mutual_exclusion;
pub mod no_herd;
pub mod node_outlives_attempt;
mod overlap;
pub mod queue;
pub mod read_write_compat;
mod report;
pub mod revocation;
pub mod rightful_write_accepted;
pub mod semaphore_leases;
mod slots;
pub mod timed_acquire;
pub(crate) mod verdict;
mod walk;

#[cfg(test)]
mod tests;

pub use config::CheckConfig;
pub use counters::{Counters, QueueCounters, count};
pub use report::{Report, check_all};
pub use verdict::{EventRef, FAULTS_SHOWN, Verdict, Violation};

/// Every property name, in the order `check_all` reports them.
pub const PROPERTY_NAMES: [&str; 9] = [
    mutual_exclusion::NAME,
    fenced_resource::NAME,
    fencing_token_order::NAME,
    rightful_write_accepted::NAME,
    read_write_compat::NAME,
    liveness_after_heal::NAME,
    no_herd::NAME,
    fifo::NAME,
    timed_acquire::NAME,
];
