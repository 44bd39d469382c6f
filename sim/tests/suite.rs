//! The simulator's integration tests, one module per file beside this one, in one test
//! binary (`cargo test -p zklock-sim --test suite`; a module's tests alone:
//! `cargo test -p zklock-sim --test suite semantics::`). A new file joins the suite here:
//! the package lists its test targets (`autotests = false`).

mod detached;
mod election;
mod madsim_seed;
mod priorities;
mod renewal;
mod revocation;
mod scenario;
mod semantics;
mod shape;
mod tree_props;
mod work_queue;
