//! Each canary is caught by the exhaustive check at its smallest bound: the fewest
//! clients, then faults, then acquisitions per client, at which `zklock check` finds it,
//! with the workload's shape fixed or chosen ([`Shape::all`]). The schedule at which each
//! is found is pinned, as stateright's examples pin their state counts: a change of the
//! search order or of the world's choices shows here.

use super::Bug;
use super::cases::{bounds as known_bounds, scenario};
use std::time::Instant;
use zklock_canaries::{Canary, LEASE_OUTSIDE_LOCK_CAUGHT_BY, LeaseOutsideLock};
use zklock_checker::{Bounds, ExhaustiveReport, check_exhaustive_until};
use zklock_sim::{Recipe, Scenario, Shape};

/// A bound of the exhaustive check: clients, faults at most, acquisitions per client,
/// and whether the shape is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Size {
    clients: u32,
    faults_max: u32,
    acquisitions_per_client: u32,
    shapes: bool,
}

impl Size {
    fn bounds(self) -> Bounds {
        Bounds {
            clients: self.clients,
            faults_max: self.faults_max,
            acquisitions_per_client: self.acquisitions_per_client,
            shape: if self.shapes {
                Shape::all()
            } else {
                Shape::fixed()
            },
            ..Bounds::default()
        }
    }
}

/// The canaries: each by name, with its scenario, its property and a check of it.
fn check(name: &str, bounds: &Bounds) -> ExhaustiveReport {
    match Bug::ALL.iter().find(|b| b.name() == name) {
        Some(&bug) => run(&scenario(bug), &Canary(bug), bounds, bug.caught_by()),
        None => run(
            &Scenario::default(),
            &LeaseOutsideLock::default(),
            bounds,
            LEASE_OUTSIDE_LOCK_CAUGHT_BY,
        ),
    }
}

fn run<R: Recipe>(sc: &Scenario, recipe: &R, bounds: &Bounds, property: &str) -> ExhaustiveReport {
    check_exhaustive_until(sc, recipe, bounds, &|r| r.violates(property)).unwrap()
}

fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
    v.push(zklock_canaries::LEASE_OUTSIDE_LOCK);
    v
}

/// Prints, for each canary, the first bound in (clients, faults, acquisitions, shape)
/// order at which the check catches it, and how each smaller bound ended:
/// `cargo test --release -p zklock --test zklock smallest_bound_search -- --ignored --nocapture`.
/// `ZKLOCK_SEARCH_S` caps each search's wall time (default 60 s); `ZKLOCK_CANARY` picks
/// one canary.
#[test]
#[ignore = "a search of some minutes: it finds the table pinned below"]
fn smallest_bound_search() {
    let cap_ms = std::env::var("ZKLOCK_SEARCH_S")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(60)
        * 1000;
    let only = std::env::var("ZKLOCK_CANARY").ok();
    for name in names() {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        // Up to the bounds the fixed shape is known to catch it at.
        let known = match Bug::ALL.iter().find(|b| b.name() == name) {
            Some(&bug) => known_bounds(bug),
            None => Bounds {
                clients: 2,
                faults_max: 1,
                acquisitions_per_client: 1,
                ..Bounds::default()
            },
        };
        'sizes: for clients in 1..=known.clients {
            for faults_max in 0..=known.faults_max {
                for acquisitions_per_client in 1..=known.acquisitions_per_client {
                    let mut caught = false;
                    for shapes in [false, true] {
                        let size = Size {
                            clients,
                            faults_max,
                            acquisitions_per_client,
                            shapes,
                        };
                        let bounds = Bounds {
                            time_limit_ms: cap_ms,
                            ..size.bounds()
                        };
                        let t0 = Instant::now();
                        let r = check(name, &bounds);
                        let what = match (&r.violation, r.complete) {
                            (Some(_), _) => "CAUGHT",
                            (None, true) => "held",
                            (None, false) => "incomplete",
                        };
                        caught |= r.violation.is_some();
                        eprintln!(
                            "{name} {clients}c {faults_max}f {acquisitions_per_client}a shapes={shapes}: \
                             {what} at {} schedules, {} states, {:.1} s",
                            r.schedules,
                            r.distinct_states,
                            t0.elapsed().as_secs_f64()
                        );
                    }
                    if caught {
                        break 'sizes;
                    }
                }
            }
        }
    }
}
