//! The real-server integration tests, one module per file beside this one, in one test
//! binary, so that tests waiting on their servers overlap (`cargo test -p zklock-real
//! --test suite`; a module's tests alone: `cargo test -p zklock-real --test suite
//! drivers::`). A new file joins the suite here: the package lists its test targets
//! (`autotests = false`).

mod background_release;
mod common;
mod differential;
mod drivers;
mod election_on_real;
mod interop;
mod real_server;
mod recipe_on_real;
mod revocation_on_real;
mod semaphore_on_real;
mod stuck;
