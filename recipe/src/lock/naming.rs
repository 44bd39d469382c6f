//! Lock node names: building them, recognising them, and ordering contenders.
//!
//! Three families of names are recognised under one lock directory, so that clients of
//! different libraries see each other as contenders:
//!
//! | style   | shape                                   | kinds                                  |
//! |---------|-----------------------------------------|----------------------------------------|
//! | Curator | `_c_<guid>-<marker>NNNNNNNNNN`          | `lock-`, `read-`, `write-`, `__READ__`, `__WRIT__` |
//! | Kazoo   | `<guid><marker>NNNNNNNNNN`              | `__lock__` (exclusive), `__rlock__` (read) |
//! | Plain   | `<marker>NNNNNNNNNN` (ZooKeeper recipe) | `lock-`, `read-`, `write-`             |
//!
//! `NNNNNNNNNN` is the 10-digit, zero-padded suffix ZooKeeper appends to a sequential
//! node (from the parent's cversion). Contenders are ordered by that number, never by the
//! full name: the guid prefix would otherwise decide the order (a canary in the tests
//! shows the resulting double grant).

/// Digits in the sequential suffix ZooKeeper appends.
pub const SEQUENCE_DIGITS: usize = 10;

/// What a contender asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    /// An exclusive lock (`lock-`, Kazoo's `__lock__`). Excludes everyone.
    Exclusive,
    /// A shared read lock (`read-`, Curator's `__READ__`, Kazoo's `__rlock__`).
    Read,
    /// A write lock of a read/write lock (`write-`, Curator's `__WRIT__`). Excludes everyone.
    Write,
}

impl NodeKind {
    /// True for kinds that exclude every other contender (exclusive and write).
    pub fn is_writer(self) -> bool {
        !matches!(self, NodeKind::Read)
    }

    /// The marker this crate writes in its own node names for this kind.
    pub fn marker(self) -> &'static str {
        match self {
            NodeKind::Exclusive => "lock-",
            NodeKind::Read => "read-",
            NodeKind::Write => "write-",
        }
    }
}

/// Which library's naming a node follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NamingStyle {
    Curator,
    Kazoo,
    Plain,
}

/// A recognised contender node: its name, parsed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockNode {
    /// The node's name (the last path component).
    pub name: String,
    pub kind: NodeKind,
    pub style: NamingStyle,
    /// The sequential suffix: ZooKeeper's counter, negative once it wrapped (see
    /// [`parse_sequence`]).
    pub sequence: i32,
    /// Where the guid sits in `name` (start, end), if the style carries one: a listing
    /// may hold many contenders, so the guid is not copied out.
    guid_at: Option<(usize, usize)>,
}

const CURATOR_MARKERS: [(&str, NodeKind); 5] = [
    ("lock-", NodeKind::Exclusive),
    ("read-", NodeKind::Read),
    ("write-", NodeKind::Write),
    ("__READ__", NodeKind::Read),
    ("__WRIT__", NodeKind::Write),
];

// `__rlock__` first: it must not be mistaken for a guid ending in `r` plus `__lock__`
// (it cannot be, as `_rlock__` is not `__lock__`, but the order makes that obvious).
const KAZOO_MARKERS: [(&str, NodeKind); 2] = [
    ("__rlock__", NodeKind::Read),
    ("__lock__", NodeKind::Exclusive),
];

/// The sequential suffix of `name` as ZooKeeper's counter, if it has one.
///
/// The counter is a signed 32-bit int written with `%010d`: ten digits up to
/// 2147483647, then, once it wraps, `-2147483648` up to `-1000000000` ('-' and ten digits)
/// and `-999999999` up to `-000000001` ('-' and nine). Lock recipes have broken on those
/// names (Kazoo#730, go-zookeeper/zk#65, ZOOKEEPER-4372); compare sequences with
/// [`sequence_precedes`], never as plain numbers.
#[inline]
pub fn parse_sequence(name: &str) -> Option<i32> {
    split_sequence(name).map(|(_, n)| n)
}

/// Where the sequential suffix of `name` starts, and its value (see [`parse_sequence`]).
#[inline(always)]
pub(crate) fn split_sequence(name: &str) -> Option<(usize, i32)> {
    let b = name.as_bytes();
    let start = b.len().checked_sub(SEQUENCE_DIGITS)?;
    // This runs for every child of every listing, so the ten digits are checked and read
    // eight at a time, in one word (a byte loop cost some 80 instructions a name).
    let (high, low) = b[start..].split_at(8);
    let high = u64::from_le_bytes(high.try_into().ok()?);
    let low = u64::from(u16::from_le_bytes(low.try_into().ok()?));
    if all_digits(high) && all_digits(low | 0x3030_3030_3030_0000) {
        let n = u64::from(eight_digits(high)) * 100 + (low & 0xf) * 10 + ((low >> 8) & 0xf);
        if wrapped_ten(b, start) {
            return (n <= 1 << 31).then(|| (start - 1, (n as i64).wrapping_neg() as i32));
        }
        return i32::try_from(n).ok().map(|n| (start, n));
    }
    // '-' and nine digits: a wrapped counter from -999999999 to -1.
    if b[start] != b'-' {
        return None;
    }
    let high = u64::from_le_bytes(b[start + 1..start + 9].try_into().ok()?);
    let last = b[start + 9];
    if !all_digits(high) || !last.is_ascii_digit() {
        return None;
    }
    let n = u64::from(eight_digits(high)) * 10 + u64::from(last - b'0');
    (n > 0).then(|| (start, -(n as i32)))
}

/// The ten-digit suffix of `name` as a key that orders as the sequence numbers do (the
/// digits read big-endian), if it is a sequence not yet wrapped (see
/// [`split_sequence`]; a suffix past i32, no sequence there, has a key above every
/// sequence's). Comparing keys spares the conversion of every child of a listing.
#[inline]
pub(crate) fn plain_key(name: &str) -> Option<u128> {
    let b = name.as_bytes();
    let start = b.len().checked_sub(SEQUENCE_DIGITS)?;
    let (high, low) = b[start..].split_at(8);
    let high = u64::from_be_bytes(high.try_into().ok()?);
    let low = u16::from_be_bytes(low.try_into().ok()?);
    if !all_digits(high) || !all_digits(u64::from(low) | 0x3030_3030_3030_0000) {
        return None;
    }
    if wrapped_ten(b, start) {
        return None;
    }
    Some((u128::from(high) << 16) | u128::from(low))
}

/// Whether the ten digits of `b` from `start` are a wrapped counter's: '-' and ten
/// digits, which `%010d` writes from -2147483648 to -1000000000 (so the first is not 0).
/// Its '-' follows the marker, which ends in '-' or '_' (`lock-`, `__lock__`), where a
/// positive suffix follows the marker's own '-' and a letter (`k-`), or its '_'.
#[inline]
fn wrapped_ten(b: &[u8], start: usize) -> bool {
    b[start] != b'0' && start >= 2 && b[start - 1] == b'-' && matches!(b[start - 2], b'-' | b'_')
}

/// Whether sequence `a` was handed out before `b`, across ZooKeeper's wrap of the
/// counter from 2147483647 to -2147483648: serial number arithmetic (RFC 1982) on 32
/// bits, exact while the nodes compared are fewer than 2^31 creates apart.
#[inline]
pub fn sequence_precedes(a: i32, b: i32) -> bool {
    b.wrapping_sub(a) > 0
}

/// Whether each of the eight bytes of `word` is an ASCII digit: its high nibble is 3 and
/// adding 6 keeps it so (no carry between bytes once every high nibble is 3).
fn all_digits(word: u64) -> bool {
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    word & HIGH == THREES && (word + 0x0606_0606_0606_0606) & HIGH == THREES
}

/// The value of eight ASCII digits read little-endian (first digit in the lowest byte),
/// combining them pairwise, then in fours, then all (SWAR).
fn eight_digits(word: u64) -> u32 {
    let v = word - 0x3030_3030_3030_3030;
    // Each byte pair becomes 10 * first + second, in its low byte.
    let v = v * 10 + (v >> 8);
    // Pairs to fours and fours to eight, in two multiplications, result in the high half.
    let pairs = 0x0000_00ff_0000_00ff;
    let v = (v & pairs)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & pairs).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    v as u32
}

impl LockNode {
    /// Parses a child name of a lock directory; `None` if it is not a contender.
    pub fn parse(name: &str) -> Option<LockNode> {
        classify(name).map(|parsed| LockNode::with(name.to_owned(), parsed))
    }

    fn with(name: String, (guid_at, kind, style, sequence): Parsed) -> LockNode {
        LockNode {
            name,
            kind,
            style,
            sequence,
            guid_at,
        }
    }

    /// The contender's guid, if the style carries one.
    pub fn guid(&self) -> Option<&str> {
        self.guid_at.map(|(start, end)| &self.name[start..end])
    }
}

type Parsed = (Option<(usize, usize)>, NodeKind, NamingStyle, i32);

fn classify(name: &str) -> Option<Parsed> {
    let (at, sequence) = split_sequence(name)?;
    classify_with(name, at, sequence)
}

/// The kind of a contender named `name`; `None` if the name is not a contender's.
pub(crate) fn contender_kind(name: &str) -> Option<NodeKind> {
    kind_at(name, split_sequence(name)?.0)
}

/// [`contender_kind`] of a name whose sequential suffix starts at `suffix_at`.
pub(crate) fn kind_at(name: &str, suffix_at: usize) -> Option<NodeKind> {
    // The kind does not depend on the number: any stands in for it.
    classify_with(name, suffix_at, 0).map(|(_, kind, _, _)| kind)
}

fn classify_with(name: &str, suffix_at: usize, sequence: i32) -> Option<Parsed> {
    let prefix = &name[..suffix_at];
    if let Some(rest) = prefix.strip_prefix("_c_") {
        for (marker, kind) in CURATOR_MARKERS {
            if let Some(guid) = rest.strip_suffix(marker).and_then(|r| r.strip_suffix('-'))
                && !guid.is_empty()
            {
                let at = Some((3, 3 + guid.len()));
                return Some((at, kind, NamingStyle::Curator, sequence));
            }
        }
    }
    for (marker, kind) in KAZOO_MARKERS {
        if let Some(guid) = prefix.strip_suffix(marker) {
            let at = (!guid.is_empty()).then_some((0, guid.len()));
            return Some((at, kind, NamingStyle::Kazoo, sequence));
        }
    }
    for (marker, kind) in &CURATOR_MARKERS[..3] {
        if prefix == *marker {
            return Some((None, *kind, NamingStyle::Plain, sequence));
        }
    }
    None
}

/// The name this crate gives a contender before ZooKeeper appends the suffix:
/// `_c_<guid>-<marker>`, Curator's protected naming.
pub fn node_prefix(guid: &str, kind: NodeKind) -> String {
    let mut prefix = String::with_capacity(4 + guid.len() + kind.marker().len());
    push_node_prefix(&mut prefix, guid, kind);
    prefix
}

/// Appends [`node_prefix`] to `out`, so a caller can build a whole path in one buffer.
pub fn push_node_prefix(out: &mut String, guid: &str, kind: NodeKind) {
    out.push_str("_c_");
    out.push_str(guid);
    out.push('-');
    out.push_str(kind.marker());
}

/// Orders contenders by sequence number, across the counter's wrap (ties, impossible
/// within one directory, by name so that the order is total and deterministic).
pub fn sort_by_sequence(nodes: &mut [LockNode]) {
    let Some(first) = nodes.first().map(|n| n.sequence) else {
        return;
    };
    // The oldest node is the one no other precedes; every sequence counts from it.
    let behind = nodes
        .iter()
        .map(|n| n.sequence.wrapping_sub(first))
        .min()
        .unwrap_or(0);
    let oldest = first.wrapping_add(behind);
    let key = |n: &LockNode| n.sequence.wrapping_sub(oldest) as u32;
    nodes.sort_unstable_by(|a, b| (key(a), &a.name).cmp(&(key(b), &b.name)));
}

/// The recognised contenders among a directory's children (a slice of names or a
/// [`Children`](crate::Children) listing), in lock order. Children that are not contender
/// nodes are skipped.
pub fn contenders<I>(children: I) -> Vec<LockNode>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let names = children.into_iter();
    let room = names.size_hint().0;
    in_lock_order(names.filter_map(|c| LockNode::parse(c.as_ref())), room)
}

fn in_lock_order(nodes: impl Iterator<Item = LockNode>, room: usize) -> Vec<LockNode> {
    // Sized once: most children of a lock directory are contenders.
    let mut list = Vec::with_capacity(room);
    list.extend(nodes);
    sort_by_sequence(&mut list);
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_style() {
        let c = LockNode::parse("_c_1f-0001-lock-0000000042").unwrap();
        assert_eq!(
            (c.guid(), c.kind, c.style, c.sequence),
            (
                Some("1f-0001"),
                NodeKind::Exclusive,
                NamingStyle::Curator,
                42
            )
        );
        let r = LockNode::parse("_c_a-b-__READ__0000000007").unwrap();
        assert_eq!((r.guid(), r.kind), (Some("a-b"), NodeKind::Read));
        let w = LockNode::parse("_c_x-__WRIT__0000000008").unwrap();
        assert_eq!(w.kind, NodeKind::Write);
        let k = LockNode::parse("3e1d9c__lock__0000000003").unwrap();
        assert_eq!(
            (k.guid(), k.kind, k.style, k.sequence),
            (Some("3e1d9c"), NodeKind::Exclusive, NamingStyle::Kazoo, 3)
        );
        let kr = LockNode::parse("3e1d9c__rlock__0000000004").unwrap();
        assert_eq!((kr.guid(), kr.kind), (Some("3e1d9c"), NodeKind::Read));
        let p = LockNode::parse("write-0000000005").unwrap();
        assert_eq!(
            (p.guid(), p.kind, p.style),
            (None, NodeKind::Write, NamingStyle::Plain)
        );
    }

    #[test]
    fn rejects_non_contenders() {
        for name in [
            "",
            "lock-",
            "lock-12",
            "lock-00000000x1",
            "config",
            "_c_-lock-0000000001",
            "other-0000000001",
            "_c_g-lock-+000000001",
        ] {
            assert_eq!(LockNode::parse(name), None, "{name:?}");
        }
    }

    #[test]
    fn builds_curator_protected_names() {
        assert_eq!(node_prefix("g-1", NodeKind::Exclusive), "_c_g-1-lock-");
        assert_eq!(node_prefix("g", NodeKind::Read), "_c_g-read-");
        let name = format!("{}0000000009", node_prefix("g", NodeKind::Write));
        let n = LockNode::parse(&name).unwrap();
        assert_eq!(
            (n.guid(), n.kind, n.sequence),
            (Some("g"), NodeKind::Write, 9)
        );
    }

    #[test]
    fn orders_by_sequence_not_by_name() {
        // By full name "_c_b..." < "_c_z..." < "a..."; by sequence the Kazoo node is first.
        let list = contenders(&[
            "_c_z-lock-0000000002",
            "config",
            "a__lock__0000000001",
            "_c_b-lock-0000000003",
        ]);
        let names: Vec<&str> = list.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a__lock__0000000001",
                "_c_z-lock-0000000002",
                "_c_b-lock-0000000003"
            ]
        );
    }

    #[test]
    fn sequence_parsing_agrees_with_a_byte_loop() {
        fn by_bytes(name: &str) -> Option<i32> {
            let digits = &name.as_bytes()[name.len().checked_sub(SEQUENCE_DIGITS)?..];
            let mut n: u64 = 0;
            for &b in digits {
                if !b.is_ascii_digit() {
                    return None;
                }
                n = n * 10 + u64::from(b - b'0');
            }
            i32::try_from(n).ok()
        }
        let mut values: Vec<u64> = vec![0, 1, 9, 10, 99, 4_294_967_295, 4_294_967_296];
        values.extend([9_999_999_999, 1_234_567_890, 987_654_321, 100_000_000]);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x % 10_000_000_000);
        }
        for v in values {
            let name = format!("_c_g-1-lock-{v:010}");
            assert_eq!(parse_sequence(&name), by_bytes(&name), "{name}");
            // Every byte replaced by each neighbour of the digit range, and by others.
            for i in name.len() - SEQUENCE_DIGITS..name.len() {
                for b in [b'/', b':', b'0' - 16, b'9' + 16, b'0' + 0x80, 0xff] {
                    let mut bytes = name.clone().into_bytes();
                    bytes[i] = b;
                    let bad = String::from_utf8_lossy(&bytes).into_owned();
                    assert_eq!(parse_sequence(&bad), by_bytes(&bad), "{bad:?}");
                }
            }
        }
    }

    #[test]
    fn sequence_parsing() {
        assert_eq!(parse_sequence("x0000000010"), Some(10));
        assert_eq!(parse_sequence("0000000000"), Some(0));
        assert_eq!(parse_sequence("x000000010"), None);
        assert_eq!(parse_sequence("lock-00000000é1"), None);
        assert_eq!(parse_sequence("n-2147483647"), Some(i32::MAX));
        // Past i32 only with the '-' of a wrapped counter.
        assert_eq!(parse_sequence("n-2147483648"), None);
        assert_eq!(parse_sequence("n-4294967295"), None);
        assert_eq!(parse_sequence("n-+000000001"), None);
    }

    /// ZooKeeper's counter wraps from 2147483647 to -2147483648, written by `%010d` as
    /// '-' and ten digits, then from -999999999 as '-' and nine; lock recipes misread
    /// those names (Kazoo#730, go-zookeeper/zk#65, ZOOKEEPER-4372).
    #[test]
    fn sequences_past_the_counters_wrap_parse_as_zookeeper_wrote_them() {
        for n in [
            i32::MIN,
            i32::MIN + 1,
            -1_000_000_000,
            -999_999_999,
            -123_456_789,
            -10,
            -1,
            0,
            1,
            999_999_999,
            1_000_000_000,
            i32::MAX,
        ] {
            for prefix in [
                "_c_g-1-lock-",
                "_c_g-__READ__",
                "g__lock__",
                "g__rlock__",
                "write-",
            ] {
                let name = format!("{prefix}{n:010}");
                let node = LockNode::parse(&name).unwrap_or_else(|| panic!("{name}"));
                assert_eq!(node.sequence, n, "{name}");
                assert_eq!(contender_kind(&name), Some(node.kind), "{name}");
            }
        }
        // A positive suffix whose marker ends in '-' is not a wrapped one.
        assert_eq!(parse_sequence("_c_g-lock-1234567890"), Some(1_234_567_890));
        assert_eq!(
            parse_sequence("_c_g-lock--1234567890"),
            Some(-1_234_567_890)
        );
        assert_eq!(parse_sequence("g__lock__-1234567890"), Some(-1_234_567_890));
        assert_eq!(parse_sequence("g__lock__-2147483649"), None);
        assert_eq!(parse_sequence("g__lock__-000000000"), None);
    }

    #[test]
    fn sequences_order_across_the_wrap() {
        assert!(sequence_precedes(i32::MAX, i32::MIN));
        assert!(sequence_precedes(-1, 0));
        assert!(!sequence_precedes(i32::MIN, i32::MAX));
        assert!(!sequence_precedes(5, 5));
        let list = contenders(&[
            "_c_c-lock--2147483647",
            "_c_a-lock-2147483646",
            "_c_d-lock--000000001",
            "_c_b-lock--2147483648",
        ]);
        let names: Vec<&str> = list.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "_c_a-lock-2147483646",
                "_c_b-lock--2147483648",
                "_c_c-lock--2147483647",
                "_c_d-lock--000000001"
            ]
        );
        let list = contenders(&["_c_b-lock-0000000000", "_c_a-lock--000000001"]);
        assert_eq!(list[0].name, "_c_a-lock--000000001");
    }
}
