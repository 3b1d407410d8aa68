//! The CURVE traffic body: a valid CURVE stream tampered with on the wire.

use std::sync::OnceLock;

use zmtp_proto::{Bytes, Config, Connection, OwnedItem, SocketType};

use super::input::Cursor;
use super::material::{curve_client, curve_server, LOCAL_ENTROPY, PEER_ENTROPY, START};
use crate::pair::raw::{pump, record_handshake, replay_handshake, Rounds};

/// The frames [`curve_traffic`] sends: body and MORE (`None`: a SUBSCRIBE command).
pub(super) const CURVE_FRAMES: &[(Option<&[u8]>, bool)] = &[
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

static CURVE_SESSIONS: [OnceLock<Option<CurveSession>>; 2] = [OnceLock::new(), OnceLock::new()];

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
    let rounds = record_handshake(&mut rx, &mut tx, START)?;
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

pub(super) fn run_curve_traffic(data: &[u8]) -> Option<usize> {
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
        replay_handshake(&mut rx, &session.rounds, START).is_some(),
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
