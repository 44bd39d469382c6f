//! Who believes it processes which item, event by event.

use crate::holds::is_crash;
use std::collections::BTreeMap;
use zklock_recipe::history::{Event, EventKind, FaultKind};

/// One consumer's processing of an item, as believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Processing {
    pub item: String,
    /// Index of its `ProcessStart`.
    pub start: usize,
    /// Paused since it began to take the item.
    pub stale: bool,
}

/// Follows every consumer's belief. Feed it every event in order with [`observe`].
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    open: BTreeMap<u32, Processing>,
    /// Each client's last pause, and where its current take began.
    paused: BTreeMap<u32, usize>,
    take_began: BTreeMap<u32, usize>,
}

impl Tracker {
    /// Whether `client`, starting now, was paused since it began to take its item.
    pub(crate) fn paused_since_take(&self, client: u32) -> bool {
        let since = self.take_began.get(&client).copied().unwrap_or(0);
        self.paused.get(&client).is_some_and(|&p| p >= since)
    }

    /// The processing of `item` by clients other than `client`, open now.
    pub(crate) fn others_on<'a>(
        &'a self,
        client: u32,
        item: &'a str,
    ) -> impl Iterator<Item = (u32, &'a Processing)> + 'a {
        self.open
            .iter()
            .filter(move |(c, p)| **c != client && p.item == item)
            .map(|(c, p)| (*c, p))
    }

    /// Updates the beliefs with event `i`. Call after judging a `ProcessStart` against
    /// the beliefs before it.
    pub(crate) fn observe(&mut self, i: usize, e: &Event) {
        match &e.kind {
            EventKind::ProcessStart { item, .. } => {
                let stale = self.paused_since_take(e.client);
                self.open.insert(
                    e.client,
                    Processing {
                        item: item.clone(),
                        start: i,
                        stale,
                    },
                );
                self.take_began.insert(e.client, i);
            }
            EventKind::ProcessEnd { .. } | EventKind::Lost { .. } | EventKind::Done => {
                self.open.remove(&e.client);
                self.take_began.insert(e.client, i);
            }
            EventKind::Fault {
                fault: FaultKind::Pause { .. },
            } => {
                self.paused.insert(e.client, i);
                if let Some(p) = self.open.get_mut(&e.client) {
                    p.stale = true;
                }
            }
            _ if is_crash(e) => {
                self.open.remove(&e.client);
                self.take_began.insert(e.client, i);
            }
            _ => {}
        }
    }
}
