//! zklock on a real ZooKeeper.
mod client;
mod convert;
mod error;
mod watch;

pub use client::{SessionCredentials, ZkClient, monotonic_now};
pub use error::{INSTALL_HINT, RealError};
pub mod harness;
