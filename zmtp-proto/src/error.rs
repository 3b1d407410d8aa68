//! The connection's error types: [`Error`] (fatal, sticky), the reasons inside it, and
//! why an outgoing frame could not be encoded.

use crate::codec::{CodecError, InsufficientSize, Mechanism};
use crate::socket_type::SocketType;

/// The reason text of an ERROR command the peer sent, cut to its first
/// [`MAX_REASON_LEN`] bytes so that [`Error`] stays small (libzmq sends `"400"` or `"500"`).
pub type Reason = heapless::Vec<u8, MAX_REASON_LEN>;

/// How much of a peer's ERROR reason is kept (the wire allows 255 bytes).
pub const MAX_REASON_LEN: usize = 64;

/// A fatal connection error. Once a [`Connection`](crate::Connection) returns one, it is
/// sticky: every later call that can fail returns the same error and nothing more is
/// transmitted. The driver closes the stream.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The peer sent bytes that are not valid ZMTP.
    Codec(CodecError),
    /// The peer speaks ZMTP 1.0 or 2.0 (greeting major version below 3).
    UnsupportedVersion {
        /// The peer's major version.
        major: u8,
    },
    /// The peer's security mechanism differs from ours.
    MechanismMismatch {
        /// Ours.
        ours: Mechanism,
        /// The peer's.
        theirs: Mechanism,
    },
    /// The peer's socket type cannot talk to ours (libzmq's compatibility table).
    ///
    /// libzmq makes the same check on our READY and closes without an ERROR, usually before
    /// its own READY has arrived here: against libzmq a mismatch is then seen as the peer
    /// closing the stream right after its greeting.
    IncompatibleSocketType {
        /// The peer's type.
        peer: SocketType,
    },
    /// The peer's `Socket-Type` value is not a known type.
    UnknownSocketType,
    /// The peer's `Identity` is longer than 255 bytes.
    IdentityTooLong,
    /// A command that is not valid in the current state (for example PING before READY).
    UnexpectedCommand,
    /// A message frame arrived before the handshake completed.
    UnexpectedMessage,
    /// A multipart message grew beyond the maximum message size.
    MessageTooLarge {
        /// The limit in force.
        limit: u64,
    },
    /// A multipart message had more frames than the limit.
    TooManyFrames {
        /// The limit in force.
        limit: usize,
    },
    /// The peer sent ERROR.
    PeerError(Reason),
    /// The handshake did not complete before the handshake deadline.
    HandshakeTimeout,
    /// No traffic arrived within the heartbeat timeout after our PING.
    HeartbeatTimeout,
    /// No traffic arrived within the TTL the peer announced in its PING.
    HeartbeatTtlExpired,
    /// We refused the peer: the verdict on its credentials was this ZAP status code (300,
    /// 400 or 500).
    AuthRejected {
        /// The status code.
        status: u16,
    },
    /// A verdict was given while none was asked for.
    UnexpectedVerdict,
    /// The ZAP handler's reply to our request broke RFC 27 (malformed, wrong version or
    /// request id, an unknown status code, invalid metadata): the peer is refused without
    /// an ERROR, as libzmq does.
    ZapReplyInvalid {
        /// libzmq's `ZMQ_PROTOCOL_ERROR_ZAP_*` code for what was wrong
        /// ([`protocol_error`](crate::socket::monitor::protocol_error)).
        code: u32,
    },
    /// The peer needed a ZAP verdict and no ZAP handler was there to give it (a PLAIN
    /// server, or an enforced `ZAP_DOMAIN`): the peer is refused without an ERROR, as
    /// libzmq does.
    NoZapHandler,
    /// A RADIO's peer joined or left a group longer than 255 bytes.
    GroupTooLong {
        /// The group's length.
        len: usize,
    },
    /// A DISH's peer sent a message that is not `[group (MORE), body]` with a group of at
    /// most 255 bytes.
    MalformedGroupMessage,
    /// A `ws://` stream's HTTP upgrade was refused (by the peer's answer, or ours to its
    /// request).
    WsHandshake(crate::ws::HandshakeError),
    /// A `ws://` stream carried a WebSocket frame ZWS does not allow.
    WsFrame(crate::ws::FrameError),
    /// The `ws://` peer sent a WebSocket close. Not a protocol error: a connecting socket
    /// reconnects.
    WsClosed,
    /// A `tcp://` stream opened through a SOCKS5 proxy
    /// ([`Options::socks_proxy`](crate::socket::Options::socks_proxy)) did not get
    /// connected to the endpoint. Not a protocol error: the endpoint reconnects.
    Socks(crate::socks::SocksError),
    /// The CURVE handshake or a CURVE MESSAGE failed.
    #[cfg(feature = "curve")]
    Curve(CurveError),
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Error {
        Error::Codec(e)
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Codec(e) => write!(f, "protocol error: {e}"),
            Error::UnsupportedVersion { major } => {
                write!(
                    f,
                    "unsupported ZMTP version {major} (3.0 or later required)"
                )
            }
            Error::MechanismMismatch { ours, theirs } => {
                write!(
                    f,
                    "security mechanism mismatch: ours {ours:?}, peer {theirs:?}"
                )
            }
            Error::IncompatibleSocketType { peer } => {
                write!(f, "incompatible peer socket type {peer}")
            }
            Error::UnknownSocketType => f.write_str("unknown peer socket type"),
            Error::IdentityTooLong => f.write_str("peer identity longer than 255 bytes"),
            Error::UnexpectedCommand => f.write_str("unexpected command"),
            Error::UnexpectedMessage => f.write_str("message before handshake completed"),
            Error::MessageTooLarge { limit } => write!(f, "message exceeds {limit} bytes"),
            Error::TooManyFrames { limit } => write!(f, "message exceeds {limit} frames"),
            Error::PeerError(r) => {
                write!(f, "peer sent ERROR: {}", r.escape_ascii())
            }
            Error::HandshakeTimeout => f.write_str("handshake timed out"),
            Error::HeartbeatTimeout => f.write_str("heartbeat timed out"),
            Error::HeartbeatTtlExpired => f.write_str("peer heartbeat TTL expired"),
            Error::AuthRejected { status } => {
                write!(f, "peer refused by authentication ({status})")
            }
            Error::UnexpectedVerdict => f.write_str("authentication verdict without a request"),
            Error::ZapReplyInvalid { code } => {
                write!(
                    f,
                    "invalid reply from the ZAP handler (protocol error {code:#x})"
                )
            }
            Error::NoZapHandler => f.write_str("no ZAP handler to authenticate the peer"),
            Error::GroupTooLong { len } => {
                write!(f, "peer named a group of {len} bytes (at most 255)")
            }
            Error::MalformedGroupMessage => f.write_str(
                "message to a DISH is not [group, body] with a group of at most 255 bytes",
            ),
            Error::WsHandshake(e) => write!(f, "WebSocket upgrade: {e}"),
            Error::WsFrame(e) => write!(f, "WebSocket: {e}"),
            Error::WsClosed => f.write_str("the WebSocket peer closed the connection"),
            Error::Socks(e) => write!(f, "SOCKS5 proxy: {e}"),
            #[cfg(feature = "curve")]
            Error::Curve(e) => write!(f, "CURVE: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// Why a CURVE handshake or MESSAGE was refused.
#[cfg(feature = "curve")]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurveError {
    /// A HELLO of the wrong size or version (libzmq's
    /// `ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_HELLO`).
    MalformedHello,
    /// A HELLO whose box does not open with our key.
    BadHello,
    /// A WELCOME of the wrong size, or whose box does not open (wrong server key); libzmq
    /// reports both as cryptographic.
    BadWelcome,
    /// An INITIATE too short (`ZMQ_PROTOCOL_ERROR_ZMTP_MALFORMED_COMMAND_INITIATE`).
    MalformedInitiate,
    /// An INITIATE with a cookie that is not ours, or whose box does not open.
    BadInitiate,
    /// The vouch inside INITIATE does not open or does not name the client's short-term key.
    BadVouch,
    /// A READY too short, or whose box does not open.
    BadReady,
    /// A MESSAGE too short, not a MESSAGE, or whose box does not open.
    BadMessage,
    /// A MESSAGE nonce not above the last one received: replayed or reordered
    /// (libzmq's `ZMQ_PROTOCOL_ERROR_ZMTP_INVALID_SEQUENCE`).
    InvalidSequence,
    /// Our nonce counter ran out (after 2<sup>64</sup> frames).
    NoncesExhausted,
    /// The connection was built without entropy, which CURVE needs for its keys.
    NoEntropy,
}

#[cfg(feature = "curve")]
impl core::fmt::Display for CurveError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CurveError::MalformedHello => "malformed CURVE HELLO (wrong size or version)",
            CurveError::MalformedInitiate => "malformed CURVE INITIATE (too short)",
            CurveError::BadHello => "invalid CURVE HELLO",
            CurveError::BadWelcome => "invalid CURVE WELCOME (wrong server key?)",
            CurveError::BadInitiate => "invalid CURVE INITIATE",
            CurveError::BadVouch => "invalid CURVE vouch",
            CurveError::BadReady => "invalid CURVE READY",
            CurveError::BadMessage => "invalid CURVE MESSAGE",
            CurveError::InvalidSequence => "CURVE MESSAGE nonce out of sequence",
            CurveError::NoncesExhausted => "CURVE nonces exhausted",
            CurveError::NoEntropy => "CURVE needs entropy to make its keys",
        })
    }
}

#[cfg(feature = "curve")]
impl From<CurveError> for Error {
    fn from(e: CurveError) -> Error {
        Error::Curve(e)
    }
}

/// Why an outgoing frame could not be encoded. Only [`EncodeError::Closed`] is fatal.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// The handshake has not completed; queue the message and retry after
    /// [`Event::HandshakeSucceeded`](crate::Event::HandshakeSucceeded).
    NotReady,
    /// A command cannot be sent while a multipart message is half written.
    MidMessage,
    /// The output buffer is too small; nothing was written.
    InsufficientSize {
        /// Bytes needed.
        required: usize,
    },
    /// The connection has failed with this (sticky) error.
    Closed(Error),
    /// The frame body cannot be sent apart from its header: traffic is encrypted.
    Sealed,
}

impl From<InsufficientSize> for EncodeError {
    fn from(e: InsufficientSize) -> EncodeError {
        EncodeError::InsufficientSize {
            required: e.required,
        }
    }
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncodeError::NotReady => f.write_str("handshake not complete"),
            EncodeError::MidMessage => f.write_str("a multipart message is half written"),
            EncodeError::InsufficientSize { required } => {
                write!(f, "output buffer too small: {required} bytes required")
            }
            EncodeError::Closed(e) => write!(f, "connection closed: {e}"),
            EncodeError::Sealed => f.write_str("encrypted traffic: body cannot be sent apart"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for EncodeError {}
