//! The draft peer proven against itself: the linked library is the static libzmq 4.3.5 with
//! the draft API and CURVE, and every draft socket pair moves messages over tcp between two
//! of its sockets, with the routing ids and groups libzmq documents. Our sockets are tested
//! against this peer elsewhere, only once these pass.
//!
//! Every wait is bounded: sockets block at most `BLOCKING_TIMEOUT_MS` (5 s), and checks that
//! nothing arrives wait `SILENCE_MS`.

use std::ffi::c_int;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use zmtp_conformance::security::{
    key, zcurve_client, zcurve_server, zsock, CLIENT_PUBLIC, SERVER_PUBLIC,
};
use zmtp_conformance_draft::draft::{
    DraftMessage, DraftZSocket, ZMQ_CHANNEL, ZMQ_CLIENT, ZMQ_DISH, ZMQ_GATHER, ZMQ_PEER, ZMQ_RADIO,
    ZMQ_SCATTER, ZMQ_SERVER,
};
use zmtp_conformance_draft::ffi::{self, Ctx, ZSocket, ZMQ_RCVTIMEO};
use zmtp_conformance_draft::{ensure_draft_libzmq, DRAFT_LIBZMQ_VERSION};

/// How long a check that nothing arrives waits, in milliseconds.
const SILENCE_MS: c_int = 300;

/// Bind `z` to a free loopback tcp port and return the endpoint.
fn bind_tcp(z: &ZSocket<'_>) -> String {
    z.bind("tcp://127.0.0.1:*").expect("bind");
    z.last_endpoint().expect("ZMQ_LAST_ENDPOINT")
}

/// Receive on `z`, expecting nothing within `SILENCE_MS`.
fn expect_silence(z: &ZSocket<'_>, what: &str) {
    z.set_int(ZMQ_RCVTIMEO, SILENCE_MS).expect("ZMQ_RCVTIMEO");
    match z.recv_draft() {
        Err(e) if e.is_again() => {}
        other => panic!("{what}: expected nothing, got {other:?}"),
    }
}

#[test]
fn linked_libzmq_is_the_draft_build() {
    let (major, minor, patch) = ensure_draft_libzmq();
    println!(
        "linked libzmq {major}.{minor}.{patch}, draft API: {}, curve: {}, ws: {}",
        ffi::has("draft"),
        ffi::has("curve"),
        ffi::has("WS")
    );
    assert_eq!((major, minor, patch), DRAFT_LIBZMQ_VERSION);
    assert!(ffi::has("draft") && ffi::has("curve"));
}

#[test]
fn client_server_reply_by_routing_id() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let server = zsock(&ctx, ZMQ_SERVER);
    let endpoint = bind_tcp(&server);
    let client_a = zsock(&ctx, ZMQ_CLIENT);
    let client_b = zsock(&ctx, ZMQ_CLIENT);
    client_a.connect(&endpoint).expect("connect a");
    client_b.connect(&endpoint).expect("connect b");

    // Each client waits (up to SNDTIMEO) for its connection, then the server sees two pipes.
    client_a.send(b"from a", 0).expect("client a send");
    client_b.send(b"from b", 0).expect("client b send");
    let mut ids = std::collections::HashMap::new();
    for _ in 0..2 {
        let m = server.recv_draft().expect("server recv");
        assert_ne!(
            m.routing_id, 0,
            "a SERVER message carries its pipe's routing id"
        );
        assert!(m.group.is_empty());
        ids.insert(m.body, m.routing_id);
    }
    let (id_a, id_b) = (ids[&b"from a"[..]], ids[&b"from b"[..]]);
    assert_ne!(id_a, id_b, "two clients, two routing ids");

    // The replies go to the pipe named by the id, and only there.
    server.send_to(id_b, b"to b", 0).expect("reply to b");
    server.send_to(id_a, b"to a", 0).expect("reply to a");
    assert_eq!(client_a.recv_draft().expect("client a recv").body, b"to a");
    assert_eq!(client_b.recv_draft().expect("client b recv").body, b"to b");
    expect_silence(&client_a, "client a after its reply");

    // An id no pipe has is refused at once.
    let unknown = (1..).find(|id| *id != id_a && *id != id_b).unwrap();
    let err = server
        .send_to(unknown, b"nobody", ffi::ZMQ_DONTWAIT)
        .expect_err("send to an unknown routing id");
    assert_eq!(
        std::io::Error::from_raw_os_error(err.errno).kind(),
        ErrorKind::HostUnreachable,
        "{err}"
    );
    // Draft sockets are single-part.
    let err = client_a
        .send(b"part", ffi::ZMQ_SNDMORE)
        .expect_err("SNDMORE on CLIENT");
    assert_eq!(
        std::io::Error::from_raw_os_error(err.errno).kind(),
        ErrorKind::InvalidInput,
        "{err}"
    );
}

/// Send `body` in `group` from `radio` until `dish` receives a message (the DISH's JOIN
/// reaches the RADIO some time after connecting; until then the RADIO drops everything).
fn radio_until_received(radio: &ZSocket<'_>, dish: &ZSocket<'_>, group: &[u8]) -> DraftMessage {
    dish.set_int(ZMQ_RCVTIMEO, 50).expect("ZMQ_RCVTIMEO");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        radio
            .send_group(group, b"first", ffi::ZMQ_DONTWAIT)
            .expect("radio send");
        match dish.recv_draft() {
            Ok(m) => return m,
            Err(e) if e.is_again() && Instant::now() < deadline => {}
            Err(e) => panic!("no message reached the DISH: {e}"),
        }
    }
}

#[test]
fn radio_dish_joined_group_only() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let radio = zsock(&ctx, ZMQ_RADIO);
    let endpoint = bind_tcp(&radio);
    let dish = zsock(&ctx, ZMQ_DISH);
    dish.join(b"weather").expect("join");
    assert!(
        dish.join(b"weather").is_err(),
        "joining a group twice is refused"
    );
    dish.connect(&endpoint).expect("connect");

    let first = radio_until_received(&radio, &dish, b"weather");
    assert_eq!(
        (first.body, first.group),
        (b"first".to_vec(), b"weather".to_vec())
    );

    // One pipe keeps order: had the other group's message been delivered, it would come
    // before the marker.
    dish.set_int(ZMQ_RCVTIMEO, 5000).expect("ZMQ_RCVTIMEO");
    radio
        .send_group(b"sports", b"not joined", 0)
        .expect("send sports");
    radio
        .send_group(b"weather", b"marker", 0)
        .expect("send marker");
    let m = loop {
        let m = dish.recv_draft().expect("dish recv");
        if m.body != b"first" {
            break m;
        }
    };
    assert_eq!((m.body, m.group), (b"marker".to_vec(), b"weather".to_vec()));
    expect_silence(&dish, "the DISH after the marker");

    // After LEAVE, the group's messages stop too (the DISH filters them itself at once).
    dish.leave(b"weather").expect("leave");
    radio
        .send_group(b"weather", b"after leave", 0)
        .expect("send after leave");
    expect_silence(&dish, "the DISH after leaving");
}

#[test]
fn scatter_gather() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let gather = zsock(&ctx, ZMQ_GATHER);
    let endpoint = bind_tcp(&gather);
    let scatter = zsock(&ctx, ZMQ_SCATTER);
    scatter.connect(&endpoint).expect("connect");
    for i in 0..3u8 {
        scatter.send(&[b'm', b'0' + i], 0).expect("scatter send");
    }
    for i in 0..3u8 {
        let m = gather.recv_multipart().expect("gather recv");
        assert_eq!(m, vec![vec![b'm', b'0' + i]]);
    }
    expect_silence(&gather, "the GATHER after three messages");
}

#[test]
fn peer_to_peer_by_connect_peer_id() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let a = zsock(&ctx, ZMQ_PEER);
    let endpoint = bind_tcp(&a);
    let b = zsock(&ctx, ZMQ_PEER);
    let to_a = b.connect_peer(&endpoint).expect("zmq_connect_peer");
    assert_ne!(to_a, 0);

    b.send_to(to_a, b"hello a", 0).expect("b sends to a");
    let m = a.recv_draft().expect("a recv");
    assert_eq!(m.body, b"hello a");
    assert_ne!(m.routing_id, 0);

    a.send_to(m.routing_id, b"hello b", 0).expect("a replies");
    let reply = b.recv_draft().expect("b recv");
    assert_eq!(reply.body, b"hello b");
    assert_eq!(
        reply.routing_id, to_a,
        "the reply comes from the pipe zmq_connect_peer returned"
    );

    // zmq_connect_peer is PEER's alone.
    let client = zsock(&ctx, ZMQ_CLIENT);
    let err = client
        .connect_peer(&endpoint)
        .expect_err("connect_peer on CLIENT");
    assert_eq!(
        std::io::Error::from_raw_os_error(err.errno).kind(),
        ErrorKind::Unsupported,
        "{err}"
    );
}

#[test]
fn channel_both_ways() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let a = zsock(&ctx, ZMQ_CHANNEL);
    let endpoint = bind_tcp(&a);
    let b = zsock(&ctx, ZMQ_CHANNEL);
    b.connect(&endpoint).expect("connect");
    b.send(b"ping", 0).expect("b send");
    assert_eq!(a.recv_multipart().expect("a recv"), vec![b"ping".to_vec()]);
    a.send(b"pong", 0).expect("a send");
    assert_eq!(b.recv_multipart().expect("b recv"), vec![b"pong".to_vec()]);
}

#[test]
fn curve_client_server() {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let server = zsock(&ctx, ZMQ_SERVER);
    zcurve_server(&server);
    let endpoint = bind_tcp(&server);

    let client = zsock(&ctx, ZMQ_CLIENT);
    zcurve_client(&client, &key(SERVER_PUBLIC));
    client.connect(&endpoint).expect("connect");
    client.send(b"secret", 0).expect("client send");
    let m = server.recv_draft().expect("server recv");
    assert_eq!(m.body, b"secret");
    server.send_to(m.routing_id, b"sealed", 0).expect("reply");
    assert_eq!(client.recv_draft().expect("client recv").body, b"sealed");

    // A client that trusts another server key never completes the handshake: nothing of
    // its reaches the server.
    let stranger = zsock(&ctx, ZMQ_CLIENT);
    zcurve_client(&stranger, &key(CLIENT_PUBLIC));
    stranger.connect(&endpoint).expect("connect");
    stranger
        .send(b"wrong key", 0)
        .expect("a CLIENT queues while connecting");
    expect_silence(
        &server,
        "the SERVER after a client with the wrong server key",
    );
}
