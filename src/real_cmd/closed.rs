//! Whether `--connect`'s servers listen at all, asked before a run waits on them: a
//! closed port refuses a TCP connection at once, while a ZooKeeper client retries it
//! until its connect timeout and then blames the timeout.

use anyhow::{Result, bail};
use std::io::ErrorKind;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The longest one probe waits, in ms: a host that neither answers nor refuses is left
/// to the client's own connect timeout, which reports it.
const PROBE_TIMEOUT_MS_MAX: u64 = 1_000;

/// Refuses `connect` (`HOST:PORT[,HOST:PORT...]`) when every server in it refused the
/// connection, naming them; a server that cannot be resolved, or did not answer within
/// `connect_timeout_ms` (at most [`PROBE_TIMEOUT_MS_MAX`]), is not called refused.
pub(super) fn refuse_if_closed(connect: &str, connect_timeout_ms: u64) -> Result<()> {
    let timeout = Duration::from_millis(connect_timeout_ms.clamp(1, PROBE_TIMEOUT_MS_MAX));
    let servers: Vec<&str> = connect
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let refused = |server: &str| {
        // A chroot suffix (`host:port/path`) is the client's business, not the socket's.
        let host_port = server.split('/').next().unwrap_or(server);
        let addrs: Vec<_> = match host_port.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(_) => return false,
        };
        !addrs.is_empty()
            && addrs.iter().all(|a| {
                matches!(TcpStream::connect_timeout(a, timeout),
                         Err(e) if e.kind() == ErrorKind::ConnectionRefused)
            })
    };
    if !servers.is_empty() && servers.iter().all(|s| refused(s)) {
        bail!(
            "--connect {connect}: connection refused ({}): no ZooKeeper server listens \
             there; start one, or give the right HOST:PORT",
            servers.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A port bound and then closed: refused at once, by name.
    #[test]
    fn a_closed_port_is_refused_and_an_open_one_is_not() {
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let open_at = open.local_addr().unwrap().to_string();
        let closed_at = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let err = refuse_if_closed(&closed_at, 4_000).unwrap_err().to_string();
        assert!(err.contains("connection refused"), "{err}");
        assert!(err.contains(&closed_at), "{err}");
        refuse_if_closed(&open_at, 4_000).unwrap();
        // One server of the list listening is enough for the client to go on.
        refuse_if_closed(&format!("{closed_at},{open_at}"), 4_000).unwrap();
    }
}
