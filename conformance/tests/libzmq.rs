//! Interop scenarios against the system libzmq, each run in both directions: libzmq binds
//! and we connect (`*_we_connect`), and we listen and libzmq connects (`*_libzmq_connects`).
//!
//! Every wait is bounded by a deadline; nothing sleeps to make an assertion true.

use std::ffi::c_int;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant as StdInstant};

use zmtp_conformance::driver::{Driver, DriverError, Handshake};
use zmtp_conformance::ffi::{
    self, Ctx, ZSocket, ZMQ_DEALER, ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT, ZMQ_HEARTBEAT_TTL,
    ZMQ_PAIR, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH, ZMQ_RCVTIMEO, ZMQ_ROUTER, ZMQ_ROUTING_ID, ZMQ_SNDTIMEO,
    ZMQ_SUB, ZMQ_XSUB,
};
use zmtp_conformance::{both_directions, Direction};
use zmtp_proto::codec::Version;
use zmtp_proto::{Config, Error, OwnedItem, SocketType};

/// Upper bound for any single wait in these tests.
const TIMEOUT: Duration = Duration::from_secs(5);
/// libzmq's blocking send/receive timeout, in milliseconds.
const ZMQ_TIMEOUT_MS: c_int = 5000;

/// A libzmq socket of type `kind`, configured by `setup` (before bind/connect), connected to
/// a fresh [`Driver`] running `config` in direction `dir`. The handshake is not awaited.
fn open<'c>(
    ctx: &'c Ctx,
    dir: Direction,
    kind: c_int,
    config: Config,
    setup: impl FnOnce(&ZSocket<'c>),
) -> (ZSocket<'c>, Driver) {
    let z = ctx.socket(kind).expect("zmq_socket");
    z.set_int(ZMQ_SNDTIMEO, ZMQ_TIMEOUT_MS)
        .expect("ZMQ_SNDTIMEO");
    z.set_int(ZMQ_RCVTIMEO, ZMQ_TIMEOUT_MS)
        .expect("ZMQ_RCVTIMEO");
    setup(&z);
    let us = match dir {
        Direction::WeConnect => {
            z.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let endpoint = z.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            let port = ffi::endpoint_port(&endpoint).expect("port in ZMQ_LAST_ENDPOINT");
            Driver::connect(SocketAddr::from(([127, 0, 0, 1], port)), config)
        }
        Direction::LibzmqConnects => {
            let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
            let port = listener.local_addr().expect("local address").port();
            z.connect(&format!("tcp://127.0.0.1:{port}"))
                .expect("zmq_connect");
            Driver::accept(&listener, config, TIMEOUT)
        }
    };
    (z, us.expect("open the TCP connection"))
}

/// Like [`open`], then wait for the handshake and check the peer's socket type.
fn established<'c>(
    ctx: &'c Ctx,
    dir: Direction,
    kind: c_int,
    config: Config,
    setup: impl FnOnce(&ZSocket<'c>),
) -> (ZSocket<'c>, Driver, Handshake) {
    let expected = config.version;
    let (z, mut us) = open(ctx, dir, kind, config, setup);
    let hs = us.wait_handshake(TIMEOUT).expect("handshake with libzmq");
    assert_eq!(
        hs.peer_socket_type.map(|t| t as c_int),
        Some(kind),
        "peer Socket-Type"
    );
    assert_eq!(hs.version, expected, "negotiated version");
    assert_eq!(us.connection().version(), expected);
    assert!(us.connection().is_established());
    (z, us, hs)
}

/// Receive one message on the libzmq socket while keeping our side pumping (so that
/// heartbeats are answered and nothing we queued is left unwritten).
fn zrecv(z: &ZSocket<'_>, us: &mut Driver) -> Vec<Vec<u8>> {
    let deadline = StdInstant::now() + TIMEOUT;
    loop {
        match z.try_recv_multipart() {
            Ok(m) => return m,
            Err(e) if e.is_again() => {}
            Err(e) => panic!("libzmq receive failed: {e}"),
        }
        assert!(
            StdInstant::now() < deadline,
            "libzmq received nothing within {TIMEOUT:?}"
        );
        us.pump_for(Duration::from_millis(2))
            .expect("our side failed while libzmq was receiving");
    }
}

/// Send one message from libzmq (blocks at most `ZMQ_SNDTIMEO`).
fn zsend(z: &ZSocket<'_>, frames: &[&[u8]]) {
    z.send_multipart(frames).expect("libzmq send");
}

fn owned(frames: &[&[u8]]) -> Vec<Vec<u8>> {
    frames.iter().map(|f| f.to_vec()).collect()
}

/// Our message reaches libzmq intact, and libzmq's reaches us intact.
fn exchange(z: &ZSocket<'_>, us: &mut Driver, ours: &[&[u8]], theirs: &[&[u8]]) {
    us.send_multipart(ours).expect("send from our side");
    assert_eq!(zrecv(z, us), owned(ours), "what libzmq received");
    zsend(z, theirs);
    assert_eq!(
        us.recv_multipart(TIMEOUT).expect("receive on our side"),
        owned(theirs),
        "what we received"
    );
}

// ---------------------------------------------------------------------------------------
// NULL handshake and basic message flow for the common socket pairs.

fn pair(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, Config::new(SocketType::Pair), |_| {});
    exchange(&z, &mut us, &[b"hello"], &[b"world"]);
    exchange(&z, &mut us, &[b"a", b"b"], &[b"c", b"d", b"e"]);
}

fn dealer_dealer(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(
        &ctx,
        dir,
        ZMQ_DEALER,
        Config::new(SocketType::Dealer),
        |_| {},
    );
    exchange(&z, &mut us, &[b"", b"request"], &[b"", b"reply"]);
}

/// Our DEALER with an identity against a libzmq ROUTER: the ROUTER's envelope carries the
/// identity from our READY, and a reply routed by it reaches us.
fn dealer_router(dir: Direction) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Dealer);
    config.set_identity(b"our-dealer").expect("identity");
    let (z, mut us, _) = established(&ctx, dir, ZMQ_ROUTER, config, |_| {});
    assert_eq!(
        us.connection().peer_identity(),
        b"",
        "a ROUTER without ZMQ_ROUTING_ID sends an empty Identity"
    );
    us.send_multipart(&[b"", b"request"]).expect("send");
    let envelope = zrecv(&z, &mut us);
    assert_eq!(envelope, owned(&[b"our-dealer", b"", b"request"]));
    zsend(&z, &[b"our-dealer", b"", b"reply"]);
    assert_eq!(
        us.recv_multipart(TIMEOUT).expect("reply"),
        owned(&[b"", b"reply"])
    );
}

/// Our ROUTER against a libzmq DEALER with `ZMQ_ROUTING_ID`: we learn the identity from its
/// READY; frames pass unchanged (the envelope is socket-level, above the connection).
fn router_dealer(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(
        &ctx,
        dir,
        ZMQ_DEALER,
        Config::new(SocketType::Router),
        |z| {
            z.set_bytes(ZMQ_ROUTING_ID, b"their-dealer")
                .expect("ZMQ_ROUTING_ID")
        },
    );
    assert_eq!(us.connection().peer_identity(), b"their-dealer");
    exchange(&z, &mut us, &[b"", b"reply"], &[b"", b"request"]);
}

fn push_to_libzmq_pull(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PULL, Config::new(SocketType::Push), |_| {});
    for i in 0..3u8 {
        us.send_multipart(&[b"job", &[i]]).expect("push");
    }
    for i in 0..3u8 {
        assert_eq!(zrecv(&z, &mut us), owned(&[b"job", &[i]]));
    }
}

fn pull_from_libzmq_push(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PUSH, Config::new(SocketType::Pull), |_| {});
    for i in 0..3u8 {
        zsend(&z, &[b"job", &[i]]);
    }
    for i in 0..3u8 {
        assert_eq!(
            us.recv_multipart(TIMEOUT).expect("pull"),
            owned(&[b"job", &[i]])
        );
    }
}

// ---------------------------------------------------------------------------------------
// Multipart messages: empty frames, the short/long header boundary and a 1 MiB frame.

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn multipart_frames() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        b"header".to_vec(),
        Vec::new(),
        pattern(255, 1),
        pattern(256, 2),
        pattern(1 << 20, 3),
        Vec::new(),
    ]
}

fn multipart_we_send(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, Config::new(SocketType::Pair), |_| {});
    let frames = multipart_frames();
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    us.send_multipart(&refs).expect("send");
    assert_eq!(zrecv(&z, &mut us), frames);
    us.send_multipart(&[b""])
        .expect("send a single empty frame");
    assert_eq!(zrecv(&z, &mut us), vec![Vec::<u8>::new()]);
}

fn multipart_libzmq_sends(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, Config::new(SocketType::Pair), |_| {});
    let frames = multipart_frames();
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    zsend(&z, &refs);
    assert_eq!(us.recv_multipart(TIMEOUT).expect("receive"), frames);
    zsend(&z, &[b""]);
    assert_eq!(
        us.recv_multipart(TIMEOUT).expect("receive"),
        vec![Vec::<u8>::new()]
    );
}

// ---------------------------------------------------------------------------------------
// Heartbeats.

/// libzmq PINGs every 50 ms and closes after 250 ms without traffic following a PING.
fn libzmq_heartbeats(z: &ZSocket<'_>) {
    z.set_int(ZMQ_HEARTBEAT_IVL, 50).expect("ZMQ_HEARTBEAT_IVL");
    z.set_int(ZMQ_HEARTBEAT_TIMEOUT, 250)
        .expect("ZMQ_HEARTBEAT_TIMEOUT");
    z.set_int(ZMQ_HEARTBEAT_TTL, 2000)
        .expect("ZMQ_HEARTBEAT_TTL");
}

/// We only answer PINGs for a second (four heartbeat timeouts): libzmq must get our PONGs,
/// otherwise it would have closed the connection and neither message below would pass.
fn libzmq_pings_answered(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, _) = established(
        &ctx,
        dir,
        ZMQ_PAIR,
        Config::new(SocketType::Pair),
        libzmq_heartbeats,
    );
    us.pump_for(Duration::from_secs(1))
        .expect("connection alive while answering PINGs");
    assert!(
        us.pings_received() >= 5,
        "expected several PINGs in 1 s at a 50 ms interval, got {}",
        us.pings_received()
    );
    assert_eq!(us.failure(), None);
    exchange(&z, &mut us, &[b"still"], &[b"alive"]);
}

/// Control for the test above: when we stay silent (no PONGs), libzmq does close.
fn libzmq_closes_silent_peer(dir: Direction) {
    let ctx = Ctx::new();
    let (_z, mut us, _) = established(
        &ctx,
        dir,
        ZMQ_PAIR,
        Config::new(SocketType::Pair),
        libzmq_heartbeats,
    );
    // Not an assertion: this is the condition under test (no reads, so no PONGs).
    std::thread::sleep(Duration::from_secs(1));
    let deadline = StdInstant::now() + TIMEOUT;
    let err = loop {
        match us.step(Duration::from_millis(5)) {
            Ok(()) => assert!(
                StdInstant::now() < deadline,
                "libzmq kept a silent peer connected"
            ),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(
            &err,
            DriverError::PeerClosed
                | DriverError::Io {
                    kind: std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionAborted,
                    ..
                }
        ),
        "expected libzmq to close the connection, got {err}"
    );
    assert!(us.pings_received() >= 1, "libzmq sent PINGs before closing");
}

/// We PING every 50 ms; libzmq answers each with PONG.
fn our_pings_answered(dir: Direction) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Pair);
    config.heartbeat_interval = Some(Duration::from_millis(50));
    // Generous, so that a descheduled test thread on a busy machine cannot fail the
    // connection before it reads a PONG already waiting in the socket.
    config.heartbeat_timeout = Some(Duration::from_secs(2));
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, config, |_| {});
    us.pump_for(Duration::from_millis(500))
        .expect("connection alive while PINGing");
    assert!(
        us.pongs_received() >= 3,
        "expected several PONGs in 500 ms at a 50 ms interval, got {}",
        us.pongs_received()
    );
    exchange(&z, &mut us, &[b"ping"], &[b"pong"]);
}

// ---------------------------------------------------------------------------------------
// ZMTP 3.0 greeting and subscriptions.

fn v30_pair(dir: Direction) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Pair);
    config.version = Version::V3_0;
    let (z, mut us, hs) = established(&ctx, dir, ZMQ_PAIR, config, |_| {});
    assert_eq!(hs.version, Version::V3_0);
    exchange(&z, &mut us, &[b"three", b"point"], &[b"zero"]);
}

/// Heartbeats over 3.0: libzmq PINGs 3.0 peers too, and answers our PINGs.
fn v30_heartbeats(dir: Direction) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Pair);
    config.version = Version::V3_0;
    config.heartbeat_interval = Some(Duration::from_millis(50));
    config.heartbeat_timeout = Some(Duration::from_secs(2));
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, config, libzmq_heartbeats);
    us.pump_for(Duration::from_millis(500))
        .expect("connection alive with heartbeats both ways");
    assert!(us.pings_received() >= 3, "PINGs: {}", us.pings_received());
    assert!(us.pongs_received() >= 3, "PONGs: {}", us.pongs_received());
    exchange(&z, &mut us, &[b"beat"], &[b"beat"]);
}

/// Our SUB (announcing `version`) subscribes to "A" on a libzmq PUB: over 3.1 as a
/// SUBSCRIBE command, over 3.0 as a `0x01 A` message. libzmq must apply the filter.
fn our_sub_filters(dir: Direction, version: Version) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Sub);
    config.version = version;
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PUB, config, |_| {});
    us.subscribe(b"A").expect("subscribe");

    // A PUB drops everything until it has applied the subscription, which happens some
    // time after it arrives: publish a non-matching and a matching message until a
    // matching one gets through.
    let deadline = StdInstant::now() + TIMEOUT;
    let mut received = Vec::new();
    while received.is_empty() {
        assert!(
            StdInstant::now() < deadline,
            "no published message reached our SUB"
        );
        zsend(&z, &[b"B miss"]);
        zsend(&z, &[b"A hit", b"second frame"]);
        us.pump_for(Duration::from_millis(10)).expect("pump");
        received.extend(std::iter::from_fn(|| us.try_recv_multipart()));
    }
    // With the subscription in force, publish non-matching messages before a final
    // matching one. One connection keeps order, so anything unfiltered would arrive first.
    zsend(&z, &[b"B after"]);
    zsend(&z, &[b"a lowercase"]);
    zsend(&z, &[b"A end"]);
    loop {
        let m = us.recv_multipart(TIMEOUT).expect("the final message");
        let done = m == owned(&[b"A end"]);
        received.push(m);
        if done {
            break;
        }
    }
    for m in &received {
        assert!(
            m[0].starts_with(b"A"),
            "received a message that does not match the subscription: {m:?}"
        );
    }
}

/// A libzmq SUB subscribes to our PUB; we see the topic (command form over 3.1, `0x01`
/// message over 3.0) and what we publish reaches it.
fn libzmq_sub_to_our_pub(dir: Direction, version: Version) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Pub);
    config.version = version;
    let (z, mut us, _) = established(&ctx, dir, ZMQ_SUB, config, |z| {
        z.subscribe(b"weather").expect("ZMQ_SUBSCRIBE")
    });
    // libzmq sends the subscription from the application thread the next time it is
    // called, so keep calling into the socket while we wait.
    let deadline = StdInstant::now() + TIMEOUT;
    let item = loop {
        if let Some(item) = us.try_recv_command() {
            break item;
        }
        assert!(
            StdInstant::now() < deadline,
            "no subscription from the libzmq SUB"
        );
        match z.try_recv_multipart() {
            Err(e) if e.is_again() => {}
            other => panic!("unexpected message on the libzmq SUB: {other:?}"),
        }
        us.pump_for(Duration::from_millis(5)).expect("pump");
    };
    match item {
        OwnedItem::Subscribe(topic) => assert_eq!(&topic[..], b"weather"),
        other => panic!("expected a subscription, got {other:?}"),
    }
    us.send_multipart(&[b"weather", b"sunny"]).expect("publish");
    assert_eq!(zrecv(&z, &mut us), owned(&[b"weather", b"sunny"]));
}

/// A libzmq XSUB sends subscriptions as `0x01`-prefixed messages even over 3.1; our PUB
/// reports them as subscriptions, and `0x00` ones as cancellations.
fn libzmq_xsub_to_our_pub(dir: Direction) {
    let ctx = Ctx::new();
    let (z, mut us, hs) = established(&ctx, dir, ZMQ_XSUB, Config::new(SocketType::Pub), |_| {});
    assert_eq!(hs.version, Version::V3_1);
    zsend(&z, &[b"\x01news"]);
    // If our handshake finished before libzmq attached the new pipe to the socket, the
    // subscription waits in its trie until the pipe is attached, which libzmq does (and
    // then replays the subscriptions) the next time the application thread calls into the
    // socket: keep calling while we wait.
    let deadline = StdInstant::now() + TIMEOUT;
    let item = loop {
        if let Some(item) = us.try_recv_command() {
            break item;
        }
        assert!(
            StdInstant::now() < deadline,
            "no subscription from the libzmq XSUB"
        );
        match z.try_recv_multipart() {
            Err(e) if e.is_again() => {}
            other => panic!("unexpected message on the libzmq XSUB: {other:?}"),
        }
        us.pump_for(Duration::from_millis(5)).expect("pump");
    };
    match item {
        OwnedItem::Subscribe(topic) => assert_eq!(&topic[..], b"news"),
        other => panic!("expected a subscription, got {other:?}"),
    }
    zsend(&z, &[b"\x00news"]);
    match us.recv_command(TIMEOUT).expect("cancellation") {
        OwnedItem::Cancel(topic) => assert_eq!(&topic[..], b"news"),
        other => panic!("expected a cancellation, got {other:?}"),
    }
    assert_eq!(
        us.try_recv_multipart(),
        None,
        "no data message was delivered"
    );
}

// ---------------------------------------------------------------------------------------
// Failures.

/// Our PUSH against a libzmq PUSH: the handshake fails on our side with the typed error.
///
/// libzmq checks our READY as soon as it arrives and closes the connection; its own READY
/// has gone out only if it finished the greeting before our READY arrived. We therefore
/// hold our READY back until libzmq's has arrived, so that our check is what fails.
fn incompatible_socket_type(dir: Direction) {
    let ctx = Ctx::new();
    let (_z, mut us) = open(&ctx, dir, ZMQ_PUSH, Config::new(SocketType::Push), |_| {});
    us.defer_ready();
    match us.wait_handshake(TIMEOUT) {
        Err(DriverError::Protocol(Error::IncompatibleSocketType { peer })) => {
            assert_eq!(peer, SocketType::Push)
        }
        other => panic!("expected IncompatibleSocketType, got {other:?}"),
    }
    assert_eq!(
        us.connection().error(),
        Some(&Error::IncompatibleSocketType {
            peer: SocketType::Push
        })
    );
    assert!(!us.connection().is_established());
}

/// The same mismatch with our READY sent eagerly, right after our greeting. The handshake
/// never succeeds: we either reject libzmq's READY (typed error) or, when libzmq read our
/// READY in the same pass as the rest of our greeting, it closed before sending its READY.
fn incompatible_socket_type_eager(dir: Direction) {
    let ctx = Ctx::new();
    let (_z, mut us) = open(&ctx, dir, ZMQ_PUSH, Config::new(SocketType::Push), |_| {});
    match us.wait_handshake(TIMEOUT) {
        Err(DriverError::Protocol(Error::IncompatibleSocketType { peer })) => {
            assert_eq!(peer, SocketType::Push)
        }
        Err(DriverError::PeerClosed) => assert_eq!(
            us.bytes_received(),
            64,
            "libzmq closed after its greeting, without READY"
        ),
        other => panic!("expected the handshake to fail, got {other:?}"),
    }
    assert!(!us.connection().is_established());
    assert_eq!(us.handshake(), None);
}

/// A frame above our `max_message_size` fails the connection before its body is buffered.
fn oversized_message_rejected(dir: Direction) {
    let ctx = Ctx::new();
    let mut config = Config::new(SocketType::Pair);
    config.max_message_size = Some(64 * 1024);
    let (z, mut us, _) = established(&ctx, dir, ZMQ_PAIR, config, |_| {});
    zsend(&z, &[b"small"]);
    assert_eq!(
        us.recv_multipart(TIMEOUT).expect("small"),
        owned(&[b"small"])
    );
    zsend(&z, &[&pattern(1 << 20, 4)]);
    // Refused from the frame header: MAXMSGSIZE is checked against the announced size.
    match us.recv_multipart(TIMEOUT) {
        Err(DriverError::Protocol(Error::MessageTooLarge { limit })) => {
            assert_eq!(limit, 64 * 1024)
        }
        other => panic!("expected MessageTooLarge, got {other:?}"),
    }
}

both_directions! {
    pair => pair_we_connect, pair_libzmq_connects;
    dealer_dealer => dealer_dealer_we_connect, dealer_dealer_libzmq_connects;
    dealer_router => dealer_router_we_connect, dealer_router_libzmq_connects;
    router_dealer => router_dealer_we_connect, router_dealer_libzmq_connects;
    push_to_libzmq_pull => push_to_libzmq_pull_we_connect, push_to_libzmq_pull_libzmq_connects;
    pull_from_libzmq_push =>
        pull_from_libzmq_push_we_connect, pull_from_libzmq_push_libzmq_connects;
    multipart_we_send => multipart_we_send_we_connect, multipart_we_send_libzmq_connects;
    multipart_libzmq_sends =>
        multipart_libzmq_sends_we_connect, multipart_libzmq_sends_libzmq_connects;
    libzmq_pings_answered =>
        libzmq_pings_answered_we_connect, libzmq_pings_answered_libzmq_connects;
    libzmq_closes_silent_peer =>
        libzmq_closes_silent_peer_we_connect, libzmq_closes_silent_peer_libzmq_connects;
    our_pings_answered => our_pings_answered_we_connect, our_pings_answered_libzmq_connects;
    v30_pair => v30_pair_we_connect, v30_pair_libzmq_connects;
    v30_heartbeats => v30_heartbeats_we_connect, v30_heartbeats_libzmq_connects;
    |d| our_sub_filters(d, Version::V3_0) =>
        sub_v30_message_form_we_connect, sub_v30_message_form_libzmq_connects;
    |d| our_sub_filters(d, Version::V3_1) =>
        sub_v31_command_form_we_connect, sub_v31_command_form_libzmq_connects;
    |d| libzmq_sub_to_our_pub(d, Version::V3_1) =>
        libzmq_sub_v31_we_connect, libzmq_sub_v31_libzmq_connects;
    |d| libzmq_sub_to_our_pub(d, Version::V3_0) =>
        libzmq_sub_v30_we_connect, libzmq_sub_v30_libzmq_connects;
    libzmq_xsub_to_our_pub =>
        libzmq_xsub_v31_message_form_we_connect, libzmq_xsub_v31_message_form_libzmq_connects;
    oversized_message_rejected =>
        oversized_message_rejected_we_connect, oversized_message_rejected_libzmq_connects;
    incompatible_socket_type =>
        incompatible_socket_type_we_connect, incompatible_socket_type_libzmq_connects;
    incompatible_socket_type_eager =>
        incompatible_socket_type_eager_we_connect, incompatible_socket_type_eager_libzmq_connects;
}

#[test]
fn libzmq_is_4_x() {
    let (major, minor, patch) = ffi::version();
    println!(
        "linked libzmq {major}.{minor}.{patch}, draft API: {}",
        ffi::has("draft")
    );
    assert_eq!(major, 4, "libzmq {major}.{minor}.{patch}");
    // The system library, not the static draft build of `zmtp-conformance-draft`: this
    // package links only `-lzmq`.
    assert!(
        !ffi::has("draft"),
        "libzmq {major}.{minor}.{patch} with the draft API linked"
    );
}
