//! Scenario tests of the lock recipes on the simulated ZooKeeper. Each asserts the
//! outcome and the nodes left in the server's tree.

#[path = "locks/background_release.rs"]
mod background_release;
#[path = "locks/basic.rs"]
mod basic;
#[path = "locks/canary.rs"]
mod canary;
#[path = "locks/common.rs"]
mod common;
#[path = "locks/detached.rs"]
mod detached;
#[path = "locks/exclusion.rs"]
mod exclusion;
#[path = "locks/faults.rs"]
mod faults;
#[path = "locks/rwlock.rs"]
mod rwlock;
#[path = "locks/semaphore.rs"]
mod semaphore;
