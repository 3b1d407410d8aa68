//! Bytes out: control frames, application frames and commands.
//!
//! Control frames (greeting stages, the mechanism's handshake commands, PONG, PING) wait
//! in [`Pending`] until [`Connection::poll_transmit`] writes them, in that order. The
//! `send_*` calls write application frames and commands into the caller's buffer behind
//! any control frame still pending, so that the order on the wire is always right; once
//! traffic is sealed (CURVE) every frame goes through the mechanism. A call that cannot
//! write everything writes nothing.

use super::{Connection, Legacy, Phase, SIGNATURE};
use crate::codec::{
    ensure, Command, FrameHeader, Greeting, InsufficientSize, V1Header, Version, Writer,
    GREETING_LEN, MAX_PING_CONTEXT, SIGNATURE_LEN,
};
use crate::error::EncodeError;
use crate::mechanism::{EmitError, MechanismState};

/// A control frame waiting for `poll_transmit`, in the order they go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Control {
    Signature,
    /// Our major version, once the peer's signature showed a versioned peer.
    Major,
    GreetingRest,
    /// To a 1.0 or 2.0 peer: our socket type and identity frame, or (unversioned) the
    /// body of the identity frame the signature began.
    LegacyHello,
    /// The mechanism's next handshake command (or farewell ERROR).
    Handshake,
    Pong,
    Ping,
}

/// The control frames waiting to be sent, besides the mechanism's own.
#[derive(Debug, Clone, Default)]
pub(super) struct Pending {
    signature: bool,
    major: bool,
    greeting_rest: bool,
    legacy_hello: Option<Legacy>,
    ping: bool,
    /// The contexts of the PONGs to send (each PING's, cut to [`MAX_PING_CONTEXT`]), in
    /// order: every PING gets its PONG, as from libzmq, up to [`MAX_PONGS`] waiting; past
    /// that, a PING replaces the newest waiting one (so a peer that sends PINGs without
    /// reading cannot make us hold more).
    pongs: heapless::Deque<heapless::Vec<u8, MAX_PING_CONTEXT>, MAX_PONGS>,
}

/// Most PONGs waiting to be written.
const MAX_PONGS: usize = 8;

impl Pending {
    /// A new connection's: the first greeting stage goes out at once.
    pub(super) fn starting() -> Pending {
        Pending {
            signature: true,
            ..Pending::default()
        }
    }
}

impl Connection {
    /// Whether control frames are waiting for [`poll_transmit`](Self::poll_transmit).
    pub fn wants_write(&self) -> bool {
        self.error.is_none() && self.next_control().is_some()
    }

    /// Write every pending control frame (greeting stages, READY, PONG, PING) that fits into
    /// `out`; returns the bytes written (0 when nothing is pending or after a fatal error).
    ///
    /// Fails only when something is pending and not even the first frame fits.
    pub fn poll_transmit(&mut self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        if self.error.is_some() || !self.control_pending() {
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

    /// The peer's signature arrived and is versioned: our major version may go.
    pub(super) fn queue_major(&mut self) {
        self.pending.major = true;
    }

    /// The peer's major version arrived (3.x): the rest of our greeting may go.
    pub(super) fn queue_greeting_rest(&mut self) {
        self.pending.greeting_rest = true;
    }

    /// The peer is a 1.0 or 2.0 peer: our answer to it may go.
    pub(super) fn queue_legacy_hello(&mut self, legacy: Legacy) {
        self.pending.legacy_hello = Some(legacy);
    }

    /// Take a due heartbeat to send by other means, so that no PING command is written
    /// for it: whether one was due. A ZWS stream sends a WebSocket ping instead, as
    /// libzmq does over ws (under CURVE a PING command would travel sealed, where the
    /// WebSocket layer cannot turn it into a ping, and libzmq does not answer it).
    pub fn take_ping(&mut self) -> bool {
        core::mem::take(&mut self.pending.ping)
    }

    /// A heartbeat is due.
    pub(super) fn queue_ping(&mut self) {
        self.pending.ping = true;
    }

    /// Answer the peer's PING (one PONG, for the latest PING).
    pub(super) fn queue_pong(&mut self, context: &[u8]) {
        let context = context.get(..MAX_PING_CONTEXT).unwrap_or(context);
        // Cannot fail: cut to the capacity just above.
        let Ok(context) = heapless::Vec::from_slice(context) else {
            return;
        };
        let pongs = &mut self.pending.pongs;
        if pongs.is_full() {
            pongs.pop_back();
        }
        // Cannot fail: room was made just above.
        let _ = pongs.push_back(context);
    }

    fn next_control(&self) -> Option<Control> {
        let p = &self.pending;
        if p.signature {
            Some(Control::Signature)
        } else if p.major {
            Some(Control::Major)
        } else if p.greeting_rest {
            Some(Control::GreetingRest)
        } else if p.legacy_hello.is_some() {
            Some(Control::LegacyHello)
        } else if self.mechanism.pending_len(&self.config).is_some() {
            Some(Control::Handshake)
        } else if self.out_mid_message {
            None
        } else if !p.pongs.is_empty() {
            Some(Control::Pong)
        } else if p.ping {
            Some(Control::Ping)
        } else {
            None
        }
    }

    /// Whether any control frame waits (cheaper than [`next_control`](Self::next_control));
    /// when not, [`poll_transmit`](Self::poll_transmit) writes nothing.
    #[inline]
    pub(crate) fn control_pending(&self) -> bool {
        let p = &self.pending;
        p.signature
            || p.major
            || p.greeting_rest
            || p.legacy_hello.is_some()
            || p.ping
            || !p.pongs.is_empty()
            || self.mechanism.has_pending()
    }

    /// Total length of every control frame currently pending.
    fn pending_control_len(&self) -> usize {
        let p = &self.pending;
        let mut len = 0;
        for (set, c) in [
            (p.signature, Control::Signature),
            (p.major, Control::Major),
            (p.greeting_rest, Control::GreetingRest),
            (p.legacy_hello.is_some(), Control::LegacyHello),
            (
                self.mechanism.pending_len(&self.config).is_some(),
                Control::Handshake,
            ),
            (p.ping && !self.out_mid_message, Control::Ping),
        ] {
            if set {
                len += self.control_len(c);
            }
        }
        if !self.out_mid_message {
            for context in &p.pongs {
                len += self.frame_len(true, Command::Pong { context }.body_len());
            }
        }
        len
    }

    fn control_len(&self, c: Control) -> usize {
        match c {
            Control::Signature => SIGNATURE,
            Control::Major => 1,
            Control::GreetingRest => GREETING_LEN - SIGNATURE_LEN,
            Control::LegacyHello => self.legacy_hello_len(),
            Control::Handshake => self.mechanism.pending_len(&self.config).unwrap_or(0),
            Control::Pong => self.frame_len(true, self.pong_command().body_len()),
            Control::Ping => self.frame_len(true, self.ping_command().body_len()),
        }
    }

    fn ping_command(&self) -> Command<'static> {
        let ttl = self.config.heartbeat_ttl.map_or(0, |d| {
            u16::try_from(d.as_millis() / 100).unwrap_or(u16::MAX)
        });
        Command::Ping { ttl, context: &[] }
    }

    fn pong_command(&self) -> Command<'_> {
        Command::Pong {
            context: self.pending.pongs.front().map_or(&[], |c| c.as_slice()),
        }
    }

    /// Write control frame `c` into `out` and mark it sent; nothing is marked on failure.
    fn emit_control(&mut self, c: Control, out: &mut [u8]) -> Result<usize, EncodeError> {
        ensure(out, self.control_len(c))?;
        let n = match c {
            Control::Signature | Control::Major | Control::GreetingRest => {
                let mut g = [0u8; GREETING_LEN];
                Greeting {
                    version: self.config.version,
                    mechanism: self.mechanism.name(),
                    as_server: self.config.security.is_server(),
                }
                .emit(&mut g)?;
                // As libzmq: the padding is the identity's length plus one, so that the
                // signature also reads as a 1.0 peer's long-form identity header.
                let id_len = self.config.identity().len() as u64 + 1;
                g[1..SIGNATURE - 1].copy_from_slice(&id_len.to_be_bytes());
                let stage = match c {
                    Control::Signature => &g[..SIGNATURE],
                    Control::Major => &g[SIGNATURE..SIGNATURE_LEN],
                    _ => &g[SIGNATURE_LEN..],
                };
                let mut w = Writer::new(out);
                w.put(stage)?;
                w.len()
            }
            Control::LegacyHello => self.emit_legacy_hello(out)?,
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
                let pending = self.pending.pongs.front().cloned().unwrap_or_default();
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
            Control::Major => self.pending.major = false,
            Control::GreetingRest => self.pending.greeting_rest = false,
            Control::LegacyHello => self.pending.legacy_hello = None,
            Control::Handshake => {}
            Control::Pong => {
                self.pending.pongs.pop_front();
            }
            Control::Ping => self.pending.ping = false,
        }
        Ok(n)
    }

    /// Length of our answer to a 1.0 or 2.0 peer (see [`emit_legacy_hello`]).
    ///
    /// [`emit_legacy_hello`]: Self::emit_legacy_hello
    fn legacy_hello_len(&self) -> usize {
        let id = self.config.identity().len();
        match self.pending.legacy_hello {
            None => 0,
            Some(Legacy::Unversioned) => id,
            Some(Legacy::Revision0) => 1 + V1Header::new(id, false).encoded_len() + id,
            Some(Legacy::Revision1) => 1 + FrameHeader::data(id, false).encoded_len() + id,
        }
    }

    /// Our answer to a 1.0 or 2.0 peer, as libzmq's: to a versioned one our socket type's
    /// number, then our identity as a frame of its framing; to an unversioned one the
    /// identity's body only, since our signature was that frame's header.
    fn emit_legacy_hello(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        let id = self.config.identity();
        let mut w = Writer::new(out);
        match self.pending.legacy_hello {
            None => {}
            Some(Legacy::Unversioned) => w.put(id)?,
            Some(Legacy::Revision0) => {
                w.put(&[self.config.socket_type as u8])?;
                w.emit(|out| V1Header::new(id.len(), false).emit(out))?;
                w.put(id)?;
            }
            Some(Legacy::Revision1) => {
                w.put(&[self.config.socket_type as u8])?;
                w.emit(|out| FrameHeader::data(id.len(), false).emit(out))?;
                w.put(id)?;
            }
        }
        Ok(w.len())
    }

    /// Whether traffic is sealed (CURVE): every frame travels as a MESSAGE.
    fn sealing(&self) -> bool {
        self.phase == Phase::Traffic && self.mechanism.seals()
    }

    /// Whether a frame can go out now as it is, with nothing in front of it: traffic, not
    /// sealed, no control frame pending, no error. The common case of every send.
    fn writes_through(&self) -> bool {
        self.error.is_none()
            && self.phase == Phase::Traffic
            && !self.mechanism.seals()
            && !self.control_pending()
    }

    /// Length of the frame that carries `len` bytes of data (or a command body).
    fn frame_len(&self, command: bool, len: usize) -> usize {
        if self.sealing() {
            MechanismState::seal_len(len)
        } else if self.phase == Phase::V1Traffic {
            V1Header::new(len, false).encoded_len() + len
        } else {
            clear_header(command, false, len).encoded_len() + len
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
            let sealed = self.mechanism.seal(command, more, len, out, body);
            if let Err(EncodeError::Closed(e)) = &sealed {
                // The mechanism cannot seal any more (nonces exhausted): fatal.
                self.error = Some(e.clone());
            }
            return sealed;
        }
        if self.phase == Phase::V1Traffic {
            return Ok(emit_v1(more, len, out, body)?);
        }
        Ok(emit_clear(command, more, len, out, body)?)
    }

    /// Whether anything may be sent: no error, and the handshake done.
    fn check_send(&self) -> Result<(), EncodeError> {
        if let Some(e) = &self.error {
            return Err(EncodeError::Closed(e.clone()));
        }
        if !matches!(self.phase, Phase::Traffic | Phase::V1Traffic) {
            return Err(EncodeError::NotReady);
        }
        Ok(())
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

    /// Write one frame carrying `len` bytes that `body` writes (see
    /// [`emit_frame`](Self::emit_frame)) behind any pending control frame, or nothing at
    /// all. The caller has checked that the frame may be sent.
    fn write_frame(
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

    /// Encode one data frame (header and body) into `out`, after any pending control frames;
    /// returns the bytes written. On any error nothing is written.
    // Inlined into the caller: its first branch is every sent message's path.
    #[inline]
    pub fn send_frame(
        &mut self,
        body: &[u8],
        more: bool,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        // The common case first: the frame goes out as it is.
        if self.writes_through() {
            let n = emit_clear(false, more, body.len(), out, |w| w.put(body))?;
            self.out_mid_message = more;
            return Ok(n);
        }
        self.send_frame_behind(body, more, out)
    }

    /// Whether a clear data frame may go out as it is now (in traffic, unsealed, nothing
    /// queued before it); if so it counts as sent, and the caller puts it in the output.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn clear_frame_sent(&mut self, more: bool) -> bool {
        let through = self.writes_through();
        if through {
            self.out_mid_message = more;
        }
        through
    }

    /// [`send_frame`](Self::send_frame) when the frame cannot go out as it is: refused,
    /// behind control frames, or sealed. Out of line, so that the common case stays small
    /// where it is inlined.
    #[inline(never)]
    fn send_frame_behind(
        &mut self,
        body: &[u8],
        more: bool,
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        self.check_send()?;
        let n = self.write_frame(out, false, more, body.len(), |w| w.put(body))?;
        self.out_mid_message = more;
        Ok(n)
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
        let n = if self.phase == Phase::V1Traffic {
            let header = V1Header::new(len, more);
            self.control_then(out, header.encoded_len(), |_, rest| Ok(header.emit(rest)?))?
        } else {
            let header = FrameHeader::data(len, more);
            self.control_then(out, header.encoded_len(), |_, rest| Ok(header.emit(rest)?))?
        };
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
        if self.legacy.is_some() {
            // 1.0 and 2.0 have no commands: nothing to say them with.
            return Ok(0);
        }
        self.write_frame(out, true, false, cmd.body_len(), |w| {
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
        if self.version >= Version::V3_1 {
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
        self.write_frame(out, false, false, topic.len() + 1, |w| {
            w.put(&[u8::from(subscribe)])?;
            w.put(topic)
        })
    }
}

/// The header of a clear frame carrying `len` bytes: a command, or a data frame with `more`.
fn clear_header(command: bool, more: bool, len: usize) -> FrameHeader {
    if command {
        FrameHeader::command(len)
    } else {
        FrameHeader::data(len, more)
    }
}

/// Write a ZMTP 1.0 data frame: its header, then the `len` bytes that `body` writes. On
/// failure nothing is written.
fn emit_v1(
    more: bool,
    len: usize,
    out: &mut [u8],
    body: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
) -> Result<usize, InsufficientSize> {
    let header = V1Header::new(len, more);
    ensure(out, header.encoded_len() + len)?;
    let mut w = Writer::new(out);
    w.emit(|out| header.emit(out))?;
    body(&mut w)?;
    Ok(w.len())
}

/// Write a clear frame: its header, then the `len` bytes that `body` writes. On failure
/// nothing is written.
fn emit_clear(
    command: bool,
    more: bool,
    len: usize,
    out: &mut [u8],
    body: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
) -> Result<usize, InsufficientSize> {
    let header = clear_header(command, more, len);
    ensure(out, header.encoded_len() + len)?;
    let mut w = Writer::new(out);
    w.emit(|out| header.emit(out))?;
    body(&mut w)?;
    Ok(w.len())
}
