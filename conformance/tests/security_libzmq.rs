//! PLAIN and CURVE against the system libzmq, at the connection level: each scenario runs
//! in both directions (libzmq binds and we connect, `*_we_connect`; we listen and libzmq
//! connects, `*_libzmq_connects`), over TCP and, where cheap, IPC. The mechanism role is
//! independent of who connects: a connecting libzmq socket can be the PLAIN or CURVE server.
//!
//! A libzmq PLAIN or CURVE server authenticates through a ZAP handler in its own context
//! ([`ZapHandler`]); our server raises `Event::AuthRequested`, which the driver answers with
//! the verdict the test configured. libzmq's view of failures comes from its socket monitor.
//!
//! Every wait is bounded by a deadline; the only fixed waits ([`QUIET`]) check that
//! something does *not* happen.

use std::ffi::c_int;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant as StdInstant};

use zmtp_conformance::driver::{test_entropy, AuthRecord, Driver, DriverError, PeerCredentials};
use zmtp_conformance::ffi::{
    self, Ctx, ZSocket, ZMQ_DEALER, ZMQ_EVENT_ALL, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH,
    ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL,
    ZMQ_EVENT_HANDSHAKE_SUCCEEDED, ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT,
    ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC, ZMQ_SUB, ZMQ_XPUB,
};
use zmtp_conformance::security::{
    client_keys, expect_auth_failure, key, server_keys, show, stranger_keys, zcurve_client,
    zcurve_server, zplain_client, zplain_server, zsock, CLIENT_PUBLIC, SERVER_PUBLIC,
};
use zmtp_conformance::zap::{ZapHandler, ZapRequest};
use zmtp_conformance::{both_directions, Direction};
use zmtp_proto::curve_crypto::PublicKey;
use zmtp_proto::mechanism::{CurveError, Security};
use zmtp_proto::{Config, Error, OwnedItem, Reason, SocketType};

/// Upper bound for any single wait in these tests.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long to watch for something that must not happen (a message after a refusal).
const QUIET: Duration = Duration::from_millis(100);

/// Which stream carries the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Tcp,
    Ipc,
}
use Transport::{Ipc, Tcp};

/// A fresh path for an IPC endpoint.
fn ipc_path() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("zmtp-sec-{}-{n}.ipc", std::process::id()))
}

fn our_plain_client(username: &[u8], password: &[u8]) -> Security {
    Security::plain_client(username, password).expect("credentials of at most 255 bytes")
}

fn our_curve_client(server_key: PublicKey) -> Security {
    Security::curve_client(server_key, client_keys())
}

fn our_curve_server() -> Security {
    Security::curve_server(server_keys())
}

fn config(kind: SocketType, security: Security) -> Config {
    let mut c = Config::new(kind);
    c.security = security;
    c
}

/// Connect the configured libzmq socket `z` to a fresh [`Driver`] running `config` over
/// `transport`, in direction `dir`. Our connection gets fresh entropy and, if given,
/// answers authentication requests with `verdict`. The handshake is not awaited.
fn link(
    z: &ZSocket<'_>,
    dir: Direction,
    transport: Transport,
    config: Config,
    verdict: Option<u16>,
) -> Driver {
    let entropy = Some(test_entropy());
    let us = match (dir, transport) {
        (Direction::WeConnect, Tcp) => {
            z.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let endpoint = z.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            let port = ffi::endpoint_port(&endpoint).expect("port in ZMQ_LAST_ENDPOINT");
            Driver::connect_with(SocketAddr::from(([127, 0, 0, 1], port)), config, entropy)
        }
        (Direction::LibzmqConnects, Tcp) => {
            let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
            let port = listener.local_addr().expect("local address").port();
            z.connect(&format!("tcp://127.0.0.1:{port}"))
                .expect("zmq_connect");
            Driver::accept_with(&listener, config, TIMEOUT, entropy)
        }
        (Direction::WeConnect, Ipc) => {
            let path = ipc_path();
            z.bind(&format!("ipc://{}", path.display()))
                .expect("zmq_bind ipc");
            let us = Driver::connect_unix(&path, config, entropy);
            // The connection is made: the name is no longer needed (libzmq 4.3.4 leaves it).
            let _ = std::fs::remove_file(&path);
            us
        }
        (Direction::LibzmqConnects, Ipc) => {
            let path = ipc_path();
            let listener = UnixListener::bind(&path).expect("listen ipc");
            z.connect(&format!("ipc://{}", path.display()))
                .expect("zmq_connect ipc");
            let us = Driver::accept_unix(&listener, config, TIMEOUT, entropy);
            let _ = std::fs::remove_file(&path);
            us
        }
    };
    let mut us = us.expect("open the connection");
    if let Some(status) = verdict {
        us.set_verdict(status);
    }
    us
}

/// Wait for the handshake and check the peer's socket type.
fn handshake(us: &mut Driver, expected_peer: c_int) {
    let hs = us.wait_handshake(TIMEOUT).expect("handshake with libzmq");
    assert_eq!(
        hs.peer_socket_type.map(|t| t as c_int),
        Some(expected_peer),
        "peer Socket-Type"
    );
    assert!(us.connection().is_established());
}

/// Receive one message on the libzmq socket while keeping our side pumping.
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

/// Wait for a subscription-type command on our side while making the libzmq socket
/// process its commands: a bound libzmq SUB attaches a new connection, and sends it its
/// subscriptions, only when the application next calls into the socket.
fn zcommand(z: &ZSocket<'_>, us: &mut Driver) -> OwnedItem {
    let deadline = StdInstant::now() + TIMEOUT;
    loop {
        if let Some(c) = us.try_recv_command() {
            return c;
        }
        match z.try_recv_multipart() {
            Err(e) if e.is_again() => {}
            other => panic!("unexpected libzmq receive: {other:?}"),
        }
        assert!(
            StdInstant::now() < deadline,
            "no subscription command within {TIMEOUT:?}"
        );
        us.pump_for(Duration::from_millis(2))
            .expect("our side failed while waiting for a subscription");
    }
}

fn owned(frames: &[&[u8]]) -> Vec<Vec<u8>> {
    frames.iter().map(|f| f.to_vec()).collect()
}

/// Our message reaches libzmq intact, and libzmq's reaches us intact.
fn exchange(z: &ZSocket<'_>, us: &mut Driver, ours: &[&[u8]], theirs: &[&[u8]]) {
    us.send_multipart(ours).expect("send from our side");
    assert_eq!(zrecv(z, us), owned(ours), "what libzmq received");
    z.send_multipart(theirs).expect("libzmq send");
    assert_eq!(
        us.recv_multipart(TIMEOUT).expect("receive on our side"),
        owned(theirs),
        "what we received"
    );
}

/// After a failed handshake: nothing reaches libzmq for [`QUIET`], and nothing reached us.
fn assert_no_message(z: &ZSocket<'_>, us: &mut Driver) {
    let deadline = StdInstant::now() + QUIET;
    while StdInstant::now() < deadline {
        match z.try_recv_multipart() {
            Ok(m) => panic!("libzmq received {m:?} over a refused connection"),
            Err(e) if e.is_again() => {}
            Err(e) => panic!("libzmq receive failed: {e}"),
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(us.try_recv_multipart(), None, "we received a message");
    assert!(us.handshake().is_none(), "handshake reported as complete");
    assert!(
        us.send_multipart(&[b"late"]).is_err(),
        "a failed connection took a message"
    );
}

fn reason(text: &[u8]) -> Reason {
    Reason::from_slice(text).expect("short reason")
}

/// Whether `haystack` contains `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The one ZAP request libzmq made, checked for the fields that do not depend on the
/// mechanism.
fn one_zap_request(zap: &ZapHandler<'_>, transport: Transport) -> ZapRequest {
    let requests = zap.wait_requests(1, TIMEOUT);
    assert_eq!(requests.len(), 1, "ZAP requests: {requests:?}");
    let r = requests.into_iter().next().expect("one request");
    assert_eq!(r.version, b"1.0");
    assert_eq!(r.request_id, b"1");
    assert_eq!(r.domain, b"test");
    if transport == Tcp {
        assert_eq!(r.address, b"127.0.0.1", "peer address in ZAP");
    }
    eprintln!("ZAP request: {r:?}");
    r
}

// ---------------------------------------------------------------------------------------
// 1. PLAIN: our client, libzmq server.

fn plain_ours_client(dir: Direction, transport: Transport) {
    let ctx = Ctx::new();
    let zap = ZapHandler::plain(&ctx, b"admin", b"secret");
    let z = zsock(&ctx, ZMQ_DEALER);
    zplain_server(&z);
    let mut us = link(
        &z,
        dir,
        transport,
        config(SocketType::Dealer, our_plain_client(b"admin", b"secret")),
        None,
    );
    handshake(&mut us, ZMQ_DEALER);
    exchange(&z, &mut us, &[b"hello", b"over", b"plain"], &[b"world"]);
    exchange(&z, &mut us, &[b""], &[b"a", b"", b"c"]);

    let r = one_zap_request(&zap, transport);
    assert_eq!(r.mechanism, "PLAIN");
    assert_eq!(r.credentials, owned(&[b"admin", b"secret"]));
    assert!(
        us.auth_requests().is_empty(),
        "a client raises no auth request"
    );
}

fn plain_ours_client_wrong_password(dir: Direction) {
    let ctx = Ctx::new();
    let zap = ZapHandler::plain(&ctx, b"admin", b"secret");
    let z = zsock(&ctx, ZMQ_DEALER);
    zplain_server(&z);
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Dealer, our_plain_client(b"admin", b"guess")),
        None,
    );
    us.record_input();
    let err = us.wait_handshake(TIMEOUT).expect_err("a refused handshake");
    assert_eq!(err, DriverError::Protocol(Error::PeerError(reason(b"400"))));
    // libzmq's PLAIN ERROR, with its hex-escape bug (notes G6): flags 04, size 9,
    // "^RROR", reason length 3, "400".
    assert!(
        contains(us.recorded_input(), b"\x04\x09^RROR\x03400"),
        "libzmq's PLAIN ERROR on the wire: {:02x?}",
        us.recorded_input()
    );
    let r = one_zap_request(&zap, Tcp);
    assert_eq!(r.mechanism, "PLAIN");
    assert_eq!(r.credentials, owned(&[b"admin", b"guess"]));
    assert_no_message(&z, &mut us);
    expect_auth_failure(&mut mon, 400, TIMEOUT);
}

// ---------------------------------------------------------------------------------------
// 2. PLAIN: libzmq client, our server.

fn plain_ours_server(dir: Direction, transport: Transport) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zplain_client(&z, b"admin", b"secret");
    let mut us = link(
        &z,
        dir,
        transport,
        config(SocketType::Dealer, Security::PlainServer),
        Some(200),
    );
    handshake(&mut us, ZMQ_DEALER);
    assert_eq!(
        us.auth_requests(),
        [AuthRecord {
            mechanism: "PLAIN".into(),
            credentials: PeerCredentials::Plain {
                username: b"admin".to_vec(),
                password: b"secret".to_vec(),
            },
            verdict: Some(200),
        }]
    );
    exchange(&z, &mut us, &[b"to", b"libzmq"], &[b"to", b"us", b""]);
    exchange(&z, &mut us, &[b"again"], &[b"again"]);
}

/// Our PLAIN server refuses with 400: we send ERROR in libzmq's own form (`^RROR`, notes
/// G6), the only one libzmq's PLAIN client understands, and it reports
/// HANDSHAKE_FAILED_AUTH 400.
fn plain_ours_server_refuses(dir: Direction) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zplain_client(&z, b"admin", b"secret");
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    // Queued before the handshake: must never reach us.
    z.try_send_multipart(&[b"early"]).ok();
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Dealer, Security::PlainServer),
        Some(400),
    );
    us.record_output();
    let err = us.wait_handshake(TIMEOUT).expect_err("a refused handshake");
    assert_eq!(
        err,
        DriverError::Protocol(Error::AuthRejected { status: 400 })
    );
    // flags 04, size 9, 5e "RROR" 03 "400", as a libzmq PLAIN server sends it.
    assert!(
        us.recorded_output().ends_with(b"\x04\x09\x5eRROR\x03400"),
        "our last bytes: {:02x?}",
        us.recorded_output()
    );
    assert_eq!(us.auth_requests().len(), 1);
    assert_eq!(us.auth_requests()[0].verdict, Some(400));
    assert_no_message(&z, &mut us);
    expect_auth_failure(&mut mon, 400, TIMEOUT);
}

// ---------------------------------------------------------------------------------------
// 3. CURVE: our client, libzmq server.

fn curve_ours_client(dir: Direction, transport: Transport) {
    let ctx = Ctx::new();
    let zap = ZapHandler::curve(&ctx, &[key(CLIENT_PUBLIC)]);
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_server(&z);
    let mut us = link(
        &z,
        dir,
        transport,
        config(
            SocketType::Dealer,
            our_curve_client(PublicKey(key(SERVER_PUBLIC))),
        ),
        None,
    );
    handshake(&mut us, ZMQ_DEALER);
    assert!(us.connection().encrypts());
    exchange(&z, &mut us, &[b"hello", b"over", b"curve"], &[b"world"]);
    exchange(&z, &mut us, &[b""], &[b"", b"x", b""]);
    // Long frames (8-byte sizes), both ways; distinct patterns so that a mix-up shows.
    let big_out: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    let big_in: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 241) as u8).collect();
    exchange(&z, &mut us, &[b"head", &big_out], &[&big_in, b"tail"]);
    exchange(&z, &mut us, &[b"after"], &[b"after"]);

    let r = one_zap_request(&zap, transport);
    assert_eq!(r.mechanism, "CURVE");
    assert_eq!(r.credentials, vec![key(CLIENT_PUBLIC).to_vec()]);
}

fn curve_ours_client_refused(dir: Direction) {
    let ctx = Ctx::new();
    let zap = ZapHandler::curve(&ctx, &[stranger_keys().public.0]);
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_server(&z);
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(
            SocketType::Dealer,
            our_curve_client(PublicKey(key(SERVER_PUBLIC))),
        ),
        None,
    );
    us.record_input();
    let err = us.wait_handshake(TIMEOUT).expect_err("a refused handshake");
    assert_eq!(err, DriverError::Protocol(Error::PeerError(reason(b"400"))));
    // CURVE's ERROR is well formed and in clear: flags 04, size 10, 05 "ERROR" 03 "400".
    assert!(
        contains(us.recorded_input(), b"\x04\x0a\x05ERROR\x03400"),
        "libzmq's CURVE ERROR on the wire: {:02x?}",
        us.recorded_input()
    );
    let r = one_zap_request(&zap, Tcp);
    assert_eq!(r.mechanism, "CURVE");
    assert_eq!(r.credentials, vec![key(CLIENT_PUBLIC).to_vec()]);
    assert_no_message(&z, &mut us);
    expect_auth_failure(&mut mon, 400, TIMEOUT);
}

fn curve_ours_client_wrong_server_key(dir: Direction) {
    let ctx = Ctx::new();
    let zap = ZapHandler::curve(&ctx, &[key(CLIENT_PUBLIC)]);
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_server(&z);
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Dealer, our_curve_client(stranger_keys().public)),
        None,
    );
    let err = us.wait_handshake(TIMEOUT).expect_err("a failed handshake");
    assert_eq!(err, DriverError::PeerClosed, "libzmq closes on a bad HELLO");
    // libzmq could not open our HELLO box: it says so on its monitor.
    let seen = mon.wait_event(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, TIMEOUT);
    eprintln!(
        "libzmq CURVE server, HELLO for another key:\n{}",
        show(mon.events())
    );
    assert_eq!(
        seen.map(|e| e.value),
        Some(ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC),
        "libzmq's handshake failure"
    );
    assert!(zap.requests().is_empty(), "ZAP consulted for a bad HELLO");
    assert_no_message(&z, &mut us);
}

// ---------------------------------------------------------------------------------------
// 4. CURVE: libzmq client, our server.

fn curve_ours_server(dir: Direction, transport: Transport) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_client(&z, &key(SERVER_PUBLIC));
    let mut us = link(
        &z,
        dir,
        transport,
        config(SocketType::Dealer, our_curve_server()),
        Some(200),
    );
    handshake(&mut us, ZMQ_DEALER);
    assert_eq!(
        us.auth_requests(),
        [AuthRecord {
            mechanism: "CURVE".into(),
            credentials: PeerCredentials::Curve {
                public_key: PublicKey(key(CLIENT_PUBLIC)),
            },
            verdict: Some(200),
        }]
    );
    exchange(&z, &mut us, &[b"to", b"libzmq"], &[b"to", b"us", b"!"]);
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    exchange(&z, &mut us, &[&big], &[b"", &big]);
}

fn curve_ours_server_refuses(dir: Direction) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_client(&z, &key(SERVER_PUBLIC));
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    z.try_send_multipart(&[b"early"]).ok();
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Dealer, our_curve_server()),
        Some(400),
    );
    let err = us.wait_handshake(TIMEOUT).expect_err("a refused handshake");
    assert_eq!(
        err,
        DriverError::Protocol(Error::AuthRejected { status: 400 })
    );
    assert_eq!(
        us.auth_requests()[0].credentials,
        PeerCredentials::Curve {
            public_key: PublicKey(key(CLIENT_PUBLIC))
        }
    );
    assert_no_message(&z, &mut us);
    expect_auth_failure(&mut mon, 400, TIMEOUT);
}

fn curve_ours_server_wrong_key_at_client(dir: Direction) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_client(&z, &stranger_keys().public.0);
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Dealer, our_curve_server()),
        Some(200),
    );
    let err = us.wait_handshake(TIMEOUT).expect_err("a failed handshake");
    assert_eq!(
        err,
        DriverError::Protocol(Error::Curve(CurveError::BadHello))
    );
    assert!(us.auth_requests().is_empty(), "no verdict for a bad HELLO");
    drop(us); // Close our end, as a server does after a fatal error.
    let seen = mon.wait_for(TIMEOUT, |e| {
        matches!(
            e.event,
            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
        )
    });
    eprintln!(
        "libzmq CURVE client after our server closed on its HELLO:\n{}",
        show(mon.events())
    );
    assert!(
        seen.is_some(),
        "libzmq reported no handshake failure:\n{}",
        show(mon.events())
    );
    assert!(!mon
        .events()
        .iter()
        .any(|e| e.event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED));
}

// ---------------------------------------------------------------------------------------
// 5. Heartbeats over CURVE: both sides PING every 50 ms. A PING or PONG that does not
// decrypt is a protocol error (libzmq disconnects, we fail), and both sides time out after
// 250 ms of silence following a PING (more than 50 ms so that a loaded machine does not
// starve the test into a timeout); the counts show the PINGs and PONGs flowed.

fn curve_heartbeats(dir: Direction, ours_is_server: bool) {
    const IVL: Duration = Duration::from_millis(50);
    let ctx = Ctx::new();
    let _zap = ZapHandler::curve(&ctx, &[key(CLIENT_PUBLIC)]);
    let z = zsock(&ctx, ZMQ_DEALER);
    let security = if ours_is_server {
        zcurve_client(&z, &key(SERVER_PUBLIC));
        our_curve_server()
    } else {
        zcurve_server(&z);
        our_curve_client(PublicKey(key(SERVER_PUBLIC)))
    };
    z.set_int(ZMQ_HEARTBEAT_IVL, 50).expect("ZMQ_HEARTBEAT_IVL");
    z.set_int(ZMQ_HEARTBEAT_TIMEOUT, 250)
        .expect("ZMQ_HEARTBEAT_TIMEOUT");
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    let mut c = config(SocketType::Dealer, security);
    c.heartbeat_interval = Some(IVL);
    c.heartbeat_timeout = Some(Duration::from_millis(250));
    let mut us = link(&z, dir, Tcp, c, Some(200));
    handshake(&mut us, ZMQ_DEALER);
    us.pump_for(IVL * 8)
        .expect("the connection stays up over 8 intervals");
    assert!(
        us.pings_received() >= 4,
        "libzmq's PINGs received: {}",
        us.pings_received()
    );
    assert!(
        us.pongs_received() >= 4,
        "libzmq's PONGs received: {}",
        us.pongs_received()
    );
    exchange(&z, &mut us, &[b"still"], &[b"up"]);
    eprintln!(
        "heartbeats over CURVE (ours {}): {} PINGs and {} PONGs received in {:?}",
        if ours_is_server { "server" } else { "client" },
        us.pings_received(),
        us.pongs_received(),
        IVL * 8
    );
    mon.poll();
    let failures: Vec<_> = mon
        .events()
        .iter()
        .filter(|e| {
            e.event >= ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                && e.event != ZMQ_EVENT_HANDSHAKE_SUCCEEDED
        })
        .collect();
    assert!(failures.is_empty(), "libzmq failures: {failures:?}");
    assert_eq!(
        mon.events()
            .iter()
            .filter(|e| e.event == ffi::ZMQ_EVENT_DISCONNECTED)
            .count(),
        0,
        "libzmq disconnected:\n{}",
        show(mon.events())
    );
}

// ---------------------------------------------------------------------------------------
// 6. Subscriptions over CURVE.

/// Our SUB (CURVE client) subscribes to a libzmq XPUB (CURVE server): the encrypted
/// SUBSCRIBE and CANCEL reach it, and it delivers only matching messages.
fn curve_our_sub(dir: Direction) {
    let ctx = Ctx::new();
    let _zap = ZapHandler::curve(&ctx, &[key(CLIENT_PUBLIC)]);
    let z = zsock(&ctx, ZMQ_XPUB);
    zcurve_server(&z);
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(
            SocketType::Sub,
            our_curve_client(PublicKey(key(SERVER_PUBLIC))),
        ),
        None,
    );
    handshake(&mut us, ZMQ_XPUB);
    us.subscribe(b"A").expect("subscribe");
    assert_eq!(zrecv(&z, &mut us), owned(&[b"\x01A"]), "XPUB saw SUBSCRIBE");
    for m in [&b"B-1"[..], b"A-1", b"C", b"AB-2", b"", b"A-end"] {
        z.send_multipart(&[m]).expect("publish");
    }
    let mut got = Vec::new();
    while got.last().map(Vec::as_slice) != Some(b"A-end".as_slice()) {
        let m = us.recv_multipart(TIMEOUT).expect("a published message");
        assert_eq!(m.len(), 1);
        got.push(m.into_iter().next().expect("one frame"));
    }
    assert_eq!(got, owned(&[b"A-1", b"AB-2", b"A-end"]));

    us.cancel(b"A").expect("cancel");
    assert_eq!(zrecv(&z, &mut us), owned(&[b"\x00A"]), "XPUB saw CANCEL");
    z.send_multipart(&[b"A-after"]).expect("publish");
    us.pump_for(QUIET).expect("pump");
    assert_eq!(us.try_recv_multipart(), None, "delivered after CANCEL");
}

/// A libzmq SUB (CURVE client) subscribes to our PUB (CURVE server): we receive the
/// decrypted subscription and its cancellation; libzmq filters what we publish.
fn curve_our_pub(dir: Direction) {
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_SUB);
    zcurve_client(&z, &key(SERVER_PUBLIC));
    let mut us = link(
        &z,
        dir,
        Tcp,
        config(SocketType::Pub, our_curve_server()),
        Some(200),
    );
    z.subscribe(b"news").expect("ZMQ_SUBSCRIBE");
    handshake(&mut us, ZMQ_SUB);
    match zcommand(&z, &mut us) {
        OwnedItem::Subscribe(t) => assert_eq!(&t[..], b"news"),
        other => panic!("expected Subscribe, got {other:?}"),
    }
    for m in [&b"sport"[..], b"news-1", b"new", b"news-2"] {
        us.send_multipart(&[m]).expect("publish");
    }
    assert_eq!(zrecv(&z, &mut us), owned(&[b"news-1"]));
    assert_eq!(zrecv(&z, &mut us), owned(&[b"news-2"]));

    z.unsubscribe(b"news").expect("ZMQ_UNSUBSCRIBE");
    match zcommand(&z, &mut us) {
        OwnedItem::Cancel(t) => assert_eq!(&t[..], b"news"),
        other => panic!("expected Cancel, got {other:?}"),
    }
    assert!(us.try_recv_command().is_none());
}

both_directions! {
    |d| plain_ours_client(d, Tcp) => plain_ours_client_tcp_we_connect, plain_ours_client_tcp_libzmq_connects;
    |d| plain_ours_client(d, Ipc) => plain_ours_client_ipc_we_connect, plain_ours_client_ipc_libzmq_connects;
    plain_ours_client_wrong_password => plain_wrong_password_we_connect, plain_wrong_password_libzmq_connects;
    |d| plain_ours_server(d, Tcp) => plain_ours_server_tcp_we_connect, plain_ours_server_tcp_libzmq_connects;
    |d| plain_ours_server(d, Ipc) => plain_ours_server_ipc_we_connect, plain_ours_server_ipc_libzmq_connects;
    plain_ours_server_refuses => plain_server_refuses_we_connect, plain_server_refuses_libzmq_connects;
    |d| curve_ours_client(d, Tcp) => curve_ours_client_tcp_we_connect, curve_ours_client_tcp_libzmq_connects;
    |d| curve_ours_client(d, Ipc) => curve_ours_client_ipc_we_connect, curve_ours_client_ipc_libzmq_connects;
    curve_ours_client_refused => curve_client_refused_we_connect, curve_client_refused_libzmq_connects;
    curve_ours_client_wrong_server_key => curve_client_wrong_server_key_we_connect, curve_client_wrong_server_key_libzmq_connects;
    |d| curve_ours_server(d, Tcp) => curve_ours_server_tcp_we_connect, curve_ours_server_tcp_libzmq_connects;
    |d| curve_ours_server(d, Ipc) => curve_ours_server_ipc_we_connect, curve_ours_server_ipc_libzmq_connects;
    curve_ours_server_refuses => curve_server_refuses_we_connect, curve_server_refuses_libzmq_connects;
    curve_ours_server_wrong_key_at_client => curve_server_wrong_key_at_client_we_connect, curve_server_wrong_key_at_client_libzmq_connects;
    |d| curve_heartbeats(d, false) => curve_heartbeats_ours_client_we_connect, curve_heartbeats_ours_client_libzmq_connects;
    |d| curve_heartbeats(d, true) => curve_heartbeats_ours_server_we_connect, curve_heartbeats_ours_server_libzmq_connects;
    curve_our_sub => curve_our_sub_we_connect, curve_our_sub_libzmq_connects;
    curve_our_pub => curve_our_pub_we_connect, curve_our_pub_libzmq_connects;
}
