//! Forcing a session to expire, as Curator's `KillSession` does: attach a second
//! connection to the session (same id and password) and close the session through it.
//!
//! Two things make the obvious version (a second zookeeper-client `Client` built with
//! `Connector::with_session`) unreliable, so this speaks the wire protocol itself:
//!
//! * zookeeper-client keeps the password private, so it cannot be copied from the victim.
//!   ZooKeeper derives it from the id, though: `ZooKeeperServer.generatePasswd(id)` is
//!   `new java.util.Random(id ^ 0xB3415C00).nextBytes(new byte[16])`, so it is recomputed.
//! * Attaching moves the session to the new connection and closes the victim's; the victim
//!   reconnects at once and takes the session back, before a second client has finished its
//!   handshake (connect, then a ping round trip) and sent CloseSession. Sending the connect
//!   and the CloseSession in one write puts both in the server's buffer before the victim
//!   can react, and the server handles a connection's requests in order.
//!
//! In an ensemble even that is not enough: a follower revalidates an attaching session with
//! the leader (a round trip), and a victim reconnecting meanwhile ends up with a second live
//! connection to the session that survives our close as a zombie (the server that received
//! the CloseSession only drops the connection it came on). So in an ensemble the attach goes
//! to a server *other* than the victim's (found with the `cons` four-letter word): the
//! victim is never disturbed before the close commits, and then its own server, which
//! learns of the close from the leader, drops it.

use crate::client::ZkClient;
use crate::error::RealError;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_recipe::{Coordination, SessionId, SessionState};

/// `ZooKeeperServer.superSecret`, mixed into the session id to seed the password.
const SUPER_SECRET: i64 = 0xB341_5C00;
const PASSWORD_LEN: usize = 16;
/// ZooKeeper's op code for CloseSession.
const OP_CLOSE_SESSION: i32 = -11;
/// The xid of our CloseSession request.
const CLOSE_XID: i32 = 1;
/// Bigger answers are not ZooKeeper's (and reading them would be unbounded).
const MAX_FRAME_BYTES: usize = 1 << 20;
/// How long a `cons` query may take.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause between attempts when the victim took the session back.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// `java.util.Random`, enough of it to compute session passwords.
struct JavaRandom {
    seed: u64,
}

impl JavaRandom {
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    fn new(seed: i64) -> Self {
        JavaRandom {
            seed: (seed as u64 ^ Self::MULTIPLIER) & Self::MASK,
        }
    }

    fn next_int(&mut self) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.seed >> 16) as i32
    }

    fn next_bytes(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(4) {
            let mut rnd = self.next_int();
            for byte in chunk {
                *byte = rnd as u8;
                rnd >>= 8;
            }
        }
    }
}

/// The password ZooKeeper gave session `id`.
fn session_password(id: i64) -> [u8; PASSWORD_LEN] {
    let mut password = [0; PASSWORD_LEN];
    JavaRandom::new(id ^ SUPER_SECRET).next_bytes(&mut password);
    password
}

/// A ConnectRequest attaching to `id`, then a CloseSession request, each length-prefixed.
fn attach_and_close(id: i64, timeout_ms: i32) -> Vec<u8> {
    let connect = attach(id, timeout_ms);
    let mut close = Vec::with_capacity(8);
    close.extend_from_slice(&CLOSE_XID.to_be_bytes());
    close.extend_from_slice(&OP_CLOSE_SESSION.to_be_bytes());
    let mut out = Vec::with_capacity(connect.len() + close.len() + 8);
    for frame in [connect, close] {
        out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
        out.extend_from_slice(&frame);
    }
    out
}

/// The body of a ConnectRequest attaching to session `id`.
fn attach(id: i64, timeout_ms: i32) -> Vec<u8> {
    let mut connect = Vec::with_capacity(64);
    connect.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    // lastZxidSeen 0: the server refuses clients that saw a newer zxid than it has.
    connect.extend_from_slice(&0i64.to_be_bytes());
    connect.extend_from_slice(&timeout_ms.to_be_bytes());
    connect.extend_from_slice(&id.to_be_bytes());
    connect.extend_from_slice(&(PASSWORD_LEN as i32).to_be_bytes());
    connect.extend_from_slice(&session_password(id));
    connect.push(0); // readOnly = false
    connect
}

async fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let len = stream.read_i32().await?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_FRAME_BYTES)
        .ok_or_else(|| std::io::Error::other(format!("bad frame length {len}")))?;
    let mut frame = vec![0; len];
    stream.read_exact(&mut frame).await?;
    Ok(frame)
}

/// Whether the server at `addr` has a client connection of session `id` (4lw `cons`);
/// `None` if it does not answer.
async fn holds_session(addr: &str, id: i64) -> Option<bool> {
    let ask = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"cons").await.ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        Some(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(FOUR_LETTER_TIMEOUT, ask)
        .await
        .ok()??;
    if !answer.contains("queued=") {
        return None; // not a connection listing (e.g. "cons is not executed ...")
    }
    Some(answer.contains(&format!("sid={}", SessionId(id))))
}

/// How one attempt ended.
enum Attempt {
    /// The server confirmed the close, or said the session was already gone.
    Done,
    /// The connection broke first (the victim took the session back); try again.
    Retry(String),
}

async fn attempt(addr: &str, id: i64) -> Result<Attempt, RealError> {
    let io = |what: &str, e: std::io::Error| RealError::io(format!("{what} {addr}"), e);
    let mut stream = match TcpStream::connect(addr).await {
        Ok(stream) => stream,
        Err(e) => return Ok(Attempt::Retry(format!("connecting to {addr}: {e}"))),
    };
    stream.set_nodelay(true).map_err(|e| io("configuring", e))?;
    stream
        .write_all(&attach_and_close(id, 30_000))
        .await
        .map_err(|e| io("writing to", e))?;
    let response = match read_frame(&mut stream).await {
        Ok(frame) => frame,
        Err(e) => {
            return Ok(Attempt::Retry(format!(
                "no connect response from {addr}: {e}"
            )));
        }
    };
    // ConnectResponse: protocolVersion i32, timeOut i32, sessionId i64, ...
    let granted_timeout = response
        .get(4..8)
        .map(|b| i32::from_be_bytes(b.try_into().unwrap_or_default()));
    if granted_timeout.is_none_or(|t| t <= 0) {
        // The server answers an unknown or expired session with a zero timeout.
        return Ok(Attempt::Done);
    }
    loop {
        let reply = match read_frame(&mut stream).await {
            Ok(frame) => frame,
            Err(e) => {
                return Ok(Attempt::Retry(format!(
                    "connection closed before the close reply: {e}"
                )));
            }
        };
        // ReplyHeader: xid i32, zxid i64, err i32.
        if reply.len() < 16 || reply[0..4] != CLOSE_XID.to_be_bytes() {
            continue;
        }
        let err = i32::from_be_bytes([reply[12], reply[13], reply[14], reply[15]]);
        return match err {
            0 => Ok(Attempt::Done),
            err => Err(RealError::ExpireSession {
                session: SessionId(id).to_string(),
                reason: format!("the server answered CloseSession with error {err}"),
            }),
        };
    }
}

/// Ends session `session` at the server: its ephemerals are deleted at once, and its client
/// learns `Expired` when it next reaches the server (at once, since attaching takes its
/// connection away). Succeeds also if the session was already gone. `connect_string` may
/// name several servers of one ensemble; each is tried in turn.
pub async fn kill_session(
    connect_string: &str,
    session: SessionId,
    timeout: Duration,
) -> Result<(), RealError> {
    let addrs: Vec<&str> = connect_string
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    if addrs.is_empty() {
        return Err(RealError::ExpireSession {
            session: session.to_string(),
            reason: format!("the connect string {connect_string:?} names no server"),
        });
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let targets = if addrs.len() > 1 {
        let mut others = Vec::new();
        for addr in &addrs {
            if holds_session(addr, session.0).await == Some(false) {
                others.push(*addr);
            }
        }
        // No 4lw answers (e.g. `cons` not whitelisted): fall back to every server.
        if others.is_empty() { addrs } else { others }
    } else {
        addrs
    };
    let mut last = String::from("no attempt finished");
    for addr in targets.iter().cycle() {
        match tokio::time::timeout_at(deadline, attempt(addr, session.0)).await {
            Ok(Ok(Attempt::Done)) => return Ok(()),
            Ok(Ok(Attempt::Retry(why))) => last = why,
            Ok(Err(e)) => return Err(e),
            Err(_) => break,
        }
        if tokio::time::Instant::now() + RETRY_PAUSE >= deadline {
            break;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    Err(RealError::ExpireSession {
        session: session.to_string(),
        reason: format!(
            "the server did not confirm the close within {} ms; last attempt: {last}",
            timeout.as_millis()
        ),
    })
}

/// Forces `client`'s session to expire (see [`kill_session`]) and waits until the client
/// itself reports [`SessionState::Expired`].
pub async fn expire_session(
    connect_string: &str,
    client: &ZkClient,
    timeout: Duration,
) -> Result<(), RealError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut events = client.session_events();
    kill_session(connect_string, client.session_id(), timeout).await?;
    let waited = tokio::time::timeout_at(deadline, async {
        while client.session_state() != SessionState::Expired {
            if events.next().await.is_none() {
                break;
            }
        }
    })
    .await;
    match client.session_state() {
        SessionState::Expired => Ok(()),
        state => Err(RealError::ExpireSession {
            session: client.session_id().to_string(),
            reason: match waited {
                Ok(()) => format!("the client ended in state {state:?}, not Expired"),
                Err(_) => format!(
                    "the server closed the session, but the client still reports {state:?} \
                     after {} ms",
                    timeout.as_millis()
                ),
            },
        }),
    }
}

/// ZooKeeper's op code for a ping, and the xid its pings carry.
const OP_PING: i32 = 11;
const PING_XID: i32 = -2;

/// A connection of the harness's own attached to a client's session, pinging it, so that
/// the server keeps the session and its ephemeral nodes while the client is cut off (see
/// [`keep_session`]). Dropping it drops the connection without closing the session: the
/// server then expires it a session timeout later, unless its client resumes it.
#[derive(Debug)]
pub struct SessionKeeper {
    session: SessionId,
    pinger: tokio::task::JoinHandle<Result<(), String>>,
}

impl SessionKeeper {
    /// Lets the session go (as dropping does) and says whether every ping was answered
    /// until then.
    pub async fn release(mut self) -> Result<(), RealError> {
        if !self.pinger.is_finished() {
            return Ok(()); // the drop aborts it
        }
        match (&mut self.pinger).await {
            Ok(Err(reason)) => Err(RealError::KeepSession {
                session: self.session.to_string(),
                reason,
            }),
            _ => Ok(()),
        }
    }
}

impl Drop for SessionKeeper {
    fn drop(&mut self) {
        self.pinger.abort();
    }
}

/// Attaches a connection of its own to `session` (as [`kill_session`] does, the password
/// recomputed) and pings it every third of the timeout the server grants, so that the
/// server holds the session while its client cannot reach it: a client library that
/// declares the session lost on its own meanwhile does so while the server still holds
/// it. The client must be kept from reconnecting (its proxies refuse the session), or it
/// takes the session back. Fails if the server no longer holds the session, or no server
/// of `connect_string` answers within `timeout`.
pub async fn keep_session(
    connect_string: &str,
    session: SessionId,
    session_timeout_ms: u64,
    timeout: Duration,
) -> Result<SessionKeeper, RealError> {
    let failed = |reason: String| RealError::KeepSession {
        session: session.to_string(),
        reason,
    };
    let addrs: Vec<String> = (connect_string.split(','))
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if addrs.is_empty() {
        return Err(failed(format!(
            "the connect string {connect_string:?} names no server"
        )));
    }
    let timeout_ms = i32::try_from(session_timeout_ms).unwrap_or(i32::MAX);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = String::from("no attempt finished");
    for addr in addrs.iter().cycle() {
        let attached = tokio::time::timeout_at(deadline, attach_to(addr, session.0, timeout_ms));
        match attached.await {
            Ok(Ok(Some((stream, granted_ms)))) => {
                let pinger = tokio::spawn(ping_until_dropped(stream, granted_ms));
                return Ok(SessionKeeper { session, pinger });
            }
            Ok(Ok(None)) => {
                return Err(failed("the server no longer holds the session".into()));
            }
            Ok(Err(why)) => last = why,
            Err(_) => break,
        }
        if tokio::time::Instant::now() + RETRY_PAUSE >= deadline {
            break;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    Err(failed(format!(
        "no server attached the session within {} ms; last attempt: {last}",
        timeout.as_millis()
    )))
}

/// One attach: the stream and the timeout granted, `None` if the server holds no such
/// session, `Err` to try again.
async fn attach_to(
    addr: &str,
    id: i64,
    timeout_ms: i32,
) -> Result<Option<(TcpStream, i32)>, String> {
    let mut stream =
        (TcpStream::connect(addr).await).map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let connect = attach(id, timeout_ms);
    let mut frame = Vec::with_capacity(connect.len() + 4);
    frame.extend_from_slice(&(connect.len() as i32).to_be_bytes());
    frame.extend_from_slice(&connect);
    (stream.write_all(&frame).await).map_err(|e| format!("writing to {addr}: {e}"))?;
    let response = (read_frame(&mut stream).await)
        .map_err(|e| format!("no connect response from {addr}: {e}"))?;
    let granted = response
        .get(4..8)
        .map(|b| i32::from_be_bytes(b.try_into().unwrap_or_default()));
    Ok(granted.filter(|&t| t > 0).map(|t| (stream, t)))
}

/// Pings every third of `granted_ms` and reads each answer; ends with the first failure.
async fn ping_until_dropped(mut stream: TcpStream, granted_ms: i32) -> Result<(), String> {
    let period = Duration::from_millis((granted_ms / 3).max(1) as u64);
    let answer_within = Duration::from_millis(granted_ms as u64);
    let mut ping = Vec::with_capacity(12);
    ping.extend_from_slice(&8i32.to_be_bytes());
    ping.extend_from_slice(&PING_XID.to_be_bytes());
    ping.extend_from_slice(&OP_PING.to_be_bytes());
    loop {
        tokio::time::sleep(period).await;
        (stream.write_all(&ping).await).map_err(|e| format!("sending a ping: {e}"))?;
        let answered = tokio::time::timeout(answer_within, async {
            loop {
                let reply = read_frame(&mut stream).await?;
                // ReplyHeader: xid i32, zxid i64, err i32; a watch event's xid is -1.
                if reply.get(0..4) == Some(&PING_XID.to_be_bytes()[..]) {
                    return Ok::<_, std::io::Error>(());
                }
            }
        });
        match answered.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("the connection broke: {e}")),
            Err(_) => return Err(format!("a ping went unanswered for {granted_ms} ms")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_the_jdk() {
        // new java.util.Random(42).nextInt() == -1170105035, and the next is 234785527.
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_int(), -1_170_105_035);
        assert_eq!(r.next_int(), 234_785_527);
        // new Random(0).nextBytes(new byte[6]) == [96, -76, 32, -69, 56, 81]
        let mut bytes = [0u8; 6];
        JavaRandom::new(0).next_bytes(&mut bytes);
        assert_eq!(bytes.map(|b| b as i8), [96, -76, 32, -69, 56, 81]);
    }

    #[test]
    fn request_frames_are_length_prefixed() {
        let bytes = attach_and_close(0x1234, 30_000);
        let first = i32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize;
        assert_eq!(first, 4 + 8 + 4 + 8 + 4 + PASSWORD_LEN + 1);
        let second = &bytes[4 + first..];
        assert_eq!(second[0..4], 8i32.to_be_bytes());
        assert_eq!(second[8..12], OP_CLOSE_SESSION.to_be_bytes());
    }
}
