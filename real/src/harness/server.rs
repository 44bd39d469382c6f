//! [`TestServer`]: one standalone ZooKeeper server.

use super::process::{Node, free_ports};
use super::{EXPIRE_TIMEOUT, Installation, ServerOptions};
use crate::client::ZkClient;
use crate::error::RealError;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;
use tempfile::TempDir;

/// A standalone ZooKeeper server on a free loopback port, in a temporary directory.
///
/// Dropping it SIGKILLs the server and removes the directory.
#[derive(Debug)]
pub struct TestServer {
    // Field order matters: the node (and its JVM) goes before its directory.
    node: Node,
    install: Installation,
    options: ServerOptions,
    dir: TempDir,
}

impl TestServer {
    /// Starts a server with [`ServerOptions::default`] and waits until it serves.
    pub fn start() -> Result<TestServer, RealError> {
        TestServer::start_with(ServerOptions::default())
    }

    /// Starts a server and waits until it serves (at most `options.start_timeout`).
    pub fn start_with(options: ServerOptions) -> Result<TestServer, RealError> {
        let install = Installation::detect()?;
        let dir = super::temp_dir("zklock-zookeeper-")?;
        let port = free_ports(1)?[0];
        let orphan_dir = super::orphan_dir(&dir);
        let node = Node::create(
            dir.path(),
            orphan_dir,
            "server".to_string(),
            1,
            port,
            &[],
            &options,
        )?;
        let mut server = TestServer {
            node,
            install,
            options,
            dir,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> Result<(), RealError> {
        self.node.spawn(&self.install)?;
        let deadline = Instant::now() + self.options.start_timeout;
        let ready = self.node.wait_serving(deadline);
        if ready.is_err() {
            self.node.kill();
        }
        ready
    }

    /// The client connect string, `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> String {
        self.node.addr().to_string()
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        self.node.addr()
    }

    /// The server's directory (config, data, output).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// True while the server process runs.
    pub fn is_running(&mut self) -> bool {
        self.node.is_running()
    }

    /// SIGKILLs the server. Its data survives for [`restart`](TestServer::restart).
    pub fn kill(&mut self) {
        self.node.kill();
    }

    /// Starts the server again on the same port and data (killing it first if it runs) and
    /// waits until it serves.
    pub fn restart(&mut self) -> Result<(), RealError> {
        self.node.kill();
        self.launch()
    }

    /// Forces `client`'s session to expire and waits until the client reports Expired. See
    /// [`super::kill_session`].
    pub async fn expire_session(&self, client: &ZkClient) -> Result<(), RealError> {
        super::expire_session(&self.connect_string(), client, EXPIRE_TIMEOUT).await
    }
}
