//! A ZWS stream under an unchanged [`Connection`](crate::Connection) (`alloc`): the
//! translating layer [`Buffered`](crate::Buffered) puts between the WebSocket bytes of the
//! wire and the ZMTP bytes the connection reads and writes.
//!
//! - **In**: the upgrade is parsed (the server answers it); then each WebSocket message
//!   becomes one ZMTP frame in the connection's input, after a ZMTP 3.0 greeting made up
//!   for the peer (ZWS has none; 3.0 makes the connection send subscriptions as `0x01`/
//!   `0x00` messages, the only form a libzmq PUB reads over ws). A ping is answered with
//!   an empty pong; pings and pongs count as traffic for the connection's heartbeat
//!   timeout ([`Connection::note_traffic`](crate::Connection::note_traffic)); a close
//!   ends the stream with [`Error::WsClosed`] (not echoed: the stream is closed at once).
//! - **Out**: our 64-byte greeting is swallowed; each ZMTP frame becomes one WebSocket
//!   message (masked by a client). Our heartbeats are empty WebSocket pings, as libzmq's
//!   are over ws: [`Buffered`](crate::Buffered) takes them from the connection
//!   ([`Connection::take_ping`](crate::Connection::take_ping)) before any PING command is
//!   written, sealed or not.
//!
//! - **Bare `ZWS2.0`** (no mechanism: what a browser offers, as its WebSocket API refuses
//!   the `/` of `ZWS2.0/NULL`): each side's first frame is its routing id and there is no
//!   READY. The layer turns the peer's id frame into a READY made up for the connection
//!   (`Socket-Type` the first type ours accepts, as nothing is checked over bare ZWS, and
//!   `Identity` the id), and our READY into our id frame (its `Identity`, empty if none).
//!
//! Memory: the WebSocket input is turned into ZMTP input as it arrives (one copy, the same
//! size plus at most 8 header bytes a frame); what a header announces costs nothing until
//! the bytes come; bodies are bounded by the connection's maximum message size.

use alloc::vec::Vec;

use bytes::{Buf, BytesMut};

use super::{
    emit_frame, emit_ping, emit_pong, frame_len, ClientHandshake, Decoder, HandshakeError,
    Protocol, Received, Role, ServerHandshake, Target,
};
use crate::codec::{
    FrameFlags, FrameHeader, Greeting, Mechanism, Metadata, Status, Version, GREETING_LEN,
    MAX_FRAME_HEADER_LEN,
};
use crate::error::Error;
use crate::SocketType;

/// Which end of a `ws://` stream we are, with what the upgrade needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsSide<'a> {
    /// We connected: we send the upgrade request to `host` for `path`.
    Client {
        /// The `Host` value (no port, as libzmq writes it).
        host: &'a str,
        /// The request path (`/` when the endpoint has none).
        path: &'a str,
        /// 32 bytes of entropy: the first 16 make the `Sec-WebSocket-Key`, the rest seed
        /// the masks of the frames we send.
        entropy: [u8; 32],
    },
    /// We accepted: we answer the peer's upgrade request.
    Server,
}

#[derive(Debug)]
enum Phase {
    Request(ServerHandshake),
    Response(ClientHandshake),
    Open,
}

/// The ZWS layer of one stream; see the [module documentation](self).
#[derive(Debug)]
pub(crate) struct Zws {
    phase: Phase,
    decoder: Decoder,
    mechanism: Mechanism,
    /// WebSocket bytes read and not yet translated.
    raw: BytesMut,
    /// Bytes of our ZMTP greeting still to swallow.
    greeting_left: usize,
    /// ZMTP output that is not yet a whole frame.
    partial: Vec<u8>,
    /// The mask generator's state (splitmix64); `None` for a server, which masks nothing.
    masks: Option<u64>,
    /// Our upgrade request, not yet taken for the output.
    head: Vec<u8>,
    /// Where the connection encodes its ZMTP output before translation.
    scratch: Vec<u8>,
    /// A WebSocket ping or pong arrived since [`take_keepalive`](Self::take_keepalive).
    keepalive: bool,
    /// Our socket's type (what a made-up READY must be compatible with, over bare ZWS).
    socket_type: SocketType,
    /// Bare `ZWS2.0`: the peer's routing id frame has not arrived yet.
    peer_id_pending: bool,
    /// Bare `ZWS2.0`: our READY has not been turned into our routing id frame yet.
    our_id_pending: bool,
}

impl Zws {
    /// A layer for `side`; the connection is a `socket_type` socket, runs `mechanism` and
    /// takes bodies of at most `max_body` bytes.
    pub(crate) fn new(
        side: &WsSide<'_>,
        socket_type: SocketType,
        mechanism: Mechanism,
        max_body: Option<u64>,
    ) -> Result<Zws, HandshakeError> {
        let (phase, role, masks, head) = match side {
            WsSide::Client {
                host,
                path,
                entropy,
            } => {
                let (nonce, seed) = entropy.split_at(16);
                let mut key = [0u8; 16];
                key.copy_from_slice(nonce);
                let mut state = [0u8; 8];
                state.copy_from_slice(seed.get(..8).unwrap_or(&[0; 8]));
                let hs = ClientHandshake::new(mechanism, key)?;
                let target = Target::new(host, path)?;
                let mut head = alloc::vec![0u8; hs.request_len(&target)];
                let n = hs
                    .emit_request(&target, &mut head)
                    .map_err(|_| HandshakeError::InvalidTarget)?;
                head.truncate(n);
                let masks = Some(u64::from_le_bytes(state));
                (Phase::Response(hs), Role::Client, masks, head)
            }
            WsSide::Server => (
                Phase::Request(ServerHandshake::new(mechanism)?),
                Role::Server,
                None,
                Vec::new(),
            ),
        };
        Ok(Zws {
            phase,
            decoder: Decoder::new(role, max_body),
            mechanism,
            raw: BytesMut::new(),
            greeting_left: GREETING_LEN,
            partial: Vec::new(),
            masks,
            head,
            scratch: Vec::new(),
            keepalive: false,
            socket_type,
            peer_id_pending: false,
            our_id_pending: false,
        })
    }

    /// The WebSocket input buffer.
    pub(crate) fn raw(&mut self) -> &mut BytesMut {
        &mut self.raw
    }

    /// Whether a WebSocket ping or pong arrived since the last call (traffic for the
    /// connection's heartbeats, which it cannot see).
    pub(crate) fn take_keepalive(&mut self) -> bool {
        core::mem::take(&mut self.keepalive)
    }

    /// WebSocket bytes not yet translated.
    pub(crate) fn raw_len(&self) -> usize {
        self.raw.len()
    }

    /// The upgrade request or response to send before anything else (taken once).
    pub(crate) fn take_head(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.head)
    }

    /// How many more WebSocket bytes the frame at the front of the input needs (0 when
    /// unknown or complete).
    pub(crate) fn needed(&self) -> usize {
        match (&self.phase, self.decoder.frame_len(&self.raw)) {
            (Phase::Open, Ok(Status::Complete(len))) => len.saturating_sub(self.raw.len()),
            _ => 0,
        }
    }

    fn next_mask(&mut self) -> Option<[u8; 4]> {
        let [a, b, c, d, ..] = splitmix64(self.masks.as_mut()?).to_le_bytes();
        Some([a, b, c, d])
    }

    /// Translate the WebSocket input: ZMTP bytes go to `zmtp_in`, our answers (the
    /// upgrade response, pongs, a close echo) to `out`.
    pub(crate) fn pump_input(
        &mut self,
        zmtp_in: &mut BytesMut,
        mut out: impl FnMut(&[u8]),
    ) -> Result<(), Error> {
        loop {
            match &self.phase {
                Phase::Request(server) => {
                    let (protocol, used) = match server.parse_request(&self.raw) {
                        Ok(Status::Partial) => return Ok(()),
                        Ok(Status::Complete((request, used))) => {
                            let mut response = alloc::vec![0u8; request.response_len()];
                            let n = request
                                .emit_response(&mut response)
                                .map_err(|_| Error::WsHandshake(HandshakeError::Malformed))?;
                            out(response.get(..n).unwrap_or_default());
                            (request.protocol, used)
                        }
                        Err(e) => return Err(Error::WsHandshake(e)),
                    };
                    self.open(protocol, used, zmtp_in)?;
                }
                Phase::Response(client) => match client.parse_response(&self.raw) {
                    Ok(Status::Partial) => return Ok(()),
                    Ok(Status::Complete((protocol, used))) => self.open(protocol, used, zmtp_in)?,
                    Err(e) => return Err(Error::WsHandshake(e)),
                },
                Phase::Open => {
                    let (received, used) = match self.decoder.decode(&mut self.raw) {
                        Ok(Status::Partial) => return Ok(()),
                        Ok(Status::Complete(done)) => done,
                        Err(e) => return Err(Error::WsFrame(e)),
                    };
                    let mask = self.next_mask();
                    let frame = self.raw.get(..used).unwrap_or_default();
                    match received {
                        Received::Frame { flags, body } => {
                            let body = frame.get(body).unwrap_or_default();
                            if self.peer_id_pending {
                                self.peer_id_pending = false;
                                put_peer_ready(zmtp_in, self.socket_type, body);
                            } else {
                                put_zmtp(zmtp_in, flags, body);
                            }
                        }
                        Received::Ping { .. } => {
                            self.keepalive = true;
                            let mut pong = [0u8; 6];
                            let n = emit_pong(&[], mask, &mut pong).unwrap_or(0);
                            out(pong.get(..n).unwrap_or_default());
                        }
                        Received::Pong { .. } => self.keepalive = true,
                        Received::Close { .. } => {
                            // The stream is closed at once (libzmq echoes the close and
                            // leaves TCP open; a peer that closes wants neither).
                            self.raw.clear();
                            return Err(Error::WsClosed);
                        }
                    }
                    self.raw.advance(used);
                }
            }
        }
    }

    /// The upgrade is done: make up the peer's greeting (over bare `ZWS2.0`, the ids are
    /// exchanged in place of READY from now on).
    fn open(
        &mut self,
        protocol: Protocol,
        used: usize,
        zmtp_in: &mut BytesMut,
    ) -> Result<(), Error> {
        if protocol.is_bare() {
            self.peer_id_pending = true;
            self.our_id_pending = true;
        }
        self.raw.advance(used);
        self.phase = Phase::Open;
        let greeting = Greeting {
            version: Version::V3_0,
            mechanism: self.mechanism,
            as_server: false,
        };
        let mut bytes = [0u8; GREETING_LEN];
        let n = greeting.emit(&mut bytes).unwrap_or(0);
        zmtp_in.extend_from_slice(bytes.get(..n).unwrap_or_default());
        Ok(())
    }

    /// A heartbeat: an empty WebSocket ping, handed to `out` as
    /// [`translate_output`](Self::translate_output) hands frames.
    pub(crate) fn ping(&mut self, out: &mut impl FnMut(usize, &mut dyn FnMut(&mut [u8]))) {
        let mask = self.next_mask();
        let len = super::control_len(0, mask.is_some());
        out(len, &mut |dst| {
            let _ = emit_ping(&[], mask, dst);
        });
    }

    /// Room for the connection to encode at least `room` bytes of ZMTP output into.
    pub(crate) fn scratch(&mut self, room: usize) -> &mut [u8] {
        if self.scratch.len() < room {
            self.scratch.resize(room, 0);
        }
        &mut self.scratch
    }

    /// Translate the first `n` bytes of [`scratch`](Self::scratch), as
    /// [`translate_output`](Self::translate_output) does.
    pub(crate) fn translate_scratch(
        &mut self,
        n: usize,
        out: impl FnMut(usize, &mut dyn FnMut(&mut [u8])),
    ) {
        let scratch = core::mem::take(&mut self.scratch);
        self.translate_output(scratch.get(..n).unwrap_or_default(), out);
        self.scratch = scratch;
    }

    /// Translate ZMTP output into WebSocket frames, each handed to `out` as its length and
    /// a writer that fills exactly that many bytes.
    fn translate_output(
        &mut self,
        zmtp: &[u8],
        mut out: impl FnMut(usize, &mut dyn FnMut(&mut [u8])),
    ) {
        let skip = self.greeting_left.min(zmtp.len());
        self.greeting_left -= skip;
        let fresh = zmtp.get(skip..).unwrap_or_default();
        let owned;
        let zmtp: &[u8] = if self.partial.is_empty() {
            fresh
        } else {
            self.partial.extend_from_slice(fresh);
            owned = core::mem::take(&mut self.partial);
            &owned
        };
        let mut at = 0;
        while let Some(rest) = zmtp.get(at..).filter(|r| !r.is_empty()) {
            let Ok(Status::Complete((header, n))) = FrameHeader::parse(rest, u64::MAX) else {
                break;
            };
            let end = usize::try_from(header.size)
                .ok()
                .and_then(|size| n.checked_add(size))
                .filter(|&end| end <= rest.len());
            let Some(end) = end else {
                break;
            };
            let body = rest.get(n..end).unwrap_or_default();
            at += end;
            if self.our_id_pending && header.flags.command && body.starts_with(b"\x05READY") {
                // Bare ZWS2.0: our routing id in place of our READY.
                self.our_id_pending = false;
                let id = Metadata::parse(body.get(6..).unwrap_or_default())
                    .ok()
                    .and_then(|m| m.get(b"Identity"))
                    .unwrap_or_default();
                let mask = self.next_mask();
                let len = frame_len(id.len(), mask.is_some());
                out(len, &mut |dst| {
                    let _ = emit_frame(FrameFlags::default(), id, mask, dst);
                });
            } else if header.flags.command && body.starts_with(b"\x04PING") {
                self.ping(&mut out);
            } else if header.flags.command && body.starts_with(b"\x04PONG") {
                // Pongs are WebSocket's business over ws; a ZMTP PING is not answered.
            } else {
                let mask = self.next_mask();
                let len = frame_len(body.len(), mask.is_some());
                out(len, &mut |dst| {
                    let _ = emit_frame(header.flags, body, mask, dst);
                });
            }
        }
        if let Some(rest) = zmtp.get(at..).filter(|r| !r.is_empty()) {
            self.partial.extend_from_slice(rest);
        }
    }
}

/// The next value of a splitmix64 sequence (masks need no secrecy, only variety: RFC 6455
/// masks against proxies that would read frames as HTTP).
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bare `ZWS2.0`: append the READY the peer whose routing id frame is `id` would have sent,
/// with the first socket type compatible with ours (bare ZWS checks none) and `Identity`.
fn put_peer_ready(zmtp_in: &mut BytesMut, ours: SocketType, id: &[u8]) {
    let peer = SocketType::ALL
        .iter()
        .copied()
        .find(|&t| ours.is_compatible(t))
        .unwrap_or(ours);
    let mut body = Vec::with_capacity(48 + id.len());
    body.extend_from_slice(b"\x05READY");
    for (name, value) in [
        (&b"Socket-Type"[..], peer.name().as_bytes()),
        (b"Identity", id),
    ] {
        body.push(name.len() as u8);
        body.extend_from_slice(name);
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value);
    }
    let flags = FrameFlags {
        command: true,
        ..FrameFlags::default()
    };
    put_zmtp(zmtp_in, flags, &body);
}

/// Append one ZMTP frame to `zmtp_in`.
fn put_zmtp(zmtp_in: &mut BytesMut, flags: FrameFlags, body: &[u8]) {
    let header = FrameHeader {
        flags,
        size: body.len() as u64,
    };
    let mut head = [0u8; MAX_FRAME_HEADER_LEN];
    let n = header.emit(&mut head).unwrap_or(0);
    zmtp_in.reserve(n + body.len());
    zmtp_in.extend_from_slice(head.get(..n).unwrap_or_default());
    zmtp_in.extend_from_slice(body);
}
