//! The aimed part of a run's fault plan, as plain data: which request of which client is
//! struck, and how. The proxy ([`crate::proxy`]) matches it against requests, the
//! workload reads it to arm the proxies and strike the process, and the fault-point search
//! builds it; none of them depends on the others for it.
//!
//! An [`AimedFault`] names requests by operation and path prefix, skips the first
//! [`skip`](AimedFault::skip) of them, and strikes the next one, the next N, or every
//! matching request for a window ([`Repeat`]). [`path_class`] turns a request's path
//! into the prefix that names it across runs (sequence numbers and GUIDs differ per run).

use std::fmt;
use std::time::Duration;

/// ZooKeeper's op codes, for [`AimedFault::ops`].
pub mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const GET_CHILDREN: i32 = 8;
    pub const GET_CHILDREN2: i32 = 12;
    pub const CREATE2: i32 = 15;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const CREATE_TTL: i32 = 21;

    /// ZooKeeper's create op codes: create, create2, createContainer, createTTL.
    pub const CREATE_OPS: [i32; 4] = [CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL];

    /// The names an aim can take, in the order the search tries them.
    pub const NAMES: [&str; 6] = [
        "create",
        "delete",
        "exists",
        "get-data",
        "set-data",
        "get-children",
    ];

    /// The op codes of a name: create (every kind), delete, exists, get-data, set-data,
    /// get-children (both kinds).
    pub fn by_name(name: &str) -> Option<&'static [i32]> {
        Some(match name {
            "create" => &CREATE_OPS,
            "delete" => &[DELETE],
            "exists" => &[EXISTS],
            "get-data" => &[GET_DATA],
            "set-data" => &[SET_DATA],
            "get-children" => &[GET_CHILDREN, GET_CHILDREN2],
            _ => return None,
        })
    }

    /// The name of an op code an aim can match; `None` for the rest (pings, multi, ...).
    pub fn name_of(code: i32) -> Option<&'static str> {
        NAMES
            .into_iter()
            .find(|n| by_name(n).is_some_and(|codes| codes.contains(&code)))
    }
}

/// What an aimed fault does to the request it catches. Non-exhaustive: the search gains
/// actions as faults are found that it cannot say yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum AimedAction {
    /// The request is dropped before the server sees it, and the connection cut.
    DropRequest,
    /// The request reaches the server; its reply is withheld and the connection cut.
    WithholdReply,
    /// The request is dropped before the server sees it, the connection cut, and the
    /// session that sent it refused (its reconnects closed) until
    /// [`crate::proxy::Proxy::lift_refusal`]: whoever aimed it expires the session at the
    /// server meanwhile (see `crate::aimed`), so its client learns Expired when it
    /// reconnects.
    Expire,
    /// The request is held, and its process paused for `pause_ms` (its task frozen, a
    /// driver SIGSTOPped, its traffic held both ways); then the request goes on. Longer
    /// than the session timeout, the server expires the session meanwhile.
    Pause { pause_ms: u64 },
    /// The request is dropped, the connection cut, and the process crashed there: its
    /// session is kept from the server, which expires it, and a new process starts later.
    Crash,
    /// The request is held for [`GIVE_UP_HOLD_MS`] while the client's caller gives up the
    /// acquire under way (drops it: a driver's library is told to cancel, as a caller's
    /// own timeout or interrupt does); then the request goes on, so that the server
    /// applies what a caller already gave up. A request sent outside an acquire (a
    /// release's) is only held.
    GiveUp,
    /// The request is dropped and every server of the run killed there (SIGKILL), then
    /// restarted on its data after `down_ms`: an outage of the whole service. The
    /// restarted servers restore the sessions with fresh timeouts, so a library that
    /// declared its session lost during the outage (Curator once SUSPENDED outlasts the
    /// session timeout) may find the server still holding it, and its nodes. Needs
    /// servers the harness started.
    Outage { down_ms: u64 },
    /// The request is dropped, the connection cut, and the session that sent it refused
    /// for `isolated_ms`, while the server is told the session lives: a connection of the
    /// harness's own attaches to it and pings it meanwhile. A library that declares its
    /// session lost on its own (Curator once SUSPENDED outlasts the session timeout)
    /// does so while the server still holds the session and its ephemeral nodes; they
    /// stay up to a session timeout after the isolation ends, unless the client resumes
    /// the session. The client-declared expiry of the simulation's `local_expiry`, on a
    /// real server.
    Isolate { isolated_ms: u64 },
    /// The request is dropped and the connection cut, and the client's next `cuts`
    /// connections through that proxy are each cut as soon as the server's handshake
    /// reply reached it: a burst of reconnects, each a Connected the client hears and
    /// loses at once, its session live throughout. A library's reconnect handling runs
    /// again before the last run of it finished.
    Burst { cuts: u32 },
}

/// The cuts of a [`AimedAction::Burst`] by default.
pub const BURST_CUTS_DEFAULT: u32 = 4;
/// The most cuts a burst takes.
pub const BURST_CUTS_MAX: u32 = 100;

/// How long an [`AimedAction::GiveUp`] holds the request it caught: time for the give-up
/// to reach the library (a message to a driver, a thread's interrupt) while the request
/// is still in flight, on a loaded machine too.
pub const GIVE_UP_HOLD_MS: u64 = 1_000;

impl AimedAction {
    /// The action's name in `--aim` (a pause's duration apart).
    pub fn name(self) -> &'static str {
        match self {
            AimedAction::DropRequest => "drop-request",
            AimedAction::WithholdReply => "withhold-reply",
            AimedAction::Expire => "expire",
            AimedAction::Pause { .. } => "pause",
            AimedAction::Crash => "crash",
            AimedAction::GiveUp => "give-up",
            AimedAction::Outage { .. } => "outage",
            AimedAction::Isolate { .. } => "isolate",
            AimedAction::Burst { .. } => "burst",
        }
    }

    /// Whether the action ends the struck client's session (the server expires it):
    /// an expiry, a pause (longer than the session timeout, as a search's are), a crash;
    /// or may make its library end it (an outage or an isolation longer than the session
    /// timeout).
    pub fn ends_sessions(self) -> bool {
        matches!(
            self,
            AimedAction::Expire
                | AimedAction::Pause { .. }
                | AimedAction::Crash
                | AimedAction::Outage { .. }
                | AimedAction::Isolate { .. }
        )
    }

    /// How long the action lasts past its strike: a pause's, a give-up's hold, an
    /// outage's time down (its restart comes on top), an isolation's.
    pub fn lasts_ms(self) -> u64 {
        match self {
            AimedAction::Pause { pause_ms } => pause_ms,
            AimedAction::GiveUp => GIVE_UP_HOLD_MS,
            AimedAction::Outage { down_ms } => down_ms,
            AimedAction::Isolate { isolated_ms } => isolated_ms,
            _ => 0,
        }
    }
}

/// How many matching requests an aimed fault strikes, from the first it strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Repeat {
    /// The first only.
    #[default]
    Once,
    /// The next N (N ≥ 1).
    Next(u32),
    /// Every matching request for this many ms from the first strike.
    WindowMs(u64),
}

/// A fault aimed at requests of `ops` (op codes, see [`op`]) whose path starts with
/// `under`, on any connection of a client's proxies: the first `skip` pass, then the
/// fault strikes as `repeat` says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AimedFault {
    pub ops: Vec<i32>,
    pub under: String,
    pub action: AimedAction,
    /// Matching requests let through before the first strike: 0 strikes the first.
    pub skip: u32,
    pub repeat: Repeat,
}

impl AimedFault {
    /// A fault striking the next request of `ops` under `under`, once.
    pub fn new(ops: &[i32], under: impl Into<String>, action: AimedAction) -> AimedFault {
        AimedFault {
            ops: ops.to_vec(),
            under: under.into(),
            action,
            skip: 0,
            repeat: Repeat::Once,
        }
    }

    /// Whether a request of `op` on `path` is one this fault counts.
    pub fn matches(&self, op: i32, path: &str) -> bool {
        self.ops.contains(&op) && path.starts_with(self.under.as_str())
    }

    /// How long a window it strikes in, if it repeats for a window.
    pub fn window(&self) -> Option<Duration> {
        match self.repeat {
            Repeat::WindowMs(ms) => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }
}

/// A request a client sent, as its proxy saw it (see
/// [`crate::proxy::Proxy::requests_seen`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenRequest {
    pub op: i32,
    pub path: String,
}

/// The prefix that names `path` across runs: its directory with a trailing `/` when its
/// last component carries what differs per run (a sequence number of 10 digits, a GUID),
/// the path itself otherwise.
///
/// ```
/// use zklock_real::plan::path_class;
/// assert_eq!(path_class("/zklock/lock/lock-0000000003"), "/zklock/lock/");
/// assert_eq!(path_class("/zklock/lock/_c_1f0e2a3b-4c5d-6e7f-8091-a2b3c4d5e6f7-lock-"), "/zklock/lock/");
/// assert_eq!(path_class("/zklock/lock"), "/zklock/lock");
/// assert_eq!(path_class("/zklock/lock/leases"), "/zklock/lock/leases");
/// ```
pub fn path_class(path: &str) -> String {
    let Some(slash) = path.rfind('/') else {
        return path.to_owned();
    };
    let last = &path[slash + 1..];
    if varies_per_run(last) {
        path[..=slash].to_owned()
    } else {
        path.to_owned()
    }
}

/// A run of 10 digits (a sequence suffix) or of 8 hex digits and a dash (a GUID's first
/// group): what a node's name gets that another run's would not.
fn varies_per_run(name: &str) -> bool {
    let bytes = name.as_bytes();
    let run = |pred: fn(&u8) -> bool, len: usize| {
        bytes.split(|b| !pred(b)).any(|chunk| chunk.len() >= len)
    };
    run(u8::is_ascii_digit, SEQUENCE_DIGITS)
        || (run(u8::is_ascii_hexdigit, GUID_GROUP_HEX) && name.contains('-'))
        || run(u8::is_ascii_hexdigit, GUID_HEX)
}

/// Digits of a sequential node's suffix.
const SEQUENCE_DIGITS: usize = 10;
/// Hex digits of a GUID's first group.
const GUID_GROUP_HEX: usize = 8;
/// Hex digits of a GUID written without dashes (Kazoo's `uuid4().hex`).
const GUID_HEX: usize = 32;

impl fmt::Display for AimedFault {
    /// `ACTION:OP:PATH[:NTH[:REPEAT]]`, as `--aim` takes it after the client.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = op::NAMES
            .into_iter()
            .find(|n| op::by_name(n) == Some(self.ops.as_slice()))
            .unwrap_or("?");
        let action = match self.action {
            AimedAction::Pause { pause_ms } => format!("pause-{pause_ms}ms"),
            AimedAction::Outage { down_ms } => format!("outage-{down_ms}ms"),
            AimedAction::Isolate { isolated_ms } => format!("isolate-{isolated_ms}ms"),
            AimedAction::Burst { cuts } => format!("burst-{cuts}"),
            other => other.name().to_owned(),
        };
        write!(f, "{action}:{op}:{}", self.under)?;
        match self.repeat {
            Repeat::Once if self.skip == 0 => Ok(()),
            Repeat::Once => write!(f, ":{}", self.skip + 1),
            Repeat::Next(n) => write!(f, ":{}:{n}", self.skip + 1),
            Repeat::WindowMs(ms) => write!(f, ":{}:{ms}ms", self.skip + 1),
        }
    }
}
