//! Coverage feedback for [`Strategy::Coverage`](crate::Strategy::Coverage): which
//! (recipe step, fault) pairs a run reached, and the corpus of scenarios that reached a
//! pair first.
//!
//! A pair is one fault and where it struck: the fault's kind, the struck client's last
//! recipe step (the last event of its own it recorded: an acquire asked for, a grant, a
//! release, an item taken…) and the request it had in flight, by operation and directory
//! (an inner lock's delete and a lease's delete are told apart by their directories).
//!
//! The sweep runs its seeds in generations of [`GENERATION_SEEDS`]. After a generation,
//! its runs are offered to the corpus in seed order; a run that reached a pair no earlier
//! run had reached adds its scenario. The next generation draws half its seeds near a
//! corpus scenario. So a seed's scenario depends on the runs of the generations before
//! its own, and on nothing else: not on the thread count, not on timing. Generations
//! count the sweep's own seeds from its first (`--seed-start`), within its shard, so a
//! shard's seeds run near its own corpus, and the shards of a range do not run the seeds
//! one sweep of it would. Its trace records a seed's scenario, and a regressions file
//! keeps it with the seed.

use crate::properties::counters::fault_slot;
use std::collections::BTreeSet;
use zklock_recipe::history::{EventKind, History, ZkOp};
use zklock_sim::Scenario;

/// Seeds in a generation: the corpus a seed's scenario is drawn from is the one the
/// generations before its own built. Small enough that feedback comes soon (a canary of
/// the default scenario needs some hundreds to thousands of seeds), large enough that the
/// wait at each generation's end (a thread idles until the slowest seed still running
/// ends) costs little.
pub const GENERATION_SEEDS: u64 = 128;

/// The most scenarios the corpus keeps: past it, runs that reach new pairs add their pairs
/// but not their scenarios. The pairs are bounded too (kinds × steps × requests in
/// flight), so a sweep of the shipped recipes stays well within it.
pub const CORPUS_SCENARIOS_MAX: usize = 4096;

/// The (recipe step, fault) pairs of a run, each as a 64-bit digest, sorted, without
/// repeats.
pub fn pairs(history: &History) -> Vec<u64> {
    // Per client: its last recipe step, and its requests in flight (op id, op, directory).
    let mut step: Vec<&'static str> = Vec::new();
    let mut in_flight: Vec<Vec<(u64, ZkOp, &str)>> = Vec::new();
    let mut out = Vec::new();
    for e in &history.events {
        let c = e.client as usize;
        if c >= step.len() {
            step.resize(c + 1, "start");
            in_flight.resize_with(c + 1, Vec::new);
        }
        match &e.kind {
            EventKind::OpInvoke {
                op_id, op, path, ..
            } => {
                in_flight[c].push((*op_id, *op, directory(*op, path)));
            }
            EventKind::OpOk { op_id }
            | EventKind::OpFail { op_id, .. }
            | EventKind::OpUnknown { op_id } => {
                in_flight[c].retain(|(id, ..)| id != op_id);
            }
            EventKind::Fault { fault } => {
                let mut h = Fnv::new();
                // Its kind, its durations left out.
                h.write(&[fault_slot(*fault) as u8]);
                h.write(step[c].as_bytes());
                match in_flight[c].last() {
                    Some((_, op, dir)) => {
                        h.write(&[1, *op as u8]);
                        h.write(dir.as_bytes());
                    }
                    None => h.write(&[0]),
                }
                out.push(h.finish());
            }
            EventKind::Session { .. }
            | EventKind::WatchEvent { .. }
            | EventKind::ResourceRead { .. }
            | EventKind::ResourceWrite { .. } => {}
            other => step[c] = other.tag(),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The directory a request works in: a listing's own path, any other request's parent
/// (a lock node's name carries its sequence number, which would make every run new).
fn directory(op: ZkOp, path: &str) -> &str {
    if op == ZkOp::GetChildren {
        return path;
    }
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => path,
    }
}

/// FNV-1a, 64 bits: a fixed function, so a sweep's corpus is the same on every machine.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3) ^ 0xff;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The pairs reached so far, and the scenarios that reached one first, in the order
/// they were offered.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    seen: BTreeSet<u64>,
    scenarios: Vec<Scenario>,
}

impl Corpus {
    /// Offers a run's scenario and pairs: the scenario joins when a pair is new (and the
    /// corpus is not full). Returns how many pairs were new.
    pub fn offer(&mut self, scenario: &Scenario, pairs: &[u64]) -> usize {
        let new = pairs.iter().filter(|&&p| self.seen.insert(p)).count();
        if new > 0 && self.scenarios.len() < CORPUS_SCENARIOS_MAX {
            self.scenarios.push(scenario.clone());
        }
        new
    }

    /// The scenarios, in the order they joined.
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// How many distinct pairs were reached.
    pub fn pairs_reached(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zklock_recipe::SessionId;
    use zklock_recipe::history::{Event, FaultKind};

    fn ev(client: u32, kind: EventKind) -> Event {
        Event {
            time_us: 0,
            client,
            session: SessionId::default(),
            kind,
        }
    }

    fn invoke(client: u32, op_id: u64, op: ZkOp, path: &str) -> Event {
        ev(
            client,
            EventKind::OpInvoke {
                op_id,
                op,
                path: path.into(),
                watch: false,
            },
        )
    }

    fn fault(client: u32) -> Event {
        ev(
            client,
            EventKind::Fault {
                fault: FaultKind::ConnectionLoss,
            },
        )
    }

    #[test]
    fn a_fault_is_told_apart_by_step_and_by_the_directory_of_its_request_in_flight() {
        let granted = ev(
            0,
            EventKind::Acquired {
                token: 1,
                node: "n".into(),
            },
        );
        // The same fault on a delete in two directories, and with nothing in flight.
        let inner = History {
            events: vec![
                granted.clone(),
                invoke(0, 1, ZkOp::Delete, "/s/lock/n-0001"),
                fault(0),
            ],
        };
        let lease = History {
            events: vec![
                granted.clone(),
                invoke(0, 1, ZkOp::Delete, "/s/leases/n-0002"),
                fault(0),
            ],
        };
        let idle = History {
            events: vec![
                granted,
                invoke(0, 1, ZkOp::Delete, "/s/lock/n-0001"),
                ev(0, EventKind::OpOk { op_id: 1 }),
                fault(0),
            ],
        };
        let [a, b, c] = [&inner, &lease, &idle].map(pairs);
        assert_eq!((a.len(), b.len(), c.len()), (1, 1, 1));
        assert!(a != b && a != c && b != c, "{a:?} {b:?} {c:?}");
        // Sequence numbers do not count: another node of the same directory is the same pair.
        let other_node = History {
            events: vec![
                ev(
                    0,
                    EventKind::Acquired {
                        token: 1,
                        node: "n".into(),
                    },
                ),
                invoke(0, 7, ZkOp::Delete, "/s/lock/n-0009"),
                fault(0),
            ],
        };
        assert_eq!(pairs(&other_node), a);
        // A step before the grant is another pair.
        let asked = History {
            events: vec![
                ev(
                    0,
                    EventKind::AcquireInvoked {
                        role: zklock_recipe::history::LockRole::Exclusive,
                        mode: zklock_recipe::history::AcquireMode::Blocking,
                        lock: None,
                    },
                ),
                invoke(0, 1, ZkOp::Delete, "/s/lock/n-0001"),
                fault(0),
            ],
        };
        assert_ne!(pairs(&asked), a);
    }

    #[test]
    fn the_corpus_keeps_a_scenario_only_when_it_reached_a_new_pair() {
        let mut corpus = Corpus::default();
        let one = Scenario::default();
        let two = Scenario {
            clients: 3,
            ..Scenario::default()
        };
        assert_eq!(corpus.offer(&one, &[1, 2]), 2);
        assert_eq!(corpus.offer(&two, &[2]), 0);
        assert_eq!(corpus.offer(&two, &[2, 3]), 1);
        assert_eq!(corpus.scenarios(), [one, two]);
        assert_eq!(corpus.pairs_reached(), 3);
    }
}
