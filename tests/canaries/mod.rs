//! The canaries (`zklock_canaries`: zklock's lock with one known bug each) must each be
//! caught: by `explore`, by the exhaustive check, and by their minimized traces' replay,
//! in the library and through the `zklock` binary, which knows each by name.

mod cases;
mod cli;
mod election;
mod gated;
mod lost_before_granted;
mod own_scenario;
mod queue;
mod queue_real;
mod real;
mod revocation;
mod semaphore;
mod semaphore_check;
mod semaphore_real;
mod smallest;

pub use zklock_canaries::{Bug, Canary};
