//! ZWS 2.0 (RFC 45): ZMTP over WebSocket, the building blocks of `ws://` and `wss://`.
//!
//! Like [`codec`](crate::codec), everything here is stateless and sans-IO: parsers read a
//! borrowed prefix of the stream and answer [`Status::Partial`] until enough has arrived;
//! emitters write into the caller's buffer or return [`InsufficientSize`]. Nothing
//! allocates, reads a clock or draws randomness: the client's key nonce and every mask key
//! are arguments. (`wss://` is the same bytes inside TLS, which is the driver's business.)
//!
//! # A ZWS connection
//! 1. **Upgrade.** The client writes [`ClientHandshake::emit_request`] for a [`Target`]
//!    and reads the answer with [`ClientHandshake::parse_response`]. The server reads the
//!    request with [`ServerHandshake::parse_request`], which chooses the [`Protocol`], and
//!    writes [`UpgradeRequest::emit_response`]. Both parsers say how many bytes the HTTP
//!    head took: what follows is already WebSocket.
//! 2. **No ZMTP greeting.** With `ZWS2.0/NULL`, `/PLAIN` or `/CURVE` the mechanism's
//!    commands (READY, HELLO, ...) come first, each a command frame. With bare `ZWS2.0`
//!    ([`Protocol::is_bare`]) there is no mechanism: each side's first frame is its routing
//!    id, and there is no READY and no socket-type check. (A web browser can offer only
//!    bare `ZWS2.0`: its WebSocket API takes HTTP tokens, and `/` is not one.)
//! 3. **Frames.** One ZMTP frame is one WebSocket binary message whose payload is a flags
//!    byte (bit 0 MORE, bit 1 COMMAND) and the body: [`emit_frame`], [`emit_command`],
//!    [`emit_frame_head`] (for vectored writes); [`Decoder::decode`] reads one frame at a
//!    time. A client masks every frame it sends with a fresh key it passes in; a server
//!    masks nothing.
//! 4. **Control.** Answer [`Received::Ping`] with an empty [`emit_pong`]; answer
//!    [`Received::Close`] by echoing its payload with [`emit_close`], then end the
//!    connection. Heartbeats are [`emit_ping`]s with an empty payload (libzmq's
//!    `ZMQ_HEARTBEAT_IVL` sends these over ws, not ZMTP PING).
//!
//! # libzmq 4.3.5, and where we differ
//! Kept, for interoperability: the request as libzmq writes it (header order, `Host`
//! without the port, the path from the last `/` of the address: [`Target::from_address`]);
//! the protocol lists it offers (`ZWS2.0/NULL,ZWS2.0` for NULL, only `ZWS2.0/PLAIN` or
//! `ZWS2.0/CURVE` otherwise, CURVE being its extension of RFC 45); a server that ignores
//! the path, `Host` and `Sec-WebSocket-Version` and takes any non-empty key; the first
//! acceptable protocol of the client's list; the response's header order; pings answered
//! with an empty pong; close payloads echoed; limits of 1024 bytes for a header name and
//! 2048 for a value; header names, `Upgrade` and `Connection` compared case-insensitively
//! and protocol names exactly.
//!
//! Different, on purpose:
//! - the client **verifies `Sec-WebSocket-Accept`** (libzmq takes any value);
//! - a NULL server **prefers `ZWS2.0/NULL` over bare `ZWS2.0`** wherever both are offered
//!   (a libzmq client with heartbeats aborts on bare `ZWS2.0`; libzmq's server, offered
//!   RFC 45's example `ZWS2.0,ZWS2.0/NULL`, picks bare);
//! - the client accepts any `Connection` list with `upgrade` in it (libzmq wants exactly
//!   `Upgrade`) and any reason phrase after `101`, and refuses a response that names
//!   extensions or names the protocol twice;
//! - the whole head is bounded ([`MAX_HEAD_LEN`]); list elements and values are trimmed
//!   of spaces and tabs on both sides (libzmq strips leading spaces only); a second
//!   `Sec-WebSocket-Key` is refused;
//! - frames: reserved ZWS flag bits and a command with MORE are refused, as the ZMTP
//!   codec refuses them (libzmq ignores the bits); bad frames are typed errors
//!   ([`FrameError`]) where libzmq's engine stalls the connection; undefined opcodes and
//!   RSV bits are refused, as RFC 6455 requires;
//! - a server refuses a request with a typed error and writes nothing; [`REJECTION`] is
//!   the `400` RFC 6455 asks for, if the caller wants to send it (libzmq just closes).
//!
//! Refused like libzmq does: fragmented messages and continuation frames (see
//! [`Decoder`]), text frames, empty binary frames, a mask bit that does not fit the role,
//! bodies over the caller's limit, HTTP/1.0, a method other than `GET`.

mod base64;
mod frame;
mod http;
mod sha1;
#[cfg(feature = "alloc")]
mod stream;
mod upgrade;

pub use frame::{
    apply_mask, command_len, control_len, emit_close, emit_command, emit_frame, emit_frame_head,
    emit_ping, emit_pong, frame_head_len, frame_len, Decoder, Header, Opcode, Received, Role,
    MAX_CONTROL_PAYLOAD, MAX_HEADER_LEN,
};
pub use http::{MAX_HEAD_LEN, MAX_NAME_LEN, MAX_VALUE_LEN};
#[cfg(feature = "alloc")]
pub use stream::WsSide;
#[cfg(feature = "alloc")]
pub(crate) use stream::{splitmix64, Zws};
pub use upgrade::{
    emit_response, AcceptKey, ClientHandshake, Protocol, ServerHandshake, Target, UpgradeRequest,
    ACCEPT_LEN, KEY_LEN, REJECTION,
};

#[cfg(doc)]
use crate::codec::{InsufficientSize, Status};

/// Why an HTTP upgrade cannot proceed. Every error is final: close the stream.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandshakeError {
    /// The head did not end within [`MAX_HEAD_LEN`] bytes.
    HeadTooLarge,
    /// A header name is longer than [`MAX_NAME_LEN`] bytes.
    NameTooLong,
    /// A header value is longer than [`MAX_VALUE_LEN`] bytes.
    ValueTooLong,
    /// Not HTTP: a line without CRLF, a field without a colon or with a bad name, a
    /// control character, a request line without a target.
    Malformed,
    /// The request's method is not `GET`.
    NotGet,
    /// The request's version is not exactly `HTTP/1.1`.
    BadVersion,
    /// The response's status line is not `HTTP/1.1 <3 digits>[ <reason>]`.
    BadStatusLine,
    /// The response's status is not `101`.
    UnexpectedStatus(u16),
    /// No `Upgrade: websocket`.
    MissingUpgrade,
    /// No `Connection` header with the `upgrade` token.
    MissingConnectionUpgrade,
    /// The request has no (non-empty) `Sec-WebSocket-Key`.
    MissingKey,
    /// A header that must appear once appears twice.
    DuplicateHeader(&'static str),
    /// The client offered no protocol this server's mechanism accepts.
    NoProtocol,
    /// The response names no protocol.
    MissingProtocol,
    /// The response names a protocol we did not offer.
    UnofferedProtocol,
    /// The response has no `Sec-WebSocket-Accept`.
    MissingAccept,
    /// The response's `Sec-WebSocket-Accept` is not the one of our key.
    BadAccept,
    /// The response names a WebSocket extension (we offered none).
    UnexpectedExtension,
    /// ZWS runs only NULL, PLAIN and CURVE.
    UnsupportedMechanism,
    /// A host or path that cannot go into a request (see [`Target::new`]).
    InvalidTarget,
}

impl core::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            HandshakeError::HeadTooLarge => "HTTP head too large",
            HandshakeError::NameTooLong => "HTTP header name too long",
            HandshakeError::ValueTooLong => "HTTP header value too long",
            HandshakeError::Malformed => "malformed HTTP head",
            HandshakeError::NotGet => "upgrade request method is not GET",
            HandshakeError::BadVersion => "upgrade request is not HTTP/1.1",
            HandshakeError::BadStatusLine => "malformed HTTP status line",
            HandshakeError::UnexpectedStatus(code) => {
                return write!(f, "HTTP status {code} instead of 101")
            }
            HandshakeError::MissingUpgrade => "no Upgrade: websocket",
            HandshakeError::MissingConnectionUpgrade => "no Connection: upgrade",
            HandshakeError::MissingKey => "no Sec-WebSocket-Key",
            HandshakeError::DuplicateHeader(name) => return write!(f, "duplicate {name} header"),
            HandshakeError::NoProtocol => "no acceptable ZWS protocol offered",
            HandshakeError::MissingProtocol => "no Sec-WebSocket-Protocol in the response",
            HandshakeError::UnofferedProtocol => "the server chose a protocol we did not offer",
            HandshakeError::MissingAccept => "no Sec-WebSocket-Accept",
            HandshakeError::BadAccept => "wrong Sec-WebSocket-Accept",
            HandshakeError::UnexpectedExtension => "the server named a WebSocket extension",
            HandshakeError::UnsupportedMechanism => "ZWS runs only NULL, PLAIN and CURVE",
            HandshakeError::InvalidTarget => "invalid WebSocket host or path",
        })
    }
}

/// What is wrong with a WebSocket frame for ZWS. Every error is final: close the stream.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameError {
    /// RSV1-3 set (the bits, in place): no extension was negotiated.
    ReservedBits(u8),
    /// An opcode RFC 6455 does not define.
    UnknownOpcode(u8),
    /// A text frame: ZWS is binary.
    Text,
    /// A data frame without FIN: fragmentation is not supported (see [`Decoder`]).
    Fragmented,
    /// A continuation frame: fragmentation is not supported.
    Continuation,
    /// A control frame without FIN.
    FragmentedControl,
    /// A control frame with more than 125 bytes of payload.
    ControlTooLong,
    /// A 64-bit length with its most significant bit set.
    BadLength,
    /// A server received an unmasked frame.
    Unmasked,
    /// A client received a masked frame.
    Masked,
    /// A binary frame without even the flags byte.
    EmptyBinary,
    /// The flags byte has reserved bits (2-7) set (the unmasked byte).
    ReservedFlags(u8),
    /// A command frame with MORE.
    CommandWithMore,
    /// A body larger than the limit (checked before anything is narrowed).
    TooLarge {
        /// The body size announced (payload minus the flags byte).
        size: u64,
        /// The limit in force.
        limit: u64,
    },
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FrameError::ReservedBits(b) => write!(f, "reserved WebSocket bits set: {b:#04x}"),
            FrameError::UnknownOpcode(op) => write!(f, "undefined WebSocket opcode {op:#x}"),
            FrameError::Text => f.write_str("WebSocket text frame"),
            FrameError::Fragmented => f.write_str("fragmented WebSocket message"),
            FrameError::Continuation => f.write_str("WebSocket continuation frame"),
            FrameError::FragmentedControl => f.write_str("fragmented WebSocket control frame"),
            FrameError::ControlTooLong => f.write_str("WebSocket control frame over 125 bytes"),
            FrameError::BadLength => f.write_str("WebSocket length with its top bit set"),
            FrameError::Unmasked => f.write_str("unmasked frame from a WebSocket client"),
            FrameError::Masked => f.write_str("masked frame from a WebSocket server"),
            FrameError::EmptyBinary => f.write_str("empty ZWS frame"),
            FrameError::ReservedFlags(b) => write!(f, "reserved ZWS flag bits set: {b:#04x}"),
            FrameError::CommandWithMore => f.write_str("ZWS command frame with MORE"),
            FrameError::TooLarge { size, limit } => {
                write!(f, "ZWS frame of {size} bytes exceeds limit of {limit}")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for HandshakeError {}

#[cfg(feature = "std")]
impl std::error::Error for FrameError {}
