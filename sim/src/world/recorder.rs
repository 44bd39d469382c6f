//! A chooser for the world's own tests of digests: it follows a prefix of choices
//! (then answers 0), records every digest the world hands it, and keeps or hands back
//! folds (see `folds`) as a test says.

use crate::chooser::{ChoiceKind, Chooser, Folds};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) prefix: Vec<u32>,
    /// (arity, answer) of every choice made.
    pub(crate) made: Vec<(u32, u32)>,
    /// Ask for symmetric digests, and prune by them (never pruning here).
    pub(crate) symmetry: bool,
    /// Digests are recorded from when this is set (`None`: from the start).
    pub(crate) armed: Option<Arc<AtomicBool>>,
    /// (choices made, digest) of every state from the end of the prefix on (while
    /// armed), then the final state's with `usize::MAX`.
    pub(crate) digests: Vec<(usize, u128)>,
    /// Folds to hand the world when the run starts.
    pub(crate) saved: Option<(usize, Folds)>,
    /// The folds the world handed over at each choice.
    pub(crate) kept: Vec<(usize, Folds)>,
}

impl Recorder {
    fn recording(&self) -> bool {
        self.armed.as_ref().is_none_or(|a| a.load(Ordering::SeqCst))
    }
}

impl Chooser for Recorder {
    fn choose(&mut self, _kind: ChoiceKind, n: usize) -> usize {
        let i = self.made.len();
        let c = (self.prefix.get(i).copied().unwrap_or(0) as usize).min(n - 1);
        self.made.push((n as u32, c as u32));
        c
    }
    fn wants_digests(&self) -> bool {
        true
    }
    fn needs_digest(&self) -> bool {
        self.made.len() >= self.prefix.len()
    }
    fn at_state(&mut self, digest: u128) -> bool {
        if self.needs_digest() && self.recording() {
            self.digests.push((self.made.len(), digest));
        }
        true
    }
    fn at_end(&mut self, digest: u128) {
        if self.recording() {
            self.digests.push((usize::MAX, digest));
        }
    }
    fn wants_symmetry(&self) -> bool {
        self.symmetry
    }
    fn prunes_by_symmetry(&self) -> bool {
        self.symmetry
    }
    fn saved_folds(&mut self) -> Option<(usize, Folds)> {
        self.saved.take()
    }
    fn keeps_folds(&self) -> bool {
        true
    }
    fn honours_keep_only(&self) -> bool {
        true
    }
    fn keep_folds(&mut self, position: usize, folds: &Folds) {
        self.kept.push((position, folds.clone()));
    }
}
