//! Shared helpers for the scenario tests.

use std::future::Future;
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_sim::{Sim, SimClient, SimConfig};

/// Runs a scenario on a fresh simulated world and panics with the reason if it stops
/// before the scenario finishes.
pub fn sim<T, F, Fut>(seed: u64, scenario: F) -> T
where
    F: FnOnce(Sim) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let config = SimConfig {
        time_limit_ms: 600_000,
        ..SimConfig::with_seed(seed)
    };
    match zklock_sim::run(config, scenario) {
        Ok(v) => v,
        Err(e) => panic!("simulation stopped: {e}"),
    }
}

/// The lock directory used by the tests.
pub const DIR: &str = "/locks/a";

/// Children of the lock directory on the server, sorted by name.
pub fn nodes(sim: &Sim) -> Vec<String> {
    sim.server_children(DIR)
}

/// Waits (in virtual time, on `client`'s clock) until `cond` holds; panics after 60 s.
pub async fn wait_until(client: &SimClient, mut cond: impl FnMut() -> bool) {
    let start = client.now();
    while !cond() {
        assert!(
            client.now() - start < Duration::from_secs(60),
            "condition not met within 60 s of virtual time"
        );
        client.sleep(Duration::from_millis(1)).await;
    }
}

/// Sleeps `ms` milliseconds of virtual time.
pub async fn sleep_ms(client: &SimClient, ms: u64) {
    client.sleep(Duration::from_millis(ms)).await;
}
