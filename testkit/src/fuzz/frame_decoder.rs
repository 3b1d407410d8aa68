//! The frame decoder body: one stream decoded whole and in fragments.

use std::collections::BTreeMap;

use zmtp_proto::codec::Version;
use zmtp_proto::{Buffered, Bytes, Config, Connection, Error, OwnedItem, SocketType};

use super::input::{pick, Cursor};
use super::material::START;
use crate::pair::raw::{pump, record_handshake, replay_handshake, Rounds};

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
            let rounds = record_handshake(&mut local, &mut Connection::new(peer, START), START)?;
            if let Ok(mut cache) = FRAME_HANDSHAKES.lock() {
                cache.insert(key, rounds.clone());
            }
            rounds
        }
    };
    let mut conn = Connection::new(cfg, START);
    replay_handshake(&mut conn, &rounds, START)?;
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
    if conn().is_none() {
        panic!("NULL handshake of {:?} failed", FRAME_PAIRS.get(pair));
    }
    decode_three_ways(conn, stream, pattern, shared, max);
}

/// Decode `stream` with connections made by `conn` three ways, and check that they agree:
/// a [`Buffered`] fed all at once, a [`Buffered`] fed in fragments (sizes from `pattern`,
/// cycled; through [`Buffered::receive_shared`] with `shared`) and a raw [`Connection`]
/// fed in fragments, with the input contract checked on every step. The items, the error
/// and the bytes left must be the same, and no message over `max` may be delivered.
pub(super) fn decode_three_ways(
    conn: impl Fn() -> Option<Connection>,
    stream: &[u8],
    pattern: &[u8],
    shared: bool,
    max: Option<u64>,
) {
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
        return;
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
