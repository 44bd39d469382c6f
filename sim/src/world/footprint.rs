//! What one request transition touched, for partial-order reduction (see the checker's
//! `exhaustive` module for the search that uses it).
//!
//! A request transition runs from the server's choice of a client's next request to the
//! next state an explorer sees: the request applied to the tree, its reply and any watch
//! events delivered, and every actor that woke running until all block again. The world
//! records, while it runs:
//! - the tree paths the request read and wrote (a write to a node writes its parent's
//!   child list and stat too; a watch registers under its own key), and whether it wrote
//!   at all (every write takes the next zxid, so two writes never commute);
//! - every client anything was delivered to or queued for (a delivery changes what the
//!   client's actor knows, and so its next requests);
//! - whether anything else happened ([`Footprint::global`]): a timer set or fired, an
//!   actor reading the clock or the tree outside a request, a workload event recorded
//!   (acquired, released...), a resource operation, a workload choice, a session or
//!   connection change, a multi, a close, background cleanup. Such a transition commutes
//!   with nothing.
//!
//! Two transitions of different clients with disjoint footprints commute: each reads
//! nothing the other writes, neither delivers to the other's client, and both take
//! `request_time_us` of virtual time with no timer due in between, so either order ends
//! in the same state. Collisions of the 64-bit path keys only make transitions look
//! dependent, never independent.

use std::hash::{DefaultHasher, Hash, Hasher};

/// A request on offer at a choice: its client and a fingerprint of the request (and of
/// who awaits its reply), the same in every run that reaches the same request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Offer {
    pub client: u32,
    pub fingerprint: u64,
}

/// What one request transition touched (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The client whose request it applied.
    pub client: u32,
    /// Something beyond the request and its deliveries happened: dependent on everything.
    pub global: bool,
    /// Clients something was delivered to or queued for, as a bit set (client 63 and
    /// above share the top bit).
    pub clients: u64,
    /// Whether the request wrote the tree (took a zxid).
    pub tree_write: bool,
    /// Keys of the paths read, sorted and deduplicated once the transition ends.
    pub reads: Vec<u64>,
    /// Keys of the paths (and watch tables) written.
    pub writes: Vec<u64>,
}

impl Footprint {
    pub(crate) fn new(client: usize) -> Footprint {
        Footprint {
            client: client as u32,
            clients: client_bit(client),
            ..Footprint::default()
        }
    }

    /// One that commutes with nothing.
    pub fn global(client: u32) -> Footprint {
        Footprint {
            client,
            global: true,
            ..Footprint::default()
        }
    }

    /// Whether the two transitions commute (see the module docs); conservative.
    pub fn independent(&self, other: &Footprint) -> bool {
        !self.global
            && !other.global
            && self.client != other.client
            && self.clients & other.clients == 0
            && !(self.tree_write && other.tree_write)
            && disjoint(&self.writes, &other.writes)
            && disjoint(&self.writes, &other.reads)
            && disjoint(&self.reads, &other.writes)
    }

    pub(crate) fn touch(&mut self, c: usize) {
        self.clients |= client_bit(c);
    }

    pub(crate) fn read(&mut self, path: &str) {
        self.reads.push(path_key(0, path));
    }

    /// A write of `path`: its node, and its parent's child list and stat.
    pub(crate) fn write(&mut self, path: &str) {
        self.tree_write = true;
        self.writes.push(path_key(0, path));
        self.writes.push(path_key(0, parent(path)));
    }

    /// A read of `path` whose outcome also depends on its parent (a failed write).
    pub(crate) fn read_with_parent(&mut self, path: &str) {
        self.read(path);
        self.read(parent(path));
    }

    /// A watch registered on `path`: watch tables keep their order of registration.
    pub(crate) fn watch(&mut self, path: &str) {
        self.writes.push(path_key(1, path));
    }

    pub(crate) fn finish(&mut self) {
        for v in [&mut self.reads, &mut self.writes] {
            v.sort_unstable();
            v.dedup();
        }
    }
}

fn client_bit(c: usize) -> u64 {
    1u64 << c.min(63)
}

fn disjoint(a: &[u64], b: &[u64]) -> bool {
    // Both sorted: a merge.
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return false,
        }
    }
    true
}

/// SipHash with fixed keys: the same in every run of one build, which is all a key and
/// a fingerprint need (neither is saved), and no allocation per step.
fn path_key(tag: u8, path: &str) -> u64 {
    let mut h = DefaultHasher::new();
    (tag, path).hash(&mut h);
    h.finish()
}

/// The parent of an absolute path ("/" for a top-level node and for "/" itself).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// A fingerprint of a value through its `Hash` (see `path_key`).
pub(crate) fn fingerprint(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(client: usize, f: impl FnOnce(&mut Footprint)) -> Footprint {
        let mut x = Footprint::new(client);
        f(&mut x);
        x.finish();
        x
    }

    #[test]
    fn reads_of_one_node_commute_and_a_write_does_not_with_them() {
        let a = fp(0, |x| x.read("/lock"));
        let b = fp(1, |x| x.read("/lock"));
        assert!(a.independent(&b));
        let w = fp(1, |x| x.write("/lock/n-1"));
        assert!(
            !a.independent(&w),
            "a create under /lock changes its children"
        );
        let other = fp(0, |x| x.read("/lock/n-0"));
        assert!(other.independent(&w), "a sibling's node is not written");
    }

    #[test]
    fn two_writes_never_commute_nor_deliveries_to_one_client() {
        let a = fp(0, |x| x.write("/a/x"));
        let b = fp(1, |x| x.write("/b/y"));
        assert!(!a.independent(&b), "each takes the next zxid");
        let r = fp(1, |x| x.read("/c"));
        let notify = fp(0, |x| {
            x.write("/a/x");
            x.touch(1);
        });
        assert!(a.independent(&r));
        assert!(!notify.independent(&r), "client 1 hears of the write");
        let same = fp(0, |x| x.read("/c"));
        assert!(!same.independent(&fp(0, |x| x.read("/d"))));
        assert!(!Footprint::global(2).independent(&r));
    }

    #[test]
    fn watches_on_one_path_do_not_commute() {
        let a = fp(0, |x| {
            x.read("/lock/n-0");
            x.watch("/lock/n-0");
        });
        let b = fp(1, |x| {
            x.read("/lock/n-0");
            x.watch("/lock/n-0");
        });
        assert!(!a.independent(&b));
        assert!(a.independent(&fp(1, |x| x.read("/lock/n-0"))));
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b"), "/a");
    }
}
