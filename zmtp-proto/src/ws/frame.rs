//! WebSocket framing for ZWS 2.0: one ZMTP frame is one WebSocket message.

use core::ops::Range;

use super::FrameError;
use crate::codec::{Command, FrameFlags, InsufficientSize, Status};

/// Longest WebSocket frame header: 2 bytes, an 8-byte length and a 4-byte mask key.
pub const MAX_HEADER_LEN: usize = 14;

/// Longest payload of a control frame (ping, pong, close), per RFC 6455.
pub const MAX_CONTROL_PAYLOAD: usize = 125;

const FIN: u8 = 0x80;
const RSV: u8 = 0x70;
const MASKED: u8 = 0x80;

/// ZWS flags byte: bit 0 MORE, bit 1 COMMAND; the others are reserved.
const ZWS_MORE: u8 = 0x01;
const ZWS_COMMAND: u8 = 0x02;

/// Which end of the WebSocket connection we are: a client masks every frame it sends and
/// must receive only unmasked frames; a server the opposite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// We connected: our frames are masked, the server's are not.
    Client,
    /// We accepted: the client's frames are masked, ours are not.
    Server,
}

impl Role {
    /// Whether frames this role sends are masked (a client's are).
    pub const fn masks(self) -> bool {
        matches!(self, Role::Client)
    }
}

/// A WebSocket opcode RFC 6455 defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// A further fragment of a fragmented message.
    Continuation = 0x0,
    /// A UTF-8 text message.
    Text = 0x1,
    /// A binary message: what ZWS uses.
    Binary = 0x2,
    /// Close the connection.
    Close = 0x8,
    /// Ping: answered with a pong.
    Ping = 0x9,
    /// Pong: the answer to a ping, or a unidirectional heartbeat.
    Pong = 0xA,
}

impl Opcode {
    /// The opcode of the low four bits of a frame's first byte, if RFC 6455 defines it.
    pub const fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits & 0x0F {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    /// Whether this is a control opcode (close, ping, pong).
    pub const fn is_control(self) -> bool {
        (self as u8) & 0x08 != 0
    }
}

/// A WebSocket frame header (RFC 6455, section 5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// The final fragment of a message (always set for ZWS).
    pub fin: bool,
    /// The opcode.
    pub opcode: Opcode,
    /// The masking key, present exactly when the frame is masked.
    pub mask: Option<[u8; 4]>,
    /// The payload length (for ZWS data frames: the flags byte plus the body). Below
    /// 2<sup>63</sup>: RFC 6455 keeps the top bit of the 64-bit form clear.
    pub payload_len: u64,
}

impl Header {
    /// Parse a frame header at the front of `input`: the header and its length (2 to 14).
    ///
    /// Checks what RFC 6455 makes an error whatever the application: a reserved bit
    /// (RSV1-3: no extension is negotiated), an undefined opcode, a control frame that is
    /// fragmented or longer than 125 bytes, a 64-bit length with its top bit set.
    /// Lengths in a longer form than needed are accepted.
    pub fn parse(input: &[u8]) -> Result<Status<(Header, usize)>, FrameError> {
        let Some(&b0) = input.first() else {
            return Ok(Status::Partial);
        };
        let (fin, opcode) = first_byte(b0)?;
        if opcode.is_control() && !fin {
            return Err(FrameError::FragmentedControl);
        }
        let Some(&b1) = input.get(1) else {
            return Ok(Status::Partial);
        };
        let masked = b1 & MASKED != 0;
        let len7 = b1 & 0x7F;
        if opcode.is_control() && usize::from(len7) > MAX_CONTROL_PAYLOAD {
            return Err(FrameError::ControlTooLong);
        }
        let (payload_len, mut at) = match len7 {
            126 => {
                let Some(&[a, b]) = input.get(2..4).and_then(|s| <&[u8; 2]>::try_from(s).ok())
                else {
                    return Ok(Status::Partial);
                };
                (u64::from(u16::from_be_bytes([a, b])), 4)
            }
            127 => {
                let Some(bytes) = input.get(2..10).and_then(|s| <[u8; 8]>::try_from(s).ok()) else {
                    return Ok(Status::Partial);
                };
                let len = u64::from_be_bytes(bytes);
                if len >> 63 != 0 {
                    return Err(FrameError::BadLength);
                }
                (len, 10)
            }
            n => (u64::from(n), 2),
        };
        let mask = if masked {
            let Some(key) = input
                .get(at..at + 4)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
            else {
                return Ok(Status::Partial);
            };
            at += 4;
            Some(key)
        } else {
            None
        };
        Ok(Status::Complete((
            Header {
                fin,
                opcode,
                mask,
                payload_len,
            },
            at,
        )))
    }

    /// The encoded length of this header: the shortest length form, plus 4 when masked.
    pub const fn encoded_len(&self) -> usize {
        header_len(self.payload_len, self.mask.is_some())
    }

    /// Emit the header, with the shortest length form (as RFC 6455 requires).
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        let len = self.encoded_len();
        let Some(dst) = out.get_mut(..len) else {
            return Err(InsufficientSize { required: len });
        };
        let fin = if self.fin { FIN } else { 0 };
        let masked = if self.mask.is_some() { MASKED } else { 0 };
        let (first, rest) = dst.split_at_mut(2);
        first[0] = fin | self.opcode as u8;
        let rest = match self.payload_len {
            n if n < 126 => {
                first[1] = masked | n as u8;
                rest
            }
            n if n <= 0xFFFF => {
                first[1] = masked | 126;
                let (ext, rest) = rest.split_at_mut(2);
                ext.copy_from_slice(&(n as u16).to_be_bytes());
                rest
            }
            n => {
                first[1] = masked | 127;
                let (ext, rest) = rest.split_at_mut(8);
                ext.copy_from_slice(&n.to_be_bytes());
                rest
            }
        };
        if let Some(key) = self.mask {
            rest.copy_from_slice(&key);
        }
        Ok(len)
    }
}

/// FIN and opcode of a first byte, refusing reserved bits and undefined opcodes.
fn first_byte(b0: u8) -> Result<(bool, Opcode), FrameError> {
    if b0 & RSV != 0 {
        return Err(FrameError::ReservedBits(b0 & RSV));
    }
    let opcode = Opcode::from_bits(b0).ok_or(FrameError::UnknownOpcode(b0 & 0x0F))?;
    Ok((b0 & FIN != 0, opcode))
}

/// Header length for a payload of `payload_len` bytes, masked or not.
const fn header_len(payload_len: u64, masked: bool) -> usize {
    let base = if payload_len < 126 {
        2
    } else if payload_len <= 0xFFFF {
        4
    } else {
        10
    };
    if masked {
        base + 4
    } else {
        base
    }
}

/// XOR `data` with the masking `key`, as if `data` started `offset` bytes into the
/// payload. Masking and unmasking are the same operation; a payload can be (un)masked in
/// pieces by passing each piece's offset.
pub fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    let mut key = key;
    key.rotate_left(offset % 4);
    // Eight bytes at a time (the key twice), which the compiler turns into wide XORs: a
    // byte loop cost a 64 KiB message more than its copy.
    let [a, b, c, d] = key;
    let wide = u64::from_ne_bytes([a, b, c, d, a, b, c, d]);
    let mut words = data.chunks_exact_mut(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        word.copy_from_slice(&(u64::from_ne_bytes(bytes) ^ wide).to_ne_bytes());
    }
    for (byte, k) in words.into_remainder().iter_mut().zip(key.iter().cycle()) {
        *byte ^= k;
    }
}

/// What a ZWS frame was.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Received {
    /// A ZMTP frame: its flags and the body's place in the input (unmasked).
    Frame {
        /// MORE and COMMAND.
        flags: FrameFlags,
        /// The body (the payload after the flags byte). A command body is laid out as in
        /// ZMTP: name length, name, data.
        body: Range<usize>,
    },
    /// A ping: answer with [`emit_pong`] and an **empty** payload, as libzmq does.
    Ping {
        /// The ping's payload (unmasked); libzmq does not echo it.
        payload: Range<usize>,
    },
    /// A pong (to our ping, or unsolicited).
    Pong {
        /// The payload (unmasked).
        payload: Range<usize>,
    },
    /// A close: echo its payload with [`emit_close`], then the connection ends. (libzmq
    /// echoes it and leaves the TCP connection open.)
    Close {
        /// The payload (unmasked): empty, or a 2-byte status code and a reason.
        payload: Range<usize>,
    },
}

/// Decodes ZWS frames from the front of a receive buffer, one per call.
///
/// Stateless but for its settings: which [`Role`] we have (so which mask bit to expect)
/// and the largest frame body to accept.
///
/// ```
/// use zmtp_proto::codec::Status;
/// use zmtp_proto::ws::{emit_pong, Decoder, Received, Role};
///
/// // What a client read from a libzmq server: a message "pong", then a ping.
/// let mut rx = b"\x82\x05\x00pong\x89\x00".to_vec();
/// let decoder = Decoder::new(Role::Client, Some(1 << 20));
/// let mut tx = Vec::new();
/// let mut at = 0;
/// while let Status::Complete((received, used)) = decoder.decode(&mut rx[at..])? {
///     let frame = &rx[at..at + used];
///     match received {
///         Received::Frame { flags, body } => {
///             assert_eq!((&frame[body], flags.more), (&b"pong"[..], false))
///         }
///         Received::Ping { .. } => {
///             // A client masks what it sends, with a fresh key each time.
///             let mut pong = [0u8; 6];
///             let n = emit_pong(&[], Some([1, 2, 3, 4]), &mut pong)?;
///             tx.extend_from_slice(&pong[..n]);
///         }
///         Received::Pong { .. } => {}
///         Received::Close { .. } => break,
///     }
///     at += used;
/// }
/// assert_eq!((at, tx), (9, vec![0x8a, 0x80, 1, 2, 3, 4]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Fragmentation
/// Refused. libzmq never fragments and refuses fragments itself; one ZMTP frame is one
/// unfragmented WebSocket message. Reassembly would need storage outside the caller's
/// buffer, since control frames may come between fragments, and no ZWS peer needs it. A
/// data frame without FIN is [`FrameError::Fragmented`], a continuation frame
/// [`FrameError::Continuation`].
///
/// # Errors
/// Every error is final: the stream cannot be resynchronised, close it (after sending a
/// close frame, if wanted). Errors are reported as soon as the bytes that cause them
/// arrive, without waiting for the rest of the frame; the check order is that of the
/// bytes, so input fed in pieces fails with the same error as input fed whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decoder {
    role: Role,
    limit: u64,
}

impl Decoder {
    /// A decoder for our `role`, refusing frame bodies over `max_body` bytes (the flags
    /// byte not counted; libzmq's `ZMQ_MAXMSGSIZE` bounds the same). A bound over the
    /// address space is lowered to what a buffer can hold.
    pub const fn new(role: Role, max_body: Option<u64>) -> Decoder {
        let addressable = usize::MAX as u64 - MAX_HEADER_LEN as u64 - 1;
        let limit = match max_body {
            Some(m) if m < addressable => m,
            _ => addressable,
        };
        Decoder { role, limit }
    }

    /// Our role.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// The largest body accepted.
    pub const fn max_body(&self) -> u64 {
        self.limit
    }

    /// Check the frame at the front of `input` as far as it has arrived and, once its
    /// header is in, return the whole frame's length: what must be buffered before
    /// [`decode`](Self::decode) can complete it.
    pub fn frame_len(&self, input: &[u8]) -> Result<Status<usize>, FrameError> {
        Ok(match self.check(input)? {
            Status::Complete((header, header_len)) => {
                Status::Complete(header_len + header.payload_len as usize)
            }
            Status::Partial => Status::Partial,
        })
    }

    /// Decode the frame at the front of `input`.
    ///
    /// `Partial` until the whole frame is there (see [`frame_len`](Self::frame_len)). Then
    /// the frame and its length: unmask in place (a server's input is changed) and drop
    /// that many bytes before the next call. Ranges index `input`. On `Partial` or an
    /// error `input` is unchanged.
    ///
    /// Refused, each as its [`FrameError`]: reserved bits, undefined opcodes, text frames,
    /// fragments and continuations, a mask bit that does not fit our role, control frames
    /// fragmented or over 125 bytes, an empty binary frame (ZWS needs the flags byte),
    /// reserved ZWS flag bits, a command with MORE, and a body over the limit.
    pub fn decode(&self, input: &mut [u8]) -> Result<Status<(Received, usize)>, FrameError> {
        let Status::Complete((header, header_len)) = self.check(input)? else {
            return Ok(Status::Partial);
        };
        // `check` bounded the length to what a buffer can hold.
        let end = header_len + header.payload_len as usize;
        let Some(payload) = input.get_mut(header_len..end) else {
            return Ok(Status::Partial);
        };
        if let Some(key) = header.mask {
            apply_mask(payload, key, 0);
        }
        let payload_range = header_len..end;
        let received = match header.opcode {
            Opcode::Binary => {
                let flags = payload.first().copied().unwrap_or(0);
                Received::Frame {
                    flags: FrameFlags {
                        more: flags & ZWS_MORE != 0,
                        command: flags & ZWS_COMMAND != 0,
                    },
                    body: header_len + 1..end,
                }
            }
            Opcode::Ping => Received::Ping {
                payload: payload_range,
            },
            Opcode::Pong => Received::Pong {
                payload: payload_range,
            },
            // `check` let nothing else through.
            _ => Received::Close {
                payload: payload_range,
            },
        };
        Ok(Status::Complete((received, end)))
    }

    /// Every check that needs no more than the bytes at hand, in the order of the bytes;
    /// the header once it is complete (with its length bounded to the limit).
    fn check(&self, input: &[u8]) -> Result<Status<(Header, usize)>, FrameError> {
        let Some(&b0) = input.first() else {
            return Ok(Status::Partial);
        };
        let (fin, opcode) = first_byte(b0)?;
        match opcode {
            Opcode::Text => return Err(FrameError::Text),
            Opcode::Continuation => return Err(FrameError::Continuation),
            Opcode::Binary if !fin => return Err(FrameError::Fragmented),
            op if op.is_control() && !fin => return Err(FrameError::FragmentedControl),
            _ => {}
        }
        if let Some(&b1) = input.get(1) {
            let masked = b1 & MASKED != 0;
            match (self.role, masked) {
                (Role::Server, false) => return Err(FrameError::Unmasked),
                (Role::Client, true) => return Err(FrameError::Masked),
                _ => {}
            }
        }
        let Status::Complete((header, header_len)) = Header::parse(input)? else {
            return Ok(Status::Partial);
        };
        if header.opcode == Opcode::Binary {
            if header.payload_len == 0 {
                return Err(FrameError::EmptyBinary);
            }
            let size = header.payload_len - 1;
            if size > self.limit {
                return Err(FrameError::TooLarge {
                    size,
                    limit: self.limit,
                });
            }
            if let Some(&flags) = input.get(header_len) {
                let flags = flags ^ header.mask.map_or(0, |k| k[0]);
                if flags & !(ZWS_MORE | ZWS_COMMAND) != 0 {
                    return Err(FrameError::ReservedFlags(flags));
                }
                if flags & ZWS_COMMAND != 0 && flags & ZWS_MORE != 0 {
                    return Err(FrameError::CommandWithMore);
                }
            }
        }
        Ok(Status::Complete((header, header_len)))
    }
}

// ----- emitters -------------------------------------------------------------------------

/// The ZWS flags byte of `flags`.
const fn zws_flags(flags: FrameFlags) -> u8 {
    let more = if flags.more { ZWS_MORE } else { 0 };
    let command = if flags.command { ZWS_COMMAND } else { 0 };
    more | command
}

/// The wire length of a ZWS frame with a `body_len`-byte body, masked or not.
pub const fn frame_len(body_len: usize, masked: bool) -> usize {
    frame_head_len(body_len, masked).saturating_add(body_len)
}

/// The wire length of what [`emit_frame_head`] writes: the WebSocket header and the flags
/// byte.
pub const fn frame_head_len(body_len: usize, masked: bool) -> usize {
    header_len((body_len as u64).saturating_add(1), masked) + 1
}

/// Emit the start of a ZWS frame with a `body_len`-byte body: the WebSocket header (FIN,
/// binary, masked with `mask` when given) and the flags byte (masked too). The body must
/// follow, masked with [`apply_mask`]`(body, key, 1)` when masked; for a server the body
/// can go out as it is, by a vectored write.
pub fn emit_frame_head(
    flags: FrameFlags,
    body_len: usize,
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let header = Header {
        fin: true,
        opcode: Opcode::Binary,
        mask,
        payload_len: (body_len as u64).saturating_add(1),
    };
    let len = frame_head_len(body_len, mask.is_some());
    let Some(dst) = out.get_mut(..len) else {
        return Err(InsufficientSize { required: len });
    };
    let n = header.emit(dst)?;
    let Some(flag_byte) = dst.get_mut(n) else {
        return Err(InsufficientSize { required: len });
    };
    *flag_byte = zws_flags(flags) ^ mask.map_or(0, |k| k[0]);
    Ok(len)
}

/// Emit a ZWS frame: FIN, opcode binary, payload = flags byte + `body`, masked with `mask`
/// when given (a client must give a fresh key for every frame; a server gives none).
pub fn emit_frame(
    flags: FrameFlags,
    body: &[u8],
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let len = frame_len(body.len(), mask.is_some());
    if out.len() < len {
        return Err(InsufficientSize { required: len });
    }
    let head = emit_frame_head(flags, body.len(), mask, out)?;
    let Some(dst) = out.get_mut(head..len) else {
        return Err(InsufficientSize { required: len });
    };
    dst.copy_from_slice(body);
    if let Some(key) = mask {
        apply_mask(dst, key, 1);
    }
    Ok(len)
}

/// The wire length of `command` as a ZWS frame.
pub fn command_len(command: &Command<'_>, masked: bool) -> usize {
    frame_len(command.body_len(), masked)
}

/// Emit `command` (READY, HELLO, ...) as a ZWS command frame: flags `0x02`, the body as in
/// ZMTP (name length, name, data).
pub fn emit_command(
    command: &Command<'_>,
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let body_len = command.body_len();
    let len = frame_len(body_len, mask.is_some());
    if out.len() < len {
        return Err(InsufficientSize { required: len });
    }
    let flags = FrameFlags {
        more: false,
        command: true,
    };
    let head = emit_frame_head(flags, body_len, mask, out)?;
    let Some(dst) = out.get_mut(head..len) else {
        return Err(InsufficientSize { required: len });
    };
    command.emit_body(dst)?;
    if let Some(key) = mask {
        apply_mask(dst, key, 1);
    }
    Ok(len)
}

/// The wire length of a control frame with `payload_len` bytes of payload (cut to 125).
pub const fn control_len(payload_len: usize, masked: bool) -> usize {
    let n = if payload_len > MAX_CONTROL_PAYLOAD {
        MAX_CONTROL_PAYLOAD
    } else {
        payload_len
    };
    header_len(n as u64, masked) + n
}

fn emit_control(
    opcode: Opcode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let payload = payload.get(..MAX_CONTROL_PAYLOAD).unwrap_or(payload);
    let header = Header {
        fin: true,
        opcode,
        mask,
        payload_len: payload.len() as u64,
    };
    let len = header.encoded_len() + payload.len();
    let Some(dst) = out.get_mut(..len) else {
        return Err(InsufficientSize { required: len });
    };
    let n = header.emit(dst)?;
    let body = dst.get_mut(n..).unwrap_or_default();
    body.copy_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(body, key, 0);
    }
    Ok(len)
}

/// Emit a ping (libzmq sends them empty, as its `ZMQ_HEARTBEAT_IVL` heartbeat). A payload
/// over 125 bytes is cut to 125.
pub fn emit_ping(
    payload: &[u8],
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    emit_control(Opcode::Ping, payload, mask, out)
}

/// Emit a pong. libzmq answers every ping with an empty pong (`8a 00`); RFC 6455 asks for
/// the ping's payload. A payload over 125 bytes is cut to 125.
pub fn emit_pong(
    payload: &[u8],
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    emit_control(Opcode::Pong, payload, mask, out)
}

/// Emit a close frame; to answer a close, echo its payload (as libzmq does). A payload over
/// 125 bytes is cut to 125.
pub fn emit_close(
    payload: &[u8],
    mask: Option<[u8; 4]>,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    emit_control(Opcode::Close, payload, mask, out)
}
