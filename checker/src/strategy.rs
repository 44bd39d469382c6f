//! How a sweep spreads its seeds over the space of runs: the scenario each seed runs in.
//!
//! - [`Strategy::Uniform`] runs every seed in the sweep's scenario: fault kinds and times
//!   drawn at the scenario's rates, the same workload every time.
//! - [`Strategy::Swarm`] (swarm testing, Groce et al., ISSTA 2012) gives each seed a
//!   scenario of its own, drawn from the seed: a random subset of the scenario's fault
//!   kinds, each at a higher rate so that the run's fault pressure stays, and a random
//!   workload shape within the scenario's (fewer clients, longer holds, no drops). A bug
//!   that a kind of fault or a busy workload hides shows on the seeds without it.
//!
//! - [`Strategy::Aimed`] is swarm, with every fault aimed at one operation's requests in
//!   flight on half the seeds.
//! - [`Strategy::Pct`] is aimed, with requests applied in an order of client priorities
//!   on half the seeds ([`Priorities`], after PCT: Burckhardt et al., ASPLOS 2010).
//! - [`Strategy::Coverage`] is aimed, with feedback: after each generation of seeds, the
//!   scenarios whose runs reached a new (recipe step, fault) pair join a corpus, and half
//!   the next generation's seeds run near one of them ([`coverage`](crate::coverage)).
//!
//! Under every strategy but coverage, a seed's scenario is a function of the seed alone
//! (a ChaCha8 stream of its own, apart from the run's chooser); under coverage, of the
//! seed and the corpus the generations before its own built. Either way it is the one the
//! seed's trace records: a failing seed replays and shrinks as any other.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use zklock_recipe::history::ZkOp;
use zklock_sim::{Priorities, Rate, Scenario};

/// The scenario of each seed of a sweep. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Strategy {
    /// Every seed in the sweep's scenario.
    Uniform,
    /// Each seed in a scenario of its own: a subset of the fault kinds, at higher rates,
    /// and a workload shape within the sweep's.
    Swarm,
    /// Swarm, and on half the seeds every fault aimed at one operation's requests in
    /// flight ([`Faults::aim`](zklock_sim::Faults::aim)): a delete, a create, a listing,
    /// a read. The default: of the strategies, the one with the smallest worst-case time
    /// to a canary's first failure (docs/figures.md).
    #[default]
    Aimed,
    /// Aimed, and on half the seeds requests applied in the order of client priorities
    /// with a few change points ([`Priorities`]), instead of drawn uniformly at each
    /// step.
    Pct,
    /// Aimed, and on half the seeds of each generation after the first a scenario near
    /// one whose run reached a (recipe step, fault) pair first
    /// ([`coverage`](crate::coverage)).
    Coverage,
}

impl Strategy {
    /// Every strategy, in the order reports list them.
    pub const ALL: [Strategy; 5] = [
        Strategy::Uniform,
        Strategy::Swarm,
        Strategy::Aimed,
        Strategy::Pct,
        Strategy::Coverage,
    ];

    /// [`Strategy::Uniform`], as a function (for serde defaults: what a file written
    /// before strategies existed ran).
    pub fn uniform() -> Strategy {
        Strategy::Uniform
    }

    /// Its name on the command line and in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Uniform => "uniform",
            Strategy::Swarm => "swarm",
            Strategy::Aimed => "aimed",
            Strategy::Pct => "pct",
            Strategy::Coverage => "coverage",
        }
    }

    /// The strategy named `name`.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The scenario seed `seed` runs in, within `base`. Under [`Strategy::Coverage`],
    /// the one it runs in with an empty corpus (in the first generation); a sweep draws
    /// the later generations' with [`Strategy::scenario_near`].
    pub fn scenario_for(self, base: &Scenario, seed: u64) -> Scenario {
        self.scenario_near(base, seed, &[])
    }

    /// The scenario seed `seed` runs in, within `base`, given the corpus `near` of
    /// scenarios that reached a new pair (only [`Strategy::Coverage`] uses it): on half
    /// the seeds, one of them with one part (the faults with their aim, the clients, the
    /// hold or the drops) drawn anew, or none; on the others, the seed's aimed scenario.
    pub fn scenario_near(self, base: &Scenario, seed: u64, near: &[Scenario]) -> Scenario {
        match self {
            Strategy::Uniform => base.clone(),
            Strategy::Swarm => swarm(&mut swarm_rng(seed), base),
            Strategy::Aimed => aimed(&mut swarm_rng(seed), base),
            Strategy::Pct => pct(&mut swarm_rng(seed), base),
            Strategy::Coverage => near_one(&mut swarm_rng(seed), base, near),
        }
    }
}

/// Mixed into the seed, so that a seed's swarm draws are not its run's first draws.
const SWARM_STREAM: u64 = 0x5157_4152_4d21_0001;

/// Shortest hold a swarm draws, in ms: long enough that others contend for a grant while
/// one is held and a fault can land between a grant and its hand-over.
const SWARM_HOLD_MS: u64 = 200;

/// A rate raised `factor` times, capped at one strike in two steps.
fn raised(r: Rate, factor: u32) -> Rate {
    if r.is_never() {
        return r;
    }
    let num = u64::from(r.num) * u64::from(factor);
    let den = u64::from(r.den).max(1);
    if num * 2 >= den {
        Rate::new(1, 2)
    } else {
        Rate::new(num as u32, den as u32)
    }
}

/// Every fault kind's rate, in a fixed order (the order swarm draws them in).
fn rates_mut(f: &mut zklock_sim::Faults) -> [&mut Rate; 8] {
    [
        &mut f.connection_loss,
        &mut f.lost_create_response,
        &mut f.forced_expiry,
        &mut f.partition,
        &mut f.pause,
        &mut f.crash,
        &mut f.delayed_delivery,
        &mut f.local_expiry,
    ]
}

fn swarm_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ SWARM_STREAM)
}

fn swarm(rng: &mut ChaCha8Rng, base: &Scenario) -> Scenario {
    let mut sc = base.clone();
    // Fault kinds: each kept with probability one half, at least one if any was on; the
    // kept ones raised by how many were dropped, so that the run's fault pressure stays.
    let kinds = rates_mut(&mut sc.faults);
    let on: Vec<usize> = (0..kinds.len()).filter(|&i| !kinds[i].is_never()).collect();
    if !on.is_empty() {
        let mut keep: Vec<bool> = on.iter().map(|_| rng.random_bool(0.5)).collect();
        if !keep.contains(&true) {
            let i = rng.random_range(0..on.len());
            keep[i] = true;
        }
        let kept = keep.iter().filter(|&&k| k).count() as u32;
        let factor = (on.len() as u32).div_ceil(kept).max(1);
        for (&i, &k) in on.iter().zip(&keep) {
            *kinds[i] = if k {
                raised(*kinds[i], factor)
            } else {
                Rate::NEVER
            };
        }
    }
    // The workload's shape, within the base's: fewer clients (never fewer than the
    // readers and two more), longer holds, no drops.
    let clients_min = (sc.readers + 2).min(sc.clients).max(2.min(sc.clients));
    if sc.clients > clients_min {
        sc.clients = rng.random_range(clients_min..=sc.clients);
    }
    if rng.random_bool(0.5) {
        sc.hold_ms = sc.hold_ms.max(SWARM_HOLD_MS);
    }
    if rng.random_bool(0.25) {
        sc.drop_every = 0;
    }
    sc
}

/// The operations an aimed seed strikes: those every recipe sends.
const AIMS: [ZkOp; 5] = [
    ZkOp::Delete,
    ZkOp::Create,
    ZkOp::GetChildren,
    ZkOp::GetData,
    ZkOp::Exists,
];

/// How much an aimed seed raises its rates: a fault draws only at steps where a request
/// of the aimed op is in flight, a few in ten of a run's steps.
const AIM_RAISE: u32 = 4;

/// The seed's swarm scenario (the same draws as [`Strategy::Swarm`]'s, then more from the
/// same stream), aimed at one operation on half the seeds. An aim set by the base stays.
fn aimed(rng: &mut ChaCha8Rng, base: &Scenario) -> Scenario {
    let mut sc = swarm(rng, base);
    if sc.faults.aim.is_none() && rng.random_bool(0.5) {
        sc.faults.aim = Some(AIMS[rng.random_range(0..AIMS.len())]);
        for r in rates_mut(&mut sc.faults) {
            *r = raised(*r, AIM_RAISE);
        }
    }
    sc
}

/// Change points a PCT seed draws its rate among: one step in 8, 32 or 128 of those with
/// two or more clients ready. A run of the default workload has some thousands such
/// steps, so from a few to some hundreds of changes: PCT's depth, for bugs of a few
/// ordering constraints, at the scale of one acquisition's round trips.
const PCT_CHANGE_EVERY: [u32; 3] = [8, 32, 128];

/// The seed's aimed scenario (the same draws as [`Strategy::Aimed`]'s, then more from
/// the same stream), ordered by priorities on half the seeds. Priorities set by the base
/// stay.
fn pct(rng: &mut ChaCha8Rng, base: &Scenario) -> Scenario {
    let mut sc = aimed(rng, base);
    if sc.priorities.is_none() && rng.random_bool(0.5) {
        let every = PCT_CHANGE_EVERY[rng.random_range(0..PCT_CHANGE_EVERY.len())];
        sc.priorities = Some(Priorities {
            change: Rate::new(1, every),
        });
    }
    sc
}

/// A coverage seed's scenario: its aimed draw, then (on half the seeds, when the corpus
/// has any) a corpus scenario with one part taken from that draw, or none taken: another
/// schedule of the same scenario.
fn near_one(rng: &mut ChaCha8Rng, base: &Scenario, near: &[Scenario]) -> Scenario {
    let fresh = aimed(rng, base);
    if near.is_empty() || rng.random_bool(0.5) {
        return fresh;
    }
    let mut sc = near[rng.random_range(0..near.len())].clone();
    // The faults go whole: an aim comes with the rates raised for it.
    match rng.random_range(0..6) {
        0 | 1 => {}
        2 => sc.faults = fresh.faults,
        3 => sc.clients = fresh.clients,
        4 => sc.hold_ms = fresh.hold_ms,
        _ => sc.drop_every = fresh.drop_every,
    }
    sc
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_sim::Faults;

    #[test]
    fn uniform_runs_the_base_and_swarm_is_a_function_of_the_seed() {
        let base = Scenario::default();
        assert_eq!(Strategy::Uniform.scenario_for(&base, 7), base);
        let a = Strategy::Swarm.scenario_for(&base, 7);
        assert_eq!(a, Strategy::Swarm.scenario_for(&base, 7));
        let differ = (0..50).any(|s| Strategy::Swarm.scenario_for(&base, s) != a);
        assert!(differ, "every seed drew the same scenario");
    }

    #[test]
    fn swarm_stays_within_the_base_and_keeps_a_fault_kind() {
        let base = Scenario::default();
        for seed in 0..500 {
            let sc = Strategy::Swarm.scenario_for(&base, seed);
            assert!(sc.validate().is_ok(), "seed {seed}: {sc:?}");
            assert!((2..=base.clients).contains(&sc.clients), "seed {seed}");
            assert!(sc.readers <= sc.clients);
            assert!(sc.faults.kinds_on() >= 1, "seed {seed}: no fault kind left");
        }
        // No fault in the base: none in any seed's.
        let quiet = Scenario {
            faults: Faults::none(),
            ..Scenario::default()
        };
        assert_eq!(
            Strategy::Swarm.scenario_for(&quiet, 3).faults,
            Faults::none()
        );
    }

    #[test]
    fn names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
        }
        assert_eq!(Strategy::from_name("feedback"), None);
    }

    #[test]
    fn aimed_is_swarm_with_an_aim_on_about_half_the_seeds() {
        let base = Scenario::default();
        let mut aimed = 0;
        for seed in 0..400 {
            let a = Strategy::Aimed.scenario_for(&base, seed);
            let s = Strategy::Swarm.scenario_for(&base, seed);
            assert!(a.validate().is_ok(), "seed {seed}: {a:?}");
            // The same workload as the seed's swarm scenario; faults raised if aimed.
            assert_eq!(
                (a.clients, a.hold_ms, a.drop_every),
                (s.clients, s.hold_ms, s.drop_every)
            );
            match a.faults.aim {
                None => assert_eq!(a, s, "seed {seed}"),
                Some(op) => {
                    aimed += 1;
                    assert!(AIMS.contains(&op));
                    assert!(
                        a.faults.connection_loss.is_never() == s.faults.connection_loss.is_never()
                    );
                }
            }
        }
        assert!((120..=280).contains(&aimed), "{aimed} of 400 seeds aimed");
    }

    #[test]
    fn pct_is_aimed_with_priorities_on_about_half_the_seeds() {
        let base = Scenario::default();
        let mut ordered = 0;
        for seed in 0..400 {
            let p = Strategy::Pct.scenario_for(&base, seed);
            let a = Strategy::Aimed.scenario_for(&base, seed);
            assert!(p.validate().is_ok(), "seed {seed}: {p:?}");
            match p.priorities {
                None => assert_eq!(p, a, "seed {seed}"),
                Some(pr) => {
                    ordered += 1;
                    assert_eq!(
                        Scenario {
                            priorities: None,
                            ..p
                        },
                        a,
                        "seed {seed}"
                    );
                    assert!(PCT_CHANGE_EVERY.contains(&pr.change.den));
                }
            }
        }
        assert!(
            (120..=280).contains(&ordered),
            "{ordered} of 400 seeds ordered"
        );
    }

    #[test]
    fn coverage_is_aimed_without_a_corpus_and_near_a_corpus_scenario_on_about_half_the_seeds() {
        let base = Scenario::default();
        for seed in 0..50 {
            assert_eq!(
                Strategy::Coverage.scenario_for(&base, seed),
                Strategy::Aimed.scenario_for(&base, seed)
            );
        }
        // A corpus scenario no draw makes: one client fewer than any swarm keeps.
        let marked = Scenario {
            clients: 1,
            ..Strategy::Aimed.scenario_for(&base, 1)
        };
        let mut near = 0;
        for seed in 0..400 {
            let sc = Strategy::Coverage.scenario_near(&base, seed, std::slice::from_ref(&marked));
            assert!(sc.validate().is_ok(), "seed {seed}: {sc:?}");
            assert_eq!(
                sc,
                Strategy::Coverage.scenario_near(&base, seed, std::slice::from_ref(&marked)),
                "seed {seed}: not a function of the seed and the corpus"
            );
            // Near the marked scenario: it differs from it in one part at most.
            let differs = [
                sc.faults != marked.faults,
                sc.clients != marked.clients,
                sc.hold_ms != marked.hold_ms,
                sc.drop_every != marked.drop_every,
            ];
            if differs.iter().filter(|&&d| d).count() <= 1 && sc.priorities == marked.priorities {
                near += 1;
            }
        }
        assert!(
            (150..=300).contains(&near),
            "{near} of 400 seeds near the corpus"
        );
    }
}
