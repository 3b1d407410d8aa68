//! Two connections in memory with virtual time.

use std::time::Duration;

use zmtp_proto::codec::Version;
use zmtp_proto::{Config, Error, Event, OwnedItem, SocketType};
use zmtp_testkit::pair::Pair;

fn cfg(t: SocketType) -> Config {
    Config::new(t)
}

#[test]
fn handshake_and_multipart_both_ways() {
    let mut a = cfg(SocketType::Dealer);
    a.set_identity(b"alice").unwrap();
    a.add_property(b"X-Color", b"blue").unwrap();
    let mut p = Pair::new(a, cfg(SocketType::Router));
    p.drive();
    assert!(p.a.established() && p.b.established());
    assert_eq!(p.b.buf.connection().peer_identity(), b"alice");
    assert_eq!(
        p.a.buf.connection().peer_socket_type(),
        Some(SocketType::Router)
    );
    assert!(p.a.events.contains(&Event::HandshakeSucceeded {
        peer_socket_type: Some(SocketType::Router),
        version: Version::V3_1,
    }));
    // The peer's READY metadata is handed out, application properties included.
    let ready = p.b.items.iter().find_map(|i| match i {
        OwnedItem::Ready(m) => Some(m.clone()),
        _ => None,
    });
    let ready = ready.expect("READY item");
    let meta = zmtp_proto::codec::Metadata::parse(&ready).unwrap();
    assert_eq!(meta.get(b"X-Color"), Some(&b"blue"[..]));
    assert_eq!(meta.get(b"Socket-Type"), Some(&b"DEALER"[..]));

    let big = vec![0xAB; 1 << 20];
    p.a.send(&[b"", b"head", b"", &big, b"tail"]);
    p.a.send(&[b""]);
    p.b.send(&[&big, b""]);
    p.drive();
    assert_eq!(
        p.b.messages(),
        vec![
            vec![
                vec![],
                b"head".to_vec(),
                vec![],
                big.clone(),
                b"tail".to_vec()
            ],
            vec![vec![]],
        ]
    );
    assert_eq!(p.a.messages(), vec![vec![big, vec![]]]);
    assert!(p.a.error.is_none() && p.b.error.is_none());
}

#[test]
fn send_before_handshake_is_not_ready() {
    let mut p = Pair::new(cfg(SocketType::Push), cfg(SocketType::Pull));
    assert_eq!(
        p.a.buf.send_frame(b"x", false),
        Err(zmtp_proto::EncodeError::NotReady)
    );
    p.drive();
    p.a.send(&[b"x"]);
    p.drive();
    assert_eq!(p.b.messages(), vec![vec![b"x".to_vec()]]);
}

#[test]
fn silent_peer_trips_heartbeat_timeout() {
    let mut a = cfg(SocketType::Pair);
    a.heartbeat_interval = Some(Duration::from_secs(1));
    a.heartbeat_timeout = Some(Duration::from_secs(3));
    let mut p = Pair::new(a, cfg(SocketType::Pair));
    p.drive();
    // While both talk, PINGs are answered and nothing fails.
    p.run_for(Duration::from_secs(10));
    assert!(p.a.error.is_none(), "{:?}", p.a.error);
    let pongs =
        p.a.events
            .iter()
            .filter(|e| **e == Event::PongReceived)
            .count();
    assert!(pongs >= 9, "pongs: {pongs}");
    assert!(p.b.events.contains(&Event::PingReceived));

    p.b.talks = false;
    p.run_for(Duration::from_secs(10));
    assert_eq!(p.a.error, Some(Error::HeartbeatTimeout));
    assert_eq!(
        p.a.buf.connection().poll_timeout(),
        None,
        "a failed connection arms no timer"
    );
    assert!(p.b.error.is_none());
}

#[test]
fn heartbeat_timeout_fires_on_time() {
    let mut a = cfg(SocketType::Pair);
    a.heartbeat_interval = Some(Duration::from_secs(1));
    let mut p = Pair::new(a, cfg(SocketType::Pair));
    p.drive();
    let start = p.now;
    p.b.talks = false;
    while p.a.error.is_none() {
        assert!(p.step(), "a timer must stay armed until the failure");
    }
    assert_eq!(p.a.error, Some(Error::HeartbeatTimeout));
    // First PING at 1 s, timeout (= interval) 1 s later.
    assert_eq!(
        p.now.saturating_duration_since(start),
        Duration::from_secs(2)
    );
}

#[test]
fn peer_ttl_expires_after_silence() {
    let mut a = cfg(SocketType::Pair);
    a.heartbeat_interval = Some(Duration::from_secs(1));
    a.heartbeat_timeout = Some(Duration::from_secs(100));
    a.heartbeat_ttl = Some(Duration::from_millis(2500));
    let mut p = Pair::new(a, cfg(SocketType::Pair));
    p.drive();
    p.run_for(Duration::from_millis(1500));
    assert!(p.b.events.contains(&Event::PingReceived));
    assert!(p.b.error.is_none());
    // a stops talking: b gives up 2.5 s after the last PING it saw.
    p.a.talks = false;
    p.run_for(Duration::from_secs(5));
    assert_eq!(p.b.error, Some(Error::HeartbeatTtlExpired));
}

#[test]
fn unfinished_greeting_trips_handshake_deadline() {
    let mut p = Pair::new(cfg(SocketType::Pair), cfg(SocketType::Pair));
    // b never says anything: a sees no greeting at all.
    p.b.talks = false;
    let start = p.now;
    while p.a.error.is_none() {
        assert!(p.step());
    }
    assert_eq!(p.a.error, Some(Error::HandshakeTimeout));
    assert_eq!(
        p.now.saturating_duration_since(start),
        Duration::from_secs(30)
    );
}

#[test]
fn partial_greeting_trips_handshake_deadline() {
    let mut c = cfg(SocketType::Pair);
    c.handshake_timeout = Some(Duration::from_secs(5));
    let mut p = Pair::new(c, cfg(SocketType::Pair));
    p.b.talks = false;
    // Half a signature trickles in, then nothing.
    p.a.buf.receive(&[0xFF, 0, 0, 0, 0]);
    p.drive();
    assert!(p.a.error.is_none());
    p.run_for(Duration::from_secs(6));
    assert_eq!(p.a.error, Some(Error::HandshakeTimeout));
}

#[test]
fn mismatched_socket_types_fail_typed() {
    let mut p = Pair::new(cfg(SocketType::Push), cfg(SocketType::Push));
    p.drive();
    assert_eq!(
        p.a.error,
        Some(Error::IncompatibleSocketType {
            peer: SocketType::Push
        })
    );
    let mut p = Pair::new(cfg(SocketType::Req), cfg(SocketType::Pub));
    p.drive();
    assert_eq!(
        p.a.error,
        Some(Error::IncompatibleSocketType {
            peer: SocketType::Pub
        })
    );
    assert_eq!(
        p.b.error,
        Some(Error::IncompatibleSocketType {
            peer: SocketType::Req
        })
    );
}

#[test]
fn errors_are_sticky() {
    let mut p = Pair::new(cfg(SocketType::Push), cfg(SocketType::Push));
    p.drive();
    let err = p.a.error.clone().unwrap();
    let conn = p.a.buf.connection_mut();
    assert_eq!(conn.handle_timeout(p.now), Err(err.clone()));
    assert_eq!(conn.handle_input(p.now, &mut [0u8; 4]), Err(err.clone()));
    assert_eq!(
        conn.send_frame(b"x", false, &mut [0u8; 16]),
        Err(zmtp_proto::EncodeError::Closed(err))
    );
    assert_eq!(conn.poll_transmit(&mut [0u8; 128]), Ok(0));
}

#[test]
fn zmtp30_peer_gets_subscriptions_as_messages() {
    for (a_version, b_version) in [
        (Version::V3_0, Version::V3_1),
        (Version::V3_1, Version::V3_0),
        (Version::V3_1, Version::V3_1),
    ] {
        let mut sub = cfg(SocketType::Sub);
        sub.version = a_version;
        let mut publ = cfg(SocketType::Pub);
        publ.version = b_version;
        let mut p = Pair::new(sub, publ);
        p.drive();
        let expected = if a_version == Version::V3_0 || b_version == Version::V3_0 {
            Version::V3_0
        } else {
            Version::V3_1
        };
        assert_eq!(p.a.buf.connection().version(), expected);
        assert_eq!(p.b.buf.connection().version(), expected);
        p.a.buf.send_subscribe(b"weather").unwrap();
        p.a.buf.send_cancel(b"news").unwrap();
        p.drive();
        assert_eq!(
            p.b.items[1..].to_vec(),
            vec![
                OwnedItem::Subscribe(bytes_of(b"weather")),
                OwnedItem::Cancel(bytes_of(b"news")),
            ]
        );
    }
}

#[test]
fn message_size_limit_counts_all_frames() {
    let mut b = cfg(SocketType::Pull);
    b.max_message_size = Some(100);
    let mut p = Pair::new(cfg(SocketType::Push), b);
    p.drive();
    p.a.send(&[&[0u8; 60], &[0u8; 40]]);
    p.drive();
    assert_eq!(p.b.messages().len(), 1);
    p.a.send(&[&[0u8; 60], &[0u8; 41]]);
    p.drive();
    assert_eq!(p.b.error, Some(Error::MessageTooLarge { limit: 100 }));
    // The partial message was not completed.
    assert_eq!(p.b.messages().len(), 1);
}

fn bytes_of(b: &[u8]) -> bytes::Bytes {
    bytes::Bytes::copy_from_slice(b)
}

#[test]
fn shared_chunks_hand_large_bodies_over_without_copying() {
    use zmtp_proto::{Buffered, Instant, SHARED_BODY_MIN};
    let now = Instant::ZERO;
    let mut a = Buffered::new(cfg(SocketType::Push), now);
    let mut b = Buffered::new(cfg(SocketType::Pull), now);
    // Handshake by shared chunks too.
    fn shuttle(from: &mut Buffered, to: &mut Buffered) {
        let now = Instant::ZERO;
        from.poll_transmit();
        let mut chunks = Vec::new();
        from.transmit_bytes(|c| chunks.push(c));
        from.advance(from.queued_len());
        for c in chunks {
            let _ = to.receive_shared(now, c).unwrap();
            while to.poll_item(now).unwrap().is_some() {}
        }
    }
    for _ in 0..4 {
        shuttle(&mut a, &mut b);
        shuttle(&mut b, &mut a);
    }
    assert!(a.connection().is_established() && b.connection().is_established());
    let big = bytes::Bytes::from(vec![5u8; SHARED_BODY_MIN * 2]);
    a.send_frame(b"small", true).unwrap();
    a.send_frame_shared(&big, false).unwrap();
    let mut chunks = Vec::new();
    a.transmit_bytes(|c| chunks.push(c));
    a.advance(a.queued_len());
    assert_eq!(chunks.len(), 2, "encoded bytes, then the body as it is");
    let mut frames = Vec::new();
    for c in chunks {
        if let Some(OwnedItem::Frame { body, .. }) = b.receive_shared(Instant::ZERO, c).unwrap() {
            frames.push(body);
        }
        while let Some(OwnedItem::Frame { body, .. }) = b.poll_item(Instant::ZERO).unwrap() {
            frames.push(body);
        }
    }
    assert_eq!(frames.len(), 2);
    assert_eq!(&frames[0][..], b"small");
    assert_eq!(frames[1].as_ptr(), big.as_ptr(), "the body was not copied");
}

#[test]
fn endless_multipart_is_bounded_by_frame_count_and_size() {
    // Empty frames cost memory too: the frame count is capped.
    let mut b = cfg(SocketType::Pull);
    b.max_message_frames = Some(1000);
    let mut p = Pair::new(cfg(SocketType::Push), b);
    p.drive();
    for _ in 0..1000 {
        p.a.buf.send_frame(b"", true).unwrap();
    }
    p.drive();
    assert_eq!(p.b.error, None, "1000 frames are allowed");
    p.a.buf.send_frame(b"", true).unwrap();
    p.drive();
    assert_eq!(p.b.error, Some(Error::TooManyFrames { limit: 1000 }));
    assert!(p.b.messages().is_empty(), "no half message is delivered");
    // With MAXMSGSIZE, frames that keep coming are refused at the header that would cross
    // the limit, before their bodies are buffered.
    let mut b = cfg(SocketType::Pull);
    b.max_message_size = Some(10_000);
    let mut p = Pair::new(cfg(SocketType::Push), b);
    p.drive();
    for _ in 0..9 {
        p.a.buf.send_frame(&[1u8; 1000], true).unwrap();
    }
    p.drive();
    assert_eq!(p.b.error, None);
    // The header of a 1001-byte frame (MORE | LONG), straight into the receiver.
    p.b.buf.receive(&[0x03, 0, 0, 0, 0, 0, 0, 0x03, 0xe9]);
    p.drive();
    assert_eq!(p.b.error, Some(Error::MessageTooLarge { limit: 10_000 }));
    assert!(p.b.buf.buffered_input() < 1001);
}

/// The PONG frames in `bytes` (short command frames, as a NULL connection writes them):
/// each one's context.
fn pongs(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let [flags, len, body @ ..] = rest {
        let len = usize::from(*len);
        assert_eq!(flags & 0x04, 0x04, "a command frame");
        let (frame, after) = body.split_at(len);
        assert_eq!(&frame[..5], b"\x04PONG");
        out.push(frame[5..].to_vec());
        rest = after;
    }
    out
}

/// Every PING gets its PONG, in order, with its context cut to 16 bytes (libzmq's
/// test_heartbeats sends two at once and reads both); a flood of PINGs not read back
/// leaves at most 8 PONGs waiting, the last one for the latest PING.
#[test]
fn every_ping_gets_its_pong_up_to_a_bound() {
    let mut p = Pair::new(cfg(SocketType::Dealer), cfg(SocketType::Router));
    p.drive();
    assert!(p.a.established() && p.b.established());
    let ping = |context: &[u8]| {
        let mut f = vec![0x04, (7 + context.len()) as u8, 4];
        f.extend_from_slice(b"PING\x00\x00");
        f.extend_from_slice(context);
        f
    };
    let long = [b"LOL".as_slice(), &[b'z'; 55]].concat();
    let now = p.now;
    p.b.feed(now, &[ping(b"LOL"), ping(&long)].concat());
    let sent = p.b.pump(now);
    assert_eq!(pongs(&sent), vec![b"LOL".to_vec(), long[..16].to_vec()]);

    let flood: Vec<u8> = (0..20u8).flat_map(|i| ping(&[i])).collect();
    p.b.feed(now, &flood);
    let sent = p.b.pump(now);
    let got = pongs(&sent);
    assert_eq!(got.len(), 8);
    assert_eq!(got[..7], (0..7u8).map(|i| vec![i]).collect::<Vec<_>>()[..]);
    assert_eq!(got[7], vec![19]);
    assert!(p.b.error.is_none());
}
