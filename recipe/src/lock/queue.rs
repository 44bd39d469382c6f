//! Who waits for whom: the ZooKeeper recipe's rules over an ordered contender list.
//!
//! Each waiter watches exactly one node, so a release wakes one waiter (or, for a
//! writer's release, the readers right behind it), never the whole queue.

use super::naming::{LockNode, NodeKind, SEQUENCE_DIGITS, kind_at, plain_key, split_sequence};

/// The contender just before `ours` (any kind). An exclusive lock or a writer waits for it.
pub fn immediate_predecessor(contenders: &[LockNode], ours: usize) -> Option<&LockNode> {
    ours.checked_sub(1).and_then(|i| contenders.get(i))
}

/// The nearest writer (exclusive or write node) before `ours`. A reader waits only for it:
/// readers before it do not exclude us, and writers before it are ahead of it anyway.
pub fn nearest_lower_writer(contenders: &[LockNode], ours: usize) -> Option<&LockNode> {
    contenders[..ours.min(contenders.len())]
        .iter()
        .rev()
        .find(|c| c.kind.is_writer())
}

/// The node `contenders[ours]` must wait for, by its own kind; `None` means it holds.
pub fn blocker(contenders: &[LockNode], ours: usize) -> Option<&LockNode> {
    match contenders.get(ours) {
        Some(me) if me.kind.is_writer() => immediate_predecessor(contenders, ours),
        Some(_) => nearest_lower_writer(contenders, ours),
        None => None,
    }
}

/// The position of the node named `name` in `contenders`.
pub fn position(contenders: &[LockNode], name: &str) -> Option<usize> {
    contenders.iter().position(|c| c.name == name)
}

/// Where our node stands in a directory's raw listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing<'a> {
    /// Our node is not among the contenders.
    Absent,
    /// Nobody blocks us: we hold.
    Holds,
    /// We wait for the contender of this name.
    Behind(&'a str),
}

/// [`position`] and [`blocker`] of our node (named `ours`, of kind `own_kind`) over the
/// listing `children`, as
/// [`contenders`](super::naming::contenders) would order it, but in one pass: no list is
/// built or sorted, and only names that could be the blocker are classified. The acquire
/// loop runs this on every listing.
pub fn standing<'a, I>(children: I, ours: &str, own_kind: NodeKind) -> Standing<'a>
where
    I: IntoIterator<Item = &'a str> + Clone,
{
    let Some((_, own)) = split_sequence(ours) else {
        return Standing::Absent;
    };
    // Until the directory's counter wraps (nearly always), suffixes order as their digits
    // read big-endian, which spares parsing every child's number; a wrapped name sends
    // the listing to the exact pass below.
    if own >= 0
        && let Some(own_key) = plain_key(ours)
    {
        let pass = scan(children.clone(), ours, own_kind, own_key, |name| {
            match plain_key(name) {
                Some(key) => Ok(Some((key, name.len() - SEQUENCE_DIGITS))),
                // Refused, yet a sequence: a wrapped one.
                None if split_sequence(name).is_some() => Err(Wrapped),
                None => Ok(None),
            }
        });
        if let Ok(standing) = pass {
            return standing;
        }
    }
    // Each sequence as its distance from ours, by the counter's wrapping arithmetic (see
    // `sequence_precedes`): negative ahead of us, positive behind.
    let exact = scan(children, ours, own_kind, 0, |name| {
        Ok(split_sequence(name).map(|(at, sequence)| (sequence.wrapping_sub(own), at)))
    });
    // The exact pass refuses no name, so it cannot end in `Wrapped`.
    exact.unwrap_or(Standing::Absent)
}

/// A wrapped sequence met by the big-endian pass of [`standing`].
struct Wrapped;

/// One pass of [`standing`]: `place` gives each child's sequence as a key that orders
/// as the queue does (with where its suffix starts), `None` for a child that has none.
fn scan<'a, K: Ord + Copy>(
    children: impl IntoIterator<Item = &'a str>,
    ours: &str,
    own_kind: NodeKind,
    own_key: K,
    place: impl Fn(&str) -> Result<Option<(K, usize)>, Wrapped>,
) -> Result<Standing<'a>, Wrapped> {
    let mut found = false;
    // The greatest (key, name) below ours that blocks us: the immediate predecessor for
    // a writer, the nearest writer for a reader.
    let mut best: Option<(K, &str)> = None;
    for name in children {
        let Some((key, at)) = place(name)? else {
            continue;
        };
        if key > own_key {
            continue;
        }
        if key == own_key {
            match name.cmp(ours) {
                std::cmp::Ordering::Equal => {
                    found = true;
                    continue;
                }
                std::cmp::Ordering::Greater => continue,
                std::cmp::Ordering::Less => {}
            }
        }
        if best.is_some_and(|b| (key, name) <= b) {
            continue;
        }
        match kind_at(name, at) {
            Some(kind) if own_kind.is_writer() || kind.is_writer() => best = Some((key, name)),
            _ => {}
        }
    }
    Ok(match (found, best) {
        (false, _) => Standing::Absent,
        (true, None) => Standing::Holds,
        (true, Some((_, name))) => Standing::Behind(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::naming::contenders;

    /// What the list-building path decides, for comparison with [`standing`].
    fn by_list<'a>(names: &[&'a str], ours: &LockNode) -> Standing<'a> {
        let list = contenders(names);
        let ours = ours.name.as_str();
        let Some(i) = position(&list, ours) else {
            return Standing::Absent;
        };
        match blocker(&list, i) {
            None => Standing::Holds,
            Some(n) => Standing::Behind(names.iter().find(|x| **x == n.name).unwrap()),
        }
    }

    #[test]
    fn standing_agrees_with_the_ordered_list() {
        let pool = [
            "_c_a-lock-0000000001",
            "_c_b-read-0000000002",
            "_c_c-write-0000000003",
            "k__lock__0000000004",
            "_c_d-read-0000000004",
            "k__rlock__0000000005",
            "read-0000000006",
            "config",
            "_c_e-lock-00000000x7",
            "_c_f-read-0000000007",
            "_c_g-__WRIT__0000000007",
            "_c_h-write-0000000008",
            "other-0000000009",
        ];
        // Every subset of the pool, each name of it in turn as ours, in two orders.
        for mask in 0u32..(1 << pool.len()) {
            let mut names: Vec<&str> = (0..pool.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| pool[i])
                .collect();
            for _ in 0..2 {
                for ours in names.iter().chain(["_c_z-lock-0000000005"].iter()) {
                    // Our own node is always a contender.
                    let Some(ours) = LockNode::parse(ours) else {
                        continue;
                    };
                    let ours = &ours;
                    assert_eq!(
                        standing(names.iter().copied(), &ours.name, ours.kind),
                        by_list(&names, ours),
                        "{names:?} {ours:?}"
                    );
                }
                names.reverse();
            }
        }
    }

    /// The same agreement where the directory's counter wraps: from 2147483647 to
    /// -2147483648 ('-' and ten digits), and from -1 ('-' and nine) to 0.
    #[test]
    fn standing_agrees_with_the_ordered_list_across_the_wrap() {
        let pools = [
            [
                "_c_a-lock-2147483645",
                "_c_b-read-2147483646",
                "k__lock__2147483647",
                "_c_c-read--2147483648",
                "k__rlock__-2147483647",
                "_c_d-write--2147483646",
                "_c_e-read--2147483645",
                "config",
            ],
            [
                "_c_a-lock--000000003",
                "_c_b-read--000000002",
                "k__lock__-000000001",
                "_c_c-read-0000000000",
                "k__rlock__0000000001",
                "_c_d-write-0000000002",
                "_c_e-read-0000000003",
                "_c_f-lock--00000000x",
            ],
        ];
        for pool in pools {
            for mask in 0u32..(1 << pool.len()) {
                let names: Vec<&str> = (0..pool.len())
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| pool[i])
                    .collect();
                for ours in &names {
                    let Some(ours) = LockNode::parse(ours) else {
                        continue;
                    };
                    assert_eq!(
                        standing(names.iter().copied(), &ours.name, ours.kind),
                        by_list(&names, &ours),
                        "{names:?} {ours:?}"
                    );
                }
            }
        }
    }

    fn who_blocks(names: &[&str], ours: usize) -> Option<String> {
        let list = contenders(names);
        blocker(&list, ours).map(|n| n.name.clone())
    }

    #[test]
    fn exclusive_waits_for_immediate_predecessor() {
        let names = [
            "_c_a-lock-0000000001",
            "_c_b-read-0000000002",
            "_c_c-lock-0000000003",
        ];
        assert_eq!(who_blocks(&names, 0), None);
        assert_eq!(
            who_blocks(&names, 2).as_deref(),
            Some("_c_b-read-0000000002")
        );
    }

    #[test]
    fn reader_waits_for_nearest_lower_writer_only() {
        let names = [
            "_c_a-write-0000000001",
            "_c_b-read-0000000002",
            "k__lock__0000000003",
            "_c_d-read-0000000004",
            "_c_e-read-0000000005",
        ];
        assert_eq!(
            who_blocks(&names, 1).as_deref(),
            Some("_c_a-write-0000000001")
        );
        assert_eq!(
            who_blocks(&names, 4).as_deref(),
            Some("k__lock__0000000003")
        );
        let readers = ["_c_a-read-0000000001", "k__rlock__0000000002"];
        assert_eq!(who_blocks(&readers, 1), None);
    }

    /// The holder's node is the last before the counter's wrap; the next node, the first
    /// past it, waits for it rather than sorting ahead of it.
    #[test]
    fn standing_holds_across_the_sequence_wrap() {
        let children = [
            "_c_b-lock--2147483648",
            "_c_a-lock-2147483647",
            "_c_c-lock--2147483647",
        ];
        let at = |ours| standing(children.iter().copied(), ours, NodeKind::Exclusive);
        assert_eq!(at("_c_a-lock-2147483647"), Standing::Holds);
        assert_eq!(
            at("_c_b-lock--2147483648"),
            Standing::Behind("_c_a-lock-2147483647")
        );
        assert_eq!(
            at("_c_c-lock--2147483647"),
            Standing::Behind("_c_b-lock--2147483648")
        );
    }
}
