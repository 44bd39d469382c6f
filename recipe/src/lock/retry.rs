//! Retrying through connection loss.
//!
//! After `ConnectionLoss` a request may or may not have been applied. Reads are simply
//! repeated. A sequential create is not idempotent, so its retry goes through guid
//! recovery (see [`create_contender`](super::create_contender)). Deletes of our own
//! nodes are idempotent (`NoNode` means done).
//!
//! Two loops:
//! - [`retry`] is **bounded** by [`RetryPolicy::attempts_max`]; acquisitions and reads use
//!   it, so a dead connection surfaces as an error instead of a hang.
//! - [`retry_while_session`] is **unbounded in attempts** and ends only when the request
//!   gets an answer or the session is over. Cleanup and release use it: giving up there
//!   would leave a node that blocks every other contender until our session expires.
//!   It terminates because a client learns, at the latest on reconnect after the session
//!   timeout, that its session expired (and then the ephemeral node is gone anyway).
//!
//! Backoff doubles from `backoff_ms` up to `backoff_max_ms`, without jitter: the recipe
//! has no RNG, by design, so that simulated runs are reproducible.

use crate::{Coordination, SessionState, ZkError};
use std::future::Future;
use std::time::Duration;

/// How connection loss is retried. Limits carry their units in their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts of one request, the first included, before a bounded retry gives up.
    pub attempts_max: u32,
    /// Wait before the second attempt; doubles with each further attempt.
    pub backoff_ms: u64,
    /// Upper bound of one wait.
    pub backoff_max_ms: u64,
}

impl Default for RetryPolicy {
    /// 10 attempts, 50 ms doubling to at most 1 s: about 5.5 s of trying, which spans a
    /// reconnect within a typical session timeout.
    fn default() -> Self {
        RetryPolicy {
            attempts_max: 10,
            backoff_ms: 50,
            backoff_max_ms: 1_000,
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let shift = attempt.saturating_sub(1).min(32);
        let ms = self
            .backoff_ms
            .saturating_mul(1u64 << shift)
            .min(self.backoff_max_ms);
        Duration::from_millis(ms)
    }
}

/// The error matching a session that is over, if it is.
pub fn session_over<C: Coordination>(client: &C) -> Option<ZkError> {
    match client.session_state() {
        SessionState::Expired => Some(ZkError::SessionExpired),
        SessionState::Closed => Some(ZkError::SessionClosed),
        _ => None,
    }
}

/// Runs `op`, retrying connection loss up to `policy.attempts_max` attempts in all.
/// Returns the last outcome: after the attempts run out, that is `ConnectionLoss`.
pub async fn retry<C, T, F, Fut>(client: &C, policy: &RetryPolicy, mut op: F) -> Result<T, ZkError>
where
    C: Coordination,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Err(e) if e.is_connection_loss() && attempt < policy.attempts_max => {
                if let Some(over) = session_over(client) {
                    return Err(over);
                }
                client.sleep(policy.backoff(attempt)).await;
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// Runs `op`, retrying connection loss for as long as the session lives. Ends with the
/// first answer, or with `SessionExpired` / `SessionClosed` once the session is over.
pub async fn retry_while_session<C, T, F, Fut>(
    client: &C,
    policy: &RetryPolicy,
    mut op: F,
) -> Result<T, ZkError>
where
    C: Coordination,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut attempt = 1u32;
    loop {
        // A session known to be over answers nothing else: skip the request.
        if let Some(over) = session_over(client) {
            return Err(over);
        }
        match op().await {
            Err(e) if e.is_connection_loss() => {
                client.sleep(policy.backoff(attempt)).await;
                attempt = attempt.saturating_add(1);
            }
            outcome => return outcome,
        }
    }
}

/// Deletes `path` (one of our own nodes), retrying through connection loss until the node
/// or the session is gone. `Ok` means it no longer exists.
pub async fn delete_until_gone<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    path: &str,
) -> Result<(), ZkError> {
    match retry_while_session(client, policy, || client.delete(path, None)).await {
        Ok(()) | Err(ZkError::NoNode) => Ok(()),
        // The session is over: the server deletes (or has deleted) its ephemerals.
        Err(e) if e.is_session_terminal() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes our node at `path`, created with czxid `czxid`, at a path that other sessions
/// may take once ours is gone (a fixed name, as a queue item's lock; a sequential node's
/// name is never reused, and [`delete_until_gone`] serves it). A delete retried blindly
/// after a ConnectionLoss could remove the node another session created there once our
/// first delete was applied; so after each loss this looks first, and deletes again only
/// while the node there is still ours (its czxid). A session's requests are answered in
/// order, so what the look sees is settled: nobody but us deletes our node.
pub async fn delete_own_until_gone<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    path: &str,
    czxid: i64,
) -> Result<(), ZkError> {
    let mut attempt = 1u32;
    loop {
        if session_over(client).is_some() {
            // The server deletes (or has deleted) the session's ephemerals.
            return Ok(());
        }
        match client.delete(path, None).await {
            Ok(()) | Err(ZkError::NoNode) => return Ok(()),
            Err(e) if e.is_session_terminal() => return Ok(()),
            Err(e) if e.is_connection_loss() => {
                client.sleep(policy.backoff(attempt)).await;
                attempt = attempt.saturating_add(1);
                match retry_while_session(client, policy, || client.exists(path)).await {
                    Ok(Some(stat)) if stat.czxid == czxid => {}
                    // Gone, or another session's node now.
                    Ok(_) => return Ok(()),
                    Err(e) if e.is_session_terminal() => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            attempts_max: 5,
            backoff_ms: 100,
            backoff_max_ms: 700,
        };
        let ms: Vec<u128> = (1..=5).map(|a| p.backoff(a).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 700, 700]);
        assert_eq!(p.backoff(u32::MAX).as_millis(), 700);
    }
}
