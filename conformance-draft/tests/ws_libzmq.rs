//! `ws://` between our tokio sockets and the draft libzmq 4.3.5 beyond the NULL scenarios
//! of `ws_matrix.rs`: CURVE in both directions (libzmq's `ZWS2.0/CURVE`), PLAIN in both
//! directions (`ZWS2.0/PLAIN`, libzmq's server with a ZAP handler), CURVE both ways and a
//! PLAIN client for the smol and mio drivers too, and heartbeats,
//! which libzmq sends over ws as WebSocket pings (not ZMTP PING) and which ours answer
//! with pongs, and ours sends as WebSocket pings that libzmq answers.
//!
//! The libzmq sockets block the test's own thread for at most 5 s per call
//! (`BLOCKING_TIMEOUT_MS`); our sockets run on the runtime's two worker threads meanwhile.

use std::time::Duration;

use zmtp_conformance::async_driver::SmolDriver;
use zmtp_conformance::ffi::{
    Ctx, ZSocket, ZMQ_EVENT_ALL, ZMQ_EVENT_DISCONNECTED, ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
    ZMQ_HEARTBEAT_IVL, ZMQ_HEARTBEAT_TIMEOUT, ZMQ_PULL, ZMQ_PUSH,
};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::{OurDriver, OurSocket};
use zmtp_conformance::security::{
    client_keys, key, server_keys, zcurve_client, zcurve_server, zplain_client, zplain_server,
    zsock, SERVER_PUBLIC,
};
use zmtp_conformance::zap::ZapHandler;
use zmtp_conformance_draft::ensure_draft_libzmq;
use zmtp_tokio::{Authenticator, Error, Message, Options, Security, Socket, SocketType};

/// The longest wait of a test.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The next message of our socket, within [`TIMEOUT`].
async fn recv(socket: &Socket) -> Result<Message, Error> {
    tokio::time::timeout(TIMEOUT, socket.recv())
        .await
        .expect("nothing received within the timeout")
}

/// Connect libzmq's `push` to our `pull` at `endpoint`, leave the link idle for a second
/// with heartbeats on, and check that libzmq saw no disconnect (`whose` heartbeat would have
/// timed out) and that a message still arrives.
async fn idles_alive(
    ctx: &Ctx,
    push: &ZSocket<'_>,
    endpoint: &str,
    pull: &Socket,
    whose: &str,
) -> Result<(), Error> {
    let mut monitor = push
        .monitor(ctx, ZMQ_EVENT_ALL)
        .expect("zmq_socket_monitor");
    push.connect(endpoint).expect("zmq_connect ws");
    assert!(
        monitor
            .wait_event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, TIMEOUT)
            .is_some(),
        "no handshake"
    );
    tokio::time::sleep(Duration::from_millis(1000)).await;
    monitor.poll();
    assert!(
        !monitor
            .events()
            .iter()
            .any(|e| e.event == ZMQ_EVENT_DISCONNECTED),
        "{whose} heartbeat timed out: {:?}",
        monitor.events()
    );
    push.send(b"alive", 0).expect("libzmq send");
    assert_eq!(&recv(pull).await?.frames()[0][..], b"alive");
    Ok(())
}

fn with_security(security: Security) -> Options {
    let mut o = Options::default();
    o.security = security;
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curve_tokio_client_libzmq_server_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let pull = zsock(&ctx, ZMQ_PULL);
    zcurve_server(&pull);
    pull.bind("ws://127.0.0.1:*").expect("zmq_bind ws");
    let endpoint = pull.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
    assert!(endpoint.starts_with("ws://127.0.0.1:"), "{endpoint}");

    let options = with_security(Security::curve_client(
        zmtp_tokio::PublicKey(key(SERVER_PUBLIC)),
        client_keys(),
    ));
    let push = Socket::with_options(SocketType::Push, options)?;
    push.connect(&endpoint)?;
    push.send(Message::from(vec![
        zmtp_tokio::Bytes::from_static(b"sealed"),
        zmtp_tokio::Bytes::from(vec![7u8; 70_000]),
    ]))
    .await?;
    let got = pull.recv_multipart().expect("libzmq recv");
    assert_eq!(got, [b"sealed".to_vec(), vec![7u8; 70_000]]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curve_libzmq_client_tokio_server_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let pull = Socket::with_options(
        SocketType::Pull,
        with_security(Security::curve_server(server_keys())),
    )?;
    let endpoint = pull.bind("ws://127.0.0.1:*").await?;
    let push = zsock(&ctx, ZMQ_PUSH);
    zcurve_client(&push, &key(SERVER_PUBLIC));
    push.connect(&endpoint).expect("zmq_connect ws");
    push.send_multipart(&[b"sealed", b"too"])
        .expect("libzmq send");
    let got = recv(&pull).await?;
    assert_eq!(got.frames().len(), 2);
    assert_eq!(&got.frames()[0][..], b"sealed");
    assert_eq!(&got.frames()[1][..], b"too");
    Ok(())
}

/// PLAIN over ws, our client: a libzmq PLAIN server (`ZWS2.0/PLAIN`) with a ZAP handler
/// that takes admin/secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tokio_client_libzmq_server_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let _zap = ZapHandler::plain(&ctx, b"admin", b"secret");
    let pull = zsock(&ctx, ZMQ_PULL);
    zplain_server(&pull);
    pull.bind("ws://127.0.0.1:*").expect("zmq_bind ws");
    let endpoint = pull.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
    let options = with_security(Security::plain_client("admin", "secret").expect("credentials"));
    let push = Socket::with_options(SocketType::Push, options)?;
    push.connect(&endpoint)?;
    push.send(Message::from(vec![
        zmtp_tokio::Bytes::from_static(b"plain"),
        zmtp_tokio::Bytes::from_static(b"text"),
    ]))
    .await?;
    let got = pull.recv_multipart().expect("libzmq recv");
    assert_eq!(got, [b"plain".to_vec(), b"text".to_vec()]);
    Ok(())
}

/// PLAIN over ws, our server: a libzmq PLAIN client with the right password gets through,
/// one with a wrong password does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_libzmq_client_tokio_server_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let pull = Socket::with_options(SocketType::Pull, with_security(Security::PlainServer))?;
    pull.set_authenticator(Some(Authenticator::new().plain_user("admin", "secret")));
    let endpoint = pull.bind("ws://127.0.0.1:*").await?;
    let wrong = zsock(&ctx, ZMQ_PUSH);
    zplain_client(&wrong, b"admin", b"guess");
    wrong.connect(&endpoint).expect("zmq_connect ws");
    wrong.send(b"refused", 0).expect("libzmq send");
    let push = zsock(&ctx, ZMQ_PUSH);
    zplain_client(&push, b"admin", b"secret");
    push.connect(&endpoint).expect("zmq_connect ws");
    push.send_multipart(&[b"plain", b"too"])
        .expect("libzmq send");
    let got = recv(&pull).await?;
    assert_eq!(
        got.frames().len(),
        2,
        "only the right password gets through"
    );
    assert_eq!(&got.frames()[0][..], b"plain");
    assert_eq!(&got.frames()[1][..], b"too");
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(300), pull.recv())
            .await
            .is_err(),
        "the wrong password got through"
    );
    Ok(())
}

/// A libzmq PUSH with heartbeats every 50 ms and a 150 ms timeout connects to our idle
/// PULL: it stays connected for a second only if our side answers its WebSocket pings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_heartbeats_are_answered_by_our_server_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let pull = Socket::new(SocketType::Pull)?;
    let endpoint = pull.bind("ws://127.0.0.1:*").await?;
    let push = zsock(&ctx, ZMQ_PUSH);
    push.set_int(ZMQ_HEARTBEAT_IVL, 50)
        .expect("ZMQ_HEARTBEAT_IVL");
    push.set_int(ZMQ_HEARTBEAT_TIMEOUT, 150)
        .expect("ZMQ_HEARTBEAT_TIMEOUT");
    idles_alive(&ctx, &push, &endpoint, &pull, "libzmq's").await
}

/// Our PULL with heartbeats every 50 ms and a 150 ms timeout, against an idle libzmq
/// PUSH: our WebSocket pings get libzmq's pongs, so the connection lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_heartbeats_are_answered_by_libzmq_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let mut options = Options::default();
    options.heartbeat_ivl = Some(Duration::from_millis(50));
    options.heartbeat_timeout = Some(Duration::from_millis(150));
    let pull = Socket::with_options(SocketType::Pull, options)?;
    let endpoint = pull.bind("ws://127.0.0.1:*").await?;
    let push = zsock(&ctx, ZMQ_PUSH);
    idles_alive(&ctx, &push, &endpoint, &pull, "our").await
}

/// CURVE with our heartbeats on: they still go as WebSocket pings (a ZMTP PING would be
/// sealed in a CURVE MESSAGE, which libzmq does not answer over ws), and libzmq's pongs
/// keep the connection alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_heartbeats_over_curve_are_answered_by_libzmq_over_ws() -> Result<(), Error> {
    ensure_draft_libzmq();
    let ctx = Ctx::new();
    let mut options = with_security(Security::curve_server(server_keys()));
    options.heartbeat_ivl = Some(Duration::from_millis(50));
    options.heartbeat_timeout = Some(Duration::from_millis(150));
    let pull = Socket::with_options(SocketType::Pull, options)?;
    let endpoint = pull.bind("ws://127.0.0.1:*").await?;
    let push = zsock(&ctx, ZMQ_PUSH);
    zcurve_client(&push, &key(SERVER_PUBLIC));
    idles_alive(&ctx, &push, &endpoint, &pull, "our").await
}

/// CURVE both ways and PLAIN (our client) over ws against libzmq, for every driver of ours
/// through the conformance suite's driver interface: the tokio tests above in the same
/// terms, for smol and mio too.
fn security_over_ws<D: OurDriver>() {
    let ctx = Ctx::new();
    let wait = std::time::Duration::from_secs(5);
    // Our CURVE client, libzmq's server.
    let pull = zsock(&ctx, ZMQ_PULL);
    zcurve_server(&pull);
    pull.bind("ws://127.0.0.1:*").expect("zmq_bind ws");
    let mut push = D::socket(
        SocketType::Push,
        with_security(Security::curve_client(
            zmtp_tokio::PublicKey(key(SERVER_PUBLIC)),
            client_keys(),
        )),
    );
    push.connect(&pull.last_endpoint().unwrap()).unwrap();
    push.send(Message::from(&b"curve out"[..]), wait).unwrap();
    assert_eq!(
        pull.recv_multipart().unwrap(),
        [b"curve out".to_vec()],
        "{}",
        D::name()
    );

    // Our CURVE server, libzmq's client.
    let mut ours = D::socket(
        SocketType::Pull,
        with_security(Security::curve_server(server_keys())),
    );
    let endpoint = ours.bind("ws://127.0.0.1:*").unwrap();
    let zpush = zsock(&ctx, ZMQ_PUSH);
    zcurve_client(&zpush, &key(SERVER_PUBLIC));
    zpush.connect(&endpoint).unwrap();
    zpush.send(b"curve in", 0).unwrap();
    let got = ours.recv(wait).expect("a CURVE message from libzmq");
    assert_eq!(got.frames()[0][..], *b"curve in", "{}", D::name());

    // Our PLAIN client, libzmq's server with a ZAP handler.
    let _zap = ZapHandler::plain(&ctx, b"admin", b"secret");
    let pull = zsock(&ctx, ZMQ_PULL);
    zplain_server(&pull);
    pull.bind("ws://127.0.0.1:*").unwrap();
    let mut push = D::socket(
        SocketType::Push,
        with_security(Security::plain_client("admin", "secret").unwrap()),
    );
    push.connect(&pull.last_endpoint().unwrap()).unwrap();
    push.send(Message::from(&b"plain out"[..]), wait).unwrap();
    assert_eq!(
        pull.recv_multipart().unwrap(),
        [b"plain out".to_vec()],
        "{}",
        D::name()
    );
}

#[test]
fn security_over_ws_smol() {
    ensure_draft_libzmq();
    security_over_ws::<SmolDriver>();
}

#[test]
fn security_over_ws_mio() {
    ensure_draft_libzmq();
    security_over_ws::<MioDriver>();
}
