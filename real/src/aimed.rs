//! The session faults an aimed fault scripts.
//!
//! The expiry ([`AimedAction::Expire`]): the proxy caught a
//! client's request, dropped it, cut the connection and refuses the session's
//! reconnects; here the session is closed at the server (a CloseSession through a
//! connection of its own, as Curator's KillSession) and the refusal lifted, so the client
//! learns Expired when it reconnects. The expiry thus comes exactly at the request aimed
//! at, on every run.
//!
//! The isolation ([`AimedAction::Isolate`]): the proxy caught the request, dropped it,
//! cut the connection and refuses the session's reconnects; here a connection of the
//! harness's own keeps the session alive at the server (`keep_session`) for the
//! isolation's length, then lets it go and lifts the refusal. The client meanwhile is cut
//! off as from a partition, but its server keeps its session and nodes: the window a
//! library's own declaration of expiry opens.

use crate::ZkClient;
use crate::error::RealError;
use crate::faults::{ClientLink, ISOLATION_GRACE_MS};
use crate::proxy::AimedAction;
use std::sync::Arc;
use std::time::Duration;
use zklock_recipe::{Coordination, SessionId, SessionState};

/// How long an aimed expiry may take (the victim noticing its cut, the server closing
/// the session): only a hang reaches it.
pub const AIMED_EXPIRY_TIMEOUT: Duration = Duration::from_secs(60);

/// Expires `session`, which `link`'s proxy caught with [`AimedAction::Expire`].
/// `victim` is the client's recording session: when it is the session caught (zklock's own
/// lock), the close waits until it noticed its cut connection, so that it stops believing
/// before the server lets anyone else in, as [`crate::faults::expire_isolated`] does; a
/// driver's session (a process of its own) gets twice [`ISOLATION_GRACE_MS`], as the
/// `expire` fault gives it. `closed` runs once the server confirmed the close, before
/// the client may reconnect and learn of it.
pub(crate) async fn expire_caught(
    link: Arc<ClientLink>,
    session: i64,
    victim: Option<Arc<ZkClient>>,
    server_connect: String,
    closed: impl FnOnce(),
) -> Result<(), RealError> {
    let failed = |reason: String| RealError::ExpireSession {
        session: SessionId(session).to_string(),
        reason,
    };
    if session == 0 {
        return Err(failed(
            "the caught request's connection never had a session".into(),
        ));
    }
    // The proxy that caught it refuses the session; the client's other proxies (one per
    // server of an ensemble) must too.
    link.refuse_session(session, AIMED_EXPIRY_TIMEOUT);
    let deadline = tokio::time::Instant::now() + AIMED_EXPIRY_TIMEOUT;
    match victim.filter(|c| c.session_id().0 == session) {
        Some(client) => {
            while client.session_state() == SessionState::Connected {
                if tokio::time::Instant::now() >= deadline {
                    link.lift_refusal(session);
                    return Err(failed(
                        "the client did not notice its cut connection".into(),
                    ));
                }
                tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
            }
            tokio::time::sleep(Duration::from_millis(ISOLATION_GRACE_MS)).await;
        }
        None => tokio::time::sleep(Duration::from_millis(ISOLATION_GRACE_MS * 2)).await,
    }
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let killed = crate::harness::kill_session(&server_connect, SessionId(session), left).await;
    if killed.is_ok() {
        closed();
    }
    link.lift_refusal(session);
    killed
}

/// Keeps `session`, which `link`'s proxy caught with [`AimedAction::Isolate`], alive at
/// the server for `isolated_ms` from now while its reconnects are refused, then lets it
/// go: the server expires it a session timeout later unless its client resumes it.
pub(crate) async fn isolate_caught(
    link: Arc<ClientLink>,
    session: i64,
    server_connect: String,
    isolated_ms: u64,
    session_timeout_ms: u64,
) -> Result<(), RealError> {
    if session == 0 {
        return Err(RealError::KeepSession {
            session: SessionId(session).to_string(),
            reason: "the caught request's connection never had a session".into(),
        });
    }
    let over = tokio::time::Instant::now() + Duration::from_millis(isolated_ms);
    link.refuse_session(
        session,
        Duration::from_millis(isolated_ms) + AIMED_EXPIRY_TIMEOUT,
    );
    let kept = crate::harness::keep_session(
        &server_connect,
        SessionId(session),
        session_timeout_ms,
        AIMED_EXPIRY_TIMEOUT,
    )
    .await;
    tokio::time::sleep_until(over).await;
    let released = match kept {
        Ok(keeper) => keeper.release().await,
        Err(e) => Err(e),
    };
    link.lift_refusal(session);
    released
}

/// Whether a caught request's action expires its session.
pub(crate) fn expires(action: AimedAction) -> bool {
    action == AimedAction::Expire
}

/// How often the victim's state is read.
const POLL_MS: u64 = 2;
