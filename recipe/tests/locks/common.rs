//! Shared helpers for the scenario tests.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;
use zklock_recipe::Coordination;
use zklock_recipe::history::{EventKind, ZkOp};
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

/// Client `c`'s requests issued at or after `since`, in order, each with its outcome:
/// "ok", "unknown" or the error.
pub fn ops_since(sim: &Sim, c: &SimClient, since: Duration) -> Vec<(ZkOp, String, String)> {
    let since_us = since.as_micros() as u64;
    let events = sim.history().events;
    let mut outcome: BTreeMap<u64, String> = BTreeMap::new();
    for e in &events {
        let (id, what) = match &e.kind {
            EventKind::OpOk { op_id } => (*op_id, "ok".to_owned()),
            EventKind::OpUnknown { op_id } => (*op_id, "unknown".to_owned()),
            EventKind::OpFail { op_id, error } => (*op_id, format!("{error:?}")),
            _ => continue,
        };
        outcome.insert(id, what);
    }
    events
        .iter()
        .filter(|e| e.client as usize == c.index() && e.time_us >= since_us)
        .filter_map(|e| match &e.kind {
            EventKind::OpInvoke {
                op_id, op, path, ..
            } => Some((
                *op,
                path.to_string(),
                outcome
                    .get(op_id)
                    .cloned()
                    .unwrap_or_else(|| "pending".into()),
            )),
            _ => None,
        })
        .collect()
}
