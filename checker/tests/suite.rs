//! The checker's integration tests, one module per file beside this one, in one test
//! binary (`cargo test -p zklock-checker --test suite`; a module's tests alone:
//! `cargo test -p zklock-checker --test suite symmetry::`). A new file joins the suite
//! here: the package lists its test targets (`autotests = false`). `trace_memory.rs` is
//! a binary of its own, since its counting allocator is process-wide.

mod common;
mod deaf_holder_canary;
mod docs_snippets;
mod exhaustive;
mod herd_canary;
mod keep_only;
mod nothing_checked;
mod parallel;
mod parallel_checkpoint;
mod partial_order;
mod regressions_replay;
mod seed_env;
mod shapes;
mod shard;
mod shipped_passes;
mod symmetry;
mod trace_fuzz;
mod work_queue;
