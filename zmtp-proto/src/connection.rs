//! One ZMTP byte stream, from greeting to traffic.

use core::ops::Range;
use core::time::Duration;

use crate::codec::{
    ensure, Command, FrameHeader, Greeting, InsufficientSize, Mechanism, Metadata, Status, Version,
    Writer, GREETING_LEN, MAX_PING_CONTEXT, SIGNATURE_LEN,
};
use crate::config::{Config, Identity};
use crate::error::{EncodeError, Error};
use crate::mechanism::{reason_of, AuthRequest, EmitError, MechanismState};
use crate::{Instant, SocketType};

/// Frames announcing more bytes than this are refused whatever the limits: no address space
/// (2^47 bytes for user space on x86-64 and AArch64) could hold them, so such a header can
/// only be an attack or garbage.
pub const MAX_FRAME_SIZE: u64 = 1 << 47;

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

/// Where a data frame taken by `Connection::take_data_frame` lies in the input: its
/// body is `len` bytes after a `header_len`-byte header.
#[cfg(feature = "alloc")]
pub(crate) struct DataFrame {
    pub(crate) header_len: usize,
    pub(crate) len: usize,
    pub(crate) more: bool,
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

impl Input<'_> {
    fn partial(needed: usize) -> Self {
        Input {
            consumed: 0,
            needed,
            item: None,
            payload: 0..0,
        }
    }

    fn consumed(consumed: usize) -> Self {
        Input {
            consumed,
            needed: 0,
            item: None,
            payload: 0..0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the peer's signature and major version.
    Signature,
    /// Waiting for the remaining 53 greeting bytes.
    GreetingRest,
    /// Mechanism handshake.
    Handshake,
    /// Messages flow.
    Traffic,
}

#[derive(Debug, Clone, Copy)]
enum Timer {
    Handshake = 0,
    Ping = 1,
    PongTimeout = 2,
    Ttl = 3,
}
const TIMER_COUNT: usize = 4;

/// A control frame waiting for `poll_transmit`, in the order they go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    Signature,
    GreetingRest,
    /// The mechanism's next handshake command (or farewell ERROR).
    Handshake,
    Pong,
    Ping,
}

#[derive(Debug, Clone, Default)]
struct Pending {
    signature: bool,
    greeting_rest: bool,
    ping: bool,
    pong: Option<heapless::Vec<u8, MAX_PING_CONTEXT>>,
}

/// A sans-IO ZMTP 3.x connection: one byte stream from greeting to traffic.
///
/// It reads no clock, performs no I/O and allocates nothing: input and output buffers
/// belong to the driver. See the [crate documentation](crate) for the calling contract.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    mechanism: MechanismState,
    phase: Phase,
    version: Version,
    peer_major: u8,
    peer_socket_type: Option<SocketType>,
    peer_identity: Identity,
    timers: [Option<Instant>; TIMER_COUNT],
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
    /// here, a CURVE connection fails after the greeting with
    /// [`CurveError::NoEntropy`](crate::mechanism::CurveError).
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
        let mut timers = [None; TIMER_COUNT];
        timers[Timer::Handshake as usize] = config.handshake_timeout.map(|d| now + d);
        let mechanism = MechanismState::new(&config.security, config.authenticate_null, entropy);
        Connection {
            version: config.version,
            peer_major: 0,
            config,
            mechanism,
            phase: Phase::Signature,
            peer_socket_type: None,
            peer_identity: Identity::new(),
            timers,
            pending: Pending {
                signature: true,
                ..Pending::default()
            },
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
        self.phase == Phase::Traffic && self.error.is_none()
    }

    /// The version in use: ours until the peer's greeting arrives, then the negotiated one.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The peer's socket type, once its READY has arrived.
    pub fn peer_socket_type(&self) -> Option<SocketType> {
        self.peer_socket_type
    }

    /// The peer's `Identity` property (empty if it sent none).
    pub fn peer_identity(&self) -> &[u8] {
        &self.peer_identity
    }

    /// Whether control frames are waiting for [`poll_transmit`](Self::poll_transmit).
    pub fn wants_write(&self) -> bool {
        self.error.is_none() && self.next_control().is_some()
    }

    /// Feed received bytes. Processes at most one greeting stage or one frame from the
    /// front of `input` and says how many bytes it used.
    ///
    /// Call it again on the remaining bytes until it consumes nothing; then `needed` says
    /// how many bytes must be buffered before the next call can make progress. `input` is
    /// mutable so that encrypting mechanisms can decrypt in place.
    pub fn handle_input<'a>(
        &mut self,
        now: Instant,
        input: &'a mut [u8],
    ) -> Result<Input<'a>, Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let r = self.input_step(now, input);
        if let Err(e) = &r {
            self.error = Some(e.clone());
        }
        r
    }

    fn input_step<'a>(&mut self, now: Instant, input: &'a mut [u8]) -> Result<Input<'a>, Error> {
        match self.phase {
            Phase::Signature => {
                let Status::Complete(major) = Greeting::parse_signature(input)? else {
                    return Ok(Input::partial(SIGNATURE_LEN));
                };
                if major < 3 {
                    return Err(Error::UnsupportedVersion { major });
                }
                self.peer_major = major;
                self.phase = Phase::GreetingRest;
                self.pending.greeting_rest = true;
                Ok(Input::consumed(SIGNATURE_LEN))
            }
            Phase::GreetingRest => {
                const REST: usize = GREETING_LEN - SIGNATURE_LEN;
                let Some(rest) = input.get(..REST) else {
                    return Ok(Input::partial(REST));
                };
                let peer = Version {
                    major: self.peer_major,
                    minor: rest[0],
                };
                let mut theirs = [0u8; 20];
                theirs.copy_from_slice(&rest[1..21]);
                let theirs = Mechanism(theirs);
                let ours = self.mechanism.name();
                if theirs != ours {
                    return Err(Error::MechanismMismatch { ours, theirs });
                }
                self.version = if self.config.version.is_v31() && peer.is_v31() {
                    Version::V3_1
                } else {
                    Version::V3_0
                };
                self.phase = Phase::Handshake;
                self.mechanism.start()?;
                self.after_mechanism_step(now);
                Ok(Input::consumed(REST))
            }
            Phase::Handshake | Phase::Traffic => self.input_frame(now, input),
        }
    }

    fn input_frame<'a>(&mut self, now: Instant, input: &'a mut [u8]) -> Result<Input<'a>, Error> {
        let Some(&flags) = input.first() else {
            return Ok(Input::partial(2));
        };
        let is_command = flags & 0x04 != 0;
        let limit = if is_command {
            self.config.max_command_size.min(MAX_FRAME_SIZE)
        } else {
            self.data_frame_limit()
        };
        let parsed =
            FrameHeader::parse(&*input, limit).map_err(|e| self.size_error(is_command, e))?;
        let Status::Complete((header, header_len)) = parsed else {
            return Ok(Input::partial(if flags & 0x02 != 0 { 9 } else { 2 }));
        };
        // `FrameHeader::parse` bounds the size to `usize::MAX - 9`, so this cannot overflow.
        let total = header_len + header.size as usize;
        let Some(body) = input.get_mut(header_len..total) else {
            return Ok(Input::partial(total));
        };
        let item = self.frame_mut(now, header, body)?;
        Ok(match item {
            Some(item) => Input {
                consumed: total,
                needed: 0,
                payload: total - item.payload().len()..total,
                item: Some(item),
            },
            None => Input::consumed(total),
        })
    }

    /// One complete frame whose body may be transformed in place (handshake commands,
    /// sealed traffic).
    fn frame_mut<'a>(
        &mut self,
        now: Instant,
        header: FrameHeader,
        body: &'a mut [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        if self.phase == Phase::Handshake && header.flags.command {
            self.traffic_seen();
            let meta = self.mechanism.handle_command(body)?;
            let item = match meta {
                Some(meta) => Some(self.accept_metadata(meta)?),
                None => None,
            };
            self.after_mechanism_step(now);
            return Ok(item);
        }
        if self.phase == Phase::Traffic && self.mechanism.seals() {
            self.traffic_seen();
            if header.flags.command {
                return Err(Error::UnexpectedCommand);
            }
            let (flags, payload) = self.mechanism.open(body)?;
            return if flags & 0x02 != 0 {
                self.traffic_command(now, Command::parse(payload)?)
            } else {
                Ok(Some(self.data_frame(payload, flags & 0x01 != 0)?))
            };
        }
        self.frame(now, header, body)
    }

    /// Any complete frame counts as traffic for heartbeats.
    fn traffic_seen(&mut self) {
        self.timers[Timer::PongTimeout as usize] = None;
        self.timers[Timer::Ttl as usize] = None;
    }

    /// One complete frame of clear traffic (or a message during the handshake, an error).
    fn frame<'a>(
        &mut self,
        now: Instant,
        header: FrameHeader,
        body: &'a [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        self.traffic_seen();
        if header.flags.command {
            if self.phase != Phase::Traffic {
                return Err(Error::UnexpectedCommand);
            }
            self.traffic_command(now, Command::parse(body)?)
        } else {
            if self.phase != Phase::Traffic {
                return Err(Error::UnexpectedMessage);
            }
            Ok(Some(self.data_frame(body, header.flags.more)?))
        }
    }

    /// Feed one data frame whose header and body arrived apart: an in-process transport
    /// hands a large body over as it is, without copying it behind its header.
    ///
    /// `header` must be exactly one complete data-frame header announcing `body.len()`
    /// bytes, and the handshake must be done; otherwise nothing happens and `Ok(None)` is
    /// returned (feed the bytes through [`handle_input`](Self::handle_input) instead). A
    /// frame that is taken always yields an item. Mechanisms that transform frames in place
    /// (CURVE) do not take this path.
    pub fn handle_frame_parts<'a>(
        &mut self,
        now: Instant,
        header: &[u8],
        body: &'a [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.phase != Phase::Traffic || self.mechanism.seals() {
            return Ok(None);
        }
        let parsed = match FrameHeader::parse(header, self.data_frame_limit()) {
            Ok(Status::Complete(parsed)) => parsed,
            Ok(Status::Partial) => return Ok(None),
            Err(e) => {
                let e = self.size_error(false, e);
                self.error = Some(e.clone());
                return Err(e);
            }
        };
        let (h, header_len) = parsed;
        if header_len != header.len() || h.flags.command || h.size != body.len() as u64 {
            return Ok(None);
        }
        let r = self.frame(now, h, body);
        if let Err(e) = &r {
            self.error = Some(e.clone());
        }
        r
    }

    /// The peer's metadata (READY, INITIATE): checked and handed on.
    fn accept_metadata<'a>(&mut self, meta: Metadata<'a>) -> Result<Item<'a>, Error> {
        if let Some(name) = meta.get(b"Socket-Type") {
            let peer = SocketType::from_name(name).ok_or(Error::UnknownSocketType)?;
            if !self.config.socket_type.is_compatible(peer) {
                return Err(Error::IncompatibleSocketType { peer });
            }
            self.peer_socket_type = Some(peer);
        }
        if let Some(id) = meta.get(b"Identity") {
            self.peer_identity = Identity::from_slice(id).map_err(|_| Error::IdentityTooLong)?;
        }
        Ok(Item::Ready(meta))
    }

    /// After the mechanism moved: report a wanted verdict, and enter traffic once both
    /// sides are done.
    fn after_mechanism_step(&mut self, now: Instant) {
        if !self.auth_asked && self.mechanism.auth_request().is_some() {
            self.auth_asked = true;
            self.auth_unreported = true;
        }
        if self.phase == Phase::Handshake && self.mechanism.is_complete() {
            self.phase = Phase::Traffic;
            self.timers[Timer::Handshake as usize] = None;
            self.timers[Timer::Ping as usize] = self.config.heartbeat_interval.map(|d| now + d);
            self.handshake_event = Some(Event::HandshakeSucceeded {
                peer_socket_type: self.peer_socket_type,
                version: self.version,
            });
        }
    }

    /// The authentication request waiting for a verdict, after
    /// [`Event::AuthRequested`]: the mechanism and the peer's credentials.
    pub fn auth_request(&self) -> Option<AuthRequest<'_>> {
        if self.error.is_some() {
            return None;
        }
        self.mechanism.auth_request()
    }

    /// Answer the authentication request with a ZAP status code: 200 lets the handshake go
    /// on; 300 closes the connection without a word; 400 and 500 send ERROR with that
    /// reason, then close (the error, [`Error::AuthRejected`], is returned once the ERROR
    /// has been transmitted). Any other code is treated as 300.
    ///
    /// A verdict while no request waits fails the connection with
    /// [`Error::UnexpectedVerdict`] (sticky, like every [`Error`]).
    pub fn handle_auth(&mut self, now: Instant, status: u16) -> Result<(), Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if let Err(e) = self.mechanism.handle_auth(status) {
            self.error = Some(e.clone());
            return Err(e);
        }
        self.after_mechanism_step(now);
        Ok(())
    }

    fn traffic_command<'a>(
        &mut self,
        now: Instant,
        cmd: Command<'a>,
    ) -> Result<Option<Item<'a>>, Error> {
        Ok(match cmd {
            Command::Ping { ttl, context } => {
                if ttl > 0 {
                    let ttl = Duration::from_millis(u64::from(ttl) * 100);
                    self.timers[Timer::Ttl as usize] = Some(now + ttl);
                }
                let context = context.get(..MAX_PING_CONTEXT).unwrap_or(context);
                // Cannot fail: cut to the capacity just above.
                self.pending.pong = heapless::Vec::from_slice(context).ok();
                self.pings_unreported = self.pings_unreported.saturating_add(1);
                None
            }
            Command::Pong { .. } => {
                self.pongs_unreported = self.pongs_unreported.saturating_add(1);
                None
            }
            Command::Subscribe(t) => Some(Item::Subscribe(t)),
            Command::Cancel(t) => Some(Item::Cancel(t)),
            Command::Join(g) => Some(Item::Join(g)),
            Command::Leave(g) => Some(Item::Leave(g)),
            Command::Error(reason) => return Err(Error::PeerError(reason_of(reason))),
            // libzmq ignores every other command once traffic flows.
            Command::Ready(_) | Command::Unknown { .. } => None,
        })
    }

    /// A data frame over MAXMSGSIZE (alone or with the frames before it) is reported as
    /// [`Error::MessageTooLarge`]; other header errors as they are.
    fn size_error(&self, is_command: bool, e: crate::codec::CodecError) -> Error {
        match (e, self.config.max_message_size) {
            (crate::codec::CodecError::FrameTooLarge { .. }, Some(limit)) if !is_command => {
                Error::MessageTooLarge { limit }
            }
            (e, _) => Error::from(e),
        }
    }

    /// The largest data frame the peer may announce now, checked against the header before
    /// a byte of the body is buffered: a message may not outgrow MAXMSGSIZE, counting the
    /// frames it already has, and no frame may exceed [`MAX_FRAME_SIZE`].
    fn data_frame_limit(&self) -> u64 {
        self.config
            .max_message_size
            .map_or(u64::MAX, |max| max.saturating_sub(self.in_message_size))
            .min(MAX_FRAME_SIZE)
    }

    fn data_frame<'a>(&mut self, body: &'a [u8], more: bool) -> Result<Item<'a>, Error> {
        let first = !self.in_mid_message;
        self.account_data_frame(body.len(), more)?;
        // Subscriptions in message form: from 3.0 peers, and from XSUB even over 3.1.
        if first && !more && self.config.socket_type.accepts_subscriptions() {
            match body.split_first() {
                Some((1, topic)) => return Ok(Item::Subscribe(topic)),
                Some((0, topic)) => return Ok(Item::Cancel(topic)),
                _ => {}
            }
        }
        Ok(Item::Frame { body, more })
    }

    /// The common case of [`handle_input`](Self::handle_input), taken without its general
    /// machinery: `input` starts with a whole clear data frame of a message in traffic.
    /// Then the frame is accounted for as `handle_input` would, and its layout returned.
    /// Anything else (partial input, a command, sealed traffic, a subscription in message
    /// form, a frame over a limit, a sticky error) changes nothing and gives `Ok(None)`:
    /// call `handle_input`, which deals with it.
    #[cfg(feature = "alloc")]
    pub(crate) fn take_data_frame(&mut self, input: &[u8]) -> Result<Option<DataFrame>, Error> {
        if self.error.is_some() || self.phase != Phase::Traffic || self.mechanism.seals() {
            return Ok(None);
        }
        let Ok(Status::Complete((header, header_len))) =
            FrameHeader::parse(input, self.data_frame_limit())
        else {
            return Ok(None);
        };
        let more = header.flags.more;
        let first = !self.in_mid_message;
        if header.flags.command || first && !more && self.config.socket_type.accepts_subscriptions()
        {
            return Ok(None);
        }
        // `FrameHeader::parse` bounds the size to `usize::MAX - 9`, so this cannot overflow.
        let len = header.size as usize;
        if input.len() - header_len < len {
            return Ok(None);
        }
        self.traffic_seen();
        if let Err(e) = self.account_data_frame(len, more) {
            self.error = Some(e.clone());
            return Err(e);
        }
        Ok(Some(DataFrame {
            header_len,
            len,
            more,
        }))
    }

    /// Count a data frame against MAXMSGSIZE and the frame cap, and track message bounds.
    fn account_data_frame(&mut self, len: usize, more: bool) -> Result<(), Error> {
        self.in_message_size = self.in_message_size.saturating_add(len as u64);
        if let Some(limit) = self.config.max_message_size {
            if self.in_message_size > limit {
                return Err(Error::MessageTooLarge { limit });
            }
        }
        self.in_message_frames = self.in_message_frames.saturating_add(1);
        if let Some(limit) = self.config.max_message_frames {
            if self.in_message_frames > limit {
                return Err(Error::TooManyFrames { limit });
            }
        }
        self.in_mid_message = more;
        if !more {
            self.in_message_size = 0;
            self.in_message_frames = 0;
        }
        Ok(())
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

    /// The earliest instant at which [`handle_timeout`](Self::handle_timeout) must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        self.timers.iter().flatten().min().copied()
    }

    /// Process every timer that has expired at `now`: handshake deadline, heartbeat PINGs,
    /// heartbeat timeout and the peer's TTL.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let expired = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        let failure = if expired(self.timers[Timer::Handshake as usize]) {
            Some(Error::HandshakeTimeout)
        } else if expired(self.timers[Timer::PongTimeout as usize]) {
            Some(Error::HeartbeatTimeout)
        } else if expired(self.timers[Timer::Ttl as usize]) {
            Some(Error::HeartbeatTtlExpired)
        } else {
            None
        };
        if let Some(e) = failure {
            self.error = Some(e.clone());
            return Err(e);
        }
        if expired(self.timers[Timer::Ping as usize]) {
            if let Some(ivl) = self.config.heartbeat_interval {
                self.pending.ping = true;
                self.timers[Timer::Ping as usize] = Some(now + ivl);
                let timeout = self.config.heartbeat_timeout.unwrap_or(ivl);
                let slot = &mut self.timers[Timer::PongTimeout as usize];
                if slot.is_none() {
                    *slot = Some(now + timeout);
                }
            }
        }
        Ok(())
    }

    fn next_control(&self) -> Option<Control> {
        let p = &self.pending;
        if p.signature {
            Some(Control::Signature)
        } else if p.greeting_rest {
            Some(Control::GreetingRest)
        } else if self.mechanism.pending_len(&self.config).is_some() {
            Some(Control::Handshake)
        } else if self.out_mid_message {
            None
        } else if p.pong.is_some() {
            Some(Control::Pong)
        } else if p.ping {
            Some(Control::Ping)
        } else {
            None
        }
    }

    fn ping_command(&self) -> Command<'static> {
        let ttl = self.config.heartbeat_ttl.map_or(0, |d| {
            u16::try_from(d.as_millis() / 100).unwrap_or(u16::MAX)
        });
        Command::Ping { ttl, context: &[] }
    }

    fn control_len(&self, c: Control) -> usize {
        match c {
            Control::Signature => SIGNATURE_LEN,
            Control::GreetingRest => GREETING_LEN - SIGNATURE_LEN,
            Control::Handshake => self.mechanism.pending_len(&self.config).unwrap_or(0),
            Control::Pong => self.frame_len(true, self.pong_command().body_len()),
            Control::Ping => self.frame_len(true, self.ping_command().body_len()),
        }
    }

    fn pong_command(&self) -> Command<'_> {
        Command::Pong {
            context: self.pending.pong.as_deref().unwrap_or_default(),
        }
    }

    /// Whether traffic is sealed (CURVE): every frame travels as a MESSAGE.
    fn sealing(&self) -> bool {
        self.phase == Phase::Traffic && self.mechanism.seals()
    }

    /// Length of the frame that carries `len` bytes of data (or a command body).
    fn frame_len(&self, command: bool, len: usize) -> usize {
        if self.sealing() {
            MechanismState::seal_len(len)
        } else if command {
            FrameHeader::command(len).encoded_len() + len
        } else {
            FrameHeader::data(len, false).encoded_len() + len
        }
    }

    /// Write one frame carrying `len` bytes that `body` writes: a data frame (with `more`)
    /// or a command, sealed when traffic is. On failure nothing is written.
    fn emit_frame(
        &mut self,
        command: bool,
        more: bool,
        len: usize,
        out: &mut [u8],
        body: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
    ) -> Result<usize, EncodeError> {
        if self.sealing() {
            return self.mechanism.seal(command, more, len, out, body);
        }
        let header = if command {
            FrameHeader::command(len)
        } else {
            FrameHeader::data(len, more)
        };
        ensure(out, header.encoded_len() + len)?;
        let mut w = Writer::new(out);
        w.emit(|out| header.emit(out))?;
        body(&mut w)?;
        Ok(w.len())
    }

    /// Whether data frames are transformed on the way out (CURVE): their bodies cannot be
    /// sent apart from their headers ([`send_frame_header`](Self::send_frame_header)).
    pub fn encrypts(&self) -> bool {
        self.mechanism.seals()
    }

    /// Write control frame `c` into `out` and mark it sent; nothing is marked on failure.
    fn emit_control(&mut self, c: Control, out: &mut [u8]) -> Result<usize, EncodeError> {
        ensure(out, self.control_len(c))?;
        let n = match c {
            Control::Signature | Control::GreetingRest => {
                let mut g = [0u8; GREETING_LEN];
                Greeting {
                    version: self.config.version,
                    mechanism: self.mechanism.name(),
                    as_server: self.config.security.is_server(),
                }
                .emit(&mut g)?;
                let (signature, rest) = g.split_at(SIGNATURE_LEN);
                let mut w = Writer::new(out);
                w.put(if c == Control::Signature {
                    signature
                } else {
                    rest
                })?;
                w.len()
            }
            Control::Handshake => match self.mechanism.emit(&self.config, out) {
                Ok(n) => n,
                Err(EmitError::InsufficientSize(e)) => return Err(e.into()),
                Err(EmitError::Failed { farewell, error }) => {
                    // The farewell (if any) still goes out; nothing after it.
                    self.error = Some(error);
                    farewell
                }
            },
            Control::Pong => {
                let pending = self.pending.pong.clone().unwrap_or_default();
                let cmd = Command::Pong { context: &pending };
                self.emit_frame(true, false, cmd.body_len(), out, |w| {
                    w.emit(|out| cmd.emit_body(out))
                })?
            }
            Control::Ping => {
                let cmd = self.ping_command();
                self.emit_frame(true, false, cmd.body_len(), out, |w| {
                    w.emit(|out| cmd.emit_body(out))
                })?
            }
        };
        match c {
            Control::Signature => self.pending.signature = false,
            Control::GreetingRest => self.pending.greeting_rest = false,
            Control::Handshake => {}
            Control::Pong => self.pending.pong = None,
            Control::Ping => self.pending.ping = false,
        }
        Ok(n)
    }

    /// Write every pending control frame (greeting stages, READY, PONG, PING) that fits into
    /// `out`; returns the bytes written (0 when nothing is pending or after a fatal error).
    ///
    /// Fails only when something is pending and not even the first frame fits.
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        if self.error.is_some() {
            return Ok(0);
        }
        let mut written = 0;
        while self.error.is_none() {
            let Some(c) = self.next_control() else {
                break;
            };
            let rest = out.get_mut(written..).unwrap_or_default();
            match self.emit_control(c, rest) {
                Ok(n) => written += n,
                Err(EncodeError::InsufficientSize { required }) => {
                    if written == 0 {
                        return Err(InsufficientSize { required });
                    }
                    break;
                }
                Err(EncodeError::Closed(e)) => {
                    self.error = Some(e);
                    break;
                }
                Err(_) => break,
            }
        }
        Ok(written)
    }

    /// Whether any control frame waits (cheaper than [`next_control`](Self::next_control)).
    fn control_pending(&self) -> bool {
        let p = &self.pending;
        p.signature || p.greeting_rest || p.ping || p.pong.is_some() || self.mechanism.has_pending()
    }

    /// Total length of every control frame currently pending.
    fn pending_control_len(&self) -> usize {
        let p = &self.pending;
        let mut len = 0;
        for (set, c) in [
            (p.signature, Control::Signature),
            (p.greeting_rest, Control::GreetingRest),
            (
                self.mechanism.pending_len(&self.config).is_some(),
                Control::Handshake,
            ),
            (p.pong.is_some() && !self.out_mid_message, Control::Pong),
            (p.ping && !self.out_mid_message, Control::Ping),
        ] {
            if set {
                len += self.control_len(c);
            }
        }
        len
    }

    fn check_send(&self) -> Result<(), EncodeError> {
        if let Some(e) = &self.error {
            return Err(EncodeError::Closed(e.clone()));
        }
        if self.phase != Phase::Traffic {
            return Err(EncodeError::NotReady);
        }
        Ok(())
    }

    /// Write pending control frames, then one frame carrying `len` bytes that `body`
    /// writes (see [`emit_frame`](Self::emit_frame)), or nothing at all.
    fn write_after_control(
        &mut self,
        out: &mut [u8],
        command: bool,
        more: bool,
        len: usize,
        body: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
    ) -> Result<usize, EncodeError> {
        let frame_len = self.frame_len(command, len);
        self.control_then(out, frame_len, |conn, rest| {
            conn.emit_frame(command, more, len, rest, body)
        })
    }

    /// Write pending control frames, then `len` more bytes that `f` writes into the rest of
    /// `out`, or nothing at all.
    fn control_then(
        &mut self,
        out: &mut [u8],
        len: usize,
        f: impl FnOnce(&mut Self, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Result<usize, EncodeError> {
        if !self.control_pending() {
            // The common case in traffic: nothing to put in front.
            return f(self, out);
        }
        ensure(out, self.pending_control_len() + len)?;
        let n = self.poll_transmit(out)?;
        if let Some(e) = &self.error {
            return Err(EncodeError::Closed(e.clone()));
        }
        let rest = out.get_mut(n..).unwrap_or_default();
        Ok(n + f(self, rest)?)
    }

    /// Encode one data frame (header and body) into `out`, after any pending control frames;
    /// returns the bytes written. On any error nothing is written.
    pub fn send_frame(
        &mut self,
        body: &[u8],
        more: bool,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        self.check_send()?;
        let n = self.write_after_control(out, false, more, body.len(), |w| w.put(body))?;
        self.out_mid_message = more;
        Ok(n)
    }

    /// The header of a clear data frame that can go out now with nothing in front of it
    /// (traffic, no control frame pending, no sealing, no error), taken as sent: the caller
    /// writes it and the body. `None` leaves everything as it was: use
    /// [`send_frame`](Self::send_frame), which deals with the rest.
    #[cfg(feature = "alloc")]
    pub(crate) fn take_plain_header(&mut self, len: usize, more: bool) -> Option<FrameHeader> {
        if self.error.is_some()
            || self.phase != Phase::Traffic
            || self.mechanism.seals()
            || self.control_pending()
        {
            return None;
        }
        self.out_mid_message = more;
        Some(FrameHeader::data(len, more))
    }

    /// Like [`send_frame`](Self::send_frame) but writes only the header: the driver sends
    /// the `len` body bytes itself, right after, without copying them (vectored write).
    /// Not possible when traffic is encrypted ([`encrypts`](Self::encrypts)): then
    /// [`EncodeError::Sealed`] is returned and nothing is written.
    pub fn send_frame_header(
        &mut self,
        len: usize,
        more: bool,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        self.check_send()?;
        if self.mechanism.seals() {
            return Err(EncodeError::Sealed);
        }
        let header = FrameHeader::data(len, more);
        let n = self.control_then(out, header.encoded_len(), |_, rest| Ok(header.emit(rest)?))?;
        self.out_mid_message = more;
        Ok(n)
    }

    /// Encode a command frame (SUBSCRIBE, JOIN, ...) into `out`, after pending control frames.
    pub fn send_command(
        &mut self,
        cmd: &Command<'_>,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        self.check_send()?;
        if self.out_mid_message {
            return Err(EncodeError::MidMessage);
        }
        self.write_after_control(out, true, false, cmd.body_len(), |w| {
            w.emit(|out| cmd.emit_body(out))
        })
    }

    /// Subscribe to `topic` on the peer: a SUBSCRIBE command to a 3.1 peer, a message
    /// `0x01 topic` to a 3.0 peer.
    pub fn send_subscribe(&mut self, topic: &[u8], out: &mut [u8]) -> Result<usize, EncodeError> {
        self.send_subscription(true, topic, out)
    }

    /// Cancel a subscription: CANCEL to a 3.1 peer, a message `0x00 topic` to a 3.0 peer.
    pub fn send_cancel(&mut self, topic: &[u8], out: &mut [u8]) -> Result<usize, EncodeError> {
        self.send_subscription(false, topic, out)
    }

    fn send_subscription(
        &mut self,
        subscribe: bool,
        topic: &[u8],
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        if self.version.is_v31() {
            let cmd = if subscribe {
                Command::Subscribe(topic)
            } else {
                Command::Cancel(topic)
            };
            return self.send_command(&cmd, out);
        }
        self.check_send()?;
        if self.out_mid_message {
            return Err(EncodeError::MidMessage);
        }
        self.write_after_control(out, false, false, topic.len() + 1, |w| {
            w.put(&[u8::from(subscribe)])?;
            w.put(topic)
        })
    }
}
