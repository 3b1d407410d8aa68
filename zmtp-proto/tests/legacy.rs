//! Peers older than ZMTP 3.0: the captured exchanges of libzmq 4.3 with ZMTP 1.0 and 2.0
//! peers (the project's ZMTP notes, 9.6), replayed against one connection.

use std::time::Duration;

use zmtp_proto::codec::{CodecError, Version};
use zmtp_proto::{Config, Connection, Error, Event, Instant, SocketType};
use zmtp_testkit::pair::describe;

fn now() -> Instant {
    Instant::from_millis(5)
}

/// libzmq's signature with an empty identity: it reads as a 1.0 long-form identity
/// header too.
const SIGNATURE: [u8; 10] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F];

/// Feed `bytes` whole; returns the items as (kind, payload). Panics on an error.
fn feed(conn: &mut Connection, bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut buf = bytes.to_vec();
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        let input = conn
            .handle_input(now(), &mut buf[at..])
            .expect("valid input");
        if let Some(item) = &input.item {
            out.push(describe(item));
        }
        if input.consumed == 0 && input.item.is_none() {
            return out;
        }
        at += input.consumed;
    }
}

/// Feed `bytes` one at a time, as a slow peer would send them; the same items.
fn feed_bytewise(conn: &mut Connection, bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut pending = Vec::new();
    let mut out = Vec::new();
    for &b in bytes {
        pending.push(b);
        loop {
            let input = conn.handle_input(now(), &mut pending).expect("valid input");
            if let Some(item) = &input.item {
                out.push(describe(item));
            }
            if input.consumed == 0 && input.item.is_none() {
                break;
            }
            assert_eq!(input.needed, 0);
            let consumed = input.consumed;
            pending.drain(..consumed);
        }
    }
    assert!(pending.is_empty(), "left unconsumed: {pending:?}");
    out
}

fn transmit(conn: &mut Connection) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = conn.poll_transmit(&mut out).unwrap();
    out.truncate(n);
    out
}

fn send(conn: &mut Connection, frames: &[&[u8]]) -> Vec<u8> {
    let mut wire = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let mut out = vec![0u8; f.len() + 16];
        let n = conn.send_frame(f, i + 1 < frames.len(), &mut out).unwrap();
        wire.extend_from_slice(&out[..n]);
    }
    wire
}

fn frame(kind: &str, body: &[u8]) -> (String, Vec<u8>) {
    (kind.to_string(), body.to_vec())
}

#[test]
fn zmtp20_client_to_router_as_captured() {
    let mut conn = Connection::new(Config::new(SocketType::Router), now());
    assert_eq!(transmit(&mut conn), SIGNATURE);
    // The client's signature, then its revision (1) and socket type (DEALER).
    assert!(feed(&mut conn, &SIGNATURE).is_empty());
    assert_eq!(transmit(&mut conn), [3]);
    assert!(feed(&mut conn, &[0x01, 0x05]).is_empty());
    // Our type (ROUTER, 6) and an empty identity in 2.0 framing: `06 00 00`.
    assert_eq!(transmit(&mut conn), [6, 0, 0]);
    assert!(!conn.is_established());
    // Its identity, then a two-frame message.
    let items = feed(&mut conn, b"\x00\x04PYID\x01\x02AB\x00\x05hello");
    assert!(conn.is_established());
    assert_eq!(conn.peer_identity(), b"PYID");
    assert_eq!(conn.version(), Version { major: 2, minor: 0 });
    assert_eq!(
        conn.poll_event(),
        Some(Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Dealer),
            version: Version { major: 2, minor: 0 },
        })
    );
    // The identity frame stands for a READY without properties.
    assert_eq!(
        items,
        [
            frame("ready", b""),
            frame("frame+", b"AB"),
            frame("frame", b"hello")
        ]
    );
    assert_eq!(send(&mut conn, &[b"world"]), b"\x00\x05world");
    // No heartbeats to a 2.0 peer, and the handshake deadline is gone.
    assert_eq!(conn.poll_timeout(), None);
}

#[test]
fn zmtp10_unversioned_client_as_captured() {
    let mut cfg = Config::new(SocketType::Rep);
    cfg.set_identity(b"AB").unwrap();
    cfg.heartbeat_interval = Some(Duration::from_secs(1));
    let mut conn = Connection::new(cfg, now());
    // With identity `AB` the signature announces a length of 3.
    assert_eq!(transmit(&mut conn), [0xFF, 0, 0, 0, 0, 0, 0, 0, 3, 0x7F]);
    // The client's identity frame (`05 00 'PYID'`), then a request [empty][hello].
    let items = feed(&mut conn, b"\x05\x00PYID\x01\x01\x06\x00hello");
    assert!(conn.is_established());
    assert_eq!(conn.peer_identity(), b"PYID");
    assert_eq!(conn.version(), Version { major: 1, minor: 0 });
    assert!(conn.peer_subscribes_all());
    assert_eq!(conn.peer_socket_type(), None);
    assert_eq!(
        items,
        [
            frame("ready", b""),
            frame("frame+", b""),
            frame("frame", b"hello")
        ]
    );
    // The identity's body completes the frame our signature began; no major version.
    assert_eq!(transmit(&mut conn), b"AB");
    // The reply in 1.0 framing: `01 01` then `06 00 'world'`.
    assert_eq!(send(&mut conn, &[b"", b"world"]), b"\x01\x01\x06\x00world");
    assert_eq!(conn.poll_timeout(), None);
}

#[test]
fn revision0_gets_type_and_identity_in_v1_framing() {
    let mut conn = Connection::new(Config::new(SocketType::Router), now());
    transmit(&mut conn);
    assert!(feed(&mut conn, &SIGNATURE).is_empty());
    assert!(feed(&mut conn, &[0x00, 0x05]).is_empty());
    // `03 06 01 00`: major, our type, an empty identity in 1.0 framing.
    assert_eq!(transmit(&mut conn), [3, 6, 1, 0]);
    let items = feed(&mut conn, b"\x03\x00ID\x02\x01A\x02\x00B");
    assert_eq!(conn.peer_identity(), b"ID");
    assert!(!conn.peer_subscribes_all());
    assert_eq!(
        items,
        [
            frame("ready", b""),
            frame("frame+", b"A"),
            frame("frame", b"B")
        ]
    );
    // Long frames take the long form: 300 bytes make a length of 301.
    let body = vec![7u8; 300];
    let wire = send(&mut conn, &[&body]);
    assert_eq!(&wire[..10], &[0xFF, 0, 0, 0, 0, 0, 0, 0x01, 0x2D, 0]);
    assert_eq!(&wire[10..], &body[..]);
    let mut long = vec![0xFF, 0, 0, 0, 0, 0, 0, 0x01, 0x2D, 0];
    long.extend_from_slice(&body);
    assert_eq!(feed(&mut conn, &long), [frame("frame", &body)]);
}

#[test]
fn byte_at_a_time_gives_the_same_items() {
    let stream: &[u8] = b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f\x01\x08\x00\x00\x00\x03one";
    let mut whole = Connection::new(Config::new(SocketType::Pull), now());
    let mut slow = Connection::new(Config::new(SocketType::Pull), now());
    let a = feed(&mut whole, stream);
    let b = feed_bytewise(&mut slow, stream);
    assert_eq!(a, [frame("ready", b""), frame("frame", b"one")]);
    assert_eq!(a, b);
    // Unversioned, a byte at a time: the identity's first byte decides at once.
    let mut slow = Connection::new(Config::new(SocketType::Pull), now());
    let b = feed_bytewise(&mut slow, b"\x01\x00\x04\x00one");
    assert_eq!(b, [frame("ready", b""), frame("frame", b"one")]);
    assert!(slow.is_established());
}

#[test]
fn subscriptions_are_messages_both_ways() {
    // A 2.0 SUB subscribes with a message; our SUB does the same to a 2.0 PUB.
    let mut publisher = Connection::new(Config::new(SocketType::Pub), now());
    transmit(&mut publisher);
    feed(&mut publisher, &SIGNATURE);
    let items = feed(&mut publisher, b"\x01\x02\x00\x00\x00\x05\x01news");
    assert_eq!(items, [frame("ready", b""), frame("sub", b"news")]);
    assert!(!publisher.peer_subscribes_all());
    let mut sub = Connection::new(Config::new(SocketType::Sub), now());
    transmit(&mut sub);
    feed(&mut sub, &SIGNATURE);
    feed(&mut sub, b"\x01\x01\x00\x00");
    transmit(&mut sub);
    let mut out = [0u8; 64];
    let n = sub.send_subscribe(b"news", &mut out).unwrap();
    assert_eq!(&out[..n], b"\x00\x05\x01news");
}

#[test]
fn old_peers_are_refused_with_security_or_when_asked() {
    let mut cfg = Config::new(SocketType::Pull);
    cfg.security = zmtp_proto::mechanism::Security::plain_server();
    let mut conn = Connection::new(cfg, now());
    feed(&mut conn, &SIGNATURE);
    assert_eq!(
        conn.handle_input(now(), &mut [0x01]),
        Err(Error::UnsupportedVersion { major: 2 })
    );
    let mut cfg = Config::new(SocketType::Pull);
    cfg.legacy_peers = false;
    let mut conn = Connection::new(cfg, now());
    assert_eq!(
        conn.handle_input(now(), &mut b"\x05\x00PYID".to_vec()),
        Err(Error::Codec(CodecError::BadSignature))
    );
}

#[test]
fn hostile_legacy_input_is_a_typed_error() {
    let cases: [(&[u8], Error); 5] = [
        // A 1.0 identity longer than 255 bytes (long form, 300 + 1).
        (
            b"\xff\x00\x00\x00\x00\x00\x00\x01\x2d\x00",
            Error::IdentityTooLong,
        ),
        // A zero length leaves no room for the flags.
        (b"\x00", Error::Codec(CodecError::EmptyV1Frame)),
        // After a 2.0 greeting, a command where the identity belongs.
        (
            b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f\x01\x08\x04\x05\x04PING",
            Error::UnexpectedCommand,
        ),
        // A 1.0 identity, then a frame of zero length.
        (b"\x01\x00\x00", Error::Codec(CodecError::EmptyV1Frame)),
        // A 1.0 frame over MAXMSGSIZE (100): refused from its header.
        (
            b"\x01\x00\xff\x00\x00\x00\x00\x00\x00\x10\x00",
            Error::MessageTooLarge { limit: 100 },
        ),
    ];
    for (bytes, expected) in cases {
        let mut cfg = Config::new(SocketType::Pull);
        cfg.max_message_size = Some(100);
        let mut conn = Connection::new(cfg, now());
        let mut buf = bytes.to_vec();
        let mut at = 0;
        let err = loop {
            match conn.handle_input(now(), &mut buf[at..]) {
                Ok(input) if input.consumed > 0 || input.item.is_some() => at += input.consumed,
                Ok(input) => panic!("{bytes:?}: waits for {} bytes", input.needed),
                Err(e) => break e,
            }
        };
        assert_eq!(err, expected, "{bytes:?}");
        // Sticky.
        assert_eq!(conn.handle_input(now(), &mut [0u8; 4]), Err(expected));
    }
}
