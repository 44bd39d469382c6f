//! Who waits for whom: the ZooKeeper recipe's rules over an ordered contender list.
//!
//! Each waiter watches exactly one node, so a release wakes one waiter (or, for a
//! writer's release, the readers right behind it), never the whole queue.

use super::naming::LockNode;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::naming::contenders;

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
}
