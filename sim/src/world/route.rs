//! Replies and notifications on their way to a client: routed, held back when it cannot take them, and delivered.

use super::*;

impl World {
    /// A request frame larger than the server reads: it closes the connection, so
    /// neither this request nor any the client sent after it is applied; all fail with
    /// ConnectionLoss (the client cannot know their fate), and the client reconnects.
    pub(super) fn refuse_oversized(&mut self, c: ClientId, out: Outbound) {
        let mut lost = vec![out];
        lost.extend(self.clients[c].outbound.drain(..));
        for out in lost {
            self.answer(c, out.reply, Err(ZkError::ConnectionLoss));
            self.record(c, EventKind::OpUnknown { op_id: out.op_id });
        }
        self.drop_connection(c);
    }

    /// Queues watch notifications on their clients' connections, leaving `notes` empty.
    pub(crate) fn route(&mut self, notes: &mut Vec<Notification>) {
        if notes.is_empty() {
            return;
        }
        let mut touched = std::mem::take(&mut self.touched);
        for n in notes.drain(..) {
            if let Some(s) = self.sessions.get(&n.session) {
                let c = s.client;
                if let Some(t) = &mut self.transition {
                    t.touch(c);
                }
                let cl = &mut self.clients[c];
                if cl.session != n.session {
                    // A session the client library gave up on while the server still
                    // holds it: its connection is closed, so its events go nowhere.
                    continue;
                }
                // Straight to a client with nothing queued, as `send_reply` does. Clients
                // then hear in notification order rather than by id, which nothing
                // observes: an event only fires a watch, and wakes are taken in id order.
                if cl.inbound.is_empty() && cl.can_take_event() {
                    self.deliver_event(c, n.event);
                    continue;
                }
                cl.inbound.push_back(Inbound::Event(n.event));
                if !touched.contains(&c) {
                    touched.push(c);
                }
            }
        }
        touched.sort_unstable();
        for &c in &touched {
            self.pump(c);
        }
        touched.clear();
        self.touched = touched;
    }

    /// Sends a reply down the client's connection: delivered at once when nothing is
    /// queued ahead of it and the client can take it, else queued. The same as queueing
    /// then pumping, without building the queue's item.
    pub(super) fn send_reply(
        &mut self,
        c: ClientId,
        op_id: u64,
        reply: ReplyTo,
        result: Reply,
        watch: Option<(Arc<str>, WatchKind)>,
    ) {
        self.touch_client(c);
        let cl = &mut self.clients[c];
        if cl.inbound.is_empty() && cl.can_take_reply() {
            self.deliver_reply(c, op_id, reply, result, watch);
        } else {
            cl.inbound.push_back(Inbound::Reply {
                op_id,
                reply,
                result,
                watch,
            });
        }
        // Pumping an empty queue does nothing; the check spares the call on every reply.
        if !self.clients[c].inbound.is_empty() {
            self.pump(c);
        }
    }

    /// Delivers what the client's connection holds, in order, unless the client cannot
    /// receive now (frozen, partitioned, or disconnected: events wait for the reconnect).
    pub(crate) fn pump(&mut self, c: ClientId) {
        loop {
            let cl = &mut self.clients[c];
            match cl.inbound.front() {
                Some(front) if cl.can_take(front) => {}
                _ => return,
            }
            let item = cl.inbound.pop_front().expect("front exists");
            self.deliver(c, item);
        }
    }

    /// Hands one item of the connection to the client.
    pub(super) fn deliver(&mut self, c: ClientId, item: Inbound) {
        match item {
            Inbound::Reply {
                op_id,
                reply,
                result,
                watch,
            } => self.deliver_reply(c, op_id, reply, result, watch),
            Inbound::Event(ev) => self.deliver_event(c, ev),
        }
    }

    pub(super) fn deliver_event(&mut self, c: ClientId, ev: WatchedEvent) {
        self.observe(c, Seen::Event(&ev));
        // Recorded as the client library hands it over; the history is written only,
        // never read by the world, so recording it changes no decision.
        self.record(
            c,
            EventKind::WatchEvent {
                event_type: ev.event_type,
                path: ev.path.clone(),
            },
        );
        self.clients[c].watches.fire(ev);
    }

    /// Hands a reply to the client: its watch registers now, as the client library's does.
    pub(super) fn deliver_reply(
        &mut self,
        c: ClientId,
        op_id: u64,
        reply: ReplyTo,
        mut result: Reply,
        watch: Option<(Arc<str>, WatchKind)>,
    ) {
        if let (Ok(answer), Some((path, kind))) = (&mut result, watch) {
            let (tx, w) = zklock_recipe::Watch::channel();
            self.clients[c].watches.add(kind, path, tx);
            answer.attach_watch(w);
        }
        let kind = match &result {
            Ok(_) => EventKind::OpOk { op_id },
            Err(e) => EventKind::OpFail {
                op_id,
                error: e.clone(),
            },
        };
        if let ReplyTo::Actor(slot) = &reply {
            self.before_reply(c);
            self.observe(c, Seen::Reply(&result));
            self.arm_before_reply(c, *slot);
        } else {
            self.observe(c, Seen::Reply(&result));
        }
        self.answer(c, reply, result);
        self.record(c, kind);
    }
}
