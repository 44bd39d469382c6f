//! Random fault injection: at each step, while faults are on, one draw decides whether a
//! fault strikes and which; further draws pick its target and duration.
//!
//! Draw 0 always means "no fault", so a replayed list that runs out (a shrunk trace)
//! continues fault-free.

use super::request::RequestKind;
use super::{ClientId, Conn, World};
use crate::chooser::ChoiceKind;
use crate::scenario::{FaultMode, Faults, Rate, fault_durations_ms};
use zklock_recipe::history::FaultKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ConnectionLoss,
    LostCreateResponse,
    ForcedExpiry,
    Partition,
    Pause,
    Crash,
    DelayedDelivery,
    LocalExpiry,
}

/// The faults of a scenario, as weights over one common denominator.
#[derive(Clone, Debug)]
pub(crate) struct FaultPlan {
    heal_us: u64,
    denom: u64,
    /// (kind, weight) in a fixed order; the weights sum to less than `denom`.
    table: Vec<(Kind, u64)>,
    /// Draws below this strike no fault: the kinds' ranges all lie above it. Nearly
    /// every draw lands here, so most steps skip the table.
    quiet: u64,
    partition_ms_max: u64,
    pause_ms_max: u64,
    delay_ms_max: u64,
    /// Faults injected so far, for summaries.
    pub(crate) injected: u64,
    /// `Some(k)`: bounded mode, at most k faults, each an explicit choice.
    bounded: Option<u32>,
    /// Bounded mode: whether a partition's or pause's duration is chosen
    /// ([`Shape::fault_durations_chosen`](crate::Shape::fault_durations_chosen)).
    durations_chosen: bool,
    /// [`Faults::aim`]: faults strike only a client with a request of this op in flight.
    aim: Option<RequestKind>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The fault table's denominator at most.
const DENOM_MAX: u64 = 1 << 40;

impl FaultPlan {
    pub(crate) fn new(
        f: &Faults,
        mode: FaultMode,
        heal_ms: u64,
        durations_chosen: bool,
    ) -> FaultPlan {
        let rates = [
            (Kind::ConnectionLoss, f.connection_loss),
            (Kind::LostCreateResponse, f.lost_create_response),
            (Kind::ForcedExpiry, f.forced_expiry),
            (Kind::Partition, f.partition),
            (Kind::Pause, f.pause),
            (Kind::Crash, f.crash),
            (Kind::DelayedDelivery, f.delayed_delivery),
            (Kind::LocalExpiry, f.local_expiry),
        ];
        let on: Vec<(Kind, Rate)> = rates.into_iter().filter(|(_, r)| !r.is_never()).collect();
        // The least common multiple keeps every integer ratio exact, up to 2^40 (capped
        // at each step, so that a file's large denominators cannot overflow it).
        let denom = on.iter().fold(1u64, |l, (_, r)| {
            (l / gcd(l, r.den as u64))
                .saturating_mul(r.den as u64)
                .min(DENOM_MAX)
        });
        // In 128 bits: a numerator up to 2^32 times a denominator up to 2^40. A rate
        // above one strikes at every step.
        let table: Vec<(Kind, u64)> = on
            .iter()
            .map(|(k, r)| {
                let w = u128::from(r.num) * u128::from(denom) / u128::from(r.den.max(1));
                (*k, w.min(u128::from(denom)) as u64)
            })
            .collect();
        let quiet = table.iter().fold(denom, |hi, &(_, w)| hi.saturating_sub(w));
        FaultPlan {
            heal_us: heal_ms * 1000,
            denom,
            table,
            quiet,
            partition_ms_max: f.partition_ms_max.max(1),
            pause_ms_max: f.pause_ms_max.max(1),
            delay_ms_max: f.delay_ms_max.max(1),
            injected: 0,
            bounded: match mode {
                FaultMode::Random => None,
                FaultMode::Bounded { faults_max } => Some(faults_max),
            },
            durations_chosen,
            aim: f.aim,
        }
    }
}

impl World {
    fn faults_on(&self) -> bool {
        self.faults
            .as_ref()
            .is_some_and(|p| self.now_us < p.heal_us && !p.table.is_empty())
    }

    /// The delay before a reconnect: fixed once faults stop, else drawn (reconnect
    /// delays are a fault too).
    pub(crate) fn reconnect_delay_us(&mut self) -> u64 {
        let base = self.cfg.reconnect_delay_ms * 1000;
        let bounded = self.faults.as_ref().is_some_and(|p| p.bounded.is_some());
        if self.faults_on() && !bounded {
            base * (1 + self.choose(ChoiceKind::Delay, 4) as u64)
        } else {
            base
        }
    }

    /// One draw: does a fault strike now? Returns whether one did.
    pub(crate) fn maybe_fault(&mut self) -> bool {
        if !self.faults_on() {
            return false;
        }
        let plan = self.faults.as_ref().expect("faults on");
        let aim = plan.aim;
        // Aimed: a step with no such request in flight draws nothing (the scan is cheap
        // beside a draw, and only aimed runs pay it).
        if let Some(op) = aim
            && !(0..self.clients.len()).any(|c| self.has_in_flight(c, op))
        {
            return false;
        }
        let plan = self.faults.as_ref().expect("faults on");
        let (denom, kinds, quiet) = (plan.denom, plan.table.len(), plan.quiet);
        let bounded = plan.bounded.map(|max| (max, plan.injected));
        // Draw first, then look the kind up: the table is read, never copied (this runs
        // at every step).
        let draw = match bounded {
            Some((max, injected)) => {
                if injected >= max as u64 {
                    return false;
                }
                // 0 is "no fault"; i is the i-th enabled kind.
                self.choose(ChoiceKind::Fault, kinds + 1) as u64
            }
            None => {
                let draw = self.choose(ChoiceKind::Fault, denom as usize) as u64;
                if draw < quiet {
                    return false;
                }
                draw
            }
        };
        let table = &self.faults.as_ref().expect("faults on").table;
        let kind = match bounded {
            Some(_) => (draw as usize).checked_sub(1).map(|i| table[i].0),
            None => {
                // Fault i occupies the top of the range, so that 0 means "no fault".
                let mut hi = denom;
                let mut kind = None;
                for &(k, w) in table {
                    if draw >= hi.saturating_sub(w) && draw < hi {
                        kind = Some(k);
                        break;
                    }
                    hi = hi.saturating_sub(w);
                }
                kind
            }
        };
        let Some(kind) = kind else {
            return false;
        };
        let targets: Vec<ClientId> = (0..self.clients.len())
            .filter(|&c| self.eligible(c, kind) && aim.is_none_or(|op| self.has_in_flight(c, op)))
            .collect();
        if targets.is_empty() {
            return false;
        }
        let c = targets[self.choose(ChoiceKind::FaultTarget, targets.len())];
        let plan = self.faults.as_mut().expect("faults on");
        plan.injected += 1;
        let (part_max, pause_max, delay_max) =
            (plan.partition_ms_max, plan.pause_ms_max, plan.delay_ms_max);
        let bounded = plan.bounded.is_some();
        let chosen = bounded && plan.durations_chosen;
        match kind {
            Kind::ConnectionLoss => {
                self.record_fault(c, FaultKind::ConnectionLoss);
                self.drop_connection(c);
            }
            Kind::LostCreateResponse => {
                self.record_fault(c, FaultKind::LostCreateResponse);
                self.clients[c].lose_next_create = true;
            }
            Kind::ForcedExpiry => {
                self.record_fault(c, FaultKind::ForcedExpiry);
                self.force_expire(c);
            }
            Kind::Partition => {
                let ms = self.long_fault_ms(c, bounded, chosen, part_max);
                self.record_fault(c, FaultKind::Partition { duration_ms: ms });
                self.partition(c, ms * 1000);
            }
            Kind::Pause => {
                let ms = self.long_fault_ms(c, bounded, chosen, pause_max);
                self.record_fault(c, FaultKind::Pause { duration_ms: ms });
                self.pause(c, ms * 1000);
            }
            Kind::Crash => {
                self.record_fault(c, FaultKind::Crash);
                self.crash(c);
            }
            Kind::DelayedDelivery => {
                let ms = self.fault_duration_ms(bounded, delay_max);
                self.record_fault(c, FaultKind::DelayedDelivery { delay_ms: ms });
                self.delay_delivery(c, ms * 1000);
            }
            Kind::LocalExpiry => {
                self.record_fault(c, FaultKind::LocalExpiry);
                self.expire_locally(c);
            }
        }
        true
    }

    /// A duration up to `max_ms`: drawn in eighths, or the maximum in bounded mode (where
    /// the long case, outliving the session, is the interesting one).
    fn fault_duration_ms(&mut self, bounded: bool, max_ms: u64) -> u64 {
        if bounded {
            max_ms
        } else {
            max_ms * (1 + self.choose(ChoiceKind::Delay, 8) as u64) / 8
        }
    }

    /// A partition's or pause's duration for client `c`: as [`Self::fault_duration_ms`],
    /// or, when `chosen`, the chooser's pick among [`fault_durations_ms`] around the
    /// client's session timeout.
    fn long_fault_ms(&mut self, c: ClientId, bounded: bool, chosen: bool, max_ms: u64) -> u64 {
        if !chosen {
            return self.fault_duration_ms(bounded, max_ms);
        }
        let options = fault_durations_ms(max_ms, self.clients[c].timeout_us / 1000);
        options[self.choose(ChoiceKind::FaultDuration, options.len())]
    }

    fn eligible(&self, c: ClientId, kind: Kind) -> bool {
        let cl = &self.clients[c];
        let live = cl.conn == Conn::Connected && cl.frozen_until.is_none() && !cl.crashed;
        match kind {
            Kind::ConnectionLoss
            | Kind::ForcedExpiry
            | Kind::Crash
            | Kind::Pause
            | Kind::LocalExpiry => live,
            Kind::Partition => live && cl.partitioned_until.is_none(),
            Kind::LostCreateResponse => live && !cl.lose_next_create,
            Kind::DelayedDelivery => live && cl.delayed_until.is_none(),
        }
    }

    /// Whether client `c` has a request of `op` sent and not yet applied.
    fn has_in_flight(&self, c: ClientId, op: RequestKind) -> bool {
        self.clients[c].outbound.iter().any(|o| o.req.kind() == op)
    }

    pub(crate) fn record_fault(&mut self, c: ClientId, fault: FaultKind) {
        self.record(c, zklock_recipe::history::EventKind::Fault { fault });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace may give any rate: a numerator of 2^32 - 1 over a small denominator, with
    /// other rates' denominators making the table's 2^40, once overflowed the table.
    #[test]
    fn a_huge_rate_with_large_denominators_does_not_overflow_the_fault_table() {
        let f = Faults {
            connection_loss: Rate::new(u32::MAX, 1001),
            pause: Rate::new(1, 21_501),
            crash: Rate::new(1, u32::MAX),
            partition: Rate::new(1, u32::MAX - 2),
            ..Faults::default()
        };
        let plan = FaultPlan::new(&f, FaultMode::Random, 1000, false);
        assert_eq!(plan.denom, DENOM_MAX);
        // The rate above one strikes at every step: nothing is left quiet.
        assert_eq!(plan.quiet, 0);
        let loss = plan.table.iter().find(|(k, _)| *k == Kind::ConnectionLoss);
        assert_eq!(loss.map(|(_, w)| *w), Some(DENOM_MAX));
    }
}
