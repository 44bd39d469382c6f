//! zklock's fault-point search over real ZooKeeper runs, and the judging of real runs by
//! the checker: the engine of `zklock search`, callable from a test.
//!
//! A reference run of a fixed script records every request each client sends; then one
//! run per point (each request × each action a proxy can take, and repetitions) and, at
//! k = 2, per pair whose second request the first point's run reached. Each run is
//! judged by the checker ([`judge`]); each violation comes back with the `real` line that
//! reproduces it and its timeline ([`Finding`]).
//!
//! ```no_run
//! use zklock_search::{Lock, Search};
//!
//! // Kazoo's lock through its driver, at single points; needs ZooKeeper, Java and Kazoo.
//! let findings = Search::new(Lock::driver("kazoo-lock")?).k(1).run()?;
//! for f in &findings.findings {
//!     println!("{}: {}", f.violated.join(", "), f.repro);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Your own lock's real side is a [`RealRecipe`](zklock_real::workload::RealRecipe); a
//! test searches it in a few lines (docs/your-lock.md shows this one):
//!
//! ```no_run
//! use zklock_real::recording::RecordingClient;
//! use zklock_real::workload::RealRecipe;
//! use zklock_recipe::history::LockRole;
//! use zklock_recipe::lock::LockOptions;
//! use zklock_recipe::under_test::ShippedLock;
//! use zklock_search::{Lock, Search};
//!
//! /// Your lock on a real session (here zklock's).
//! struct MyRecipe;
//!
//! impl RealRecipe for MyRecipe {
//!     type Lock = ShippedLock<RecordingClient>;
//!     fn lock(&self, client: RecordingClient, role: LockRole, path: &str) -> Self::Lock {
//!         ShippedLock::new(client, role, path, LockOptions::default()).expect("a valid path")
//!     }
//! }
//!
//! // Every request of the script, each action at it; `my-cli` reproduces what it finds.
//! let findings = Search::new(Lock::recipe("my-lock", MyRecipe))
//!     .program("my-cli")
//!     .run()
//!     .expect("ZooKeeper and Java installed");
//! assert!(!findings.interrupted && findings.reference_run);
//! for f in &findings.findings {
//!     eprintln!("{}: {}\n{}", f.violated.join(", "), f.repro, f.timeline.as_deref().unwrap_or(""));
//! }
//! assert!(findings.findings.is_empty(), "{} violations", findings.findings.len());
//! ```
//!
//! `zklock-real` holds the mechanism (servers, proxies, drivers, the workload); this
//! crate is the only one that sees both it and the checker.

mod engine;
mod error;
pub mod export;
pub mod fault_free;
pub mod frontier;
mod journal;
pub mod judge;
mod pool;
pub mod recipes;
mod setup;

pub use engine::{
    Event, Finding, Findings, K_MAX, MAX_POINTS_DEFAULT, MAX_SEARCH_ATTEMPTS, MAX_SEARCH_CLIENTS,
    Origin, Progress, Search, default_actions, default_script,
};
pub use error::SearchError;
pub use frontier::{Actions, Point};
pub use setup::Lock;

#[cfg(test)]
mod tests {
    /// docs/your-lock.md's search of a user's lock is this crate's doc test, word for word.
    #[test]
    fn the_your_lock_search_snippet_is_the_crates_doc_test() {
        let page = include_str!("../../docs/your-lock.md");
        let first = "```rust,no_run\nuse zklock_real::recording::RecordingClient;\n";
        let at = page
            .find(first)
            .expect("docs/your-lock.md has the search snippet")
            + 15;
        let snippet = &page[at..at + page[at..].find("```\n").expect("the snippet ends")];
        let doc: String = (include_str!("lib.rs").lines())
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
            .collect();
        assert!(doc.contains(snippet), "not the doc test:\n{snippet}");
    }
}
