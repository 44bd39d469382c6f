//! A read/write lock, after ZooKeeper's shared-lock recipe.
//!
//! Readers create `_c_<guid>-read-NNNNNNNNNN`, writers `_c_<guid>-write-NNNNNNNNNN`: the
//! recipe's `read-` and `write-` names, with Curator's guid protection in front. A reader
//! holds once no writer is ahead of it and waits only for the nearest lower writer; a
//! writer holds once it is first and waits for its immediate predecessor.
//!
//! Interoperation: Curator's `__READ__` / `__WRIT__` and Kazoo's `__rlock__` / `__lock__`
//! nodes in the same directory are recognised with their kinds, so our readers wait for
//! their writers and our writers for everyone. The converse depends on the other library:
//! Curator's and Kazoo's readers look only for their own writer names, so they do not
//! wait for our `write-` nodes; do not mix their readers with our writers.

use super::LockOptions;
use super::error::LockError;
use super::mutex::Lock;
use super::naming::NodeKind;
use crate::Coordination;

/// A read/write lock: two lock objects on one directory.
#[derive(Debug)]
pub struct RwLock<C> {
    read: Lock<C>,
    write: Lock<C>,
}

impl<C: Coordination + Clone> RwLock<C> {
    /// Refuses an invalid path or guid before any request. Both sides share `options`;
    /// their node names differ by kind, so guid recovery never confuses them.
    pub fn new(client: C, path: &str, options: LockOptions) -> Result<RwLock<C>, LockError> {
        Ok(RwLock {
            read: Lock::with_kind(client.clone(), path, NodeKind::Read, options.clone())?,
            write: Lock::with_kind(client, path, NodeKind::Write, options)?,
        })
    }

    /// The shared side. Holding it and then acquiring the write side from the same
    /// session waits forever (no upgrade), as in Curator.
    pub fn read_lock(&self) -> &Lock<C> {
        &self.read
    }

    /// The exclusive side.
    pub fn write_lock(&self) -> &Lock<C> {
        &self.write
    }

    /// The two sides, to move them into different tasks.
    pub fn into_parts(self) -> (Lock<C>, Lock<C>) {
        (self.read, self.write)
    }
}
