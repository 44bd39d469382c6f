//! The data tree with its digest kept between steps. Most steps deliver replies, fire
//! timers or touch the resource and leave the tree alone, so an explorer's state digest
//! hashes the tree again only after it may have changed.

use super::hash128::hash128;
use crate::tree::DataTree;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};

#[derive(Debug, Default)]
pub(crate) struct CachedTree {
    tree: DataTree,
    /// The tree's 128-bit digest, while it is known to be current.
    digest: Option<u128>,
    /// Its digests renamed by each permutation of a symmetric digest (see `symmetry`),
    /// while current: a session's renaming never changes once it exists.
    pub(crate) renamed: Vec<Option<u128>>,
}

impl CachedTree {
    /// The tree's digest, computed with `scratch` (left empty) if the tree may have
    /// changed since the last call.
    pub(crate) fn digest(&mut self, scratch: &mut Vec<u8>) -> u128 {
        if let Some(d) = self.digest {
            return d;
        }
        scratch.clear();
        self.tree.hash(&mut super::digest::Bytes(scratch));
        let d = hash128(scratch);
        scratch.clear();
        self.digest = Some(d);
        d
    }
}

impl Deref for CachedTree {
    type Target = DataTree;
    fn deref(&self) -> &DataTree {
        &self.tree
    }
}

/// Any mutable access (a write, or a read that may leave a watch) forgets the digest.
impl DerefMut for CachedTree {
    fn deref_mut(&mut self) -> &mut DataTree {
        self.digest = None;
        self.renamed.iter_mut().for_each(|d| *d = None);
        &mut self.tree
    }
}
