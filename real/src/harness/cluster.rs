//! [`TestCluster`]: a ZooKeeper ensemble on loopback.

use super::process::{Node, Peer, free_ports, start_retrying_taken_ports};
use super::{EXPIRE_TIMEOUT, Installation, ServerOptions};
use crate::client::ZkClient;
use crate::error::RealError;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Pause between leader probes.
const LEADER_PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// The largest ensemble the harness starts: each member is a JVM.
pub const MAX_ENSEMBLE_SIZE: usize = 7;

/// A ZooKeeper ensemble of `n` servers on loopback, each with its own client, quorum and
/// election ports, in one temporary directory. Servers are numbered from 0 here (their
/// `myid` is index + 1).
///
/// Dropping it SIGKILLs every server and removes the directory.
#[derive(Debug)]
pub struct TestCluster {
    // Field order matters: the nodes (and their JVMs) go before their directory.
    nodes: Vec<Node>,
    install: Installation,
    options: ServerOptions,
    dir: TempDir,
}

impl TestCluster {
    /// Starts `n` servers with [`ServerOptions::default`] and waits until all serve and one
    /// leads.
    pub fn start(n: usize) -> Result<TestCluster, RealError> {
        TestCluster::start_with(n, ServerOptions::default())
    }

    /// Starts `n` servers (1 to [`MAX_ENSEMBLE_SIZE`]) and waits until all serve and one
    /// leads, within `options.start_timeout` a try.
    ///
    /// As a [`TestServer`](super::TestServer)'s, a start that fails with one of its ports
    /// taken before its server bound it is tried again on other ports, three tries in all.
    pub fn start_with(n: usize, options: ServerOptions) -> Result<TestCluster, RealError> {
        Self::start_on(n, options, || free_ports(3 * n))
    }

    /// [`start_with`](Self::start_with), on the ports `next_ports` picks: each member's
    /// client, quorum and election port, member after member.
    fn start_on(
        n: usize,
        options: ServerOptions,
        next_ports: impl FnMut() -> Result<Vec<u16>, RealError>,
    ) -> Result<TestCluster, RealError> {
        if !(1..=MAX_ENSEMBLE_SIZE).contains(&n) {
            return Err(RealError::ServerStart {
                server: format!("ensemble of {n}"),
                reason: format!("an ensemble has 1 to {MAX_ENSEMBLE_SIZE} servers"),
                log_tail: String::new(),
            });
        }
        let install = Installation::detect()?;
        start_retrying_taken_ports(next_ports, |ports| {
            Self::start_once(n, &install, &options, ports)
        })
    }

    fn start_once(
        n: usize,
        install: &Installation,
        options: &ServerOptions,
        ports: &[u16],
    ) -> Result<TestCluster, RealError> {
        let dir = super::temp_dir("zklock-ensemble-")?;
        let peers: Vec<Peer> = (0..n)
            .map(|i| Peer {
                id: i + 1,
                quorum_port: ports[3 * i + 1],
                election_port: ports[3 * i + 2],
            })
            .collect();
        let nodes = (0..n)
            .map(|i| {
                let name = format!("server {i} (myid {})", i + 1);
                Node::create(
                    &dir.path().join(format!("server{i}")),
                    super::orphan_dir(&dir),
                    name,
                    i + 1,
                    ports[3 * i],
                    &peers,
                    options,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut cluster = TestCluster {
            nodes,
            install: install.clone(),
            options: options.clone(),
            dir,
        };
        // All JVMs start together: an ensemble serves only once a quorum is up.
        for node in &mut cluster.nodes {
            node.spawn(&cluster.install)?;
        }
        let deadline = Instant::now() + cluster.options.start_timeout;
        for node in &mut cluster.nodes {
            node.wait_serving(deadline)?;
        }
        cluster.wait_for_leader(deadline.saturating_duration_since(Instant::now()))?;
        Ok(cluster)
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: an ensemble has at least one server.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The connect string naming every server, `127.0.0.1:a,127.0.0.1:b,...`.
    pub fn connect_string(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.addr().to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client address of server `i`.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.nodes[i].addr()
    }

    /// The connect string of server `i` alone.
    pub fn server_connect_string(&self, i: usize) -> String {
        self.addr(i).to_string()
    }

    /// The ensemble's directory (one subdirectory per server).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// True while server `i`'s process runs.
    pub fn is_running(&mut self, i: usize) -> bool {
        self.nodes[i].is_running()
    }

    /// The index of the server that says (4lw `srvr`) it is the leader, if one does now.
    pub fn leader(&mut self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.nodes[i].is_running() && self.nodes[i].is_leader())
    }

    /// Waits until some running server leads, and returns its index.
    pub fn wait_for_leader(&mut self, timeout: Duration) -> Result<usize, RealError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.leader() {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                return Err(RealError::NoLeader { timeout });
            }
            std::thread::sleep(LEADER_PROBE_INTERVAL);
        }
    }

    /// SIGKILLs server `i`. Its data survives for [`restart`](TestCluster::restart).
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Starts server `i` again (killing it first if it runs) and waits until it serves,
    /// which needs a quorum of the ensemble.
    pub fn restart(&mut self, i: usize) -> Result<(), RealError> {
        let node = &mut self.nodes[i];
        node.kill();
        node.spawn(&self.install)?;
        let ready = node.wait_serving(Instant::now() + self.options.start_timeout);
        if ready.is_err() {
            node.kill();
        }
        ready
    }

    /// Starts every server again (killing those that run), then waits until each serves:
    /// one at a time, a restarted member would wait for a quorum that is not up yet.
    pub fn restart_all(&mut self) -> Result<(), RealError> {
        for node in &mut self.nodes {
            node.kill();
            node.spawn(&self.install)?;
        }
        let deadline = Instant::now() + self.options.start_timeout;
        for i in 0..self.nodes.len() {
            if let Err(e) = self.nodes[i].wait_serving(deadline) {
                self.nodes.iter_mut().for_each(|n| n.kill());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Forces `client`'s session to expire and waits until the client reports Expired. See
    /// [`super::kill_session`].
    pub async fn expire_session(&self, client: &ZkClient) -> Result<(), RealError> {
        super::expire_session(&self.connect_string(), client, EXPIRE_TIMEOUT).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::process::{held_port, taken_on_first_try};
    use std::cell::Cell;

    /// A client port taken between its choice and its server's bind: the ensemble starts
    /// on other ports.
    #[test]
    fn an_ensemble_whose_port_is_taken_before_it_binds_starts_on_others() {
        let Some((_holder, taken)) = held_port() else {
            return;
        };
        let tries = Cell::new(0);
        let next = taken_on_first_try(taken, 9, &tries);
        let cluster = TestCluster::start_on(3, ServerOptions::default(), next).unwrap();
        assert_ne!(cluster.addr(0).port(), taken);
        drop(cluster);
        assert_eq!(
            tries.get(),
            2,
            "one try with the taken port, one on free ones"
        );
    }
}
