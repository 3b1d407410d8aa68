//! Base64 encoding (RFC 4648, section 4, with padding), only what the upgrade needs: the
//! client's 16-byte key (24 characters) and the 20-byte accept digest (28 characters).

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The encoded length of `n` bytes.
pub(crate) const fn encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// Encode `N` bytes into `M` characters; `M` must be [`encoded_len`]`(N)` (checked at
/// compile time by the callers' constants, and by a debug assertion).
pub(crate) fn encode<const N: usize, const M: usize>(input: &[u8; N]) -> [u8; M] {
    debug_assert_eq!(M, encoded_len(N));
    let mut out = [b'='; M];
    for (chunk, dst) in input.chunks(3).zip(out.chunks_mut(4)) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        // One character per input byte plus one; the rest stays padding.
        for (i, c) in dst.iter_mut().enumerate().take(chunk.len() + 1) {
            *c = ALPHABET[((v >> (18 - 6 * i)) & 63) as usize];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vectors of RFC 4648, section 10.
    #[test]
    fn rfc4648_vectors() {
        assert_eq!(&encode::<0, 0>(&[]), b"");
        assert_eq!(&encode::<1, 4>(b"f"), b"Zg==");
        assert_eq!(&encode::<2, 4>(b"fo"), b"Zm8=");
        assert_eq!(&encode::<3, 4>(b"foo"), b"Zm9v");
        assert_eq!(&encode::<4, 8>(b"foob"), b"Zm9vYg==");
        assert_eq!(&encode::<5, 8>(b"fooba"), b"Zm9vYmE=");
        assert_eq!(&encode::<6, 8>(b"foobar"), b"Zm9vYmFy");
        assert_eq!(encoded_len(16), 24);
        assert_eq!(encoded_len(20), 28);
    }

    #[test]
    fn every_sextet() {
        // 0x00 0x10 0x83 ... walks all 64 characters.
        let bytes: [u8; 48] = core::array::from_fn(|i| {
            let v = (i / 3 * 4) as u32;
            let word = v << 18 | (v + 1) << 12 | (v + 2) << 6 | (v + 3);
            (word >> (16 - 8 * (i % 3))) as u8
        });
        assert_eq!(&encode::<48, 64>(&bytes), ALPHABET);
    }
}
