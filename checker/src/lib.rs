//! The zklock checker: properties over histories, trace files and timelines.
//!
//! Every runner (the simulation, the exhaustive explorer, a real server) records the same
//! [`History`](zklock_recipe::history::History). The checker is a pure function from a
//! history, plus a few scenario facts ([`CheckConfig`]), to a verdict per property.
//!
//! # Properties
//!
//! Named as in stateright: an *always* property must hold at every point of the
//! history, an *eventually* property must come true once faults stop.
//!
//! - **always: `mutual_exclusion`.** Judged by belief: a client holds from `Acquired`
//!   until `ReleaseInvoked` or `Lost` (a crash ends it too). No two exclusive/writer
//!   holds overlap. Under process pauses no recipe can keep this (Kleppmann, "How to do
//!   distributed locking"): an overlap involving a paused client is then reported as
//!   the known, unavoidable class, and the run rests on `fenced_resource`.
//! - **always: `fenced_resource`.** The token-checking resource accepts writes in
//!   non-decreasing token order and loses no update. The verdict also counts the lost
//!   updates of the unfenced resource in the same run: what fencing prevented.
//! - **always: `fencing_token_order`.** Every holder's token is greater than the token of
//!   every earlier holder of the same lock (the directory of its node) that it excludes:
//!   a writer's than every earlier hold's, a reader's than every earlier writer's. A
//!   lower token from a client paused during its acquire, under pauses, is the known,
//!   unavoidable class (a stale grant, which the fence refuses).
//! - **always: `rightful_write_accepted`.** The fenced resource refuses no write of a
//!   holder whose hold the history proves still valid on the server: from its acquire's
//!   invocation to the write it neither released nor lost it, its session stayed
//!   Connected, and no fault struck its client but a slowed link or a lost create reply.
//!   A stale holder (paused, cut off, expired) may be refused.
//! - **always: `read_write_compat`.** No reader's hold overlaps a writer's.
//! - **eventually: `liveness_after_heal`.** After the heal, every live waiter is served
//!   within the bound; when every client is done, no lock node is left (orphans).
//! - **always: `no_herd`.** A release wakes at most one waiter, or, for a writer's
//!   release, the readers queued directly behind it: a woken reader the history shows
//!   with another writer still ahead of its own node counts.
//! - **always: `fifo`.** Grants follow sequence order.
//! - **always: `timed_acquire_in_time`.** A timed acquire returns by its deadline, plus
//!   [`CheckConfig::timed_grace_ms`] for the cleanup at the deadline, plus, for each
//!   fault its own client met (a pause, a partition, a delayed delivery, a connection
//!   loss, a session leaving Connected), the fault's duration and a session timeout.
//!
//! - **always: `semaphore_leases`** (a semaphore's run only, reported first): a counting
//!   semaphore of N leases never has more than N holders by belief (see
//!   [`properties::semaphore_leases`]).
//!
//! In a run of several locks (`Scenario::locks`), every property is judged per lock
//! directory, on the history as that lock saw it ([`per_lock`]): holds of different locks
//! may overlap.
//!
//! Each violation names the events that prove it (indices into `history.events`, times,
//! clients, sessions, tokens) and the faults just before. [`Counters`] tell how much a
//! history exercised (contention, handovers after expiry, recoveries after lost creates,
//! timed acquires run to their deadline, faults by kind), so that a pass means something.
//!
//! ```
//! use zklock_checker::{CheckConfig, check_all};
//! use zklock_recipe::history::History;
//!
//! let report = check_all(&History::default(), &CheckConfig::default());
//! assert!(report.ok());
//! ```
//!
//! # Checking your own lock
//!
//! Implement [`LockUnderTest`](zklock_sim::LockUnderTest) for your lock and
//! [`Recipe`](zklock_sim::Recipe), then sweep seeds from a plain `#[test]` with
//! [`check_seeds`] (or [`Sweep`], with options). docs/your-lock.md shows this one:
//!
//! ```
//! use zklock_checker::check_seeds;
//! use zklock_recipe::history::LockRole;
//! use zklock_sim::{Recipe, Scenario, ShippedLock, ShippedRecipe, SimClient};
//!
//! /// Your recipe: it makes each client's lock object (here zklock's own lock).
//! struct MyRecipe;
//!
//! impl Recipe for MyRecipe {
//!     type Lock = ShippedLock; // your `LockUnderTest`
//!     fn lock(&self, client: SimClient, role: LockRole, path: &str) -> ShippedLock {
//!         ShippedRecipe::default().lock(client, role, path)
//!     }
//! }
//!
//! // In a `#[test]`:
//! check_seeds(&Scenario::default(), &MyRecipe, 0..20).unwrap();
//! ```
//!
//! # Trace files
//!
//! A [`Trace`] is a run as JSON (scenario, seed, choices, recipe, history, violation, and
//! the checker's report on it), written atomically with its timelines next to it: text
//! ([`Trace::timeline`]) and a self-contained HTML page ([`timeline::html`]);
//! [`Trace::read`] reports any bad file as a [`TraceError`] naming it.
//!
//! # Engines
//!
//! - [`explore()`]: a seed sweep on every core ([`Budget`]: seeds, shard, time limit,
//!   threads), reporting the lowest failing seed whatever the thread timing.
//! - [`check_exhaustive`]: every interleaving and fault placement of a small
//!   configuration ([`Bounds`]), by depth-first search over the Chooser's decisions, with
//!   revisited states pruned (the soundness argument is in [`exhaustive`]).
//! - [`shrink()`]: a failing trace minimized, same violated property.
//! - [`check_seeds`]: a sweep for a user's own `#[test]`.
//!
//! [`registry::Recipes`] holds recipes by name, their lock types erased, for a command
//! line that runs any of them (`zklock`'s, or your own through `zklock::main_with`).
//!
//! Each checks its inputs against the bounds of [`limits`] (and the scenario's,
//! [`Scenario::validate`](zklock_sim::Scenario::validate)) before it runs anything, and
//! returns a typed error for a value outside them; [`replay()`] and [`Trace::read`] do too.
//!
//! # Debugging failures
//!
//! 1. A failing sweep writes a trace and prints the command that reproduces it:
//!    `zklock replay traces/failures/seed-42.json`, or for your own recipe
//!    `ZKLOCK_SEED=42 cargo test -- --exact your_test` (see [`check_seeds`], which also
//!    records the seed in the test's [`regressions`] file, replayed first by every later
//!    run). The replay re-runs the exact schedule: the same history, event for event.
//! 2. Shrink it: `zklock shrink <trace>` (or [`shrink()`]) keeps the violated property and
//!    cuts clients, acquisitions, faults and choices. It first checks the smaller sizes
//!    exhaustively (up to 3 clients × 2 acquisitions, one fault), smallest first; where
//!    that finds nothing and the recorded schedule does not carry over to fewer clients or
//!    acquisitions, it searches fresh seeds at that size. So the shrunk trace may carry
//!    another seed, or the exhaustive check's scenario (faults placed by the chooser).
//! 3. Read the timeline beside the trace (`<trace>.timeline.txt`): the violation report
//!    (the events that prove it, the faults just before), then one line per event, with a
//!    legend, the set of holders after each event, and what the report says of the events
//!    it names. Or open `<trace>.timeline.html` in a browser: a lane per client and
//!    session, holds as bars, the violation's events ringed (`zklock timeline` draws any
//!    trace).
//! 4. Fix the recipe and replay the trace again: a trace survives changes that keep the
//!    order of choices; `replay` says when the history now differs, and names the commit
//!    that wrote the trace ([`Trace::zklock_commit`]) when it was not this build's: the
//!    seed and that commit reproduce the run exactly.

mod bounds;
pub mod check_summary;
pub mod checkpoint;
pub mod concurrent;
pub mod coverage;
mod dfs;
mod evidence;
pub mod exercised;
pub mod exhaustive;
pub mod explore;
pub mod holds;
pub mod keep_only;
pub mod limits;
pub mod parallel;
pub mod partial_order;
pub mod per_lock;
pub mod properties;
pub mod real_judge;
pub mod registry;
pub mod regressions;
pub mod run;
mod seen;
pub mod shard;
pub mod shrink;
mod sleep_sets;
pub mod strategy;
mod stuck;
pub mod sweep;
pub mod symmetry;
pub mod timeline;
pub mod trace;

#[cfg(test)]
mod testkit;

pub use checkpoint::{Checkpoint, CheckpointError, Subtree};
pub use exhaustive::{
    Bounds, Control, ExhaustiveReport, PROGRESS_EVERY_SCHEDULES, SearchError, ShardReport,
    check_exhaustive, check_exhaustive_controlled, check_exhaustive_until, check_exhaustive_with,
};
pub use explore::{
    Budget, Explored, Interrupt, SeedsRan, Summary, SweepRange, explore, explore_until,
};
pub use limits::LimitError;
pub use properties::{
    CheckConfig, Counters, EventRef, PROPERTY_NAMES, QueueCounters, Report, Verdict, Violation,
    check_all, count,
};
pub use run::{CheckedRun, check_seed, judge, replay};
pub use shrink::{ShrinkError, ShrinkLimits, Shrunk, shrink};
pub use strategy::Strategy;
pub use sweep::{
    DEFAULT_SEEDS, FAILURES_DIR, Regression, SEED_ENV, SHRINK_TIME_LIMIT_ENV,
    SHRINK_TIME_LIMIT_MS_DEFAULT, SeedFailure, Sweep, SweepError, Swept, check_seeds,
    failure_trace_name,
};
pub use timeline::render_timeline;
pub use trace::{
    TRACE_BYTES_MAX, TRACE_FORMAT_VERSION, Trace, TraceError, ZKLOCK_COMMIT, ZKLOCK_VERSION,
};
