//! The legacy body: a connection meeting a ZMTP 1.0 or 2.0 peer on an arbitrary stream.

use zmtp_proto::codec::{FrameHeader, Status, V1Header};
use zmtp_proto::{Config, Connection, SocketType};

use super::frame_decoder::decode_three_ways;
use super::input::{pick, Cursor};
use super::material::START;
use crate::pair::raw::pump;

/// Our socket types for [`legacy`], chosen by bits 2-4 of the first byte.
const TYPES: &[SocketType] = &[
    SocketType::Pair,
    SocketType::Pub,
    SocketType::Sub,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Dealer,
    SocketType::Router,
    SocketType::Pull,
];

/// Maximum message sizes for [`legacy`], chosen by bits 5-7 of the first byte.
const MAX_SIZES: &[Option<u64>] = &[
    None,
    Some(0),
    Some(1),
    Some(16),
    Some(253),
    Some(254),
    Some(255),
    Some(1000),
];

/// A versioned signature (libzmq's, with an empty identity).
const SIGNATURE: [u8; 10] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F];

/// A connection meeting a peer older than ZMTP 3.0.
///
/// Input: byte 0 chooses the flavour (bits 0-1: 0 an unversioned 1.0 peer, whose stream
/// the rest is; 1 revision 0 and 2 revision 1, whose signature, revision and socket type
/// (the next byte) come first; 3 no prefix at all), our socket type (bits 2-4) and the
/// maximum message size (bits 5-7); byte 1 how many fragment sizes follow (bits 0-2) and
/// whether fragments are fed shared (bit 3); then the fragment sizes and the stream.
///
/// The stream is decoded whole and in fragments, three ways, which must agree
/// ([`frame_decoder`](super::frame_decoder)'s check, greeting included), and no message
/// over the limit is delivered. Once established, frames we send read back through the
/// framing of the peer's flavour as they were sent.
pub fn legacy(data: &[u8]) {
    let mut c = Cursor::new(data);
    let b0 = c.byte();
    let prefix: Vec<u8> = match b0 & 3 {
        0 | 3 => Vec::new(),
        flavour => {
            let mut p = SIGNATURE.to_vec();
            p.push(flavour - 1);
            p.push(c.byte());
            p
        }
    };
    let ty = pick(TYPES, usize::from(b0 >> 2 & 7), SocketType::Pair);
    let max = pick(MAX_SIZES, usize::from(b0 >> 5), None);
    let b1 = c.byte();
    let pattern = c.take(usize::from(b1 & 7));
    let mut stream = prefix;
    stream.extend_from_slice(c.rest());
    let conn = || {
        let mut cfg = Config::new(ty);
        cfg.max_message_size = max;
        Some(Connection::new(cfg, START))
    };
    decode_three_ways(conn, &stream, pattern, b1 & 8 != 0, max);

    // What we send reads back in the peer's framing.
    let Some(mut ours) = conn() else {
        return;
    };
    let mut rx = stream.clone();
    if pump(&mut ours, START, &mut rx, &mut |_| {}).is_err() || !ours.is_established() {
        return;
    }
    let mut control = vec![0u8; 1024];
    let _ = ours.poll_transmit(&mut control);
    let v1 = ours.version().major == 1;
    let bodies = [
        &data[..data.len().min(300)],
        &[][..],
        &data[..data.len().min(7)],
    ];
    for (i, body) in bodies.iter().enumerate() {
        let more = i + 1 < bodies.len();
        let mut out = vec![0u8; body.len() + 16];
        let n = ours
            .send_frame(body, more, &mut out)
            .expect("an established connection takes a frame");
        let wire = &out[..n];
        let parsed = if v1 {
            V1Header::parse(wire, u64::MAX).map(|s| s.complete().map(|(h, l)| (h.size, h.more, l)))
        } else {
            FrameHeader::parse(wire, u64::MAX)
                .map(|s| s.complete().map(|(h, l)| (h.size, h.flags.more, l)))
        };
        let Ok(Some((size, read_more, header))) = parsed else {
            panic!("our frame does not parse: {wire:?}");
        };
        assert!(
            size == body.len() as u64 && read_more == more && &wire[header..] == *body,
            "our frame reads back differently: {wire:?}"
        );
    }
    // The 1.0 header round-trips for any size the input names.
    let size = u64::from(c_u32(data));
    for more in [false, true] {
        let h = V1Header { more, size };
        let mut out = [0u8; 10];
        let n = h.emit(&mut out).expect("room for the longest header");
        assert_eq!(n, h.encoded_len());
        assert_eq!(
            V1Header::parse(&out[..n], u64::MAX),
            Ok(Status::Complete((h, n)))
        );
    }
}

/// The first four bytes of `data` as a number (zero-padded).
fn c_u32(data: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    for (d, s) in b.iter_mut().zip(data) {
        *d = *s;
    }
    u32::from_be_bytes(b)
}
