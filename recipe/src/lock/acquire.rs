//! The acquire loop, after ZooKeeper's lock recipe as Curator's `LockInternals` runs it:
//!
//! 1. create our ephemeral-sequential node (with guid recovery, see [`create_contender`]),
//!    with the first listing of the children sent right behind it (one round trip);
//! 2. order contenders by sequence number (listing again, without a watch, when needed);
//! 3. if nobody blocks us ([`blocker`]), hold;
//! 4. else set a data watch on the blocker (getData, see [`watch_node`]). If it is already
//!    gone, go to 2 at once. Otherwise wait for its watch to fire, then go to 2. Only one
//!    node is watched, so a release wakes one waiter (no herd).
//!
//! We list again after the blocker's deletion even when it was the only contender ahead
//! (sequence numbers only grow, so nobody can have got ahead of us). If its session was
//! expired by the server, that listing's round trip is what gives the old holder time to
//! hear of the expiry before we hold. Holding at once was tried: the checker found two
//! believers right after a forced expiry (checker/tests/deaf_holder_canary.rs, seed 2).
//!
//! These are Curator's requests, no more: create, listing, the blocker's watch, listing
//! again, delete. Waiting ends early if the session expires or closes. Our own node gets
//! no watch while we wait (its deletion by someone else is seen at the next listing); the
//! guard sets one when its lost or revoke signal is first awaited, so a holder that never
//! asks spends no request on it, and one that asks learns of a deletion at any time since
//! the grant (the read finds no node).

use super::LockOptions;
use super::create::{ContenderSpec, OwnNode, create_listed_at};
use super::error::LockError;
use super::guard::LockGuard;
use super::naming::{LockNode, NodeKind, contender_kind, contenders};
use super::observe::Observer;
use super::queue::{Standing, standing};
use super::retry::{RetryPolicy, retry, session_over};
use super::state::{Pending, SharedState};
use crate::path::join;
use crate::{Children, Coordination, SessionEvents, SessionState, Watch, WatchedEvent, ZkError};
use futures_util::future::poll_fn;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::Poll;

/// The recognised contenders of `dir`, in lock order. `LockPathDeleted` if `dir` is gone.
pub async fn list_contenders<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    dir: &str,
) -> Result<Vec<LockNode>, LockError> {
    list_children(client, policy, dir)
        .await
        .map(|children| contenders(&children))
}

/// The children of `dir`, as [`list_contenders`] fetches them, unparsed.
async fn list_children<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    dir: &str,
) -> Result<Children, LockError> {
    match retry(client, policy, || client.get_children(dir)).await {
        Ok(children) => Ok(children),
        Err(ZkError::NoNode) => Err(LockError::LockPathDeleted {
            path: dir.to_owned(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Sets a data watch on `path` (getData, as Curator: unlike exists, it leaves no watch
/// behind when the node is already gone). `None` means it is gone: list again at once.
pub async fn watch_node<C: Coordination>(
    client: &C,
    policy: &RetryPolicy,
    path: &str,
) -> Result<Option<Watch>, LockError> {
    match retry(client, policy, || client.get_data_watch(path)).await {
        Ok((_, _, watch)) => Ok(Some(watch)),
        Err(ZkError::NoNode) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Waits for `watch` to fire, failing if the session ends first. Disconnects are sat out:
/// watches survive a reconnect.
pub async fn await_watch(
    mut watch: Watch,
    events: &mut SessionEvents,
) -> Result<WatchedEvent, LockError> {
    loop {
        let next = poll_fn(|cx| {
            if let Poll::Ready(r) = Pin::new(&mut watch).poll(cx) {
                return Poll::Ready(Err(r));
            }
            pin!(events.next()).poll(cx).map(Ok)
        })
        .await;
        match next {
            Err(fired) => return fired.map_err(LockError::from),
            Ok(Some(SessionState::Expired)) => return Err(LockError::SessionExpired),
            Ok(Some(SessionState::Closed) | None) => return Err(LockError::SessionClosed),
            Ok(Some(_)) => {}
        }
    }
}

/// Why our node vanished: the session ended, or someone else deleted it. A request
/// settles it, since the session's end may not have been reported yet.
async fn vanished<C: Coordination>(client: &C, policy: &RetryPolicy, path: &str) -> LockError {
    if let Some(over) = session_over(client) {
        return over.into();
    }
    match retry(client, policy, || client.exists(path)).await {
        Err(e) if e.is_session_terminal() => e.into(),
        _ => LockError::NodeDeleted {
            path: path.to_owned(),
        },
    }
}

/// Appends `v` in lower-case hex, as `{:x}` writes it, without the formatting machinery.
fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Leading zeros dropped, but at least one digit: an attempt number takes one or two.
    let digits = (64 - v.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        out.push(char::from(DIGITS[((v >> (i * 4)) & 0xf) as usize]));
    }
}

/// `v` in lower-case hex, as `{:x}` writes it.
fn hex(v: u64) -> String {
    let mut out = String::with_capacity(16);
    push_hex(&mut out, v);
    out
}

/// One acquisition attempt by a lock object.
pub(crate) struct Attempt<'a, C> {
    pub(crate) client: &'a C,
    pub(crate) dir: &'a str,
    pub(crate) kind: NodeKind,
    pub(crate) options: &'a LockOptions,
    pub(crate) shared: &'a SharedState,
}

impl<C: Coordination + Clone> Attempt<'_, C> {
    /// Runs the recipe. `wait = false` gives up (returning `None`) instead of watching.
    /// Whatever way this ends short of a guard, including being dropped, our node is
    /// recorded as an orphan for the caller's cleanup.
    pub(crate) async fn run(self, wait: bool) -> Result<Option<LockGuard<C>>, LockError> {
        let Attempt {
            client,
            dir,
            kind,
            options,
            shared,
        } = self;
        let policy = &options.retry;
        // The create's path `<dir>/<node_prefix>` (`_c_<guid>-<marker>`), with the guid
        // `<base>-<attempt>` in hex, written into one buffer; the guid is a slice of it
        // (this is the hot path).
        let dir_part = if dir == "/" { "" } else { dir };
        let mut prefix = String::with_capacity(dir_part.len() + 4 + 34 + 7);
        prefix.push_str(dir_part);
        prefix.push_str("/_c_");
        let guid_at = prefix.len();
        let session = client.session_id().0;
        let number = {
            let mut s = shared.lock();
            if s.active {
                return Err(LockError::InUse);
            }
            s.active = true;
            s.attempts += 1;
            match &options.guid {
                Some(g) => prefix.push_str(g),
                None => {
                    let (_, hex) = match &mut s.session_hex {
                        Some(cached) if cached.0 == session => cached,
                        stale => stale.insert((session, hex(session as u64))),
                    };
                    prefix.push_str(hex);
                    if s.object > 0 {
                        prefix.push('-');
                        push_hex(&mut prefix, s.object);
                    }
                }
            }
            s.attempts
        };
        prefix.push('-');
        push_hex(&mut prefix, number);
        let guid_end = prefix.len();
        prefix.push('-');
        prefix.push_str(kind.marker());
        let guid = &prefix[guid_at..guid_end];
        let mut pending = Pending::new(shared, dir, guid, kind);
        // Subscribed before the create, so no state change after it goes unseen.
        let mut events = client.session_events();
        let spec = ContenderSpec {
            dir,
            guid,
            kind,
            data: &options.data,
            create_parents: options.create_parents,
            retry: policy,
        };
        pending.create_sent = true;
        let (own, mut listed): (OwnNode, _) = create_listed_at(client, &spec, &prefix).await?;
        // Always a contender: we named it (the guid was checked to keep names parseable).
        let own_kind = contender_kind(&own.name);
        // The attempt's node, until the guard takes it.
        let own: &OwnNode = pending.own.insert(own);
        loop {
            let children = match listed.take() {
                Some(children) => children,
                None => list_children(client, policy, dir).await?,
            };
            // The listing is read in place: no contender list is built or sorted.
            let place = match own_kind {
                Some(k) => standing(&children, &own.name, k),
                None => Standing::Absent,
            };
            // Of the listing, only our place in it is kept (no contender is named
            // "absent" or "holds": a contender's name ends in its sequence number).
            let ahead = match place {
                Standing::Absent => {
                    client.keep_only(b"absent");
                    return Err(vanished(client, policy, &own.path).await);
                }
                Standing::Holds => {
                    client.keep_only(b"holds");
                    None
                }
                Standing::Behind(name) => {
                    client.keep_only(name.as_bytes());
                    Some(join(dir, name))
                }
            };
            drop(children);
            if let Some(ahead) = ahead {
                if !wait {
                    return Ok(None);
                }
                let Some(watch) = watch_node(client, policy, &ahead).await? else {
                    continue; // Already gone: list again at once.
                };
                await_watch(watch, &mut events).await?;
                continue;
            }
            if let Some(over) = session_over(client) {
                return Err(over.into());
            }
            let own = pending.hand_over();
            return Ok(Some(LockGuard::new(
                client.clone(),
                own,
                kind,
                // Our node's watch is the guard's to set (see the module docs).
                Observer::new(events),
                options.lost_policy,
                policy.clone(),
                shared.clone(),
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn push_hex_writes_what_format_writes() {
        for v in [0, 1, 9, 10, 15, 16, 0x1001, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut s = String::from(">");
            super::push_hex(&mut s, v);
            assert_eq!(s, format!(">{v:x}"));
        }
    }
}
