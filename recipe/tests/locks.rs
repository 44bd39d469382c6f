//! Scenario tests of the lock recipes on the simulated ZooKeeper. Each asserts the
//! outcome and the nodes left in the server's tree.

#[path = "locks/basic.rs"]
mod basic;
#[path = "locks/common.rs"]
mod common;
#[path = "locks/faults.rs"]
mod faults;
