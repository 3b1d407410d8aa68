//! Hostile peers over real sockets: a `ws://` PULL (and one REP) of ours bound on
//! 127.0.0.1, fed by raw TCP connections that break the WebSocket upgrade or the framing,
//! and a `udp://` DISH fed malformed datagrams.
//!
//! For each hostile input the test checks that our side closes the connection (a read
//! gives end of file or a reset within [`TIMEOUT`]), that the socket's monitor reports the
//! typed error, and that a well-behaved peer connecting afterwards is still served (our
//! own PUSH or REQ over `ws://`). A panic in the socket's tasks would fail the last step.
//!
//! The core refuses fragmented WebSocket messages, as libzmq does (see
//! `zmtp_proto::ws::Decoder`): a data frame without FIN and a continuation frame are
//! both refused, so there is no legitimate fragmented message to deliver here.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::timeout;
use zmtp_proto::ws::{AcceptKey, FrameError, HandshakeError, MAX_HEAD_LEN};
use zmtp_tokio::{Message, Monitor, Options, Socket, SocketType};

/// The longest wait of a step.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The client key of RFC 6455's example, and the accept value it calls for.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// A socket of ours bound on `ws://127.0.0.1:*`, its monitor (opened before the bind), the
/// endpoint it reports and the address to dial.
struct Server {
    socket: Socket,
    monitor: Monitor,
    endpoint: String,
    addr: SocketAddr,
}

async fn server(ty: SocketType, options: Options) -> Server {
    let socket = Socket::with_options(ty, options).expect("a socket");
    let monitor = socket.monitor();
    let endpoint = socket.bind("ws://127.0.0.1:*").await.expect("bind ws");
    assert_eq!(socket.last_endpoint(), endpoint);
    let hostport = endpoint
        .strip_prefix("ws://")
        .and_then(|rest| rest.split('/').next())
        .expect("a ws endpoint");
    let addr = hostport.parse().expect("an address");
    Server {
        socket,
        monitor,
        endpoint,
        addr,
    }
}

async fn pull() -> Server {
    server(SocketType::Pull, Options::default()).await
}

/// Wait until our side ends the connection: a read gives end of file or a reset. Returns
/// what was read before (a `400` answer to a refused upgrade, for example).
async fn expect_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "the connection is still open after {TIMEOUT:?} (read {} bytes)",
                seen.len()
            ),
            Ok(Ok(0)) => return seen,
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => return seen,
            Ok(Err(e)) => panic!("unexpected read error: {e}"),
        }
    }
}

/// The typed error of the first monitor event that carries one, within [`TIMEOUT`].
async fn monitored_error(monitor: &mut Monitor) -> zmtp_proto::Error {
    let deadline = Instant::now() + TIMEOUT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, monitor.next()).await {
            Ok(Some(event)) => match event.error {
                Some(error) => return error,
                None => seen.push(event.kind),
            },
            Ok(None) => panic!("the monitor ended; events seen: {seen:?}"),
            Err(_) => panic!("no monitor event with an error; events seen: {seen:?}"),
        }
    }
}

/// A well-behaved PUSH of ours connecting to the server now still gets a message through.
async fn still_serves_push(server: &Server) {
    let push = Socket::new(SocketType::Push).expect("a PUSH");
    push.connect(&server.endpoint).expect("connect");
    push.send("after").await.expect("send");
    let got = timeout(TIMEOUT, server.socket.recv())
        .await
        .expect("a message from the well-behaved peer")
        .expect("recv");
    assert_eq!(got.to_str(), Ok("after"));
    push.close().await;
}

/// A raw connection to the server.
async fn dial(server: &Server) -> TcpStream {
    TcpStream::connect(server.addr).await.expect("connect")
}

/// The upgrade request a ZWS client writes, with `headers` (each ending in CRLF) after
/// the request line.
fn request(headers: &str) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\n{headers}\r\n").into_bytes()
}

/// The headers of a valid ZWS upgrade.
fn valid_headers() -> String {
    format!(
        "Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: ZWS2.0/NULL\r\n"
    )
}

/// Upgrade `stream` to WebSocket, checking the server's `101` answer and its
/// `Sec-WebSocket-Accept` (computed here from RFC 6455's example too).
async fn upgrade(stream: &mut TcpStream) {
    stream
        .write_all(&request(&valid_headers()))
        .await
        .expect("write the upgrade");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = timeout(TIMEOUT, stream.read(&mut byte))
            .await
            .expect("the upgrade answer")
            .expect("read");
        assert_eq!(n, 1, "closed during the upgrade answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("an ASCII head");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let accept = AcceptKey::for_key(KEY.as_bytes());
    assert_eq!(accept.as_str(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    let line = format!("sec-websocket-accept: {}", accept.as_str());
    assert!(
        head.to_ascii_lowercase()
            .contains(&line.to_ascii_lowercase()),
        "{head}"
    );
    assert!(head.contains("ZWS2.0/NULL"), "{head}");
}

/// A WebSocket frame: the first byte (FIN and opcode), the payload length as announced
/// (which may lie), the mask key (a client's, if any) and the payload sent with it.
fn frame(first: u8, announced: u64, mask: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    let bit = if mask.is_some() { 0x80 } else { 0 };
    match announced {
        0..=125 => out.push(bit | announced as u8),
        126..=0xffff => {
            out.push(bit | 126);
            out.extend_from_slice(&(announced as u16).to_be_bytes());
        }
        _ => {
            out.push(bit | 127);
            out.extend_from_slice(&announced.to_be_bytes());
        }
    }
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
/// FIN and the binary opcode.
const BINARY: u8 = 0x82;

/// A ZWS frame from a client: the flags byte and the body, masked, one binary message.
fn zws(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut payload = vec![flags];
    payload.extend_from_slice(body);
    frame(BINARY, payload.len() as u64, Some(MASK), &payload)
}

/// Our READY as a PUSH (NULL mechanism): `READY`, then `Socket-Type` = `PUSH`.
fn ready_push() -> Vec<u8> {
    let mut body = vec![5];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&4u32.to_be_bytes());
    body.extend_from_slice(b"PUSH");
    zws(0x02, &body)
}

/// Upgrade, then complete the ZMTP handshake as a PUSH: from here a data frame would be
/// delivered to the PULL.
async fn handshake_as_push(stream: &mut TcpStream) {
    upgrade(stream).await;
    stream.write_all(&ready_push()).await.expect("write READY");
}

/// Send `head` as a refused upgrade: our side closes, the monitor reports `expected`, and
/// a good peer is served afterwards.
async fn refused_upgrade(head: &[u8], expected: HandshakeError) {
    let mut server = pull().await;
    let mut stream = dial(&server).await;
    stream.write_all(head).await.expect("write");
    let answer = expect_closed(&mut stream).await;
    assert!(
        answer.is_empty() || answer.starts_with(b"HTTP/1.1 400"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(
        monitored_error(&mut server.monitor).await,
        zmtp_proto::Error::WsHandshake(expected)
    );
    still_serves_push(&server).await;
}

#[tokio::test]
async fn garbage_request_line_is_refused() {
    refused_upgrade(b"HELLO there\r\n\r\n", HandshakeError::NotGet).await;
}

#[tokio::test]
async fn upgrade_without_key_is_refused() {
    let headers = valid_headers().replace(&format!("Sec-WebSocket-Key: {KEY}\r\n"), "");
    refused_upgrade(&request(&headers), HandshakeError::MissingKey).await;
}

#[tokio::test]
async fn wrong_upgrade_header_is_refused() {
    let headers = valid_headers().replace("Upgrade: websocket", "Upgrade: h2c");
    refused_upgrade(&request(&headers), HandshakeError::MissingUpgrade).await;
}

/// 64 KiB of headers without the blank line, written 1 KiB at a time: our side closes
/// once the head passes [`MAX_HEAD_LEN`] (8 KiB), long before the 64 KiB are written, so
/// what it buffers is bounded by the limit, not by what the peer sends.
#[tokio::test]
async fn oversized_header_block_is_cut_off_at_the_limit() {
    let mut server = pull().await;
    let mut stream = dial(&server).await;
    stream
        .write_all(b"GET / HTTP/1.1\r\n")
        .await
        .expect("write");
    let line = format!("X-Filler: {}\r\n", "a".repeat(1024 - 12));
    assert_eq!(line.len(), 1024);
    let mut written = 0;
    let mut closed_at = None;
    for _ in 0..64 {
        if stream.write_all(line.as_bytes()).await.is_err() {
            closed_at = Some(written);
            break;
        }
        written += line.len();
        // Past the limit, wait a little for our side to read and close.
        if written > MAX_HEAD_LEN {
            let mut probe = [0u8; 64];
            if let Ok(read) = timeout(Duration::from_millis(20), stream.read(&mut probe)).await {
                if !matches!(read, Ok(n) if n > 0) {
                    closed_at = Some(written);
                    break;
                }
            }
        }
    }
    let closed_at = closed_at.expect("our side read all 64 KiB without closing");
    eprintln!("closed after {closed_at} bytes of head");
    // The limit, and what was already on its way when our side saw it.
    assert!(
        closed_at <= MAX_HEAD_LEN + 2 * line.len(),
        "closed only after {closed_at} bytes"
    );
    assert_eq!(
        monitored_error(&mut server.monitor).await,
        zmtp_proto::Error::WsHandshake(HandshakeError::HeadTooLarge)
    );
    still_serves_push(&server).await;
}

/// Send `frames` after a valid upgrade (and the READY, if `ready`): our side closes and the
/// monitor reports `expected`; a good peer is served afterwards.
async fn refused_frames(options: Options, ready: bool, frames: &[u8], expected: zmtp_proto::Error) {
    let mut server = server(SocketType::Pull, options).await;
    let mut stream = dial(&server).await;
    if ready {
        handshake_as_push(&mut stream).await;
    } else {
        upgrade(&mut stream).await;
    }
    stream.write_all(frames).await.expect("write the frames");
    expect_closed(&mut stream).await;
    assert_eq!(monitored_error(&mut server.monitor).await, expected);
    still_serves_push(&server).await;
}

#[tokio::test]
async fn unmasked_client_frame_is_refused() {
    // A READY command, unmasked.
    let unmasked = frame(BINARY, 7, None, b"\x02\x05READY");
    refused_frames(
        Options::default(),
        false,
        &unmasked,
        zmtp_proto::Error::WsFrame(FrameError::Unmasked),
    )
    .await;
}

#[tokio::test]
async fn unmasked_data_frame_after_the_handshake_is_refused() {
    refused_frames(
        Options::default(),
        true,
        &frame(BINARY, 6, None, b"\x00hello"),
        zmtp_proto::Error::WsFrame(FrameError::Unmasked),
    )
    .await;
}

/// A frame announcing 2^40 bytes, on a socket with MAXMSGSIZE 1 MiB: refused from its
/// header, before any of the body.
#[tokio::test]
async fn frame_announcing_a_terabyte_is_refused_over_maxmsgsize() {
    let options = Options::default().with_maxmsgsize(Some(1 << 20));
    refused_frames(
        options,
        true,
        &frame(BINARY, 1 << 40, Some(MASK), b"\x00"),
        zmtp_proto::Error::WsFrame(FrameError::TooLarge {
            size: (1 << 40) - 1,
            limit: 1 << 20,
        }),
    )
    .await;
}

/// A frame one byte over MAXMSGSIZE (1,000 bytes here), sent whole.
#[tokio::test]
async fn frame_one_byte_over_maxmsgsize_is_refused() {
    let options = Options::default().with_maxmsgsize(Some(1000));
    refused_frames(
        options,
        true,
        &zws(0x00, &[b'x'; 1001]),
        zmtp_proto::Error::WsFrame(FrameError::TooLarge {
            size: 1001,
            limit: 1000,
        }),
    )
    .await;
}

/// A 64-bit length with its top bit set is not a length.
#[tokio::test]
async fn frame_length_with_its_top_bit_set_is_refused() {
    refused_frames(
        Options::default(),
        true,
        &frame(BINARY, 1 << 63, Some(MASK), b"\x00"),
        zmtp_proto::Error::WsFrame(FrameError::BadLength),
    )
    .await;
}

/// Without MAXMSGSIZE a frame announcing 2^40 bytes is not refused from its header; the
/// body is read as it comes (nothing is reserved for the announced length, or the process
/// would abort here), and a peer that never completes its handshake is dropped at
/// HANDSHAKE_IVL. Other peers are served meanwhile.
#[tokio::test]
async fn frame_announcing_a_terabyte_without_maxmsgsize_costs_only_what_arrives() {
    let options = Options::default().with_handshake_ivl(Some(Duration::from_millis(500)));
    let mut server = server(SocketType::Pull, options).await;
    let mut stream = dial(&server).await;
    upgrade(&mut stream).await;
    stream
        .write_all(&frame(BINARY, 1 << 40, Some(MASK), &[0u8; 64 * 1024]))
        .await
        .expect("write");
    still_serves_push(&server).await;
    expect_closed(&mut stream).await;
    assert_eq!(
        monitored_error(&mut server.monitor).await,
        zmtp_proto::Error::HandshakeTimeout
    );
    still_serves_push(&server).await;
}

/// The first fragment of a message (a binary frame without FIN).
#[tokio::test]
async fn fragmented_message_is_refused() {
    let mut first = zws(0x00, b"hel");
    first[0] = 0x02;
    let mut rest = zws(0x00, b"lo");
    rest[0] = 0x80;
    first.extend_from_slice(&rest);
    refused_frames(
        Options::default(),
        true,
        &first,
        zmtp_proto::Error::WsFrame(FrameError::Fragmented),
    )
    .await;
}

/// A continuation frame with no message started.
#[tokio::test]
async fn continuation_without_a_start_is_refused() {
    let mut lone = zws(0x00, b"hello");
    lone[0] = 0x80;
    refused_frames(
        Options::default(),
        true,
        &lone,
        zmtp_proto::Error::WsFrame(FrameError::Continuation),
    )
    .await;
}

/// A fragment start, then a new data frame where its continuation should be: refused at
/// the first fragment already.
#[tokio::test]
async fn new_message_inside_a_fragmented_one_is_refused() {
    let mut first = zws(0x00, b"hel");
    first[0] = 0x02;
    first.extend_from_slice(&zws(0x00, b"other"));
    refused_frames(
        Options::default(),
        true,
        &first,
        zmtp_proto::Error::WsFrame(FrameError::Fragmented),
    )
    .await;
}

/// A legitimate frame after the handshake is delivered: the raw client above speaks ZWS
/// well enough for the refusals to be about what they break.
#[tokio::test]
async fn raw_client_that_behaves_is_served() {
    let server = pull().await;
    let mut stream = dial(&server).await;
    handshake_as_push(&mut stream).await;
    stream
        .write_all(&zws(0x00, b"raw hello"))
        .await
        .expect("write");
    let got = timeout(TIMEOUT, server.socket.recv())
        .await
        .expect("the raw client's message")
        .expect("recv");
    assert_eq!(got.to_str(), Ok("raw hello"));
}

/// A REP refuses an unmasked frame the same way, and answers a good REQ afterwards.
#[tokio::test]
async fn rep_refuses_unmasked_frames_and_keeps_answering() {
    let mut server = server(SocketType::Rep, Options::default()).await;
    let mut stream = dial(&server).await;
    upgrade(&mut stream).await;
    stream
        .write_all(&frame(BINARY, 1, None, b"\x00"))
        .await
        .expect("write");
    expect_closed(&mut stream).await;
    assert_eq!(
        monitored_error(&mut server.monitor).await,
        zmtp_proto::Error::WsFrame(FrameError::Unmasked)
    );
    let req = Socket::new(SocketType::Req).expect("a REQ");
    req.connect(&server.endpoint).expect("connect");
    req.send("ping").await.expect("send");
    let request = timeout(TIMEOUT, server.socket.recv())
        .await
        .expect("the request")
        .expect("recv");
    server.socket.send(request).await.expect("reply");
    let reply = timeout(TIMEOUT, req.recv())
        .await
        .expect("the reply")
        .expect("recv");
    assert_eq!(reply.to_str(), Ok("ping"));
}

/// Datagrams a DISH cannot parse (a group length running past the end, an empty
/// datagram) are dropped; a good one after them is delivered.
#[tokio::test]
async fn dish_drops_datagrams_with_a_lying_group_length() {
    let dish = Socket::new(SocketType::Dish).expect("a DISH");
    dish.join("g").expect("join");
    let endpoint = dish.bind("udp://127.0.0.1:*").await.expect("bind udp");
    let port: u16 = endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    let sender = UdpSocket::bind("127.0.0.1:0").await.expect("bind a sender");
    sender.connect(("127.0.0.1", port)).await.expect("connect");
    let deadline = Instant::now() + TIMEOUT;
    // Until the good datagram arrives (UDP may lose any datagram, the good ones too).
    let got: Message = loop {
        assert!(
            Instant::now() < deadline,
            "no good datagram within {TIMEOUT:?}"
        );
        // The group length says 200 bytes; 6 follow.
        sender.send(b"\xc8ghello").await.expect("send");
        sender.send(b"\x05g").await.expect("send");
        sender.send(b"").await.expect("send");
        sender.send(b"\x01ghello").await.expect("send");
        if let Ok(got) = timeout(Duration::from_millis(50), dish.recv()).await {
            break got.expect("recv");
        }
    };
    assert_eq!(got.group(), Some(&b"g"[..]));
    assert_eq!(got.to_str(), Ok("hello"));
    // Only good datagrams are ever delivered.
    while let Ok(Some(more)) = dish.try_recv() {
        assert_eq!(more.to_str(), Ok("hello"));
    }
}
