//! A client's way to the servers: one fault-injecting proxy per server ([`ClientLink`]).
//! Faults, the process switches and the search all act on a client through it.

use crate::client::ZkClient;
use crate::error::RealError;
use crate::plan::{AimedFault, SeenRequest};
use crate::proxy::{CaughtRequest, NodeChange, Proxy};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use zklock_recipe::Coordination;

/// One client's way to the servers: a fault-injecting proxy per server. The client
/// connects to [`connect_string`](ClientLink::connect_string), which names every proxy, so
/// it can fail over between servers as with a direct connect string.
#[derive(Debug)]
pub struct ClientLink {
    proxies: Vec<Proxy>,
    lost_create_armed: AtomicBool,
}

impl ClientLink {
    /// Starts a proxy in front of each server.
    pub async fn start(servers: &[std::net::SocketAddr]) -> Result<ClientLink, RealError> {
        let mut proxies = Vec::with_capacity(servers.len());
        for &server in servers {
            proxies.push(Proxy::start(server).await?);
        }
        Ok(ClientLink {
            proxies,
            lost_create_armed: AtomicBool::new(false),
        })
    }

    pub fn connect_string(&self) -> String {
        let addrs: Vec<String> = self.proxies.iter().map(Proxy::connect_string).collect();
        addrs.join(",")
    }

    pub fn proxies(&self) -> &[Proxy] {
        &self.proxies
    }

    /// Closes the client's connections. Returns how many were open.
    pub fn cut(&self) -> usize {
        self.proxies.iter().map(Proxy::cut_all).sum()
    }

    /// Black-holes every proxy of the client for `duration`.
    pub fn black_hole_for(&self, duration: Duration) {
        for p in &self.proxies {
            p.black_hole_for(duration);
        }
    }

    /// Black-holes every proxy of the client until [`end_black_hole`](Self::end_black_hole)
    /// or [`heal`](Self::heal).
    pub fn black_hole(&self) {
        for p in &self.proxies {
            p.black_hole();
        }
    }

    /// Ends any black hole.
    pub fn end_black_hole(&self) {
        for p in &self.proxies {
            p.heal();
        }
    }

    /// Ends any black hole and disarms a lost create.
    pub fn heal(&self) {
        for p in &self.proxies {
            p.heal();
        }
        self.disarm_lost_create();
    }

    /// Declares `client`'s session expired on the client's side (see
    /// [`ZkClient::expire_locally`]): the link's proxies refuse the session's reconnects
    /// for `refuse_for` and cut its connection, so the server hears nothing more from it
    /// and expires it a session timeout later, while the process's next session connects
    /// as usual. `refuse_for` must outlast the server's expiry of the session (twice its
    /// timeout does: ZooKeeper expires a session within a timeout and a tick of its last
    /// ping, and a tick is at most half a timeout). False when the session was over
    /// already.
    pub fn expire_locally(&self, client: &ZkClient, refuse_for: Duration) -> bool {
        let session = client.session_id().0;
        client.expire_locally(|| {
            for p in &self.proxies {
                p.refuse_session_for(session, refuse_for);
            }
            self.cut();
        })
    }

    /// Withheld replies so far, over every proxy.
    pub fn lost_reply_count(&self) -> usize {
        self.proxies.iter().map(|p| p.lost_replies().len()).sum()
    }

    /// Aims `fault` at the client's next matching request, on every proxy (the client uses
    /// one at a time).
    pub fn aim(&self, fault: &AimedFault) {
        for p in &self.proxies {
            p.aim(fault.clone());
        }
    }

    /// The requests aimed faults caught so far, over every proxy.
    pub fn caught_request_count(&self) -> usize {
        self.proxies.iter().map(|p| p.caught_requests().len()).sum()
    }

    /// The requests aimed faults caught so far, proxy by proxy, each oldest first.
    pub fn caught_requests(&self) -> Vec<CaughtRequest> {
        self.proxies
            .iter()
            .flat_map(|p| p.caught_requests())
            .collect()
    }

    /// Refuses `session`'s reconnects on every proxy for `duration`.
    pub fn refuse_session(&self, session: i64, duration: Duration) {
        for p in &self.proxies {
            p.refuse_session_for(session, duration);
        }
    }

    /// Lets `session` reconnect again on every proxy.
    pub fn lift_refusal(&self, session: i64) {
        for p in &self.proxies {
            p.lift_refusal(session);
        }
    }

    /// Arms the lost-create fault on every proxy (the client uses one at a time); false if
    /// it was armed already.
    pub fn arm_lost_create(&self) -> bool {
        self.arm_lost_create_of(None)
    }

    /// As [`arm_lost_create`](Self::arm_lost_create), for the next create of a path
    /// starting with `prefix` only.
    pub fn arm_lost_create_under(&self, prefix: &str) -> bool {
        self.arm_lost_create_of(Some(prefix))
    }

    fn arm_lost_create_of(&self, under: Option<&str>) -> bool {
        if self.lost_create_armed.swap(true, Ordering::SeqCst) {
            return false;
        }
        for p in &self.proxies {
            match under {
                Some(prefix) => p.lose_next_create_response_under(prefix),
                None => p.lose_next_create_response(),
            }
        }
        true
    }

    /// Disarms the lost-create fault wherever it has not struck.
    pub fn disarm_lost_create(&self) {
        for p in &self.proxies {
            p.disarm_lost_response();
        }
        self.lost_create_armed.store(false, Ordering::SeqCst);
    }
}

impl ClientLink {
    /// Whether an aimed fault's window is open on any of its proxies
    /// ([`Proxy::window_open`]).
    pub fn window_open(&self) -> bool {
        self.proxies.iter().any(Proxy::window_open)
    }

    /// Every request the client sent through its proxies that an aim can match, in the
    /// order each proxy saw them (proxy by proxy: one per server), and how many more came
    /// past each proxy's bound.
    pub fn requests_seen(&self) -> (Vec<SeenRequest>, u64) {
        let mut all = Vec::new();
        let mut beyond = 0;
        for p in &self.proxies {
            let (seen, more) = p.requests_seen();
            all.extend(seen);
            beyond += more;
        }
        (all, beyond)
    }

    /// Every node change its proxies saw ([`Proxy::node_changes`]), proxy by proxy, and
    /// how many more came past their bound.
    pub fn node_changes(&self) -> (Vec<NodeChange>, u64) {
        let mut all = Vec::new();
        let mut beyond = 0;
        for p in &self.proxies {
            let (changes, more) = p.node_changes();
            all.extend(changes);
            beyond += more;
        }
        (all, beyond)
    }

    /// Per session, the last time the server sent it anything through any of its proxies
    /// ([`Proxy::sessions_answered`]).
    pub fn sessions_answered(&self) -> Vec<(i64, Duration)> {
        let mut all: Vec<(i64, Duration)> = Vec::new();
        for (session, at) in self.proxies.iter().flat_map(|p| p.sessions_answered()) {
            match all.iter_mut().find(|(s, _)| *s == session) {
                Some(entry) => entry.1 = entry.1.max(at),
                None => all.push((session, at)),
            }
        }
        all
    }
}
