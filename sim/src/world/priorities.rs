//! PCT-style request order ([`Priorities`]): of the clients with a request ready, the
//! highest priority runs. Every priority and change point is a chooser draw of kind
//! [`ChoiceKind::Priority`], so the order replays and shrinks with the run's choices.

use super::{ClientId, World};
use crate::chooser::ChoiceKind;
use crate::scenario::Priorities;

/// Priorities a client draws among when it is first ready: enough that two clients
/// rarely tie (a tie goes to the lower client id).
const LEVELS: usize = 1 << 16;

#[derive(Debug)]
pub(crate) struct PriorityOrder {
    plan: Priorities,
    /// Each client's priority, once drawn; a demoted client's is below every drawn one.
    ranks: Vec<Option<i64>>,
    /// The next demoted client's priority: each below the one before.
    next_low: i64,
    /// Scratch list of the clients ready, kept to spare an allocation per step.
    ready: Vec<ClientId>,
}

impl PriorityOrder {
    pub(crate) fn new(plan: Priorities) -> PriorityOrder {
        PriorityOrder {
            plan,
            ranks: Vec::new(),
            next_low: 0,
            ready: Vec::new(),
        }
    }
}

impl World {
    /// The position, among the ready clients in id order, of the one whose request runs
    /// next: the highest priority, after this step's change point if it is one.
    pub(super) fn by_priority(&mut self) -> usize {
        let mut order = self.priorities.take().expect("a priority order");
        order.ready.clear();
        order.ready.extend(self.ready_clients());
        for &c in &order.ready {
            if order.ranks.len() <= c {
                order.ranks.resize(c + 1, None);
            }
            if order.ranks[c].is_none() {
                // Draw 0 is the lowest: a shrunk trace past its end runs clients in
                // id order.
                order.ranks[c] = Some(self.choose(ChoiceKind::Priority, LEVELS) as i64 + 1);
            }
        }
        let top = |o: &PriorityOrder| {
            (0..o.ready.len())
                .max_by_key(|&i| (o.ranks[o.ready[i]], std::cmp::Reverse(i)))
                .expect("a client ready")
        };
        let change = order.plan.change;
        if order.ready.len() > 1 && !change.is_never() {
            // Draw 0 is "no change", as a fault draw's 0 is "no fault".
            let den = change.den.max(1) as usize;
            let d = self.choose(ChoiceKind::Priority, den);
            if d >= den.saturating_sub(change.num as usize) {
                let i = top(&order);
                order.next_low -= 1;
                order.ranks[order.ready[i]] = Some(order.next_low);
            }
        }
        let i = top(&order);
        self.priorities = Some(order);
        i
    }
}
