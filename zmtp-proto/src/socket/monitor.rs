//! Socket monitor events with libzmq 4.3's numbering and message format.
//!
//! The event kinds and the protocol error codes carry the values of `zmq.h`, so that a
//! monitor consumer written against libzmq (or a bridge to one) reads them unchanged.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::codec::CodecError;
use crate::Error;

/// What happened on a monitored socket; the discriminants are libzmq's `ZMQ_EVENT_*` bits.
///
/// The meaning of [`MonitorEvent::value`] depends on the kind and is noted on each. Where
/// libzmq gives a file descriptor (CONNECTED, LISTENING, ACCEPTED, CLOSED, DISCONNECTED),
/// this socket has none to give, since the core does no I/O: the value is always 0 there.
/// The kinds about one connection name the peer in [`MonitorEvent::peer_address`].
#[non_exhaustive]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MonitorEventKind {
    /// A connection to a peer was established (value: 0; libzmq gives the connection's
    /// descriptor).
    Connected = 0x0001,
    /// A connection attempt is in progress (value: 0).
    ConnectDelayed = 0x0002,
    /// A connection attempt failed and will be retried (value: the retry interval in ms).
    ConnectRetried = 0x0004,
    /// The socket is listening on the endpoint (value: 0; libzmq gives the listener's
    /// descriptor).
    Listening = 0x0008,
    /// Binding the endpoint failed (value: the error number, or 0 if the driver had none).
    BindFailed = 0x0010,
    /// A connection from a peer was accepted (value: 0; libzmq gives the connection's
    /// descriptor).
    Accepted = 0x0020,
    /// Accepting a connection failed (value: the error number, 0 when the core refused
    /// the peer: a `ZMQ_TCP_ACCEPT_FILTER` had no network for its address).
    AcceptFailed = 0x0040,
    /// A listener was closed, by `unbind` or by closing the socket (value: 0; libzmq gives
    /// its descriptor).
    Closed = 0x0080,
    /// Closing failed (value: the error number). The core never reports it.
    CloseFailed = 0x0100,
    /// A connection was lost (value: 0; libzmq gives its descriptor).
    Disconnected = 0x0200,
    /// Monitoring stopped; the last event on a monitor (value: 0).
    MonitorStopped = 0x0400,
    /// The handshake failed for a reason other than protocol or authentication, for example
    /// a timeout or a closed stream (value: 0).
    HandshakeFailedNoDetail = 0x0800,
    /// The handshake completed (value: 0).
    HandshakeSucceeded = 0x1000,
    /// The handshake failed on a protocol error (value: one of the [`protocol_error`] codes).
    HandshakeFailedProtocol = 0x2000,
    /// Authentication refused the peer, or the peer refused us (value: the ZAP status code,
    /// such as 400).
    HandshakeFailedAuth = 0x4000,
    /// One peer's queue sizes, on request ([`Socket::monitor_pipes_stats`]; libzmq's
    /// `zmq_socket_monitor_pipes_stats`): value 0, the counts in
    /// [`MonitorEvent::queues`]. A kind of libzmq's v2 format only: it is not in
    /// [`ALL`](Self::ALL), and v1 frames cannot carry it.
    ///
    /// [`Socket::monitor_pipes_stats`]: super::Socket::monitor_pipes_stats
    PipesStats = 0x1_0000,
}

impl MonitorEventKind {
    /// Every kind of libzmq's v1 format, in order of value (all but
    /// [`PipesStats`](Self::PipesStats)).
    pub const ALL: &'static [Self] = &[
        Self::Connected,
        Self::ConnectDelayed,
        Self::ConnectRetried,
        Self::Listening,
        Self::BindFailed,
        Self::Accepted,
        Self::AcceptFailed,
        Self::Closed,
        Self::CloseFailed,
        Self::Disconnected,
        Self::MonitorStopped,
        Self::HandshakeFailedNoDetail,
        Self::HandshakeSucceeded,
        Self::HandshakeFailedProtocol,
        Self::HandshakeFailedAuth,
    ];

    /// The `ZMQ_EVENT_*` value.
    pub fn value(self) -> u32 {
        self as u32
    }

    /// The kind with this `ZMQ_EVENT_*` value; `None` for an unknown value or a mask of
    /// several bits.
    pub fn from_value(value: u32) -> Option<Self> {
        if value == Self::PipesStats.value() {
            return Some(Self::PipesStats);
        }
        Self::ALL.iter().copied().find(|k| k.value() == value)
    }

    /// libzmq's name without the `ZMQ_EVENT_` prefix, such as `"CONNECTED"` or
    /// `"HANDSHAKE_FAILED_PROTOCOL"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connected => "CONNECTED",
            Self::ConnectDelayed => "CONNECT_DELAYED",
            Self::ConnectRetried => "CONNECT_RETRIED",
            Self::Listening => "LISTENING",
            Self::BindFailed => "BIND_FAILED",
            Self::Accepted => "ACCEPTED",
            Self::AcceptFailed => "ACCEPT_FAILED",
            Self::Closed => "CLOSED",
            Self::CloseFailed => "CLOSE_FAILED",
            Self::Disconnected => "DISCONNECTED",
            Self::MonitorStopped => "MONITOR_STOPPED",
            Self::HandshakeFailedNoDetail => "HANDSHAKE_FAILED_NO_DETAIL",
            Self::HandshakeSucceeded => "HANDSHAKE_SUCCEEDED",
            Self::HandshakeFailedProtocol => "HANDSHAKE_FAILED_PROTOCOL",
            Self::HandshakeFailedAuth => "HANDSHAKE_FAILED_AUTH",
            Self::PipesStats => "PIPES_STATS",
        }
    }
}

/// Writes [`MonitorEventKind::name`].
impl fmt::Display for MonitorEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `ZMQ_EVENT_ALL`: the event mask that selects every event.
pub const EVENT_ALL: u32 = 0xFFFF;

/// `EPIPE`: the value of a HANDSHAKE_FAILED_NO_DETAIL event for a stream that the peer
/// closed before the handshake completed (as libzmq reports it).
pub const EPIPE: u32 = 32;

/// `EFAULT`: the value of a HANDSHAKE_FAILED_NO_DETAIL event for a peer refused because
/// no ZAP handler was there to authenticate it ([`Error::NoZapHandler`]).
pub const EFAULT: u32 = 14;

/// The values of a [`MonitorEventKind::HandshakeFailedProtocol`] event: libzmq's
/// `ZMQ_PROTOCOL_ERROR_*` codes, named without that prefix.
pub mod protocol_error {
    /// An unspecified ZMTP protocol error.
    pub const ZMTP_UNSPECIFIED: u32 = 0x1000_0000;
    /// A command that is not valid in the current state.
    pub const ZMTP_UNEXPECTED_COMMAND: u32 = 0x1000_0001;
    /// A CURVE message with an out-of-sequence nonce.
    pub const ZMTP_INVALID_SEQUENCE: u32 = 0x1000_0002;
    /// A CURVE key exchange failure.
    pub const ZMTP_KEY_EXCHANGE: u32 = 0x1000_0003;
    /// A malformed command of no more specific kind.
    pub const ZMTP_MALFORMED_COMMAND_UNSPECIFIED: u32 = 0x1000_0011;
    /// A malformed MESSAGE command (CURVE).
    pub const ZMTP_MALFORMED_COMMAND_MESSAGE: u32 = 0x1000_0012;
    /// A malformed HELLO command.
    pub const ZMTP_MALFORMED_COMMAND_HELLO: u32 = 0x1000_0013;
    /// A malformed INITIATE command.
    pub const ZMTP_MALFORMED_COMMAND_INITIATE: u32 = 0x1000_0014;
    /// A malformed ERROR command.
    pub const ZMTP_MALFORMED_COMMAND_ERROR: u32 = 0x1000_0015;
    /// A malformed READY command.
    pub const ZMTP_MALFORMED_COMMAND_READY: u32 = 0x1000_0016;
    /// A malformed WELCOME command.
    pub const ZMTP_MALFORMED_COMMAND_WELCOME: u32 = 0x1000_0017;
    /// Invalid metadata, including an unknown or incompatible `Socket-Type`.
    pub const ZMTP_INVALID_METADATA: u32 = 0x1000_0018;
    /// A cryptographic failure (a box that does not open).
    pub const ZMTP_CRYPTOGRAPHIC: u32 = 0x1100_0001;
    /// The peer uses a different security mechanism.
    pub const ZMTP_MECHANISM_MISMATCH: u32 = 0x1100_0002;
    /// An unspecified ZAP error.
    pub const ZAP_UNSPECIFIED: u32 = 0x2000_0000;
    /// A malformed ZAP reply.
    pub const ZAP_MALFORMED_REPLY: u32 = 0x2000_0001;
    /// A ZAP reply with the wrong request id.
    pub const ZAP_BAD_REQUEST_ID: u32 = 0x2000_0002;
    /// A ZAP reply with the wrong version.
    pub const ZAP_BAD_VERSION: u32 = 0x2000_0003;
    /// A ZAP reply with a status code other than 200, 300, 400 or 500.
    pub const ZAP_INVALID_STATUS_CODE: u32 = 0x2000_0004;
    /// A ZAP reply with invalid metadata.
    pub const ZAP_INVALID_METADATA: u32 = 0x2000_0005;
    /// An unspecified WebSocket transport error.
    pub const WS_UNSPECIFIED: u32 = 0x3000_0000;
}

/// One monitor event: what happened, its value, the endpoint it happened on and, for an
/// event about one connection, the peer's address.
///
/// Read fields directly; build one with [`MonitorEvent::new`] (the struct is
/// `#[non_exhaustive]`, so that fields can be added without breaking callers).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorEvent {
    /// What happened.
    pub kind: MonitorEventKind,
    /// The kind-specific value (see [`MonitorEventKind`]).
    pub value: u32,
    /// Our endpoint, as bound or connected (or as reported by the transport): for a
    /// connection, the listening endpoint that accepted it or the endpoint it connected to.
    pub endpoint: String,
    /// The remote peer's address as the driver reported it: `IP:port` for tcp, with the
    /// IPv6 address in brackets (`127.0.0.1:53412`, `[::1]:5555`). Filled for the kinds about
    /// one connection (CONNECTED, ACCEPTED, HANDSHAKE_SUCCEEDED, the HANDSHAKE_FAILED_*
    /// kinds, DISCONNECTED); empty for the others, for ipc and inproc (whose peers have no
    /// address), and for an event decoded from libzmq's v1 format, which does not carry it.
    pub peer_address: String,
    /// Why the connection ended, on DISCONNECTED and the HANDSHAKE_FAILED_* kinds, when it
    /// ended on an error of ours to report (a protocol error such as
    /// [`Error::GroupTooLong`], a refused handshake, a
    /// heartbeat timeout); `None` for a peer that closed or was dropped. libzmq's events
    /// carry no such detail: it is not in [`to_v1_frames`](Self::to_v1_frames).
    pub error: Option<crate::Error>,
    /// Why the stream failed below ZMTP, in the transport's words, on DISCONNECTED and the
    /// HANDSHAKE_FAILED_* kinds of a stream the driver reported failed
    /// ([`Socket::handle_stream_failed`](super::Socket::handle_stream_failed)): a `wss://`
    /// connection's TLS handshake (`"TLS: invalid peer certificate: UnknownIssuer"`), or
    /// the I/O error that ended the stream. `None` for a stream that ended cleanly or on an
    /// [`error`](Self::error) of ours. Not in [`to_v1_frames`](Self::to_v1_frames) either.
    pub reason: Option<String>,
    /// On PIPES_STATS: how many messages wait in the peer's queues. `None` on the other
    /// kinds.
    pub queues: Option<QueueCounts>,
    /// The local address of a connection we opened (a connect endpoint's), when the driver
    /// gave it: `IP:port` for tcp, empty for ipc. `None` for accepted connections, events
    /// not about one connection, and drivers that do not give it. With it, libzmq's v2
    /// format names our end as the local address and the endpoint as the remote one.
    pub local_address: Option<String>,
}

/// The counts a PIPES_STATS event reports for one peer, as libzmq's two values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Messages queued to send to the peer and not yet written to its stream (libzmq: in
    /// the outbound pipe), bounded by SNDHWM.
    pub outbound: u64,
    /// Messages received from the peer and not yet taken by `recv` (libzmq: in the
    /// inbound pipe), bounded by RCVHWM.
    pub inbound: u64,
}

/// Why [`Socket::monitor_pipes_stats`](super::Socket::monitor_pipes_stats) reported
/// nothing.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipesStatsError {
    /// The monitor does not take PIPES_STATS events (libzmq: `EINVAL`).
    NotMonitored,
    /// The socket has no peer to report on (libzmq: `EAGAIN`).
    NoPeers,
}

impl fmt::Display for PipesStatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PipesStatsError::NotMonitored => "the monitor does not take PIPES_STATS events",
            PipesStatsError::NoPeers => "the socket has no peer to report queue sizes of",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for PipesStatsError {}

impl MonitorEvent {
    /// An event with no peer address (add one with
    /// [`with_peer_address`](Self::with_peer_address)).
    pub fn new(kind: MonitorEventKind, value: u32, endpoint: impl Into<String>) -> MonitorEvent {
        MonitorEvent {
            kind,
            value,
            endpoint: endpoint.into(),
            peer_address: String::new(),
            error: None,
            reason: None,
            queues: None,
            local_address: None,
        }
    }

    /// This event with `peer_address` set.
    pub fn with_peer_address(mut self, peer_address: impl Into<String>) -> MonitorEvent {
        self.peer_address = peer_address.into();
        self
    }

    /// libzmq's v1 monitor message: frame 1 = u16 event + u32 value, native-endian (6 bytes);
    /// frame 2 = endpoint. The format has no room for the peer's address, which is left out.
    pub fn to_v1_frames(&self) -> [Vec<u8>; 2] {
        // Every v1 kind's value is a single bit below 0x10000, so it fits the u16 field
        // (PIPES_STATS, of v2 only, does not: it is written as 0).
        let event = u16::try_from(self.kind.value()).unwrap_or(0);
        let mut first = Vec::with_capacity(6);
        first.extend_from_slice(&event.to_ne_bytes());
        first.extend_from_slice(&self.value.to_ne_bytes());
        [first, self.endpoint.as_bytes().to_vec()]
    }

    /// Decodes libzmq's v1 monitor message (see [`MonitorEvent::to_v1_frames`]), with an
    /// empty peer address. `None` if the first frame is not 6 bytes or names an unknown
    /// event. An endpoint that is not UTF-8 is kept with U+FFFD in place of invalid bytes
    /// rather than losing the event.
    pub fn from_v1_frames(first: &[u8], second: &[u8]) -> Option<MonitorEvent> {
        let &[e0, e1, v0, v1, v2, v3] = first else {
            return None;
        };
        let kind = MonitorEventKind::from_value(u16::from_ne_bytes([e0, e1]).into())?;
        Some(MonitorEvent::new(
            kind,
            u32::from_ne_bytes([v0, v1, v2, v3]),
            String::from_utf8_lossy(second).into_owned(),
        ))
    }
}

/// The HANDSHAKE_FAILED_PROTOCOL value for a connection error, or None when the failure is
/// not a protocol error (timeouts -> HANDSHAKE_FAILED_NO_DETAIL).
///
/// An ERROR from the peer is also `None`: it is the peer refusing us (an authentication
/// failure), not a protocol violation. Violations with no specific libzmq code, such as a
/// bad greeting signature, reserved frame flags or a size over the local limit, are
/// [`protocol_error::ZMTP_UNSPECIFIED`].
pub fn protocol_error_code(e: &Error) -> Option<u32> {
    use protocol_error as p;
    // Exhaustive on purpose: a new error variant must be classified here.
    let code = match e {
        Error::Codec(c) => match c {
            CodecError::MalformedCommand | CodecError::MalformedCommandBody => {
                p::ZMTP_MALFORMED_COMMAND_UNSPECIFIED
            }
            CodecError::InvalidMetadata => p::ZMTP_INVALID_METADATA,
            CodecError::BadSignature
            | CodecError::EmptyV1Frame
            | CodecError::ReservedFlags(_)
            | CodecError::CommandWithMore
            | CodecError::FrameTooLarge { .. } => p::ZMTP_UNSPECIFIED,
        },
        Error::UnexpectedCommand | Error::UnexpectedMessage => p::ZMTP_UNEXPECTED_COMMAND,
        Error::MechanismMismatch { .. } => p::ZMTP_MECHANISM_MISMATCH,
        Error::UnknownSocketType
        | Error::IncompatibleSocketType { .. }
        | Error::IdentityTooLong => p::ZMTP_INVALID_METADATA,
        Error::UnsupportedVersion { .. }
        | Error::MessageTooLarge { .. }
        | Error::TooManyFrames { .. }
        | Error::GroupTooLong { .. }
        | Error::MalformedGroupMessage
        | Error::WsHandshake(_)
        | Error::WsFrame(_) => p::ZMTP_UNSPECIFIED,
        #[cfg(feature = "curve")]
        Error::Curve(c) => match c {
            crate::mechanism::CurveError::InvalidSequence => p::ZMTP_INVALID_SEQUENCE,
            crate::mechanism::CurveError::MalformedHello => p::ZMTP_MALFORMED_COMMAND_HELLO,
            crate::mechanism::CurveError::MalformedInitiate => p::ZMTP_MALFORMED_COMMAND_INITIATE,
            crate::mechanism::CurveError::NoEntropy
            | crate::mechanism::CurveError::NoncesExhausted => p::ZMTP_UNSPECIFIED,
            _ => p::ZMTP_CRYPTOGRAPHIC,
        },
        Error::UnexpectedVerdict => p::ZMTP_UNSPECIFIED,
        Error::ZapReplyInvalid { code } => *code,
        Error::NoZapHandler
        | Error::PeerError(_)
        | Error::AuthRejected { .. }
        | Error::HandshakeTimeout
        | Error::HeartbeatTimeout
        | Error::HeartbeatTtlExpired
        | Error::WsClosed
        | Error::Socks(_) => return None,
    };
    Some(code)
}

#[cfg(test)]
mod tests {
    use super::protocol_error as p;
    use super::*;
    use crate::codec::Mechanism;
    use crate::{Reason, SocketType};
    use alloc::string::ToString;

    /// The table of `zmq.h` 4.3.5: (name, value).
    const EVENTS: &[(&str, u32)] = &[
        ("CONNECTED", 0x0001),
        ("CONNECT_DELAYED", 0x0002),
        ("CONNECT_RETRIED", 0x0004),
        ("LISTENING", 0x0008),
        ("BIND_FAILED", 0x0010),
        ("ACCEPTED", 0x0020),
        ("ACCEPT_FAILED", 0x0040),
        ("CLOSED", 0x0080),
        ("CLOSE_FAILED", 0x0100),
        ("DISCONNECTED", 0x0200),
        ("MONITOR_STOPPED", 0x0400),
        ("HANDSHAKE_FAILED_NO_DETAIL", 0x0800),
        ("HANDSHAKE_SUCCEEDED", 0x1000),
        ("HANDSHAKE_FAILED_PROTOCOL", 0x2000),
        ("HANDSHAKE_FAILED_AUTH", 0x4000),
    ];

    #[test]
    fn kinds_match_zmq_h_and_round_trip() {
        assert_eq!(MonitorEventKind::ALL.len(), EVENTS.len());
        for (&kind, &(name, value)) in MonitorEventKind::ALL.iter().zip(EVENTS) {
            assert_eq!(kind.name(), name);
            assert_eq!(kind.value(), value, "{name}");
            assert_eq!(MonitorEventKind::from_value(value), Some(kind));
            assert_eq!(kind.to_string(), name);
            assert!(value <= u32::from(u16::MAX) && value & EVENT_ALL == value);
        }
        let mask = MonitorEventKind::ALL.iter().fold(0, |m, k| m | k.value());
        assert_eq!(mask, 0x7FFF);
        assert_eq!(
            MonitorEventKind::from_value(0x1_0000),
            Some(MonitorEventKind::PipesStats)
        );
        assert_eq!(MonitorEventKind::PipesStats.name(), "PIPES_STATS");
        for value in [0, 0x0003, 0x8000, EVENT_ALL, 0x1_8000, u32::MAX] {
            assert_eq!(MonitorEventKind::from_value(value), None, "{value:#x}");
        }
    }

    #[test]
    fn protocol_error_codes_match_zmq_h() {
        let codes = [
            (p::ZMTP_UNSPECIFIED, 0x1000_0000),
            (p::ZMTP_UNEXPECTED_COMMAND, 0x1000_0001),
            (p::ZMTP_INVALID_SEQUENCE, 0x1000_0002),
            (p::ZMTP_KEY_EXCHANGE, 0x1000_0003),
            (p::ZMTP_MALFORMED_COMMAND_UNSPECIFIED, 0x1000_0011),
            (p::ZMTP_MALFORMED_COMMAND_MESSAGE, 0x1000_0012),
            (p::ZMTP_MALFORMED_COMMAND_HELLO, 0x1000_0013),
            (p::ZMTP_MALFORMED_COMMAND_INITIATE, 0x1000_0014),
            (p::ZMTP_MALFORMED_COMMAND_ERROR, 0x1000_0015),
            (p::ZMTP_MALFORMED_COMMAND_READY, 0x1000_0016),
            (p::ZMTP_MALFORMED_COMMAND_WELCOME, 0x1000_0017),
            (p::ZMTP_INVALID_METADATA, 0x1000_0018),
            (p::ZMTP_CRYPTOGRAPHIC, 0x1100_0001),
            (p::ZMTP_MECHANISM_MISMATCH, 0x1100_0002),
            (p::ZAP_UNSPECIFIED, 0x2000_0000),
            (p::ZAP_MALFORMED_REPLY, 0x2000_0001),
            (p::ZAP_BAD_REQUEST_ID, 0x2000_0002),
            (p::ZAP_BAD_VERSION, 0x2000_0003),
            (p::ZAP_INVALID_STATUS_CODE, 0x2000_0004),
            (p::ZAP_INVALID_METADATA, 0x2000_0005),
            (p::WS_UNSPECIFIED, 0x3000_0000),
        ];
        for (i, (code, expected)) in codes.iter().enumerate() {
            assert_eq!(code, expected, "entry {i}");
        }
        assert_eq!(EVENT_ALL, 0xFFFF);
    }

    #[test]
    fn v1_frames_encode_native_endian_and_decode() {
        let event = MonitorEvent::new(
            MonitorEventKind::HandshakeFailedProtocol,
            p::ZMTP_MECHANISM_MISMATCH,
            "tcp://127.0.0.1:5555",
        );
        let [first, second] = event.to_v1_frames();
        let mut expected = Vec::new();
        expected.extend_from_slice(&0x2000u16.to_ne_bytes());
        expected.extend_from_slice(&0x1100_0002u32.to_ne_bytes());
        assert_eq!(first, expected);
        assert_eq!(second, b"tcp://127.0.0.1:5555");
        assert_eq!(
            MonitorEvent::from_v1_frames(&first, &second),
            Some(event.clone())
        );

        // v1 has no room for the peer's address: the frames are the same without it.
        let with_peer = event.clone().with_peer_address("127.0.0.1:53412");
        assert_eq!(with_peer.peer_address, "127.0.0.1:53412");
        assert_eq!(with_peer.to_v1_frames(), [first.clone(), second.clone()]);
        let decoded = MonitorEvent::from_v1_frames(&first, &second).unwrap();
        assert_eq!(decoded.peer_address, "");

        for &kind in MonitorEventKind::ALL {
            let event = MonitorEvent::new(kind, 0xDEAD_BEEF, String::new());
            let [first, second] = event.to_v1_frames();
            assert_eq!(first.len(), 6);
            assert!(second.is_empty());
            assert_eq!(MonitorEvent::from_v1_frames(&first, &second), Some(event));
        }
    }

    #[test]
    fn v1_frames_reject_bad_first_frames() {
        let good = MonitorEvent::new(MonitorEventKind::Connected, 7, "ipc://@x").to_v1_frames();
        let [first, second] = &good;
        assert!(MonitorEvent::from_v1_frames(first, second).is_some());
        assert_eq!(MonitorEvent::from_v1_frames(&first[..5], second), None);
        assert_eq!(MonitorEvent::from_v1_frames(&[0; 7], second), None);
        assert_eq!(MonitorEvent::from_v1_frames(&[], second), None);

        let mut unknown = Vec::new();
        unknown.extend_from_slice(&0x8000u16.to_ne_bytes());
        unknown.extend_from_slice(&0u32.to_ne_bytes());
        assert_eq!(MonitorEvent::from_v1_frames(&unknown, second), None);

        let lossy = MonitorEvent::from_v1_frames(first, b"ipc://\xff").map(|e| e.endpoint);
        assert_eq!(lossy.as_deref(), Some("ipc://\u{FFFD}"));
    }

    #[test]
    fn connection_errors_map_to_protocol_codes() {
        let cases: &[(Error, Option<u32>)] = &[
            (Error::UnexpectedCommand, Some(p::ZMTP_UNEXPECTED_COMMAND)),
            (Error::UnexpectedMessage, Some(p::ZMTP_UNEXPECTED_COMMAND)),
            (
                Error::Codec(CodecError::InvalidMetadata),
                Some(p::ZMTP_INVALID_METADATA),
            ),
            (
                Error::Codec(CodecError::MalformedCommand),
                Some(p::ZMTP_MALFORMED_COMMAND_UNSPECIFIED),
            ),
            (
                Error::Codec(CodecError::MalformedCommandBody),
                Some(p::ZMTP_MALFORMED_COMMAND_UNSPECIFIED),
            ),
            (
                Error::Codec(CodecError::BadSignature),
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (
                Error::Codec(CodecError::ReservedFlags(0x08)),
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (
                Error::Codec(CodecError::CommandWithMore),
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (
                Error::Codec(CodecError::FrameTooLarge { size: 2, limit: 1 }),
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (
                Error::MechanismMismatch {
                    ours: Mechanism::NULL,
                    theirs: Mechanism::PLAIN,
                },
                Some(p::ZMTP_MECHANISM_MISMATCH),
            ),
            (Error::UnknownSocketType, Some(p::ZMTP_INVALID_METADATA)),
            (
                Error::IncompatibleSocketType {
                    peer: SocketType::Push,
                },
                Some(p::ZMTP_INVALID_METADATA),
            ),
            (Error::IdentityTooLong, Some(p::ZMTP_INVALID_METADATA)),
            (
                Error::UnsupportedVersion { major: 2 },
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (
                Error::MessageTooLarge { limit: 1 },
                Some(p::ZMTP_UNSPECIFIED),
            ),
            (Error::PeerError(Reason::new()), None),
            (Error::HandshakeTimeout, None),
            (Error::HeartbeatTimeout, None),
            (Error::HeartbeatTtlExpired, None),
        ];
        for (e, expected) in cases {
            assert_eq!(protocol_error_code(e), *expected, "{e:?}");
        }
    }
}
