//! ZMTP 1.0 framing (RFC 13), for peers older than ZMTP 3.0.
//!
//! A frame is a length, then a flags byte, then the body. The length counts the flags byte
//! as well as the body: one byte when below 255, otherwise `0xFF` and a big-endian u64.
//! Only bit 0 of the flags (MORE) means anything; libzmq ignores the other bits and so do
//! we. There are no commands. A length of zero (no room even for the flags) is invalid.
//!
//! ZMTP 2.0 (RFC 15) frames like 3.0, so it needs nothing here: see
//! [`FrameHeader`](super::FrameHeader).

use super::{CodecError, InsufficientSize, Status, Writer};

/// Longest ZMTP 1.0 frame header: `0xFF`, an 8-byte length, and the flags byte.
pub const MAX_V1_HEADER_LEN: usize = 10;

/// A decoded ZMTP 1.0 frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct V1Header {
    /// More frames of the same message follow.
    pub more: bool,
    /// Body length in bytes (the wire's length minus the flags byte).
    pub size: u64,
}

impl V1Header {
    /// A header for a body of `size` bytes.
    pub fn new(size: usize, more: bool) -> V1Header {
        V1Header {
            more,
            size: size as u64,
        }
    }

    /// Parse a header from the front of `input`: the header and its encoded length, once
    /// complete. A body over `limit` bytes is refused before any of it is buffered.
    pub fn parse(input: &[u8], limit: u64) -> Result<Status<(V1Header, usize)>, CodecError> {
        let Some(&first) = input.first() else {
            return Ok(Status::Partial);
        };
        let (length, at) = if first < 0xFF {
            (u64::from(first), 1)
        } else {
            let Some(long) = input.get(1..9) else {
                return Ok(Status::Partial);
            };
            let mut be = [0u8; 8];
            be.copy_from_slice(long);
            (u64::from_be_bytes(be), 9)
        };
        // The length covers the flags byte: zero leaves no room for it.
        let Some(size) = length.checked_sub(1) else {
            return Err(CodecError::EmptyV1Frame);
        };
        // Bounded so that `header + size` always fits in a usize.
        let limit = limit.min(usize::MAX as u64 - MAX_V1_HEADER_LEN as u64);
        if size > limit {
            return Err(CodecError::FrameTooLarge { size, limit });
        }
        let Some(&flags) = input.get(at) else {
            return Ok(Status::Partial);
        };
        Ok(Status::Complete((
            V1Header {
                more: flags & 0x01 != 0,
                size,
            },
            at + 1,
        )))
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub fn encoded_len(&self) -> usize {
        if self.size < 254 {
            2
        } else {
            MAX_V1_HEADER_LEN
        }
    }

    /// Write the header into `out`; returns its length.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        let flags = u8::from(self.more);
        let mut w = Writer::new(out);
        let length = self.size.saturating_add(1);
        if length < 0xFF {
            w.put(&[length as u8, flags])?;
        } else {
            w.put(&[0xFF])?;
            w.put(&length.to_be_bytes())?;
            w.put(&[flags])?;
        }
        Ok(w.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(h: V1Header) -> ([u8; MAX_V1_HEADER_LEN], usize) {
        let mut out = [0u8; MAX_V1_HEADER_LEN];
        let n = h.emit(&mut out).unwrap();
        assert_eq!(n, h.encoded_len());
        (out, n)
    }

    #[test]
    fn short_and_long_forms_round_trip() {
        // `06 00 'world'`: the bytes libzmq sends (notes 9.6).
        let (out, n) = emitted(V1Header::new(5, false));
        assert_eq!(&out[..n], &[0x06, 0x00]);
        for (size, more) in [
            (0, true),
            (253, false),
            (254, true),
            (255, false),
            (70_000, true),
        ] {
            let h = V1Header::new(size, more);
            let (out, n) = emitted(h);
            assert_eq!(
                V1Header::parse(&out[..n], u64::MAX),
                Ok(Status::Complete((h, n)))
            );
            for cut in 0..n {
                assert_eq!(V1Header::parse(&out[..cut], u64::MAX), Ok(Status::Partial));
            }
        }
        // 254 body bytes make a length of 255, which needs the long form.
        assert_eq!(emitted(V1Header::new(254, false)).0[..2], [0xFF, 0]);
    }

    #[test]
    fn other_flag_bits_are_ignored_and_zero_length_refused() {
        assert_eq!(
            V1Header::parse(&[0x01, 0x7F], u64::MAX),
            Ok(Status::Complete((V1Header::new(0, true), 2)))
        );
        // libzmq's opening bytes read as a long-form header of an empty frame.
        let opening = [0xFF, 0, 0, 0, 0, 0, 0, 0, 3, 0x7F];
        assert_eq!(
            V1Header::parse(&opening, u64::MAX),
            Ok(Status::Complete((V1Header::new(2, true), 10)))
        );
        assert_eq!(
            V1Header::parse(&[0x00], u64::MAX),
            Err(CodecError::EmptyV1Frame)
        );
        assert_eq!(
            V1Header::parse(&[0xFF, 0, 0, 0, 0, 0, 0, 0, 0], u64::MAX),
            Err(CodecError::EmptyV1Frame)
        );
    }

    #[test]
    fn sizes_over_the_limit_are_refused_before_the_flags() {
        assert_eq!(
            V1Header::parse(&[0x0B], 9),
            Err(CodecError::FrameTooLarge { size: 10, limit: 9 })
        );
        let huge = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(
            V1Header::parse(&huge, u64::MAX),
            Err(CodecError::FrameTooLarge { .. })
        ));
    }
}
