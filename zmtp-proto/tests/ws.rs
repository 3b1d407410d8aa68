//! ZWS 2.0: the upgrade and the framing against the bytes libzmq 4.3.5 sends (see the
//! project's ZMTP notes, section 9.1), RFC 6455's example, every refusal as its typed
//! error, and property tests (round trips; arbitrary input in arbitrary pieces).

use proptest::collection::vec;
use proptest::prelude::*;
use zmtp_proto::codec::{Command, FrameFlags, Mechanism, Metadata, Status};
use zmtp_proto::ws::{
    apply_mask, control_len, emit_close, emit_command, emit_frame, emit_frame_head, emit_ping,
    emit_pong, emit_response, frame_head_len, frame_len, AcceptKey, ClientHandshake, Decoder,
    FrameError, HandshakeError, Header, Opcode, Protocol, Received, Role, ServerHandshake, Target,
    MAX_HEAD_LEN, MAX_NAME_LEN, MAX_VALUE_LEN, REJECTION,
};
use zmtp_testkit::wire::zws;

const DATA: FrameFlags = FrameFlags {
    more: false,
    command: false,
};
const MORE: FrameFlags = FrameFlags {
    more: true,
    command: false,
};
const COMMAND: FrameFlags = FrameFlags {
    more: false,
    command: true,
};

fn pair_ready() -> Vec<u8> {
    b"\x0bSocket-Type\x00\x00\x00\x04PAIR".to_vec()
}

/// Decode one frame from a copy of `bytes`: the frame with its ranges resolved, and the
/// length consumed.
fn decode_one(decoder: &Decoder, bytes: &[u8]) -> Result<Option<(Kind, usize)>, FrameError> {
    let mut buf = bytes.to_vec();
    match decoder.decode(&mut buf)? {
        Status::Partial => Ok(None),
        Status::Complete((received, used)) => Ok(Some((Kind::of(&received, &buf), used))),
    }
}

/// A decoded frame, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Frame(FrameFlags, Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Vec<u8>),
}

impl Kind {
    fn of(received: &Received, buf: &[u8]) -> Kind {
        match received {
            Received::Frame { flags, body } => Kind::Frame(*flags, buf[body.clone()].to_vec()),
            Received::Ping { payload } => Kind::Ping(buf[payload.clone()].to_vec()),
            Received::Pong { payload } => Kind::Pong(buf[payload.clone()].to_vec()),
            Received::Close { payload } => Kind::Close(buf[payload.clone()].to_vec()),
        }
    }
}

const CLIENT: Decoder = Decoder::new(Role::Client, None);
const SERVER: Decoder = Decoder::new(Role::Server, None);

// ----- the captures -----------------------------------------------------------------------

#[test]
fn server_ready_capture() {
    let meta = pair_ready();
    let ready = Command::Ready(Metadata::parse(&meta).unwrap());
    let mut out = [0u8; 64];
    let n = emit_command(&ready, None, &mut out).unwrap();
    assert_eq!(&out[..n], zws::SERVER_READY);
    assert_eq!(n, zmtp_proto::ws::command_len(&ready, false));

    let (kind, used) = decode_one(&CLIENT, zws::SERVER_READY).unwrap().unwrap();
    assert_eq!(used, zws::SERVER_READY.len());
    let Kind::Frame(flags, body) = kind else {
        panic!("{kind:?}")
    };
    assert_eq!(flags, COMMAND);
    assert_eq!(Command::parse(&body), Ok(ready));
    // A server does not take it: it is not masked.
    assert_eq!(
        decode_one(&SERVER, zws::SERVER_READY),
        Err(FrameError::Unmasked)
    );
}

#[test]
fn client_ready_capture() {
    let meta = pair_ready();
    let ready = Command::Ready(Metadata::parse(&meta).unwrap());
    let mut out = [0u8; 64];
    let n = emit_command(&ready, Some(zws::CLIENT_MASK), &mut out).unwrap();
    assert_eq!(&out[..n], zws::CLIENT_READY);
    assert_eq!(n, zmtp_proto::ws::command_len(&ready, true));

    let (kind, used) = decode_one(&SERVER, zws::CLIENT_READY).unwrap().unwrap();
    assert_eq!(used, zws::CLIENT_READY.len());
    assert_eq!(kind, Kind::Frame(COMMAND, zws::SERVER_READY[3..].to_vec()));
    // The same bytes as the server's READY once unmasked.
    let mut buf = zws::CLIENT_READY.to_vec();
    SERVER.decode(&mut buf).unwrap();
    assert_eq!(&buf[6..], &zws::SERVER_READY[2..]);
    assert_eq!(
        decode_one(&CLIENT, zws::CLIENT_READY),
        Err(FrameError::Masked)
    );
}

#[test]
fn data_pong_and_close_captures() {
    let mut out = [0u8; 16];
    let n = emit_frame(DATA, b"pong", None, &mut out).unwrap();
    assert_eq!(&out[..n], zws::SERVER_DATA);
    assert_eq!(
        decode_one(&CLIENT, zws::SERVER_DATA).unwrap(),
        Some((Kind::Frame(DATA, b"pong".to_vec()), 7))
    );

    // A ping with data gets an empty pong.
    let n = emit_ping(b"hb", None, &mut out).unwrap();
    assert_eq!(&out[..n], b"\x89\x02hb");
    assert_eq!(
        decode_one(&CLIENT, &out[..n]).unwrap(),
        Some((Kind::Ping(b"hb".to_vec()), 4))
    );
    let n = emit_pong(&[], None, &mut out).unwrap();
    assert_eq!(&out[..n], zws::PONG);
    assert_eq!(
        decode_one(&CLIENT, zws::PONG).unwrap(),
        Some((Kind::Pong(Vec::new()), 2))
    );

    // Close: the server echoes what the client sent, code 1000 and "bye".
    let key = [1, 2, 3, 4];
    let n = emit_close(b"\x03\xe8bye", Some(key), &mut out).unwrap();
    assert_eq!(&out[..2], b"\x88\x85");
    let (kind, used) = decode_one(&SERVER, &out[..n]).unwrap().unwrap();
    assert_eq!(
        (kind.clone(), used),
        (Kind::Close(b"\x03\xe8bye".to_vec()), 11)
    );
    let Kind::Close(payload) = kind else {
        unreachable!()
    };
    let n = emit_close(&payload, None, &mut out).unwrap();
    assert_eq!(&out[..n], zws::CLOSE_ECHO);
    assert_eq!(
        decode_one(&CLIENT, zws::CLOSE_ECHO).unwrap(),
        Some((Kind::Close(b"\x03\xe8bye".to_vec()), 7))
    );
}

// ----- the upgrade ------------------------------------------------------------------------

#[test]
fn rfc6455_accept_example() {
    let accept = AcceptKey::for_key(b"dGhlIHNhbXBsZSBub25jZQ==");
    assert_eq!(accept.as_str(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    // The RFC's key is the base64 of "the sample nonce".
    let client = ClientHandshake::new(Mechanism::NULL, *b"the sample nonce").unwrap();
    assert_eq!(client.key(), "dGhlIHNhbXBsZSBub25jZQ==");
    assert_eq!(client.expected_accept(), accept);
}

#[test]
fn libzmq_request_format() {
    let client = ClientHandshake::new(Mechanism::NULL, zws::LIBZMQ_NONCE).unwrap();
    assert_eq!(client.key(), zws::LIBZMQ_KEY);
    let target = Target::from_address("ws://127.0.0.1:5555/some/path?q=1").unwrap();
    assert_eq!((target.host(), target.path()), ("127.0.0.1", "/path?q=1"));
    let mut out = [0u8; 512];
    let n = client.emit_request(&target, &mut out).unwrap();
    assert_eq!(
        std::str::from_utf8(&out[..n]).unwrap(),
        std::str::from_utf8(zws::NULL_REQUEST).unwrap()
    );
    assert_eq!(client.request_len(&target), n);
    // Too small a buffer, by any amount, names the size needed.
    for short in [0, 1, 20, n - 1] {
        assert_eq!(
            client
                .emit_request(&target, &mut vec![0u8; short])
                .map_err(|e| e.required),
            Err(n)
        );
    }

    for (mechanism, list) in [
        (Mechanism::PLAIN, "ZWS2.0/PLAIN"),
        (Mechanism::CURVE, "ZWS2.0/CURVE"),
    ] {
        let client = ClientHandshake::new(mechanism, [0; 16]).unwrap();
        let target = Target::from_address("h.example:1").unwrap();
        let n = client.emit_request(&target, &mut out).unwrap();
        let text = std::str::from_utf8(&out[..n]).unwrap();
        assert!(
            text.starts_with("GET / HTTP/1.1\r\nHost: h.example\r\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!("\r\nSec-WebSocket-Protocol: {list}\r\n")),
            "{text}"
        );
    }
    assert_eq!(
        ClientHandshake::new(Mechanism::from_name(b"GSSAPI"), [0; 16]),
        Err(HandshakeError::UnsupportedMechanism)
    );
}

#[test]
fn targets() {
    for (address, host, path) in [
        ("ws://h:1/some/path?q=1", "h", "/path?q=1"),
        ("h:1", "h", "/"),
        ("WS://h:1/", "h", "/"),
        ("wss://[::1]:5555/x", "[::1]", "/x"),
        ("ws://a:b:1/x:y", "a:b", "/x:y"),
    ] {
        let t = Target::from_address(address).unwrap();
        assert_eq!((t.host(), t.path()), (host, path), "{address}");
    }
    for bad in [
        "ws://h/path",
        "ws://:1/p",
        "ws://h h:1/p",
        "ws://h:1/p q",
        "ws://h\r\n:1",
    ] {
        assert_eq!(
            Target::from_address(bad),
            Err(HandshakeError::InvalidTarget),
            "{bad}"
        );
    }
    assert_eq!(Target::new("h", "p"), Err(HandshakeError::InvalidTarget));
    assert_eq!(Target::new("hé", "/"), Err(HandshakeError::InvalidTarget));
    assert!(Target::new("h", "/p").is_ok());
}

#[test]
fn libzmq_request_is_accepted_and_answered_as_libzmq_does() {
    let server = ServerHandshake::new(Mechanism::NULL).unwrap();
    let mut input = zws::NULL_REQUEST.to_vec();
    // The client's first frame may follow at once.
    input.extend_from_slice(zws::CLIENT_READY);
    let Status::Complete((req, used)) = server.parse_request(&input).unwrap() else {
        panic!("partial")
    };
    assert_eq!(used, zws::NULL_REQUEST.len());
    assert_eq!(req.protocol, Protocol::Null);
    assert!(!req.protocol.is_bare());
    assert_eq!(req.path, b"/path?q=1");
    assert_eq!(req.host, Some(&b"127.0.0.1"[..]));
    let mut out = [0u8; 256];
    let n = req.emit_response(&mut out).unwrap();
    assert_eq!(&out[..n], zws::NULL_RESPONSE);
    assert_eq!(req.response_len(), n);
    assert_eq!(emit_response(req.protocol, &req.accept, &mut out), Ok(n));
    assert_eq!(
        req.emit_response(&mut out[..n - 1]).map_err(|e| e.required),
        Err(n)
    );

    let client = ClientHandshake::new(Mechanism::NULL, zws::LIBZMQ_NONCE).unwrap();
    let mut input = zws::NULL_RESPONSE.to_vec();
    input.extend_from_slice(zws::SERVER_READY);
    assert_eq!(
        client.parse_response(&input),
        Ok(Status::Complete((Protocol::Null, zws::NULL_RESPONSE.len())))
    );
}

#[test]
fn every_prefix_is_partial() {
    let server = ServerHandshake::new(Mechanism::NULL).unwrap();
    for n in 0..zws::NULL_REQUEST.len() {
        assert_eq!(
            server.parse_request(&zws::NULL_REQUEST[..n]),
            Ok(Status::Partial),
            "{n}"
        );
    }
    let client = ClientHandshake::new(Mechanism::NULL, zws::LIBZMQ_NONCE).unwrap();
    for n in 0..zws::NULL_RESPONSE.len() {
        assert_eq!(
            client.parse_response(&zws::NULL_RESPONSE[..n]),
            Ok(Status::Partial),
            "{n}"
        );
    }
}

/// A request with the given protocol header lines (none when empty).
fn request_with(protocol_lines: &[&str]) -> Vec<u8> {
    let mut r = String::from(
        "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    );
    for line in protocol_lines {
        r.push_str("Sec-WebSocket-Protocol: ");
        r.push_str(line);
        r.push_str("\r\n");
    }
    r.push_str("\r\n");
    r.into_bytes()
}

fn chosen(mechanism: Mechanism, lines: &[&str]) -> Result<Protocol, HandshakeError> {
    let server = ServerHandshake::new(mechanism).unwrap();
    match server.parse_request(&request_with(lines))? {
        Status::Complete((req, _)) => Ok(req.protocol),
        Status::Partial => panic!("partial"),
    }
}

#[test]
fn protocol_choice() {
    use Protocol::*;
    let null = Mechanism::NULL;
    let plain = Mechanism::PLAIN;
    let curve = Mechanism::CURVE;
    for (mechanism, lines, expected) in [
        // The notes' case: PLAIN is skipped by a NULL socket.
        (null, &["ZWS2.0/PLAIN, ZWS2.0/NULL"][..], Ok(Null)),
        // RFC 45's order: libzmq picks bare, we prefer NULL.
        (null, &["ZWS2.0,ZWS2.0/NULL"], Ok(Null)),
        (null, &["ZWS2.0", "ZWS2.0/NULL"], Ok(Null)),
        (null, &["ZWS2.0/NULL,ZWS2.0"], Ok(Null)),
        (null, &["ZWS2.0"], Ok(Bare)),
        (null, &["x, ZWS2.0 ,y"], Ok(Bare)),
        (
            null,
            &["ZWS2.0/PLAIN", "ZWS2.0/CURVE"],
            Err(HandshakeError::NoProtocol),
        ),
        (null, &["zws2.0/null"], Err(HandshakeError::NoProtocol)),
        (null, &[], Err(HandshakeError::NoProtocol)),
        (null, &[""], Err(HandshakeError::NoProtocol)),
        (plain, &["ZWS2.0/NULL,ZWS2.0,ZWS2.0/PLAIN"], Ok(Plain)),
        (
            plain,
            &["ZWS2.0/NULL,ZWS2.0"],
            Err(HandshakeError::NoProtocol),
        ),
        (
            curve,
            &["ZWS2.0/PLAIN", "\tZWS2.0/CURVE\t,ZWS2.0/NULL"],
            Ok(Curve),
        ),
        (curve, &["ZWS2.0"], Err(HandshakeError::NoProtocol)),
    ] {
        assert_eq!(
            chosen(mechanism, lines),
            expected,
            "{mechanism:?} {lines:?}"
        );
    }
    assert_eq!(
        ServerHandshake::new(Mechanism::from_name(b"X")),
        Err(HandshakeError::UnsupportedMechanism)
    );
    for p in Protocol::ALL {
        assert_eq!(Protocol::from_name(p.name().as_bytes()), Some(p));
        assert!(p.accepted_by(p.mechanism()));
        assert_eq!(p.is_bare(), p == Bare);
    }
    assert_eq!(Protocol::offered(null), &[Null, Bare]);
}

/// A minimal valid request with `edit` applied (a textual replacement of the first match).
fn edited_request(from: &str, to: &str) -> Vec<u8> {
    let base = String::from_utf8(request_with(&["ZWS2.0/NULL"])).unwrap();
    assert!(base.contains(from), "{from}");
    base.replacen(from, to, 1).into_bytes()
}

fn parse_request(input: &[u8]) -> Result<Status<Protocol>, HandshakeError> {
    let server = ServerHandshake::new(Mechanism::NULL).unwrap();
    Ok(match server.parse_request(input)? {
        Status::Complete((req, _)) => Status::Complete(req.protocol),
        Status::Partial => Status::Partial,
    })
}

#[test]
fn requests_accepted() {
    for (from, to) in [
        ("GET / ", "GET /anything?at=all "),
        ("Upgrade: websocket", "upgrade: WebSocket"),
        ("Upgrade: websocket", "Upgrade: h2c, websocket"),
        ("Connection: Upgrade", "CONNECTION: keep-alive, upgrade"),
        (
            "Connection: Upgrade",
            "Connection: Upgrade\r\nConnection: close",
        ),
        ("Host: h\r\n", ""),
        (
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "sec-websocket-key:x",
        ),
        (
            "\r\n\r\n",
            "\r\nSec-WebSocket-Version: 8\r\nX-Empty:\r\n\r\n",
        ),
    ] {
        assert_eq!(
            parse_request(&edited_request(from, to)),
            Ok(Status::Complete(Protocol::Null)),
            "{to}"
        );
    }
}

#[test]
fn requests_refused() {
    use HandshakeError::*;
    let long_name = "N".repeat(MAX_NAME_LEN + 1) + ": v";
    let long_value = "N: ".to_string() + &"v".repeat(MAX_VALUE_LEN + 1);
    let ok_name = "N".repeat(MAX_NAME_LEN) + ": " + &"v".repeat(MAX_VALUE_LEN);
    assert!(matches!(
        parse_request(&edited_request("Host: h", &ok_name)),
        Ok(Status::Complete(_))
    ));
    for (from, to, error) in [
        ("GET", "POST", NotGet),
        ("GET", "get", NotGet),
        ("GET / ", "GET  / ", Malformed),
        ("GET / ", "GET ", Malformed),
        ("HTTP/1.1", "HTTP/1.0", BadVersion),
        ("HTTP/1.1", "HTTP/1.10", BadVersion),
        ("HTTP/1.1", "HTTP/1.", BadVersion),
        ("Upgrade: websocket", "Upgrade: h2c", MissingUpgrade),
        ("Upgrade: websocket", "X: y", MissingUpgrade),
        (
            "Connection: Upgrade",
            "Connection: keep-alive",
            MissingConnectionUpgrade,
        ),
        (
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "X: y",
            MissingKey,
        ),
        (
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Key:  ",
            MissingKey,
        ),
        (
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Key: a\r\nSec-WebSocket-Key: b",
            DuplicateHeader("Sec-WebSocket-Key"),
        ),
        ("Sec-WebSocket-Protocol: ZWS2.0/NULL", "X: y", NoProtocol),
        ("Host: h", &long_name, NameTooLong),
        ("Host: h", &long_value, ValueTooLong),
        ("Host: h", "Host h", Malformed),
        ("Host: h", " Host: h", Malformed),
        ("Host: h", "Host : h", Malformed),
        ("Host: h", "Ho\0st: h", Malformed),
        ("Host: h", "Host: h\x01", Malformed),
        ("Host: h\r\n", "Host: h\n", Malformed),
        ("Host: h\r\n", "Host: h\r\r\n", Malformed),
        ("\r\n\r\n", "\r\n\n", Malformed),
    ] {
        assert_eq!(
            parse_request(&edited_request(from, to)),
            Err(error),
            "{from:?} -> {to:?}"
        );
    }
}

#[test]
fn head_size_bound() {
    // Filler headers to just under the bound: accepted; one byte more: refused, and
    // already before the end arrives.
    let base = request_with(&["ZWS2.0/NULL"]);
    let filler = |total: usize| {
        let mut r = base[..base.len() - 2].to_vec();
        // Lines "X: v...\r\n" of 5 to 1000 bytes.
        let mut need = total - base.len();
        while need > 0 {
            let line = match need {
                n if n <= 1000 => n,
                n if n - 1000 < 5 => n - 5,
                _ => 1000,
            };
            r.extend_from_slice(format!("X: {}\r\n", "v".repeat(line - 5)).as_bytes());
            need -= line;
        }
        r.extend_from_slice(b"\r\n");
        r
    };
    let max = filler(MAX_HEAD_LEN);
    assert_eq!(max.len(), MAX_HEAD_LEN);
    assert_eq!(parse_request(&max), Ok(Status::Complete(Protocol::Null)));
    let over = filler(MAX_HEAD_LEN + 1);
    assert_eq!(over.len(), MAX_HEAD_LEN + 1);
    assert_eq!(parse_request(&over), Err(HandshakeError::HeadTooLarge));
    assert_eq!(
        parse_request(&over[..MAX_HEAD_LEN]),
        Err(HandshakeError::HeadTooLarge)
    );
    assert_eq!(
        parse_request(&over[..MAX_HEAD_LEN - 1]),
        Ok(Status::Partial)
    );
}

#[test]
fn errors_arrive_before_the_end_of_the_head() {
    for (prefix, error) in [
        (&b"POST"[..], HandshakeError::NotGet),
        (b"GETX", HandshakeError::NotGet),
        (b"GET / HTTP/1.0", HandshakeError::BadVersion),
        (b"GET / HTTP/1.1\r\nA\0", HandshakeError::Malformed),
        (b"GET / HTTP/1.1\r\nA\n", HandshakeError::Malformed),
    ] {
        assert_eq!(parse_request(prefix), Err(error), "{prefix:?}");
    }
    let mut long = b"GET / HTTP/1.1\r\n".to_vec();
    long.extend(std::iter::repeat_n(b'N', MAX_NAME_LEN + 1));
    assert_eq!(parse_request(&long), Err(HandshakeError::NameTooLong));
}

/// A response for `client` with `edit` applied.
fn response_for(client: &ClientHandshake, protocol: &str, from: &str, to: &str) -> Vec<u8> {
    let base = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n",
        client.expected_accept().as_str()
    );
    assert!(base.contains(from), "{from}");
    base.replacen(from, to, 1).into_bytes()
}

fn parse_response(client: &ClientHandshake, input: &[u8]) -> Result<Protocol, HandshakeError> {
    match client.parse_response(input)? {
        Status::Complete((p, used)) => {
            assert_eq!(used, input.len());
            Ok(p)
        }
        Status::Partial => panic!("partial"),
    }
}

#[test]
fn responses() {
    use HandshakeError::*;
    let null = ClientHandshake::new(Mechanism::NULL, [9; 16]).unwrap();
    let plain = ClientHandshake::new(Mechanism::PLAIN, [9; 16]).unwrap();
    let accept = null.expected_accept();
    let accept = accept.as_str();
    for (client, protocol, from, to, expected) in [
        (&null, "ZWS2.0/NULL", "", "", Ok(Protocol::Null)),
        (&null, "ZWS2.0", "", "", Ok(Protocol::Bare)),
        (&plain, "ZWS2.0/PLAIN", "", "", Ok(Protocol::Plain)),
        (
            &null,
            "ZWS2.0/NULL",
            " Switching Protocols",
            " Whatever",
            Ok(Protocol::Null),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            " Switching Protocols",
            "",
            Ok(Protocol::Null),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "Connection: Upgrade",
            "connection: keep-alive, UPGRADE",
            Ok(Protocol::Null),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "Upgrade: websocket",
            "UPGRADE: WebSocket",
            Ok(Protocol::Null),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "Sec-WebSocket-Accept",
            "sec-websocket-accept",
            Ok(Protocol::Null),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "\r\n\r\n",
            "\r\nSec-WebSocket-Extensions:\r\n\r\n",
            Ok(Protocol::Null),
        ),
        // Refused.
        (&plain, "ZWS2.0/NULL", "", "", Err(UnofferedProtocol)),
        (&null, "ZWS2.0/PLAIN", "", "", Err(UnofferedProtocol)),
        (&null, "ZWS2.0/NULL,ZWS2.0", "", "", Err(UnofferedProtocol)),
        (&null, "zws2.0/null", "", "", Err(UnofferedProtocol)),
        (
            &null,
            "ZWS2.0/NULL",
            "Sec-WebSocket-Protocol: ZWS2.0/NULL",
            "X: y",
            Err(MissingProtocol),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "\r\n\r\n",
            "\r\nSec-WebSocket-Protocol: ZWS2.0\r\n\r\n",
            Err(DuplicateHeader("Sec-WebSocket-Protocol")),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "101",
            "200",
            Err(UnexpectedStatus(200)),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "101 Switching",
            "400 Bad",
            Err(UnexpectedStatus(400)),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "HTTP/1.1",
            "HTTP/1.0",
            Err(BadStatusLine),
        ),
        (&null, "ZWS2.0/NULL", "101 ", "101x", Err(BadStatusLine)),
        (&null, "ZWS2.0/NULL", "101", "1O1", Err(BadStatusLine)),
        (
            &null,
            "ZWS2.0/NULL",
            "Upgrade: websocket",
            "Upgrade: h2c",
            Err(MissingUpgrade),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "Connection: Upgrade",
            "Connection: close",
            Err(MissingConnectionUpgrade),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            accept,
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            Err(BadAccept),
        ),
        (&null, "ZWS2.0/NULL", accept, "x", Err(BadAccept)),
        (
            &null,
            "ZWS2.0/NULL",
            "Sec-WebSocket-Accept",
            "X-Accept",
            Err(MissingAccept),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "\r\n\r\n",
            "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
            Err(UnexpectedExtension),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "\r\n\r\n",
            "\r\nSec-WebSocket-Accept: x\r\n\r\n",
            Err(DuplicateHeader("Sec-WebSocket-Accept")),
        ),
        (
            &null,
            "ZWS2.0/NULL",
            "Upgrade: websocket\r\n",
            "Upgrade: websocket\n",
            Err(Malformed),
        ),
    ] {
        let input = response_for(client, protocol, from, to);
        assert_eq!(
            parse_response(client, &input),
            expected,
            "{}",
            String::from_utf8_lossy(&input)
        );
    }
}

#[test]
fn rejection_is_http() {
    let text = std::str::from_utf8(REJECTION).unwrap();
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"));
    assert!(text.ends_with("\r\n\r\n"));
    let client = ClientHandshake::new(Mechanism::NULL, [0; 16]).unwrap();
    assert_eq!(
        client.parse_response(REJECTION),
        Err(HandshakeError::UnexpectedStatus(400))
    );
}

// ----- framing ----------------------------------------------------------------------------

#[test]
fn hostile_frames() {
    use FrameError::*;
    let limited = Decoder::new(Role::Client, Some(10));
    for (decoder, bytes, error) in [
        (&CLIENT, &b"\x02\x02\x00x"[..], Fragmented),
        (&CLIENT, b"\x02", Fragmented),
        (&CLIENT, b"\x80\x02\x00x", Continuation),
        (&CLIENT, b"\x00\x02\x00x", Continuation),
        (&CLIENT, b"\x81\x02hi", Text),
        (&CLIENT, b"\x82\x00", EmptyBinary),
        (&CLIENT, b"\x82\x7e\x00\x00", EmptyBinary),
        (&CLIENT, b"\x82\x81\x00\x00\x00\x00\x00", Masked),
        (&SERVER, b"\x82\x01\x00", Unmasked),
        (&SERVER, b"\x8a\x00", Unmasked),
        (&CLIENT, b"\xc2\x01\x00", ReservedBits(0x40)),
        (&CLIENT, b"\xf2", ReservedBits(0x70)),
        (&CLIENT, b"\x83\x01\x00", UnknownOpcode(3)),
        (&CLIENT, b"\x8b", UnknownOpcode(0xB)),
        (&CLIENT, b"\x09\x00", FragmentedControl),
        (&CLIENT, b"\x89\x7e\x00\x7e", ControlTooLong),
        (&CLIENT, b"\x88\x7f", ControlTooLong),
        (
            &CLIENT,
            b"\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00",
            BadLength,
        ),
        (&CLIENT, b"\x82\x02\x04x", ReservedFlags(0x04)),
        (&CLIENT, b"\x82\x01\x80", ReservedFlags(0x80)),
        (&CLIENT, b"\x82\x02\x03x", CommandWithMore),
        (
            &limited,
            b"\x82\x0c\x00",
            TooLarge {
                size: 11,
                limit: 10,
            },
        ),
        (
            &limited,
            b"\x82\x7f\x7f\xff\xff\xff\xff\xff\xff\xff",
            TooLarge {
                size: (1 << 63) - 2,
                limit: 10,
            },
        ),
    ] {
        assert_eq!(decode_one(decoder, bytes), Err(error), "{bytes:02x?}");
    }
    // The flags byte is checked unmasked: 0x04 under key 0x04 is 0x00.
    let masked = [0x82, 0x81, 0x04, 0, 0, 0, 0x04];
    assert_eq!(
        decode_one(&SERVER, &masked).unwrap(),
        Some((Kind::Frame(DATA, Vec::new()), 7))
    );
    let masked = [0x82, 0x81, 0x00, 0, 0, 0, 0x04];
    assert_eq!(decode_one(&SERVER, &masked), Err(ReservedFlags(0x04)));
    // A body of exactly the limit passes.
    assert_eq!(
        decode_one(&limited, b"\x82\x0b\x000123456789").unwrap(),
        Some((Kind::Frame(DATA, b"0123456789".to_vec()), 13))
    );
    assert_eq!(
        Decoder::new(Role::Client, Some(0)).max_body(),
        0,
        "MAXMSGSIZE 0 allows empty bodies only"
    );
}

#[test]
fn partial_frames_and_input_untouched() {
    let mut out = [0u8; 300];
    let n = emit_frame(MORE, &[7; 200], Some([9, 8, 7, 6]), &mut out).unwrap();
    assert_eq!(n, 2 + 2 + 4 + 1 + 200);
    for cut in 0..n {
        let mut buf = out[..cut].to_vec();
        assert_eq!(SERVER.decode(&mut buf), Ok(Status::Partial), "{cut}");
        assert_eq!(&buf[..], &out[..cut], "changed on Partial");
        let len = SERVER.frame_len(&out[..cut]).unwrap();
        assert_eq!(
            len,
            if cut >= 8 {
                Status::Complete(n)
            } else {
                Status::Partial
            }
        );
    }
    let mut buf = out[..n].to_vec();
    buf.extend_from_slice(b"\x82");
    let Ok(Status::Complete((Received::Frame { flags, body }, used))) = SERVER.decode(&mut buf)
    else {
        panic!()
    };
    assert_eq!((flags, used), (MORE, n));
    assert_eq!(&buf[body], &[7; 200]);
}

#[test]
fn headers_and_lengths() {
    for (len, header_len) in [
        (0u64, 2),
        (125, 2),
        (126, 4),
        (65535, 4),
        (65536, 10),
        (u64::MAX >> 1, 10),
    ] {
        for mask in [None, Some([1, 2, 3, 4])] {
            let h = Header {
                fin: true,
                opcode: Opcode::Binary,
                mask,
                payload_len: len,
            };
            let expected = header_len + if mask.is_some() { 4 } else { 0 };
            assert_eq!(h.encoded_len(), expected);
            let mut out = [0u8; 14];
            assert_eq!(h.emit(&mut out), Ok(expected));
            assert_eq!(
                Header::parse(&out[..expected]),
                Ok(Status::Complete((h, expected)))
            );
            assert_eq!(
                h.emit(&mut out[..expected - 1]).map_err(|e| e.required),
                Err(expected)
            );
        }
    }
    // A longer length form than needed is accepted.
    assert_eq!(
        decode_one(&CLIENT, b"\x82\x7e\x00\x02\x00x").unwrap(),
        Some((Kind::Frame(DATA, b"x".to_vec()), 6))
    );
    assert_eq!(control_len(0, false), 2);
    assert_eq!(control_len(500, true), 6 + 125);
    let mut out = [0u8; 200];
    assert_eq!(emit_ping(&[1; 500], None, &mut out), Ok(127));
    assert!(Opcode::Close.is_control() && !Opcode::Binary.is_control());
    assert_eq!(Opcode::from_bits(0x8A), Some(Opcode::Pong));
}

#[test]
fn frame_head_and_piecewise_mask_equal_emit_frame() {
    let body: Vec<u8> = (0..300u16).map(|i| i as u8).collect();
    let key = [0xde, 0xad, 0xbe, 0xef];
    for mask in [None, Some(key)] {
        let mut whole = vec![0u8; frame_len(body.len(), mask.is_some())];
        let n = emit_frame(MORE, &body, mask, &mut whole).unwrap();
        assert_eq!(n, whole.len());
        let mut pieces = vec![0u8; frame_head_len(body.len(), mask.is_some())];
        let h = emit_frame_head(MORE, body.len(), mask, &mut pieces).unwrap();
        assert_eq!(h, pieces.len());
        let mut rest = body.clone();
        if let Some(key) = mask {
            // In three pieces, each at its offset.
            let (a, b) = rest.split_at_mut(7);
            let (b, c) = b.split_at_mut(100);
            apply_mask(a, key, 1);
            apply_mask(b, key, 8);
            apply_mask(c, key, 108);
        }
        pieces.extend_from_slice(&rest);
        assert_eq!(pieces, whole);
        assert_eq!(
            emit_frame(MORE, &body, mask, &mut whole[..n - 1]).map_err(|e| e.required),
            Err(n)
        );
    }
}

// ----- properties -------------------------------------------------------------------------

/// Body lengths around the edges of the three length forms (payload = body + 1).
fn body_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            0usize, 1, 123, 124, 125, 126, 127, 65533, 65534, 65535, 65536, 65537
        ]),
        0usize..1024,
    ]
}

/// Decode everything in `stream` fed in pieces of the given sizes (cycled; 0 counts as
/// 1), as a driver would: the frames, the error if any, and the bytes left over.
fn decode_stream(
    decoder: &Decoder,
    stream: &[u8],
    pieces: &[usize],
) -> (Vec<Kind>, Option<FrameError>, usize) {
    let mut frames = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        let size = pieces
            .get(i % pieces.len().max(1))
            .copied()
            .unwrap_or(1)
            .max(1);
        let end = (at + size).min(stream.len());
        buf.extend_from_slice(&stream[at..end]);
        at = end;
        i += 1;
        loop {
            let before = buf.clone();
            match decoder.decode(&mut buf) {
                Ok(Status::Complete((received, used))) => {
                    assert!(
                        used <= buf.len() && used > 0,
                        "used {used} of {}",
                        buf.len()
                    );
                    let range = match &received {
                        Received::Frame { body, .. } => body.clone(),
                        Received::Ping { payload }
                        | Received::Pong { payload }
                        | Received::Close { payload } => payload.clone(),
                    };
                    assert!(range.start <= range.end && range.end <= used);
                    frames.push(Kind::of(&received, &buf));
                    buf.drain(..used);
                }
                Ok(Status::Partial) => {
                    assert_eq!(buf, before, "changed on Partial");
                    break;
                }
                Err(e) => {
                    assert_eq!(buf, before, "changed on error");
                    return (frames, Some(e), 0);
                }
            }
        }
    }
    (frames, None, buf.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn frame_round_trip(
        len in body_len(),
        seed in any::<u8>(),
        more in any::<bool>(),
        command in any::<bool>(),
        key in prop::option::of(any::<[u8; 4]>()),
    ) {
        let flags = FrameFlags { more: more && !command, command };
        let body: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
        let mut out = vec![0u8; frame_len(len, key.is_some())];
        let n = emit_frame(flags, &body, key, &mut out).unwrap();
        prop_assert_eq!(n, out.len());
        let decoder = if key.is_some() { SERVER } else { CLIENT };
        prop_assert_eq!(decoder.frame_len(&out[..n.min(14)]).unwrap(), Status::Complete(n));
        let decoded = decode_one(&decoder, &out).unwrap();
        prop_assert_eq!(decoded, Some((Kind::Frame(flags, body.clone()), n)));
        // The other role refuses it for its mask bit.
        let other = if key.is_some() { CLIENT } else { SERVER };
        prop_assert!(decode_one(&other, &out).is_err());
        // A limit of one byte less refuses it, before the body arrives.
        if len > 0 {
            let tight = Decoder::new(decoder.role(), Some(len as u64 - 1));
            let head = frame_head_len(len, key.is_some()) - 1;
            prop_assert_eq!(
                decode_one(&tight, &out[..head]),
                Err(FrameError::TooLarge { size: len as u64, limit: len as u64 - 1 })
            );
        }
    }

    #[test]
    fn control_round_trip(
        payload in vec(any::<u8>(), 0..=125),
        key in prop::option::of(any::<[u8; 4]>()),
        which in 0u8..3,
    ) {
        let mut out = [0u8; 135];
        let emit = [emit_ping, emit_pong, emit_close][usize::from(which)];
        let n = emit(&payload, key, &mut out).unwrap();
        prop_assert_eq!(n, control_len(payload.len(), key.is_some()));
        let decoder = if key.is_some() { SERVER } else { CLIENT };
        let expected = match which {
            0 => Kind::Ping(payload.clone()),
            1 => Kind::Pong(payload.clone()),
            _ => Kind::Close(payload.clone()),
        };
        prop_assert_eq!(decode_one(&decoder, &out[..n]).unwrap(), Some((expected, n)));
    }

    /// Masking in two pieces, each at its offset, is masking whole (any offset).
    #[test]
    fn mask_in_pieces(
        data in vec(any::<u8>(), 0..64),
        key in any::<[u8; 4]>(),
        split in 0usize..64,
        offset in any::<usize>(),
    ) {
        let expected: Vec<u8> = data
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ key[(offset % 4 + i) % 4])
            .collect();
        let mut masked = data.clone();
        let (a, b) = masked.split_at_mut(split.min(data.len()));
        let second = offset % 4 + a.len();
        apply_mask(a, key, offset);
        apply_mask(b, key, second);
        prop_assert_eq!(&masked, &expected);
        apply_mask(&mut masked, key, offset);
        prop_assert_eq!(masked, data);
    }

    /// A stream of valid frames decodes to the same frames whatever the pieces.
    #[test]
    fn frames_in_pieces(
        frames in vec((vec(any::<u8>(), 0..300), any::<bool>(), any::<[u8; 4]>()), 0..6),
        masked in any::<bool>(),
        pieces in vec(0usize..40, 1..8),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (body, more, key) in &frames {
            let flags = FrameFlags { more: *more, command: false };
            let mut out = vec![0u8; frame_len(body.len(), masked)];
            emit_frame(flags, body, masked.then_some(*key), &mut out).unwrap();
            stream.extend_from_slice(&out);
            expected.push(Kind::Frame(flags, body.clone()));
            let mut ping = [0u8; 16];
            let n = emit_ping(&key[..], masked.then_some(*key), &mut ping).unwrap();
            stream.extend_from_slice(&ping[..n]);
            expected.push(Kind::Ping(key.to_vec()));
        }
        let decoder = if masked { SERVER } else { CLIENT };
        let (got, error, left) = decode_stream(&decoder, &stream, &pieces);
        prop_assert_eq!(error, None);
        prop_assert_eq!(left, 0);
        prop_assert_eq!(got, expected);
    }

    /// Arbitrary bytes in arbitrary pieces: no panic, nothing claimed beyond the input,
    /// and the same frames, error and leftover as when fed whole.
    #[test]
    fn arbitrary_bytes_in_pieces(
        stream in vec(any::<u8>(), 0..400),
        pieces in vec(0usize..64, 1..8),
        server in any::<bool>(),
        limit in prop::option::of(0u64..300),
    ) {
        let decoder = Decoder::new(if server { Role::Server } else { Role::Client }, limit);
        let whole = decode_stream(&decoder, &stream, &[stream.len().max(1)]);
        let pieced = decode_stream(&decoder, &stream, &pieces);
        prop_assert_eq!(&pieced, &whole);
        if let Some(limit) = limit {
            for kind in &whole.0 {
                if let Kind::Frame(_, body) = kind {
                    prop_assert!(body.len() as u64 <= limit);
                }
            }
        }
        let _ = Header::parse(&stream);
    }

    /// Arbitrary heads: no panic, and every prefix's verdict agrees with the whole's:
    /// `Partial`, or the same error, or the same head.
    #[test]
    fn heads_in_pieces(
        head in prop_oneof![
            vec(any::<u8>(), 0..300),
            (0usize..200, any::<u8>(), any::<usize>()).prop_map(|(at, b, which)| {
                let mut h = [zws::NULL_REQUEST, zws::NULL_RESPONSE][which % 2].to_vec();
                let at = at % h.len();
                h[at] = b;
                h
            }),
            (0usize..200, 0usize..40, any::<usize>()).prop_map(|(at, n, which)| {
                let mut h = [zws::NULL_REQUEST, zws::NULL_RESPONSE][which % 2].to_vec();
                let at = at % h.len();
                let end = (at + n).min(h.len());
                h.drain(at..end);
                h
            }),
        ],
        mechanism in prop::sample::select(vec![Mechanism::NULL, Mechanism::PLAIN, Mechanism::CURVE]),
    ) {
        let server = ServerHandshake::new(mechanism).unwrap();
        let client = ClientHandshake::new(mechanism, zws::LIBZMQ_NONCE).unwrap();
        let whole_req = server.parse_request(&head);
        let whole_resp = client.parse_response(&head);
        for (name, whole) in [("request", whole_req.map(|s| s.complete().map(|(r, n)| (r.protocol, n)))), ("response", whole_resp.map(|s| s.complete()))] {
            if let Ok(Some((_, n))) = whole {
                prop_assert!(n <= head.len(), "{} claims {} of {}", name, n, head.len());
            }
        }
        for cut in 0..=head.len() {
            let part = &head[..cut];
            match server.parse_request(part) {
                Ok(Status::Partial) => {}
                Err(e) => prop_assert_eq!(whole_req, Err(e), "request prefix {}", cut),
                Ok(Status::Complete((req, n))) => {
                    prop_assert!(n <= cut);
                    prop_assert_eq!(whole_req, Ok(Status::Complete((req, n))));
                }
            }
            match client.parse_response(part) {
                Ok(Status::Partial) => {}
                Err(e) => prop_assert_eq!(whole_resp, Err(e), "response prefix {}", cut),
                Ok(Status::Complete((p, n))) => {
                    prop_assert!(n <= cut);
                    prop_assert_eq!(whole_resp, Ok(Status::Complete((p, n))));
                }
            }
        }
    }

    /// Our client and our server agree on every mechanism, key, host and path.
    #[test]
    fn upgrade_round_trip(
        nonce in any::<[u8; 16]>(),
        host in "[a-z0-9.-]{1,40}",
        path in "/[!-~]{0,60}",
        mechanism in prop::sample::select(vec![Mechanism::NULL, Mechanism::PLAIN, Mechanism::CURVE]),
        trailing in vec(any::<u8>(), 0..20),
    ) {
        let client = ClientHandshake::new(mechanism, nonce).unwrap();
        let target = Target::new(&host, &path).unwrap();
        let mut buf = vec![0u8; client.request_len(&target)];
        let n = client.emit_request(&target, &mut buf).unwrap();
        buf.extend_from_slice(&trailing);
        let server = ServerHandshake::new(mechanism).unwrap();
        let Ok(Status::Complete((req, used))) = server.parse_request(&buf) else {
            panic!("request refused: {}", String::from_utf8_lossy(&buf));
        };
        prop_assert_eq!(used, n);
        prop_assert_eq!(req.protocol, client.offered()[0]);
        prop_assert_eq!(req.path, path.as_bytes());
        prop_assert_eq!(req.host, Some(host.as_bytes()));
        prop_assert_eq!(req.accept, client.expected_accept());
        let mut resp = vec![0u8; req.response_len()];
        let m = req.emit_response(&mut resp).unwrap();
        resp.extend_from_slice(&trailing);
        prop_assert_eq!(client.parse_response(&resp), Ok(Status::Complete((req.protocol, m))));
    }
}
