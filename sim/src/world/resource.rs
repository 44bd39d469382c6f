//! The shared resource a workload's critical section reads and writes, modelled twice:
//! fenced (it rejects a write whose token is lower than the highest it has seen) and
//! unfenced.
//!
//! A critical section reads both values with its fencing token, then writes value + 1 with
//! it. A write that finds the value changed since its read clobbers an update it never saw:
//! a lost update. The fenced resource learns a token from reads too, as a storage that
//! checks tokens does on every request: otherwise a stale holder's write landing between a
//! new holder's read and write would be accepted, and the new holder's write would then
//! lose it.

use super::delivery::{Delivered, ResourceReply, SlotId};
use super::{ClientId, World};
use zklock_recipe::history::EventKind;

#[derive(Clone, Copy, Debug)]
pub(crate) enum ResourceOp {
    Read {
        token: i64,
        /// Which lock's resource (`Scenario::locks`): each lock guards its own.
        lock: u32,
    },
    Write {
        token: i64,
        read_fenced: u64,
        read_unfenced: u64,
        lock: u32,
    },
}

impl ResourceOp {
    fn lock(&self) -> u32 {
        match *self {
            ResourceOp::Read { lock, .. } | ResourceOp::Write { lock, .. } => lock,
        }
    }
}

#[derive(Debug, Hash)]
pub(crate) struct ResourceState {
    fenced: u64,
    unfenced: u64,
    max_token: i64,
}

impl Default for ResourceState {
    fn default() -> Self {
        ResourceState {
            fenced: 0,
            unfenced: 0,
            max_token: i64::MIN,
        }
    }
}

impl World {
    pub(crate) fn resource_op(&mut self, c: ClientId, op: ResourceOp, reply: SlotId) {
        let r = match op.lock() {
            0 => &mut self.resource,
            i => {
                let i = i as usize - 1;
                if self.more_resources.len() <= i {
                    self.more_resources
                        .resize_with(i + 1, ResourceState::default);
                }
                &mut self.more_resources[i]
            }
        };
        let out = match op {
            ResourceOp::Read { token, .. } => {
                r.max_token = r.max_token.max(token);
                let v = ResourceReply {
                    fenced: r.fenced,
                    unfenced: r.unfenced,
                    accepted: true,
                };
                self.record(c, EventKind::ResourceRead { value: v.fenced });
                v
            }
            ResourceOp::Write {
                token,
                read_fenced,
                read_unfenced,
                ..
            } => {
                let unfenced_overwrote = r.unfenced != read_unfenced;
                r.unfenced = read_unfenced + 1;
                let accepted = token >= r.max_token;
                let mut fenced_lost_update = false;
                if accepted {
                    fenced_lost_update = r.fenced != read_fenced;
                    r.fenced = read_fenced + 1;
                    r.max_token = token;
                }
                let v = ResourceReply {
                    fenced: r.fenced,
                    unfenced: r.unfenced,
                    accepted,
                };
                self.record(
                    c,
                    EventKind::ResourceWrite {
                        token,
                        value: read_fenced + 1,
                        fenced_accepted: accepted,
                        fenced_lost_update,
                        unfenced_overwrote,
                    },
                );
                v
            }
        };
        self.observe(c, super::digest::Seen::Resource(&out));
        self.slots.fill(reply, Delivered::Resource(out));
    }
}
