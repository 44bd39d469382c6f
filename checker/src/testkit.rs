//! A small builder of handcrafted histories for the property tests.

use zklock_recipe::SessionId;
use zklock_recipe::history::{AcquireMode, Event, EventKind, FaultKind, History, LockRole, ZkOp};
use zklock_recipe::{SessionState, ZkError};

pub const DIR: &str = "/zklock/lock";

/// Builds a history; each event is 100 µs after the previous unless [`Hb::at_ms`] moves
/// time. Client `c` is on session `0x1000 + c`.
#[derive(Debug, Default)]
pub struct Hb {
    events: Vec<Event>,
    now_us: u64,
    next_op: u64,
}

pub fn node(c: u32, seq: i32) -> String {
    format!("{DIR}/_c_{c:x}-0-lock-{seq:010}")
}

impl Hb {
    pub fn new() -> Hb {
        Hb::default()
    }

    pub fn build(&self) -> History {
        History {
            events: self.events.clone(),
        }
    }

    /// Index the next event will have.
    pub fn next(&self) -> usize {
        self.events.len()
    }

    pub fn at_ms(&mut self, ms: u64) -> &mut Hb {
        self.now_us = ms * 1000;
        self
    }

    pub fn ev(&mut self, client: u32, kind: EventKind) -> usize {
        self.now_us += 100;
        self.events.push(Event {
            time_us: self.now_us,
            client,
            session: SessionId(0x1000 + i64::from(client)),
            kind,
        });
        self.events.len() - 1
    }

    /// Issues a request; returns its op id. Reads leave a watch, as a waiting recipe's
    /// do; [`Hb::invoke_plain`] issues one that does not.
    pub fn invoke(&mut self, client: u32, op: ZkOp, path: &str) -> u64 {
        let watch = matches!(op, ZkOp::Exists | ZkOp::GetData | ZkOp::GetChildren);
        self.invoke_with(client, op, path, watch)
    }

    /// Issues a request that leaves no watch; returns its op id.
    pub fn invoke_plain(&mut self, client: u32, op: ZkOp, path: &str) -> u64 {
        self.invoke_with(client, op, path, false)
    }

    fn invoke_with(&mut self, client: u32, op: ZkOp, path: &str, watch: bool) -> u64 {
        self.next_op += 1;
        let op_id = self.next_op;
        self.ev(
            client,
            EventKind::OpInvoke {
                op_id,
                op,
                path: path.into(),
                watch,
            },
        );
        op_id
    }

    pub fn ok(&mut self, client: u32, op_id: u64) -> usize {
        self.ev(client, EventKind::OpOk { op_id })
    }

    /// A request answered ok; returns the index of the invoke.
    pub fn op(&mut self, client: u32, op: ZkOp, path: &str) -> usize {
        let at = self.next();
        let id = self.invoke(client, op, path);
        self.ok(client, id);
        at
    }

    pub fn op_fail(&mut self, client: u32, op: ZkOp, path: &str, error: ZkError) -> usize {
        let id = self.invoke(client, op, path);
        self.ev(client, EventKind::OpFail { op_id: id, error })
    }

    pub fn invoke_acquire(&mut self, client: u32, role: LockRole) -> usize {
        self.ev(
            client,
            EventKind::AcquireInvoked {
                role,
                mode: AcquireMode::Blocking,
                lock: None,
            },
        )
    }

    pub fn acquired(&mut self, client: u32, seq: i32) -> usize {
        self.ev(
            client,
            EventKind::Acquired {
                token: i64::from(seq),
                node: node(client, seq),
            },
        )
    }

    /// AcquireInvoked, create, getChildren, Acquired: an uncontended exclusive acquire.
    pub fn acquire(&mut self, client: u32, seq: i32) -> usize {
        self.invoke_acquire(client, LockRole::Exclusive);
        self.op(
            client,
            ZkOp::Create,
            &format!("{DIR}/_c_{client:x}-0-lock-"),
        );
        self.op(client, ZkOp::GetChildren, DIR);
        self.acquired(client, seq)
    }

    /// ReleaseInvoked, delete of the node, Released; returns the delete's invoke index.
    pub fn release(&mut self, client: u32, seq: i32) -> usize {
        self.ev(client, EventKind::ReleaseInvoked);
        let at = self.op(client, ZkOp::Delete, &node(client, seq));
        self.ev(client, EventKind::Released);
        at
    }

    pub fn write(
        &mut self,
        client: u32,
        token: i64,
        accepted: bool,
        lost: bool,
        unfenced: bool,
    ) -> usize {
        self.ev(
            client,
            EventKind::ResourceWrite {
                token,
                value: 0,
                fenced_accepted: accepted,
                fenced_lost_update: lost,
                unfenced_overwrote: unfenced,
            },
        )
    }

    /// A read of the resource (with the client's hold's token).
    pub fn read(&mut self, client: u32) -> usize {
        self.ev(client, EventKind::ResourceRead { value: 0 })
    }

    pub fn fault(&mut self, target: u32, fault: FaultKind) -> usize {
        self.ev(target, EventKind::Fault { fault })
    }

    pub fn session(&mut self, client: u32, state: SessionState) -> usize {
        self.ev(client, EventKind::Session { state })
    }
}
