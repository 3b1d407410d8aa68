//! A blocking raw-TCP peer that speaks the ZMTP versions before 3.0, written from the wire
//! rules alone (RFC 13, RFC 15, and what libzmq 4.3 does with such peers), independent of
//! the codecs of `zmtp-proto`.
//!
//! Three flavours ([`Flavour`]):
//!
//! - **unversioned ZMTP 1.0**: the greeting *is* the identity frame, `[len][00][identity]`;
//! - **versioned, revision 0**: a 10-byte signature `FF <8 bytes> 7F`, then `00` and the
//!   socket-type byte, then the identity frame, all in v1 framing;
//! - **revision 1 (ZMTP 2.0)**: the same greeting with `01`, then v2 framing.
//!
//! v1 framing: a length that counts the flags byte too (one byte when below 255, else `FF`
//! and a big-endian u64), the flags byte (bit 0: MORE), the body. v2 framing: the flags
//! byte (bit 0: MORE, bit 1: LONG), a size of one byte or (LONG) a big-endian u64, the
//! body.
//!
//! The peer is strict about what it reads: a frame whose length could have used the short
//! form but did not, or whose flags have bits other than MORE (and LONG in v2) set, is an
//! error. With the greeting bytes recorded in [`RawPeer::greeting`], that makes the whole
//! byte stream received from the other side determined by the frames it decodes, so two
//! implementations that pass the same checks sent the same bytes.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The ZMTP dialect the raw peer speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// ZMTP 1.0 without a signature: the first bytes are the identity frame.
    Unversioned,
    /// A versioned greeting with revision 0, then v1 framing.
    Revision0,
    /// A versioned greeting with revision 1 (ZMTP 2.0), then v2 framing.
    Revision1,
}

impl Flavour {
    /// All three flavours.
    pub const ALL: [Flavour; 3] = [Flavour::Unversioned, Flavour::Revision0, Flavour::Revision1];

    /// Whether frames use v1 framing (length including the flags byte, then flags).
    pub fn v1_framing(self) -> bool {
        !matches!(self, Flavour::Revision1)
    }

    /// Short name for test names and reports.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Unversioned => "unversioned 1.0",
            Flavour::Revision0 => "revision 0",
            Flavour::Revision1 => "revision 1 (2.0)",
        }
    }
}

/// The socket-type byte of RFC 15 (the same numbers as libzmq's `ZMQ_*` constants).
pub mod socket_type {
    /// PAIR.
    pub const PAIR: u8 = 0;
    /// PUB.
    pub const PUB: u8 = 1;
    /// SUB.
    pub const SUB: u8 = 2;
    /// REQ.
    pub const REQ: u8 = 3;
    /// REP.
    pub const REP: u8 = 4;
    /// DEALER.
    pub const DEALER: u8 = 5;
    /// ROUTER.
    pub const ROUTER: u8 = 6;
    /// PULL.
    pub const PULL: u8 = 7;
    /// PUSH.
    pub const PUSH: u8 = 8;
}

/// The first ten bytes a libzmq 4.3 socket sends on every connection: `FF`, a big-endian
/// u64 of its routing id's length plus one, `7F`. (An unversioned 1.0 peer reads them as
/// the header of a long-form identity frame.)
pub fn libzmq_signature(routing_id_len: usize) -> [u8; 10] {
    let mut s = [0u8; 10];
    s[0] = 0xff;
    s[1..9].copy_from_slice(&(routing_id_len as u64 + 1).to_be_bytes());
    s[9] = 0x7f;
    s
}

/// What a libzmq 4.3 socket of type `ty` with routing id `routing_id` sends a peer of
/// `flavour` before the first message: its greeting and its identity frame.
///
/// - unversioned: the 10-byte signature, then the identity body (the signature doubles as
///   the identity frame's long-form header, flags `7F`);
/// - revision 0: the signature, `03`, the type byte, the identity in v1 framing;
/// - revision 1: the signature, `03`, the type byte, the identity in v2 framing.
pub fn expected_greeting(flavour: Flavour, ty: u8, routing_id: &[u8]) -> Vec<u8> {
    let mut v = libzmq_signature(routing_id.len()).to_vec();
    match flavour {
        Flavour::Unversioned => v.extend_from_slice(routing_id),
        Flavour::Revision0 | Flavour::Revision1 => {
            v.push(3);
            v.push(ty);
            encode_frame(flavour, routing_id, false, &mut v);
        }
    }
    v
}

/// Append one frame in the framing of `flavour`, in its canonical (shortest) form.
pub fn encode_frame(flavour: Flavour, body: &[u8], more: bool, out: &mut Vec<u8>) {
    let flags = u8::from(more);
    if flavour.v1_framing() {
        let len = body.len() as u64 + 1;
        if len < 255 {
            out.push(len as u8);
        } else {
            out.push(0xff);
            out.extend_from_slice(&len.to_be_bytes());
        }
        out.push(flags);
    } else if body.len() <= 255 {
        out.push(flags);
        out.push(body.len() as u8);
    } else {
        out.push(flags | 0x02);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    }
    out.extend_from_slice(body);
}

/// Append a whole message (`frames`, MORE on all but the last) in the framing of
/// `flavour`.
pub fn encode_message(flavour: Flavour, frames: &[&[u8]], out: &mut Vec<u8>) {
    for (i, f) in frames.iter().enumerate() {
        encode_frame(flavour, f, i + 1 < frames.len(), out);
    }
}

fn protocol(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A connection to a ZMTP socket, spoken in one of the pre-3.0 [`Flavour`]s.
#[derive(Debug)]
pub struct RawPeer {
    stream: TcpStream,
    flavour: Flavour,
    /// Every byte the other side sent up to the end of its identity frame.
    pub greeting: Vec<u8>,
    /// The other side's identity (the body of its first frame).
    pub peer_identity: Vec<u8>,
    /// Every byte the other side sent after its identity frame, as read so far.
    pub received: Vec<u8>,
}

/// The read timeout of raw peers: every read waits at most this long.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

impl RawPeer {
    /// Connect to `addr` and greet as a `ty` socket with `identity`.
    pub fn connect(
        addr: SocketAddr,
        flavour: Flavour,
        ty: u8,
        identity: &[u8],
    ) -> io::Result<RawPeer> {
        let stream = TcpStream::connect(addr)?;
        RawPeer::greet(stream, flavour, ty, identity)
    }

    /// Accept one connection on `listener` and greet as a `ty` socket with `identity`.
    pub fn accept(
        listener: &TcpListener,
        flavour: Flavour,
        ty: u8,
        identity: &[u8],
    ) -> io::Result<RawPeer> {
        let (stream, _) = listener.accept()?;
        RawPeer::greet(stream, flavour, ty, identity)
    }

    /// Run the greeting and identity exchange on `stream`.
    ///
    /// Unversioned: send the identity frame, read the other side's ten bytes (a long-form
    /// identity header `FF <u64 len> 7F`), then the identity body. Versioned: send the
    /// signature, read the other side's; send revision and type, read the other side's
    /// next two bytes (libzmq 4.3: major version 3 and its type; a 2.0 peer: revision 1 and
    /// its type); send the identity frame, read the other side's. All is recorded in
    /// [`RawPeer::greeting`], and checked by the caller.
    pub fn greet(
        stream: TcpStream,
        flavour: Flavour,
        ty: u8,
        identity: &[u8],
    ) -> io::Result<RawPeer> {
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        stream.set_nodelay(true)?;
        let mut peer = RawPeer {
            stream,
            flavour,
            greeting: Vec::new(),
            peer_identity: Vec::new(),
            received: Vec::new(),
        };
        match flavour {
            Flavour::Unversioned => {
                let mut hello = Vec::new();
                encode_frame(Flavour::Unversioned, identity, false, &mut hello);
                peer.stream.write_all(&hello)?;
                let sig = peer.take(10)?;
                if sig[0] != 0xff || sig[9] != 0x7f {
                    return Err(protocol(format!("not a long identity header: {sig:02x?}")));
                }
                let len = u64::from_be_bytes(sig[1..9].try_into().expect("8 bytes"));
                if len == 0 || len > 256 {
                    return Err(protocol(format!("identity length {len}")));
                }
                peer.peer_identity = peer.take(len as usize - 1)?;
            }
            Flavour::Revision0 | Flavour::Revision1 => {
                peer.stream.write_all(&libzmq_signature(identity.len()))?;
                let sig = peer.take(10)?;
                if sig[0] != 0xff || sig[9] & 1 == 0 {
                    return Err(protocol(format!("not a signature: {sig:02x?}")));
                }
                let revision = u8::from(flavour == Flavour::Revision1);
                peer.stream.write_all(&[revision, ty])?;
                // The other side's major version (libzmq 4.3: 3) and socket type.
                peer.take(2)?;
                let mut id = Vec::new();
                encode_frame(flavour, identity, false, &mut id);
                peer.stream.write_all(&id)?;
                let (body, more) = peer.read_frame()?;
                if more {
                    return Err(protocol("identity frame with MORE".into()));
                }
                peer.peer_identity = body;
            }
        }
        // Everything read so far was the greeting.
        peer.greeting = std::mem::take(&mut peer.received);
        Ok(peer)
    }

    /// The flavour spoken.
    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// Read exactly `n` bytes, recording them in [`RawPeer::received`].
    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; n];
        self.stream.read_exact(&mut buf)?;
        self.received.extend_from_slice(&buf);
        Ok(buf)
    }

    fn take_u64(&mut self) -> io::Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_be_bytes(b[..].try_into().expect("8 bytes")))
    }

    /// Read one frame: its body and its MORE flag. Non-canonical lengths and unknown flag
    /// bits are errors.
    pub fn read_frame(&mut self) -> io::Result<(Vec<u8>, bool)> {
        let first = self.take(1)?[0];
        if self.flavour.v1_framing() {
            let len = if first == 0xff {
                let len = self.take_u64()?;
                if len < 255 {
                    return Err(protocol(format!("long length {len} fits in one byte")));
                }
                len
            } else {
                u64::from(first)
            };
            if len == 0 {
                return Err(protocol("v1 length 0 (no flags byte)".into()));
            }
            let flags = self.take(1)?[0];
            if flags & !1 != 0 {
                return Err(protocol(format!("v1 flags {flags:02x}")));
            }
            let body = self.take(len as usize - 1)?;
            Ok((body, flags & 1 == 1))
        } else {
            let flags = first;
            if flags & !3 != 0 {
                return Err(protocol(format!("v2 flags {flags:02x}")));
            }
            let size = if flags & 2 != 0 {
                let size = self.take_u64()?;
                if size <= 255 {
                    return Err(protocol(format!("long size {size} fits in one byte")));
                }
                size
            } else {
                u64::from(self.take(1)?[0])
            };
            let body = self.take(size as usize)?;
            Ok((body, flags & 1 == 1))
        }
    }

    /// Read one whole message.
    pub fn recv(&mut self) -> io::Result<Vec<Vec<u8>>> {
        let mut frames = Vec::new();
        loop {
            let (body, more) = self.read_frame()?;
            frames.push(body);
            if !more {
                return Ok(frames);
            }
        }
    }

    /// Send one message.
    pub fn send(&mut self, frames: &[&[u8]]) -> io::Result<()> {
        let mut out = Vec::new();
        encode_message(self.flavour, frames, &mut out);
        self.stream.write_all(&out)
    }

    /// Send bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }
}

/// What a peer that refuses the raw peer did: the bytes it sent before closing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Everything received before the other side closed the connection.
    pub received: Vec<u8>,
}

/// Greet the other side of `stream` as [`RawPeer::greet`] would, stage by stage, and then
/// send the message `then`, expecting the other side to close the connection instead of
/// answering (write errors are ignored: it may have closed already). Each stage reads what
/// the other side sends at that point before the next is written, so that a close with
/// unread data (a reset) cannot discard bytes received earlier.
///
/// `Ok` with everything received if the other side closed within `limit`; `Err` with what
/// was received if the connection was still open after `limit`.
pub fn expect_refusal(
    mut stream: TcpStream,
    flavour: Flavour,
    ty: u8,
    then: &[&[u8]],
    limit: Duration,
) -> Result<Refusal, Refusal> {
    let deadline = Instant::now() + limit;
    let mut received = Vec::new();
    let mut last = Vec::new();
    encode_message(flavour, then, &mut last);
    let stages: Vec<(Vec<u8>, usize)> = match flavour {
        Flavour::Unversioned => {
            let mut id = Vec::new();
            encode_frame(flavour, b"", false, &mut id);
            vec![(id, 10), (last, usize::MAX)]
        }
        Flavour::Revision0 | Flavour::Revision1 => {
            let mut id = Vec::new();
            encode_frame(flavour, b"", false, &mut id);
            id.extend_from_slice(&last);
            vec![
                (libzmq_signature(0).to_vec(), 10),
                (vec![u8::from(flavour == Flavour::Revision1), ty], 12),
                (id, usize::MAX),
            ]
        }
    };
    let mut buf = [0u8; 4096];
    for (out, until) in stages {
        let _ = stream.write_all(&out);
        while received.len() < until {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Refusal { received });
            }
            stream
                .set_read_timeout(Some(left))
                .expect("set_read_timeout");
            let want = (until - received.len()).min(buf.len());
            match stream.read(&mut buf[..want]) {
                Ok(0) => return Ok(Refusal { received }),
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(Refusal { received })
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A reset is a close too.
                Err(_) => return Ok(Refusal { received }),
            }
        }
    }
    unreachable!("the last stage reads until the connection closes or the time is up")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_frames_switch_to_the_long_form_where_libzmq_does() {
        let mut v = Vec::new();
        encode_frame(Flavour::Revision0, &[7; 253], true, &mut v);
        assert_eq!(&v[..2], &[254, 1]);
        v.clear();
        encode_frame(Flavour::Revision0, &[7; 254], false, &mut v);
        assert_eq!(&v[..10], &[0xff, 0, 0, 0, 0, 0, 0, 0, 255, 0]);
        v.clear();
        encode_frame(Flavour::Revision1, &[7; 255], true, &mut v);
        assert_eq!(&v[..2], &[1, 255]);
        v.clear();
        encode_frame(Flavour::Revision1, &[7; 256], false, &mut v);
        assert_eq!(&v[..9], &[2, 0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(
            expected_greeting(Flavour::Revision1, socket_type::ROUTER, b""),
            [0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 6, 0, 0]
        );
    }
}
