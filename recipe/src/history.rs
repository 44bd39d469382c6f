//! The history: what every runner (simulation, exhaustive explorer, real server) records,
//! and what the checker reads. Plain serde data, versioned.

use crate::types::{EventType, SessionId, SessionState, ZkError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Version of the history format. Bump it when a change would make older readers
/// misread a history. Version 3 records a work-queue producer's calls
/// (`ProduceInvoked`, `ProduceFailed`); version 4 an election contender's close
/// (`Closed`); version 5 revocation (`RevokeRequested`, `RevokeObserved`).
pub const HISTORY_FORMAT_VERSION: u32 = 5;

/// Every event of one run, in the order they happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub events: Vec<Event>,
}

/// What a runner knows of a run besides its history, and the checker needs: a real run
/// hands these over (`zklock_real::workload::RealRun::facts`), and the checker's
/// `CheckConfig` is made from them, so no caller copies them field by field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFacts {
    /// Run time at which faults stopped, in ms.
    pub heal_ms: u64,
    /// After the heal, every live waiter must be served within this bound, in ms.
    pub liveness_bound_ms: u64,
    /// Process pauses were among the faults.
    pub pauses_on: bool,
    /// The lock's directory.
    pub lock_path: String,
    /// The lock directory's children once every client was done.
    pub final_lock_children: Vec<String>,
    /// Run time when the run ended, in µs.
    pub run_end_us: u64,
    /// The clients' session timeout, in ms.
    pub session_timeout_ms: u64,
    /// The `Acquired` tokens are the lock nodes' czxids (`CheckConfig::tokens_are_czxids`
    /// in zklock-checker).
    pub tokens_are_czxids: bool,
}

/// One ephemeral node of a real run, as the proxies saw the server's replies: made by
/// client `client`'s session `session` at `created_us`, deleted at `deleted_us` (by any
/// client's delete; `None`: no delete was seen, and the node went with its session or
/// outlived the run). History time, in µs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLife {
    pub path: String,
    pub client: u32,
    pub session: SessionId,
    pub created_us: u64,
    pub deleted_us: Option<u64>,
    /// The last time the server sent the session anything (a reply, a ping's, a
    /// notification): it held the session, and so the node unless deleted, until then.
    pub session_answered_us: u64,
}

/// What a real run saw of its nodes' lives ([`NodeLife`]), and how long a node may
/// outlive the attempt that made it (`leak_bound_ms`), for the checker's
/// `node_outlives_attempt`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeLives {
    pub nodes: Vec<NodeLife>,
    /// How long past its attempt's end a node may stand while its session lives, in ms.
    pub leak_bound_ms: u64,
}

/// One event: when (virtual time in the simulation, monotonic time on a real server),
/// which client and session, and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub time_us: u64,
    pub client: u32,
    pub session: SessionId,
    pub kind: EventKind,
}

/// The ZooKeeper operation of an op event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZkOp {
    Create,
    Delete,
    Exists,
    GetData,
    GetChildren,
    SetData,
    Multi,
    Close,
}

/// How an acquire was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AcquireMode {
    Blocking,
    Try,
    Timeout {
        timeout_ms: u64,
    },
    /// A blocking acquire whose caller drops its future after `after_ms` unless it
    /// finished first, as `tokio::time::timeout` or a lost `select!` branch does.
    Dropped {
        after_ms: u64,
    },
}

impl AcquireMode {
    /// The workload's mix, the same in every runner: a client's `k`th attempt (from 0)
    /// is dropped when `drop_every` is set and `k % drop_every == drop_every - 1` (the
    /// runner picks the delay, given here as `after_ms`); otherwise blocking, try and
    /// timed (`timeout_ms`) in turn.
    pub fn of_attempt(k: u64, drop_every: u32, timeout_ms: u64, after_ms: u64) -> AcquireMode {
        let every = u64::from(drop_every);
        if every > 0 && k % every == every - 1 {
            return AcquireMode::Dropped { after_ms };
        }
        match k % 3 {
            0 => AcquireMode::Blocking,
            1 => AcquireMode::Try,
            _ => AcquireMode::Timeout { timeout_ms },
        }
    }
}

/// Which lock an acquire is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockRole {
    Exclusive,
    Read,
    Write,
}

/// A fault a runner injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FaultKind {
    ConnectionLoss,
    LostCreateResponse,
    ForcedExpiry,
    Partition {
        duration_ms: u64,
    },
    Pause {
        duration_ms: u64,
    },
    Crash,
    DelayedDelivery {
        delay_ms: u64,
    },
    /// The client library declared its session expired on its own, while the server
    /// still held it (see `Faults::local_expiry` in zklock-sim).
    LocalExpiry,
}

#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// A ZooKeeper request was issued. The simulation shares the path with the request
    /// that carries it, so recording one copies no string; it serializes as a plain string.
    OpInvoke {
        op_id: u64,
        op: ZkOp,
        path: Arc<str>,
        /// Whether the request leaves a watch (exists, getData or getChildren with one).
        #[serde(default, skip_serializing_if = "is_false")]
        watch: bool,
    },
    /// It succeeded.
    OpOk {
        op_id: u64,
    },
    /// It failed with a definite error.
    OpFail {
        op_id: u64,
        error: ZkError,
    },
    /// Its fate is unknown to the client (connection loss): applied or not.
    OpUnknown {
        op_id: u64,
    },
    AcquireInvoked {
        role: LockRole,
        mode: AcquireMode,
        /// The lock directory this acquisition is for, in a run of several locks
        /// (`Scenario::locks` in zklock-sim); `None` in a run of one lock, whose path the
        /// run's facts give. A trace written before it existed reads it as `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lock: Option<String>,
    },
    /// The client now believes it holds the lock, with this fencing token and node.
    Acquired {
        token: i64,
        node: String,
    },
    /// The acquire ended without the lock (try found it held, timeout, error).
    AcquireFailed {
        reason: String,
    },
    ReleaseInvoked,
    Released,
    /// The release ended with an error; the node may still exist.
    ReleaseFailed {
        reason: String,
    },
    /// The holder learned it can no longer trust its ownership.
    Lost {
        reason: String,
    },
    Session {
        state: SessionState,
    },
    /// The client read the shared resource.
    ResourceRead {
        value: u64,
    },
    /// The client wrote `value` with `token`. The fenced resource accepted or rejected
    /// it; the unfenced one always accepts, and `unfenced_overwrote` says whether that
    /// write clobbered an update the writer never saw (a lost update).
    ResourceWrite {
        token: i64,
        value: u64,
        fenced_accepted: bool,
        fenced_lost_update: bool,
        unfenced_overwrote: bool,
    },
    Fault {
        fault: FaultKind,
    },
    /// The client finished its workload.
    Done,
    /// A watch notification reached the client (its client library handed it over):
    /// the event's type and the watched path. Histories recorded before watch events were
    /// recorded have none.
    WatchEvent {
        event_type: EventType,
        path: String,
    },
    /// A work-queue producer calls `produce`. The call ends at its `ItemProduced` or
    /// `ProduceFailed` (or the client's crash), and the items it made are those its
    /// creates in the queue directory made in between. Histories recorded before produce
    /// calls were recorded have none.
    ProduceInvoked,
    /// The produce call ended with an error; its creates may have made an item anyway.
    ProduceFailed {
        reason: String,
    },
    /// A work-queue producer added item `item` (its name in the queue directory): its
    /// produce call returned it.
    ItemProduced {
        item: String,
    },
    /// A work-queue consumer holds item `item`'s lock (`token`: the lock node's czxid),
    /// has seen the item still queued, and starts processing it.
    ProcessStart {
        item: String,
        token: i64,
    },
    /// The consumer finished processing `item` and its delete removed the item: the
    /// item is complete. A processing that ends otherwise ends with `Lost`.
    ProcessEnd {
        item: String,
    },
    /// An election's contender closed its latch or cancelled its selector: it must not
    /// lead again until it contends anew (its next `AcquireInvoked`). Histories recorded
    /// before elections were recorded have none.
    Closed,
    /// A revoker asks the holder of `node` (a lock node's full path, as a listing of
    /// the lock directory showed it) to give up its hold, through the recipe's revoke
    /// call; the requests that call sends follow. Histories recorded before revocation
    /// was recorded have none.
    RevokeRequested {
        node: String,
    },
    /// The holder saw a request to give up its hold and gives up: its release follows.
    RevokeObserved,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl EventKind {
    /// A short fixed-width tag for timelines.
    pub fn tag(&self) -> &'static str {
        match self {
            EventKind::OpInvoke { .. } => "op>",
            EventKind::OpOk { .. } => "op<",
            EventKind::OpFail { .. } => "op!",
            EventKind::OpUnknown { .. } => "op?",
            EventKind::AcquireInvoked { .. } => "acq>",
            EventKind::Acquired { .. } => "ACQ",
            EventKind::AcquireFailed { .. } => "acq!",
            EventKind::ReleaseInvoked => "rel>",
            EventKind::Released => "REL",
            EventKind::ReleaseFailed { .. } => "rel!",
            EventKind::Lost { .. } => "LOST",
            EventKind::Session { .. } => "sess",
            EventKind::ResourceRead { .. } => "rd",
            EventKind::ResourceWrite { .. } => "wr",
            EventKind::Fault { .. } => "FAULT",
            EventKind::Done => "done",
            EventKind::WatchEvent { .. } => "watch",
            EventKind::ProduceInvoked => "prod>",
            EventKind::ProduceFailed { .. } => "prod!",
            EventKind::ItemProduced { .. } => "item+",
            EventKind::ProcessStart { .. } => "proc>",
            EventKind::ProcessEnd { .. } => "PROC",
            EventKind::Closed => "close",
            EventKind::RevokeRequested { .. } => "rvk>",
            EventKind::RevokeObserved => "RVK",
        }
    }
}

#[cfg(test)]
mod mix_tests {
    use super::AcquireMode;

    #[test]
    fn the_mix_cycles_blocking_try_timed_and_drops_every_nth() {
        let modes: Vec<_> = (0..8)
            .map(|k| AcquireMode::of_attempt(k, 4, 3000, 7))
            .collect();
        let timed = AcquireMode::Timeout { timeout_ms: 3000 };
        let dropped = AcquireMode::Dropped { after_ms: 7 };
        use AcquireMode::{Blocking, Try};
        assert_eq!(
            modes,
            [Blocking, Try, timed, dropped, Try, timed, Blocking, dropped]
        );
        // Without drops, attempt 3 is blocking again.
        assert_eq!(AcquireMode::of_attempt(3, 0, 3000, 7), Blocking);
    }
}
