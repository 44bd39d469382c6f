//! TCP_NODELAY on zookeeper-client's connections.
//!
//! zookeeper-client leaves Nagle's algorithm on, so a request written while an earlier one
//! is unacknowledged waits for that acknowledgement, which the server sends with its
//! reply: the recipe's create and the listing sent right behind it take two round trips
//! instead of one. ZooKeeper's Java client, Curator and Kazoo all set TCP_NODELAY.
//! zookeeper-client does not expose its socket, so this finds the process's sockets
//! connected to the server (by their peer address) and sets the option on each, through a
//! duplicate of the descriptor (`pidfd_getfd` on our own process: no `unsafe`).

use rustix::net::{SocketAddrAny, getpeername, sockopt};
use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// Sets TCP_NODELAY on every socket of this process connected to a server of
/// `connect_string` (`host:port,...`, with or without a chroot) that lacks it. Returns
/// how many it set.
pub fn set_on_connections_to(connect_string: &str) -> io::Result<usize> {
    // A chroot suffix (`host:port,host:port/app`) names no server.
    let hosts = connect_string.split('/').next().unwrap_or_default();
    let peers: Vec<SocketAddr> = hosts
        .split(',')
        .filter_map(|hp| hp.to_socket_addrs().ok())
        .flatten()
        .collect();
    let pidfd = pidfd_open(getpid(), PidfdFlags::empty())?;
    let mut set = 0;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let entry = entry?;
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Only sockets; the link of a closed descriptor is gone, which is fine.
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|l| l.to_str().is_some_and(|l| l.starts_with("socket:")));
        if !is_socket {
            continue;
        }
        let Ok(dup) = pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty()) else {
            continue;
        };
        let peer = getpeername(&dup)
            .ok()
            .flatten()
            .and_then(|a: SocketAddrAny| SocketAddr::try_from(a).ok());
        if peer.is_some_and(|p| peers.contains(&p)) && !sockopt::tcp_nodelay(&dup).unwrap_or(true) {
            sockopt::set_tcp_nodelay(&dup, true)?;
            set += 1;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sets_nodelay_on_connections_to_the_server_only() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let theirs = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!ours.nodelay().unwrap(), "Nagle is on by default");

        let chrooted = format!("{},127.0.0.1:1/app", server.local_addr().unwrap());
        let set = set_on_connections_to(&chrooted).unwrap();
        assert!(set >= 1, "our connection was found");
        assert!(ours.nodelay().unwrap());
        assert!(
            !theirs.nodelay().unwrap(),
            "a connection elsewhere is left alone"
        );
        // Nothing left to set: it is idempotent.
        let again = set_on_connections_to(&server.local_addr().unwrap().to_string()).unwrap();
        assert_eq!(again, 0);
    }
}
