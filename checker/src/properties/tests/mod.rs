//! Each property against a handcrafted history that passes and one that violates it.

mod counters;
mod fenced_resource;
mod fencing_token_order;
mod fifo;
mod liveness_after_heal;
mod mutual_exclusion;
mod no_herd;
mod read_write_compat;
mod report;
mod rightful_write_accepted;
mod timed_acquire;

use super::CheckConfig;

/// The test config: no pauses, heal at 30 s, bound 13 s.
fn cfg() -> CheckConfig {
    CheckConfig {
        pauses_on: false,
        ..CheckConfig::default()
    }
}
