//! STREAM (raw TCP) against libzmq's `ZMQ_STREAM` in both directions, and serving plain
//! TCP clients (`std::net::TcpStream`) through each driver: an HTTP exchange, a client
//! that hangs up mid-request, and a thousand connections opening and closing with each
//! notification seen exactly once; our STREAM as the client of a plain TCP server (a full
//! response, and a server that hangs up mid-response) through each driver; ws://, wss://
//! and udp:// refused at bind and connect through each driver.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use zmtp_conformance::ffi::{
    Ctx, ZSocket, ZMQ_CONNECT_ROUTING_ID, ZMQ_RCVTIMEO, ZMQ_STREAM, ZMQ_STREAM_NOTIFY,
};
use zmtp_proto::socket::{EndpointError, Message, Options};
use zmtp_proto::{Bytes, SocketType};

const TIMEOUT: Duration = Duration::from_secs(10);

fn frames(m: &Message) -> Vec<Vec<u8>> {
    m.frames().iter().map(|f| f.to_vec()).collect()
}

fn mio_context() -> zmtp_mio::Context {
    zmtp_mio::Context::new().expect("a mio context")
}

/// Our STREAM (mio driver) with receive timeouts.
fn ours(ctx: &zmtp_mio::Context, options: Options) -> zmtp_mio::Socket {
    let s = ctx
        .socket_with(SocketType::Stream, options)
        .expect("a STREAM socket");
    s.set_rcvtimeo(Some(TIMEOUT));
    s
}

fn recv(s: &zmtp_mio::Socket) -> Vec<Vec<u8>> {
    frames(&s.recv().expect("a message in time"))
}

/// [`recv`], calling into the libzmq socket meanwhile so that it processes its commands
/// (a connection it was told to close is closed in such a call). What libzmq receives
/// then is dropped.
fn recv_driving(s: &zmtp_mio::Socket, theirs: &ZSocket<'_>) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Ok(m) = s.recv_timeout(Some(Duration::from_millis(20))) {
            return frames(&m);
        }
        assert!(Instant::now() < deadline, "no message in time");
        let _ = theirs.try_recv_multipart();
    }
}

fn zstream(ctx: &Ctx) -> ZSocket<'_> {
    let z = ctx.socket(ZMQ_STREAM).expect("a libzmq STREAM");
    z.set_int(ZMQ_RCVTIMEO, TIMEOUT.as_millis() as i32).unwrap();
    z
}

/// `[id][empty]`: a notification; returns the id.
fn notification(m: Vec<Vec<u8>>) -> Vec<u8> {
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[1].is_empty(), "a notification: {m:?}");
    m[0].clone()
}

/// Data from `id` until `want` bytes came, chunk by chunk.
fn gather(mut next: impl FnMut() -> Vec<Vec<u8>>, id: &[u8], want: usize) -> Vec<u8> {
    let mut data = Vec::new();
    while data.len() < want {
        let m = next();
        assert_eq!(m[0], id, "{m:?}");
        assert!(!m[1].is_empty(), "data, not a notification: {m:?}");
        data.extend_from_slice(&m[1]);
    }
    data
}

#[test]
fn our_stream_connects_to_libzmq_stream() {
    let zctx = Ctx::new();
    let theirs = zstream(&zctx);
    theirs.bind("tcp://127.0.0.1:*").unwrap();
    let ep = theirs.last_endpoint().unwrap();
    let ctx = mio_context();
    let us = ours(&ctx, Options::default().with_connect_routing_id("them"));
    us.connect(&ep).unwrap();
    // Up at once on both sides; neither writes a byte on its own.
    assert_eq!(notification(recv(&us)), b"them");
    let their_id = notification(theirs.recv_multipart().unwrap());
    assert_eq!(their_id.len(), 5);
    us.send(Message::from(vec![
        Bytes::from_static(b"them"),
        Bytes::from_static(b"hello"),
    ]))
    .unwrap();
    assert_eq!(
        gather(|| theirs.recv_multipart().unwrap(), &their_id, 5),
        b"hello"
    );
    theirs.send_multipart(&[&their_id, b"world"]).unwrap();
    assert_eq!(gather(|| recv(&us), b"them", 5), b"world");
    // libzmq (the accepting side) closes: we see the connection go, once. (libzmq closes
    // it only once its socket processes the pipe's termination, in some later call.) Our
    // connect endpoint then reconnects, as libzmq's does, under the same id (the matrix's
    // `stream-close` checks both kinds alike).
    theirs.send_multipart(&[&their_id, b""]).unwrap();
    assert_eq!(notification(recv_driving(&us, &theirs)), b"them");
    assert_eq!(notification(recv_driving(&us, &theirs)), b"them");
}

/// libzmq's STREAM idiom, through the mio driver (which our C ABI runs on) against real
/// libzmq: after
/// `zmq_connect`, `ZMQ_ROUTING_ID` reads the id of the connection just asked for, and data
/// sent to it at once waits for the connection; the messages carry `Peer-Address`.
#[test]
fn our_connect_names_its_connection_at_once_as_libzmq_does() {
    let zctx = Ctx::new();
    let theirs = zstream(&zctx);
    theirs.bind("tcp://127.0.0.1:*").unwrap();
    let ep = theirs.last_endpoint().unwrap();
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    assert!(us.options().routing_id.is_empty());
    us.connect(&ep).unwrap();
    let id = us.options().routing_id.to_vec();
    assert_eq!((id.len(), id[0]), (5, 0), "{id:?}");
    us.send(Message::from(vec![
        Bytes::from(id.clone()),
        Bytes::from_static(b"sent before the connection"),
    ]))
    .unwrap();
    let up = us.recv().expect("the connect notification");
    assert_eq!(frames(&up), vec![id.clone(), Vec::new()]);
    assert_eq!(up.property("Peer-Address"), Some(&b"127.0.0.1"[..]));
    let their_id = notification(theirs.recv_multipart().unwrap());
    assert_eq!(
        gather(|| theirs.recv_multipart().unwrap(), &their_id, 26),
        b"sent before the connection"
    );
}

#[test]
fn libzmq_stream_connects_to_our_stream() {
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    let ep = us.bind("tcp://127.0.0.1:*").unwrap();
    let zctx = Ctx::new();
    let theirs = zstream(&zctx);
    theirs.set_bytes(ZMQ_CONNECT_ROUTING_ID, b"us").unwrap();
    theirs.connect(&ep).unwrap();
    assert_eq!(notification(theirs.recv_multipart().unwrap()), b"us");
    let id = notification(recv(&us));
    assert_eq!((id.len(), id[0]), (5, 0), "{id:?}");
    theirs.send_multipart(&[b"us", b"ping"]).unwrap();
    assert_eq!(gather(|| recv(&us), &id, 4), b"ping");
    us.send(Message::from(vec![
        Bytes::from(id.clone()),
        Bytes::from_static(b"pong"),
    ]))
    .unwrap();
    assert_eq!(
        gather(|| theirs.recv_multipart().unwrap(), b"us", 4),
        b"pong"
    );
    // We close: libzmq sees the connection go; we announce nothing. (libzmq closing is in
    // `our_stream_connects_to_libzmq_stream`.)
    us.send(Message::from(vec![Bytes::from(id.clone()), Bytes::new()]))
        .unwrap();
    assert_eq!(notification(theirs.recv_multipart().unwrap()), b"us");
    // libzmq reconnects: that is a new connection, announced with a new id.
    let again = notification(recv(&us));
    assert_ne!(again, id);
}

#[test]
fn notify_off_on_both_sides_gives_data_only() {
    let ctx = mio_context();
    let us = ours(&ctx, Options::default().with_stream_notify(false));
    let ep = us.bind("tcp://127.0.0.1:*").unwrap();
    let zctx = Ctx::new();
    let theirs = zstream(&zctx);
    theirs.set_int(ZMQ_STREAM_NOTIFY, 0).unwrap();
    theirs.set_bytes(ZMQ_CONNECT_ROUTING_ID, b"us").unwrap();
    theirs.connect(&ep).unwrap();
    // libzmq's connect is asynchronous: its first send may find no connection yet.
    let deadline = Instant::now() + TIMEOUT;
    while theirs.try_send_multipart(&[b"us", b"data"]).is_err() {
        assert!(Instant::now() < deadline, "libzmq never connected");
        std::thread::sleep(Duration::from_millis(5));
    }
    let m = recv(&us);
    assert_eq!(m[1], b"data", "the first message is data: {m:?}");
}

/// An HTTP/1.0 exchange served by our STREAM on `serve` (a driver's loop), to a plain
/// TCP client.
fn http_exchange(ep: &str) {
    let mut client = TcpStream::connect(ep.strip_prefix("tcp://").unwrap()).unwrap();
    client.set_read_timeout(Some(TIMEOUT)).unwrap();
    client
        .write_all(b"GET /hello HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).unwrap();
    assert_eq!(
        response,
        b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    );
}

/// The server side of [`http_exchange`]: read the request, reply, close.
fn serve_http(mut next: impl FnMut() -> Vec<Vec<u8>>, mut send: impl FnMut(Message)) {
    let id = notification(next());
    let mut request = Vec::new();
    while !request.ends_with(b"\r\n\r\n") {
        let m = next();
        assert_eq!(m[0], id);
        request.extend_from_slice(&m[1]);
    }
    assert!(request.starts_with(b"GET /hello HTTP/1.0\r\n"));
    let id = Bytes::from(id);
    send(Message::from(vec![
        id.clone(),
        Bytes::from_static(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
    ]));
    send(Message::from(vec![id, Bytes::new()]));
}

#[test]
fn http_over_mio() {
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    let ep = us.bind("tcp://127.0.0.1:*").unwrap();
    let client = std::thread::spawn(move || http_exchange(&ep));
    serve_http(
        || recv(&us),
        |m| {
            us.send(m).unwrap();
        },
    );
    client.join().unwrap();
    // We closed it: no disconnect notification.
    assert!(us.recv_timeout(Some(Duration::from_millis(200))).is_err());
}

#[test]
fn http_over_tokio() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let us = zmtp_tokio::Socket::new(SocketType::Stream).unwrap();
        let ep = us.bind("tcp://127.0.0.1:*").await.unwrap();
        let client = std::thread::spawn(move || http_exchange(&ep));
        let mut out = Vec::new();
        let id = notification(frames(&us.recv().await.unwrap()));
        let mut request = Vec::new();
        while !request.ends_with(b"\r\n\r\n") {
            let m = frames(&us.recv().await.unwrap());
            assert_eq!(m[0], id);
            request.extend_from_slice(&m[1]);
        }
        serve_http_reply(&id, &mut out);
        for m in out {
            us.send(m).await.unwrap();
        }
        tokio::task::spawn_blocking(move || client.join().unwrap())
            .await
            .unwrap();
        us.close().await;
    });
}

#[test]
fn http_over_smol() {
    smol::block_on(async {
        let us = zmtp_smol::Socket::new(SocketType::Stream).unwrap();
        let ep = us.bind("tcp://127.0.0.1:*").await.unwrap();
        let client = std::thread::spawn(move || http_exchange(&ep));
        let mut out = Vec::new();
        let id = notification(frames(&us.recv().await.unwrap()));
        let mut request = Vec::new();
        while !request.ends_with(b"\r\n\r\n") {
            let m = frames(&us.recv().await.unwrap());
            assert_eq!(m[0], id);
            request.extend_from_slice(&m[1]);
        }
        serve_http_reply(&id, &mut out);
        for m in out {
            us.send(m).await.unwrap();
        }
        smol::unblock(move || client.join().unwrap()).await;
        us.close().await;
    });
}

/// The reply and the close of [`serve_http`], as messages.
fn serve_http_reply(id: &[u8], out: &mut Vec<Message>) {
    let id = Bytes::copy_from_slice(id);
    out.push(Message::from(vec![
        id.clone(),
        Bytes::from_static(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
    ]));
    out.push(Message::from(vec![id, Bytes::new()]));
}

#[test]
fn a_client_that_hangs_up_mid_request() {
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    let ep = us.bind("tcp://127.0.0.1:*").unwrap();
    let mut client = TcpStream::connect(ep.strip_prefix("tcp://").unwrap()).unwrap();
    let id = notification(recv(&us));
    client.write_all(b"GET /half HT").unwrap();
    drop(client);
    assert_eq!(gather(|| recv(&us), &id, 12), b"GET /half HT");
    assert_eq!(notification(recv(&us)), id);
    // Its id is gone.
    let refused = us.try_send(Message::from(vec![
        Bytes::from(id),
        Bytes::from_static(b"x"),
    ]));
    assert!(
        matches!(
            refused,
            Err(zmtp_proto::socket::SendError::HostUnreachable(_))
        ),
        "{refused:?}"
    );
}

#[test]
fn a_thousand_connections_each_announced_once_up_and_once_down() {
    const N: usize = 1000;
    const BATCH: usize = 50;
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    let ep = us.bind("tcp://127.0.0.1:*").unwrap();
    let addr = ep.strip_prefix("tcp://").unwrap().to_string();
    let client = std::thread::spawn(move || {
        for _ in 0..N / BATCH {
            let streams: Vec<TcpStream> = (0..BATCH)
                .map(|_| TcpStream::connect(&addr).unwrap())
                .collect();
            drop(streams);
        }
    });
    // id -> (ups, downs)
    let mut seen: BTreeMap<Vec<u8>, (u32, u32)> = BTreeMap::new();
    let mut downs = 0;
    while downs < N {
        let m = recv(&us);
        let id = notification(m);
        let e = seen.entry(id).or_default();
        if e.0 == 0 {
            e.0 += 1;
        } else {
            e.1 += 1;
            downs += 1;
        }
    }
    client.join().unwrap();
    assert!(us.recv_timeout(Some(Duration::from_millis(300))).is_err());
    assert_eq!(seen.len(), N, "a distinct id per connection");
    assert!(
        seen.values().all(|&c| c == (1, 1)),
        "each once up, once down"
    );
}

#[test]
fn our_streams_talk_over_ipc() {
    let ctx = mio_context();
    let dir = std::env::temp_dir().join(format!("zmtp-stream-{}", std::process::id()));
    {
        let ep = format!("ipc://{}", dir.display());
        let a = ours(&ctx, Options::default());
        let bound = a.bind(&ep).unwrap();
        let b = ours(&ctx, Options::default());
        b.connect(&bound).unwrap();
        let b_id = notification(recv(&b));
        let a_id = notification(recv(&a));
        b.send(Message::from(vec![
            Bytes::from(b_id.clone()),
            Bytes::from(vec![7u8; 100_000]),
        ]))
        .unwrap();
        assert_eq!(
            gather(|| recv(&a), &a_id, 100_000),
            vec![7u8; 100_000],
            "{ep}"
        );
        a.send(Message::from(vec![
            Bytes::from(a_id.clone()),
            Bytes::from_static(b"ok"),
        ]))
        .unwrap();
        assert_eq!(gather(|| recv(&b), &b_id, 2), b"ok", "{ep}");
        b.send(Message::from(vec![Bytes::from(b_id), Bytes::new()]))
            .unwrap();
        assert_eq!(notification(recv(&a)), a_id, "{ep}");
    }
    let _ = std::fs::remove_file(&dir);
}

/// The next message of a tokio socket, in time.
async fn next(s: &zmtp_tokio::Socket) -> Vec<Vec<u8>> {
    frames(
        &tokio::time::timeout(TIMEOUT, s.recv())
            .await
            .unwrap()
            .unwrap(),
    )
}

#[test]
fn our_streams_talk_over_inproc() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let a = zmtp_tokio::Socket::new(SocketType::Stream).unwrap();
        a.bind("inproc://zmtp-stream-test").await.unwrap();
        let b = zmtp_tokio::Socket::new(SocketType::Stream).unwrap();
        b.connect("inproc://zmtp-stream-test").unwrap();
        let b_id = notification(next(&b).await);
        let a_id = notification(next(&a).await);
        let big = vec![7u8; 100_000];
        b.send(Message::from(vec![
            Bytes::from(b_id.clone()),
            Bytes::from(big.clone()),
        ]))
        .await
        .unwrap();
        let mut got = Vec::new();
        while got.len() < big.len() {
            let m = next(&a).await;
            assert_eq!(m[0], a_id);
            got.extend_from_slice(&m[1]);
        }
        assert_eq!(got, big);
        b.send(Message::from(vec![Bytes::from(b_id), Bytes::new()]))
            .await
            .unwrap();
        assert_eq!(notification(next(&a).await), a_id);
    });
}

// ----- our STREAM as the client of a plain TCP server ------------------------------------

/// The body of [`plain_server`]'s response.
const BODY_LEN: usize = 3000;
/// How much of the body a server that hangs up mid-response writes.
const CUT_AT: usize = 1100;
const REQUEST: &[u8] = b"GET /file HTTP/1.0\r\nHost: plain\r\n\r\n";

/// The response of [`plain_server`]: a head and a [`BODY_LEN`]-byte body.
fn response() -> Vec<u8> {
    let mut r = format!("HTTP/1.0 200 OK\r\nContent-Length: {BODY_LEN}\r\n\r\n").into_bytes();
    r.extend((0..BODY_LEN).map(|i| b'a' + (i % 26) as u8));
    r
}

/// A plain TCP server (no ZMTP) on `127.0.0.1`: it accepts one connection, reads a request
/// up to its blank line, writes the response (all of it, or with `cut` only up to
/// [`CUT_AT`] bytes of the body) in small pieces with pauses between some of them, then
/// closes the connection. Returns the endpoint and the thread, which yields the request.
fn plain_server(cut: bool) -> (String, std::thread::JoinHandle<Vec<u8>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 256];
        while !request.ends_with(b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert!(n > 0, "the client hung up before its request was complete");
            request.extend_from_slice(&buf[..n]);
        }
        let mut out = response();
        if cut {
            out.truncate(out.len() - BODY_LEN + CUT_AT);
        }
        for (i, piece) in out.chunks(97).enumerate() {
            conn.write_all(piece).unwrap();
            if i % 8 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // Closing the connection (and the listener: nothing answers a reconnect).
        drop(conn);
        request
    });
    (endpoint, server)
}

/// The client side, message by message: the up notification, which makes it send the
/// request; the response's chunks; the server's close as a disconnect notification.
#[derive(Default)]
struct PlainClient {
    id: Option<Vec<u8>>,
    response: Vec<u8>,
    chunks: usize,
    closed: bool,
}

impl PlainClient {
    /// Take one received message; returns what to send, if anything.
    fn on(&mut self, m: Vec<Vec<u8>>) -> Option<Message> {
        assert!(!self.closed, "a message after the disconnect: {m:?}");
        let Some(id) = &self.id else {
            let id = notification(m);
            self.id = Some(id.clone());
            return Some(Message::from(vec![
                Bytes::from(id),
                Bytes::from_static(REQUEST),
            ]));
        };
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(&m[0], id, "one connection only");
        if m[1].is_empty() {
            self.closed = true;
        } else {
            self.chunks += 1;
            self.response.extend_from_slice(&m[1]);
        }
        None
    }

    /// After the disconnect: the server got the request, we got what it wrote.
    fn check(&self, server: std::thread::JoinHandle<Vec<u8>>, cut: bool) {
        assert!(self.closed);
        assert_eq!(server.join().unwrap(), REQUEST);
        let mut want = response();
        if cut {
            want.truncate(want.len() - BODY_LEN + CUT_AT);
        }
        assert_eq!(self.response.len(), want.len(), "response length");
        assert!(self.response == want, "the response differs");
        assert!(self.chunks >= 1);
    }
}

fn plain_server_over_mio(cut: bool) {
    let (ep, server) = plain_server(cut);
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    us.connect(&ep).unwrap();
    let mut client = PlainClient::default();
    while !client.closed {
        if let Some(out) = client.on(recv(&us)) {
            us.send(out).unwrap();
        }
    }
    client.check(server, cut);
}

fn plain_server_over_tokio(cut: bool) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (ep, server) = plain_server(cut);
        let us = zmtp_tokio::Socket::new(SocketType::Stream).unwrap();
        us.connect(&ep).unwrap();
        let mut client = PlainClient::default();
        while !client.closed {
            if let Some(out) = client.on(next(&us).await) {
                us.send(out).await.unwrap();
            }
        }
        let client = tokio::task::spawn_blocking(move || {
            client.check(server, cut);
        });
        client.await.unwrap();
    });
}

fn plain_server_over_smol(cut: bool) {
    smol::block_on(async {
        let (ep, server) = plain_server(cut);
        let us = zmtp_smol::Socket::new(SocketType::Stream).unwrap();
        us.connect(&ep).unwrap();
        let mut client = PlainClient::default();
        while !client.closed {
            let m = smol::future::or(async { Some(us.recv().await.unwrap()) }, async {
                smol::Timer::after(TIMEOUT).await;
                None
            })
            .await
            .expect("a message in time");
            if let Some(out) = client.on(frames(&m)) {
                us.send(out).await.unwrap();
            }
        }
        smol::unblock(move || client.check(server, cut)).await;
    });
}

#[test]
fn our_stream_is_the_client_of_a_plain_server_over_mio() {
    plain_server_over_mio(false);
}

#[test]
fn our_stream_is_the_client_of_a_plain_server_over_tokio() {
    plain_server_over_tokio(false);
}

#[test]
fn our_stream_is_the_client_of_a_plain_server_over_smol() {
    plain_server_over_smol(false);
}

#[test]
fn a_plain_server_that_hangs_up_mid_response_over_mio() {
    plain_server_over_mio(true);
}

#[test]
fn a_plain_server_that_hangs_up_mid_response_over_tokio() {
    plain_server_over_tokio(true);
}

#[test]
fn a_plain_server_that_hangs_up_mid_response_over_smol() {
    plain_server_over_smol(true);
}

// ----- transports a STREAM refuses -------------------------------------------------------

/// ws://, wss:// and udp:// are refused at bind and connect, with the typed error.
fn refused(result: Result<impl std::fmt::Debug, zmtp_driver::Error>, transport: &str, bind: bool) {
    match result {
        Err(zmtp_driver::Error::Endpoint(EndpointError::IncompatibleTransport {
            transport: t,
            socket_type: SocketType::Stream,
            bind: b,
        })) if t == transport && b == bind => {}
        other => panic!("{transport} (bind: {bind}): {other:?}"),
    }
}

const NOT_RAW: [(&str, &str); 3] = [
    ("ws://127.0.0.1:0", "ws"),
    ("wss://127.0.0.1:0", "wss"),
    ("udp://127.0.0.1:0", "udp"),
];
const NOT_RAW_CONNECT: [(&str, &str); 3] = [
    ("ws://127.0.0.1:5999", "ws"),
    ("wss://127.0.0.1:5999", "wss"),
    ("udp://127.0.0.1:5999", "udp"),
];

#[test]
fn stream_refuses_ws_wss_and_udp_over_mio() {
    let ctx = mio_context();
    let us = ours(&ctx, Options::default());
    for (ep, t) in NOT_RAW {
        refused(us.bind(ep), t, true);
    }
    for (ep, t) in NOT_RAW_CONNECT {
        refused(us.connect(ep), t, false);
    }
}

#[test]
fn stream_refuses_ws_wss_and_udp_over_tokio() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let us = zmtp_tokio::Socket::new(SocketType::Stream).unwrap();
        for (ep, t) in NOT_RAW {
            refused(us.bind(ep).await, t, true);
        }
        for (ep, t) in NOT_RAW_CONNECT {
            refused(us.connect(ep), t, false);
        }
    });
}

#[test]
fn stream_refuses_ws_wss_and_udp_over_smol() {
    smol::block_on(async {
        let us = zmtp_smol::Socket::new(SocketType::Stream).unwrap();
        for (ep, t) in NOT_RAW {
            refused(us.bind(ep).await, t, true);
        }
        for (ep, t) in NOT_RAW_CONNECT {
            refused(us.connect(ep), t, false);
        }
    });
}
