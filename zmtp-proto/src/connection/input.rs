//! Bytes in: the greeting, handshake commands, traffic, and the frame accounting.
//!
//! [`Connection::handle_input`] takes at most one greeting stage or one frame from the
//! front of the input. Greeting stages negotiate the version and check the mechanism;
//! during the handshake, commands go to the mechanism, which may ask for a verdict on the
//! peer ([`Connection::handle_auth`]); in traffic, data frames are counted against the
//! message limits before they are handed on, and commands (PING, SUBSCRIBE, JOIN...)
//! become items or queue their answers. Any error is recorded as the sticky error.

use super::{Connection, Event, Input, Item, Legacy, Phase, SIGNATURE};
use crate::codec::{
    CodecError, Command, FrameHeader, Mechanism, Metadata, Status, V1Header, Version, GREETING_LEN,
    SIGNATURE_LEN,
};
use crate::config::Identity;
use crate::error::Error;
use crate::mechanism::Security;
use crate::mechanism::{reason_of, AuthRequest};
use crate::socket_type::SocketType;
use crate::time::Instant;

/// Frames announcing more bytes than this are refused whatever the limits: no address space
/// (2^47 bytes for user space on x86-64 and AArch64) could hold them, so such a header can
/// only be an attack or garbage.
pub const MAX_FRAME_SIZE: u64 = 1 << 47;

impl<'a> Input<'a> {
    /// Nothing consumed: `needed` bytes must be buffered first.
    fn partial(needed: usize) -> Self {
        Input {
            consumed: 0,
            needed,
            item: None,
            payload: 0..0,
        }
    }

    /// `consumed` bytes used, nothing to hand on.
    fn consumed(consumed: usize) -> Self {
        Input {
            consumed,
            needed: 0,
            item: None,
            payload: 0..0,
        }
    }

    /// `consumed` bytes used, ending with the payload of `item` (if any).
    fn taken(consumed: usize, item: Option<Item<'a>>) -> Self {
        match item {
            Some(item) => Input {
                consumed,
                needed: 0,
                payload: consumed - item.payload().len()..consumed,
                item: Some(item),
            },
            None => Input::consumed(consumed),
        }
    }
}

impl Connection {
    /// Feed received bytes. Processes at most one greeting stage or one frame from the
    /// front of `input` and says how many bytes it used.
    ///
    /// Call it again on the remaining bytes until it consumes nothing; then `needed` says
    /// how many bytes must be buffered before the next call can make progress. `input` is
    /// mutable so that encrypting mechanisms can decrypt in place.
    // Inlined into the driver's read loop, where every received message passes: the common
    // case (a data frame of clear traffic) is the first branch of `input_frame`.
    #[inline]
    pub fn handle_input<'a>(
        &mut self,
        now: Instant,
        input: &'a mut [u8],
    ) -> Result<Input<'a>, Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let r = match self.phase {
            Phase::Handshake | Phase::Traffic => self.input_frame(now, input),
            Phase::V1Traffic => self.input_v1_frame(input),
            Phase::Signature => self.input_signature(input),
            Phase::Revision => self.input_revision(input),
            Phase::GreetingRest => self.input_greeting_rest(now, input),
            Phase::LegacyType(legacy) => self.input_legacy_type(legacy, input),
            Phase::LegacyIdentity(legacy) => self.input_legacy_identity(legacy, input),
        };
        r.map_err(|e| self.fail(e))
    }

    /// The first stage of the peer's greeting: its 10-byte signature. A first byte other
    /// than `0xFF`, or a byte 9 without bit 0, is the start of an unversioned ZMTP 1.0
    /// peer's identity frame (libzmq's test). Our major version goes out only after a
    /// versioned signature: to a 1.0 peer it would be the start of a frame.
    fn input_signature<'a>(&mut self, input: &[u8]) -> Result<Input<'a>, Error> {
        let Some(&first) = input.first() else {
            return Ok(Input::partial(1));
        };
        let versioned = if first != 0xFF {
            false
        } else {
            let Some(&flags) = input.get(SIGNATURE - 1) else {
                return Ok(Input::partial(SIGNATURE));
            };
            flags & 0x01 != 0
        };
        if !versioned {
            if !self.legacy_allowed() {
                return Err(CodecError::BadSignature.into());
            }
            // Nothing consumed: those bytes begin the peer's identity frame.
            self.start_legacy(Legacy::Unversioned);
            return self.input_legacy_identity(Legacy::Unversioned, input);
        }
        self.queue_major();
        self.phase = Phase::Revision;
        Ok(Input::consumed(SIGNATURE))
    }

    /// The peer's major version (its revision). 0 and 1 are the 1.0 and 2.0 peers that
    /// libzmq still talks to; any other value is 3.x (2 included, as libzmq does).
    fn input_revision<'a>(&mut self, input: &[u8]) -> Result<Input<'a>, Error> {
        let Some(&major) = input.first() else {
            return Ok(Input::partial(1));
        };
        let legacy = match major {
            0 => Legacy::Revision0,
            1 => Legacy::Revision1,
            _ => {
                self.peer_major = major;
                self.phase = Phase::GreetingRest;
                self.queue_greeting_rest();
                return Ok(Input::consumed(1));
            }
        };
        if !self.legacy_allowed() {
            return Err(Error::UnsupportedVersion {
                major: legacy.version().major,
            });
        }
        self.start_legacy(legacy);
        self.phase = Phase::LegacyType(legacy);
        Ok(Input::consumed(1))
    }

    /// Whether a peer older than 3.0 may go on: only when allowed and without security,
    /// since such a peer has no mechanism (libzmq refuses it whenever ZAP is enabled).
    fn legacy_allowed(&self) -> bool {
        self.config.legacy_peers
            && matches!(self.config.security, Security::Null)
            && !self.config.authenticate_null
    }

    /// A 1.0 or 2.0 peer: our answer (socket type and identity) is queued.
    fn start_legacy(&mut self, legacy: Legacy) {
        self.legacy = Some(legacy);
        self.version = legacy.version();
        self.phase = Phase::LegacyIdentity(legacy);
        self.queue_legacy_hello(legacy);
    }

    /// A versioned 1.0 or 2.0 peer's socket-type byte. libzmq never checks it; neither do
    /// we, but a known type is reported with the handshake.
    fn input_legacy_type<'a>(&mut self, legacy: Legacy, input: &[u8]) -> Result<Input<'a>, Error> {
        let Some(&ty) = input.first() else {
            return Ok(Input::partial(1));
        };
        self.peer_socket_type = SocketType::from_number(ty);
        self.phase = Phase::LegacyIdentity(legacy);
        Ok(Input::consumed(1))
    }

    /// A 1.0 or 2.0 peer's identity: its first frame, in its framing. With it the
    /// connection is established: there is no mechanism, and no heartbeats (libzmq sends
    /// none to such peers). It yields an empty [`Item::Ready`].
    fn input_legacy_identity<'a>(
        &mut self,
        legacy: Legacy,
        input: &[u8],
    ) -> Result<Input<'a>, Error> {
        const MAX_IDENTITY: u64 = 255;
        let parsed = if legacy.v1_framing() {
            V1Header::parse(input, MAX_IDENTITY)
                .map(|s| s.complete().map(|(h, n)| (h.size, false, n)))
        } else {
            FrameHeader::parse(input, MAX_IDENTITY)
                .map(|s| s.complete().map(|(h, n)| (h.size, h.flags.command, n)))
        };
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err(CodecError::FrameTooLarge { .. }) => return Err(Error::IdentityTooLong),
            Err(e) => return Err(e.into()),
        };
        let Some((size, command, header_len)) = parsed else {
            let header = if legacy.v1_framing() {
                super::v1_header_needed(input)
            } else {
                2
            };
            return Ok(Input::partial(header.max(input.len() + 1)));
        };
        if command {
            return Err(Error::UnexpectedCommand);
        }
        // At most 255, checked above.
        let total = header_len + size as usize;
        let Some(id) = input.get(header_len..total) else {
            return Ok(Input::partial(total));
        };
        // Cannot fail: at most 255 bytes.
        self.peer_identity = Identity::from_slice(id).map_err(|_| Error::IdentityTooLong)?;
        self.traffic_seen();
        self.end_handshake_deadline();
        self.phase = if legacy.v1_framing() {
            Phase::V1Traffic
        } else {
            Phase::Traffic
        };
        self.handshake_event = Some(Event::HandshakeSucceeded {
            peer_socket_type: self.peer_socket_type,
            version: self.version,
        });
        // In place of a READY: metadata without properties (the identity is
        // [`peer_identity`](Connection::peer_identity)), so that the handshake is seen
        // before the first message.
        let none = Metadata::parse(&[])?;
        Ok(Input::taken(total, Some(Item::Ready(none))))
    }

    /// One frame of ZMTP 1.0 traffic: a data frame (1.0 has no commands).
    fn input_v1_frame<'a>(&mut self, input: &'a [u8]) -> Result<Input<'a>, Error> {
        let limit = self.data_frame_limit();
        let parsed = V1Header::parse(input, limit).map_err(|e| self.size_error(false, e))?;
        let Status::Complete((header, header_len)) = parsed else {
            return Ok(Input::partial(super::v1_header_needed(input)));
        };
        // `V1Header::parse` bounds the size so that this cannot overflow.
        let total = header_len + header.size as usize;
        let Some(body) = input.get(header_len..total) else {
            return Ok(Input::partial(total));
        };
        self.traffic_seen();
        let item = self.data_frame(body, header.more)?;
        Ok(Input::taken(total, Some(item)))
    }

    /// The rest of the peer's greeting: it settles the version and starts the mechanism.
    fn input_greeting_rest<'a>(&mut self, now: Instant, input: &[u8]) -> Result<Input<'a>, Error> {
        const REST: usize = GREETING_LEN - SIGNATURE_LEN;
        let Some(rest) = input.get(..REST) else {
            return Ok(Input::partial(REST));
        };
        // libzmq's rule: every peer but a 3.0 one speaks 3.1.
        let peer_v31 = !(self.peer_major == 3 && rest[0] == 0);
        let mut theirs = [0u8; 20];
        theirs.copy_from_slice(&rest[1..21]);
        let theirs = Mechanism(theirs);
        let ours = self.mechanism.name();
        if theirs != ours {
            return Err(Error::MechanismMismatch { ours, theirs });
        }
        self.version = if self.config.version.is_v31() && peer_v31 {
            Version::V3_1
        } else {
            Version::V3_0
        };
        self.phase = Phase::Handshake;
        self.mechanism.start()?;
        self.after_mechanism_step(now);
        Ok(Input::consumed(REST))
    }

    /// One frame from the front of `input`, once the header was checked against the limit
    /// of its kind and the whole frame is there.
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
        // Any complete frame counts as traffic for heartbeats.
        self.traffic_seen();
        let item =
            if self.phase == Phase::Traffic && !header.flags.command && !self.mechanism.seals() {
                // The common case first: a data frame of clear traffic.
                Some(self.data_frame(body, header.flags.more)?)
            } else {
                self.other_frame(now, header, body)?
            };
        Ok(Input::taken(total, item))
    }

    /// A complete frame other than a data frame of clear traffic: a command, a sealed
    /// frame, or a message before the handshake is done (an error). Out of line, so that
    /// the common case stays small where it is inlined.
    #[inline(never)]
    fn other_frame<'a>(
        &mut self,
        now: Instant,
        header: FrameHeader,
        body: &'a mut [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        match self.phase {
            Phase::Traffic => self.traffic_frame(now, header, body),
            _ if header.flags.command => self.handshake_command(now, body),
            _ => Err(Error::UnexpectedMessage),
        }
    }

    /// A command received during the handshake: the mechanism's business.
    fn handshake_command<'a>(
        &mut self,
        now: Instant,
        body: &'a mut [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        let meta = self.mechanism.handle_command(body)?;
        let item = match meta {
            Some(meta) => Some(self.accept_metadata(meta)?),
            None => None,
        };
        self.after_mechanism_step(now);
        Ok(item)
    }

    /// A frame of traffic other than a clear data frame: a clear command, or a sealed
    /// frame (CURVE), opened in place.
    fn traffic_frame<'a>(
        &mut self,
        now: Instant,
        header: FrameHeader,
        body: &'a mut [u8],
    ) -> Result<Option<Item<'a>>, Error> {
        if !self.mechanism.seals() {
            return self.traffic_command(now, Command::parse(body)?);
        }
        if header.flags.command {
            return Err(Error::UnexpectedCommand);
        }
        let (flags, payload) = self.mechanism.open(body)?;
        if flags & 0x02 != 0 {
            self.traffic_command(now, Command::parse(payload)?)
        } else {
            Ok(Some(self.data_frame(payload, flags & 0x01 != 0)?))
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
                return Err(self.fail(e));
            }
        };
        let (h, header_len) = parsed;
        if header_len != header.len() || h.flags.command || h.size != body.len() as u64 {
            return Ok(None);
        }
        // Time plays no part in a data frame: only commands (PING) read it.
        let _ = now;
        self.traffic_seen();
        self.data_frame(body, h.flags.more)
            .map(Some)
            .map_err(|e| self.fail(e))
    }

    /// The peer's metadata (READY, INITIATE): checked and handed on.
    fn accept_metadata<'a>(&mut self, meta: Metadata<'a>) -> Result<Item<'a>, Error> {
        if let Some(name) = meta.get(b"Socket-Type") {
            let peer = SocketType::from_name(name).ok_or(Error::UnknownSocketType)?;
            if !self.config.any_peer_type && !self.config.socket_type.is_compatible(peer) {
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
            self.start_heartbeats(now);
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
            return Err(self.fail(e));
        }
        self.after_mechanism_step(now);
        Ok(())
    }

    /// A command received in traffic (clear or unsealed).
    fn traffic_command<'a>(
        &mut self,
        now: Instant,
        cmd: Command<'a>,
    ) -> Result<Option<Item<'a>>, Error> {
        Ok(match cmd {
            Command::Ping { ttl, context } => {
                self.peer_ttl(now, ttl);
                self.queue_pong(context);
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
    fn size_error(&self, is_command: bool, e: CodecError) -> Error {
        match (e, self.config.max_message_size) {
            (CodecError::FrameTooLarge { .. }, Some(limit)) if !is_command => {
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

    /// A data frame of traffic (clear or unsealed): counted, and handed on as a frame or,
    /// in message form, as a subscription. Always inlined: it is most of the common case.
    #[inline(always)]
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

    /// The bulk path of clear traffic: the single-frame data messages at the front of
    /// `input`, up to `max`, until a frame of another kind comes (a command, a frame
    /// with MORE, an incomplete one, one over a limit); returns the bytes they take and
    /// how many they are.
    ///
    /// Only where every such frame is a plain message: in traffic, unsealed, between
    /// messages, and on a socket type that takes no subscriptions in message form.
    /// Anything else is left for [`handle_input`](Self::handle_input), which also reports
    /// the errors. A frame found here counts as [`handle_input`] would count it.
    #[cfg(feature = "alloc")]
    pub(crate) fn scan_messages(&mut self, input: &[u8], max: usize) -> (usize, usize) {
        if self.error.is_some()
            || self.phase != Phase::Traffic
            || self.mechanism.seals()
            || self.in_mid_message
            || self.config.socket_type.accepts_subscriptions()
            || self.config.max_message_frames == Some(0)
        {
            return (0, 0);
        }
        let limit = self
            .config
            .max_message_size
            .unwrap_or(u64::MAX)
            .min(MAX_FRAME_SIZE);
        let mut at = 0;
        let mut n = 0;
        while n < max {
            let rest = input.get(at..).unwrap_or_default();
            let (header, size) = match rest {
                [0, size, ..] => (2, u64::from(*size)),
                [0x02, a, b, c, d, e, f, g, h, ..] => {
                    (9, u64::from_be_bytes([*a, *b, *c, *d, *e, *f, *g, *h]))
                }
                _ => break,
            };
            if size > limit || (header == 9 && size < 256) {
                // Over a limit, or a long header for a short frame: the general path
                // decides (and fails the connection where it must).
                break;
            }
            // `size <= MAX_FRAME_SIZE`, so this cannot overflow.
            let end = at + header + size as usize;
            if end > input.len() {
                break;
            }
            at = end;
            n += 1;
        }
        if n > 0 {
            self.traffic_seen();
        }
        (at, n)
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
}
