//! Stateless, allocation-free ZMTP codec: 3.x, and the 1.0 framing of older peers.
//!
//! Every type here parses from a borrowed `&[u8]` and emits into a caller-provided
//! `&mut [u8]`. Parsing never panics, never reads past its input and reports
//! incomplete input as [`Status::Partial`], which is not an error: feed more bytes
//! and call again. Emitting into a buffer that is too small returns
//! [`InsufficientSize`] and writes nothing meaningful.

mod command;
mod frame;
mod greeting;
mod metadata;
mod v1;

pub use command::{Command, MAX_PING_CONTEXT};
pub use frame::{FrameFlags, FrameHeader, MAX_FRAME_HEADER_LEN};
pub use greeting::{Greeting, Mechanism, Version, GREETING_LEN, SIGNATURE_LEN};
pub use metadata::MetadataIter;
pub use metadata::{emit_property, property_len, Metadata, Property};
pub use v1::{V1Header, MAX_V1_HEADER_LEN};

/// Result of parsing input that may be incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status<T> {
    /// The value was parsed in full.
    Complete(T),
    /// More bytes are needed before anything can be decided.
    Partial,
}

impl<T> Status<T> {
    /// The complete value, if any.
    pub fn complete(self) -> Option<T> {
        match self {
            Status::Complete(t) => Some(t),
            Status::Partial => None,
        }
    }
}

/// What is wrong with bytes that cannot be ZMTP.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodecError {
    /// Greeting byte 0 is not `0xFF` or byte 9 lacks bit 0: an unversioned ZMTP 1.0 peer.
    BadSignature,
    /// A frame's flags byte has one of the reserved bits 3..=7 set.
    ReservedFlags(u8),
    /// A command frame has the MORE flag set.
    CommandWithMore,
    /// A frame announces more bytes than the local limit allows (checked before any narrowing).
    FrameTooLarge {
        /// Size announced by the header.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// A command body is empty or its name length runs past the body.
    MalformedCommand,
    /// A known command with a body that does not match its grammar (for example PING without a TTL).
    MalformedCommandBody,
    /// Metadata is truncated, has an empty name or a length overflow.
    InvalidMetadata,
    /// A ZMTP 1.0 frame's length is zero: it leaves no room for the flags byte.
    EmptyV1Frame,
}

impl core::fmt::Display for CodecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CodecError::BadSignature => f.write_str("invalid greeting signature"),
            CodecError::ReservedFlags(b) => write!(f, "reserved frame flag bits set: {b:#04x}"),
            CodecError::CommandWithMore => f.write_str("command frame with MORE flag"),
            CodecError::FrameTooLarge { size, limit } => {
                write!(f, "frame of {size} bytes exceeds limit of {limit}")
            }
            CodecError::MalformedCommand => f.write_str("malformed command frame"),
            CodecError::MalformedCommandBody => f.write_str("malformed command body"),
            CodecError::InvalidMetadata => f.write_str("invalid metadata"),
            CodecError::EmptyV1Frame => f.write_str("ZMTP 1.0 frame of length zero"),
        }
    }
}

/// The output buffer cannot hold what was to be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsufficientSize {
    /// Bytes the output needed in total.
    pub required: usize,
}

impl core::fmt::Display for InsufficientSize {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "output buffer too small: {} bytes required",
            self.required
        )
    }
}

/// Appends to a caller's buffer without ever indexing out of bounds: a write that does not
/// fit is an [`InsufficientSize`] naming the total length that was needed.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8]) -> Writer<'a> {
        Writer { buf, len: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) -> Result<(), InsufficientSize> {
        let end = self.len + bytes.len();
        let dst = self
            .buf
            .get_mut(self.len..end)
            .ok_or(InsufficientSize { required: end })?;
        dst.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Let an emitter write into the rest of the buffer; it returns how much it wrote.
    pub(crate) fn emit(
        &mut self,
        f: impl FnOnce(&mut [u8]) -> Result<usize, InsufficientSize>,
    ) -> Result<(), InsufficientSize> {
        let at = self.len;
        let rest = self.buf.get_mut(at..).unwrap_or_default();
        let room = rest.len();
        let n = f(rest).map_err(|e| InsufficientSize {
            required: at + e.required,
        })?;
        self.len = at + n.min(room);
        Ok(())
    }
}

/// Check that `out` holds at least `required` bytes.
pub(crate) fn ensure(out: &[u8], required: usize) -> Result<(), InsufficientSize> {
    if out.len() < required {
        Err(InsufficientSize { required })
    } else {
        Ok(())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CodecError {}

#[cfg(feature = "std")]
impl std::error::Error for InsufficientSize {}
