//! Byte vectors seen on the wire against libzmq 4.3.4 (see the project's ZMTP notes).

use std::time::Duration;

use zmtp_testkit::pair::describe;

use zmtp_proto::codec::{
    CodecError, Command, FrameHeader, Greeting, Mechanism, Metadata, Status, Version,
};
use zmtp_proto::{Config, Connection, Error, Event, Instant, SocketType};
use zmtp_testkit::wire::{DEALER_READY, LIBZMQ_GREETING, SUB_READY};

fn now() -> Instant {
    Instant::from_millis(5)
}

/// Feed `bytes` to `conn` and collect consumed items as (kind, payload).
fn feed(conn: &mut Connection, bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut buf = bytes.to_vec();
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        let base = buf.as_ptr() as usize + at;
        let input = conn
            .handle_input(now(), &mut buf[at..])
            .expect("valid input");
        if let Some(item) = input.item {
            // The payload range locates the payload in the input (for zero-copy slicing).
            assert_eq!(item.payload().as_ptr() as usize, base + input.payload.start);
            assert_eq!(item.payload().len(), input.payload.len());
            out.push(describe(&item));
        }
        if input.consumed == 0 {
            assert_eq!(at, buf.len(), "stream left unconsumed bytes");
            return out;
        }
        at += input.consumed;
    }
}

/// A connection that has exchanged greetings and READYs with a libzmq peer of type `peer`;
/// everything it transmitted so far is dropped.
fn established(cfg: Config, peer: SocketType) -> Connection {
    let mut conn = Connection::new(cfg, now());
    feed(&mut conn, &LIBZMQ_GREETING);
    let name = peer.name().as_bytes();
    let mut ready = vec![0x04, 0x16 + name.len() as u8];
    ready.extend_from_slice(b"\x05READY\x0bSocket-Type\x00\x00\x00");
    ready.push(name.len() as u8);
    ready.extend_from_slice(name);
    assert_eq!(feed(&mut conn, &ready)[0].0, "ready");
    transmit(&mut conn);
    conn
}

fn transmit(conn: &mut Connection) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = conn.poll_transmit(&mut out).unwrap();
    out.truncate(n);
    out
}

#[test]
fn greeting_parse_and_emit() {
    let g = Greeting::parse(&LIBZMQ_GREETING).unwrap();
    assert_eq!(
        g,
        Status::Complete(Greeting {
            version: Version::V3_1,
            mechanism: Mechanism::NULL,
            as_server: false
        })
    );
    assert_eq!(Greeting::parse(&LIBZMQ_GREETING[..63]), Ok(Status::Partial));
    let mut out = [0u8; 64];
    Greeting {
        version: Version::V3_1,
        mechanism: Mechanism::NULL,
        as_server: false,
    }
    .emit(&mut out)
    .unwrap();
    let mut expected = LIBZMQ_GREETING;
    expected[8] = 0; // our padding is zero
    assert_eq!(out, expected);
    assert_eq!(Greeting::parse(&[0x01]), Err(CodecError::BadSignature));
    let mut unversioned = LIBZMQ_GREETING;
    unversioned[9] = 0x7E;
    assert_eq!(Greeting::parse(&unversioned), Err(CodecError::BadSignature));
}

#[test]
fn greeting_is_staged_and_ready_is_byte_exact() {
    let mut conn = Connection::new(Config::new(SocketType::Dealer), now());
    // Stage one: the signature only, its padding the identity's length plus one (as
    // libzmq's: it doubles as a ZMTP 1.0 identity header).
    let first = transmit(&mut conn);
    assert_eq!(first, &[0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F]);
    assert!(!conn.wants_write());
    // The major version goes once the peer's signature shows a versioned peer.
    assert!(feed(&mut conn, &LIBZMQ_GREETING[..10]).is_empty());
    assert_eq!(transmit(&mut conn), [3]);
    // The rest goes out once the peer's major version is in.
    assert!(feed(&mut conn, &LIBZMQ_GREETING[10..11]).is_empty());
    let rest = transmit(&mut conn);
    assert_eq!(rest.len(), 53);
    assert_eq!(&rest[..5], &[1, b'N', b'U', b'L', b'L']);
    // Our READY goes out eagerly after the greeting, byte for byte as libzmq's DEALER.
    assert!(feed(&mut conn, &LIBZMQ_GREETING[11..]).is_empty());
    assert_eq!(transmit(&mut conn), DEALER_READY);
    // The peer's READY completes the handshake.
    let mut partial = SUB_READY.strip_suffix(b"SUB").unwrap().to_vec();
    let input = conn.handle_input(now(), &mut partial).unwrap();
    assert_eq!((input.consumed, input.needed), (0, SUB_READY.len()));
    assert_eq!(input.item, None);
    let mut c2 = Connection::new(Config::new(SocketType::Pub), now());
    feed(&mut c2, &LIBZMQ_GREETING);
    let items = feed(&mut c2, SUB_READY);
    assert_eq!(items[0].0, "ready");
    assert_eq!(
        c2.poll_event(),
        Some(Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Sub),
            version: Version::V3_1
        })
    );
    // A SUB's READY carries no Identity, as libzmq's.
    let mut sub = Connection::new(Config::new(SocketType::Sub), now());
    transmit(&mut sub);
    feed(&mut sub, &LIBZMQ_GREETING);
    assert_eq!(&transmit(&mut sub)[64 - 10..], SUB_READY);
}

#[test]
fn ready_metadata_is_case_sensitive() {
    let meta = Metadata::parse(&DEALER_READY[8..]).unwrap();
    assert_eq!(meta.get(b"Socket-Type"), Some(&b"DEALER"[..]));
    assert_eq!(meta.get(b"socket-type"), None);
    assert_eq!(meta.get(b"Identity"), Some(&b""[..]));
    assert_eq!(meta.iter().count(), 2);
    // A lower-case type value is not a socket type.
    let mut conn = Connection::new(Config::new(SocketType::Dealer), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    let mut buf = b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03rep".to_vec();
    assert_eq!(
        conn.handle_input(now(), &mut buf),
        Err(Error::UnknownSocketType)
    );
    // Truncated metadata is malformed.
    assert_eq!(
        Metadata::parse(b"\x0bSocket-Type\x00\x00\x00\x09SUB"),
        Err(CodecError::InvalidMetadata)
    );
}

#[test]
fn ping_and_pong_bytes() {
    let ping = b"\x04\x07\x04PING\x00\x19";
    let mut out = [0u8; 32];
    let n = Command::Ping {
        ttl: 25,
        context: b"",
    }
    .emit_frame(&mut out)
    .unwrap();
    assert_eq!(&out[..n], ping);
    // Our heartbeat with TTL 2500 ms produces exactly libzmq's PING.
    let mut cfg = Config::new(SocketType::Pair);
    cfg.heartbeat_interval = Some(Duration::from_millis(100));
    cfg.heartbeat_ttl = Some(Duration::from_millis(2500));
    let mut conn = established(cfg, SocketType::Pair);
    let t = conn.poll_timeout().unwrap();
    assert_eq!(t, now() + Duration::from_millis(100));
    conn.handle_timeout(t).unwrap();
    assert_eq!(transmit(&mut conn), ping);
    // A PING with a 20-byte context gets a PONG echoing the first 16 bytes.
    feed(&mut conn, b"\x04\x1b\x04PING\x00\x0a0123456789abcdefghij");
    assert_eq!(transmit(&mut conn), b"\x04\x15\x04PONG0123456789abcdef");
    assert_eq!(
        conn.poll_event(),
        Some(Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Pair),
            version: Version::V3_1,
        })
    );
    assert_eq!(conn.poll_event(), Some(Event::PingReceived));
    feed(&mut conn, b"\x04\x05\x04PONG");
    assert_eq!(conn.poll_event(), Some(Event::PongReceived));
    // A PING without its TTL is malformed.
    assert_eq!(
        Command::parse(b"\x04PING\x00"),
        Err(CodecError::MalformedCommandBody)
    );
}

#[test]
fn subscription_frames() {
    let mut out = [0u8; 64];
    let n = Command::Subscribe(b"A").emit_frame(&mut out).unwrap();
    assert_eq!(&out[..n], b"\x04\x0b\x09SUBSCRIBEA");
    let n = Command::Cancel(b"A").emit_frame(&mut out).unwrap();
    assert_eq!(&out[..n], b"\x04\x08\x06CANCELA");

    for (version, sub, cancel) in [
        (
            Version::V3_1,
            &b"\x04\x0b\x09SUBSCRIBEA"[..],
            &b"\x04\x08\x06CANCELA"[..],
        ),
        (Version::V3_0, &b"\x00\x02\x01A"[..], &b"\x00\x02\x00A"[..]),
    ] {
        // Sending: the form follows the negotiated version.
        let mut cfg = Config::new(SocketType::Sub);
        cfg.version = version;
        let mut conn = established(cfg, SocketType::Pub);
        let n = conn.send_subscribe(b"A", &mut out).unwrap();
        assert_eq!(&out[..n], sub);
        let n = conn.send_cancel(b"A", &mut out).unwrap();
        assert_eq!(&out[..n], cancel);

        // Receiving: a PUB accepts both forms whatever the version.
        let mut pubc = Connection::new(Config::new(SocketType::Pub), now());
        feed(&mut pubc, &LIBZMQ_GREETING);
        feed(&mut pubc, SUB_READY);
        let items = feed(&mut pubc, &[sub, cancel].concat());
        assert_eq!(
            items,
            vec![
                ("sub".into(), b"A".to_vec()),
                ("cancel".into(), b"A".to_vec())
            ]
        );
    }
}

#[test]
fn long_frames_and_topics_use_the_long_flag() {
    // 246..=255-byte topics are where libzmq 4.3.4 got the LONG bit wrong (G10).
    let topic = [b'x'; 250];
    let mut out = [0u8; 300];
    let n = Command::Subscribe(&topic).emit_frame(&mut out).unwrap();
    assert_eq!(out[0], 0x06);
    assert_eq!(&out[1..9], &260u64.to_be_bytes());
    assert_eq!(n, 9 + 260);
    let parsed = FrameHeader::parse(&out, u64::MAX).unwrap();
    assert_eq!(parsed, Status::Complete((FrameHeader::command(260), 9)));
}

#[test]
fn libzmq_plain_error_form_is_accepted() {
    assert_eq!(
        Command::parse(b"\x5eRROR\x03400"),
        Ok(Command::Error(b"400"))
    );
    assert_eq!(
        Command::parse(b"\x05ERROR\x03500"),
        Ok(Command::Error(b"500"))
    );
    let mut conn = Connection::new(Config::new(SocketType::Dealer), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    let mut err = b"\x04\x0a\x05ERROR\x03400".to_vec();
    let e = conn.handle_input(now(), &mut err).unwrap_err();
    assert_eq!(
        e,
        Error::PeerError(zmtp_proto::Reason::from_slice(b"400").unwrap())
    );
}

#[test]
fn legacy_and_mismatched_greetings_are_typed_errors() {
    // Revisions 0 and 1 are ZMTP 1.0 and 2.0 peers: refused when old peers are, and
    // always when security is on.
    for (revision, major) in [(0u8, 1u8), (1, 2)] {
        let mut refusing = Config::new(SocketType::Pair);
        refusing.legacy_peers = false;
        let mut zap = Config::new(SocketType::Pair);
        zap.authenticate_null = true;
        for cfg in [refusing, zap] {
            let mut conn = Connection::new(cfg, now());
            let mut g = LIBZMQ_GREETING;
            g[10] = revision;
            assert!(feed(&mut conn, &g[..10]).is_empty());
            assert_eq!(
                conn.handle_input(now(), &mut g[10..]),
                Err(Error::UnsupportedVersion { major })
            );
        }
    }
    // An unversioned greeting is not a signature at all when old peers are refused.
    let mut refusing = Config::new(SocketType::Pair);
    refusing.legacy_peers = false;
    let mut conn = Connection::new(refusing, now());
    assert_eq!(
        conn.handle_input(now(), &mut [0x01, 0x00]),
        Err(Error::Codec(CodecError::BadSignature))
    );
    // Revision 2 gets a 3.x greeting, as libzmq gives it.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    let mut g = LIBZMQ_GREETING;
    g[10] = 2;
    transmit(&mut conn);
    feed(&mut conn, &g);
    assert_eq!(transmit(&mut conn)[..2], [3, 1]);
    assert_eq!(conn.version(), Version::V3_1);
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    let mut g = LIBZMQ_GREETING;
    g[12..17].copy_from_slice(b"PLAIN");
    feed(&mut conn, &g[..11]);
    assert_eq!(
        conn.handle_input(now(), &mut g[11..]),
        Err(Error::MechanismMismatch {
            ours: Mechanism::NULL,
            theirs: Mechanism::PLAIN
        })
    );
    // Major 4 is treated as 3.1, as libzmq does.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    let mut g = LIBZMQ_GREETING;
    g[10] = 4;
    g[11] = 7;
    feed(&mut conn, &g);
    assert_eq!(conn.version(), Version::V3_1);
}

#[test]
fn hostile_frames_before_and_after_handshake() {
    // A message before READY.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    assert_eq!(
        conn.handle_input(now(), &mut b"\x00\x01x".to_vec()),
        Err(Error::UnexpectedMessage)
    );
    // A PING before READY.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    assert_eq!(
        conn.handle_input(now(), &mut b"\x04\x07\x04PING\x00\x00".to_vec()),
        Err(Error::UnexpectedCommand)
    );
    // With MAXMSGSIZE set, a header announcing 2^62 bytes fails at once, before any body
    // is buffered.
    let mut cfg = Config::new(SocketType::Pair);
    cfg.max_message_size = Some(1 << 20);
    let mut conn = established(cfg, SocketType::Pair);
    let mut huge = [0x02, 0x40, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        conn.handle_input(now(), &mut huge),
        Err(Error::MessageTooLarge { limit: 1 << 20 })
    );
    // Unknown commands after the handshake are ignored, like libzmq.
    let mut conn = established(Config::new(SocketType::Pair), SocketType::Pair);
    assert!(
        feed(&mut conn, b"\x04\x07\x05HELLOx\x04\x06\x05READY\x00\x01y")
            .into_iter()
            .eq([("frame".to_string(), b"y".to_vec())])
    );
    // A command frame larger than the command limit.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    let mut big_cmd = vec![0x06, 0, 0, 0, 0, 0, 1, 0, 1];
    assert!(matches!(
        conn.handle_input(now(), &mut big_cmd),
        Err(Error::Codec(CodecError::FrameTooLarge { .. }))
    ));
}

#[test]
fn huge_announced_frame_allocates_nothing_up_front() {
    // Without MAXMSGSIZE (libzmq's default), a frame no address space could hold (2^62
    // bytes) is refused from its header alone...
    let ready = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PAIR";
    let mut b = zmtp_proto::Buffered::new(Config::new(SocketType::Pair), now());
    b.receive(&LIBZMQ_GREETING);
    b.receive(ready);
    b.receive(&[0x02, 0x40, 0, 0, 0, 0, 0, 0, 0]);
    assert!(matches!(
        b.poll_item(now()),
        Ok(Some(zmtp_proto::OwnedItem::Ready(_)))
    ));
    assert_eq!(
        b.poll_item(now()),
        Err(Error::Codec(CodecError::FrameTooLarge {
            size: 1 << 62,
            limit: zmtp_proto::MAX_FRAME_SIZE
        }))
    );
    assert!(
        b.read_buf().capacity() < 1 << 20,
        "{}",
        b.read_buf().capacity()
    );
    // ...and a large one that could be real (1 TiB) is merely incomplete: the buffered layer
    // grows its receive buffer only with bytes that actually arrive.
    let mut b = zmtp_proto::Buffered::new(Config::new(SocketType::Pair), now());
    b.receive(&LIBZMQ_GREETING);
    b.receive(ready);
    b.receive(&[0x02, 0, 0, 1, 0, 0, 0, 0, 0]);
    assert!(matches!(
        b.poll_item(now()),
        Ok(Some(zmtp_proto::OwnedItem::Ready(_)))
    ));
    assert_eq!(b.poll_item(now()), Ok(None));
    assert!(
        b.read_buf().capacity() < 1 << 20,
        "{}",
        b.read_buf().capacity()
    );
}

#[test]
fn no_event_is_lost_in_a_burst() {
    // READY followed by many PINGs in one read: every notice is still reported.
    let mut conn = Connection::new(Config::new(SocketType::Pair), now());
    feed(&mut conn, &LIBZMQ_GREETING);
    let mut burst = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PAIR".to_vec();
    for _ in 0..20 {
        burst.extend_from_slice(b"\x04\x07\x04PING\x00\x00");
    }
    burst.extend_from_slice(b"\x04\x05\x04PONG");
    feed(&mut conn, &burst);
    let events: Vec<Event> = std::iter::from_fn(|| conn.poll_event()).collect();
    assert_eq!(events.len(), 22);
    assert!(matches!(events[0], Event::HandshakeSucceeded { .. }));
    assert_eq!(
        events.iter().filter(|e| **e == Event::PingReceived).count(),
        20
    );
    assert_eq!(events[21], Event::PongReceived);
    // Greeting, READY, then a PONG for each PING, up to 8 waiting at once (libzmq writes
    // each as it reads the PING, and keeps one pending when it cannot write).
    assert_eq!(transmit(&mut conn).len(), 64 + 28 + 8 * 7);
}

#[test]
fn a_taken_read_buffer_keeps_a_partial_frame_and_comes_back_with_the_rest() {
    // A completion-based driver takes the receive buffer out for a read the kernel
    // finishes later: a partial frame it held stays in front of the bytes read.
    let ready = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PAIR";
    let mut b = zmtp_proto::Buffered::new(Config::new(SocketType::Pair), now());
    b.receive(&LIBZMQ_GREETING);
    b.receive(ready);
    b.receive(&[0x00, 0x05, b'h', b'e']);
    assert!(matches!(
        b.poll_item(now()),
        Ok(Some(zmtp_proto::OwnedItem::Ready(_)))
    ));
    assert_eq!(b.poll_item(now()), Ok(None), "the frame is incomplete");
    let mut buf = b.take_read_buf();
    assert!(buf.capacity() - buf.len() >= 3, "room for the next read");
    assert_eq!(b.buffered_input(), 0, "nothing left behind");
    // The kernel appends what it read.
    buf.extend_from_slice(b"llo\x00\x01!");
    b.restore_read_buf(buf);
    let body = |item| match item {
        Ok(Some(zmtp_proto::OwnedItem::Frame { body, more: false })) => body,
        other => panic!("{other:?}"),
    };
    assert_eq!(&body(b.poll_item(now()))[..], b"hello");
    assert_eq!(&body(b.poll_item(now()))[..], b"!");
    // Bytes received while it was out came later than those read into it.
    let buf = b.take_read_buf();
    b.receive(b"?");
    let mut read = buf;
    read.extend_from_slice(&[0x00, 0x02, b'o', b'k', 0x00, 0x01]);
    b.restore_read_buf(read);
    assert_eq!(&body(b.poll_item(now()))[..], b"ok");
    assert_eq!(&body(b.poll_item(now()))[..], b"?");
}
