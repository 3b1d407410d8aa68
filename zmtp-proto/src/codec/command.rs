use super::{ensure, CodecError, FrameHeader, InsufficientSize, Metadata, Writer};

/// Longest PING context a peer may send and a PONG may echo; longer contexts are cut to it.
pub const MAX_PING_CONTEXT: usize = 16;

/// A ZMTP command, borrowed from its frame body: `u8 name-len, name, data`.
///
/// Names are compared case-sensitively, as libzmq does. Commands this crate does not know
/// parse as [`Command::Unknown`] so that the connection can ignore them as libzmq does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// `READY` with the sender's metadata.
    Ready(Metadata<'a>),
    /// `ERROR` with its reason (at most 255 bytes).
    Error(&'a [u8]),
    /// `PING`: TTL in deciseconds and an opaque context.
    Ping {
        /// Time to live in tenths of a second; 0 means none.
        ttl: u16,
        /// Context to echo in the PONG (may be longer than 16 bytes when received).
        context: &'a [u8],
    },
    /// `PONG` echoing a PING context.
    Pong {
        /// The echoed context.
        context: &'a [u8],
    },
    /// `SUBSCRIBE` to a topic prefix.
    Subscribe(&'a [u8]),
    /// `CANCEL` a subscription.
    Cancel(&'a [u8]),
    /// `JOIN` a group (RADIO/DISH).
    Join(&'a [u8]),
    /// `LEAVE` a group (RADIO/DISH).
    Leave(&'a [u8]),
    /// Any other command, kept raw.
    Unknown {
        /// Command name.
        name: &'a [u8],
        /// Everything after the name.
        data: &'a [u8],
    },
}

/// The body libzmq's PLAIN server sends for ERROR (a C escape bug turned `\5ERROR` into `^RROR`).
const LIBZMQ_PLAIN_ERROR: &[u8] = b"\x5eRROR";

impl<'a> Command<'a> {
    /// Parse a command frame body.
    pub fn parse(body: &'a [u8]) -> Result<Command<'a>, CodecError> {
        if let Some(reason) = body.strip_prefix(LIBZMQ_PLAIN_ERROR) {
            return parse_error_reason(reason);
        }
        let (&name_len, rest) = body.split_first().ok_or(CodecError::MalformedCommand)?;
        let name_len = usize::from(name_len);
        if name_len == 0 || rest.len() < name_len {
            return Err(CodecError::MalformedCommand);
        }
        let (name, data) = rest.split_at(name_len);
        Ok(match name {
            b"READY" => Command::Ready(Metadata::parse(data)?),
            b"ERROR" => parse_error_reason(data)?,
            b"PING" => {
                if data.len() < 2 {
                    return Err(CodecError::MalformedCommandBody);
                }
                let (ttl, context) = data.split_at(2);
                Command::Ping {
                    ttl: u16::from_be_bytes([ttl[0], ttl[1]]),
                    context,
                }
            }
            b"PONG" => Command::Pong { context: data },
            b"SUBSCRIBE" => Command::Subscribe(data),
            b"CANCEL" => Command::Cancel(data),
            b"JOIN" => Command::Join(data),
            b"LEAVE" => Command::Leave(data),
            _ => Command::Unknown { name, data },
        })
    }

    /// The command name.
    pub fn name(&self) -> &'a [u8] {
        match self {
            Command::Ready(_) => b"READY",
            Command::Error(_) => b"ERROR",
            Command::Ping { .. } => b"PING",
            Command::Pong { .. } => b"PONG",
            Command::Subscribe(_) => b"SUBSCRIBE",
            Command::Cancel(_) => b"CANCEL",
            Command::Join(_) => b"JOIN",
            Command::Leave(_) => b"LEAVE",
            Command::Unknown { name, .. } => name,
        }
    }

    /// Name, the fixed-size fields after it (at most 2 bytes, with their length), and data.
    fn parts(&self) -> (&'a [u8], ([u8; 2], usize), &'a [u8]) {
        const NONE: ([u8; 2], usize) = ([0; 2], 0);
        match *self {
            Command::Ready(m) => (b"READY", NONE, m.as_bytes()),
            Command::Error(r) => (
                b"ERROR",
                ([clamp_reason(r).len() as u8, 0], 1),
                clamp_reason(r),
            ),
            Command::Ping { ttl, context } => (b"PING", (ttl.to_be_bytes(), 2), clamp_ctx(context)),
            Command::Pong { context } => (b"PONG", NONE, clamp_ctx(context)),
            Command::Subscribe(t) => (b"SUBSCRIBE", NONE, t),
            Command::Cancel(t) => (b"CANCEL", NONE, t),
            Command::Join(g) => (b"JOIN", NONE, g),
            Command::Leave(g) => (b"LEAVE", NONE, g),
            Command::Unknown { name, data } => (name.get(..255).unwrap_or(name), NONE, data),
        }
    }

    /// Length of the encoded body (without frame header).
    ///
    /// On emit, ERROR reasons are cut to 255 bytes and PING/PONG contexts to 16 bytes.
    pub fn body_len(&self) -> usize {
        let (name, (_, fixed), data) = self.parts();
        1 + name.len() + fixed + data.len()
    }

    /// Length of the whole encoded frame (header and body).
    pub fn frame_len(&self) -> usize {
        let body = self.body_len();
        FrameHeader::command(body).encoded_len() + body
    }

    /// Emit the command body (without frame header); returns the bytes written.
    pub fn emit_body(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        ensure(out, self.body_len())?;
        let (name, (fixed, fixed_len), data) = self.parts();
        let mut w = Writer::new(out);
        w.put(&[name.len() as u8])?;
        w.put(name)?;
        w.put(fixed.get(..fixed_len).unwrap_or_default())?;
        w.put(data)?;
        Ok(w.len())
    }

    /// Emit the whole command frame (header and body); returns the bytes written.
    pub fn emit_frame(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        ensure(out, self.frame_len())?;
        let mut w = Writer::new(out);
        w.emit(|out| FrameHeader::command(self.body_len()).emit(out))?;
        w.emit(|out| self.emit_body(out))?;
        Ok(w.len())
    }
}

fn clamp_reason(r: &[u8]) -> &[u8] {
    r.get(..255).unwrap_or(r)
}

fn clamp_ctx(c: &[u8]) -> &[u8] {
    c.get(..MAX_PING_CONTEXT).unwrap_or(c)
}

fn parse_error_reason(data: &[u8]) -> Result<Command<'_>, CodecError> {
    let (&len, rest) = data.split_first().ok_or(CodecError::MalformedCommandBody)?;
    rest.get(..usize::from(len))
        .map(Command::Error)
        .ok_or(CodecError::MalformedCommandBody)
}
