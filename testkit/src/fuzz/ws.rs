//! The ZWS 2.0 bodies: the HTTP upgrade and the WebSocket framing (`zmtp_proto::ws`).

use zmtp_proto::codec::{FrameFlags, Mechanism, Status};
use zmtp_proto::ws::{
    emit_close, emit_frame, emit_ping, emit_pong, frame_len, ClientHandshake, Decoder, FrameError,
    HandshakeError, Protocol, Received, Role, ServerHandshake, Target, UpgradeRequest,
};

use super::input::{pick, Cursor};
use crate::wire::zws::LIBZMQ_NONCE;

/// Mechanisms for [`ws_upgrade`].
const MECHANISMS: &[Mechanism] = &[Mechanism::NULL, Mechanism::PLAIN, Mechanism::CURVE];

/// The cut points of `len` bytes fed in pieces of the `pattern`'s sizes, cycled (a zero is
/// a one; no pattern: one byte at a time). The last is `len`.
fn cuts(len: usize, pattern: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < len {
        at = (at + usize::from(pick(pattern, i, 1)).max(1)).min(len);
        out.push(at);
        i += 1;
    }
    out
}

/// A parse result with the parts that can be compared.
type Verdict<T> = Result<Status<(T, usize)>, HandshakeError>;

/// What a prefix may answer when the whole answers `whole`: `Partial`, the same error, or
/// the same head (the head is within the prefix, and nothing after it matters).
fn agrees<T: PartialEq + core::fmt::Debug>(prefix: &Verdict<T>, whole: &Verdict<T>, what: &str) {
    match prefix {
        Ok(Status::Partial) => {}
        other => assert!(
            other == whole,
            "{what}: a prefix gave {other:?}, the whole {whole:?}"
        ),
    }
}

fn request_verdict(server: &ServerHandshake, input: &[u8]) -> Verdict<(Protocol, Vec<u8>)> {
    server.parse_request(input).map(|s| match s {
        Status::Complete((req, n)) => {
            Status::Complete(((req.protocol, req.accept.as_bytes().to_vec()), n))
        }
        Status::Partial => Status::Partial,
    })
}

/// Whether a request head offers `ZWS2.0/NULL` in one of its protocol lists (an oracle
/// written apart from the parser: lines, a colon, commas, whitespace).
fn offers_null(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n').any(|line| {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        let (name, value) = line.split_at(colon);
        name.eq_ignore_ascii_case(b"Sec-WebSocket-Protocol")
            && value
                .get(1..)
                .unwrap_or_default()
                .split(|&b| b == b',')
                .any(|e| e.trim_ascii() == b"ZWS2.0/NULL")
    })
}

/// What is true of every accepted request.
fn check_request(req: &UpgradeRequest<'_>, used: usize, input: &[u8], mechanism: Mechanism) {
    assert!(used <= input.len(), "claimed {used} of {}", input.len());
    assert!(
        input.get(..used).is_some_and(|h| h.ends_with(b"\r\n\r\n")),
        "a head not ending with an empty line"
    );
    assert!(req.protocol.accepted_by(mechanism), "a protocol not ours");
    if req.protocol == Protocol::Bare {
        // Chosen only when ZWS2.0/NULL was not offered anywhere.
        let head = input.get(..used).unwrap_or_default();
        assert!(
            !offers_null(head),
            "bare ZWS2.0 chosen over an offered ZWS2.0/NULL"
        );
    }
    let len = req.response_len();
    let mut out = vec![0u8; len];
    assert!(req.emit_response(&mut out) == Ok(len), "response_len");
    assert!(out.ends_with(b"\r\n\r\n"), "response head");
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert!(
            req.emit_response(&mut short).map_err(|e| e.required) == Err(len),
            "emitted into a short buffer"
        );
    }
}

/// The HTTP upgrade, both roles, on arbitrary bytes.
///
/// Input: byte 0 picks the mechanism (bits 0-1) and how many piece sizes follow (bits
/// 2-4); then the piece sizes; the rest is an HTTP head (and whatever follows it).
///
/// The head goes to a server and to a client (whose key is libzmq's first), whole and cut
/// in pieces: every prefix answers `Partial` or what the whole answers, an accepted head
/// is within the input and ends with the empty line, the protocol chosen is one the
/// mechanism accepts (bare `ZWS2.0` only when `ZWS2.0/NULL` was not offered), and the
/// response's length is what is written. Then our own client and server, with a nonce,
/// host and path from the input, agree on the upgrade.
pub fn ws_upgrade(data: &[u8]) {
    let mut c = Cursor::new(data);
    let b0 = c.byte();
    let mechanism = pick(MECHANISMS, usize::from(b0 & 3), Mechanism::NULL);
    let pattern = c.take(usize::from(b0 >> 2 & 7));
    let head = c.rest();
    let (Ok(server), Ok(client)) = (
        ServerHandshake::new(mechanism),
        ClientHandshake::new(mechanism, LIBZMQ_NONCE),
    ) else {
        panic!("{mechanism:?} refused");
    };

    // The server's parse.
    let whole = request_verdict(&server, head);
    if let Ok(Status::Complete((req, used))) = server.parse_request(head) {
        check_request(&req, used, head, mechanism);
    }
    for cut in cuts(head.len(), pattern) {
        let prefix = request_verdict(&server, head.get(..cut).unwrap_or_default());
        agrees(&prefix, &whole, "request");
    }

    // The client's parse.
    let whole = client.parse_response(head);
    if let Ok(Status::Complete((protocol, used))) = whole {
        assert!(used <= head.len(), "claimed {used} of {}", head.len());
        assert!(client.offered().contains(&protocol), "not offered");
    }
    for cut in cuts(head.len(), pattern) {
        let prefix = client.parse_response(head.get(..cut).unwrap_or_default());
        agrees(&prefix, &whole, "response");
    }

    // Our client and server with material from the input.
    let mut nonce = [0u8; 16];
    for (n, b) in nonce.iter_mut().zip(head) {
        *n = *b;
    }
    let text = |bytes: &[u8]| -> String {
        bytes
            .iter()
            .map(|&b| char::from(b'!' + b % 94))
            .collect::<String>()
    };
    let host = text(head.get(16..24).unwrap_or(b"h"));
    let path = format!("/{}", text(head.get(24..64).unwrap_or_default()));
    let Ok(client) = ClientHandshake::new(mechanism, nonce) else {
        return;
    };
    let Ok(target) = Target::new(&host, &path) else {
        return;
    };
    let mut request = vec![0u8; client.request_len(&target)];
    let n = client.emit_request(&target, &mut request);
    assert!(n == Ok(request.len()), "request_len");
    let Ok(Status::Complete((req, used))) = server.parse_request(&request) else {
        panic!(
            "our own request refused: {}",
            String::from_utf8_lossy(&request)
        );
    };
    assert!(used == request.len(), "request length");
    assert!(req.path == path.as_bytes(), "path");
    assert!(req.protocol == client.offered().first().copied().unwrap_or(Protocol::Null));
    let mut response = vec![0u8; req.response_len()];
    let m = req.emit_response(&mut response).unwrap_or(0);
    assert!(
        client.parse_response(&response) == Ok(Status::Complete((req.protocol, m))),
        "our own response refused"
    );
}

// ----- framing ----------------------------------------------------------------------------

/// Body limits for [`ws_frame`] (`None`: no limit; the last entry is read from the input).
const LIMITS: &[Option<u64>] = &[
    None,
    Some(0),
    Some(1),
    Some(16),
    Some(124),
    Some(125),
    Some(65535),
];

/// A decoded frame, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Frame {
    Data(FrameFlags, Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Vec<u8>),
}

impl Frame {
    fn of(received: &Received, buf: &[u8]) -> Frame {
        let bytes = |r: &core::ops::Range<usize>| buf.get(r.clone()).unwrap_or_default().to_vec();
        match received {
            Received::Frame { flags, body } => Frame::Data(*flags, bytes(body)),
            Received::Ping { payload } => Frame::Ping(bytes(payload)),
            Received::Pong { payload } => Frame::Pong(bytes(payload)),
            Received::Close { payload } => Frame::Close(bytes(payload)),
        }
    }

    /// The same frame as the peer of a `decoder` sends it, masked with `key` when the
    /// peer is a client.
    fn emit(&self, decoder: &Decoder, key: [u8; 4]) -> Vec<u8> {
        let mask = (decoder.role() == Role::Server).then_some(key);
        let mut out = vec![0u8; 256];
        let n = match self {
            Frame::Data(flags, body) => {
                out = vec![0u8; frame_len(body.len(), mask.is_some())];
                emit_frame(*flags, body, mask, &mut out)
            }
            Frame::Ping(p) => emit_ping(p, mask, &mut out),
            Frame::Pong(p) => emit_pong(p, mask, &mut out),
            Frame::Close(p) => emit_close(p, mask, &mut out),
        };
        let Ok(n) = n else {
            panic!("{self:?} could not be emitted: {n:?}");
        };
        out.truncate(n);
        out
    }
}

/// How a run of the decoder ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Run {
    frames: Vec<Frame>,
    pub(super) error: Option<FrameError>,
    left: usize,
}

impl Run {
    /// How many frames were decoded.
    #[cfg(test)]
    pub(super) fn frames(&self) -> usize {
        self.frames.len()
    }
}

/// Decode `stream` arriving at the given cut points, as a driver does, checking the
/// decoder's contract on every call.
pub(super) fn run(decoder: &Decoder, stream: &[u8], cuts: &[usize]) -> Run {
    let mut out = Run {
        frames: Vec::new(),
        error: None,
        left: 0,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        buf.extend_from_slice(stream.get(at..cut).unwrap_or_default());
        at = cut;
        loop {
            let before = buf.clone();
            let len = decoder.frame_len(&buf);
            match decoder.decode(&mut buf) {
                Ok(Status::Complete((received, used))) => {
                    assert!(
                        used > 0 && used <= buf.len(),
                        "used {used} of {}",
                        buf.len()
                    );
                    assert!(len == Ok(Status::Complete(used)), "frame_len {len:?}");
                    let frame = Frame::of(&received, &buf);
                    let range = match &received {
                        Received::Frame { body, .. } => body.clone(),
                        Received::Ping { payload }
                        | Received::Pong { payload }
                        | Received::Close { payload } => payload.clone(),
                    };
                    assert!(range.start <= range.end && range.end <= used, "range");
                    if let Frame::Data(flags, body) = &frame {
                        assert!(body.len() as u64 <= decoder.max_body(), "over the limit");
                        assert!(!(flags.command && flags.more), "command with MORE");
                    } else {
                        assert!(range.len() <= 125, "control frame over 125 bytes");
                    }
                    out.frames.push(frame);
                    buf.drain(..used);
                }
                Ok(Status::Partial) => {
                    assert!(buf == before, "input changed on Partial");
                    if let Ok(Status::Complete(n)) = len {
                        assert!(n > buf.len(), "Partial with the whole frame there");
                    }
                    break;
                }
                Err(e) => {
                    assert!(buf == before, "input changed on an error");
                    out.error = Some(e);
                    return out;
                }
            }
        }
    }
    out.left = buf.len();
    out
}

/// The WebSocket frame decoder on an arbitrary stream, whole and in pieces.
///
/// Input: byte 0 picks our role (bit 0: server, so frames must be masked) and the body
/// limit (bits 1-3; 7 reads a `u16` next); byte 1 (bits 0-2) how many piece sizes follow
/// (none: one byte at a time); byte 2 is a masking key seed; the rest is the stream.
///
/// The stream decoded whole and in pieces gives the same frames, error and leftover; no
/// call claims more than it was given, changes its input unless it completes a frame, or
/// passes a body over the limit; `frame_len` agrees with `decode`. Every frame decoded,
/// emitted again as the peer would send it, decodes to itself; our answers (an empty pong,
/// the close echoed) decode on the peer's side.
pub fn ws_frame(data: &[u8]) {
    let mut c = Cursor::new(data);
    let (b0, b1, b2) = (c.byte(), c.byte(), c.byte());
    let role = if b0 & 1 != 0 {
        Role::Server
    } else {
        Role::Client
    };
    let limit = match b0 >> 1 & 7 {
        7 => Some(u64::from(c.u16())),
        sel => pick(LIMITS, usize::from(sel), None),
    };
    let pattern = c.take(usize::from(b1 & 7));
    let stream = c.rest();
    let decoder = Decoder::new(role, limit);
    let peer = Decoder::new(
        match role {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        },
        None,
    );

    let whole = run(&decoder, stream, &[stream.len()]);
    let pieces = run(&decoder, stream, &cuts(stream.len(), pattern));
    assert!(pieces == whole, "in pieces:\n{pieces:?}\nwhole:\n{whole:?}");

    let key = [b2, b2.wrapping_mul(3), !b2, b2 ^ 0x5A];
    for frame in &whole.frames {
        let bytes = frame.emit(&decoder, key);
        let again = run(&decoder, &bytes, &[bytes.len()]);
        assert!(
            again.frames.as_slice() == core::slice::from_ref(frame) && again.error.is_none(),
            "{frame:?} re-emitted decodes to {again:?}"
        );
        // Our answer, as the peer decodes it.
        let answer = match frame {
            Frame::Ping(_) => Frame::Pong(Vec::new()),
            Frame::Close(p) => Frame::Close(p.clone()),
            _ => continue,
        };
        let bytes = answer.emit(&peer, key);
        let got = run(&peer, &bytes, &[bytes.len()]);
        assert!(
            got.frames == [answer] && got.error.is_none(),
            "our answer decodes to {got:?}"
        );
    }
}
