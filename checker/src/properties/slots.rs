//! Dense client slots. A history has few clients, so per-client state lives in a `Vec`
//! indexed by slot instead of a map. Slots follow client id order, so walking them visits
//! clients in the order the maps they replace did.

use zklock_recipe::history::{Event, History};

/// One event as the properties read it, with its client's slot: what the walk hands
/// every judge and the beliefs they share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step<'h> {
    /// Index into `history.events`.
    pub index: usize,
    pub event: &'h Event,
    /// The slot of the event's client.
    pub slot: usize,
}

/// The clients of one history, each with a slot in `0..len()`.
#[derive(Clone, Debug)]
pub(crate) struct Slots {
    /// Every client id that appears, ascending; the slot is the position. Empty when
    /// `identity`.
    ids: Vec<u32>,
    /// The ids are exactly `0..len`: the slot is the id (the usual case).
    identity: bool,
    len: usize,
}

impl Slots {
    pub(crate) fn new(history: &History) -> Slots {
        // The usual case, ids 0..n with n at most 64, is told by a bit mask: one cheap
        // pass with no search.
        let mut seen = 0u64;
        let mut wide = false;
        for e in &history.events {
            wide |= e.client >= 64;
            seen |= 1 << (e.client % 64);
        }
        // `seen` is 2^n - 1: the ids are exactly 0..n.
        if !wide && seen & seen.wrapping_add(1) == 0 {
            return Slots {
                ids: Vec::new(),
                identity: true,
                len: seen.count_ones() as usize,
            };
        }
        let mut ids: Vec<u32> = Vec::new();
        let mut last = None;
        for e in &history.events {
            // Consecutive events often share a client: skip the search then.
            if last == Some(e.client) {
                continue;
            }
            last = Some(e.client);
            if let Err(at) = ids.binary_search(&e.client) {
                ids.insert(at, e.client);
            }
        }
        Slots {
            len: ids.len(),
            ids,
            identity: false,
        }
    }

    /// How many clients.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the slot of each client is its id.
    pub(crate) fn is_identity(&self) -> bool {
        self.identity
    }

    /// The slot of `client`, which must appear in the history.
    #[inline]
    pub(crate) fn of(&self, client: u32) -> usize {
        if self.identity {
            client as usize
        } else {
            self.ids
                .binary_search(&client)
                .expect("every event's client has a slot")
        }
    }

    /// A per-client table, every entry `T::default()`.
    pub(crate) fn table<T: Default + Clone>(&self) -> Vec<T> {
        vec![T::default(); self.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;
    use zklock_recipe::SessionId;
    use zklock_recipe::history::{Event, EventKind, History};

    fn history(clients: &[u32]) -> History {
        let events = clients
            .iter()
            .map(|&client| Event {
                time_us: 0,
                client,
                session: SessionId(1),
                kind: EventKind::Done,
            })
            .collect();
        History { events }
    }

    #[test]
    fn slots_follow_client_id_order_whether_ids_are_dense_or_not() {
        let dense = Slots::new(&history(&[2, 0, 1, 1, 0]));
        assert_eq!((dense.len(), dense.of(2), dense.of(1)), (3, 2, 1));
        let all = Slots::new(&history(&(0..64).rev().collect::<Vec<_>>()));
        assert_eq!((all.len(), all.of(63), all.of(5)), (64, 63, 5));
        let gap = Slots::new(&history(&[0, 2]));
        assert_eq!((gap.len(), gap.of(0), gap.of(2)), (2, 0, 1));
        let sparse = Slots::new(&history(&[70, 3, 70, 900]));
        assert_eq!(sparse.len(), 3);
        assert_eq!([sparse.of(3), sparse.of(70), sparse.of(900)], [0, 1, 2]);
    }
}
