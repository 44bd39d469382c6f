//! [`TestServer`]: one standalone ZooKeeper server.

use super::process::{Node, free_ports, start_retrying_taken_ports};
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

    /// Starts a server and waits until it serves (at most `options.start_timeout` a try).
    ///
    /// The port is free when chosen, but another process (a test beside this one, an
    /// outgoing connection) may take it before the JVM binds it: a start that fails with
    /// its port taken meanwhile is tried again on another, three tries in all.
    pub fn start_with(options: ServerOptions) -> Result<TestServer, RealError> {
        Self::start_on(options, || Ok(free_ports(1)?[0]))
    }

    /// [`start_with`](Self::start_with), on the ports `next_port` picks.
    fn start_on(
        options: ServerOptions,
        mut next_port: impl FnMut() -> Result<u16, RealError>,
    ) -> Result<TestServer, RealError> {
        let install = Installation::detect()?;
        start_retrying_taken_ports(
            || Ok([next_port()?]),
            |&[port]| Self::start_once(port, &install, &options),
        )
    }

    fn start_once(
        port: u16,
        install: &Installation,
        options: &ServerOptions,
    ) -> Result<TestServer, RealError> {
        let dir = super::temp_dir("zklock-zookeeper-")?;
        let node = Node::create(
            dir.path(),
            super::orphan_dir(&dir),
            "server".to_string(),
            1,
            port,
            &[],
            options,
        )?;
        let mut server = TestServer {
            node,
            install: install.clone(),
            options: options.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::process::{PORT_TRIES, held_port, taken_on_first_try};
    use std::cell::Cell;

    /// A port taken between its choice and the server's bind: the start goes on another.
    #[test]
    fn a_server_whose_port_is_taken_before_it_binds_starts_on_another() {
        let Some((_holder, taken)) = held_port() else {
            return;
        };
        let tries = Cell::new(0);
        let mut next = taken_on_first_try(taken, 1, &tries);
        let server = TestServer::start_on(ServerOptions::default(), || Ok(next()?[0])).unwrap();
        assert_ne!(server.addr().port(), taken);
        drop(server);
        assert_eq!(
            tries.get(),
            2,
            "one try on the taken port, one on a free one"
        );
    }

    /// Every port given is taken: the start fails after its tries, with the server's error.
    #[test]
    fn a_server_start_gives_up_after_its_tries_on_taken_ports() {
        let Some((_holder, taken)) = held_port() else {
            return;
        };
        let mut tries = 0;
        let err = TestServer::start_on(ServerOptions::default(), || {
            tries += 1;
            Ok(taken)
        })
        .unwrap_err();
        assert_eq!(tries, PORT_TRIES);
        assert!(matches!(err, RealError::ServerStart { .. }), "{err:?}");
    }
}
