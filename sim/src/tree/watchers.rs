//! The sessions watching one node, ascending. A node nearly always has at most two, so
//! two are kept inline: setting and firing those watches then allocates nothing.

use zklock_recipe::SessionId;

const INLINE: usize = 2;

#[derive(Clone, Debug)]
pub(super) enum Watchers {
    Inline {
        len: u8,
        ids: [SessionId; INLINE],
    },
    /// Ascending; may shrink to any length.
    Many(Vec<SessionId>),
}

impl Default for Watchers {
    fn default() -> Self {
        Watchers::Inline {
            len: 0,
            ids: [SessionId(0); INLINE],
        }
    }
}

impl Watchers {
    pub(super) fn as_slice(&self) -> &[SessionId] {
        match self {
            Watchers::Inline { len, ids } => &ids[..usize::from(*len)],
            Watchers::Many(v) => v,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    pub(super) fn contains(&self, session: SessionId) -> bool {
        self.as_slice().contains(&session)
    }

    pub(super) fn add(&mut self, session: SessionId) {
        let Err(at) = self.as_slice().binary_search(&session) else {
            return;
        };
        match self {
            Watchers::Inline { len, ids } if usize::from(*len) < INLINE => {
                let n = usize::from(*len);
                ids.copy_within(at..n, at + 1);
                ids[at] = session;
                *len += 1;
            }
            Watchers::Inline { ids, .. } => {
                let mut v = Vec::with_capacity(INLINE * 2);
                v.extend_from_slice(ids);
                v.insert(at, session);
                *self = Watchers::Many(v);
            }
            Watchers::Many(v) => v.insert(at, session),
        }
    }

    pub(super) fn remove(&mut self, session: SessionId) {
        let Ok(at) = self.as_slice().binary_search(&session) else {
            return;
        };
        match self {
            Watchers::Inline { len, ids } => {
                ids.copy_within(at + 1..usize::from(*len), at);
                *len -= 1;
            }
            Watchers::Many(v) => {
                v.remove(at);
            }
        }
    }

    /// Drops every watcher (they fired), keeping a list's room for the next ones.
    pub(super) fn clear(&mut self) {
        match self {
            Watchers::Inline { len, .. } => *len = 0,
            Watchers::Many(v) => v.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_ascending_without_duplicates() {
        let mut w = Watchers::default();
        for s in [5, 3, 5, 9, 3, 1] {
            w.add(SessionId(s));
        }
        assert_eq!(w.as_slice(), &[1, 3, 5, 9].map(SessionId));
        w.remove(SessionId(3));
        w.remove(SessionId(4));
        assert_eq!(w.as_slice(), &[1, 5, 9].map(SessionId));
        assert!(w.contains(SessionId(9)) && !w.contains(SessionId(3)));
        w.clear();
        assert!(w.is_empty());
        w.add(SessionId(2));
        w.add(SessionId(2));
        assert_eq!(w.as_slice(), &[SessionId(2)]);
        w.remove(SessionId(2));
        assert!(w.is_empty());
    }
}
