//! A fast path in front of [`zklock_recipe::path::validate_path`], which decodes every
//! character and ran on every request. Plain ASCII paths are judged here: the usual ones
//! in one branch-free pass, the rest byte by byte; anything else, and every invalid path,
//! goes to `validate_path` itself, so the verdict and the error text are always exactly
//! its own.

use zklock_recipe::ZkError;
use zklock_recipe::path::validate_path;

pub(super) fn validate(path: &str, sequential: bool) -> Result<(), ZkError> {
    if quickly_valid(path.as_bytes(), sequential) || plainly_valid(path.as_bytes(), sequential) {
        Ok(())
    } else {
        validate_path(path, sequential)
    }
}

/// `validate` for a path whose part before `name_at - 1` (its last '/') is a valid path
/// other than "/", or which is "/" followed by a name (`name_at` 1): then the path is
/// valid exactly when its last name is.
pub(super) fn validate_name(path: &str, name_at: usize, sequential: bool) -> Result<(), ZkError> {
    let name = &path.as_bytes()[name_at..];
    if printable(name) && (sequential || name_ok(name)) {
        Ok(())
    } else {
        validate(path, sequential)
    }
}

/// Whether every byte is printable ASCII, eight at a time.
fn printable(p: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = p.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        // Bytes below 0x20, or at 0x7f and above, as in `quickly_valid`.
        let control = w.wrapping_sub(0x20 * ONES) & !w & HIGH;
        let high = (w.wrapping_add(ONES) | w) & HIGH;
        if (control | high) != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|b| (0x20..0x7f).contains(b))
}

/// True only for paths `validate_path` accepts: "/" followed by printable-ASCII names
/// that are neither empty nor "." nor ".." (a sequential create may end in "/", or in
/// "." or "..", as the suffix follows). False means "ask `validate_path`".
fn plainly_valid(p: &[u8], sequential: bool) -> bool {
    if p.first() != Some(&b'/') {
        return false;
    }
    if p.len() == 1 {
        return true;
    }
    let mut start = 1;
    for (i, &b) in p.iter().enumerate().skip(1) {
        if b == b'/' {
            if !name_ok(&p[start..i]) {
                return false;
            }
            start = i + 1;
        } else if !(0x20..0x7f).contains(&b) {
            return false;
        }
    }
    let last = &p[start..];
    if last.is_empty() {
        return sequential;
    }
    sequential || name_ok(last)
}

/// The common case, eight bytes at a time: "/" then printable ASCII with no "//" and no
/// name starting with "." (and no trailing "/" unless sequential). False means "ask
/// `plainly_valid`", which handles every other path; a false alarm here only costs that.
fn quickly_valid(p: &[u8], sequential: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // High bit of each byte that is zero (exact where it matters: a false alarm can only
    // follow a true zero byte).
    let zeros = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    if p.first() != Some(&b'/') {
        return false;
    }
    if p.len() > 1 && !sequential && p.last() == Some(&b'/') {
        return false;
    }
    let mut slash_before = false;
    let mut chunks = p.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        // Bytes below 0x20, or at 0x7f and above.
        let control = w.wrapping_sub(0x20 * ONES) & !w & HIGH;
        let high = (w.wrapping_add(ONES) | w) & HIGH;
        let slash = zeros(w ^ (b'/' as u64 * ONES));
        let dot = zeros(w ^ (b'.' as u64 * ONES));
        // A slash followed by a slash or a dot, within the chunk or across its start.
        let after_slash = (slash << 8) | u64::from(slash_before) << 7;
        if (control | high) != 0 || after_slash & (slash | dot) != 0 {
            return false;
        }
        slash_before = slash >> 56 != 0;
    }
    for &b in chunks.remainder() {
        if b.wrapping_sub(0x20) >= 0x5f || (slash_before && (b == b'/' || b == b'.')) {
            return false;
        }
        slash_before = b == b'/';
    }
    true
}

fn name_ok(name: &[u8]) -> bool {
    !matches!(name, b"" | b"." | b"..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Long paths too, so that the eight-byte pass meets every byte value at every
        /// position of a chunk and across chunk borders.
        #[test]
        fn fast_paths_agree_with_validate_path(
            path in "/?[/.a~ \\x01\\x1f\\x7f\u{e9}]{0,40}",
            sequential in any::<bool>(),
        ) {
            prop_assert_eq!(validate(&path, sequential), validate_path(&path, sequential));
            if quickly_valid(path.as_bytes(), sequential) {
                prop_assert_eq!(validate_path(&path, sequential), Ok(()));
            }
        }
    }

    /// Every position of a long, valid path, set to every byte that matters.
    #[test]
    fn one_byte_changes_of_a_long_path_agree_with_validate_path() {
        let base = "/zklock/lock/_c_1001-3f-lock-0000000042/x";
        assert!(quickly_valid(base.as_bytes(), false));
        for i in 0..base.len() {
            for b in [b'/', b'.', 0, 0x01, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff] {
                let mut bytes = base.as_bytes().to_vec();
                bytes[i] = b;
                let Ok(path) = String::from_utf8(bytes) else {
                    continue;
                };
                for seq in [false, true] {
                    assert_eq!(validate(&path, seq), validate_path(&path, seq), "{path:?}");
                    if quickly_valid(path.as_bytes(), seq) {
                        assert_eq!(validate_path(&path, seq), Ok(()), "{path:?}");
                    }
                }
            }
        }
    }

    /// Every position of a long name under a valid parent, set to every byte that matters.
    #[test]
    fn one_byte_changes_of_a_long_name_agree_with_validate_path() {
        let base = "/zklock/lock/_c_1001-3f-lock-0000000042";
        let name_at = "/zklock/lock/".len();
        for i in name_at..base.len() {
            for b in [b'/', b'.', 0, 0x01, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xff] {
                let mut bytes = base.as_bytes().to_vec();
                bytes[i] = b;
                let Ok(path) = String::from_utf8(bytes) else {
                    continue;
                };
                if path[name_at..].contains('/') {
                    continue;
                }
                for seq in [false, true] {
                    let want = validate_path(&path, seq);
                    assert_eq!(validate_name(&path, name_at, seq), want, "{path:?}");
                }
            }
        }
    }

    #[test]
    fn agrees_with_validate_path() {
        let names = [
            "", "a", ".", "..", "...", "a.b", "x y", "é", "\u{1}", "\0", "~",
        ];
        let mut paths = vec![String::new(), "a".into(), "//".into()];
        for a in names {
            paths.push(format!("/{a}"));
            paths.push(format!("/{a}/"));
            for b in names {
                paths.push(format!("/{a}/{b}"));
                paths.push(format!("/zk/{a}/{b}/"));
            }
        }
        for p in &paths {
            for seq in [false, true] {
                assert_eq!(
                    validate(p, seq),
                    validate_path(p, seq),
                    "{p:?} sequential={seq}"
                );
                if plainly_valid(p.as_bytes(), seq) {
                    assert_eq!(validate_path(p, seq), Ok(()), "{p:?} sequential={seq}");
                }
                if quickly_valid(p.as_bytes(), seq) {
                    assert_eq!(validate_path(p, seq), Ok(()), "{p:?} sequential={seq}");
                }
                // As `create` calls it: under a valid parent, or "/".
                let Some(i) = p.rfind('/') else { continue };
                if i == 0 || (i >= 2 && validate_path(&p[..i], false).is_ok()) {
                    assert_eq!(
                        validate_name(p, i + 1, seq),
                        validate_path(p, seq),
                        "{p:?} sequential={seq}"
                    );
                }
            }
        }
    }
}
