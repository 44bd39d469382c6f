//! The session and connection state machine: connection loss, reconnect, expiry,
//! partitions, pauses and crashes.
//!
//! Pings are modelled by their effect rather than as messages: while a client is connected
//! and neither frozen nor partitioned, the server hears from it and never expires it; when
//! that stops at time t, the server expires it at t + timeout, and the client declares
//! itself Disconnected at t + 2/3 of the timeout, as ZooKeeper's client does when its read
//! timeout passes without a reply: a paused client when it resumes, since its library is
//! paused too, and a crashed one never.

use super::{ClientId, Conn, Inbound, Timer, World};
use crate::chooser::ChoiceKind;
use zklock_recipe::history::EventKind;
use zklock_recipe::{SessionId, SessionState, ZkError};

impl World {
    /// Re-evaluates whether the server hears client `c`, starting or cancelling its expiry.
    pub(crate) fn update_hearing(&mut self, c: ClientId) {
        let hears = self.can_reach_server(c);
        let session = self.clients[c].session;
        let timeout = self.clients[c].timeout_us;
        let now = self.now_us;
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if !s.alive || s.hears == hears {
            return;
        }
        s.hears = hears;
        s.expiry_epoch += 1;
        let epoch = s.expiry_epoch;
        if !hears {
            self.set_timer(now + timeout, Timer::Expire { session, epoch });
        }
    }

    pub(crate) fn set_state(&mut self, c: ClientId, state: SessionState) {
        let cl = &mut self.clients[c];
        if cl.state != state {
            cl.state = state;
            cl.broadcast.send(state);
            self.record(c, EventKind::Session { state });
            self.observe(c, super::digest::Seen::Session(state));
        }
    }

    /// The client loses its connection now. In-flight requests reached the server or not,
    /// as the chooser decides (a prefix of them, since a connection is FIFO); every caller
    /// waiting for a reply gets ConnectionLoss. Watch events wait for the reconnect.
    pub(crate) fn drop_connection(&mut self, c: ClientId) {
        self.touch_global();
        self.apply_sent_prefix(c, ZkError::ConnectionLoss);
        let mut lost = Vec::new();
        let cl = &mut self.clients[c];
        for out in cl.outbound.drain(..) {
            lost.push((out.op_id, out.reply));
        }
        take_replies(cl, &mut lost);
        cl.conn = Conn::Disconnected;
        cl.conn_epoch += 1;
        cl.conn_broken = false;
        let epoch = cl.conn_epoch;
        // Answered once the connection is marked down, so background cleanup waits for
        // the reconnect instead of resending at once.
        let mut unknown = Vec::with_capacity(lost.len());
        for (op_id, reply) in lost {
            self.answer(c, reply, Err(ZkError::ConnectionLoss));
            unknown.push(op_id);
        }
        for op_id in unknown {
            self.record(c, EventKind::OpUnknown { op_id });
        }
        let reconnect_at = self.now_us + self.reconnect_delay_us();
        self.set_state(c, SessionState::Disconnected);
        self.update_hearing(c);
        if self.clients[c].partitioned_until.is_none() {
            self.set_timer(reconnect_at, Timer::Reconnect { client: c, epoch });
        }
    }

    /// The connection goes down with requests in flight: a prefix of them reached the
    /// server (a connection is FIFO), as the chooser decides, and was applied; their
    /// callers get `error`, their fate unknown.
    fn apply_sent_prefix(&mut self, c: ClientId, error: ZkError) {
        let session = self.clients[c].session;
        let alive = self.sessions.get(&session).is_some_and(|s| s.alive);
        let n = self.clients[c].outbound.len();
        if alive && n > 0 {
            let k = self.choose(ChoiceKind::AppliedPrefix, n + 1);
            for _ in 0..k {
                let out = self.clients[c].outbound.pop_front().expect("k <= n");
                // Applied, but the reply is lost with the connection.
                let _ = self.execute(c, out.req);
                self.answer(c, out.reply, Err(error.clone()));
                self.record(c, EventKind::OpUnknown { op_id: out.op_id });
            }
        }
    }

    /// Expiry declared by the client library on its own, as Curator does by its own
    /// session timer (its default connection handling since 3.0) and in its KillSession
    /// (ZooKeeper's `injectSessionExpiration`): the handle closes its connection and
    /// reports Expired while the server still holds the session, and its ephemerals,
    /// until it has heard nothing from it for a session timeout. A session the process
    /// opens meanwhile sees the old one's nodes (CURATOR-498).
    pub(crate) fn expire_locally(&mut self, c: ClientId) {
        self.touch_global();
        // ZooKeeper's client fails every pending request with SessionExpired once its
        // handle is closed, those already applied too.
        self.apply_sent_prefix(c, ZkError::SessionExpired);
        // Replies the server sent that the client had not taken go with the connection.
        let mut lost = Vec::new();
        take_replies(&mut self.clients[c], &mut lost);
        for (op_id, reply) in lost {
            self.answer(c, reply, Err(ZkError::SessionExpired));
            self.record(c, EventKind::OpUnknown { op_id });
        }
        let session = self.clients[c].session;
        let timeout = self.clients[c].timeout_us;
        self.learn_expired(c);
        let now = self.now_us;
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        // A closed handle sends no pings. If the server had already stopped hearing
        // (a partition), its expiry stands as it was.
        if s.alive && s.hears {
            s.hears = false;
            s.expiry_epoch += 1;
            let epoch = s.expiry_epoch;
            self.set_timer(now + timeout, Timer::Expire { session, epoch });
        }
    }

    pub(crate) fn reconnect(&mut self, c: ClientId, epoch: u64) {
        let cl = &self.clients[c];
        if cl.conn_epoch != epoch || cl.conn != Conn::Disconnected {
            return;
        }
        if cl.frozen_until.is_some() || cl.partitioned_until.is_some() {
            // Tried again at resume or heal.
            return;
        }
        let alive = self.sessions.get(&cl.session).is_some_and(|s| s.alive);
        if alive {
            self.clients[c].conn = Conn::Connected;
            self.clients[c].conn_epoch += 1;
            self.set_state(c, SessionState::Connected);
            self.update_hearing(c);
            // Watches are restored: events queued meanwhile are delivered now.
            self.pump(c);
        } else {
            self.learn_expired(c);
        }
    }

    /// The client learns its session is gone: watches fail, state is final.
    pub(crate) fn learn_expired(&mut self, c: ClientId) {
        let cl = &mut self.clients[c];
        cl.conn = Conn::Expired;
        cl.conn_epoch += 1;
        cl.inbound.clear();
        let outbound: Vec<_> = cl.outbound.drain(..).collect();
        let mut failed = Vec::with_capacity(outbound.len());
        for out in outbound {
            self.answer(c, out.reply, Err(ZkError::SessionExpired));
            failed.push(out.op_id);
        }
        // The session is over: the server deletes its ephemerals without us.
        self.clear_detached(c);
        for op_id in failed {
            self.record(
                c,
                EventKind::OpFail {
                    op_id,
                    error: ZkError::SessionExpired,
                },
            );
        }
        self.end_session(c, ZkError::SessionExpired, SessionState::Expired);
    }

    /// The server expires the session: its ephemerals go in one transaction.
    pub(crate) fn server_expire(&mut self, session: SessionId) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        if !s.alive {
            return;
        }
        s.alive = false;
        let mut notes = Vec::new();
        self.tree.expire_session(session, &mut notes);
        self.route(&mut notes);
    }

    pub(crate) fn expire_timer(&mut self, session: SessionId, epoch: u64) {
        let due = self
            .sessions
            .get(&session)
            .is_some_and(|s| s.alive && !s.hears && s.expiry_epoch == epoch);
        if due {
            self.server_expire(session);
        }
    }

    /// Forced expiry, as Curator's KillSession: the server drops the session now and
    /// closes its connection; the client sees Disconnected, then Expired when it reconnects.
    pub(crate) fn force_expire(&mut self, c: ClientId) {
        self.touch_global();
        let session = self.clients[c].session;
        self.server_expire(session);
        if self.clients[c].conn == Conn::Connected {
            if self.clients[c].frozen_until.is_some() {
                self.clients[c].conn_broken = true;
            } else {
                self.drop_connection(c);
            }
        }
    }

    pub(crate) fn partition(&mut self, c: ClientId, duration_us: u64) {
        let at = self.now_us + duration_us;
        let was_partitioned = self.clients[c].partitioned_until.is_some();
        self.clients[c].partitioned_until = Some(at);
        self.set_timer(at, Timer::Heal { client: c, at });
        self.update_hearing(c);
        if !was_partitioned && self.clients[c].conn == Conn::Connected {
            let detect = self.now_us + self.clients[c].timeout_us * 2 / 3;
            let epoch = self.clients[c].conn_epoch;
            self.set_timer(detect, Timer::DetectDisconnect { client: c, epoch });
        }
    }

    pub(crate) fn heal(&mut self, c: ClientId) {
        self.clients[c].partitioned_until = None;
        match self.clients[c].conn {
            Conn::Connected => {
                // Healed before the client noticed: everything held flows now.
                self.clients[c].conn_epoch += 1;
                self.update_hearing(c);
                self.pump(c);
            }
            Conn::Disconnected => {
                let epoch = self.clients[c].conn_epoch;
                self.reconnect(c, epoch);
            }
            Conn::Expired | Conn::Closed => {}
        }
    }

    pub(crate) fn pause(&mut self, c: ClientId, duration_us: u64) {
        if self.clients[c].frozen_until.is_some() {
            return;
        }
        let at = self.now_us.saturating_add(duration_us);
        self.clients[c].frozen_until = Some(at);
        self.clients[c].frozen_since = self.now_us;
        if at != u64::MAX {
            self.set_timer(at, Timer::Resume { client: c, at });
        }
        self.update_hearing(c);
    }

    /// A crash: the client never runs again; its session expires after the timeout.
    pub(crate) fn crash(&mut self, c: ClientId) {
        self.clients[c].frozen_until = None;
        self.clients[c].crashed = true;
        // The client library's background work dies with the process.
        self.clear_detached(c);
        self.pause(c, u64::MAX);
        for w in std::mem::take(&mut self.clients[c].crash_watchers) {
            let _ = w.send(());
        }
    }

    /// The process resumes believing what it believed before the pause. If the pause
    /// outlasted 2/3 of the timeout (or the server closed the connection meanwhile), the
    /// client library now notices the silence and drops the connection.
    pub(crate) fn resume(&mut self, c: ClientId) {
        // The digest hashes this answer in place of the freeze's start (`client_digest`).
        let silent_too_long = self.clients[c].pause_outlasts_read_timeout();
        self.clients[c].frozen_until = None;
        for done in std::mem::take(&mut self.clients[c].deferred_sleeps) {
            self.observe(c, super::digest::Seen::Woke);
            self.slots.fill(done, super::delivery::Delivered::Woke);
        }
        for (op, reply) in std::mem::take(&mut self.clients[c].deferred_resource) {
            self.resource_op(c, op, reply);
        }
        match self.clients[c].conn {
            Conn::Connected => {
                if self.clients[c].conn_broken || silent_too_long {
                    self.drop_connection(c);
                } else {
                    self.update_hearing(c);
                    self.pump(c);
                }
            }
            Conn::Disconnected => {
                let epoch = self.clients[c].conn_epoch;
                self.reconnect(c, epoch);
            }
            Conn::Expired | Conn::Closed => {}
        }
    }

    /// The client closed its session: the state is final and every watch still set ends
    /// (those on its own ephemerals fired NodeDeleted at the close, see
    /// [`DataTree::close_session`](crate::tree::DataTree::close_session)).
    pub(crate) fn mark_closed(&mut self, c: ClientId) {
        let cl = &mut self.clients[c];
        cl.conn = Conn::Closed;
        cl.conn_epoch += 1;
        let outbound: Vec<_> = cl.outbound.drain(..).collect();
        for out in outbound {
            self.answer(c, out.reply, Err(ZkError::SessionClosed));
        }
        // Closing deleted the session's ephemerals.
        self.clear_detached(c);
        self.end_session(c, ZkError::SessionClosed, SessionState::Closed);
    }

    /// A new session for client `c`, whose session ended, as a process opens one after
    /// Expired: the server creates it now and the client is Connected. `None` while the
    /// session has not ended, or the client cannot reach the server (crashed, paused or
    /// cut off). Handles on the old session stay on it (see `ClientState::ended`).
    pub(crate) fn renew_session(&mut self, c: ClientId) -> Option<SessionId> {
        let cl = &self.clients[c];
        let ended = matches!(cl.conn, Conn::Expired | Conn::Closed);
        // A crashed client is frozen for good, so the frozen check covers it.
        if !ended || cl.frozen_until.is_some() || cl.partitioned_until.is_some() {
            return None;
        }
        let session = self.open_session(c);
        let cl = &mut self.clients[c];
        let old = std::mem::replace(&mut cl.session, session);
        cl.ended.push((old, cl.state));
        cl.conn = Conn::Connected;
        cl.conn_epoch += 1;
        cl.conn_broken = false;
        // The old session's subscriptions were closed when it ended.
        cl.broadcast = zklock_recipe::SessionBroadcast::default();
        self.set_state(c, SessionState::Connected);
        self.update_hearing(c);
        Some(session)
    }

    /// The session is over for the client: every watch ends with `error`, the final
    /// state is announced, and the subscriptions end.
    fn end_session(&mut self, c: ClientId, error: ZkError, state: SessionState) {
        self.clients[c].watches.fail_all(&error);
        self.set_state(c, state);
        self.clients[c].broadcast.close();
    }
}

/// Moves the replies queued for client `cl` into `lost` (op id, who awaits it), in
/// order, and keeps its watch events queued.
fn take_replies(cl: &mut super::ClientState, lost: &mut Vec<(u64, super::ReplyTo)>) {
    let mut kept = std::collections::VecDeque::new();
    for item in cl.inbound.drain(..) {
        match item {
            Inbound::Reply { reply, op_id, .. } => lost.push((op_id, reply)),
            ev @ Inbound::Event(_) => kept.push_back(ev),
        }
    }
    cl.inbound = kept;
}
