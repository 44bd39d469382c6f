//! What the proxy reads of each message that passes it: the requests it catches or strikes, the node changes it records, and the replies it withholds.

use super::*;

/// Catches the create request an armed fault waits for.
pub(super) fn note_request(shared: &Shared, id: u64, body: &[u8]) {
    if body.len() < REQUEST_HEADER_BYTES {
        return;
    }
    let (xid, op) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    let mut state = shared.state();
    if state.lose_create == LoseCreate::Armed
        && CREATE_OPS.contains(&op)
        && state
            .lose_create_under
            .as_deref()
            .is_none_or(|prefix| created_path(body).is_some_and(|p| p.starts_with(prefix)))
    {
        state.lose_create = LoseCreate::Withholding { conn: id, xid, op };
    }
}

/// Follows a create of an ephemeral node, or a delete, until its reply.
pub(super) fn note_change_request(shared: &Shared, id: u64, body: &[u8], session: i64) {
    if body.len() < REQUEST_HEADER_BYTES {
        return;
    }
    let (xid, code) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    let delete = code == op::DELETE;
    let ephemeral_create = CREATE_OPS.contains(&code) && create_is_ephemeral(body);
    if !(delete || ephemeral_create) {
        return;
    }
    let Some(path) = created_path(body) else {
        return;
    };
    let mut state = shared.state();
    if state.pending.len() == MAX_PENDING_CHANGES {
        state.pending.pop_front();
    }
    let path = path.to_owned();
    state.pending.push_back((
        (id, xid),
        Pending {
            delete,
            path,
            session,
            sent: false,
        },
    ));
}

/// Whether a create request asks for an ephemeral node: after the path come the data
/// (a length, -1 for none, and the bytes), the ACL (a count, then each entry's perms and
/// its scheme and id strings) and the flags.
pub(super) fn create_is_ephemeral(body: &[u8]) -> bool {
    fn skip_bytes(body: &[u8], at: usize) -> Option<usize> {
        let len = be_i32(body.get(at..at + 4)?);
        Some(at + 4 + usize::try_from(len).unwrap_or(0))
    }
    let flags = (|| {
        let mut at = skip_bytes(body, REQUEST_HEADER_BYTES)?; // the path
        at = skip_bytes(body, at)?; // the data
        let entries = be_i32(body.get(at..at + 4)?);
        at += 4;
        for _ in 0..entries.max(0) {
            at = skip_bytes(body, at + 4)?; // perms, then the scheme
            at = skip_bytes(body, at)?; // the id
        }
        Some(be_i32(body.get(at..at + 4)?))
    })();
    flags.is_some_and(|f| EPHEMERAL_FLAGS.contains(&f))
}

/// Notes that the server still held `session`, and the node change a reply to a followed
/// create or delete reports.
pub(super) fn note_reply(shared: &Shared, id: u64, body: &[u8], session: i64) {
    let now = crate::client::monotonic_now();
    let mut state = shared.state();
    if session != 0 {
        match state.answered.iter_mut().find(|(s, _)| *s == session) {
            Some(entry) => entry.1 = now,
            None => {
                if state.answered.len() == MAX_SESSIONS_FOLLOWED
                    && let Some(oldest) =
                        (0..state.answered.len()).min_by_key(|&i| state.answered[i].1)
                {
                    state.answered.swap_remove(oldest);
                }
                state.answered.push((session, now));
            }
        }
    }
    if body.len() < REPLY_HEADER_BYTES {
        return;
    }
    let xid = be_i32(&body[0..4]);
    let Some(at) = state.pending.iter().position(|(key, _)| *key == (id, xid)) else {
        return;
    };
    let Some((_, pending)) = state.pending.remove(at) else {
        return;
    };
    if be_i32(&body[12..16]) != 0 {
        return;
    }
    let path = if pending.delete {
        pending.path
    } else {
        // A create's reply names the node made (with its sequence), as a request does.
        let mut as_request = body[..REQUEST_HEADER_BYTES].to_vec();
        as_request.extend_from_slice(&body[REPLY_HEADER_BYTES..]);
        match created_path(&as_request) {
            Some(p) => p.to_owned(),
            None => return,
        }
    };
    push_change(
        &mut state,
        NodeChange {
            at: now,
            path,
            session: pending.session,
            deleted: pending.delete,
        },
    );
}

/// Notes the request among those seen, and catches it if an aimed fault is due; what
/// the fault does to it.
pub(super) fn aim_at_request(
    shared: &Shared,
    id: u64,
    body: &[u8],
    session: i64,
) -> Option<AimedAction> {
    if body.len() < REQUEST_HEADER_BYTES {
        return None;
    }
    let (xid, op) = (be_i32(&body[0..4]), be_i32(&body[4..8]));
    op::name_of(op)?;
    let path = created_path(body)?;
    let mut state = shared.state();
    if state.seen.len() < MAX_SEEN_REQUESTS {
        state.seen.push(SeenRequest {
            op,
            path: path.to_owned(),
        });
    } else {
        state.seen_beyond += 1;
    }
    let now = tokio::time::Instant::now();
    let mut action = None;
    for aim in state.aims.iter_mut().filter(|a| a.fault.matches(op, path)) {
        aim.seen += 1;
        if action.is_none() && aim.due(now) {
            aim.struck += 1;
            aim.first_strike.get_or_insert(now);
            action = Some(aim.fault.action);
        }
    }
    let action = action?;
    if action == AimedAction::WithholdReply {
        state.withholding.push((id, xid));
    }
    if state.caught.len() == MAX_RECORDED_LOST_REPLIES {
        state.caught.pop_front();
    }
    state.caught.push_back(CaughtRequest {
        op,
        path: path.to_owned(),
        action,
        err: None,
        session,
    });
    Some(action)
}

/// True if this reply is one an aimed fault withholds; records its error code.
pub(super) fn withhold_aimed_reply(shared: &Shared, id: u64, body: &[u8]) -> bool {
    if body.len() < REPLY_HEADER_BYTES {
        return false;
    }
    let xid = be_i32(&body[0..4]);
    let mut state = shared.state();
    let Some(at) = state.withholding.iter().position(|&w| w == (id, xid)) else {
        return false;
    };
    state.withholding.remove(at);
    let err = be_i32(&body[12..16]);
    if let Some(caught) = state
        .caught
        .iter_mut()
        .rev()
        .find(|c| c.action == AimedAction::WithholdReply && c.err.is_none())
    {
        caught.err = Some(err);
    }
    true
}

/// The path of a request's body (create, delete, exists, getData, setData, getChildren): after the header, a length (i32) and the bytes.
pub(super) fn created_path(body: &[u8]) -> Option<&str> {
    let len_at = REQUEST_HEADER_BYTES;
    let len = usize::try_from(be_i32(body.get(len_at..len_at + 4)?)).ok()?;
    let path = body.get(len_at + 4..len_at + 4 + len)?;
    std::str::from_utf8(path).ok()
}

/// True if this reply is the one to withhold; records it.
pub(super) fn withhold_reply(shared: &Shared, id: u64, body: &[u8]) -> bool {
    if body.len() < REPLY_HEADER_BYTES {
        return false;
    }
    let xid = be_i32(&body[0..4]);
    let mut state = shared.state();
    let LoseCreate::Withholding {
        conn,
        xid: wanted,
        op,
    } = state.lose_create
    else {
        return false;
    };
    if conn != id || xid != wanted {
        return false;
    }
    let mut zxid = [0; 8];
    zxid.copy_from_slice(&body[4..12]);
    let lost = LostReply {
        xid,
        op,
        zxid: i64::from_be_bytes(zxid),
        err: be_i32(&body[12..16]),
    };
    state.lose_create = LoseCreate::Off;
    if state.lost.len() == MAX_RECORDED_LOST_REPLIES {
        state.lost.pop_front();
    }
    state.lost.push_back(lost);
    true
}
