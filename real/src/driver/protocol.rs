//! The lock-under-test protocol, version [`PROTOCOL_VERSION`]: JSON lines over a driver
//! process's stdin (requests) and stdout (reports). docs/drivers.md is its reference; this
//! module is its one implementation on zklock's side, and checks every bound it names.

use serde::{Deserialize, Serialize};

/// The protocol version zklock's drivers name in their `hello`. Version 2 added the
/// acquire's `object`; version 3 `reset` and `open`, which let one process serve one
/// session after another ([`super::pool`]).
pub const PROTOCOL_VERSION: u32 = 3;
/// The oldest version zklock still drives: a driver of version 2 serves one session, and
/// its process is never reused.
pub const PROTOCOL_VERSION_MIN: u32 = 2;
/// The longest line either side may send, in bytes (newline excluded).
pub const LINE_BYTES_MAX: usize = 65_536;
/// The longest lock node name a driver may report, in bytes.
pub const NODE_BYTES_MAX: usize = 1_024;
/// The longest text (a reason, an error message, a library's name or version), in bytes.
pub const TEXT_BYTES_MAX: usize = 4_096;

/// A request zklock sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Take the lock: `mode` blocking (until held or cancelled), try (only if free now) or
    /// timed (at most `timeout_ms`), with the library's lock object `object` names.
    Acquire {
        id: u64,
        mode: Mode,
        timeout_ms: u64,
        object: LockObject,
    },
    /// Release the hold taken by acquire `id`.
    Release { id: u64 },
    /// Give up acquire `id` if it is still waiting; it then reports `not_acquired` (or
    /// `acquired`, when the lock came first: zklock then releases it).
    Cancel { id: u64 },
    /// Close the session and exit.
    Close,
    /// Version 3: close the session, end everything it started, forget every request id,
    /// answer `reset`, and wait for `open`. A driver that cannot end what the session
    /// started (a library call stuck) exits instead.
    Reset,
    /// Version 3, after `reset`: open a session as the process's command line would have
    /// (`kind`, `connect`, `lock_path`, `session_timeout_ms`), and answer `hello`.
    Open {
        kind: String,
        connect: String,
        lock_path: String,
        session_timeout_ms: u64,
    },
}

/// An acquire's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Blocking,
    Try,
    Timed,
}

/// Which of the library's lock objects an acquire uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LockObject {
    /// The driver's current one, as the earlier acquires did.
    Same,
    /// A new one, made for this acquire (it becomes the current one): it knows nothing of
    /// what an earlier object left behind.
    Fresh,
}

/// A session state a driver reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverSession {
    Connected,
    Disconnected,
    Expired,
}

/// A report a driver sends.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Report {
    /// First line: the protocol version and what the driver runs.
    Hello {
        protocol: u32,
        library: String,
        version: String,
        lock: String,
        #[serde(default)]
        session_id: i64,
    },
    /// A session change of the driver's client.
    Session {
        state: DriverSession,
        #[serde(default)]
        session_id: i64,
    },
    /// Acquire `id` holds the lock, with a fencing token (the lock node's czxid, or -1
    /// when the node is gone) and the node's name. A driver whose read of the token
    /// fails gives the hold back and answers `Error` instead.
    Acquired { id: u64, token: i64, node: String },
    /// Acquire `id` ended without the lock (held, timeout, cancelled).
    NotAcquired { id: u64, reason: String },
    /// The hold of acquire `id` was released.
    Released { id: u64 },
    /// The hold of acquire `id` can no longer be trusted.
    Lost { id: u64, reason: String },
    /// Request `id` failed (`null`: a request the driver could not read).
    Error { id: Option<u64>, message: String },
    /// Version 3: the answer to `reset`. Nothing of the old session follows it.
    Reset,
}

/// Why a driver's line was refused.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineError {
    /// Longer than [`LINE_BYTES_MAX`].
    TooLong { bytes: usize },
    /// Not a report of this protocol.
    Malformed { reason: String },
    /// A field past its bound.
    OutOfBounds {
        field: &'static str,
        bytes: usize,
        max: usize,
    },
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::TooLong { bytes } => {
                write!(
                    f,
                    "a line of {bytes} bytes, past the protocol's {LINE_BYTES_MAX}"
                )
            }
            LineError::Malformed { reason } => {
                write!(f, "not a protocol {PROTOCOL_VERSION} report: {reason}")
            }
            LineError::OutOfBounds { field, bytes, max } => {
                write!(f, "field {field} of {bytes} bytes, past its {max}")
            }
        }
    }
}

impl std::error::Error for LineError {}

/// Parses one line a driver wrote (without its newline), checking every bound.
pub fn parse_report(line: &[u8]) -> Result<Report, LineError> {
    if line.len() > LINE_BYTES_MAX {
        return Err(LineError::TooLong { bytes: line.len() });
    }
    let report: Report = serde_json::from_slice(line).map_err(|e| LineError::Malformed {
        reason: format!(
            "{e} in {:?}",
            String::from_utf8_lossy(&line[..line.len().min(200)])
        ),
    })?;
    let check = |field: &'static str, text: &str, max: usize| {
        if text.len() > max {
            Err(LineError::OutOfBounds {
                field,
                bytes: text.len(),
                max,
            })
        } else {
            Ok(())
        }
    };
    match &report {
        Report::Hello {
            library,
            version,
            lock,
            ..
        } => {
            check("library", library, TEXT_BYTES_MAX)?;
            check("version", version, TEXT_BYTES_MAX)?;
            check("lock", lock, TEXT_BYTES_MAX)?;
        }
        Report::Acquired { node, .. } => check("node", node, NODE_BYTES_MAX)?,
        Report::NotAcquired { reason, .. } | Report::Lost { reason, .. } => {
            check("reason", reason, TEXT_BYTES_MAX)?
        }
        Report::Error { message, .. } => check("message", message, TEXT_BYTES_MAX)?,
        Report::Session { .. } | Report::Released { .. } | Report::Reset => {}
    }
    Ok(report)
}

/// One request as the line zklock writes (newline included).
pub fn request_line(request: &Request) -> String {
    let mut line = serde_json::to_string(request).expect("requests always serialize");
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_documented_lines() {
        let acquire = Request::Acquire {
            id: 3,
            mode: Mode::Timed,
            timeout_ms: 250,
            object: LockObject::Same,
        };
        assert_eq!(
            request_line(&acquire),
            "{\"op\":\"acquire\",\"id\":3,\"mode\":\"timed\",\"timeout_ms\":250,\"object\":\"same\"}\n"
        );
        let fresh = Request::Acquire {
            id: 4,
            mode: Mode::Blocking,
            timeout_ms: 0,
            object: LockObject::Fresh,
        };
        assert_eq!(
            request_line(&fresh),
            "{\"op\":\"acquire\",\"id\":4,\"mode\":\"blocking\",\"timeout_ms\":0,\"object\":\"fresh\"}\n"
        );
        assert_eq!(
            request_line(&Request::Release { id: 3 }),
            "{\"op\":\"release\",\"id\":3}\n"
        );
        assert_eq!(
            request_line(&Request::Cancel { id: 4 }),
            "{\"op\":\"cancel\",\"id\":4}\n"
        );
        assert_eq!(request_line(&Request::Close), "{\"op\":\"close\"}\n");
        assert_eq!(request_line(&Request::Reset), "{\"op\":\"reset\"}\n");
        let open = Request::Open {
            kind: "mutex".into(),
            connect: "127.0.0.1:2181".into(),
            lock_path: "/zklock/lock".into(),
            session_timeout_ms: 2000,
        };
        assert_eq!(
            request_line(&open),
            "{\"op\":\"open\",\"kind\":\"mutex\",\"connect\":\"127.0.0.1:2181\",\"lock_path\":\"/zklock/lock\",\"session_timeout_ms\":2000}\n"
        );
        assert_eq!(parse_report(br#"{"event":"reset"}"#), Ok(Report::Reset));
    }

    #[test]
    fn reports_parse_and_a_bad_line_is_an_error_not_a_panic() {
        let r =
            parse_report(br#"{"event":"acquired","id":7,"token":42,"node":"x-lock-0000000001"}"#);
        assert_eq!(
            r,
            Ok(Report::Acquired {
                id: 7,
                token: 42,
                node: "x-lock-0000000001".into()
            })
        );
        let r = parse_report(br#"{"event":"session","state":"expired","session_id":5}"#);
        assert_eq!(
            r,
            Ok(Report::Session {
                state: DriverSession::Expired,
                session_id: 5
            })
        );
        for bad in [
            &b""[..],
            b"not json",
            b"{\"event\":\"acquired\"}",
            b"{\"event\":\"meteor\",\"id\":1}",
            b"{\"event\":\"released\",\"id\":-1}",
            b"{\"event\":\"released\",\"id\":1,\"extra\":2}",
            b"\xff\xfe",
        ] {
            assert!(
                matches!(parse_report(bad), Err(LineError::Malformed { .. })),
                "{bad:?}"
            );
        }
        let long = vec![b' '; LINE_BYTES_MAX + 1];
        assert_eq!(
            parse_report(&long),
            Err(LineError::TooLong {
                bytes: LINE_BYTES_MAX + 1
            })
        );
        let node = "n".repeat(NODE_BYTES_MAX + 1);
        let line = format!(r#"{{"event":"acquired","id":1,"token":1,"node":"{node}"}}"#);
        assert!(matches!(
            parse_report(line.as_bytes()),
            Err(LineError::OutOfBounds { field: "node", .. })
        ));
    }
}
