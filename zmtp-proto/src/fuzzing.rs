//! Fuzz target bodies (feature `fuzzing`, which turns on `std` and `curve`).
//!
//! Each `pub fn NAME(data: &[u8])` here is the whole body of the cargo-fuzz target
//! `fuzz/fuzz_targets/NAME.rs`, and is also run by `tests/fuzz_bodies.rs` over the seed
//! corpus and pseudo-random inputs, so that a plain `cargo test --features fuzzing`
//! exercises every body. A body never panics on its own: every panic is either a panic in
//! the code under test or a failed `assert!` of an invariant, and both are findings.
//!
//! Everything is deterministic: time is virtual, CURVE keys are the `zmq_curve` test
//! keys and every connection's entropy is a constant, so that a crashing input replays
//! exactly and recorded peer bytes stay valid (a CURVE server's WELCOME answers the very
//! HELLO the connection under test sends again).
//!
//! | target | input | checks |
//! |---|---|---|
//! | [`greeting`] | raw bytes | [`Greeting`] and signature parsing agree; emit → parse round-trips |
//! | [`frame_decoder`] | 3 control bytes, fragment sizes, stream | same items whatever the fragmentation; the maximum message size holds |
//! | [`command`] | a command body | [`Command`] emit → parse round-trips |
//! | [`metadata`] | a metadata block | [`Metadata`] re-emits byte for byte |
//! | [`z85`] | text, or bytes | decode → encode and encode → decode round-trip; error offsets are right |
//! | [`connection`] | 2 setup bytes, then operations | no panic; errors are sticky; the input contract holds |
//! | [`curve_traffic`] | 1 byte, then mutations | a tampered CURVE stream never delivers altered content |
//! | [`socket()`] | 4 option bytes, then actions | HWMs hold; every message received is whole, genuine, and received once |
//!
//! [`seed_corpus`] makes the seed inputs of every target from in-memory handshakes (byte
//! for byte what libzmq sends, per the project's ZMTP notes) and from byte vectors seen
//! on the wire against libzmq; `fuzz/corpus/` holds them as files.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use core::time::Duration;

use bytes::Bytes;

use crate::codec::{
    emit_property, Command, FrameHeader, Greeting, InsufficientSize, Mechanism, Metadata, Status,
    Version, GREETING_LEN, SIGNATURE_LEN,
};
use crate::curve_crypto::{KeyPair, PublicKey};
use crate::mechanism::Security;
use crate::socket::{self, AuthReply, EndpointId, Message, Options, PeerId};
use crate::{
    Buffered, Config, Connection, EncodeError, Error, Instant, Item, OwnedItem, SocketType,
};

/// The body of a fuzz target.
pub type Body = fn(&[u8]);

/// Every fuzz target: its name (the file name in `fuzz/fuzz_targets/` and the folder in
/// `fuzz/corpus/`) and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("greeting", greeting),
    ("frame_decoder", frame_decoder),
    ("command", command),
    ("metadata", metadata),
    ("z85", z85),
    ("connection", connection),
    ("curve_traffic", curve_traffic),
    ("socket", socket),
];

// ----- input decoding ----------------------------------------------------------------

/// Reads fuzz input front to back; past the end every read gives zeros (or nothing).
struct Cursor<'a> {
    data: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { data }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    /// The next `n` bytes, or what is left.
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self
            .data
            .split_at_checked(n)
            .unwrap_or((self.data, &[][..]));
        self.data = rest;
        head
    }

    fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.data)
    }
}

/// `table[sel % len]`, or `default` for an empty table.
fn pick<T: Copy>(table: &[T], sel: usize, default: T) -> T {
    match table.len() {
        0 => default,
        n => table.get(sel % n).copied().unwrap_or(default),
    }
}

/// Whether `hay` contains `needle` anywhere.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn owned(item: &Item<'_>) -> OwnedItem {
    let b = Bytes::copy_from_slice(item.payload());
    match item {
        Item::Ready(_) => OwnedItem::Ready(b),
        Item::Frame { more, .. } => OwnedItem::Frame {
            body: b,
            more: *more,
        },
        Item::Subscribe(_) => OwnedItem::Subscribe(b),
        Item::Cancel(_) => OwnedItem::Cancel(b),
        Item::Join(_) => OwnedItem::Join(b),
        Item::Leave(_) => OwnedItem::Leave(b),
    }
}

// ----- fixed test material -------------------------------------------------------------

/// Where every virtual clock starts.
const START: Instant = Instant::from_millis(1_000);
/// Entropy of the connection under test (and of CURVE clients in pairs).
const LOCAL_ENTROPY: [u8; 32] = [0x11; 32];
/// Entropy of the other end of a pair.
const PEER_ENTROPY: [u8; 32] = [0x22; 32];
/// The `zmq_curve` test keys (libzmq `doc/zmq_curve.txt`), secret halves in Z85.
const CLIENT_SECRET_Z85: &[u8] = b"D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
const SERVER_SECRET_Z85: &[u8] = b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
const PLAIN_USER: &[u8] = b"admin";
const PLAIN_PASSWORD: &[u8] = b"secret";

fn client_keys() -> Option<KeyPair> {
    Some(KeyPair::from_secret(
        crate::z85::decode_key(CLIENT_SECRET_Z85).ok()?,
    ))
}

fn server_keys() -> Option<KeyPair> {
    Some(KeyPair::from_secret(
        crate::z85::decode_key(SERVER_SECRET_Z85).ok()?,
    ))
}

fn curve_client() -> Option<Security> {
    Some(Security::CurveClient {
        server_key: PublicKey(server_keys()?.public.0),
        keys: client_keys()?,
    })
}

fn curve_server() -> Option<Security> {
    Some(Security::CurveServer {
        keys: server_keys()?,
    })
}

// ----- driving raw connections -----------------------------------------------------------

/// Everything `conn` wants to send now.
fn transmit(conn: &mut Connection) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 512];
    for _ in 0..64 {
        match conn.poll_transmit(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(buf.get(..n).unwrap_or_default()),
            Err(InsufficientSize { required }) => {
                // The contract: a failure means not even the first frame fits.
                assert!(
                    required > buf.len(),
                    "InsufficientSize below the buffer size"
                );
                buf.resize(required, 0);
            }
        }
    }
    all
}

/// Feed the front of `rx` to `conn` until it consumes nothing (checking the input
/// contract on every step), hand each item to `sink` and drop what was consumed.
fn pump(
    conn: &mut Connection,
    now: Instant,
    rx: &mut Vec<u8>,
    sink: &mut dyn FnMut(OwnedItem),
) -> Result<(), Error> {
    let mut at = 0;
    let result = loop {
        let Some(rest) = rx.get_mut(at..) else {
            break Ok(());
        };
        let len = rest.len();
        let input = match conn.handle_input(now, rest) {
            Ok(input) => input,
            Err(e) => break Err(e),
        };
        assert!(input.consumed <= len, "consumed more than the input");
        let item = input.item.as_ref().map(owned);
        let (consumed, needed, payload) = (input.consumed, input.needed, input.payload.clone());
        if consumed == 0 {
            // Otherwise the driver would wait forever for bytes it already has.
            assert!(
                needed > len,
                "no progress although {needed} <= {len} bytes are buffered"
            );
            assert!(item.is_none(), "an item without consumed bytes");
            break Ok(());
        }
        if let Some(item) = item {
            // The payload range locates the payload in the input (zero-copy slicing).
            assert!(
                payload.end <= consumed,
                "payload range past the consumed bytes"
            );
            let located = rx.get(at + payload.start..at + payload.end);
            assert!(
                located == Some(owned_payload(&item)),
                "payload range does not locate the payload"
            );
            sink(item);
        }
        at += consumed;
    };
    rx.drain(..at.min(rx.len()));
    result
}

fn owned_payload(item: &OwnedItem) -> &[u8] {
    match item {
        OwnedItem::Ready(b)
        | OwnedItem::Frame { body: b, .. }
        | OwnedItem::Subscribe(b)
        | OwnedItem::Cancel(b)
        | OwnedItem::Join(b)
        | OwnedItem::Leave(b) => b,
    }
}

/// A handshake as `local` saw it: in each round, the bytes `peer` sent, and whether
/// `local` then gave a verdict (200). Replaying it into a connection built exactly like
/// `local` (same configuration, entropy and clock) takes that one through the same
/// handshake without a peer: its own output is the same, so the peer's answers still fit.
type Rounds = Vec<(Vec<u8>, bool)>;

/// Run `local` and `peer` against each other until both are established and idle
/// (verdicts answered 200); `None` if they do not get there.
fn record_handshake(local: &mut Connection, peer: &mut Connection) -> Option<Rounds> {
    let mut rounds = Vec::new();
    let (mut local_rx, mut peer_rx) = (Vec::new(), Vec::new());
    for _ in 0..32 {
        let to_peer = transmit(local);
        peer_rx.extend_from_slice(&to_peer);
        pump(peer, START, &mut peer_rx, &mut |_| {}).ok()?;
        while peer.poll_event().is_some() {}
        if peer.auth_request().is_some() {
            peer.handle_auth(START, 200).ok()?;
        }
        let to_local = transmit(peer);
        local_rx.extend_from_slice(&to_local);
        pump(local, START, &mut local_rx, &mut |_| {}).ok()?;
        while local.poll_event().is_some() {}
        let verdict = local.auth_request().is_some();
        if verdict {
            local.handle_auth(START, 200).ok()?;
        }
        let moved = !to_peer.is_empty() || !to_local.is_empty();
        if !moved && local.is_established() && peer.is_established() {
            // Whatever either still has to say has been said.
            return Some(rounds);
        }
        rounds.push((to_local, verdict));
    }
    None
}

/// Take `local` through a recorded handshake; `None` if it is not established after it.
fn replay_handshake(local: &mut Connection, rounds: &Rounds) -> Option<()> {
    let mut rx = Vec::new();
    for (bytes, verdict) in rounds {
        transmit(local);
        rx.extend_from_slice(bytes);
        pump(local, START, &mut rx, &mut |_| {}).ok()?;
        while local.poll_event().is_some() {}
        if *verdict {
            local.handle_auth(START, 200).ok()?;
        }
    }
    transmit(local);
    while local.poll_event().is_some() {}
    local.is_established().then_some(())
}

// ----- greeting ------------------------------------------------------------------------

/// Greeting and signature parsing on arbitrary bytes.
///
/// The signature parse and the whole-greeting parse must agree (same major version, an
/// error for one is an error for the other, `Partial` only for short input), bytes past
/// 64 are ignored, and a parsed greeting emits 64 bytes that parse back to it.
pub fn greeting(data: &[u8]) {
    let signature = Greeting::parse_signature(data);
    let whole = Greeting::parse(data);
    match (&signature, &whole) {
        (Err(e), w) => assert!(w == &Err(*e), "signature error {e:?} but greeting {w:?}"),
        (Ok(Status::Partial), w) => {
            assert!(
                data.len() < SIGNATURE_LEN,
                "partial signature of {} bytes",
                data.len()
            );
            assert!(
                w == &Ok(Status::Partial),
                "partial signature, greeting {w:?}"
            );
        }
        (Ok(Status::Complete(major)), Ok(Status::Complete(g))) => {
            assert!(
                data.len() >= GREETING_LEN,
                "complete greeting from short input"
            );
            assert!(g.version.major == *major, "major versions disagree");
        }
        (Ok(Status::Complete(_)), Ok(Status::Partial)) => {
            assert!(
                data.len() < GREETING_LEN,
                "partial greeting of {} bytes",
                data.len()
            );
        }
        (Ok(Status::Complete(_)), Err(e)) => {
            panic!("signature parses but the greeting fails with {e:?}")
        }
    }
    if let Some(head) = data.get(..GREETING_LEN) {
        assert!(
            Greeting::parse(head) == whole,
            "bytes past 64 changed the greeting"
        );
    }
    let Ok(Status::Complete(g)) = whole else {
        return;
    };
    let mut out = [0u8; GREETING_LEN];
    assert!(g.emit(&mut out) == Ok(GREETING_LEN), "greeting emit failed");
    assert!(
        Greeting::parse(&out) == Ok(Status::Complete(g)),
        "greeting emit/parse round trip"
    );
    assert!(
        Greeting::parse_signature(&out) == Ok(Status::Complete(g.version.major)),
        "emitted signature"
    );
    let mut short = [0u8; GREETING_LEN - 1];
    assert!(
        g.emit(&mut short).is_err(),
        "greeting emitted into 63 bytes"
    );
    // The mechanism name is what precedes the NUL padding.
    assert!(
        Mechanism::from_name(g.mechanism.name()).name() == g.mechanism.name(),
        "mechanism name round trip"
    );
}

// ----- command -------------------------------------------------------------------------

/// The value a command has after an emit: ERROR reasons cut to 255 bytes, PING and PONG
/// contexts to 16 (as documented on [`Command::body_len`]).
fn after_emit(cmd: Command<'_>) -> Command<'_> {
    let ctx = |c: &'_ [u8]| -> usize { c.len().min(crate::codec::MAX_PING_CONTEXT) };
    match cmd {
        Command::Ping { ttl, context } => Command::Ping {
            ttl,
            context: context.get(..ctx(context)).unwrap_or(context),
        },
        Command::Pong { context } => Command::Pong {
            context: context.get(..ctx(context)).unwrap_or(context),
        },
        Command::Error(r) => Command::Error(r.get(..255).unwrap_or(r)),
        other => other,
    }
}

/// [`Command::parse`] on an arbitrary command body; a parsed command emits (body and
/// frame) and parses back to the same value, and its lengths are exact.
pub fn command(data: &[u8]) {
    let Ok(cmd) = Command::parse(data) else {
        return;
    };
    if let Command::Unknown { name, .. } = cmd {
        for known in [
            &b"READY"[..],
            b"ERROR",
            b"PING",
            b"PONG",
            b"SUBSCRIBE",
            b"CANCEL",
            b"JOIN",
            b"LEAVE",
        ] {
            assert!(name != known, "a known command parsed as unknown");
        }
    }
    let len = cmd.body_len();
    let mut body = vec![0u8; len];
    assert!(
        cmd.emit_body(&mut body) == Ok(len),
        "body_len is not what emit_body writes"
    );
    if len > 0 {
        let mut short = vec![0u8; len - 1];
        assert!(
            cmd.emit_body(&mut short).is_err(),
            "emitted into a short buffer"
        );
    }
    let reparsed = Command::parse(&body);
    assert!(
        reparsed == Ok(after_emit(cmd)),
        "command round trip: {cmd:?} became {reparsed:?}"
    );
    assert!(reparsed.map(|c| c.name()) == Ok(cmd.name()), "name changed");
    let frame_len = cmd.frame_len();
    let mut frame = vec![0u8; frame_len];
    assert!(
        cmd.emit_frame(&mut frame) == Ok(frame_len),
        "frame_len is not what emit_frame writes"
    );
    let parsed = FrameHeader::parse(&frame, u64::MAX);
    let Ok(Status::Complete((header, header_len))) = parsed else {
        panic!("an emitted command frame header does not parse: {parsed:?}");
    };
    assert!(header == FrameHeader::command(len), "command frame header");
    assert!(
        frame.get(header_len..) == Some(&body[..]),
        "frame body differs from emit_body"
    );
}

// ----- metadata ------------------------------------------------------------------------

/// [`Metadata::parse`] on an arbitrary block; a parsed block re-emits property by property
/// to the same bytes, and READY carrying it parses to the same metadata.
pub fn metadata(data: &[u8]) {
    let parsed = Metadata::parse(data);
    // READY is the command that carries metadata: it accepts exactly the valid blocks.
    let mut ready = b"\x05READY".to_vec();
    ready.extend_from_slice(data);
    let as_ready = Command::parse(&ready);
    match parsed {
        Ok(m) => assert!(
            as_ready == Ok(Command::Ready(m)),
            "READY disagrees with Metadata::parse"
        ),
        Err(_) => assert!(as_ready.is_err(), "READY accepts invalid metadata"),
    }
    let Ok(meta) = parsed else {
        return;
    };
    assert!(meta.as_bytes() == data, "metadata bytes");
    let mut out = Vec::new();
    for p in meta.iter() {
        assert!(
            !p.name.is_empty() && p.name.len() <= 255,
            "property name length"
        );
        let len = crate::codec::property_len(p.name, p.value);
        let mut buf = vec![0u8; len];
        assert!(
            emit_property(p.name, p.value, &mut buf) == Ok(len),
            "property_len"
        );
        out.extend_from_slice(&buf);
        // `get` finds the first property of a name.
        let first = meta.iter().find(|q| q.name == p.name).map(|q| q.value);
        assert!(meta.get(p.name) == first, "get is not the first match");
    }
    assert!(out == data, "metadata re-emitted differently");
    let again = Metadata::parse(&out);
    assert!(
        again.map(|m| m.iter().count()) == Ok(meta.iter().count()),
        "property count"
    );
}

// ----- z85 -----------------------------------------------------------------------------

/// Z85 both ways: `data` as text to decode (a decoded text encodes back to itself; a
/// refused one is refused for the right reason at the right offset) and as bytes to
/// encode (the longest multiple-of-4 prefix, which decodes back).
pub fn z85(data: &[u8]) {
    use crate::z85::{decode, decode_key, encode, encode_key, Z85Error, ALPHABET};

    let mut binary = vec![0u8; data.len() / 5 * 4];
    match decode(data, &mut binary) {
        Ok(n) => {
            assert!(n == binary.len(), "decoded length");
            let mut text = vec![0u8; data.len()];
            assert!(
                encode(&binary, &mut text) == Ok(data.len()),
                "re-encode length"
            );
            assert!(text == data, "decode/encode round trip");
        }
        Err(Z85Error::BadLength) => assert!(
            !data.len().is_multiple_of(5),
            "BadLength for a multiple of 5"
        ),
        Err(Z85Error::BadCharacter { at }) => {
            let c = data.get(at).copied();
            assert!(
                c.is_some_and(|c| !ALPHABET.contains(&c)),
                "BadCharacter at {at} names a valid character"
            );
            // Nothing bad before it in its group, and the earlier groups decoded.
            let group = at / 5 * 5;
            let before = data.get(group..at).unwrap_or_default();
            assert!(
                before.iter().all(|c| ALPHABET.contains(c)),
                "an earlier bad character"
            );
        }
        Err(Z85Error::Overflow { at }) => {
            assert!(at % 5 == 0, "overflow offset not at a group");
            let group = data.get(at..at + 5).unwrap_or_default();
            assert!(
                group.len() == 5 && group.iter().all(|c| ALPHABET.contains(c)),
                "overflow group"
            );
        }
        Err(e) => panic!("unexpected Z85 error {e:?}"),
    }
    if data.len().is_multiple_of(5) && data.len() >= 5 {
        let mut short = vec![0u8; data.len() / 5 * 4 - 1];
        assert!(
            decode(data, &mut short) == Err(Z85Error::BufferTooSmall),
            "decode into a short buffer"
        );
    }

    let bytes = data.get(..data.len() / 4 * 4).unwrap_or_default();
    let mut text = vec![0u8; bytes.len() / 4 * 5];
    assert!(encode(bytes, &mut text) == Ok(text.len()), "encode length");
    assert!(
        text.iter().all(|c| ALPHABET.contains(c)),
        "encoded outside the alphabet"
    );
    let mut back = vec![0u8; bytes.len()];
    assert!(
        decode(&text, &mut back) == Ok(bytes.len()),
        "decode of encoded text"
    );
    assert!(back == bytes, "encode/decode round trip");
    if !data.len().is_multiple_of(4) {
        let mut out = vec![0u8; data.len() * 2];
        assert!(
            encode(data, &mut out) == Err(Z85Error::BadLength),
            "encode of a ragged length"
        );
    }
    if let Some(key) = data.get(..32).and_then(|k| <[u8; 32]>::try_from(k).ok()) {
        let text = encode_key(&key);
        assert!(decode_key(&text) == Ok(key), "key round trip");
    }
}

// ----- frame decoder ---------------------------------------------------------------------

/// (receiver, sender) socket types for [`frame_decoder`], chosen by the first byte.
const FRAME_PAIRS: &[(SocketType, SocketType)] = &[
    (SocketType::Pair, SocketType::Pair),
    (SocketType::Pub, SocketType::Sub),
    (SocketType::XPub, SocketType::XSub),
    (SocketType::Pull, SocketType::Push),
    (SocketType::Router, SocketType::Dealer),
    (SocketType::Dealer, SocketType::Router),
    (SocketType::Sub, SocketType::Pub),
    (SocketType::Rep, SocketType::Req),
];

/// Maximum message sizes for [`frame_decoder`] (`None`: no limit; the last entry is read
/// from the input).
const MAX_SIZES: &[Option<u64>] = &[
    None,
    Some(0),
    Some(1),
    Some(16),
    Some(255),
    Some(256),
    Some(1000),
];

/// How a frame decoder run ended: the items, the sticky error, the bytes left unread.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    items: Vec<OwnedItem>,
    error: Option<Error>,
    left: usize,
}

/// Recorded NULL handshakes for [`frame_decoder`], by (pair, our version, theirs).
static FRAME_HANDSHAKES: std::sync::Mutex<BTreeMap<(usize, bool, bool), Rounds>> =
    std::sync::Mutex::new(BTreeMap::new());

/// An established NULL connection of pair `pair` of [`FRAME_PAIRS`] (ours at 3.0 with
/// `ours_30`, the peer's with `theirs_30`), with the given maximum message size. The
/// handshake with a real peer is recorded once and replayed.
fn established(
    pair: usize,
    ours_30: bool,
    theirs_30: bool,
    max: Option<u64>,
) -> Option<Connection> {
    let (ours, theirs) = FRAME_PAIRS.get(pair).copied()?;
    let version = |v30: bool| if v30 { Version::V3_0 } else { Version::V3_1 };
    let mut cfg = Config::new(ours);
    cfg.version = version(ours_30);
    cfg.max_message_size = max;
    let key = (pair, ours_30, theirs_30);
    let cached = FRAME_HANDSHAKES
        .lock()
        .ok()
        .and_then(|cache| cache.get(&key).cloned());
    let rounds = match cached {
        Some(rounds) => rounds,
        None => {
            let mut peer = Config::new(theirs);
            peer.version = version(theirs_30);
            let mut local = Connection::new(cfg.clone(), START);
            let rounds = record_handshake(&mut local, &mut Connection::new(peer, START))?;
            if let Ok(mut cache) = FRAME_HANDSHAKES.lock() {
                cache.insert(key, rounds.clone());
            }
            rounds
        }
    };
    let mut conn = Connection::new(cfg, START);
    replay_handshake(&mut conn, &rounds)?;
    Some(conn)
}

/// Poll every item out of a buffered connection.
fn drain_buffered(b: &mut Buffered, out: &mut Decoded) {
    if out.error.is_some() {
        return;
    }
    loop {
        match b.poll_item(START) {
            Ok(Some(item)) => out.items.push(item),
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
}

/// The frame decoder of an established connection on an arbitrary byte stream, fed whole
/// and in fragments.
///
/// Input: byte 0 chooses the maximum message size (bits 0-2; 7 reads a `u16` next) and
/// the socket types (bits 3-5, from a table of compatible pairs); byte 1 the versions (bit
/// 0: ours 3.0, bit 1: the peer's 3.0) and the feeding (bit 2: through
/// [`Buffered::receive_shared`]); byte 2 (bits 0-2) how many fragment sizes follow (none:
/// one byte at a time); the rest is the stream.
///
/// The same stream is decoded by a [`Buffered`] fed all at once, a [`Buffered`] fed in
/// fragments and a raw [`Connection`] fed in fragments: the items, the error and the bytes
/// left must be the same. No frame, and no message, larger than the maximum size is
/// delivered.
pub fn frame_decoder(data: &[u8]) {
    let mut c = Cursor::new(data);
    let (b0, b1, b2) = (c.byte(), c.byte(), c.byte());
    let max = match b0 & 7 {
        7 => Some(u64::from(c.u16())),
        sel => pick(MAX_SIZES, usize::from(sel), None),
    };
    let pair = usize::from(b0 >> 3) % FRAME_PAIRS.len();
    let shared = b1 & 4 != 0;
    let pattern = c.take(usize::from(b2 & 7));
    let stream = c.rest();
    let conn = || established(pair, b1 & 1 != 0, b1 & 2 != 0, max);

    // Fragment sizes: the pattern, cycled (a zero is a one).
    let fragments = || {
        let mut out = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < stream.len() {
            let size = usize::from(pick(pattern, i, 0)).max(1);
            let end = (at + size).min(stream.len());
            out.push(stream.get(at..end).unwrap_or_default());
            at = end;
            i += 1;
        }
        out
    };

    // 1. Buffered, everything at once.
    let Some(whole_conn) = conn() else {
        panic!("NULL handshake of {:?} failed", FRAME_PAIRS.get(pair));
    };
    let mut whole = Buffered::wrap(whole_conn);
    let mut reference = Decoded {
        items: Vec::new(),
        error: None,
        left: 0,
    };
    whole.receive(stream);
    drain_buffered(&mut whole, &mut reference);
    reference.left = if reference.error.is_some() {
        0
    } else {
        whole.buffered_input()
    };

    // 2. Buffered, in fragments.
    let Some(frag_conn) = conn() else {
        return;
    };
    let mut frag = Buffered::wrap(frag_conn);
    let mut fragmented = Decoded {
        items: Vec::new(),
        error: None,
        left: 0,
    };
    for piece in fragments() {
        if fragmented.error.is_some() {
            break;
        }
        if shared {
            match frag.receive_shared(START, Bytes::copy_from_slice(piece)) {
                Ok(Some(item)) => fragmented.items.push(item),
                Ok(None) => {}
                Err(e) => fragmented.error = Some(e),
            }
        } else {
            frag.receive(piece);
        }
        drain_buffered(&mut frag, &mut fragmented);
    }
    fragmented.left = if fragmented.error.is_some() {
        0
    } else {
        frag.buffered_input()
    };

    // 3. A raw connection, in fragments, with the input contract checked on every step.
    let Some(mut raw_conn) = conn() else {
        return;
    };
    let mut raw = Decoded {
        items: Vec::new(),
        error: None,
        left: 0,
    };
    let mut rx = Vec::new();
    for piece in fragments() {
        rx.extend_from_slice(piece);
        let items = &mut raw.items;
        if let Err(e) = pump(&mut raw_conn, START, &mut rx, &mut |item| items.push(item)) {
            raw.error = Some(e);
            break;
        }
    }
    raw.left = if raw.error.is_some() { 0 } else { rx.len() };
    if let Some(e) = &raw.error {
        // Sticky: the same error again, on any input.
        let again = raw_conn.handle_input(START, &mut []);
        assert!(
            again.as_ref().err() == Some(e),
            "error not sticky: {again:?}"
        );
    }

    assert!(
        fragmented == reference,
        "fragmented Buffered differs from whole:\n{fragmented:?}\n{reference:?}"
    );
    assert!(
        raw == reference,
        "fragmented Connection differs from whole Buffered:\n{raw:?}\n{reference:?}"
    );

    if let Some(limit) = max {
        let mut message = 0u64;
        for item in &reference.items {
            if let OwnedItem::Frame { body, more } = item {
                message += body.len() as u64;
                assert!(
                    message <= limit,
                    "a message of {message} bytes passed the limit {limit}"
                );
                if !more {
                    message = 0;
                }
            }
        }
    }
}

// ----- connection ----------------------------------------------------------------------

/// Socket types for [`connection`] and [`socket()`], chosen from the input.
const TYPES: &[SocketType] = &[
    SocketType::Pair,
    SocketType::Pub,
    SocketType::Sub,
    SocketType::XPub,
    SocketType::XSub,
    SocketType::Push,
    SocketType::Pull,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Dealer,
    SocketType::Router,
];

/// A socket type that can talk to `ty` (the first of libzmq's table).
fn compatible_peer(ty: SocketType) -> SocketType {
    match ty {
        SocketType::Pub | SocketType::XPub => SocketType::Sub,
        SocketType::Sub | SocketType::XSub => SocketType::Pub,
        SocketType::Push => SocketType::Pull,
        SocketType::Pull => SocketType::Push,
        SocketType::Req => SocketType::Rep,
        SocketType::Rep => SocketType::Req,
        SocketType::Dealer => SocketType::Router,
        SocketType::Router => SocketType::Dealer,
        _ => SocketType::Pair,
    }
}

/// The configuration of the connection under test in [`connection`], and of the peer
/// that [`seed_corpus`] records against it.
///
/// Byte 0: bits 0-2 the mechanism and role (0 NULL, 1 NULL asking for a verdict, 2 PLAIN
/// client, 3 PLAIN server, 4 CURVE client, 5 CURVE server, 6 NULL with an identity and an
/// application property, 7 PLAIN client with empty credentials); bits 3-7 the socket type.
/// Byte 1: bit 0 announce ZMTP 3.0; bit 1 heartbeats (100 ms, timeout 250 ms, TTL 2.5 s);
/// bit 2 a maximum message size of 64; bit 3 a 1 s handshake deadline; bit 4 a maximum
/// command size of 300; bit 5 no handshake deadline.
fn connection_configs(b0: u8, b1: u8) -> Option<(Config, Config)> {
    let ty = pick(TYPES, usize::from(b0 >> 3), SocketType::Pair);
    let mut ours = Config::new(ty);
    let mut theirs = Config::new(compatible_peer(ty));
    match b0 & 7 {
        1 => ours.authenticate_null = true,
        2 => {
            ours.security = Security::plain_client(PLAIN_USER, PLAIN_PASSWORD)?;
            theirs.security = Security::PlainServer;
        }
        3 => {
            ours.security = Security::PlainServer;
            theirs.security = Security::plain_client(PLAIN_USER, PLAIN_PASSWORD)?;
        }
        4 => {
            ours.security = curve_client()?;
            theirs.security = curve_server()?;
        }
        5 => {
            ours.security = curve_server()?;
            theirs.security = curve_client()?;
        }
        6 => {
            ours.set_identity(b"fuzz-identity").ok()?;
            ours.add_property(b"X-Fuzz", b"value").ok()?;
        }
        7 => {
            ours.security = Security::plain_client(b"", b"")?;
            theirs.security = Security::PlainServer;
        }
        _ => {}
    }
    if b1 & 1 != 0 {
        ours.version = Version::V3_0;
    }
    if b1 & 2 != 0 {
        ours.heartbeat_interval = Some(Duration::from_millis(100));
        ours.heartbeat_timeout = Some(Duration::from_millis(250));
        ours.heartbeat_ttl = Some(Duration::from_millis(2500));
    }
    if b1 & 4 != 0 {
        ours.max_message_size = Some(64);
    }
    if b1 & 8 != 0 {
        ours.handshake_timeout = Some(Duration::from_secs(1));
    }
    if b1 & 16 != 0 {
        ours.max_command_size = 300;
    }
    if b1 & 32 != 0 {
        ours.handshake_timeout = None;
    }
    Some((ours, theirs))
}

/// Operation codes of [`connection`] (besides `0..=FEED_MAX`: feed that many bytes).
mod op {
    /// Largest chunk length an operation byte feeds directly.
    pub const FEED_MAX: u8 = 0xDF;
    /// `0xE0..=0xE7`: advance the clock (see `TIME_STEPS`) and call `handle_timeout`.
    pub const TIME: u8 = 0xE0;
    /// `0xE8..=0xEB`: answer a pending verdict with 200, 300, 400 or 500.
    pub const VERDICT: u8 = 0xE8;
    /// `0xEC..=0xEF`: `poll_transmit` into a buffer of 0, 1, 10 or 60 bytes.
    pub const SMALL_TRANSMIT: u8 = 0xEC;
    /// `0xF0..=0xF7`: `send_frame` of 0, 1, 17 or 300 bytes (bit 0: MORE).
    pub const SEND: u8 = 0xF0;
    /// `send_subscribe`.
    pub const SUBSCRIBE: u8 = 0xF8;
    /// `send_cancel`.
    pub const CANCEL: u8 = 0xF9;
    /// `send_command(JOIN)`.
    pub const JOIN: u8 = 0xFA;
    /// `send_frame_header` for 5 bytes.
    pub const HEADER: u8 = 0xFB;
    /// `handle_auth(200)` when no verdict is asked for.
    pub const STRAY_VERDICT: u8 = 0xFC;
    /// `handle_frame_parts`: a 2-byte header, a length byte, the body.
    pub const FRAME_PARTS: u8 = 0xFD;
    /// Feed a chunk whose length is the next `u16`.
    pub const FEED_LONG: u8 = 0xFE;
    /// Feed everything that is left.
    pub const FEED_REST: u8 = 0xFF;
}

/// Clock steps of `op::TIME`; `None` entries jump to the connection's next deadline (the
/// second: one microsecond before it).
const TIME_STEPS: &[Option<Duration>] = &[
    Some(Duration::ZERO),
    Some(Duration::from_millis(1)),
    Some(Duration::from_millis(50)),
    Some(Duration::from_millis(100)),
    Some(Duration::from_secs(1)),
    Some(Duration::from_secs(31)),
    None,
    None,
];

/// A connection under test with its receive buffer, clock and sticky-error bookkeeping.
struct Driven {
    conn: Connection,
    rx: Vec<u8>,
    now: Instant,
    /// The first error seen; from then on the connection must stay failed with it.
    failed: Option<Error>,
    /// An `AuthRequested` event was polled and not answered yet.
    auth_asked: bool,
    items: usize,
    established_seen: bool,
}

impl Driven {
    /// A call returned `r`: errors must be the sticky one.
    fn record<T>(&mut self, r: &Result<T, Error>) {
        if let Err(e) = r {
            match &self.failed {
                Some(first) => assert!(e == first, "error changed from {first:?} to {e:?}"),
                None => {
                    assert!(
                        self.conn.error() == Some(e),
                        "returned {e:?} but the connection holds {:?}",
                        self.conn.error()
                    );
                    self.failed = Some(e.clone());
                }
            }
        }
    }

    fn record_send(&mut self, r: &Result<usize, EncodeError>) {
        if let Err(EncodeError::Closed(e)) = r {
            self.record::<()>(&Err(e.clone()));
        }
        if let Some(e) = &self.failed {
            assert!(
                r == &Err(EncodeError::Closed(e.clone())),
                "send after {e:?} gave {r:?}"
            );
        }
    }

    /// The driver's duty after every input: items, control output, events; then the
    /// sticky-error invariants.
    fn settle(&mut self) {
        let mut items = 0;
        let r = pump(&mut self.conn, self.now, &mut self.rx, &mut |_| items += 1);
        self.items += items;
        self.record(&r);
        let out = transmit(&mut self.conn);
        if self.failed.is_some() {
            assert!(out.is_empty(), "transmitted after a failure");
        }
        while let Some(event) = self.conn.poll_event() {
            match event {
                crate::Event::AuthRequested => self.auth_asked = true,
                crate::Event::HandshakeSucceeded { .. } => {
                    assert!(!self.established_seen, "handshake reported twice");
                    self.established_seen = true;
                }
                _ => {}
            }
        }
        // A failure no call returned: poll_transmit sent the farewell ERROR.
        if let Some(e) = self.conn.error().cloned() {
            if self.failed.is_none() {
                self.record::<()>(&Err(e));
            }
        }
        match self.failed.clone() {
            Some(e) => {
                assert!(
                    self.conn.error() == Some(&e),
                    "the error changed or went away"
                );
                assert!(!self.conn.is_established(), "established after a failure");
                assert!(
                    self.conn.poll_timeout().is_none(),
                    "a timer after a failure"
                );
                assert!(!self.conn.wants_write(), "wants to write after a failure");
                assert!(
                    self.conn.auth_request().is_none(),
                    "asks a verdict after a failure"
                );
                let again = self.conn.handle_input(self.now, &mut []);
                assert!(again.err() == Some(e.clone()), "handle_input not sticky");
                let again = self.conn.handle_timeout(self.now);
                assert!(again == Err(e.clone()), "handle_timeout not sticky");
                let mut out = [0u8; 64];
                assert!(
                    self.conn.poll_transmit(&mut out) == Ok(0),
                    "poll_transmit after failure"
                );
            }
            None => {
                if self.conn.is_established() {
                    assert!(self.established_seen, "established without the event");
                }
            }
        }
    }
}

/// A whole [`Connection`] facing a hostile peer.
///
/// Input: two setup bytes (see `connection_configs`: mechanism and role, socket type,
/// version, heartbeats, limits), then operations. An operation byte up to `0xDF` feeds
/// that many of the following bytes as the peer's; the others fire timeouts at clock steps
/// taken from the input, answer (or wrongly give) verdicts, call `poll_transmit` with small
/// buffers, send frames and commands, and feed the header and body of a frame apart.
/// After each operation the driver's duties are done (input until no progress, control
/// output, events).
///
/// Checked: no panic; the input contract (an item only with consumed bytes, progress
/// whenever `needed` bytes are there, payload ranges that locate payloads); every error is sticky (the same error
/// from every later call, nothing more transmitted, no timer, not established); sends fail
/// with exactly [`EncodeError::Closed`] of that error after a failure; the handshake is
/// reported once.
pub fn connection(data: &[u8]) {
    run_connection(data);
}

/// What a [`connection`] run reached (for the seed tests).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(not(test), allow(dead_code))]
struct ConnectionOutcome {
    established: bool,
    items: usize,
    failed: bool,
}

fn run_connection(data: &[u8]) -> ConnectionOutcome {
    let mut c = Cursor::new(data);
    let (b0, b1) = (c.byte(), c.byte());
    let Some((cfg, _)) = connection_configs(b0, b1) else {
        return ConnectionOutcome::default();
    };
    let mut d = Driven {
        conn: Connection::with_entropy(cfg, START, LOCAL_ENTROPY),
        rx: Vec::new(),
        now: START,
        failed: None,
        auth_asked: false,
        items: 0,
        established_seen: false,
    };
    d.settle();
    let mut ops = 0;
    while !c.is_empty() && ops < 512 {
        ops += 1;
        let code = c.byte();
        match code {
            0..=op::FEED_MAX => d.rx.extend_from_slice(c.take(usize::from(code))),
            op::FEED_LONG => {
                let n = usize::from(c.u16());
                d.rx.extend_from_slice(c.take(n));
            }
            op::FEED_REST => d.rx.extend_from_slice(c.rest()),
            0xE0..=0xE7 => {
                let step = pick(TIME_STEPS, usize::from(code - op::TIME), None);
                let target = match (step, code - op::TIME) {
                    (Some(step), _) => Some(d.now + step),
                    (None, 6) => d.conn.poll_timeout(),
                    (None, _) => d
                        .conn
                        .poll_timeout()
                        .map(|t| Instant::from_micros(t.as_micros().saturating_sub(1))),
                };
                d.now = d.now.max(target.unwrap_or(d.now));
                let r = d.conn.handle_timeout(d.now);
                d.record(&r);
            }
            0xE8..=0xEB => {
                if d.auth_asked && d.conn.auth_request().is_some() {
                    d.auth_asked = false;
                    let status = pick(&[200, 300, 400, 500], usize::from(code - op::VERDICT), 200);
                    let r = d.conn.handle_auth(d.now, status);
                    d.record(&r);
                }
            }
            0xEC..=0xEF => {
                let size = pick(&[0, 1, 10, 60], usize::from(code - op::SMALL_TRANSMIT), 0);
                let mut out = vec![0u8; size];
                match d.conn.poll_transmit(&mut out) {
                    Ok(n) => assert!(n <= size, "wrote past the buffer"),
                    Err(InsufficientSize { required }) => {
                        assert!(required > size, "InsufficientSize below the buffer size");
                        assert!(d.failed.is_none(), "something to transmit after a failure");
                    }
                }
            }
            0xF0..=0xF7 => {
                let len = pick(&[0, 1, 17, 300], usize::from((code - op::SEND) >> 1), 0);
                let body = vec![0x5A; len];
                let mut out = vec![0u8; 1024];
                let r = d.conn.send_frame(&body, code & 1 != 0, &mut out);
                d.record_send(&r);
                if d.failed.is_none() {
                    match &r {
                        Ok(n) => assert!(*n > len, "a frame shorter than its body"),
                        Err(e) => assert!(
                            matches!(e, EncodeError::NotReady) && !d.conn.is_established(),
                            "send_frame on a healthy connection: {e:?}"
                        ),
                    }
                }
            }
            op::SUBSCRIBE | op::CANCEL | op::JOIN => {
                let mut out = vec![0u8; 1024];
                let r = match code {
                    op::SUBSCRIBE => d.conn.send_subscribe(b"topic", &mut out),
                    op::CANCEL => d.conn.send_cancel(b"topic", &mut out),
                    _ => d.conn.send_command(&Command::Join(b"group"), &mut out),
                };
                d.record_send(&r);
            }
            op::HEADER => {
                let mut out = vec![0u8; 64];
                let r = d.conn.send_frame_header(5, false, &mut out);
                d.record_send(&r);
                if d.failed.is_none() && d.conn.is_established() && d.conn.encrypts() {
                    assert!(
                        r == Err(EncodeError::Sealed),
                        "a bare header on encrypted traffic"
                    );
                }
            }
            op::STRAY_VERDICT => {
                if d.conn.auth_request().is_none() {
                    let r = d.conn.handle_auth(d.now, 200);
                    assert!(r.is_err(), "a verdict nobody asked for was taken");
                    d.record(&r);
                }
            }
            op::FRAME_PARTS => {
                let header = c.take(2);
                let len = usize::from(c.byte());
                let body = c.take(len);
                let r = d.conn.handle_frame_parts(d.now, header, body);
                if let Ok(Some(_)) = &r {
                    d.items += 1;
                }
                d.record(&r);
            }
        }
        d.settle();
    }
    ConnectionOutcome {
        established: d.established_seen,
        items: d.items,
        failed: d.failed.is_some(),
    }
}

// ----- CURVE traffic -------------------------------------------------------------------

/// The frames [`curve_traffic`] sends: body and MORE (`None`: a SUBSCRIBE command).
const CURVE_FRAMES: &[(Option<&[u8]>, bool)] = &[
    (Some(b"hello"), false),
    (Some(b"multi"), true),
    (Some(b"part"), true),
    (Some(b""), false),
    (None, false),
    (Some(&[0xAB; 300]), false),
    (Some(b"last"), false),
];

/// A mutation of [`curve_traffic`]'s captured frames.
#[derive(Debug, Clone, Copy)]
enum Mutation {
    /// Flip one bit of a frame.
    Flip { frame: usize, at: usize, bit: u8 },
    /// Cut a frame short.
    Truncate { frame: usize, len: usize },
    /// Send a frame twice.
    Duplicate { frame: usize },
    /// Exchange two frames.
    Swap { a: usize, b: usize },
    /// Leave a frame out.
    Remove { frame: usize },
    /// Insert the next `len` input bytes as a frame.
    Insert { frame: usize, len: usize },
}

fn mutation(c: &mut Cursor<'_>) -> Mutation {
    let kind = c.byte();
    let frame = usize::from(c.byte());
    match kind % 6 {
        0 => Mutation::Flip {
            frame,
            at: usize::from(c.u16()),
            bit: c.byte() % 8,
        },
        1 => Mutation::Truncate {
            frame,
            len: usize::from(c.u16()),
        },
        2 => Mutation::Duplicate { frame },
        3 => Mutation::Swap {
            a: frame,
            b: usize::from(c.byte()),
        },
        4 => Mutation::Remove { frame },
        _ => Mutation::Insert {
            frame,
            len: usize::from(c.byte() % 64),
        },
    }
}

/// CURVE traffic tampered with on the wire.
///
/// A CURVE client and server (test keys, fixed entropy) complete their handshake in
/// memory; one of them (byte 0, bit 0: the server) sends a few MESSAGEs (single and
/// multipart frames, an empty one, a long one, a SUBSCRIBE), captured frame by frame. This
/// is recorded once per direction; each run replays the handshake into a fresh receiver,
/// which does its own half of the cryptography. The
/// rest of the input mutates the captured frames (bit flips, truncation, duplication,
/// swaps, removal, inserted bytes; see `Mutation`), and the result is fed to the
/// receiver in fragments of a size set by bits 1-7 of byte 0 (0: all at once).
///
/// Checked: the receiver delivers the original items in their original order, possibly
/// with some left out (a whole MESSAGE removed on the wire goes unnoticed, as nonce gaps
/// are allowed, as in libzmq), and nothing else: no altered, replayed or reordered content.
/// Untampered traffic is delivered whole. After an error nothing more is delivered.
pub fn curve_traffic(data: &[u8]) {
    run_curve_traffic(data);
}

/// The sending side of [`curve_traffic`], recorded once per direction: the handshake as
/// the receiver sees it, the MESSAGE frames sent after it and the items they carry.
struct CurveSession {
    receiver: Config,
    receiver_entropy: [u8; 32],
    rounds: Rounds,
    frames: Vec<Vec<u8>>,
    originals: Vec<OwnedItem>,
}

static CURVE_SESSIONS: [std::sync::OnceLock<Option<CurveSession>>; 2] =
    [std::sync::OnceLock::new(), std::sync::OnceLock::new()];

fn record_curve_session(server_sends: bool) -> Option<CurveSession> {
    let mut client = Config::new(SocketType::Dealer);
    client.security = curve_client()?;
    let mut server = Config::new(SocketType::Dealer);
    server.security = curve_server()?;
    let ((receiver, receiver_entropy), (sender, sender_entropy)) = if server_sends {
        ((client, LOCAL_ENTROPY), (server, PEER_ENTROPY))
    } else {
        ((server, PEER_ENTROPY), (client, LOCAL_ENTROPY))
    };
    let mut rx = Connection::with_entropy(receiver.clone(), START, receiver_entropy);
    let mut tx = Connection::with_entropy(sender, START, sender_entropy);
    let rounds = record_handshake(&mut rx, &mut tx)?;
    let mut frames = Vec::new();
    let mut originals = Vec::new();
    for &(body, more) in CURVE_FRAMES {
        let mut out = vec![0u8; 1024];
        let n = match body {
            Some(body) => {
                originals.push(OwnedItem::Frame {
                    body: Bytes::copy_from_slice(body),
                    more,
                });
                tx.send_frame(body, more, &mut out).ok()?
            }
            None => {
                originals.push(OwnedItem::Subscribe(Bytes::from_static(b"topic")));
                tx.send_subscribe(b"topic", &mut out).ok()?
            }
        };
        out.truncate(n);
        frames.push(out);
    }
    Some(CurveSession {
        receiver,
        receiver_entropy,
        rounds,
        frames,
        originals,
    })
}

fn run_curve_traffic(data: &[u8]) -> Option<usize> {
    let mut c = Cursor::new(data);
    let b0 = c.byte();
    let server_sends = b0 & 1 != 0;
    let session = CURVE_SESSIONS
        .get(usize::from(server_sends))?
        .get_or_init(|| record_curve_session(server_sends));
    let Some(session) = session.as_ref() else {
        panic!("CURVE handshake with the test keys failed");
    };
    let mut rx =
        Connection::with_entropy(session.receiver.clone(), START, session.receiver_entropy);
    assert!(
        replay_handshake(&mut rx, &session.rounds).is_some(),
        "a recorded CURVE handshake did not replay"
    );
    let mut frames = session.frames.clone();
    let originals = &session.originals;
    let pristine = &session.frames;

    let mut mutations = 0;
    while !c.is_empty() && mutations < 16 {
        mutations += 1;
        let n = frames.len().max(1);
        match mutation(&mut c) {
            Mutation::Flip { frame, at, bit } => {
                if let Some(f) = frames.get_mut(frame % n) {
                    let len = f.len().max(1);
                    if let Some(b) = f.get_mut(at % len) {
                        *b ^= 1 << bit;
                    }
                }
            }
            Mutation::Truncate { frame, len } => {
                if let Some(f) = frames.get_mut(frame % n) {
                    let keep = len % f.len().max(1);
                    f.truncate(keep);
                }
            }
            Mutation::Duplicate { frame } => {
                if let Some(f) = frames.get(frame % n).cloned() {
                    frames.insert(frame % n, f);
                }
            }
            Mutation::Swap { a, b } => {
                if a % n != b % n && a % n < frames.len() && b % n < frames.len() {
                    frames.swap(a % n, b % n);
                }
            }
            Mutation::Remove { frame } => {
                if frame % n < frames.len() {
                    frames.remove(frame % n);
                }
            }
            Mutation::Insert { frame, len } => {
                let bytes = c.take(len).to_vec();
                let at = frame % (frames.len() + 1);
                frames.insert(at, bytes);
            }
        }
    }
    let stream: Vec<u8> = frames.concat();
    let fragment = usize::from(b0 >> 1);

    let mut delivered: Vec<OwnedItem> = Vec::new();
    let mut buf = Vec::new();
    let mut error = None;
    let pieces: Vec<&[u8]> = if fragment == 0 {
        vec![&stream[..]]
    } else {
        stream.chunks(fragment).collect()
    };
    for piece in pieces {
        buf.extend_from_slice(piece);
        if let Err(e) = pump(&mut rx, START, &mut buf, &mut |item| delivered.push(item)) {
            error = Some(e);
            break;
        }
    }
    if let Some(e) = &error {
        let again = rx.handle_input(START, &mut buf);
        assert!(
            again.err().as_ref() == Some(e),
            "CURVE receiver error not sticky"
        );
    }

    // Delivered items: a subsequence of the originals, each exactly as sent.
    let mut next = 0;
    for item in &delivered {
        let found = originals
            .get(next..)
            .and_then(|rest| rest.iter().position(|o| o == item));
        match found {
            Some(i) => next += i + 1,
            None => panic!(
                "tampered CURVE traffic delivered {item:?}, not an original in order \
                 (after {next} of {originals:?})"
            ),
        }
    }
    if &frames == pristine {
        assert!(
            error.is_none(),
            "untampered CURVE traffic failed: {error:?}"
        );
        assert!(
            &delivered == originals,
            "untampered CURVE traffic not delivered whole"
        );
    }
    Some(delivered.len())
}

// ----- socket --------------------------------------------------------------------------

/// Starts every frame of a message a scripted peer sends: `MAGIC, uid (u32), seq (u32),
/// index (u8), count (u8)`, then the payload. Raw byte streams are kept free of it, so a
/// received frame that holds it came from a scripted message.
const MAGIC: [u8; 8] = [0xF5, 0x7A, 0x6D, 0x74, 0x70, 0x46, 0x5A, 0xE3];
/// Starts every frame of a message the application sends: `APP_MAGIC, seq (u32), index
/// (u8), count (u8)`, then the payload.
const APP_MAGIC: [u8; 8] = [0xA9, 0x61, 0x70, 0x70, 0x4D, 0x73, 0x67, 0xC1];
const TAG_LEN: usize = 8 + 4 + 4 + 2;
const APP_TAG_LEN: usize = 8 + 4 + 2;
/// Topics for subscriptions (SUB and XSUB sockets, and scripted subscribers); all shorter
/// than [`MAGIC`], so that no notice an XPUB receives holds it.
const TOPICS: &[&[u8]] = &[b"", &[0xF5], &[0xF5, 0x7A, 0x6D, 0x74], b"x", &[0xA9]];
const BIND_ADDR: &str = "tcp://127.0.0.1:5555";
const CONNECT_ADDR: &str = "tcp://127.0.0.1:6000";
/// Payload lengths of scripted and application frames.
const PAYLOADS: &[usize] = &[0, 1, 7, 40, 300];

/// The peer types a scripted peer of a `ty` socket takes.
fn scripted_peer_types(ty: SocketType) -> &'static [SocketType] {
    use SocketType::*;
    match ty {
        Pub | XPub => &[Sub, XSub],
        Sub | XSub => &[Pub, XPub],
        Push => &[Pull],
        Pull => &[Push],
        Req => &[Rep, Router],
        Rep => &[Req, Dealer],
        Dealer => &[Rep, Dealer, Router],
        Router => &[Req, Dealer, Router],
        _ => &[Pair],
    }
}

/// One stream into the socket, as a scripted peer or a source of raw bytes.
struct Script {
    peer: PeerId,
    uid: u32,
    alive: bool,
    /// Raw bytes were fed: nothing scripted may follow (it could be swallowed by a frame
    /// the raw bytes began).
    tainted: bool,
    version: Version,
    peer_type: SocketType,
    /// Everything scripted so far, and how much of it was fed.
    bytes: Vec<u8>,
    fed: usize,
    /// Ends of the units (greeting with READY, each message) in `bytes`: raw bytes are
    /// only ever fed at a unit boundary.
    unit_ends: VecDeque<usize>,
    /// The last bytes fed, to keep [`MAGIC`] out of raw bytes across chunks.
    tail: Vec<u8>,
    next_seq: u32,
    /// Reads what the socket sends on this stream (a NULL connection of `peer_type`).
    observer: Connection,
    observer_rx: Vec<u8>,
    observer_partial: Vec<Bytes>,
    /// Application messages this stream delivered (each at most once).
    app_seen: BTreeSet<u32>,
}

impl Script {
    /// Bytes up to the next unit boundary (0 at a boundary, and before anything was fed).
    fn to_boundary(&self) -> usize {
        if self.fed == 0 {
            return 0;
        }
        self.unit_ends
            .iter()
            .find(|&&end| end > self.fed)
            .map_or(0, |end| end - self.fed)
    }

    fn push_unit(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.unit_ends.push_back(self.bytes.len());
    }

    /// Remember the last bytes fed, for the MAGIC filter.
    fn remember(&mut self, fed: &[u8]) {
        self.tail.extend_from_slice(fed);
        let keep = MAGIC.len() - 1;
        if self.tail.len() > keep {
            self.tail.drain(..self.tail.len() - keep);
        }
        while self.unit_ends.front().is_some_and(|&end| end <= self.fed) {
            self.unit_ends.pop_front();
        }
    }
}

/// The socket under test and everything the harness knows.
struct World {
    sock: socket::Socket,
    ty: SocketType,
    now: Instant,
    listening: Option<EndpointId>,
    connect_pending: Option<EndpointId>,
    streams: Vec<Script>,
    next_uid: u32,
    /// Scripted messages by (uid, seq): the frames `recv` must give for them.
    sent: BTreeMap<(u32, u32), Vec<Bytes>>,
    received: BTreeSet<(u32, u32)>,
    /// Application messages by seq: their tagged frames.
    app_sent: BTreeMap<u32, Vec<Bytes>>,
    next_app_seq: u32,
    auth_queue: VecDeque<PeerId>,
    /// Bounds of `peer_stats` (0: none).
    max_in: usize,
    max_out: usize,
    stats: SocketOutcome,
}

/// What a [`socket()`] run reached (for the seed tests).
#[derive(Debug, Clone, Copy, Default)]
struct SocketOutcome {
    received: usize,
    sent: usize,
    app_delivered: usize,
}

impl World {
    fn alive(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&i| self.streams.get(i).is_some_and(|s| s.alive))
            .collect()
    }

    /// An alive stream chosen by `sel`.
    fn choose(&self, sel: u8) -> Option<usize> {
        let alive = self.alive();
        (!alive.is_empty()).then(|| pick(&alive, usize::from(sel), 0))
    }

    fn stream_died(&mut self, peer: PeerId) {
        for s in self.streams.iter_mut().filter(|s| s.peer == peer) {
            s.alive = false;
        }
        self.auth_queue.retain(|&p| p != peer);
    }

    /// Act on every event of the socket.
    fn events(&mut self) {
        while let Some(event) = self.sock.poll_event() {
            match event {
                socket::Event::Listen { endpoint, .. } => {
                    self.sock.handle_listening(endpoint, BIND_ADDR);
                    self.listening = Some(endpoint);
                }
                socket::Event::Connect { endpoint, .. } => self.connect_pending = Some(endpoint),
                socket::Event::StopListening { .. } => self.listening = None,
                socket::Event::ClosePeer { peer } => self.stream_died(peer),
                socket::Event::Authenticate { peer, .. } => self.auth_queue.push_back(peer),
                _ => {}
            }
        }
    }

    /// The queue bounds hold for every peer.
    fn check_bounds(&self) {
        for peer in self.sock.peers() {
            let Some(st) = self.sock.peer_stats(peer) else {
                continue;
            };
            if self.max_in > 0 {
                assert!(
                    st.queued_in <= self.max_in,
                    "{:?}: {} messages queued in, RCVHWM {}",
                    self.ty,
                    st.queued_in,
                    self.max_in
                );
            }
            if self.max_out > 0 {
                assert!(
                    st.queued_out <= self.max_out,
                    "{:?}: {} messages queued out, SNDHWM {}",
                    self.ty,
                    st.queued_out,
                    self.max_out
                );
            }
        }
    }

    /// A new stream: accepted on the bound endpoint, or the connect endpoint's.
    fn open(&mut self, peer: PeerId, spec: u8) {
        let types = scripted_peer_types(self.ty);
        let peer_type = if spec & 0x08 != 0 {
            // Incompatible: refused when its READY arrives.
            SocketType::Gather
        } else {
            pick(types, usize::from(spec & 3), SocketType::Pair)
        };
        let version = if spec & 0x04 != 0 {
            Version::V3_0
        } else {
            Version::V3_1
        };
        let uid = self.next_uid;
        self.next_uid += 1;
        let mut identity = Vec::new();
        if spec & 0x10 != 0 && peer_type.sends_identity() {
            // Short (no MAGIC), and colliding across streams now and then.
            identity = vec![b'p', spec >> 5];
        }
        let mut cfg = Config::new(peer_type);
        cfg.version = version;
        cfg.handshake_timeout = None;
        // At most 255 bytes: cannot fail.
        let _ = cfg.set_identity(&identity);
        let mut script = Script {
            peer,
            uid,
            alive: true,
            tainted: false,
            version,
            peer_type,
            bytes: Vec::new(),
            fed: 0,
            unit_ends: VecDeque::new(),
            tail: Vec::new(),
            next_seq: 0,
            observer: Connection::new(cfg, self.now),
            observer_rx: Vec::new(),
            observer_partial: Vec::new(),
            app_seen: BTreeSet::new(),
        };
        // Greeting (libzmq's padding now and then) and READY.
        let mut unit = vec![0u8; GREETING_LEN];
        let g = Greeting {
            version,
            mechanism: Mechanism::NULL,
            as_server: false,
        };
        if g.emit(&mut unit).is_err() {
            return;
        }
        if spec & 0x20 != 0 {
            if let Some(b) = unit.get_mut(8) {
                *b = 1;
            }
        }
        let mut meta = vec![0u8; 512];
        let mut len = emit_property(b"Socket-Type", peer_type.name().as_bytes(), &mut meta)
            .unwrap_or_default();
        if peer_type.sends_identity() {
            len += emit_property(
                b"Identity",
                &identity,
                meta.get_mut(len..).unwrap_or_default(),
            )
            .unwrap_or_default();
        }
        meta.truncate(len);
        if let Ok(m) = Metadata::parse(&meta) {
            let cmd = Command::Ready(m);
            let mut frame = vec![0u8; cmd.frame_len()];
            if cmd.emit_frame(&mut frame).is_ok() {
                unit.extend_from_slice(&frame);
            }
        }
        script.push_unit(&unit);
        self.streams.push(script);
    }

    /// A scripted message from stream `i`: `spec` bits 0-1 the frame count (1-3), bits 2-4
    /// the payload size, bit 5 a hop before the delimiter (REP sockets).
    fn script_message(&mut self, i: usize, spec: u8) {
        let ty = self.ty;
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.tainted {
            return;
        }
        let count = (spec & 3) % 3 + 1;
        let payload = pick(PAYLOADS, usize::from(spec >> 2 & 7), 0);
        let seq = s.next_seq;
        s.next_seq += 1;
        let mut tagged = Vec::new();
        for index in 0..count {
            let mut f = Vec::with_capacity(TAG_LEN + payload);
            f.extend_from_slice(&MAGIC);
            f.extend_from_slice(&s.uid.to_be_bytes());
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&[index, count]);
            f.resize(TAG_LEN + payload, seq as u8 ^ index);
            tagged.push(Bytes::from(f));
        }
        // The envelope the socket type strips.
        let mut frames: Vec<Bytes> = Vec::new();
        if ty == SocketType::Rep && spec & 0x20 != 0 {
            frames.push(Bytes::from_static(b"hop"));
        }
        if matches!(ty, SocketType::Req | SocketType::Rep) {
            frames.push(Bytes::new());
        }
        frames.extend(tagged.iter().cloned());
        let mut unit = Vec::new();
        let n = frames.len();
        for (k, f) in frames.iter().enumerate() {
            let header = FrameHeader::data(f.len(), k + 1 < n);
            let mut h = [0u8; 9];
            let Ok(hl) = header.emit(&mut h) else {
                return;
            };
            unit.extend_from_slice(h.get(..hl).unwrap_or_default());
            unit.extend_from_slice(f);
        }
        s.push_unit(&unit);
        self.sent.insert((s.uid, seq), tagged);
        self.stats.sent += 1;
    }

    /// A subscription from a scripted subscriber (to PUB and XPUB sockets).
    fn script_subscription(&mut self, i: usize, spec: u8) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.tainted {
            return;
        }
        let topic = pick(TOPICS, usize::from(spec >> 1), b"");
        let subscribe = spec & 1 == 0;
        let mut unit = vec![0u8; 64];
        let n = if s.version.is_v31() {
            let cmd = if subscribe {
                Command::Subscribe(topic)
            } else {
                Command::Cancel(topic)
            };
            cmd.emit_frame(&mut unit).unwrap_or_default()
        } else {
            let mut body = vec![u8::from(subscribe)];
            body.extend_from_slice(topic);
            let Ok(hl) = FrameHeader::data(body.len(), false).emit(&mut unit) else {
                return;
            };
            unit.truncate(hl);
            unit.extend_from_slice(&body);
            unit.len()
        };
        unit.truncate(n);
        s.push_unit(&unit);
    }

    /// Feed up to `n` scripted bytes of stream `i` (all with `n == 0`), if the socket reads.
    fn flush(&mut self, i: usize, n: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !s.alive || !self.sock.wants_read(s.peer) {
            return;
        }
        let left = s.bytes.len().saturating_sub(s.fed);
        let n = if n == 0 { left } else { n.min(left) };
        let chunk = s
            .bytes
            .get(s.fed..s.fed + n)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        s.fed += chunk.len();
        s.remember(&chunk);
        let peer = s.peer;
        self.sock.handle_received(peer, self.now, &chunk);
    }

    /// Feed raw bytes to stream `i` at a unit boundary, with [`MAGIC`] filtered out.
    fn raw(&mut self, i: usize, bytes: &[u8]) {
        let Some(s) = self.streams.get(i) else {
            return;
        };
        if !s.alive || !self.sock.wants_read(s.peer) {
            return;
        }
        let rest = s.to_boundary();
        if rest > 0 {
            self.flush(i, rest);
        }
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !s.alive || s.to_boundary() > 0 {
            return;
        }
        // Nothing scripted follows: drop what was not fed.
        s.tainted = true;
        s.bytes.truncate(s.fed);
        s.unit_ends.clear();
        let mut chunk = bytes.to_vec();
        // Break every MAGIC in (last bytes fed ++ chunk) by zeroing its last byte, which
        // lies in the chunk (the tail is shorter than MAGIC). Zero is not in MAGIC, so no
        // new one appears.
        let tail_len = s.tail.len();
        for _ in 0..=chunk.len() {
            let mut joined = s.tail.clone();
            joined.extend_from_slice(&chunk);
            let Some(at) = joined.windows(MAGIC.len()).position(|w| w == MAGIC) else {
                break;
            };
            if let Some(b) = chunk.get_mut(at + MAGIC.len() - 1 - tail_len) {
                *b = 0;
            }
        }
        s.bytes.extend_from_slice(&chunk);
        s.fed = s.bytes.len();
        s.remember(&chunk);
        let peer = s.peer;
        self.sock.handle_received(peer, self.now, &chunk);
    }

    /// Write up to `n` bytes the socket has for stream `i` (all with `n == 0`), into its
    /// observer.
    fn write(&mut self, i: usize, n: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if !s.alive {
            return;
        }
        let out = self.sock.poll_transmit(s.peer).to_vec();
        let n = if n == 0 { out.len() } else { n.min(out.len()) };
        let written = out.get(..n).unwrap_or_default();
        s.observer_rx.extend_from_slice(written);
        let peer = s.peer;
        self.observe(i);
        self.sock.advance(peer, n);
    }

    /// The observer of stream `i` reads what the socket wrote: valid ZMTP, and every
    /// application message in it whole and once.
    fn observe(&mut self, i: usize) {
        let Some(s) = self.streams.get_mut(i) else {
            return;
        };
        if s.observer.error().is_some() {
            return;
        }
        let mut items = Vec::new();
        let r = pump(&mut s.observer, self.now, &mut s.observer_rx, &mut |item| {
            items.push(item)
        });
        if let Err(e) = r {
            assert!(
                matches!(
                    e,
                    Error::IncompatibleSocketType { .. } | Error::PeerError(_)
                ),
                "{:?} socket sent invalid ZMTP to a {:?} peer: {e:?}",
                self.ty,
                s.peer_type
            );
        }
        for item in items {
            let OwnedItem::Frame { body, more } = item else {
                continue;
            };
            s.observer_partial.push(body);
            if more {
                continue;
            }
            let msg = core::mem::take(&mut s.observer_partial);
            let Some(first) = msg.iter().position(|f| f.starts_with(&APP_MAGIC)) else {
                for f in &msg {
                    assert!(
                        !contains(f, &APP_MAGIC),
                        "application frame spliced: {msg:?}"
                    );
                }
                continue;
            };
            let envelope = msg.get(..first).unwrap_or_default();
            for f in envelope {
                assert!(
                    !contains(f, &APP_MAGIC),
                    "application frame in the envelope"
                );
            }
            let tagged = msg.get(first..).unwrap_or_default();
            let seq = tagged
                .first()
                .and_then(|f| f.get(8..12))
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes);
            let expected = seq.and_then(|seq| self.app_sent.get(&seq));
            assert!(
                expected.is_some_and(|e| e.as_slice() == tagged),
                "{:?} socket sent an altered or partial message: {msg:?}",
                self.ty
            );
            if let Some(seq) = seq {
                assert!(
                    s.app_seen.insert(seq),
                    "application message {seq} sent twice"
                );
            }
            self.stats.app_delivered += 1;
        }
    }

    /// A message `recv` gave: whole, genuine, and given once.
    fn check_received(&mut self, msg: &Message) {
        let frames = msg.frames();
        let body = if self.ty == SocketType::Router {
            assert!(
                frames.len() >= 2,
                "ROUTER gave a message without routing id"
            );
            frames.get(1..).unwrap_or_default()
        } else {
            frames
        };
        let Some(first) = body.first() else {
            return;
        };
        if !first.starts_with(&MAGIC) {
            for f in frames {
                assert!(
                    !contains(f, &MAGIC),
                    "scripted frame in a foreign message: {frames:?}"
                );
            }
            return;
        }
        let id = (|| {
            let uid = <[u8; 4]>::try_from(first.get(8..12)?).ok()?;
            let seq = <[u8; 4]>::try_from(first.get(12..16)?).ok()?;
            Some((u32::from_be_bytes(uid), u32::from_be_bytes(seq)))
        })();
        let expected = id.and_then(|id| self.sent.get(&id));
        assert!(
            expected.is_some_and(|e| e.as_slice() == body),
            "{:?} socket received an altered or partial message: {frames:?}",
            self.ty
        );
        if let Some(id) = id {
            assert!(self.received.insert(id), "message {id:?} received twice");
        }
        self.stats.received += 1;
    }

    /// An application message: `spec` bits 0-1 the frame count, bits 2-4 the payload size,
    /// bit 5 a single frame sent with `send_slice`; `route` the routing id for ROUTER (an
    /// existing peer's, or unknown).
    fn send(&mut self, spec: u8, route: u8) {
        let count = (spec & 3) % 3 + 1;
        let payload = pick(PAYLOADS, usize::from(spec >> 2 & 7), 0);
        let seq = self.next_app_seq;
        self.next_app_seq += 1;
        let mut tagged = Vec::new();
        for index in 0..count {
            let mut f = Vec::with_capacity(APP_TAG_LEN + payload);
            f.extend_from_slice(&APP_MAGIC);
            f.extend_from_slice(&seq.to_be_bytes());
            f.extend_from_slice(&[index, count]);
            f.resize(APP_TAG_LEN + payload, index);
            tagged.push(Bytes::from(f));
        }
        self.app_sent.insert(seq, tagged.clone());
        let mut frames = Vec::new();
        if self.ty == SocketType::Router {
            let ids: Vec<Bytes> = self
                .sock
                .peers()
                .filter_map(|p| self.sock.peer_stats(p))
                .map(|st| st.routing_id)
                .collect();
            let id = match ids.len() {
                0 => Bytes::from_static(b"\x00nobody"),
                n if usize::from(route) % (n + 1) == n => Bytes::from_static(b"\x00nobody"),
                n => ids.get(usize::from(route) % n).cloned().unwrap_or_default(),
            };
            frames.push(id);
        }
        frames.extend(tagged);
        let could = self.sock.can_send();
        let r = match frames.as_slice() {
            [only] if spec & 0x20 != 0 => self.sock.send_slice(only),
            _ => self.sock.send(Message::from(frames)),
        };
        assert!(
            could || r.is_err(),
            "{:?}: can_send was false but send took it",
            self.ty
        );
    }

    fn recv(&mut self) -> bool {
        let could = self.sock.can_recv();
        let Some(msg) = self.sock.recv() else {
            return false;
        };
        assert!(
            could,
            "{:?}: can_recv was false but recv gave a message",
            self.ty
        );
        self.check_received(&msg);
        true
    }
}

/// Socket options from the input (see [`socket()`]).
fn socket_options(b1: u8, b2: u8, b3: u8) -> Options {
    let heartbeat = |d: Duration| (b1 & 0x80 != 0).then_some(d);
    Options {
        rcvhwm: usize::from(b1 & 3) + 1,
        sndhwm: usize::from(b1 >> 2 & 3) + 1,
        zap_domain: if b1 & 0x10 != 0 {
            Bytes::from_static(b"fuzz")
        } else {
            Bytes::new()
        },
        immediate: b1 & 0x40 != 0,
        heartbeat_ivl: heartbeat(Duration::from_millis(100)),
        heartbeat_timeout: heartbeat(Duration::from_millis(300)),
        heartbeat_ttl: heartbeat(Duration::from_secs(1)),
        probe_router: b2 & 1 != 0,
        router_mandatory: b2 & 2 != 0,
        router_handover: b2 & 4 != 0,
        req_relaxed: b2 & 8 != 0,
        req_correlate: b2 & 0x10 != 0,
        xpub_verbose: b2 & 0x20 != 0,
        xpub_verboser: b2 & 0x20 != 0,
        conflate: b2 & 0x40 != 0,
        maxmsgsize: (b2 & 0x80 != 0).then_some(200),
        xpub_nodrop: b3 & 1 != 0,
        xpub_welcome_msg: (b3 & 2 != 0).then(|| Bytes::from_static(b"welcome")),
        linger: pick(
            &[
                None,
                Some(Duration::ZERO),
                Some(Duration::from_millis(100)),
                Some(Duration::from_secs(1)),
            ],
            usize::from(b3 >> 2 & 3),
            None,
        ),
        handshake_ivl: if b3 & 0x10 != 0 {
            Some(Duration::from_secs(1))
        } else {
            Some(crate::DEFAULT_HANDSHAKE_TIMEOUT)
        },
        reconnect_ivl_max: if b3 & 0x20 != 0 {
            Duration::from_millis(400)
        } else {
            Duration::ZERO
        },
        reconnect_ivl: if b3 & 0x80 != 0 {
            None
        } else {
            Some(Duration::from_millis(100))
        },
        ..Options::default()
    }
}

/// Clock steps of the socket's timeout action (`None`: to its next deadline).
const SOCKET_STEPS: &[Option<Duration>] = &[
    None,
    Some(Duration::ZERO),
    Some(Duration::from_millis(1)),
    Some(Duration::from_millis(10)),
    Some(Duration::from_millis(100)),
    Some(Duration::from_secs(1)),
    Some(Duration::from_secs(31)),
    None,
];

/// Actions of [`socket()`], by the low 4 bits of an action byte.
mod act {
    pub const ACCEPT: u8 = 0;
    pub const CONNECTED: u8 = 1;
    pub const MESSAGE: u8 = 2;
    pub const FLUSH: u8 = 3;
    pub const RAW: u8 = 4;
    pub const CLOSED: u8 = 5;
    pub const SEND: u8 = 6;
    pub const RECV: u8 = 7;
    pub const SUBSCRIBE: u8 = 8;
    pub const TIMEOUT: u8 = 9;
    pub const WRITE: u8 = 10;
    pub const VERDICT: u8 = 11;
    pub const PEER_SUBSCRIBE: u8 = 12;
    pub const CONNECT_FAILED: u8 = 13;
    pub const SETTLE: u8 = 14;
    pub const CLOSE: u8 = 15;
}

/// A whole [`Socket`](crate::socket::Socket) driven by a sequence of actions.
///
/// Input: byte 0 the socket type (PAIR, PUB, SUB, XPUB, XSUB, PUSH, PULL, REQ, REP,
/// DEALER, ROUTER); bytes 1-3 the options (`socket_options`: RCVHWM and SNDHWM of 1-4, a
/// ZAP domain, IMMEDIATE, heartbeats, ROUTER/REQ/XPUB options, CONFLATE, MAXMSGSIZE,
/// linger, handshake deadline, reconnect policy) and, with bit 5 of byte 1, a connect
/// endpoint besides the bound one. Then actions, one byte each (low 4 bits, see `act`)
/// with a parameter byte or two: a peer connects on the bound endpoint (or the connect
/// endpoint's connection opens or fails), a scripted peer queues a message or a
/// subscription, scripted bytes are fed, raw bytes are fed, a peer disconnects, the
/// application sends, receives or subscribes, the clock advances, written bytes are
/// reported (into a per-stream observer), a verdict is given, the socket closes.
///
/// Scripted peers send a greeting, READY and messages whose frames carry a unique tag;
/// raw bytes never contain the tag. Checked after every step: no panic; every peer's
/// `queued_in` ≤ RCVHWM and `queued_out` ≤ SNDHWM (CONFLATE: 1 and 2); every message
/// `recv` gives that holds a tag is exactly the frames of the scripted message it names
/// (after the envelope the socket type strips), received once; `recv` and `send` agree
/// with `can_recv` and `can_send`; what the socket writes is valid ZMTP and each
/// application message arrives whole and once per stream.
pub fn socket(data: &[u8]) {
    run_socket(data);
}

fn run_socket(data: &[u8]) -> SocketOutcome {
    let mut c = Cursor::new(data);
    let (b0, b1, b2, b3) = (c.byte(), c.byte(), c.byte(), c.byte());
    let ty = pick(TYPES, usize::from(b0), SocketType::Pair);
    let opts = socket_options(b1, b2, b3);
    let conflate = opts.conflate
        && matches!(
            ty,
            SocketType::Dealer
                | SocketType::Pull
                | SocketType::Push
                | SocketType::Pub
                | SocketType::Sub
        );
    let (max_in, max_out) = if conflate {
        (1, 2)
    } else {
        (opts.rcvhwm, opts.sndhwm)
    };
    let Ok(mut sock) = socket::Socket::new(ty, opts, 7) else {
        return SocketOutcome::default();
    };
    sock.set_entropy(LOCAL_ENTROPY);
    if b3 & 0x40 != 0 {
        sock.set_monitor(0xFFFF);
    }
    let mut w = World {
        sock,
        ty,
        now: START,
        listening: None,
        connect_pending: None,
        streams: Vec::new(),
        next_uid: 1,
        sent: BTreeMap::new(),
        received: BTreeSet::new(),
        app_sent: BTreeMap::new(),
        next_app_seq: 0,
        auth_queue: VecDeque::new(),
        max_in,
        max_out,
        stats: SocketOutcome::default(),
    };
    if w.sock.bind(BIND_ADDR).is_err() {
        return w.stats;
    }
    if b1 & 0x20 != 0 && w.sock.connect(CONNECT_ADDR).is_err() {
        return w.stats;
    }
    w.events();

    let mut steps = 0;
    while !c.is_empty() && steps < 256 {
        steps += 1;
        let action = c.byte();
        let p = c.byte();
        match action & 15 {
            act::ACCEPT => {
                if let Some(ep) = w.listening {
                    if let Some(peer) = w.sock.handle_accepted(ep, w.now) {
                        w.open(peer, p);
                    }
                }
            }
            act::CONNECTED => {
                if let Some(ep) = w.connect_pending.take() {
                    if let Some(peer) = w.sock.handle_connected(ep, w.now) {
                        w.open(peer, p);
                    }
                }
            }
            act::CONNECT_FAILED => {
                if let Some(ep) = w.connect_pending.take() {
                    w.sock.handle_connect_failed(ep, w.now);
                }
            }
            act::MESSAGE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.script_message(i, p);
                }
            }
            act::PEER_SUBSCRIBE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.script_subscription(i, p);
                }
            }
            act::FLUSH => {
                if let Some(i) = w.choose(action >> 4) {
                    w.flush(i, usize::from(p));
                }
            }
            act::RAW => {
                let bytes = c.take(usize::from(p));
                if let Some(i) = w.choose(action >> 4) {
                    w.raw(i, bytes);
                }
            }
            act::CLOSED => {
                if let Some(i) = w.choose(action >> 4) {
                    if let Some(peer) = w.streams.get(i).map(|s| s.peer) {
                        w.stream_died(peer);
                        w.sock.handle_closed(peer, w.now);
                    }
                }
            }
            act::SEND => w.send(p, action >> 4),
            act::RECV => {
                for _ in 0..=(action >> 4) {
                    if !w.recv() {
                        break;
                    }
                }
            }
            act::SUBSCRIBE => {
                let topic = pick(TOPICS, usize::from(p >> 1), b"");
                if p & 1 == 0 {
                    w.sock.subscribe(topic);
                } else {
                    w.sock.unsubscribe(topic);
                }
            }
            act::TIMEOUT => {
                let step = pick(SOCKET_STEPS, usize::from(p), None);
                let target = match step {
                    Some(d) => Some(w.now + d),
                    None => w.sock.poll_timeout(),
                };
                w.now = w.now.max(target.unwrap_or(w.now));
                w.sock.handle_timeout(w.now);
            }
            act::WRITE => {
                if let Some(i) = w.choose(action >> 4) {
                    w.write(i, usize::from(p));
                }
            }
            act::VERDICT => {
                if let Some(peer) = w.auth_queue.pop_front() {
                    let reply = match p % 6 {
                        0 => AuthReply::Verdict {
                            status: 200,
                            user_id: Bytes::from_static(b"user"),
                            metadata: Bytes::new(),
                        },
                        1 => AuthReply::status(200),
                        2 => AuthReply::status(300),
                        3 => AuthReply::status(400),
                        4 => AuthReply::status(500),
                        _ => AuthReply::NoHandler,
                    };
                    w.sock.handle_auth(peer, w.now, reply);
                }
            }
            act::SETTLE => {
                for i in w.alive() {
                    w.flush(i, 0);
                    w.events();
                }
                for _ in 0..64 {
                    let Some(peer) = w.sock.next_dirty() else {
                        break;
                    };
                    let ids: Vec<usize> = (0..w.streams.len())
                        .filter(|&i| w.streams.get(i).is_some_and(|s| s.alive && s.peer == peer))
                        .collect();
                    for i in ids {
                        w.write(i, 0);
                    }
                    w.events();
                }
                // Whatever is left (after partial writes), stream by stream.
                for i in w.alive() {
                    for _ in 0..8 {
                        let pending = w
                            .streams
                            .get(i)
                            .filter(|s| s.alive)
                            .is_some_and(|s| !w.sock.poll_transmit(s.peer).is_empty());
                        if !pending {
                            break;
                        }
                        w.write(i, 0);
                        w.events();
                    }
                }
            }
            act::CLOSE => {
                if p < 16 {
                    w.sock.close(w.now);
                } else {
                    while w.recv() {}
                }
            }
            _ => {}
        }
        w.events();
        w.check_bounds();
    }
    w.stats
}

// ----- seeds ---------------------------------------------------------------------------

/// One seed input: the target it is for, a file name, the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The target (a name in [`TARGETS`]).
    pub target: &'static str,
    /// A file name for it in `fuzz/corpus/<target>/`.
    pub name: String,
    /// The input.
    pub data: Vec<u8>,
}

/// A libzmq greeting (NULL, 3.1): its padding holds routing-id length + 1.
const LIBZMQ_GREETING: [u8; 64] = {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[8] = 0x01;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 1;
    g[12] = b'N';
    g[13] = b'U';
    g[14] = b'L';
    g[15] = b'L';
    g
};
/// READY from a libzmq DEALER with no routing id (seen on the wire).
const DEALER_READY: &[u8] =
    b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00";
/// READY from a libzmq SUB (seen on the wire).
const SUB_READY: &[u8] = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB";

/// Append feed operations of [`connection`] carrying `bytes`.
fn feed_ops(seed: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(usize::from(op::FEED_MAX)) {
        seed.push(u8::try_from(chunk.len()).unwrap_or(0));
        seed.extend_from_slice(chunk);
    }
}

/// A [`connection`] input that replays what a real peer sends to the connection that
/// setup bytes `b0`, `b1` make: its handshake (verdicts answered 200), then traffic (a
/// message, a multipart message, PING, SUBSCRIBE), then sends and timers of ours.
fn record_connection(b0: u8, b1: u8) -> Option<Vec<u8>> {
    let (ours, theirs) = connection_configs(b0, b1)?;
    let mut local = Connection::with_entropy(ours, START, LOCAL_ENTROPY);
    let mut peer = Connection::with_entropy(theirs, START, PEER_ENTROPY);
    let mut seed = vec![b0, b1];
    for (bytes, verdict) in record_handshake(&mut local, &mut peer)? {
        feed_ops(&mut seed, &bytes);
        if verdict {
            seed.push(op::VERDICT);
        }
    }
    let mut traffic = Vec::new();
    let mut out = vec![0u8; 2048];
    for (body, more) in [(&b"hello"[..], false), (b"multi", true), (b"part", false)] {
        let n = peer.send_frame(body, more, &mut out).ok()?;
        traffic.extend_from_slice(out.get(..n)?);
    }
    let ping = Command::Ping {
        ttl: 10,
        context: b"ctx",
    };
    let n = peer.send_command(&ping, &mut out).ok()?;
    traffic.extend_from_slice(out.get(..n)?);
    let n = peer.send_subscribe(b"t", &mut out).ok()?;
    traffic.extend_from_slice(out.get(..n)?);
    feed_ops(&mut seed, &traffic);
    // Ours: a frame, a multipart message, then the clock to the next deadline, twice.
    seed.extend_from_slice(&[op::SEND + 2, op::SEND + 5, op::SEND + 4, 0xE6, 0xE6]);
    Some(seed)
}

/// A [`socket()`] input: the four setup bytes, then (action, parameter) pairs; a `RAW`
/// action's bytes follow its pair.
fn socket_seed(ty: SocketType, b1: u8, b2: u8, b3: u8, actions: &[(u8, u8)]) -> Vec<u8> {
    let index = TYPES.iter().position(|&t| t == ty).unwrap_or(0);
    let mut out = vec![u8::try_from(index).unwrap_or(0), b1, b2, b3];
    for &(a, p) in actions {
        out.extend_from_slice(&[a, p]);
        if a & 15 == act::RAW {
            // Garbage after the handshake: a reserved flag.
            out.extend((0..p).map(|i| if i == 0 { 0x08 } else { i }));
        }
    }
    out
}

/// The seed inputs of every target. `tests/fuzz_bodies.rs` runs the bodies over them and
/// writes them to `fuzz/corpus/` when asked (see there).
pub fn seed_corpus() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target: &'static str, name: &str, data: Vec<u8>| {
        seeds.push(Seed {
            target,
            name: name.to_string(),
            data,
        });
    };

    // Greetings.
    add("greeting", "libzmq_null_31", LIBZMQ_GREETING.to_vec());
    for (name, version, mechanism, as_server) in [
        ("plain_server_30", Version::V3_0, Mechanism::PLAIN, true),
        ("curve_31", Version::V3_1, Mechanism::CURVE, false),
    ] {
        let mut g = vec![0u8; GREETING_LEN];
        let greeting = Greeting {
            version,
            mechanism,
            as_server,
        };
        if greeting.emit(&mut g).is_ok() {
            add("greeting", name, g);
        }
    }
    let mut zmtp20 = LIBZMQ_GREETING.to_vec();
    if let Some(major) = zmtp20.get_mut(10) {
        *major = 1;
    }
    add("greeting", "zmtp20", zmtp20);
    add(
        "greeting",
        "signature_only",
        LIBZMQ_GREETING.get(..11).unwrap_or_default().to_vec(),
    );

    // Command bodies (frames seen on the wire, without their 2-byte header).
    for (name, body) in [
        ("ready_dealer", DEALER_READY.get(2..).unwrap_or_default()),
        ("ready_sub", SUB_READY.get(2..).unwrap_or_default()),
        ("ping_ttl", b"\x04PING\x00\x19"),
        ("ping_context", b"\x04PING\x00\x0a0123456789abcdefghij"),
        ("pong", b"\x04PONG0123456789abcdef"),
        ("subscribe", b"\x09SUBSCRIBEA"),
        ("cancel", b"\x06CANCELA"),
        ("error", b"\x05ERROR\x03500"),
        ("error_libzmq_plain", b"\x5eRROR\x03400"),
        ("join", b"\x04JOINgroup"),
        ("leave", b"\x05LEAVEgroup"),
        ("unknown", b"\x05HELLOx"),
    ] {
        add("command", name, body.to_vec());
    }

    // Metadata blocks.
    add(
        "metadata",
        "dealer",
        DEALER_READY.get(8..).unwrap_or_default().to_vec(),
    );
    add(
        "metadata",
        "sub",
        SUB_READY.get(8..).unwrap_or_default().to_vec(),
    );
    let mut props = Config::new(SocketType::Router);
    if props.set_identity(b"me").is_ok() && props.add_property(b"X-Key", b"value").is_ok() {
        let mut w = vec![0u8; props.metadata_len()];
        let mut writer = crate::codec::Writer::new(&mut w);
        if props.emit_metadata(&mut writer).is_ok() {
            add("metadata", "router_props", w);
        }
    }
    add("metadata", "empty", Vec::new());

    // Z85.
    add("z85", "hello_world", b"HelloWorld".to_vec());
    add(
        "z85",
        "client_public",
        b"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID".to_vec(),
    );
    add("z85", "server_secret", SERVER_SECRET_Z85.to_vec());
    add(
        "z85",
        "binary",
        vec![0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B],
    );

    // Frame decoder: control bytes, fragment sizes, then a stream after the handshake.
    let mut long = vec![0x02, 0, 0, 0, 0, 0, 0, 0x01, 0x2C];
    long.extend_from_slice(&[0x61; 300]);
    let messages = [
        &b"\x00\x05hello"[..],
        b"\x01\x01a\x01\x00\x00\x01b",
        &long,
        b"\x04\x07\x04PING\x00\x19",
        b"\x04\x05\x04PONG",
    ]
    .concat();
    let commands = [
        &b"\x04\x0b\x09SUBSCRIBEA"[..],
        b"\x04\x08\x06CANCELA",
        b"\x00\x02\x01B",
        b"\x00\x02\x00B",
        b"\x04\x07\x05HELLOx",
        b"\x04\x06\x05READY",
        b"\x00\x01y",
    ]
    .concat();
    let mut decoder = |name: &str, control: &[u8], stream: &[u8]| {
        let mut data = control.to_vec();
        data.extend_from_slice(stream);
        add("frame_decoder", name, data);
    };
    decoder("pair_bytewise", &[0x00, 0x00, 0x00], &messages);
    decoder("pub_commands", &[0x08, 0x00, 0x02, 3, 5], &commands);
    decoder("max16", &[0x03, 0x00, 0x01, 4], &messages);
    decoder(
        "router_max_u16",
        &[0x27, 0x00, 0x03, 0x01, 0x00, 1, 9, 40],
        &messages,
    );
    decoder("shared_30", &[0x10, 0x07, 0x03, 3, 7, 1], &commands);
    decoder(
        "hostile",
        &[0x00, 0x00, 0x01, 200],
        b"\x00\x01z\x02\x40\x00\x00\x00\x00\x00\x00\x00",
    );

    // Connections: recorded handshakes (libzmq's bytes) and traffic.
    let pairs: [(&str, u8, u8); 9] = [
        ("null_dealer", 9 << 3, 0),
        ("null_auth_router", 1 | 10 << 3, 0),
        ("plain_client_req", 2 | 7 << 3, 0),
        ("plain_server_rep", 3 | 8 << 3, 0x08),
        ("curve_client_dealer", 4 | 9 << 3, 0),
        ("curve_server_router", 5 | 10 << 3, 0x02),
        ("null_identity_pair_heartbeat", 6, 0x02),
        ("null_sub_30", 2 << 3, 0x01),
        ("null_pub_maxsize", 1 << 3, 0x04),
    ];
    for (name, b0, b1) in pairs {
        if let Some(data) = record_connection(b0, b1) {
            add("connection", name, data);
        }
    }
    // A peer that only sends garbage after a valid greeting.
    let mut garbage = vec![0, 0];
    feed_ops(&mut garbage, &LIBZMQ_GREETING);
    feed_ops(&mut garbage, b"\x0c\x00");
    add("connection", "null_garbage", garbage);

    // CURVE traffic: untampered, then one mutation each.
    for (name, data) in [
        ("clean", &[0x00][..]),
        ("server_fragments", &[0x01 | 5 << 1]),
        ("flip", &[0x00, 0, 1, 0x00, 0x20, 3]),
        ("duplicate", &[0x00, 2, 0]),
        ("swap", &[0x00, 3, 0, 1]),
        ("remove_middle", &[0x00, 4, 2]),
        ("truncate", &[0x02, 1, 6, 0x00, 0x10]),
        ("insert", &[0x00, 5, 3, 4, 1, 2, 3, 4]),
    ] {
        add("curve_traffic", name, data.to_vec());
    }

    // Sockets: one scenario per type, plus ZAP, a connect endpoint and raw bytes.
    use act::*;
    const HWM4: u8 = 0x0F;
    let recv4 = RECV | 0x30;
    let messages = [
        (MESSAGE, 0x01),
        (MESSAGE, 0x0A),
        (MESSAGE, 0x10),
        (FLUSH, 0),
    ];
    let mut scenario = |name: &str, ty: SocketType, b1: u8, b2: u8, actions: &[(u8, u8)]| {
        add("socket", name, socket_seed(ty, b1, b2, 0, actions));
    };
    for (name, ty) in [
        ("pair", SocketType::Pair),
        ("pull", SocketType::Pull),
        ("dealer", SocketType::Dealer),
        ("router", SocketType::Router),
        ("xsub", SocketType::XSub),
    ] {
        let mut actions = vec![(ACCEPT, 0), (SETTLE, 0)];
        actions.extend_from_slice(&messages);
        actions.extend_from_slice(&[(recv4, 0), (SEND, 0x05), (SETTLE, 0), (TIMEOUT, 0)]);
        actions.extend_from_slice(&[(CLOSED, 0), (recv4, 0)]);
        scenario(name, ty, HWM4, 0, &actions);
    }
    let mut sub = vec![(SUBSCRIBE, 0), (ACCEPT, 0), (SETTLE, 0)];
    sub.extend_from_slice(&messages);
    sub.push((recv4, 0));
    scenario("sub", SocketType::Sub, HWM4, 0, &sub);
    for (name, ty) in [("pub", SocketType::Pub), ("xpub", SocketType::XPub)] {
        let actions = [
            (ACCEPT, 0),
            (PEER_SUBSCRIBE, 0),
            (FLUSH, 0),
            (SEND, 0x01),
            (SEND, 0x12),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (recv4, 0),
        ];
        scenario(name, ty, HWM4, 0, &actions);
    }
    scenario(
        "push",
        SocketType::Push,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (SEND, 0x00),
            (SEND, 0x16),
            (SETTLE, 0),
        ],
    );
    scenario(
        "req",
        SocketType::Req,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (SEND, 0x01),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "rep",
        SocketType::Rep,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x21),
            (MESSAGE, 0x02),
            (FLUSH, 0),
            (RECV, 0),
            (SEND, 0x01),
            (SETTLE, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "dealer_zap",
        SocketType::Dealer,
        HWM4 | 0x10,
        0,
        &[
            (ACCEPT, 0x10),
            (FLUSH, 0),
            (VERDICT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x05),
            (FLUSH, 0),
            (recv4, 0),
        ],
    );
    scenario(
        "router_connect",
        SocketType::Router,
        HWM4 | 0x20,
        0x01,
        &[
            (CONNECTED, 0x11),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (RECV, 0),
            (CLOSED, 0),
            (TIMEOUT, 0),
            (CONNECTED, 0x12),
            (SETTLE, 0),
            (MESSAGE, 0x02),
            (FLUSH, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "pull_hwm1_raw",
        SocketType::Pull,
        0x00,
        0,
        &[
            (ACCEPT, 0),
            (ACCEPT, 0x04),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (MESSAGE, 0x00),
            (MESSAGE | 0x10, 0x03),
            (SETTLE, 0),
            (RAW, 4),
            (recv4, 0),
            (recv4, 0),
        ],
    );
    scenario(
        "dealer_connect_queue",
        SocketType::Dealer,
        0x05 | 0x20,
        0x01,
        &[
            (SEND, 0x00),
            (SEND, 0x01),
            (CONNECTED, 0),
            (SETTLE, 0),
            (TIMEOUT, 0),
            (CLOSE, 0),
            (SETTLE, 0),
        ],
    );
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds_of(target: &str) -> Vec<Seed> {
        seed_corpus()
            .into_iter()
            .filter(|s| s.target == target)
            .collect()
    }

    #[test]
    fn every_target_has_small_seeds() {
        let seeds = seed_corpus();
        for (target, _) in TARGETS {
            let n = seeds.iter().filter(|s| s.target == *target).count();
            assert!(n >= 3, "{target}: {n} seeds");
        }
        for s in &seeds {
            assert!(
                s.data.len() < 4096,
                "{} {}: {} bytes",
                s.target,
                s.name,
                s.data.len()
            );
        }
    }

    #[test]
    fn connection_seeds_complete_the_handshake_and_deliver() {
        let seeds = seeds_of("connection");
        assert!(
            seeds.len() >= 9,
            "a recording failed: {} seeds",
            seeds.len()
        );
        for s in seeds.iter().filter(|s| s.name != "null_garbage") {
            let out = run_connection(&s.data);
            std::println!("{}: {out:?}", s.name);
            assert!(out.established && !out.failed, "{}: {out:?}", s.name);
            assert!(out.items >= 2, "{}: {out:?}", s.name);
        }
        let garbage = seeds.iter().find(|s| s.name == "null_garbage");
        assert!(garbage.is_some_and(|s| run_connection(&s.data).failed));
    }

    #[test]
    fn clean_curve_traffic_is_delivered() {
        assert_eq!(run_curve_traffic(&[0x00]), Some(CURVE_FRAMES.len()));
        assert_eq!(
            run_curve_traffic(&[0x01 | 3 << 1]),
            Some(CURVE_FRAMES.len())
        );
    }

    #[test]
    fn socket_seeds_move_messages() {
        for s in seeds_of("socket") {
            let out = run_socket(&s.data);
            std::println!("{}: {out:?}", s.name);
            let moved = out.received + out.app_delivered;
            assert!(moved > 0, "{}: {out:?}", s.name);
        }
    }

    #[test]
    fn raw_bytes_never_hold_the_tag() {
        // A raw chunk made of the tag itself, twice, split across the tail.
        let mut data = socket_seed(SocketType::Pull, 0x0F, 0, 0, &[(act::ACCEPT, 0)]);
        data.extend_from_slice(&[act::RAW, 20]);
        data.extend_from_slice(&MAGIC);
        data.extend_from_slice(&MAGIC);
        data.extend_from_slice(&[0, 0, 0, 0]);
        run_socket(&data);
    }
}
