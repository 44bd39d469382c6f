//! Path validation, as ZooKeeper's `PathUtils.validatePath` does it: on UTF-16 code
//! units, as Java strings hold them, so a character outside the Basic Multilingual Plane
//! (a surrogate pair) is refused, as a real server refuses it.

use crate::ZkError;

/// Validates a znode path. For a sequential create, the server appends the suffix
/// before validating, so a trailing `/` is allowed there (`sequential = true`).
pub fn validate_path(path: &str, sequential: bool) -> Result<(), ZkError> {
    let bad = |why: &str| {
        Err(ZkError::BadArguments(format!(
            "invalid path {path:?}: {why}"
        )))
    };
    if path.is_empty() {
        return bad("path length must be > 0");
    }
    if !path.starts_with('/') {
        return bad("path must start with / character");
    }
    if path.len() == 1 {
        // "/" alone is a valid path (the server refuses to create it, sequential or not).
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return bad("path must not end with / character");
    }
    let mut last = '/';
    let mut component_start = 1;
    for (i, c) in path.char_indices().skip(1) {
        if c == '\0' {
            return bad(&format!("null character not allowed @{i}"));
        }
        if c == '/' {
            if last == '/' {
                return bad(&format!("empty node name specified @{i}"));
            }
            let component = &path[component_start..i];
            if component == "." || component == ".." {
                return bad(&format!("relative paths not allowed @{i}"));
            }
            component_start = i + 1;
        }
        let code = c as u32;
        if (code > 0x00 && code <= 0x1f)
            || (0x7f..=0x9f).contains(&code)
            || (0xd800..=0xf8ff).contains(&code)
            || (0xfff0..=0xffff).contains(&code)
            // ZooKeeper judges UTF-16 code units: a character outside the Basic
            // Multilingual Plane is a surrogate pair, each half in 0xd800..=0xdfff.
            || code > 0xffff
        {
            return bad(&format!("invalid character @{i}"));
        }
        last = c;
    }
    // The last component; a sequential create appends digits, making "." and ".."
    // legal names there.
    let component = &path[component_start..];
    if !sequential && (component == "." || component == "..") {
        return bad("relative paths not allowed");
    }
    Ok(())
}

/// The parent of a valid path ("/" for a top-level node). `None` for "/".
pub fn parent(path: &str) -> Option<&str> {
    split(path).map(|(parent, _)| parent)
}

/// The parent of `path` and its last component, from one search; `None` for "/" (and for
/// a string without '/').
pub fn split(path: &str) -> Option<(&str, &str)> {
    if path == "/" {
        return None;
    }
    // A plain byte loop: names are short, and `rfind`'s word-wise search cost more than
    // it saved on the simulator's hot path.
    match path.bytes().rposition(|b| b == b'/') {
        Some(0) => Some(("/", &path[1..])),
        Some(i) => Some((&path[..i], &path[i + 1..])),
        None => None,
    }
}

/// The last component of a path.
pub fn basename(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    // Built by hand: on the recipe's hot path, `format!` cost ten times as much.
    let parent = if parent == "/" { "" } else { parent };
    let mut path = String::with_capacity(parent.len() + 1 + child.len());
    path.push_str(parent);
    path.push('/');
    path.push_str(child);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_zookeeper_valid_paths() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/a/b-c_d.e",
            "/zk/lock/_c_x-lock-",
            "/a/..b",
        ] {
            assert_eq!(validate_path(p, false), Ok(()), "{p}");
        }
        assert_eq!(validate_path("/locks/", true), Ok(()));
    }

    #[test]
    fn rejects_what_zookeeper_rejects() {
        for p in [
            "",
            "a",
            "/a/",
            "//a",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/a/.",
            "/a/..",
            "/a\0b",
            "/a\u{1}b",
            "/a\u{7f}b",
            "/a\u{fff5}",
            "/a\u{1F600}",
            "/\u{10000}",
            "/\u{10FFFF}/b",
        ] {
            assert!(
                matches!(validate_path(p, false), Err(ZkError::BadArguments(_))),
                "{p:?} should be rejected"
            );
        }
    }

    /// ZooKeeper's server refuses U+1F600 (a surrogate pair in Java's UTF-16); the
    /// check once accepted it, as it accepted every character past U+FFFF.
    #[test]
    fn non_bmp_characters_are_refused_as_zookeeper_refuses_surrogate_pairs() {
        for p in ["/a\u{1F600}", "/\u{10000}", "/x/\u{10FFFF}"] {
            for sequential in [false, true] {
                assert!(
                    matches!(validate_path(p, sequential), Err(ZkError::BadArguments(_))),
                    "{p:?}"
                );
            }
        }
        assert_eq!(validate_path("/a\u{FFEF}", false), Ok(()));
    }

    #[test]
    fn parent_and_basename() {
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
        assert_eq!(basename("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/a"), Some(("/", "a")));
        assert_eq!(split("/"), None);
    }
}
