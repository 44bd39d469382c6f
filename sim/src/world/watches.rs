//! The watches a client library holds: each registered when the reply that set it
//! reaches the client, fired by the server's notification, failed when the session ends.
//!
//! A client holds a handful at most, so a list in registration order serves better than
//! maps keyed by path: registering one costs no node of a tree, firing one a short scan.

use super::request::WatchKind;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use zklock_recipe::{EventType, WatchSender, WatchedEvent, ZkError};

#[derive(Debug, Default)]
pub(crate) struct ClientWatches {
    /// In registration order.
    list: Vec<(WatchKind, Arc<str>, WatchSender)>,
}

impl ClientWatches {
    pub(crate) fn add(&mut self, kind: WatchKind, path: Arc<str>, tx: WatchSender) {
        self.list.push((kind, path, tx));
    }

    /// Fires every watch `ev` triggers: data watches first, then child watches, each in
    /// registration order, as ZooKeeper's client does.
    pub(crate) fn fire(&mut self, ev: WatchedEvent) {
        use EventType::*;
        let data = matches!(ev.event_type, NodeCreated | NodeDataChanged | NodeDeleted);
        let child = matches!(ev.event_type, NodeChildrenChanged | NodeDeleted);
        let hit = |kind: WatchKind, path: &str| {
            path == ev.path
                && match kind {
                    WatchKind::Data => data,
                    WatchKind::Child => child,
                }
        };
        let mut hits = (0..self.list.len()).filter(|&i| {
            let (k, p, _) = &self.list[i];
            hit(*k, p)
        });
        let Some(first) = hits.next() else {
            return;
        };
        // Nearly always the only one: then no order needs working out.
        let Some(_) = hits.next() else {
            let (_, _, w) = self.list.remove(first);
            w.fire(ev);
            return;
        };
        let mut left = self.list.iter().filter(|(k, p, _)| hit(*k, p)).count();
        for kind in [WatchKind::Data, WatchKind::Child] {
            let mut i = 0;
            while i < self.list.len() {
                let (k, p, _) = &self.list[i];
                if *k != kind || !hit(*k, p) {
                    i += 1;
                    continue;
                }
                let (_, _, w) = self.list.remove(i);
                left -= 1;
                // The last one takes the event itself rather than a copy.
                if left == 0 {
                    w.fire(ev);
                    return;
                }
                w.fire(ev.clone());
            }
        }
    }

    /// Ends every watch with `error` (the session is over): data watches, then child
    /// watches, each by path, then in registration order.
    pub(crate) fn fail_all(&mut self, error: &ZkError) {
        let mut all = std::mem::take(&mut self.list);
        all.sort_by(|(ka, pa, _), (kb, pb, _)| (*ka as u8, pa).cmp(&(*kb as u8, pb)));
        for (_, _, w) in all {
            w.fail(error.clone());
        }
    }

    /// For state digests: per kind, each watched path with how many watches it has, in
    /// path order. The senders themselves are fresh or abandoned, nothing else.
    pub(crate) fn hash_shape<H: Hasher>(&self, h: &mut H) {
        for kind in [WatchKind::Data, WatchKind::Child] {
            let mut paths: Vec<&str> = self
                .list
                .iter()
                .filter(|(k, _, _)| *k == kind)
                .map(|(_, p, _)| &**p)
                .collect();
            paths.sort_unstable();
            let mut counted: Vec<(&str, usize)> = Vec::new();
            for p in paths {
                match counted.last_mut() {
                    Some((last, n)) if *last == p => *n += 1,
                    _ => counted.push((p, 1)),
                }
            }
            counted.len().hash(h);
            for (path, n) in counted {
                (path, n).hash(h);
            }
        }
    }
}
