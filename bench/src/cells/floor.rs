//! The floor: the chain of requests a lock of the ephemeral-sequential family cannot avoid,
//! timed alone on the same server in the same run, so that each lock's figure reads also as
//! a fraction of it.
//!
//! * [`Floor::Uncontended`]: one create (ephemeral-sequential) then one getChildren of the
//!   directory, each awaited; the node's delete is sent without awaiting its reply, as a
//!   lock that releases in the background does, so it rides ahead of the next create.
//!   Its rate bounds one client's acquisitions.
//! * [`Floor::Handoff`]: session A deletes a node that session B watches; B's watch event
//!   arrives, and B lists the directory. Timed from A's delete to B's listing answered: the
//!   least a handoff to a waiter can take, so its rate bounds contended acquisitions.
//!
//! Each is run on zookeeper-client sessions with TCP_NODELAY, as the locks' cells are.

use super::{BenchError, CellConfig, percentile, sleep_until_run_time, window, zk_connect};
use super::{zk, zk_ensure_path};
use std::fmt;
use std::time::Duration;
use zklock_real::monotonic_now;

/// Which chain of requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Floor {
    /// create, then getChildren, each awaited.
    Uncontended,
    /// delete, the watch event it fires at another session, that session's getChildren.
    Handoff,
}

impl Floor {
    pub const ALL: [Floor; 2] = [Floor::Uncontended, Floor::Handoff];

    /// A short stable name, for JSON keys.
    pub fn key(self) -> &'static str {
        match self {
            Floor::Uncontended => "floor-uncontended",
            Floor::Handoff => "floor-handoff",
        }
    }
}

impl fmt::Display for Floor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Floor::Uncontended => "create -> getChildren, each awaited",
            Floor::Handoff => "delete -> watch event at another session -> its getChildren",
        })
    }
}

/// A floor's samples over one window (or several, pooled).
#[derive(Clone, Debug, PartialEq)]
pub struct FloorResult {
    pub floor: Floor,
    pub window_s: f64,
    /// One per chain run inside the window, ns, sorted.
    pub samples_ns: Vec<u64>,
}

impl FloorResult {
    /// Chains completed per second of window.
    pub fn per_s(&self) -> f64 {
        if self.window_s > 0.0 {
            self.samples_ns.len() as f64 / self.window_s
        } else {
            0.0
        }
    }

    /// The chain's median time, µs.
    pub fn p50_us(&self) -> Option<f64> {
        percentile(&self.samples_ns, 50.0).map(|ns| ns as f64 / 1000.0)
    }

    /// Chains one after another, each taking the mean time: 1 / mean, per second. The
    /// bound a lock's mean rate compares with (a lock's rate is a mean too, tail included).
    pub fn chain_per_s(&self) -> Option<f64> {
        let total_ns: u128 = self.samples_ns.iter().map(|&n| u128::from(n)).sum();
        (total_ns > 0).then(|| self.samples_ns.len() as f64 * 1e9 / total_ns as f64)
    }

    /// Rounds pooled into one (`None` if empty or of different floors).
    pub fn pool(rounds: &[FloorResult]) -> Option<FloorResult> {
        let first = rounds.first()?;
        if rounds.iter().any(|r| r.floor != first.floor) {
            return None;
        }
        let mut samples_ns: Vec<u64> = rounds.iter().flat_map(|r| r.samples_ns.clone()).collect();
        samples_ns.sort_unstable();
        Some(FloorResult {
            floor: first.floor,
            window_s: rounds.iter().map(|r| r.window_s).sum(),
            samples_ns,
        })
    }
}

/// Runs `floor` under `dir` for `duration`.
pub async fn floor_cell(
    addr: &str,
    dir: &str,
    floor: Floor,
    duration: Duration,
) -> Result<FloorResult, BenchError> {
    let cfg = CellConfig::new(2, duration, dir);
    match floor {
        Floor::Uncontended => uncontended(addr, &cfg).await,
        Floor::Handoff => handoff(addr, &cfg).await,
    }
}

fn node_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

async fn uncontended(addr: &str, cfg: &CellConfig) -> Result<FloorResult, BenchError> {
    let client = zk_connect(addr, cfg).await?;
    zk_ensure_path(&client, &cfg.lock_path).await?;
    let dir = cfg.lock_path.as_str();
    let prefix = format!("{dir}/floor-");
    let options = node_options();
    let fail = |what: &str, e: zk::Error| BenchError::new(format!("floor: {what}: {e}"));
    let (start, end) = window(cfg.duration);
    sleep_until_run_time(start).await;
    let mut samples_ns = Vec::new();
    let mut deletes = Vec::new();
    while monotonic_now() < end {
        let t0 = monotonic_now();
        let (_, seq) = client
            .create(&prefix, b"", &options)
            .await
            .map_err(|e| fail("create", e))?;
        client
            .get_children(dir)
            .await
            .map_err(|e| fail("getChildren", e))?;
        let t1 = monotonic_now();
        samples_ns.push(u64::try_from((t1 - t0).as_nanos()).unwrap_or(u64::MAX));
        // Sent now (zookeeper-client sends on the call); its reply is awaited after the
        // window, as a background release's is.
        deletes.push(client.delete(&format!("{prefix}{seq}"), None));
    }
    for d in deletes {
        d.await.map_err(|e| fail("delete", e))?;
    }
    samples_ns.sort_unstable();
    Ok(FloorResult {
        floor: Floor::Uncontended,
        window_s: cfg.duration.as_secs_f64(),
        samples_ns,
    })
}

async fn handoff(addr: &str, cfg: &CellConfig) -> Result<FloorResult, BenchError> {
    let holder = zk_connect(addr, cfg).await?;
    let waiter = zk_connect(addr, cfg).await?;
    zk_ensure_path(&holder, &cfg.lock_path).await?;
    let dir = cfg.lock_path.as_str();
    let prefix = format!("{dir}/floor-");
    let options = node_options();
    let fail = |what: &str, e: zk::Error| BenchError::new(format!("floor: {what}: {e}"));
    let (start, end) = window(cfg.duration);
    sleep_until_run_time(start).await;
    let mut samples_ns = Vec::new();
    while monotonic_now() < end {
        let (_, seq) = holder
            .create(&prefix, b"", &options)
            .await
            .map_err(|e| fail("create", e))?;
        let node = format!("{prefix}{seq}");
        let (stat, watch) = waiter
            .check_and_watch_stat(&node)
            .await
            .map_err(|e| fail("exists with a watch", e))?;
        if stat.is_none() {
            return Err(BenchError::new(format!(
                "floor: {node} vanished before its delete"
            )));
        }
        let t0 = monotonic_now();
        let delete = holder.delete(&node, None);
        let event = watch.changed().await;
        if event.event_type != zk::EventType::NodeDeleted {
            return Err(BenchError::new(format!(
                "floor: the waiter's watch on {node} fired {:?}, not NodeDeleted",
                event.event_type
            )));
        }
        waiter
            .get_children(dir)
            .await
            .map_err(|e| fail("getChildren", e))?;
        let t1 = monotonic_now();
        delete.await.map_err(|e| fail("delete", e))?;
        samples_ns.push(u64::try_from((t1 - t0).as_nanos()).unwrap_or(u64::MAX));
    }
    samples_ns.sort_unstable();
    Ok(FloorResult {
        floor: Floor::Handoff,
        window_s: cfg.duration.as_secs_f64(),
        samples_ns,
    })
}
