//! The human-readable timeline: a legend, then one line per event with the holder set.

use crate::holds::BeliefTracker;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use zklock_recipe::history::{AcquireMode, EventKind, FaultKind, History, LockRole, ZkOp};

pub mod html;
#[cfg(test)]
mod tests;

pub use html::{render_history_html, render_timeline_html};

/// What the columns and tags mean; printed before the events.
pub const LEGEND: &str = "\
legend:
  time              virtual time since the run began (monotonic on a real server), in ms
  cN  s0x..         the client and its ZooKeeper session
  op> op< op! op?   ZooKeeper request issued (\", watch\": it leaves a watch) / ok / failed / outcome unknown
  acq> ACQ acq!     acquire invoked / acquired (fencing token, lock node) / acquire failed
  rel> REL          release invoked / released
  LOST              the holder learned it can no longer trust its ownership
  sess              session state change
  rd wr             shared resource read / write (fenced: accepted or REJECTED by token)
  FAULT             a fault the runner injected; the client column is its target
  watch             a watch notification reached the client: its type and path
  done              the client finished its workload
  holders {..}      clients believing they hold after the event: cN exclusive, wN writer, rN reader
  <- property: ...  an event the violation report names, and its role in the proof
";

/// Renders the whole history: [`LEGEND`], then one line per event. Deterministic.
pub fn render_timeline(history: &History) -> String {
    render_marked_timeline(history, &BTreeMap::new())
}

/// As [`render_timeline`], with what `marks` says of an event (by index: a violation
/// report's roles, see [`SavedReport::marks`](crate::trace::SavedReport::marks)) at the
/// end of its line, after `<-`.
pub fn render_marked_timeline(history: &History, marks: &BTreeMap<usize, Vec<String>>) -> String {
    let describer = Describer::new(history);
    let mut tracker = BeliefTracker::default();
    let mut out = String::from(LEGEND);
    out.push('\n');
    for (i, event) in history.events.iter().enumerate() {
        tracker.observe(i, event);
        let _ = write!(
            out,
            "{}  holders {}",
            describer.line(i),
            tracker.holder_set()
        );
        if let Some(m) = marks.get(&i) {
            let _ = write!(out, "   <- {}", m.join("; "));
        }
        out.push('\n');
    }
    out
}

/// Formats microseconds as milliseconds with three decimals, without floating point.
pub fn format_ms(time_us: u64) -> String {
    format!("{}.{:03}", time_us / 1000, time_us % 1000)
}

/// Describes events of one history; knows each op id's request so that replies can say
/// what they answer.
#[derive(Debug)]
pub struct Describer<'a> {
    history: &'a History,
    /// Each (client, op id)'s request, the last one where an id repeats; `None` when
    /// looked up in the history on demand instead (see [`Describer::sparse`]).
    ops: Option<Requests<'a>>,
}

/// Requests by (client, op id).
type Requests<'a> = BTreeMap<(u32, u64), (ZkOp, &'a str)>;

impl<'a> Describer<'a> {
    /// A describer of every event: requests are indexed once, up front.
    pub fn new(history: &'a History) -> Describer<'a> {
        let mut ops = BTreeMap::new();
        for e in &history.events {
            if let EventKind::OpInvoke {
                op_id, op, path, ..
            } = &e.kind
            {
                ops.insert((e.client, *op_id), (*op, &**path));
            }
        }
        Describer {
            history,
            ops: Some(ops),
        }
    }

    /// A describer of a few events (a violation's): each reply's request is searched
    /// for when described, instead of indexing every request of the history first.
    pub fn sparse(history: &'a History) -> Describer<'a> {
        Describer { history, ops: None }
    }

    /// The request of `client` with `op_id`: the last one, as [`Describer::new`] indexes.
    fn request(&self, client: u32, op_id: u64) -> Option<(ZkOp, &'a str)> {
        match &self.ops {
            Some(ops) => ops.get(&(client, op_id)).copied(),
            None => self
                .history
                .events
                .iter()
                .rev()
                .find_map(|e| match &e.kind {
                    EventKind::OpInvoke {
                        op_id: id,
                        op,
                        path,
                        ..
                    } if e.client == client && *id == op_id => Some((*op, &**path)),
                    _ => None,
                }),
        }
    }

    /// `  12.300 ms  c1    s0x1002     ACQ    acquired token 17 (...)`, padded so that
    /// whatever follows lines up. Panics if `index` is out of range (callers index the
    /// same history).
    pub fn line(&self, index: usize) -> String {
        let e = &self.history.events[index];
        format!(
            "{:>10} ms  {:<4} {:<10} {:<5}  {:<64}",
            format_ms(e.time_us),
            format!("c{}", e.client),
            format!("s{}", e.session),
            e.kind.tag(),
            self.describe(index)
        )
    }

    /// A human description of event `index`.
    pub fn describe(&self, index: usize) -> String {
        let e = &self.history.events[index];
        let op = |op_id: &u64| match self.request(e.client, *op_id) {
            Some((op, path)) => format!("#{op_id} {} {path}", op_name(op)),
            None => format!("#{op_id}"),
        };
        match &e.kind {
            EventKind::OpInvoke {
                op_id, watch: true, ..
            } => format!("{}, watch", op(op_id)),
            EventKind::OpInvoke { op_id, .. } => op(op_id),
            EventKind::OpOk { op_id } => format!("ok: {}", op(op_id)),
            EventKind::OpFail { op_id, error } => format!("failed ({error}): {}", op(op_id)),
            EventKind::OpUnknown { op_id } => {
                format!("outcome unknown (applied or not): {}", op(op_id))
            }
            EventKind::AcquireInvoked {
                role,
                mode,
                lock: None,
            } => format!("acquire {}, {}", role_name(*role), mode_name(*mode)),
            EventKind::AcquireInvoked {
                role,
                mode,
                lock: Some(lock),
            } => format!(
                "acquire {}, {} of {lock}",
                role_name(*role),
                mode_name(*mode)
            ),
            EventKind::Acquired { token, node } => format!("acquired token {token} ({node})"),
            EventKind::AcquireFailed { reason } => format!("acquire failed: {reason}"),
            EventKind::ReleaseInvoked => "release invoked".into(),
            EventKind::Released => "released".into(),
            EventKind::Lost { reason } => format!("lost the lock: {reason}"),
            EventKind::Session { state } => format!("session {state:?}"),
            EventKind::ResourceRead { value } => format!("read resource = {value}"),
            EventKind::ResourceWrite {
                token,
                value,
                fenced_accepted,
                fenced_lost_update,
                unfenced_overwrote,
            } => {
                let mut s = format!(
                    "write {value} with token {token}: fenced {}",
                    if *fenced_accepted {
                        "accepted"
                    } else {
                        "REJECTED"
                    }
                );
                if *fenced_lost_update {
                    s.push_str(", fenced LOST UPDATE");
                }
                if *unfenced_overwrote {
                    s.push_str(", unfenced lost an update");
                }
                s
            }
            EventKind::Fault { fault } => format!("fault: {}", fault_description(*fault)),
            EventKind::Done => "workload done".into(),
            EventKind::WatchEvent { event_type, path } => {
                format!("watch event {event_type:?} {path}")
            }
            EventKind::ProduceInvoked => "produce called".into(),
            EventKind::ProduceFailed { reason } => format!("produce failed: {reason}"),
            EventKind::ItemProduced { item } => format!("produced item {item}"),
            EventKind::ProcessStart { item, token } => {
                format!("processing item {item} (its lock's token {token})")
            }
            EventKind::ProcessEnd { item } => format!("completed item {item}"),
            EventKind::Closed => "closed its election (leads no more)".into(),
            EventKind::RevokeRequested { node } => format!("asks the holder of {node} to give up"),
            EventKind::RevokeObserved => "saw a revocation request: gives up its hold".into(),
            // The vocabulary may grow; an unknown kind still gets a line.
            other => format!("{other:?}"),
        }
    }
}

pub(crate) fn op_name(op: ZkOp) -> &'static str {
    match op {
        ZkOp::Create => "create",
        ZkOp::Delete => "delete",
        ZkOp::Exists => "exists",
        ZkOp::GetData => "getData",
        ZkOp::GetChildren => "getChildren",
        ZkOp::SetData => "setData",
        ZkOp::Multi => "multi",
        ZkOp::Close => "close",
    }
}

fn role_name(role: LockRole) -> &'static str {
    match role {
        LockRole::Exclusive => "exclusive",
        LockRole::Read => "read",
        LockRole::Write => "write",
    }
}

fn mode_name(mode: AcquireMode) -> String {
    match mode {
        AcquireMode::Blocking => "blocking".into(),
        AcquireMode::Try => "try".into(),
        AcquireMode::Timeout { timeout_ms } => format!("timeout {timeout_ms} ms"),
        AcquireMode::Dropped { after_ms } => format!("dropped after {after_ms} ms"),
    }
}

/// A stable snake_case name per fault kind, durations left out (for counters).
pub fn fault_name(fault: FaultKind) -> &'static str {
    match fault {
        FaultKind::ConnectionLoss => "connection_loss",
        FaultKind::LostCreateResponse => "lost_create_response",
        FaultKind::ForcedExpiry => "forced_expiry",
        FaultKind::Partition { .. } => "partition",
        FaultKind::Pause { .. } => "pause",
        FaultKind::Crash => "crash",
        FaultKind::DelayedDelivery { .. } => "delayed_delivery",
        FaultKind::LocalExpiry => "local_expiry",
    }
}

fn fault_description(fault: FaultKind) -> String {
    match fault {
        FaultKind::ConnectionLoss => "connection loss".into(),
        FaultKind::LostCreateResponse => "lost create response".into(),
        FaultKind::ForcedExpiry => "forced session expiry".into(),
        FaultKind::Partition { duration_ms } => format!("partition for {duration_ms} ms"),
        FaultKind::Pause { duration_ms } => format!("process pause for {duration_ms} ms"),
        FaultKind::Crash => "crash".into(),
        FaultKind::DelayedDelivery { delay_ms } => format!("delivery delayed {delay_ms} ms"),
        FaultKind::LocalExpiry => "session expiry declared by the client library".into(),
    }
}
