//! A renaming of sessions, for the symmetric digest (`symmetry`): each session number
//! and the guids that spell it in hex, mapped to a label, and a hasher that renames what
//! passes through it. Its own module, so that the renamings remembered across runs
//! (`remembered`) and the digest that makes them (`symmetry`) both use it and neither
//! the other's.

use super::hash128::hash128;
use std::hash::Hasher;

/// One permutation's renaming of sessions: (session, label, session in hex, label in
/// hex).
pub(crate) struct Renaming {
    pub(super) sessions: Vec<(i64, i64, Hex, Hex)>,
    /// A hash of the pairs of session and label: the renaming's key among renamed trees
    /// remembered (`remembered`).
    pub(super) key: u128,
}

/// A number's lowercase hex digits, as a guid spells a session, kept inline: a renaming
/// holds two for each session, and a `String` each cost an allocation.
#[derive(Clone, Copy)]
pub(super) struct Hex {
    digits: [u8; 16],
    len: u8,
}

impl Hex {
    pub(super) fn new(v: i64) -> Hex {
        let mut v = v as u64;
        let mut digits = [0u8; 16];
        let mut len = 0;
        loop {
            digits[len] = b"0123456789abcdef"[(v & 0xf) as usize];
            len += 1;
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        digits[..len].reverse();
        Hex {
            digits,
            len: len as u8,
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.digits[..usize::from(self.len)]
    }
}

impl Renaming {
    pub(super) fn new(sessions: Vec<(i64, i64, Hex, Hex)>) -> Renaming {
        let mut bytes = Vec::with_capacity(16 * sessions.len());
        for (from, to, ..) in &sessions {
            bytes.extend_from_slice(&from.to_le_bytes());
            bytes.extend_from_slice(&to.to_le_bytes());
        }
        Renaming {
            key: hash128(&bytes),
            sessions,
        }
    }

    pub(super) fn session(&self, s: i64) -> i64 {
        self.sessions
            .iter()
            .find(|(from, ..)| *from == s)
            .map_or(s, |(_, to, ..)| *to)
    }

    /// `bytes` with every guid `_c_<session hex>-` renamed, appended to `out`.
    pub(super) fn rename_text(&self, bytes: &[u8], out: &mut Vec<u8>) {
        out.reserve(bytes.len() + 8);
        let mut i = 0;
        while let Some(at) = find_guid(&bytes[i..]) {
            let start = i + at + 3;
            out.extend_from_slice(&bytes[i..start]);
            let end = bytes[start..]
                .iter()
                .position(|&b| !b.is_ascii_hexdigit())
                .map_or(bytes.len(), |p| start + p);
            let run = &bytes[start..end];
            if bytes.get(end) == Some(&b'-')
                && let Some((.., to)) = self
                    .sessions
                    .iter()
                    .find(|(_, _, from, _)| from.as_bytes() == run)
            {
                out.extend_from_slice(to.as_bytes());
                i = end;
            } else {
                i = start;
            }
        }
        out.extend_from_slice(&bytes[i..]);
    }
}

/// Where the first `_c_` (a guid's start) is in `bytes`.
pub(super) fn find_guid(bytes: &[u8]) -> Option<usize> {
    bytes.windows(3).position(|w| w == b"_c_")
}

/// A hasher that renames sessions (every `i64` that is one) and guids (in every byte
/// string) on their way to `inner`.
pub(super) struct Renamed<'a, H: Hasher> {
    pub(super) inner: &'a mut H,
    pub(super) r: &'a Renaming,
    pub(super) scratch: Vec<u8>,
    /// Whether anything that may name a session went by (then the encoding depends on
    /// the renaming).
    pub(super) hit: bool,
}

impl<H: Hasher> Hasher for Renamed<'_, H> {
    fn write(&mut self, bytes: &[u8]) {
        // Most strings name no guid: passed on as they are.
        if find_guid(bytes).is_none() {
            self.inner.write(bytes);
            return;
        }
        self.hit = true;
        self.scratch.clear();
        self.r.rename_text(bytes, &mut self.scratch);
        self.inner.write(&self.scratch);
    }
    fn write_u8(&mut self, v: u8) {
        self.inner.write_u8(v);
    }
    fn write_u16(&mut self, v: u16) {
        self.inner.write_u16(v);
    }
    fn write_u32(&mut self, v: u32) {
        self.inner.write_u32(v);
    }
    fn write_u64(&mut self, v: u64) {
        self.inner.write_u64(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.inner.write_usize(v);
    }
    fn write_i64(&mut self, v: i64) {
        let to = self.r.session(v);
        self.hit |= to != v;
        self.inner.write_i64(to);
    }
    fn finish(&self) -> u64 {
        unreachable!("an encoder, never asked for a hash")
    }
}

#[cfg(test)]
mod tests {
    use super::Hex;

    /// A guid spells its session as `format!("{:x}")` does; a renaming must match it.
    #[test]
    fn hex_spells_a_number_as_format_does() {
        for v in [
            0,
            1,
            0xf,
            0x10,
            0x5000_0000,
            0x7fff_ffff_ffff_ffff,
            -1,
            i64::MIN,
        ] {
            let h = Hex::new(v);
            assert_eq!(h.as_bytes(), format!("{:x}", v as u64).as_bytes(), "{v}");
        }
    }
}
