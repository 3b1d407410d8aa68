use super::{ensure, CodecError, InsufficientSize, Status, Writer};

/// Longest frame header: flags byte plus an 8-byte size.
pub const MAX_FRAME_HEADER_LEN: usize = 9;

const FLAG_MORE: u8 = 0x01;
const FLAG_LONG: u8 = 0x02;
const FLAG_COMMAND: u8 = 0x04;
const FLAG_RESERVED: u8 = !(FLAG_MORE | FLAG_LONG | FLAG_COMMAND);

/// The meaningful flag bits of a frame (the LONG bit is derived from the size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct FrameFlags {
    /// More frames of the same message follow.
    pub more: bool,
    /// The frame is a command, not message data.
    pub command: bool,
}

/// A decoded frame header: flags and body size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameHeader {
    /// MORE and COMMAND flags.
    pub flags: FrameFlags,
    /// Body length in bytes.
    pub size: u64,
}

impl FrameHeader {
    /// A data frame header.
    pub fn data(size: usize, more: bool) -> FrameHeader {
        FrameHeader {
            flags: FrameFlags {
                more,
                command: false,
            },
            size: size as u64,
        }
    }

    /// The length of a data frame header for `size` bytes: short (2) up to 255 bytes,
    /// long (9) above, as [`emit`](Self::emit) writes it.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn data_len(size: usize) -> usize {
        if size > 255 {
            9
        } else {
            2
        }
    }

    /// Write the header of a data frame of `size` bytes into `out`, which is
    /// [`data_len`](Self::data_len) bytes long.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn put_data(out: &mut [u8], size: usize, more: bool) {
        let more = if more { FLAG_MORE } else { 0 };
        match out {
            [flags, short] => {
                *flags = more;
                *short = size as u8;
            }
            [flags, long @ ..] => {
                *flags = more | FLAG_LONG;
                long.copy_from_slice(&(size as u64).to_be_bytes());
            }
            [] => {}
        }
    }

    /// A command frame header.
    pub fn command(size: usize) -> FrameHeader {
        FrameHeader {
            flags: FrameFlags {
                more: false,
                command: true,
            },
            size: size as u64,
        }
    }

    /// Parse a frame header. On success returns the header and its encoded length (2 or 9).
    ///
    /// `max_size` is checked against the announced size as a `u64`, before anything is
    /// narrowed to `usize`; a size that does not fit `usize` is also rejected. The LONG
    /// flag is accepted for any size, as libzmq's decoder does; reserved bits and a
    /// command with MORE are rejected.
    pub fn parse(input: &[u8], max_size: u64) -> Result<Status<(FrameHeader, usize)>, CodecError> {
        let Some(&flags) = input.first() else {
            return Ok(Status::Partial);
        };
        if flags & FLAG_RESERVED != 0 {
            return Err(CodecError::ReservedFlags(flags));
        }
        let more = flags & FLAG_MORE != 0;
        let command = flags & FLAG_COMMAND != 0;
        if command && more {
            return Err(CodecError::CommandWithMore);
        }
        let (size, header_len) = if flags & FLAG_LONG != 0 {
            let Some(bytes) = input.get(1..9) else {
                return Ok(Status::Partial);
            };
            let mut be = [0u8; 8];
            be.copy_from_slice(bytes);
            (u64::from_be_bytes(be), 9)
        } else {
            let Some(&b) = input.get(1) else {
                return Ok(Status::Partial);
            };
            (u64::from(b), 2)
        };
        let limit = max_size.min(usize::MAX as u64 - MAX_FRAME_HEADER_LEN as u64);
        if size > limit {
            return Err(CodecError::FrameTooLarge { size, limit });
        }
        Ok(Status::Complete((
            FrameHeader {
                flags: FrameFlags { more, command },
                size,
            },
            header_len,
        )))
    }

    /// Encoded length of this header: 2 for bodies up to 255 bytes, else 9.
    pub fn encoded_len(&self) -> usize {
        if self.size > 255 {
            9
        } else {
            2
        }
    }

    /// Emit the header (LONG iff the size exceeds 255, as libzmq does).
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        ensure(out, self.encoded_len())?;
        let mut flags = 0;
        if self.flags.more {
            flags |= FLAG_MORE;
        }
        if self.flags.command {
            flags |= FLAG_COMMAND;
        }
        let mut w = Writer::new(out);
        if self.encoded_len() == 9 {
            w.put(&[flags | FLAG_LONG])?;
            w.put(&self.size.to_be_bytes())?;
        } else {
            w.put(&[flags, self.size as u8])?;
        }
        Ok(w.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long() {
        let mut b = [0u8; 9];
        assert_eq!(FrameHeader::data(5, true).emit(&mut b), Ok(2));
        assert_eq!(&b[..2], &[0x01, 0x05]);
        assert_eq!(FrameHeader::data(256, false).emit(&mut b), Ok(9));
        assert_eq!(&b, &[0x02, 0, 0, 0, 0, 0, 0, 1, 0]);
        // LONG accepted for a small size, as libzmq does.
        assert_eq!(
            FrameHeader::parse(&[0x02, 0, 0, 0, 0, 0, 0, 0, 3], u64::MAX),
            Ok(Status::Complete((FrameHeader::data(3, false), 9)))
        );
    }

    #[test]
    fn huge_size_rejected_before_narrowing() {
        let hdr = [0x02, 0x40, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            FrameHeader::parse(&hdr, 1 << 20),
            Err(CodecError::FrameTooLarge {
                size: 1 << 62,
                limit: 1 << 20
            })
        );
        // With no limit, a size that cannot be addressed is still refused.
        let hdr = [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(
            FrameHeader::parse(&hdr, u64::MAX),
            Err(CodecError::FrameTooLarge { size: u64::MAX, .. })
        ));
        assert_eq!(
            FrameHeader::parse(&[0x00, 11], 10),
            Err(CodecError::FrameTooLarge {
                size: 11,
                limit: 10
            })
        );
    }

    #[test]
    fn bad_flags() {
        assert_eq!(
            FrameHeader::parse(&[0x08, 0], u64::MAX),
            Err(CodecError::ReservedFlags(0x08))
        );
        assert_eq!(
            FrameHeader::parse(&[0x05, 0], u64::MAX),
            Err(CodecError::CommandWithMore)
        );
        assert_eq!(
            FrameHeader::parse(&[0x02, 0, 0], u64::MAX),
            Ok(Status::Partial)
        );
    }
}
