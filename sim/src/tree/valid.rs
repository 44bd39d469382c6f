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

/// The common case in one pass without branches per byte: "/" then printable ASCII with
/// no "//" and no name starting with "." (and no trailing "/" unless sequential). False
/// means "ask `plainly_valid`", which handles every other path.
fn quickly_valid(p: &[u8], sequential: bool) -> bool {
    let Some((&b'/', rest)) = p.split_first() else {
        return false;
    };
    let printable = p
        .iter()
        .fold(true, |ok, &b| ok & (b.wrapping_sub(0x20) < 0x5f));
    let awkward = p.windows(2).fold(false, |bad, w| {
        bad | ((w[0] == b'/') & ((w[1] == b'/') | (w[1] == b'.')))
    });
    printable && !awkward && (rest.is_empty() || sequential || p.last() != Some(&b'/'))
}

fn name_ok(name: &[u8]) -> bool {
    !matches!(name, b"" | b"." | b"..")
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }
        }
    }
}
