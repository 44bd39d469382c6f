//! [`Children`]: the answer to a listing.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::iter::FusedIterator;
use std::sync::Arc;

/// The names of a node's children, as one `getChildren` answers them (in no particular
/// order). The names sit in one shared buffer, so a clone costs no copy: the simulated
/// server keeps each node's listing and answers a `getChildren` with a clone of it, and
/// the acquire loop lists on every wake. Changing a clone copies the buffer first.
///
/// ```
/// use zklock_recipe::Children;
///
/// let children: Children = ["lock-0000000001", "lock-0000000000"].into_iter().collect();
/// assert_eq!(children.len(), 2);
/// assert_eq!(children.get(1), Some("lock-0000000000"));
/// assert!(children.contains("lock-0000000001"));
/// let mut sorted = children.clone();
/// sorted.sort();
/// assert_eq!(sorted, ["lock-0000000000", "lock-0000000001"]);
/// assert_eq!(children.iter().next(), Some("lock-0000000001")); // the clone changed alone
/// ```
#[derive(Clone, Default)]
pub struct Children {
    /// `None` when empty, so that a node without children holds no allocation.
    names: Option<Arc<Names>>,
}

#[derive(Clone, Default)]
struct Names {
    /// Every name, one after another.
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
}

impl Names {
    fn start(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }
}

impl Children {
    pub fn new() -> Children {
        Children::default()
    }

    /// Room for `names` names of `bytes` bytes in all.
    pub fn with_capacity(names: usize, bytes: usize) -> Children {
        Children {
            names: (names > 0).then(|| {
                Arc::new(Names {
                    text: String::with_capacity(bytes),
                    ends: Vec::with_capacity(names),
                })
            }),
        }
    }

    fn names_mut(&mut self) -> &mut Names {
        Arc::make_mut(self.names.get_or_insert_with(Default::default))
    }

    pub fn push(&mut self, name: &str) {
        let names = self.names_mut();
        names.text.push_str(name);
        names.ends.push(names.text.len());
    }

    /// Puts `name` at position `i`, shifting the names after it.
    ///
    /// # Panics
    /// If `i > len`.
    pub fn insert(&mut self, i: usize, name: &str) {
        let names = self.names_mut();
        assert!(
            i <= names.ends.len(),
            "insert at {i} of {}",
            names.ends.len()
        );
        let at = names.start(i);
        names.text.insert_str(at, name);
        for end in &mut names.ends[i..] {
            *end += name.len();
        }
        names.ends.insert(i, at + name.len());
    }

    /// Takes out the name at position `i`, shifting the names after it.
    ///
    /// # Panics
    /// If `i >= len`.
    pub fn remove(&mut self, i: usize) {
        let names = self.names_mut();
        assert!(
            i < names.ends.len(),
            "remove at {i} of {}",
            names.ends.len()
        );
        let (start, end) = (names.start(i), names.ends[i]);
        names.text.replace_range(start..end, "");
        names.ends.remove(i);
        for e in &mut names.ends[i..] {
            *e -= end - start;
        }
        if names.ends.is_empty() {
            self.names = None;
        }
    }

    pub fn len(&self) -> usize {
        self.names.as_ref().map_or(0, |n| n.ends.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th name, in the order of the answer.
    pub fn get(&self, i: usize) -> Option<&str> {
        let names = self.names.as_deref()?;
        let end = *names.ends.get(i)?;
        Some(&names.text[names.start(i)..end])
    }

    pub fn iter(&self) -> ChildNames<'_> {
        ChildNames {
            children: self,
            front: 0,
            back: self.len(),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.iter().any(|n| n == name)
    }

    /// Puts the names in byte order (a server answers in no particular order).
    pub fn sort(&mut self) {
        let mut names: Vec<&str> = self.iter().collect();
        names.sort_unstable();
        *self = Children::sized(&names);
    }

    /// `names`, with the buffer sized once.
    fn sized<S: AsRef<str>>(names: &[S]) -> Children {
        let bytes = names.iter().map(|n| n.as_ref().len()).sum();
        let mut children = Children::with_capacity(names.len(), bytes);
        for name in names {
            children.push(name.as_ref());
        }
        children
    }

    /// The names as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

impl PartialEq for Children {
    fn eq(&self, other: &Children) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Children {}

impl Hash for Children {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.len().hash(h);
        for name in self {
            name.hash(h);
        }
    }
}

impl fmt::Debug for Children {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Name by name, in order: `children == ["a", "b"]`.
impl<S: AsRef<str>> PartialEq<[S]> for Children {
    fn eq(&self, names: &[S]) -> bool {
        self.len() == names.len() && self.iter().zip(names).all(|(a, b)| a == b.as_ref())
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for Children {
    fn eq(&self, names: &Vec<S>) -> bool {
        *self == names[..]
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for Children {
    fn eq(&self, names: &[S; N]) -> bool {
        *self == names[..]
    }
}

impl<S: AsRef<str>> FromIterator<S> for Children {
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Children {
        let mut children = Children::new();
        for name in names {
            children.push(name.as_ref());
        }
        children
    }
}

impl From<Vec<String>> for Children {
    fn from(names: Vec<String>) -> Children {
        Children::sized(&names)
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a str;
    type IntoIter = ChildNames<'a>;
    fn into_iter(self) -> ChildNames<'a> {
        self.iter()
    }
}

/// The names of a [`Children`], in the order of the answer.
#[derive(Clone, Debug)]
pub struct ChildNames<'a> {
    children: &'a Children,
    front: usize,
    back: usize,
}

impl<'a> Iterator for ChildNames<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.front == self.back {
            return None;
        }
        let name = self.children.get(self.front);
        self.front += 1;
        name
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl<'a> DoubleEndedIterator for ChildNames<'a> {
    fn next_back(&mut self) -> Option<&'a str> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        self.children.get(self.back)
    }
}

impl ExactSizeIterator for ChildNames<'_> {}
impl FusedIterator for ChildNames<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_names_apart_and_in_order_including_empty_ones() {
        let names = ["b", "", "a-0000000001", "ccc"];
        let children: Children = names.iter().collect();
        assert_eq!(children.len(), 4);
        assert_eq!(children.iter().collect::<Vec<_>>(), names);
        assert_eq!(children, names);
        assert_ne!(children, names[..3]);
        assert_ne!(children, ["b", "", "a-0000000001", "cc"]);
        assert_eq!(
            children.iter().rev().collect::<Vec<_>>(),
            ["ccc", "a-0000000001", "", "b"]
        );
        assert_eq!(children.get(4), None);
        assert!(children.contains("") && !children.contains("a"));
        assert_eq!(Children::from(children.to_vec()), children);
        assert_eq!(
            format!("{children:?}"),
            r#"["b", "", "a-0000000001", "ccc"]"#
        );
        let mut both_ends = children.iter();
        assert_eq!(
            (both_ends.next(), both_ends.next_back()),
            (Some("b"), Some("ccc"))
        );
        assert_eq!(both_ends.len(), 2);
        assert!(Children::new().is_empty());
        let mut sorted = children.clone();
        sorted.sort();
        assert_eq!(sorted, ["", "a-0000000001", "b", "ccc"]);
        assert_eq!(children, names, "a clone changes alone");
    }

    #[test]
    fn insert_and_remove_keep_the_other_names_whole() {
        let mut c = Children::new();
        c.insert(0, "bb");
        c.insert(0, "a");
        c.insert(2, "dddd");
        c.insert(2, "ccc");
        assert_eq!(c, ["a", "bb", "ccc", "dddd"]);
        let before = c.clone();
        c.remove(1);
        assert_eq!(c, ["a", "ccc", "dddd"]);
        assert_eq!(before, ["a", "bb", "ccc", "dddd"], "a clone changes alone");
        c.remove(2);
        c.remove(0);
        assert_eq!(c, ["ccc"]);
        c.remove(0);
        assert!(c.is_empty() && c == Children::new() && c.names.is_none());
        c.push("e");
        assert_eq!(c.get(0), Some("e"));
    }
}
