//! The client library's background cleanup: [`Coordination::cleanup_detached`].
//!
//! No actor runs it (actor ids must not depend on what a recipe drops): the world itself
//! issues the requests, as the client library's own work. Each client has a queue of
//! items; while the client reaches the server and none of its cleanup requests is in
//! flight, the world puts the front item's next request on the client's connection, after
//! whatever the client sent before. So it is ordered by the Chooser like any request and
//! recorded in the history as an ordinary op. The world consumes the reply:
//!
//! - `ConnectionLoss`: the item stays and is retried once the client reconnects;
//! - `SessionExpired` / `SessionClosed`: the queue is dropped (the server deletes the
//!   session's ephemerals anyway); the same when the client learns its session ended,
//!   or crashes (its library dies with it; the session then expires);
//! - otherwise the item advances (a listing becomes owner checks, an owned node a
//!   delete) or is done (`Ok`, `NoNode`, or an error that retrying would repeat).
//!
//! [`Coordination::cleanup_detached`]: zklock_recipe::Coordination::cleanup_detached

use super::request::{Answer, Reply, Request};
use super::{ClientId, Conn, World};
use std::collections::VecDeque;
use zklock_recipe::DetachedCleanup;
use zklock_recipe::path::join;

/// One step of cleanup work, each one request.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Work {
    /// Delete this node.
    Delete(String),
    /// List `dir` for children whose name contains `fragment`.
    List { dir: String, fragment: String },
    /// Delete this node if our session owns it.
    CheckOwner(String),
}

impl Work {
    fn request(&self) -> Request {
        match self {
            Work::Delete(path) => Request::Delete {
                path: path.as_str().into(),
                version: None,
            },
            Work::List { dir, .. } => Request::GetChildren {
                path: dir.as_str().into(),
                watch: false,
            },
            Work::CheckOwner(path) => Request::Exists {
                path: path.as_str().into(),
                watch: false,
            },
        }
    }
}

/// A client's pending cleanup.
#[derive(Debug, Default, Hash)]
pub(crate) struct Detached {
    queue: VecDeque<Work>,
    /// A request for the front item is on the connection or its reply on the way back.
    in_flight: bool,
}

impl Detached {
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

impl World {
    /// Queues `what` for client `c` and, if it can, sends the first request at once, in
    /// order with what the client sends next.
    pub(crate) fn add_detached(&mut self, c: ClientId, what: DetachedCleanup) {
        let Some(cl) = self.clients.get_mut(c) else {
            return;
        };
        // A session known to be over has nothing left to clean; a crashed process has no
        // client library left to do it.
        if cl.crashed || matches!(cl.conn, Conn::Expired | Conn::Closed) {
            return;
        }
        let work = match what {
            DetachedCleanup::Node(path) => Work::Delete(path),
            DetachedCleanup::OwnedMatching { dir, fragment } => Work::List { dir, fragment },
        };
        if cl.detached.queue.is_empty() {
            self.detached_clients += 1;
        }
        cl.detached.queue.push_back(work);
        self.kick_detached(c);
    }

    /// Sends every client's next cleanup request where possible. Cheap when no client has
    /// cleanup pending, which is nearly always.
    pub(crate) fn kick_all_detached(&mut self) {
        if self.detached_clients == 0 {
            return;
        }
        for c in 0..self.clients.len() {
            self.kick_detached(c);
        }
    }

    /// Sends client `c`'s next cleanup request, unless one is in flight or the client
    /// cannot reach the server (it would only fail: retried after the reconnect).
    fn kick_detached(&mut self, c: ClientId) {
        let d = &self.clients[c].detached;
        if d.in_flight || !self.can_reach_server(c) {
            return;
        }
        let Some(work) = d.queue.front() else {
            return;
        };
        let req = work.request();
        self.clients[c].detached.in_flight = true;
        self.submit_detached(c, req);
    }

    /// Takes in the reply to client `c`'s cleanup request.
    pub(crate) fn detached_reply(&mut self, c: ClientId, result: Reply) {
        let session = self.clients[c].session.0;
        let d = &mut self.clients[c].detached;
        d.in_flight = false;
        let Some(front) = d.queue.front().cloned() else {
            return;
        };
        match &result {
            Err(e) if e.is_connection_loss() => return,
            Err(e) if e.is_session_terminal() => {
                self.clear_detached(c);
                return;
            }
            _ => {}
        }
        d.queue.pop_front();
        match (front, result) {
            (Work::List { dir, fragment }, Ok(Answer::Children(names, _))) => {
                // Owner checks in name order, ahead of later items.
                let mut names: Vec<&str> = names.iter().collect();
                names.sort_unstable();
                for name in names.iter().rev().filter(|n| n.contains(&fragment)) {
                    d.queue.push_front(Work::CheckOwner(join(&dir, name)));
                }
            }
            (Work::CheckOwner(path), Ok(Answer::Exists(Some(stat), _)))
                if stat.ephemeral_owner == session =>
            {
                d.queue.push_front(Work::Delete(path));
            }
            // Done: deleted, gone, not ours, or an error a retry would repeat.
            _ => {}
        }
        if d.queue.is_empty() {
            self.detached_clients -= 1;
        }
    }

    /// Drops client `c`'s pending cleanup: its session is over.
    pub(crate) fn clear_detached(&mut self, c: ClientId) {
        let d = &mut self.clients[c].detached;
        if !d.queue.is_empty() {
            d.queue.clear();
            self.detached_clients -= 1;
        }
        d.in_flight = false;
    }
}
