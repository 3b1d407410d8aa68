//! One ZMTP byte stream, from greeting to traffic: the [`Connection`] state machine.
//!
//! This module holds the public type with its events and items, its construction, the
//! accessors, the event queue and the sticky error; the work is split by concern:
//! - `input`: bytes in. Greeting, handshake commands through the mechanism, traffic
//!   frames and commands, the frame accounting against the message limits, and the
//!   verdict on a peer's credentials;
//! - `output`: bytes out. Control frames (greeting stages, handshake commands, PING,
//!   PONG) through [`Connection::poll_transmit`], and application frames and commands
//!   through the `send_*` calls, all behind any control frame still pending;
//! - `timers`: the handshake deadline and heartbeats, kept in one timer table.
//!
//! See the [crate documentation](crate) for the calling contract.

mod input;
mod output;
mod timers;

pub use input::MAX_FRAME_SIZE;

use core::ops::Range;

use crate::codec::{Metadata, Version};
use crate::config::{Config, Identity};
use crate::error::Error;
use crate::mechanism::MechanismState;
use crate::socket_type::SocketType;
use crate::time::Instant;
use output::Pending;
use timers::Timers;

/// Length of a greeting's signature: `0xFF`, eight bytes (libzmq: the identity length plus
/// one, as a ZMTP 1.0 long-form length) and `0x7F`.
const SIGNATURE: usize = 10;

/// Bytes of a ZMTP 1.0 frame header that must be buffered to read it: 2 for the short
/// form, 10 for the long one (announced by a first byte of `0xFF`).
fn v1_header_needed(input: &[u8]) -> usize {
    match input.first() {
        Some(0xFF) => crate::codec::MAX_V1_HEADER_LEN,
        _ => 2,
    }
}

/// Something a connection reports that does not borrow the input.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed: messages may now be sent and received.
    HandshakeSucceeded {
        /// The peer's `Socket-Type` (`None` if its READY had none, which libzmq accepts).
        peer_socket_type: Option<SocketType>,
        /// The negotiated protocol version (3.0 if either side announced 3.0).
        version: Version,
    },
    /// The peer must be authenticated before the handshake goes on: read the request with
    /// [`Connection::auth_request`] and answer with [`Connection::handle_auth`].
    AuthRequested,
    /// The peer sent PING; a PONG is queued.
    PingReceived,
    /// The peer answered one of our PINGs.
    PongReceived,
}

/// Something received that borrows the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// The peer's metadata (from READY, or INITIATE for PLAIN and CURVE servers), checked.
    /// The handshake is complete at [`Event::HandshakeSucceeded`], which comes with it or,
    /// when a verdict is pending, after [`Connection::handle_auth`].
    Ready(Metadata<'a>),
    /// One frame of a message. A message is complete at the first frame without `more`.
    Frame {
        /// The frame body.
        body: &'a [u8],
        /// More frames of this message follow.
        more: bool,
    },
    /// A subscription, from a SUBSCRIBE command or a `0x01`-prefixed message (to PUB/XPUB only).
    Subscribe(&'a [u8]),
    /// A cancelled subscription, from CANCEL or a `0x00`-prefixed message (to PUB/XPUB only).
    Cancel(&'a [u8]),
    /// A JOIN command (RADIO/DISH).
    Join(&'a [u8]),
    /// A LEAVE command (RADIO/DISH).
    Leave(&'a [u8]),
}

impl<'a> Item<'a> {
    /// The bytes this item carries (frame body, topic, group or metadata).
    pub fn payload(&self) -> &'a [u8] {
        match *self {
            Item::Ready(m) => m.as_bytes(),
            Item::Frame { body, .. } => body,
            Item::Subscribe(b) | Item::Cancel(b) | Item::Join(b) | Item::Leave(b) => b,
        }
    }
}

/// The result of one [`Connection::handle_input`] step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input<'a> {
    /// Bytes used from the front of the input; the driver discards them.
    pub consumed: usize,
    /// When nothing was consumed: how many bytes the next step needs from the front of
    /// the input (already limit-checked, so the driver may reserve that much). Zero otherwise.
    pub needed: usize,
    /// What was received, if anything.
    pub item: Option<Item<'a>>,
    /// Where [`Item::payload`] lies in the input, so an owning driver can slice its read
    /// buffer instead of copying.
    pub payload: Range<usize>,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the peer's 10-byte signature, or for a first byte that shows an
    /// unversioned ZMTP 1.0 peer.
    Signature,
    /// Waiting for the peer's major version (its revision): 3.x, or 1.0/2.0.
    Revision,
    /// Waiting for the remaining 53 greeting bytes.
    GreetingRest,
    /// A versioned 1.0 or 2.0 peer: waiting for its socket-type byte.
    LegacyType(Legacy),
    /// A 1.0 or 2.0 peer: waiting for its identity, its first frame.
    LegacyIdentity(Legacy),
    /// Mechanism handshake.
    Handshake,
    /// Messages flow (ZMTP 3.x framing, which 2.0 shares).
    Traffic,
    /// Messages flow in ZMTP 1.0 framing.
    V1Traffic,
}

/// A peer older than ZMTP 3.0, as libzmq tells them apart (notes on `zmtp_engine.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Legacy {
    /// ZMTP 1.0 without a revision: its first bytes are its identity frame.
    Unversioned,
    /// Revision 0: a socket-type byte, then ZMTP 1.0 framing.
    Revision0,
    /// Revision 1 (ZMTP 2.0): a socket-type byte, then 3.x framing without commands.
    Revision1,
}

impl Legacy {
    /// Whether frames use the ZMTP 1.0 encoding.
    fn v1_framing(self) -> bool {
        !matches!(self, Legacy::Revision1)
    }

    /// The version reported for it: 1.0 or 2.0.
    fn version(self) -> Version {
        Version {
            major: if self.v1_framing() { 1 } else { 2 },
            minor: 0,
        }
    }
}

/// A sans-IO ZMTP connection: one byte stream from greeting to traffic. It speaks 3.0 and
/// 3.1, and falls back to 2.0 and 1.0 for peers that speak those (unless
/// [`Config::legacy_peers`] is off or security is configured).
///
/// It reads no clock, performs no I/O and allocates nothing: input and output buffers
/// belong to the driver. See the [crate documentation](crate) for the calling contract.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    mechanism: MechanismState,
    phase: Phase,
    version: Version,
    /// The peer predates ZMTP 3.0.
    legacy: Option<Legacy>,
    peer_major: u8,
    peer_socket_type: Option<SocketType>,
    peer_identity: Identity,
    timers: Timers,
    pending: Pending,
    /// Our last data frame had MORE set: no command may be written until the message ends.
    out_mid_message: bool,
    /// The peer's last data frame had MORE set.
    in_mid_message: bool,
    in_message_size: u64,
    in_message_frames: usize,
    /// Events not yet polled: the handshake notice, then counts of PINGs and PONGs seen.
    /// Counters rather than a queue, so that no event is ever lost, whatever the burst.
    handshake_event: Option<Event>,
    /// A verdict is wanted and [`Event::AuthRequested`] not yet polled.
    auth_unreported: bool,
    auth_asked: bool,
    pings_unreported: u32,
    pongs_unreported: u32,
    error: Option<Error>,
}

impl Connection {
    /// A new connection using the mechanism of `config.security`. The first greeting stage
    /// is queued at once and the handshake deadline starts at `now`.
    ///
    /// CURVE needs randomness for its keys: use [`with_entropy`](Self::with_entropy); built
    /// here, a CURVE connection fails after the greeting with `CurveError::NoEntropy`.
    pub fn new(config: Config, now: Instant) -> Connection {
        Connection::build(config, now, None)
    }

    /// A new connection whose random values (CURVE's short-term keys, cookie key and
    /// nonces) all derive from `entropy`, which the caller draws from a secure source (the
    /// operating system) for each connection. Tests and fuzzers pass constants.
    pub fn with_entropy(config: Config, now: Instant, entropy: [u8; 32]) -> Connection {
        Connection::build(config, now, Some(entropy))
    }

    fn build(config: Config, now: Instant, entropy: Option<[u8; 32]>) -> Connection {
        let timers = Timers::starting(now, config.handshake_timeout);
        let mechanism = MechanismState::new(&config.security, config.authenticate_null, entropy);
        Connection {
            version: config.version,
            peer_major: 0,
            config,
            mechanism,
            phase: Phase::Signature,
            legacy: None,
            peer_socket_type: None,
            peer_identity: Identity::new(),
            timers,
            pending: Pending::starting(),
            out_mid_message: false,
            in_mid_message: false,
            in_message_size: 0,
            in_message_frames: 0,
            handshake_event: None,
            auth_unreported: false,
            auth_asked: false,
            pings_unreported: 0,
            pongs_unreported: 0,
            error: None,
        }
    }

    /// The local configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The sticky error, if the connection has failed.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// Whether the handshake has completed and messages may flow.
    pub fn is_established(&self) -> bool {
        matches!(self.phase, Phase::Traffic | Phase::V1Traffic) && self.error.is_none()
    }

    /// The version in use: ours until the peer's greeting arrives, then the negotiated one
    /// (1.0 or 2.0 with a legacy peer).
    pub fn version(&self) -> Version {
        self.version
    }

    /// Whether the peer is an unversioned ZMTP 1.0 peer, which cannot send subscriptions:
    /// a PUB treats it as subscribed to everything, as libzmq does.
    pub fn peer_subscribes_all(&self) -> bool {
        self.legacy == Some(Legacy::Unversioned)
    }

    /// The peer's socket type, once its READY has arrived.
    pub fn peer_socket_type(&self) -> Option<SocketType> {
        self.peer_socket_type
    }

    /// The peer's `Identity` property (empty if it sent none).
    pub fn peer_identity(&self) -> &[u8] {
        &self.peer_identity
    }

    /// Whether data frames are transformed on the way out (CURVE): their bodies cannot be
    /// sent apart from their headers ([`send_frame_header`](Self::send_frame_header)).
    pub fn encrypts(&self) -> bool {
        self.mechanism.seals()
    }

    /// Record `e` as the sticky error and return it.
    fn fail(&mut self, e: Error) -> Error {
        self.error = Some(e.clone());
        e
    }

    /// The next event, if any. The handshake notice comes first; PING/PONG notices are
    /// counted, never dropped, and reported one per call.
    pub fn poll_event(&mut self) -> Option<Event> {
        if self.auth_unreported {
            self.auth_unreported = false;
            return Some(Event::AuthRequested);
        }
        if let Some(e) = self.handshake_event.take() {
            return Some(e);
        }
        if self.pings_unreported > 0 {
            self.pings_unreported -= 1;
            return Some(Event::PingReceived);
        }
        if self.pongs_unreported > 0 {
            self.pongs_unreported -= 1;
            return Some(Event::PongReceived);
        }
        None
    }
}
