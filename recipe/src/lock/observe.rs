//! Watching our own node and the session: the source of the lost and revoke signals.
//!
//! The recipe has no background task, so the observer is driven by whoever awaits the
//! guard's `lost()` / `revocation()`, which set the watch on our node when first awaited.
//! (While waiting for the lock, the acquire loop watches the session itself.)

use super::error::LostReason;
use crate::{EventType, SessionEvents, SessionState, Stat, Watch, ZkError};
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

/// Data another client sets on a holder's node to ask it to release, as Curator's
/// `Revoker` does.
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

#[derive(Debug)]
pub(crate) struct Observer {
    events: SessionEvents,
    /// Data watch on our node (NodeDeleted, NodeDataChanged); `None` once fired.
    watch: Option<Watch>,
    /// No watch yet, or it fired with a data change: read the data and (re-)arm.
    pub(crate) reread: bool,
    pub(crate) lost: Option<LostReason>,
    pub(crate) revoke: bool,
    /// Whether Disconnected means lost (the guard's default policy; the guard sets it).
    pub(crate) counts_disconnect: bool,
}

enum Next {
    State(SessionState),
    Ended,
    Nothing,
}

impl Observer {
    pub(crate) fn new(events: SessionEvents) -> Observer {
        Observer {
            events,
            watch: None,
            reread: true,
            lost: None,
            revoke: false,
            counts_disconnect: false,
        }
    }

    fn next_event(&mut self, cx: Option<&mut Context<'_>>) -> Next {
        match cx {
            Some(cx) => match pin!(self.events.next()).poll(cx) {
                Poll::Ready(Some(s)) => Next::State(s),
                Poll::Ready(None) => Next::Ended,
                Poll::Pending => Next::Nothing,
            },
            // try_next registers no waker, so a task awaiting elsewhere keeps its wakeup.
            None => self.events.try_next().map_or(Next::Nothing, Next::State),
        }
    }

    /// Takes in queued session events and a fired watch. With `cx`, also registers for
    /// what comes next. Returns whether anything changed.
    pub(crate) fn absorb(&mut self, mut cx: Option<&mut Context<'_>>) -> bool {
        let mut changed = false;
        while self.lost.is_none() {
            let lost = match self.next_event(cx.as_deref_mut()) {
                Next::State(SessionState::Disconnected) if self.counts_disconnect => {
                    LostReason::Disconnected
                }
                Next::State(SessionState::Expired) => LostReason::Expired,
                Next::State(SessionState::Closed) | Next::Ended => LostReason::SessionClosed,
                Next::State(_) => continue,
                Next::Nothing => break,
            };
            self.lost = Some(lost);
            changed = true;
        }
        if self.lost.is_some() {
            return changed;
        }
        if let Some(w) = self.watch.as_mut() {
            let fired = match cx {
                Some(cx) => match Pin::new(w).poll(cx) {
                    Poll::Ready(r) => Some(r),
                    Poll::Pending => None,
                },
                None => w.try_take(),
            };
            if let Some(r) = fired {
                self.watch = None;
                changed = true;
                match r {
                    Ok(ev) if ev.event_type == EventType::NodeDeleted => {
                        self.lost = Some(LostReason::NodeDeleted);
                    }
                    Ok(_) => self.reread = true,
                    Err(ZkError::SessionExpired) => self.lost = Some(LostReason::Expired),
                    Err(_) => self.lost = Some(LostReason::SessionClosed),
                }
            }
        }
        changed
    }

    /// Takes in the outcome of `get_data_watch` on our node. Returns true when it should
    /// be tried again later (connection loss or another transient error).
    pub(crate) fn apply_read(&mut self, read: Result<(Vec<u8>, Stat, Watch), ZkError>) -> bool {
        match read {
            Ok((data, _, watch)) => {
                self.revoke |= data == REVOKE_MESSAGE;
                self.watch = Some(watch);
                self.reread = false;
                false
            }
            Err(ZkError::NoNode) => {
                self.lost.get_or_insert(LostReason::NodeDeleted);
                self.reread = false;
                false
            }
            Err(ZkError::SessionExpired) => {
                self.lost.get_or_insert(LostReason::Expired);
                false
            }
            Err(ZkError::SessionClosed) => {
                self.lost.get_or_insert(LostReason::SessionClosed);
                false
            }
            Err(_) => true,
        }
    }
}
