//! Path validation, as ZooKeeper's `PathUtils.validatePath` does it: on UTF-16 code
//! units, as Java strings hold them, so a character outside the Basic Multilingual Plane
//! (a surrogate pair) is refused, as a real server refuses it.

use crate::ZkError;

/// Validates a znode path. For a sequential create, the server appends the suffix
/// before validating, so a trailing `/` is allowed there (`sequential = true`).
pub fn validate_path(path: &str, sequential: bool) -> Result<(), ZkError> {
    if plainly_valid(path, sequential) {
        return Ok(());
    }
    validate_each_character(path, sequential)
}

/// [`validate_path`]'s full check, character by character, as ZooKeeper's
/// `PathUtils.validatePath`.
fn validate_each_character(path: &str, sequential: bool) -> Result<(), ZkError> {
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

/// Whether `path` is printable ASCII that [`validate_path`] accepts: true only for
/// paths it accepts, so that it may answer for them without looking at each character's
/// code (every path a recipe under test sends, in the simulation's inner loop). False
/// leaves the judgement, and the error's wording, to the full check.
fn plainly_valid(path: &str, sequential: bool) -> bool {
    let b = path.as_bytes();
    if b.first() != Some(&b'/') {
        return false;
    }
    if b.len() == 1 {
        // "/" alone (the server refuses to create it, sequential or not).
        return true;
    }
    // Bytes, not chars: a byte outside printable ASCII sends the path to the full check.
    let mut start = 1;
    for i in 1..=b.len() {
        if let Some(&c) = b.get(i) {
            if !(0x20..0x7f).contains(&c) {
                return false;
            }
            if c != b'/' {
                continue;
            }
        } else if sequential {
            // A sequential create's last name gets the server's digits: any will do.
            return true;
        }
        let name = &b[start..i];
        if name.is_empty() || name == b"." || name == b".." {
            return false;
        }
        start = i + 1;
    }
    true
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

    /// The shortcut answers only for paths the full check accepts, and for every
    /// printable ASCII path it accepts: every string of up to 7 characters over `/`, `.`,
    /// `a` and a space, and those of 4 with a NUL, a control character, a DEL or an
    /// accent inserted.
    #[test]
    fn the_plain_path_shortcut_agrees_with_the_full_check() {
        let alphabet = ['/', '.', 'a', ' '];
        let mut paths = vec![String::new()];
        for len in 1..=7 {
            let longer: Vec<String> = paths
                .iter()
                .filter(|p| p.len() == len - 1)
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            paths.extend(longer);
        }
        let odd: Vec<String> = paths
            .iter()
            .filter(|p| p.len() == 4)
            .flat_map(|p| ["\0", "\x1f", "\x7f", "é"].map(|c| format!("{}{c}{}", &p[..2], &p[2..])))
            .collect();
        paths.extend(odd);
        let mut plain = 0;
        for p in &paths {
            for sequential in [false, true] {
                let full = validate_each_character(p, sequential).is_ok();
                let shortcut = plainly_valid(p, sequential);
                assert!(!shortcut || full, "{p:?} (sequential {sequential})");
                if p.is_ascii() && !p.bytes().any(|b| b < 0x20 || b == 0x7f) {
                    assert_eq!(shortcut, full, "{p:?} (sequential {sequential})");
                }
                plain += usize::from(shortcut);
            }
        }
        // Valid paths were among them: the comparison was not of refusals only.
        assert!(plain > 1000, "{plain}");
    }

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
