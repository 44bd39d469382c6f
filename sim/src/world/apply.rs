//! The server applying a client's requests: what each does to the tree and its sessions, and what it leaves behind.

use super::*;

impl World {
    pub(super) fn apply_next(&mut self, c: ClientId) {
        let kind = self.clients[c].outbound.front().map(|o| o.req.kind());
        if let Some(kind) = kind
            && let Some(i) = self
                .hooks
                .iter()
                .position(|(hc, hk, _)| *hc == c && *hk == kind)
        {
            self.touch_global();
            let (_, _, hook) = self.hooks.remove(i);
            hook(&mut ServerCtl { world: self });
            // The hook may have cut this client off; then the request is in-flight
            // and was handled with the connection.
            if !self.can_reach_server(c) || self.clients[c].outbound.is_empty() {
                return;
            }
        }
        let Some(out) = self.clients[c].outbound.pop_front() else {
            return;
        };
        if out.req.wire_bytes() > REQUEST_BYTES_MAX {
            self.touch_global();
            self.refuse_oversized(c, out);
            return;
        }
        let lose = matches!(out.req, Request::Create { .. }) && self.clients[c].lose_next_create;
        let op_id = out.op_id;
        let closing = matches!(out.req, Request::Close);
        let (result, watch) = self.execute(c, out.req);
        if lose {
            self.touch_global();
            // The create is applied, but its reply never arrives: the connection breaks.
            self.clients[c].lose_next_create = false;
            self.answer(c, out.reply, Err(ZkError::ConnectionLoss));
            self.record(c, EventKind::OpUnknown { op_id });
            self.drop_connection(c);
        } else {
            self.send_reply(c, op_id, out.reply, result, watch);
            if closing {
                self.mark_closed(c);
            }
        }
    }

    /// Applies a request at the server. Watch notifications go out before the reply, as
    /// ZooKeeper's server sends them.
    #[inline]
    pub(super) fn execute(
        &mut self,
        c: ClientId,
        req: Request,
    ) -> (Reply, Option<(Arc<str>, WatchKind)>) {
        let session = self.clients[c].session;
        if self.transition.is_some() {
            self.note_footprint(&req);
        }
        let mut notes = std::mem::take(&mut self.notes);
        let mut watch = None;
        let result = match req {
            Request::Create { path, data, mode } => self
                .tree
                .create(session, &path, &data, mode, &mut notes)
                .map(|(p, s)| Answer::Created(p, s)),
            Request::Delete { path, version } => self
                .tree
                .delete(&path, version, &mut notes)
                .map(|()| Answer::Done),
            Request::SetData {
                path,
                data,
                version,
            } => self
                .tree
                .set_data(&path, &data, version, &mut notes)
                .map(Answer::Stat),
            Request::Multi(ops) => self
                .tree
                .multi(session, &ops, &mut notes)
                .map(|results| Answer::Multi(results.into_iter().map(as_sent).collect())),
            Request::Exists { path, watch: w } => {
                let r = self.tree.exists(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Data));
                }
                r.map(|s| Answer::Exists(s, None))
            }
            Request::GetData { path, watch: w } => {
                let r = self.tree.get_data(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Data));
                }
                r.map(|(d, s)| Answer::Data(d, s, None))
            }
            Request::GetChildren { path, watch: w } => {
                let r = self.tree.get_children(&path, w.then_some(session));
                if w && r.is_ok() {
                    watch = Some((path, WatchKind::Child));
                }
                r.map(|ch| Answer::Children(ch, None))
            }
            Request::Close => {
                self.tree.close_session(session, &mut notes);
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.alive = false;
                }
                Ok(Answer::Done)
            }
        };
        if let (Some(t), Ok(Answer::Created(p, _))) = (&mut self.transition, &result) {
            // A sequential node's own name is known only now.
            t.write(p);
        }
        self.route(&mut notes);
        self.notes = notes;
        (result, watch)
    }

    /// What a request applied in a transition reads and writes of the tree (see
    /// `footprint`): a write as written whether or not it succeeds, conservatively.
    pub(super) fn note_footprint(&mut self, req: &Request) {
        let Some(t) = &mut self.transition else {
            return;
        };
        match req {
            Request::Create { path, .. } => t.read_with_parent(path),
            Request::Delete { path, .. } | Request::SetData { path, .. } => {
                t.read_with_parent(path);
                t.write(path);
            }
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch } => {
                t.read(path);
                if *watch {
                    t.watch(path);
                }
            }
            Request::Multi(_) | Request::Close => t.global = true,
        }
    }
}

/// A multi's result as the client reads it (see [`MULTI_CREATE_STAT`]).
pub(super) fn as_sent(result: OpResult) -> OpResult {
    match result {
        OpResult::Create { path, .. } => OpResult::Create {
            path,
            stat: MULTI_CREATE_STAT,
        },
        other => other,
    }
}

/// A request's kind, path and whether it leaves a watch, as the history records them.
pub(super) fn describe(req: &Request) -> (ZkOp, Arc<str>, bool) {
    let (path, watch) = match req {
        Request::Create { path, .. }
        | Request::Delete { path, .. }
        | Request::SetData { path, .. } => (Arc::clone(path), false),
        Request::Exists { path, watch }
        | Request::GetData { path, watch }
        | Request::GetChildren { path, watch } => (Arc::clone(path), *watch),
        Request::Multi(ops) => (
            ops.first().map_or_else(|| "".into(), |o| o.path().into()),
            false,
        ),
        Request::Close => ("".into(), false),
    };
    (req.kind(), path, watch)
}
