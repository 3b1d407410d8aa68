//! SHA-1 (FIPS 180-4), only for the `Sec-WebSocket-Accept` value of the upgrade.
//!
//! The accept value is a checksum that proves the server read the client's handshake
//! (RFC 6455, section 1.3); it has no security role, so SHA-1's known collisions do not
//! matter here. A few dozen lines keep the core free of a hashing dependency.

/// Length of a SHA-1 digest.
pub(crate) const DIGEST_LEN: usize = 20;

/// An incremental SHA-1 computation.
#[derive(Clone)]
pub(crate) struct Sha1 {
    state: [u32; 5],
    block: [u8; 64],
    /// Bytes buffered in `block`.
    filled: usize,
    /// Total message length in bytes.
    total: u64,
}

impl Sha1 {
    pub(crate) const fn new() -> Sha1 {
        Sha1 {
            state: [
                0x6745_2301,
                0xEFCD_AB89,
                0x98BA_DCFE,
                0x1032_5476,
                0xC3D2_E1F0,
            ],
            block: [0; 64],
            filled: 0,
            total: 0,
        }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.total = self.total.wrapping_add(data.len() as u64);
        while !data.is_empty() {
            let room = &mut self.block[self.filled..];
            let n = room.len().min(data.len());
            let (head, rest) = data.split_at(n);
            room[..n].copy_from_slice(head);
            self.filled += n;
            data = rest;
            if self.filled == 64 {
                let block = self.block;
                self.compress(&block);
                self.filled = 0;
            }
        }
    }

    pub(crate) fn finish(mut self) -> [u8; DIGEST_LEN] {
        let bits = self.total.wrapping_mul(8);
        self.update(&[0x80]);
        while self.filled != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let mut out = [0u8; DIGEST_LEN];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    fn compress(&mut self, block: &[u8; 64]) {
        let mut w = [0u32; 80];
        for (i, chunk) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = self.state;
        for (i, &wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (s, v) in self.state.iter_mut().zip([a, b, c, d, e]) {
            *s = s.wrapping_add(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: [u8; DIGEST_LEN]) -> heapless::String<40> {
        let mut s = heapless::String::new();
        for b in d {
            for n in [b >> 4, b & 15] {
                let _ = s.push(char::from(b"0123456789abcdef"[usize::from(n)]));
            }
        }
        s
    }

    fn sha1(data: &[u8]) -> heapless::String<40> {
        let mut h = Sha1::new();
        h.update(data);
        hex(h.finish())
    }

    /// The test vectors of RFC 3174, section 7.3, and the empty message.
    #[test]
    fn rfc3174_vectors() {
        assert_eq!(sha1(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(sha1(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sha1(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        let mut h = Sha1::new();
        for _ in 0..1_000_000 / 1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(hex(h.finish()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
        let mut h = Sha1::new();
        for _ in 0..10 {
            h.update(b"0123456701234567012345670123456701234567012345670123456701234567");
        }
        assert_eq!(hex(h.finish()), "dea356a2cddd90c7a7ecedc5ebb563934f460452");
    }

    /// Split points do not change the digest (padding at 55, 56 and 64 bytes included).
    #[test]
    fn incremental_equals_one_shot() {
        let data: [u8; 130] = core::array::from_fn(|i| i as u8);
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 130] {
            let whole = sha1(&data[..len]);
            for split in 0..=len {
                let mut h = Sha1::new();
                h.update(&data[..split]);
                h.update(&data[split..len]);
                assert_eq!(hex(h.finish()), whole, "len {len} split {split}");
            }
        }
    }
}
