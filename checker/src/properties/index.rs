//! What every property needs from a history, worked out once per [`super::check_all`].

use super::beliefs::{HoldRef, all_holds};
use super::slots::Slots;
use std::cell::OnceCell;
use zklock_recipe::history::History;

/// A history with its client slots and, on first use, its holds.
#[derive(Debug)]
pub(crate) struct HistoryIndex<'h> {
    pub history: &'h History,
    pub slots: Slots,
    holds: OnceCell<Vec<HoldRef<'h>>>,
}

impl<'h> HistoryIndex<'h> {
    pub(crate) fn new(history: &'h History) -> HistoryIndex<'h> {
        HistoryIndex {
            history,
            slots: Slots::new(history),
            holds: OnceCell::new(),
        }
    }

    /// Every hold, ordered by start: both belief properties read them.
    pub(crate) fn holds(&self) -> &[HoldRef<'h>] {
        self.holds
            .get_or_init(|| all_holds(self.history, &self.slots))
    }
}
