//! [`Servers`]: the ZooKeeper servers a real run talks to — a harness-started server or
//! ensemble, or someone else's given by address — and what the run may do to them.

use crate::error::RealError;
use crate::harness::{ServerOptions, TestCluster, TestServer};
use std::net::SocketAddr;
use std::time::Duration;

/// The servers of a run. Dropping a harness-started one stops it.
#[derive(Debug)]
pub enum Servers {
    /// One standalone server the harness started.
    Single(TestServer),
    /// An ensemble the harness started; its leader can be killed mid-run.
    Ensemble(TestCluster),
    /// Servers someone else runs, by connect string (`host:port[,host:port...]`).
    External { connect_string: String },
}

impl Servers {
    /// Starts `ensemble_size` servers with the harness: one standalone server for 1, an
    /// ensemble otherwise. Blocks until they serve.
    pub fn start(ensemble_size: usize, options: ServerOptions) -> Result<Servers, RealError> {
        if ensemble_size <= 1 {
            TestServer::start_with(options).map(Servers::Single)
        } else {
            TestCluster::start_with(ensemble_size, options).map(Servers::Ensemble)
        }
    }

    /// The connect string naming every server.
    pub fn connect_string(&self) -> String {
        match self {
            Servers::Single(s) => s.connect_string(),
            Servers::Ensemble(c) => c.connect_string(),
            Servers::External { connect_string } => connect_string.clone(),
        }
    }

    /// Each server's client address, resolving names for external servers (the fault
    /// proxies need socket addresses).
    pub async fn addrs(&self) -> Result<Vec<SocketAddr>, RealError> {
        match self {
            Servers::Single(s) => Ok(vec![s.addr()]),
            Servers::Ensemble(c) => Ok((0..c.len()).map(|i| c.addr(i)).collect()),
            Servers::External { connect_string } => {
                let mut addrs = Vec::new();
                for host in connect_string.split(',').map(str::trim) {
                    if host.is_empty() {
                        continue;
                    }
                    let resolved = tokio::net::lookup_host(host)
                        .await
                        .map_err(|e| RealError::io(format!("resolving {host}"), e))?;
                    // One address per server: the first the resolver gives.
                    addrs.extend(resolved.take(1));
                }
                if addrs.is_empty() {
                    return Err(RealError::Connect {
                        addr: connect_string.clone(),
                        error: zklock_recipe::ZkError::BadArguments("it names no server".into()),
                    });
                }
                Ok(addrs)
            }
        }
    }

    /// True when the run can kill an ensemble's leader and keep a quorum: a harness
    /// ensemble of at least 3.
    pub fn can_kill_leader(&self) -> bool {
        matches!(self, Servers::Ensemble(c) if c.len() >= 3)
    }

    /// SIGKILLs the current leader (waiting up to `timeout` for one) and returns its index.
    /// Blocks.
    pub fn kill_leader(&mut self, timeout: Duration) -> Result<usize, RealError> {
        let Servers::Ensemble(cluster) = self else {
            return Err(RealError::NoLeader { timeout });
        };
        let leader = cluster.wait_for_leader(timeout)?;
        cluster.kill(leader);
        Ok(leader)
    }

    /// Whether the run can take the whole service down ([`Servers::kill_all`]): servers
    /// the harness started.
    pub fn can_kill_all(&self) -> bool {
        !matches!(self, Servers::External { .. })
    }

    /// SIGKILLs every server (their data kept for [`Servers::restart_all`]): an outage of
    /// the whole service. Servers someone else runs are refused.
    pub fn kill_all(&mut self) -> Result<(), RealError> {
        match self {
            Servers::Single(server) => server.kill(),
            Servers::Ensemble(cluster) => (0..cluster.len()).for_each(|i| cluster.kill(i)),
            Servers::External { .. } => return Err(outage_refused()),
        }
        Ok(())
    }

    /// Starts every server again on its data and waits until they serve: the sessions
    /// they held come back, with fresh timeouts. Blocks.
    pub fn restart_all(&mut self) -> Result<(), RealError> {
        match self {
            Servers::Single(server) => server.restart(),
            Servers::Ensemble(cluster) => cluster.restart_all(),
            Servers::External { .. } => Err(outage_refused()),
        }
    }

    /// Restarts ensemble member `i` and waits until it serves. Blocks.
    pub fn restart(&mut self, i: usize) -> Result<(), RealError> {
        match self {
            Servers::Ensemble(cluster) => cluster.restart(i),
            Servers::Single(server) => server.restart(),
            Servers::External { .. } => Ok(()),
        }
    }
}

fn outage_refused() -> RealError {
    RealError::Config {
        reason: "an outage kills every server and restarts it on its data: it needs servers \
                 the harness started, not --connect's"
            .into(),
    }
}
