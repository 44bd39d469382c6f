//! A one-pass 128-bit hash of a byte buffer, for state digests.
//!
//! Two 64-bit lanes, each folding 16 bytes per round with a 64×64→128-bit multiply (the
//! mixing step of wyhash), each with its own constants. Not keyed and not meant to resist
//! an adversary: the encoded states are not chosen to collide. It replaces two SipHash
//! passes over the same buffer, which cost a quarter of an exhaustive check.

/// Odd 64-bit constants with well-spread bits (wyhash's secrets and two of SplitMix64's).
const K: [u64; 6] = [
    0xa076_1d64_78bd_642f,
    0xe703_7ed1_a0b4_28db,
    0x8ebc_6af0_9c88_c6e3,
    0x5899_65cc_7537_4cc3,
    0x9e37_79b9_7f4a_7c15,
    0xbf58_476d_1ce4_e5b9,
];

/// The high and low halves of the full product, xor-ed.
fn mix(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

pub(crate) fn hash128(buf: &[u8]) -> u128 {
    let mut x = K[4];
    let mut y = K[5];
    let mut rounds = buf.chunks_exact(16);
    for r in &mut rounds {
        let a = word(&r[..8]);
        let b = word(&r[8..]);
        x = mix(a ^ K[0], b ^ x);
        y = mix(b ^ K[2], a ^ y ^ K[3]);
    }
    // The tail, zero-padded; the length (below) tells paddings apart.
    let tail = rounds.remainder();
    if !tail.is_empty() {
        let a = word(&tail[..tail.len().min(8)]);
        let b = word(&tail[tail.len().min(8)..]);
        x = mix(a ^ K[0], b ^ x);
        y = mix(b ^ K[2], a ^ y ^ K[3]);
    }
    let len = buf.len() as u64;
    let x = mix(x ^ len ^ K[1], K[4]);
    let y = mix(y ^ len ^ K[3], K[5]);
    (u128::from(x) << 64) | u128::from(y)
}

#[cfg(test)]
mod tests {
    use super::hash128;
    use std::collections::BTreeSet;

    #[test]
    fn tells_apart_lengths_tails_and_single_bits() {
        let mut seen = BTreeSet::new();
        let mut count = 0;
        for len in 0..40usize {
            let zeros = vec![0u8; len];
            seen.insert(hash128(&zeros));
            count += 1;
            for bit in 0..len * 8 {
                let mut v = zeros.clone();
                v[bit / 8] ^= 1 << (bit % 8);
                seen.insert(hash128(&v));
                count += 1;
            }
        }
        assert_eq!(seen.len(), count);
    }

    #[test]
    fn halves_differ() {
        let h = hash128(b"/zklock/lock");
        assert_ne!(h >> 64, h & u128::from(u64::MAX));
    }
}
