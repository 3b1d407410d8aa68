//! Security mechanisms between two in-memory connections with virtual time: PLAIN, NULL
//! with authentication, and (with the `curve` feature) CURVE. Every test checks concrete
//! outcomes: typed errors, events, and the bytes on the wire, recorded or rewritten in
//! flight by a tap on the pair.

use std::time::Duration;

use zmtp_proto::codec::{CodecError, Mechanism, Version};
use zmtp_proto::mechanism::{AuthRequest, Credentials, Security};
use zmtp_proto::{Config, ConfigError, Error, Event, OwnedItem, Reason, SocketType};
use zmtp_testkit::pair::{Dir, End, Pair};

// ----- wire helpers -------------------------------------------------------------------------

/// One frame as on the wire: its flags byte and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    flags: u8,
    body: Vec<u8>,
}

/// Encode a frame as libzmq does: a one-byte size up to 255 bytes, LONG beyond.
fn encode(flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if body.len() > 255 {
        out.push(flags | 0x02);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    } else {
        out.push(flags & !0x02);
        out.push(body.len() as u8);
    }
    out.extend_from_slice(body);
    out
}

/// A command frame with `body`.
fn command(body: &[u8]) -> Vec<u8> {
    encode(0x04, body)
}

/// The first complete frame of `bytes` and the bytes it takes.
fn split_frame(bytes: &[u8]) -> Option<(Frame, usize)> {
    let &flags = bytes.first()?;
    let (size, header) = if flags & 0x02 != 0 {
        let size: [u8; 8] = bytes.get(1..9)?.try_into().ok()?;
        (usize::try_from(u64::from_be_bytes(size)).ok()?, 9)
    } else {
        (usize::from(*bytes.get(1)?), 2)
    };
    let body = bytes.get(header..header + size)?.to_vec();
    Some((Frame { flags, body }, header + size))
}

/// Every complete frame of `bytes` (which hold frames only).
fn frames_of(mut bytes: &[u8]) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Some((f, used)) = split_frame(bytes) {
        out.push(f);
        bytes = &bytes[used..];
    }
    assert!(bytes.is_empty(), "trailing partial frame: {bytes:02x?}");
    out
}

/// Every frame of a stream that starts with a 64-byte greeting.
fn frames_after_greeting(stream: &[u8]) -> Vec<Frame> {
    assert!(stream.len() >= 64, "no complete greeting");
    frames_of(&stream[64..])
}

/// Everything each end transmitted, in order.
#[derive(Default)]
struct Wire {
    a_to_b: Vec<u8>,
    b_to_a: Vec<u8>,
}

impl Wire {
    fn record(&mut self, dir: Dir, bytes: &[u8]) {
        match dir {
            Dir::AtoB => self.a_to_b.extend_from_slice(bytes),
            Dir::BtoA => self.b_to_a.extend_from_slice(bytes),
        }
    }

    fn a_frames(&self) -> Vec<Frame> {
        frames_after_greeting(&self.a_to_b)
    }

    fn b_frames(&self) -> Vec<Frame> {
        frames_after_greeting(&self.b_to_a)
    }
}

/// Rewrites one frame of one direction in flight: frame `index`, counted from 0 after the
/// 64-byte greeting. `edit` gets the whole encoded frame (header and body) and may replace
/// it with any bytes: nothing, a shorter frame, several frames.
struct Editor<F> {
    dir: Dir,
    index: usize,
    edit: F,
    greeting_left: usize,
    held: Vec<u8>,
    seen: usize,
    applied: bool,
}

impl<F: FnMut(&mut Vec<u8>)> Editor<F> {
    fn new(dir: Dir, index: usize, edit: F) -> Self {
        Editor {
            dir,
            index,
            edit,
            greeting_left: 64,
            held: Vec::new(),
            seen: 0,
            applied: false,
        }
    }

    fn tap(&mut self, dir: Dir, chunk: &mut Vec<u8>) {
        if dir != self.dir || (self.applied && self.held.is_empty()) {
            return;
        }
        self.held.append(chunk);
        let mut out = Vec::new();
        loop {
            if self.greeting_left > 0 {
                let n = self.greeting_left.min(self.held.len());
                out.extend(self.held.drain(..n));
                self.greeting_left -= n;
                if self.greeting_left > 0 {
                    break;
                }
                continue;
            }
            let Some((_, used)) = split_frame(&self.held) else {
                break;
            };
            let mut frame: Vec<u8> = self.held.drain(..used).collect();
            if self.seen == self.index && !self.applied {
                (self.edit)(&mut frame);
                self.applied = true;
            }
            self.seen += 1;
            out.extend(frame);
        }
        *chunk = out;
    }
}

/// An edit that replaces the frame with `bytes`.
fn replace(bytes: Vec<u8>) -> impl FnMut(&mut Vec<u8>) {
    move |f: &mut Vec<u8>| *f = bytes.clone()
}

/// An edit that puts `before` in front of the frame.
fn prepend(before: Vec<u8>) -> impl FnMut(&mut Vec<u8>) {
    move |f: &mut Vec<u8>| {
        let mut out = before.clone();
        out.append(f);
        *f = out;
    }
}

/// An edit that sends the frame twice.
fn twice() -> impl FnMut(&mut Vec<u8>) {
    |f: &mut Vec<u8>| {
        let copy = f.clone();
        f.extend_from_slice(&copy);
    }
}

// ----- connection helpers -------------------------------------------------------------------

fn config(t: SocketType, security: Security) -> Config {
    let mut c = Config::new(t);
    c.security = security;
    c
}

fn peer_error(reason: &[u8]) -> Error {
    Error::PeerError(Reason::from_slice(reason).expect("short reason"))
}

fn verdict(end: &mut End, now: zmtp_proto::Instant, status: u16) -> Result<(), Error> {
    end.buf.connection_mut().handle_auth(now, status)
}

fn count(events: &[Event], e: Event) -> usize {
    events.iter().filter(|x| **x == e).count()
}

/// The metadata of the first READY (or INITIATE) item an end received.
fn ready_meta(end: &End) -> Vec<u8> {
    end.items
        .iter()
        .find_map(|i| match i {
            OwnedItem::Ready(m) => Some(m.to_vec()),
            _ => None,
        })
        .expect("READY item")
}

/// Metadata as libzmq sends it: `Socket-Type`, then `Identity` (empty) for DEALER/ROUTER.
fn metadata(socket_type: &[u8], identity: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(11);
    out.extend_from_slice(b"Socket-Type");
    out.extend_from_slice(&(socket_type.len() as u32).to_be_bytes());
    out.extend_from_slice(socket_type);
    if identity {
        out.push(8);
        out.extend_from_slice(b"Identity");
        out.extend_from_slice(&0u32.to_be_bytes());
    }
    out
}

// ----- PLAIN ------------------------------------------------------------------------------

const HELLO_ADMIN_SECRET: &[u8] = b"\x05HELLO\x05admin\x06secret";

/// A PLAIN client (DEALER, `a`) and a PLAIN server (ROUTER, `b`).
fn plain_pair(username: &[u8], password: &[u8]) -> Pair {
    let client = Security::plain_client(username, password).expect("credentials fit");
    Pair::new(
        config(SocketType::Dealer, client),
        config(SocketType::Router, Security::PlainServer),
    )
}

/// The authenticator of these tests: admin/secret only.
fn judge(request: &AuthRequest<'_>) -> u16 {
    match request.credentials {
        Credentials::Plain {
            username: b"admin",
            password: b"secret",
        } => 200,
        _ => 400,
    }
}

#[test]
fn plain_handshake_then_multipart_both_ways() {
    let mut p = plain_pair(b"admin", b"secret");
    let mut wire = Wire::default();
    p.drive_tapped(|d, b| wire.record(d, b));

    // The server stops at HELLO and asks, once, with what the client sent.
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    assert!(p.a.events.is_empty());
    assert!(!p.a.established() && !p.b.established());
    let request =
        p.b.buf
            .connection()
            .auth_request()
            .expect("request pending");
    assert_eq!(
        request,
        AuthRequest {
            mechanism: Mechanism::PLAIN,
            credentials: Credentials::Plain {
                username: b"admin",
                password: b"secret",
            },
        }
    );
    let status = judge(&request);
    assert_eq!(status, 200);
    // Nothing from the server yet but its greeting; the client sent HELLO only.
    assert_eq!(wire.b_to_a.len(), 64);
    assert_eq!(
        wire.a_frames(),
        vec![Frame {
            flags: 0x04,
            body: HELLO_ADMIN_SECRET.to_vec()
        }]
    );

    let now = p.now;
    verdict(&mut p.b, now, status).expect("verdict accepted");
    p.drive_tapped(|d, b| wire.record(d, b));
    assert!(p.a.established() && p.b.established());
    assert_eq!(count(&p.b.events, Event::AuthRequested), 1);
    assert_eq!(
        p.b.events,
        vec![
            Event::AuthRequested,
            Event::HandshakeSucceeded {
                peer_socket_type: Some(SocketType::Dealer),
                version: Version::V3_1,
            }
        ]
    );
    assert_eq!(
        p.a.events,
        vec![Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Router),
            version: Version::V3_1,
        }]
    );
    assert!(p.b.buf.connection().auth_request().is_none());

    // HELLO, INITIATE from the client; WELCOME, READY from the server, all commands.
    let mut initiate = b"\x08INITIATE".to_vec();
    initiate.extend(metadata(b"DEALER", true));
    let mut ready = b"\x05READY".to_vec();
    ready.extend(metadata(b"ROUTER", true));
    assert_eq!(
        wire.a_frames(),
        vec![
            Frame {
                flags: 0x04,
                body: HELLO_ADMIN_SECRET.to_vec()
            },
            Frame {
                flags: 0x04,
                body: initiate
            },
        ]
    );
    assert_eq!(
        wire.b_frames(),
        vec![
            Frame {
                flags: 0x04,
                body: b"\x07WELCOME".to_vec()
            },
            Frame {
                flags: 0x04,
                body: ready
            },
        ]
    );
    assert_eq!(ready_meta(&p.b), metadata(b"DEALER", true));
    assert_eq!(ready_meta(&p.a), metadata(b"ROUTER", true));

    // Traffic in clear, multipart, both ways.
    let before = (wire.a_to_b.len(), wire.b_to_a.len());
    p.a.send(&[b"", b"hello", b"world"]);
    p.a.send(&[b"second"]);
    p.b.send(&[b"reply", b""]);
    p.drive_tapped(|d, b| wire.record(d, b));
    assert_eq!(
        p.b.messages(),
        vec![
            vec![b"".to_vec(), b"hello".to_vec(), b"world".to_vec()],
            vec![b"second".to_vec()]
        ]
    );
    assert_eq!(p.a.messages(), vec![vec![b"reply".to_vec(), b"".to_vec()]]);
    assert_eq!(
        wire.a_to_b[before.0..],
        *b"\x01\x00\x01\x05hello\x00\x05world\x00\x06second"
    );
    assert_eq!(wire.b_to_a[before.1..], *b"\x01\x05reply\x00\x00");
    assert!(p.a.error.is_none() && p.b.error.is_none());

    // A second verdict has no request to answer.
    assert_eq!(verdict(&mut p.b, now, 200), Err(Error::UnexpectedVerdict));
}

#[test]
fn plain_greeting_hello_and_welcome_bytes() {
    let mut p = plain_pair(b"admin", b"secret");
    let mut wire = Wire::default();
    p.drive_tapped(|d, b| wire.record(d, b));
    let now = p.now;
    verdict(&mut p.b, now, 200).expect("verdict");
    p.drive_tapped(|d, b| wire.record(d, b));

    // Greeting: signature, 3.1, "PLAIN" NUL-padded to 20, as-server byte by role.
    for (stream, as_server) in [(&wire.a_to_b, 0u8), (&wire.b_to_a, 1u8)] {
        assert_eq!(stream[0], 0xFF);
        assert_eq!(stream[9], 0x7F);
        assert_eq!(stream[10..12], [3, 1]);
        let mut mech = [0u8; 20];
        mech[..5].copy_from_slice(b"PLAIN");
        assert_eq!(stream[12..32], mech);
        assert_eq!(stream[32], as_server);
        assert_eq!(stream[33..64], [0u8; 31]);
    }
    // HELLO: `04 13 | 05 "HELLO" 05 "admin" 06 "secret"`, byte for byte.
    let mut hello = vec![0x04, 0x13, 0x05];
    hello.extend_from_slice(b"HELLO");
    hello.push(0x05);
    hello.extend_from_slice(b"admin");
    hello.push(0x06);
    hello.extend_from_slice(b"secret");
    assert_eq!(wire.a_to_b[64..64 + hello.len()], hello[..]);
    // WELCOME is exactly 8 body bytes.
    assert_eq!(
        wire.b_to_a[64..74],
        [0x04, 0x08, 0x07, b'W', b'E', b'L', b'C', b'O', b'M', b'E']
    );
    assert!(p.a.established() && p.b.established());
}

#[test]
fn plain_empty_credentials_are_presented() {
    let mut p = plain_pair(b"", b"");
    let mut wire = Wire::default();
    p.drive_tapped(|d, b| wire.record(d, b));
    assert_eq!(
        wire.a_frames(),
        vec![Frame {
            flags: 0x04,
            body: b"\x05HELLO\x00\x00".to_vec()
        }]
    );
    let request = p.b.buf.connection().auth_request().expect("request");
    assert_eq!(
        request.credentials,
        Credentials::Plain {
            username: b"",
            password: b""
        }
    );
    assert_eq!(judge(&request), 400);
    // Too long for the wire: refused when configured.
    assert_eq!(
        Security::plain_client([b'u'; 256], b"p"),
        Err(ConfigError::UsernameTooLong)
    );
    assert_eq!(
        Security::plain_client("u", "p".repeat(256)),
        Err(ConfigError::PasswordTooLong)
    );
    assert!(Security::plain_client([b'u'; 255], [b'p'; 255]).is_ok());
    assert!(ConfigError::UsernameTooLong
        .to_string()
        .contains("user name"));
    assert!(ConfigError::PasswordTooLong
        .to_string()
        .contains("password"));
    // Text and bytes make the same client.
    assert_eq!(
        Security::plain_client("admin", String::from("secret")),
        Security::plain_client(b"admin", &b"secret"[..])
    );
}

/// A refused PLAIN client: the server's frames after its greeting, and both errors.
fn plain_refused(status: u16) -> (Pair, Wire) {
    let mut p = plain_pair(b"admin", b"wrong");
    let mut wire = Wire::default();
    p.drive_tapped(|d, b| wire.record(d, b));
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    let request = p.b.buf.connection().auth_request().expect("request");
    assert_eq!(
        request.credentials,
        Credentials::Plain {
            username: b"admin",
            password: b"wrong"
        }
    );
    let now = p.now;
    let r = verdict(&mut p.b, now, status);
    p.drive_tapped(|d, b| wire.record(d, b));
    (p, wire_checked(wire, r, status))
}

fn wire_checked(wire: Wire, r: Result<(), Error>, status: u16) -> Wire {
    match status {
        // The ERROR goes out first; the failure comes after it.
        400 | 500 => assert_eq!(r, Ok(())),
        _ => assert_eq!(r, Err(Error::AuthRejected { status })),
    }
    wire
}

/// The body of a PLAIN server's ERROR: libzmq's own `5e "RROR"` form (notes G6), the only
/// one libzmq's PLAIN client reports as an authentication failure. (NULL and CURVE servers
/// send the RFC form `05 "ERROR"`.)
fn plain_error_body(reason: &[u8]) -> Vec<u8> {
    let mut body = b"\x5eRROR".to_vec();
    body.push(reason.len() as u8);
    body.extend_from_slice(reason);
    body
}

#[test]
fn plain_wrong_password_400_sends_error() {
    let (p, wire) = plain_refused(400);
    assert_eq!(
        wire.b_frames(),
        vec![Frame {
            flags: 0x04,
            body: plain_error_body(b"400")
        }]
    );
    assert_eq!(
        wire.b_to_a[64..],
        [0x04, 0x09, 0x5e, 0x52, 0x52, 0x4f, 0x52, 0x03, 0x34, 0x30, 0x30]
    );
    assert_eq!(p.b.error, Some(Error::AuthRejected { status: 400 }));
    assert_eq!(
        p.b.buf.connection().error(),
        Some(&Error::AuthRejected { status: 400 })
    );
    // Our client reads that form.
    assert_eq!(p.a.error, Some(peer_error(b"400")));
    assert!(!p.a.established() && !p.b.established());
    // The client sent HELLO and nothing else.
    assert_eq!(wire.a_frames().len(), 1);
    assert!(!p
        .a
        .events
        .iter()
        .any(|e| matches!(e, Event::HandshakeSucceeded { .. })));
}

#[test]
fn plain_verdict_500_sends_error() {
    let (p, wire) = plain_refused(500);
    assert_eq!(
        wire.b_frames(),
        vec![Frame {
            flags: 0x04,
            body: plain_error_body(b"500")
        }]
    );
    assert_eq!(p.b.error, Some(Error::AuthRejected { status: 500 }));
    assert_eq!(p.a.error, Some(peer_error(b"500")));
}

#[test]
fn plain_verdict_300_closes_silently() {
    let (mut p, wire) = plain_refused(300);
    // Nothing after the greeting: no ERROR.
    assert_eq!(wire.b_to_a.len(), 64);
    assert_eq!(
        p.b.buf.connection().error(),
        Some(&Error::AuthRejected { status: 300 })
    );
    assert!(!p.b.buf.connection().wants_write());
    // The client hears nothing and waits (the driver closes the stream).
    assert_eq!(p.a.error, None);
    assert!(!p.a.established());
    // Later calls repeat the sticky error.
    let now = p.now;
    assert_eq!(
        verdict(&mut p.b, now, 200),
        Err(Error::AuthRejected { status: 300 })
    );
}

#[test]
fn plain_client_accepts_libzmq_malformed_error() {
    let mut p = plain_pair(b"admin", b"wrong");
    p.drive();
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    // libzmq's PLAIN server says "^RROR" (a C escape bug): `5e 52 52 4f 52 03 34 30 30`.
    let now = p.now;
    p.a.feed(
        now,
        &[
            0x04, 0x09, 0x5e, 0x52, 0x52, 0x4f, 0x52, 0x03, 0x34, 0x30, 0x30,
        ],
    );
    assert_eq!(p.a.error, Some(peer_error(b"400")));
    assert!(!p.a.established());

    // The RFC form `05 "ERROR"` (as other implementations send it), in place of our
    // server's ERROR.
    let mut p = plain_pair(b"admin", b"wrong");
    let mut ed = Editor::new(Dir::BtoA, 0, replace(command(b"\x05ERROR\x03500")));
    p.drive_tapped(|d, b| ed.tap(d, b));
    let now = p.now;
    verdict(&mut p.b, now, 500).expect("verdict");
    p.drive_tapped(|d, b| ed.tap(d, b));
    assert!(ed.applied);
    assert_eq!(p.a.error, Some(peer_error(b"500")));
    assert_eq!(p.b.error, Some(Error::AuthRejected { status: 500 }));
    // A longer reason, in both forms.
    for body in [
        b"\x05ERROR\x0bbad account".to_vec(),
        b"\x5eRROR\x0bbad account".to_vec(),
    ] {
        let mut p = plain_pair(b"admin", b"wrong");
        p.drive();
        let now = p.now;
        p.a.feed(now, &command(&body));
        assert_eq!(p.a.error, Some(peer_error(b"bad account")));
    }
}

/// A PLAIN pair whose client HELLO is replaced by `frame`: the server's error.
fn plain_server_gets_instead_of_hello(frame: Vec<u8>) -> Pair {
    let mut p = plain_pair(b"admin", b"secret");
    let mut ed = Editor::new(Dir::AtoB, 0, replace(frame));
    p.drive_tapped(|d, b| ed.tap(d, b));
    assert!(ed.applied);
    p
}

#[test]
fn plain_malformed_hello_is_a_typed_error() {
    let malformed = CodecError::MalformedCommandBody;
    let cases: Vec<(&[u8], Error)> = vec![
        // Password length one too long, one too short (a trailing byte).
        (b"\x05HELLO\x05admin\x07secret", malformed.into()),
        (b"\x05HELLO\x05admin\x05secret", malformed.into()),
        // User name length off: the password length lands in the wrong place.
        (b"\x05HELLO\x06admin\x06secret", malformed.into()),
        (b"\x05HELLO\x04admin\x06secret", malformed.into()),
        // Trailing bytes after the password.
        (b"\x05HELLO\x05admin\x06secretX", malformed.into()),
        (b"\x05HELLO\x05admin\x06secret\x00", malformed.into()),
        // Truncated: no data, inside the user name, no password length, inside the password.
        (b"\x05HELLO", malformed.into()),
        (b"\x05HELLO\x05adm", malformed.into()),
        (b"\x05HELLO\x05admin", malformed.into()),
        (b"\x05HELLO\x05admin\x06sec", malformed.into()),
        (b"\x05HELLO\xff", malformed.into()),
        // Not even a command: empty body, name length past the end.
        (b"", CodecError::MalformedCommand.into()),
        (b"\x05HELL", CodecError::MalformedCommand.into()),
        (b"\x00", CodecError::MalformedCommand.into()),
    ];
    for (body, expected) in cases {
        let p = plain_server_gets_instead_of_hello(command(body));
        assert_eq!(
            p.b.error.as_ref(),
            Some(&expected),
            "HELLO body {body:02x?}"
        );
        assert!(p.b.events.is_empty(), "no request for {body:02x?}");
        assert!(p.b.buf.connection().auth_request().is_none());
    }
}

#[test]
fn plain_welcome_must_be_exactly_eight_bytes() {
    let cases: Vec<(Vec<u8>, Error)> = vec![
        (
            command(b"\x07WELCOMEx"),
            CodecError::MalformedCommandBody.into(),
        ),
        (
            command(b"\x07WELCOME\x00\x00\x00\x00"),
            CodecError::MalformedCommandBody.into(),
        ),
        (command(b"\x07WELCOM"), CodecError::MalformedCommand.into()),
        (command(b"\x07welcome"), Error::UnexpectedCommand),
    ];
    for (frame, expected) in cases {
        let mut p = plain_pair(b"admin", b"secret");
        let mut ed = Editor::new(Dir::BtoA, 0, replace(frame.clone()));
        p.drive_tapped(|d, b| ed.tap(d, b));
        let now = p.now;
        verdict(&mut p.b, now, 200).expect("verdict");
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert!(ed.applied);
        assert_eq!(p.a.error.as_ref(), Some(&expected), "WELCOME {frame:02x?}");
        assert!(!p.a.established());
    }
}

#[test]
fn plain_commands_in_the_wrong_order() {
    let mut initiate = b"\x08INITIATE".to_vec();
    initiate.extend(metadata(b"DEALER", true));
    let mut ready = b"\x05READY".to_vec();
    ready.extend(metadata(b"DEALER", true));

    // The server: INITIATE before WELCOME, READY, a message, instead of HELLO.
    for frame in [command(&initiate), command(&ready), encode(0, b"data")] {
        let p = plain_server_gets_instead_of_hello(frame.clone());
        let expected = if frame[0] & 0x04 != 0 {
            Error::UnexpectedCommand
        } else {
            Error::UnexpectedMessage
        };
        assert_eq!(p.b.error, Some(expected), "{frame:02x?}");
        assert!(p.b.events.is_empty());
    }

    // HELLO twice; HELLO then INITIATE at once (before WELCOME): the request is made by
    // the first, the second is refused.
    for edit in [
        Box::new(twice()) as Box<dyn FnMut(&mut Vec<u8>)>,
        Box::new(|f: &mut Vec<u8>| f.extend(command(&initiate))),
    ] {
        let mut p = plain_pair(b"admin", b"secret");
        let mut ed = Editor::new(Dir::AtoB, 0, edit);
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert_eq!(p.b.error, Some(Error::UnexpectedCommand));
        assert_eq!(p.b.events, vec![Event::AuthRequested]);
        assert!(p.b.buf.connection().auth_request().is_none());
    }

    // READY (not INITIATE) to the server after WELCOME.
    let mut p = plain_pair(b"admin", b"secret");
    let mut ed = Editor::new(Dir::AtoB, 1, replace(command(&ready)));
    p.drive_tapped(|d, b| ed.tap(d, b));
    let now = p.now;
    verdict(&mut p.b, now, 200).expect("verdict");
    p.drive_tapped(|d, b| ed.tap(d, b));
    assert!(ed.applied);
    assert_eq!(p.b.error, Some(Error::UnexpectedCommand));
    assert!(!p.b.established());

    // The client: READY, HELLO or INITIATE instead of WELCOME; WELCOME twice.
    let mut server_ready = b"\x05READY".to_vec();
    server_ready.extend(metadata(b"ROUTER", true));
    for edit in [
        Box::new(replace(command(&server_ready))) as Box<dyn FnMut(&mut Vec<u8>)>,
        Box::new(replace(command(HELLO_ADMIN_SECRET))),
        Box::new(replace(command(&initiate))),
        Box::new(twice()),
    ] {
        let mut p = plain_pair(b"admin", b"secret");
        let mut ed = Editor::new(Dir::BtoA, 0, edit);
        p.drive_tapped(|d, b| ed.tap(d, b));
        let now = p.now;
        verdict(&mut p.b, now, 200).expect("verdict");
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert!(ed.applied);
        assert_eq!(p.a.error, Some(Error::UnexpectedCommand));
        assert!(!p.a.established());
    }

    // A message to the client before READY.
    let mut p = plain_pair(b"admin", b"secret");
    let mut ed = Editor::new(Dir::BtoA, 0, prepend(encode(0, b"early")));
    p.drive_tapped(|d, b| ed.tap(d, b));
    let now = p.now;
    verdict(&mut p.b, now, 200).expect("verdict");
    p.drive_tapped(|d, b| ed.tap(d, b));
    assert_eq!(p.a.error, Some(Error::UnexpectedMessage));
}

#[test]
fn plain_mechanism_mismatch() {
    let client = Security::plain_client(b"admin", b"secret").expect("credentials");
    let mut p = Pair::new(
        config(SocketType::Dealer, client),
        config(SocketType::Router, Security::Null),
    );
    p.drive();
    assert_eq!(
        p.a.error,
        Some(Error::MechanismMismatch {
            ours: Mechanism::PLAIN,
            theirs: Mechanism::NULL
        })
    );
    assert_eq!(
        p.b.error,
        Some(Error::MechanismMismatch {
            ours: Mechanism::NULL,
            theirs: Mechanism::PLAIN
        })
    );
}

#[test]
fn plain_pending_verdict_times_out() {
    let mut p = plain_pair(b"admin", b"secret");
    p.drive();
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    assert!(p.step());
    assert_eq!(p.now, Pair::START + zmtp_proto::DEFAULT_HANDSHAKE_TIMEOUT);
    assert_eq!(p.a.error, Some(Error::HandshakeTimeout));
    assert_eq!(p.b.error, Some(Error::HandshakeTimeout));
    assert_eq!(
        verdict(&mut p.b, Pair::START, 200),
        Err(Error::HandshakeTimeout)
    );
}

#[test]
fn handle_auth_without_a_request_is_unexpected() {
    let now = Pair::START;
    // Before anything was received, on each kind of end: refused and, as every `Error`,
    // fatal and sticky (nothing more is transmitted, not even the greeting).
    for security in [
        Security::Null,
        Security::PlainServer,
        Security::plain_client(b"u", b"p").expect("credentials"),
    ] {
        let mut p = Pair::new(
            config(SocketType::Dealer, security.clone()),
            config(SocketType::Router, Security::Null),
        );
        assert_eq!(
            verdict(&mut p.a, now, 200),
            Err(Error::UnexpectedVerdict),
            "{security:?}"
        );
        assert_eq!(
            p.a.buf.connection().error(),
            Some(&Error::UnexpectedVerdict)
        );
        assert_eq!(verdict(&mut p.a, now, 400), Err(Error::UnexpectedVerdict));
        let mut wire = Wire::default();
        p.drive_tapped(|d, b| wire.record(d, b));
        assert!(
            wire.a_to_b.is_empty(),
            "{security:?}: silent after the error"
        );
        assert_eq!(p.a.error, Some(Error::UnexpectedVerdict));
        assert!(!p.a.established());
    }

    // A PLAIN client never asks.
    let mut p = plain_pair(b"admin", b"secret");
    p.drive();
    assert_eq!(verdict(&mut p.a, now, 200), Err(Error::UnexpectedVerdict));
    assert!(p.a.buf.connection().auth_request().is_none());

    // A NULL end without authentication never asks, even once established.
    let mut n = Pair::new(
        Config::new(SocketType::Dealer),
        Config::new(SocketType::Router),
    );
    n.drive();
    assert!(n.a.established() && n.b.established());
    assert!(n.b.events.iter().all(|e| *e != Event::AuthRequested));
    assert_eq!(verdict(&mut n.b, now, 200), Err(Error::UnexpectedVerdict));
    assert!(!n.b.established());

    // The PLAIN server's one request is answered once.
    let mut p = plain_pair(b"admin", b"secret");
    p.drive();
    verdict(&mut p.b, now, 200).expect("verdict");
    assert!(p.b.buf.connection().auth_request().is_none());
    assert_eq!(verdict(&mut p.b, now, 200), Err(Error::UnexpectedVerdict));
    assert_eq!(
        p.b.buf.connection().error(),
        Some(&Error::UnexpectedVerdict)
    );
}

// ----- NULL with authentication -------------------------------------------------------------

fn null_authenticated_pair() -> Pair {
    let mut server = Config::new(SocketType::Router);
    server.authenticate_null = true;
    Pair::new(Config::new(SocketType::Dealer), server)
}

#[test]
fn null_authenticated_ready_held_until_verdict() {
    let mut p = null_authenticated_pair();
    let mut wire = Wire::default();
    p.drive_tapped(|d, b| wire.record(d, b));
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    assert_eq!(
        p.b.buf.connection().auth_request(),
        Some(AuthRequest {
            mechanism: Mechanism::NULL,
            credentials: Credentials::Null,
        })
    );
    // The client's READY arrived; the server's READY is held.
    let mut client_ready = b"\x05READY".to_vec();
    client_ready.extend(metadata(b"DEALER", true));
    assert_eq!(
        wire.a_frames(),
        vec![Frame {
            flags: 0x04,
            body: client_ready
        }]
    );
    assert_eq!(wire.b_to_a.len(), 64);
    assert!(!p.a.established() && !p.b.established());
    // Time passes (short of the handshake deadline): still held.
    p.run_for(Duration::from_secs(10));
    assert_eq!(wire.b_to_a.len(), 64);
    assert!(p.a.error.is_none() && p.b.error.is_none());

    let now = p.now;
    verdict(&mut p.b, now, 200).expect("verdict");
    p.drive_tapped(|d, b| wire.record(d, b));
    let mut server_ready = b"\x05READY".to_vec();
    server_ready.extend(metadata(b"ROUTER", true));
    assert_eq!(
        wire.b_frames(),
        vec![Frame {
            flags: 0x04,
            body: server_ready
        }]
    );
    assert!(p.a.established() && p.b.established());
    assert_eq!(count(&p.b.events, Event::AuthRequested), 1);
    p.a.send(&[b"ping"]);
    p.b.send(&[b"pong", b"!"]);
    p.drive();
    assert_eq!(p.b.messages(), vec![vec![b"ping".to_vec()]]);
    assert_eq!(p.a.messages(), vec![vec![b"pong".to_vec(), b"!".to_vec()]]);
}

#[test]
fn null_authenticated_refusals() {
    for status in [400u16, 500, 300, 999] {
        let mut p = null_authenticated_pair();
        let mut wire = Wire::default();
        p.drive_tapped(|d, b| wire.record(d, b));
        let now = p.now;
        let r = verdict(&mut p.b, now, status);
        p.drive_tapped(|d, b| wire.record(d, b));
        let wire = wire_checked(wire, r, status);
        assert_eq!(p.b.error, Some(Error::AuthRejected { status }), "{status}");
        assert!(!p.a.established() && !p.b.established());
        match status {
            400 | 500 => {
                let reason = status.to_string();
                let mut body = b"\x05ERROR\x03".to_vec();
                body.extend_from_slice(reason.as_bytes());
                assert_eq!(wire.b_frames(), vec![Frame { flags: 0x04, body }]);
                assert_eq!(p.a.error, Some(peer_error(reason.as_bytes())));
            }
            _ => {
                assert_eq!(wire.b_to_a.len(), 64, "{status}: silent close");
                assert_eq!(p.a.error, None);
            }
        }
    }
}

#[test]
fn null_authenticated_verdict_before_the_peer_ready() {
    // The client's READY is held back in flight until after the verdict.
    let mut p = null_authenticated_pair();
    let mut stash = Vec::new();
    let mut ed = Editor::new(Dir::AtoB, 0, |f: &mut Vec<u8>| stash = std::mem::take(f));
    p.drive_tapped(|d, b| ed.tap(d, b));
    assert!(ed.applied);
    drop(ed);
    assert_eq!(p.b.events, vec![Event::AuthRequested]);
    let now = p.now;
    verdict(&mut p.b, now, 200).expect("verdict");
    p.drive();
    // Our READY went out and the client is done; the server waits for the client's READY.
    assert!(p.a.established());
    assert!(!p.b.established());
    p.b.feed(now, &stash);
    assert!(p.b.established());
    assert_eq!(ready_meta(&p.b), metadata(b"DEALER", true));
    p.a.send(&[b"late"]);
    p.drive();
    assert_eq!(p.b.messages(), vec![vec![b"late".to_vec()]]);
}

// ----- CURVE ------------------------------------------------------------------------------

#[cfg(feature = "curve")]
mod curve {
    use super::*;

    use zmtp_proto::codec::InsufficientSize;
    use zmtp_proto::curve_crypto::{nonce, CryptoBox, Drbg, KeyPair, PublicKey, TAG_LEN};
    use zmtp_proto::mechanism::CurveError;
    use zmtp_proto::{Bytes, Connection, EncodeError};

    // libzmq's `doc/zmq_curve.txt` test keys.
    const CLIENT_PUBLIC: &[u8] = b"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
    const CLIENT_SECRET: &[u8] = b"D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
    const SERVER_PUBLIC: &[u8] = b"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    const SERVER_SECRET: &[u8] = b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";

    const CLIENT_ENTROPY: [u8; 32] = [0xC1; 32];
    const SERVER_ENTROPY: [u8; 32] = [0x5E; 32];

    fn header_len(frame: &[u8]) -> usize {
        if frame[0] & 0x02 != 0 {
            9
        } else {
            2
        }
    }

    /// An edit that flips one bit of body byte `at`.
    fn flip(at: usize) -> impl FnMut(&mut Vec<u8>) {
        move |f: &mut Vec<u8>| {
            let h = header_len(f);
            f[h + at] ^= 0x01;
        }
    }

    /// An edit that cuts the body to `len` bytes (and fixes the header).
    fn cut(len: usize) -> impl FnMut(&mut Vec<u8>) {
        move |f: &mut Vec<u8>| {
            let (frame, _) = split_frame(f).expect("whole frame");
            *f = encode(frame.flags, &frame.body[..len]);
        }
    }

    /// An edit that appends `extra` to the body (and fixes the header).
    fn extend(extra: &'static [u8]) -> impl FnMut(&mut Vec<u8>) {
        move |f: &mut Vec<u8>| {
            let (mut frame, _) = split_frame(f).expect("whole frame");
            frame.body.extend_from_slice(extra);
            *f = encode(frame.flags, &frame.body);
        }
    }

    fn prefixed(name: &[u8], data: &[u8]) -> Vec<u8> {
        let mut out = vec![name.len() as u8];
        out.extend_from_slice(name);
        out.extend_from_slice(data);
        out
    }

    fn key(z85: &[u8]) -> [u8; 32] {
        zmtp_proto::z85::decode_key(z85).expect("Z85 key")
    }

    fn client_keys() -> KeyPair {
        let keys = KeyPair::from_secret(key(CLIENT_SECRET));
        assert_eq!(keys.public.0, key(CLIENT_PUBLIC));
        keys
    }

    fn server_keys() -> KeyPair {
        let keys = KeyPair::from_secret(key(SERVER_SECRET));
        assert_eq!(keys.public.0, key(SERVER_PUBLIC));
        keys
    }

    /// The short-term key pair a connection makes from its entropy: the first 32 bytes
    /// of its generator (checked against the wire in `curve_handshake_bytes_on_the_wire`).
    fn short_keys(entropy: [u8; 32]) -> KeyPair {
        KeyPair::generate(&mut Drbg::new(entropy))
    }

    fn curve_client(t: SocketType, server_key: PublicKey) -> Config {
        config(
            t,
            Security::CurveClient {
                server_key,
                keys: client_keys(),
            },
        )
    }

    fn curve_server(t: SocketType) -> Config {
        config(
            t,
            Security::CurveServer {
                keys: server_keys(),
            },
        )
    }

    /// A CURVE client `a` and server `b`, each with its fixed entropy.
    fn pair_of(client: Config, server: Config, client_entropy: [u8; 32]) -> Pair {
        Pair::from_connections(
            Connection::with_entropy(client, Pair::START, client_entropy),
            Connection::with_entropy(server, Pair::START, SERVER_ENTROPY),
        )
    }

    /// DEALER client, ROUTER server, the right keys.
    fn curve_pair() -> Pair {
        pair_of(
            curve_client(SocketType::Dealer, server_keys().public),
            curve_server(SocketType::Router),
            CLIENT_ENTROPY,
        )
    }

    /// Drive with `tap`, grant the server's request if it makes one (200), drive again.
    fn drive_granting(p: &mut Pair, mut tap: impl FnMut(Dir, &mut Vec<u8>)) {
        p.drive_tapped(&mut tap);
        if p.b.error.is_none() && p.b.buf.connection().auth_request().is_some() {
            let now = p.now;
            verdict(&mut p.b, now, 200).expect("verdict");
        }
        p.drive_tapped(&mut tap);
    }

    /// A complete handshake, recorded.
    fn handshake(p: &mut Pair, wire: &mut Wire) {
        drive_granting(p, |d, b| wire.record(d, b));
        assert!(p.a.established() && p.b.established());
        assert!(p.a.error.is_none() && p.b.error.is_none());
    }

    /// The box both short-term keys share, as the client computes it.
    fn traffic_box() -> CryptoBox {
        CryptoBox::new(
            &short_keys(SERVER_ENTROPY).public,
            &short_keys(CLIENT_ENTROPY).secret,
        )
    }

    /// Open `sealed` (tag, then ciphertext) with `b` and the nonce `prefix ‖ tail`.
    fn open(b: &CryptoBox, prefix: &[u8], tail: &[u8], sealed: &[u8]) -> Vec<u8> {
        let mut buf = sealed.to_vec();
        b.open_in_place(&nonce(prefix, tail).expect("24 bytes"), &mut buf)
            .expect("box opens");
        buf.split_off(TAG_LEN)
    }

    fn seal(b: &CryptoBox, prefix: &[u8], tail: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; TAG_LEN];
        buf.extend_from_slice(plain);
        b.seal_in_place(&nonce(prefix, tail).expect("24 bytes"), &mut buf)
            .expect("seal");
        buf
    }

    /// A MESSAGE opened: short nonce, inner flags, payload.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Opened {
        nonce: u64,
        flags: u8,
        payload: Vec<u8>,
    }

    /// Check a traffic frame's outer form and open it.
    fn open_message(frame: &Frame, from_client: bool) -> Opened {
        assert!(
            frame.flags == 0x00 || frame.flags == 0x02,
            "outer flags {:#04x}",
            frame.flags
        );
        assert_eq!(
            frame.flags == 0x02,
            frame.body.len() > 255,
            "LONG iff > 255"
        );
        assert!(frame.body.len() >= 33);
        assert_eq!(frame.body[..8], *b"\x07MESSAGE");
        let prefix: &[u8] = if from_client {
            b"CurveZMQMESSAGEC"
        } else {
            b"CurveZMQMESSAGES"
        };
        let plain = open(
            &traffic_box(),
            prefix,
            &frame.body[8..16],
            &frame.body[16..],
        );
        Opened {
            nonce: u64::from_be_bytes(frame.body[8..16].try_into().expect("8 bytes")),
            flags: plain[0],
            payload: plain[1..].to_vec(),
        }
    }

    fn curve(e: CurveError) -> Option<Error> {
        Some(Error::Curve(e))
    }

    #[test]
    fn curve_handshake_bytes_on_the_wire() {
        let mut p = curve_pair();
        let mut wire = Wire::default();
        p.drive_tapped(|d, b| wire.record(d, b));

        // The server asks once, with the client's long-term public key.
        assert_eq!(p.b.events, vec![Event::AuthRequested]);
        let request = p.b.buf.connection().auth_request().expect("request");
        assert_eq!(request.mechanism, Mechanism::CURVE);
        assert_eq!(
            request.credentials,
            Credentials::Curve {
                public_key: PublicKey(key(CLIENT_PUBLIC))
            }
        );
        // INITIATE's metadata is handed out before the verdict; no READY yet.
        assert_eq!(ready_meta(&p.b), metadata(b"DEALER", true));
        assert_eq!(wire.b_frames().len(), 1, "WELCOME only");
        assert!(!p.a.established() && !p.b.established());
        let now = p.now;
        verdict(&mut p.b, now, 200).expect("verdict");
        p.drive_tapped(|d, b| wire.record(d, b));
        assert!(p.a.established() && p.b.established());
        assert_eq!(count(&p.b.events, Event::AuthRequested), 1);
        assert!(p.a.events.iter().all(|e| *e != Event::AuthRequested));
        assert!(p.b.events.contains(&Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Dealer),
            version: Version::V3_1,
        }));
        assert!(p.a.events.contains(&Event::HandshakeSucceeded {
            peer_socket_type: Some(SocketType::Router),
            version: Version::V3_1,
        }));
        assert_eq!(ready_meta(&p.a), metadata(b"ROUTER", true));

        // Greetings name CURVE.
        for (stream, as_server) in [(&wire.a_to_b, 0u8), (&wire.b_to_a, 1u8)] {
            let mut mech = [0u8; 20];
            mech[..5].copy_from_slice(b"CURVE");
            assert_eq!(stream[12..32], mech);
            assert_eq!(stream[32], as_server);
        }

        let client = wire.a_frames();
        let server = wire.b_frames();
        assert_eq!(client.len(), 2);
        assert_eq!(server.len(), 2);
        let c_short = short_keys(CLIENT_ENTROPY);
        let s_short = short_keys(SERVER_ENTROPY);

        // HELLO: 200 bytes in a short command frame (`04 c8`).
        let hello = &client[0];
        assert_eq!(wire.a_to_b[64..66], [0x04, 0xc8]);
        assert_eq!(hello.flags, 0x04);
        assert_eq!(hello.body.len(), 200);
        assert_eq!(hello.body[..6], *b"\x05HELLO");
        assert_eq!(hello.body[6..8], [1, 0]);
        assert_eq!(hello.body[8..80], [0u8; 72]);
        assert_eq!(hello.body[80..112], c_short.public.0);
        assert_eq!(hello.body[112..120], 1u64.to_be_bytes());
        let hello_box = CryptoBox::new(&c_short.public, &server_keys().secret);
        let zeros = open(
            &hello_box,
            b"CurveZMQHELLO---",
            &hello.body[112..120],
            &hello.body[120..],
        );
        assert_eq!(zeros, [0u8; 64]);

        // WELCOME: 168 bytes; its box opens with C′ and holds S′ and a 96-byte cookie.
        let welcome = &server[0];
        assert_eq!(welcome.flags, 0x04);
        assert_eq!(welcome.body.len(), 168);
        assert_eq!(welcome.body[..8], *b"\x07WELCOME");
        let welcome_box = CryptoBox::new(&server_keys().public, &c_short.secret);
        let inside = open(
            &welcome_box,
            b"WELCOME-",
            &welcome.body[8..24],
            &welcome.body[24..],
        );
        assert_eq!(inside.len(), 128);
        assert_eq!(inside[..32], s_short.public.0);
        let cookie = &inside[32..];

        // INITIATE: 257 + metadata (DEALER, empty Identity: 35) = 292, a LONG command.
        let initiate = &client[1];
        let meta = metadata(b"DEALER", true);
        assert_eq!(meta.len(), 35);
        assert_eq!(initiate.flags, 0x06);
        assert_eq!(initiate.body.len(), 257 + meta.len());
        assert_eq!(initiate.body[..9], *b"\x08INITIATE");
        assert_eq!(initiate.body[9..105], *cookie);
        assert_eq!(initiate.body[105..113], 2u64.to_be_bytes());
        let plain = open(
            &traffic_box(),
            b"CurveZMQINITIATE",
            &initiate.body[105..113],
            &initiate.body[113..],
        );
        assert_eq!(plain[..32], key(CLIENT_PUBLIC));
        let rv = &plain[32..48];
        let vouch_box = CryptoBox::new(&client_keys().public, &s_short.secret);
        let vouch = open(&vouch_box, b"VOUCH---", rv, &plain[48..128]);
        assert_eq!(vouch[..32], c_short.public.0);
        assert_eq!(vouch[32..], key(SERVER_PUBLIC));
        assert_eq!(plain[128..], meta[..]);

        // READY: 30 + metadata (ROUTER: 35) = 65, nonce 1.
        let ready = &server[1];
        assert_eq!(ready.flags, 0x04);
        assert_eq!(ready.body.len(), 30 + 35);
        assert_eq!(ready.body[..6], *b"\x05READY");
        assert_eq!(ready.body[6..14], 1u64.to_be_bytes());
        let plain = open(
            &traffic_box(),
            b"CurveZMQREADY---",
            &ready.body[6..14],
            &ready.body[14..],
        );
        assert_eq!(plain, metadata(b"ROUTER", true));
        assert!(p.a.buf.connection().encrypts() && p.b.buf.connection().encrypts());
    }

    #[test]
    fn curve_traffic_both_ways() {
        let mut p = curve_pair();
        let mut wire = Wire::default();
        handshake(&mut p, &mut wire);
        let start = (wire.a_frames().len(), wire.b_frames().len());

        let big: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let sent_a: Vec<Vec<&[u8]>> = vec![
            vec![b"", b"head", b"", &big, b"tail"],
            vec![b""],
            vec![b"single"],
        ];
        let sent_b: Vec<Vec<&[u8]>> = vec![vec![&big, b""], vec![b"", b""], vec![b"x"]];
        for m in &sent_a {
            p.a.send(m);
        }
        for m in &sent_b {
            p.b.send(m);
        }
        p.drive_tapped(|d, b| wire.record(d, b));
        let owned = |ms: &[Vec<&[u8]>]| -> Vec<Vec<Vec<u8>>> {
            ms.iter()
                .map(|m| m.iter().map(|f| f.to_vec()).collect())
                .collect()
        };
        assert_eq!(p.b.messages(), owned(&sent_a));
        assert_eq!(p.a.messages(), owned(&sent_b));
        assert!(p.a.error.is_none() && p.b.error.is_none());

        // On the wire: one MESSAGE per frame, in data frames (0x00, or 0x02 when long;
        // never COMMAND, never MORE); MORE travels inside; nonces count up by one.
        for (frames, from_client, skip, sent, first_nonce) in [
            (wire.a_frames(), true, start.0, &sent_a, 3u64),
            (wire.b_frames(), false, start.1, &sent_b, 2u64),
        ] {
            let opened: Vec<Opened> = frames[skip..]
                .iter()
                .map(|f| open_message(f, from_client))
                .collect();
            let expected: Vec<(u8, Vec<u8>)> = sent
                .iter()
                .flat_map(|m| {
                    m.iter()
                        .enumerate()
                        .map(move |(i, f)| (u8::from(i + 1 < m.len()), f.to_vec()))
                })
                .collect();
            assert_eq!(
                opened
                    .iter()
                    .map(|o| (o.flags, o.payload.clone()))
                    .collect::<Vec<_>>(),
                expected
            );
            for (i, o) in opened.iter().enumerate() {
                assert_eq!(o.nonce, first_nonce + i as u64);
            }
            let long: Vec<bool> = frames[skip..].iter().map(|f| f.flags == 0x02).collect();
            assert_eq!(long.iter().filter(|l| **l).count(), 1, "one 1 MiB frame");
            // 33 bytes of overhead per frame.
            for (f, (_, payload)) in frames[skip..].iter().zip(&expected) {
                assert_eq!(f.body.len(), 33 + payload.len());
            }
        }
    }

    #[test]
    fn curve_bodies_are_never_sent_apart() {
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        let mut out = [0u8; 64];
        assert_eq!(
            p.a.buf
                .connection_mut()
                .send_frame_header(100_000, false, &mut out),
            Err(EncodeError::Sealed)
        );
        // A shared (large) body is sealed like any other.
        let body = Bytes::from(vec![7u8; 100_000]);
        p.a.buf.send_frame_shared(&body, true).expect("send");
        p.a.buf.send_frame_shared(&body, false).expect("send");
        p.drive();
        assert_eq!(p.b.messages(), vec![vec![body.to_vec(), body.to_vec()]]);
        assert!(p.a.error.is_none() && p.b.error.is_none());
    }

    /// XSUB/XPUB over CURVE at `version`, the XSUB being the CURVE client or server.
    fn subscriptions(version: Version, xsub_is_client: bool) {
        let (client_type, server_type) = if xsub_is_client {
            (SocketType::XSub, SocketType::XPub)
        } else {
            (SocketType::XPub, SocketType::XSub)
        };
        let mut client = curve_client(client_type, server_keys().public);
        client.version = version;
        let mut p = pair_of(client, curve_server(server_type), CLIENT_ENTROPY);
        let mut wire = Wire::default();
        handshake(&mut p, &mut wire);
        assert_eq!(p.a.buf.connection().version(), version);
        let start = (wire.a_frames().len(), wire.b_frames().len());

        fn ends(p: &mut Pair, xsub_is_client: bool) -> (&mut End, &mut End) {
            if xsub_is_client {
                (&mut p.a, &mut p.b)
            } else {
                (&mut p.b, &mut p.a)
            }
        }
        let (sub, _) = ends(&mut p, xsub_is_client);
        sub.buf.send_subscribe(b"topic").expect("subscribe");
        sub.buf.send_subscribe(b"").expect("subscribe");
        sub.buf.send_cancel(b"topic").expect("cancel");
        p.drive_tapped(|d, b| wire.record(d, b));
        let (_, publ) = ends(&mut p, xsub_is_client);
        let subs: Vec<&OwnedItem> = publ
            .items
            .iter()
            .filter(|i| matches!(i, OwnedItem::Subscribe(_) | OwnedItem::Cancel(_)))
            .collect();
        assert_eq!(
            subs,
            vec![
                &OwnedItem::Subscribe(Bytes::from_static(b"topic")),
                &OwnedItem::Subscribe(Bytes::from_static(b"")),
                &OwnedItem::Cancel(Bytes::from_static(b"topic")),
            ]
        );
        publ.send(&[b"topic", b"data"]);
        p.drive_tapped(|d, b| wire.record(d, b));
        let (sub, _) = ends(&mut p, xsub_is_client);
        assert_eq!(
            sub.messages(),
            vec![vec![b"topic".to_vec(), b"data".to_vec()]]
        );

        // Inside the MESSAGEs: commands (inner flags 0x02) to 3.1, messages to 3.0.
        let (frames, skip) = if xsub_is_client {
            (wire.a_frames(), start.0)
        } else {
            (wire.b_frames(), start.1)
        };
        let opened: Vec<(u8, Vec<u8>)> = frames[skip..]
            .iter()
            .map(|f| open_message(f, xsub_is_client))
            .map(|o| (o.flags, o.payload))
            .collect();
        let expected: Vec<(u8, Vec<u8>)> = if version == Version::V3_1 {
            vec![
                (0x02, prefixed(b"SUBSCRIBE", b"topic")),
                (0x02, prefixed(b"SUBSCRIBE", b"")),
                (0x02, prefixed(b"CANCEL", b"topic")),
            ]
        } else {
            vec![
                (0x00, b"\x01topic".to_vec()),
                (0x00, b"\x01".to_vec()),
                (0x00, b"\x00topic".to_vec()),
            ]
        };
        assert_eq!(opened, expected);
        assert!(p.a.error.is_none() && p.b.error.is_none());
    }

    #[test]
    fn curve_subscriptions_xsub_to_xpub() {
        for version in [Version::V3_1, Version::V3_0] {
            subscriptions(version, true);
            subscriptions(version, false);
        }
    }

    #[test]
    fn curve_heartbeats() {
        let mut client = curve_client(SocketType::Dealer, server_keys().public);
        client.heartbeat_interval = Some(Duration::from_millis(100));
        client.heartbeat_ttl = Some(Duration::from_millis(2500));
        let mut p = pair_of(client, curve_server(SocketType::Router), CLIENT_ENTROPY);
        handshake(&mut p, &mut Wire::default());

        // The first PING, by hand: a sealed command in a data frame.
        let due = p.a.buf.connection().poll_timeout().expect("ping timer");
        assert_eq!(due, p.now + Duration::from_millis(100));
        p.now = due;
        let now = p.now;
        p.a.buf.connection_mut().handle_timeout(now).expect("timer");
        let ping = frames_of(&p.a.pump(now));
        assert_eq!(ping.len(), 1);
        assert_eq!(ping[0].flags, 0x00);
        let opened = open_message(&ping[0], true);
        assert_eq!(opened.flags, 0x02);
        assert_eq!(opened.payload, b"\x04PING\x00\x19");
        assert_eq!(opened.nonce, 3);
        p.b.feed(now, &frames_to_bytes(&ping));
        assert_eq!(p.b.events.last(), Some(&Event::PingReceived));
        let pong = frames_of(&p.b.pump(now));
        assert_eq!(pong.len(), 1);
        let opened = open_message(&pong[0], false);
        assert_eq!(opened.flags, 0x02);
        assert_eq!(opened.payload, b"\x04PONG");
        assert_eq!(opened.nonce, 2);
        p.a.feed(now, &frames_to_bytes(&pong));
        assert_eq!(p.a.events.last(), Some(&Event::PongReceived));

        // Many rounds: no failure, messages still flow.
        p.run_for(Duration::from_secs(5));
        assert!(p.a.error.is_none() && p.b.error.is_none());
        assert!(count(&p.a.events, Event::PongReceived) >= 40);
        assert!(count(&p.b.events, Event::PingReceived) >= 40);
        p.a.send(&[b"after", b"pings"]);
        p.drive();
        assert_eq!(
            p.b.messages(),
            vec![vec![b"after".to_vec(), b"pings".to_vec()]]
        );

        // A silent server: the PING goes unanswered.
        p.b.talks = false;
        p.run_for(Duration::from_secs(1));
        assert_eq!(p.a.error, Some(Error::HeartbeatTimeout));
        assert_eq!(p.b.error, None);
    }

    fn frames_to_bytes(frames: &[Frame]) -> Vec<u8> {
        frames
            .iter()
            .flat_map(|f| encode(f.flags, &f.body))
            .collect()
    }

    #[test]
    fn curve_wrong_server_key_fails_hello() {
        // The client boxes its HELLO to the wrong key (its own).
        let mut p = pair_of(
            curve_client(SocketType::Dealer, client_keys().public),
            curve_server(SocketType::Router),
            CLIENT_ENTROPY,
        );
        let mut wire = Wire::default();
        p.drive_tapped(|d, b| wire.record(d, b));
        assert_eq!(p.b.error, curve(CurveError::BadHello));
        assert!(p.b.events.is_empty());
        assert_eq!(wire.b_to_a.len(), 64, "no WELCOME");
        assert_eq!(p.a.error, None);
        assert!(!p.a.established());
    }

    #[test]
    fn curve_client_refused_by_verdict() {
        for status in [400u16, 500, 300] {
            let mut p = curve_pair();
            let mut wire = Wire::default();
            p.drive_tapped(|d, b| wire.record(d, b));
            let now = p.now;
            let r = verdict(&mut p.b, now, status);
            p.drive_tapped(|d, b| wire.record(d, b));
            let wire = wire_checked(wire, r, status);
            let server = wire.b_frames();
            assert_eq!(p.b.error, Some(Error::AuthRejected { status }));
            assert!(!p.a.established() && !p.b.established());
            if status == 300 {
                assert_eq!(server.len(), 1, "WELCOME only");
                assert_eq!(p.a.error, None);
            } else {
                // A plaintext ERROR command after WELCOME, no READY.
                let reason = status.to_string();
                let mut body = b"\x05ERROR\x03".to_vec();
                body.extend_from_slice(reason.as_bytes());
                assert_eq!(server[1..], [Frame { flags: 0x04, body }]);
                assert_eq!(p.a.error, Some(peer_error(reason.as_bytes())));
            }
        }
    }

    /// Run a CURVE pair with `ed` in flight, granting the request, then send one message
    /// each way (so that frame 2 of either direction is a MESSAGE).
    fn run_edited<F: FnMut(&mut Vec<u8>)>(ed: &mut Editor<F>) -> Pair {
        let mut p = curve_pair();
        drive_granting(&mut p, |d, b| ed.tap(d, b));
        if p.a.established() && p.b.established() {
            p.a.send(&[b"from client"]);
            p.b.send(&[b"from server"]);
            p.drive_tapped(|d, b| ed.tap(d, b));
        }
        assert!(ed.applied, "the edit was made");
        p
    }

    /// The receiving end of `dir` failed with `expected`; the sender did not fail
    /// (it never hears of it).
    fn assert_receiver(p: &Pair, dir: Dir, expected: Option<Error>, what: &str) {
        let (receiver, sender) = match dir {
            Dir::AtoB => (&p.b, &p.a),
            Dir::BtoA => (&p.a, &p.b),
        };
        assert_eq!(receiver.error, expected, "{what}");
        assert_eq!(sender.error, None, "{what}: sender");
    }

    #[test]
    fn curve_tampered_bytes_are_typed_errors() {
        use CurveError::*;
        // (direction, frame index, body offset, expected error, what)
        let cases: Vec<(Dir, usize, usize, Error, &str)> = vec![
            (Dir::AtoB, 0, 1, Error::UnexpectedCommand, "HELLO name"),
            (
                Dir::AtoB,
                0,
                6,
                Error::Curve(MalformedHello),
                "HELLO version",
            ),
            (
                Dir::AtoB,
                0,
                7,
                Error::Curve(MalformedHello),
                "HELLO minor version",
            ),
            (Dir::AtoB, 0, 80, Error::Curve(BadHello), "HELLO C'"),
            (Dir::AtoB, 0, 119, Error::Curve(BadHello), "HELLO nonce"),
            (Dir::AtoB, 0, 120, Error::Curve(BadHello), "HELLO tag"),
            (Dir::AtoB, 0, 199, Error::Curve(BadHello), "HELLO box"),
            (Dir::BtoA, 0, 1, Error::UnexpectedCommand, "WELCOME name"),
            (Dir::BtoA, 0, 8, Error::Curve(BadWelcome), "WELCOME nonce"),
            (Dir::BtoA, 0, 24, Error::Curve(BadWelcome), "WELCOME tag"),
            (Dir::BtoA, 0, 50, Error::Curve(BadWelcome), "WELCOME S'"),
            (
                Dir::BtoA,
                0,
                167,
                Error::Curve(BadWelcome),
                "WELCOME cookie",
            ),
            (Dir::AtoB, 1, 1, Error::UnexpectedCommand, "INITIATE name"),
            (
                Dir::AtoB,
                1,
                9,
                Error::Curve(BadInitiate),
                "INITIATE cookie nonce",
            ),
            (
                Dir::AtoB,
                1,
                40,
                Error::Curve(BadInitiate),
                "INITIATE cookie",
            ),
            (
                Dir::AtoB,
                1,
                112,
                Error::Curve(BadInitiate),
                "INITIATE nonce",
            ),
            (Dir::AtoB, 1, 113, Error::Curve(BadInitiate), "INITIATE tag"),
            (Dir::AtoB, 1, 130, Error::Curve(BadInitiate), "INITIATE C"),
            (
                Dir::AtoB,
                1,
                200,
                Error::Curve(BadInitiate),
                "INITIATE vouch",
            ),
            (
                Dir::AtoB,
                1,
                291,
                Error::Curve(BadInitiate),
                "INITIATE metadata",
            ),
            (Dir::BtoA, 1, 1, Error::UnexpectedCommand, "READY name"),
            (Dir::BtoA, 1, 13, Error::Curve(BadReady), "READY nonce"),
            (Dir::BtoA, 1, 14, Error::Curve(BadReady), "READY tag"),
            (Dir::BtoA, 1, 64, Error::Curve(BadReady), "READY metadata"),
            (
                Dir::AtoB,
                2,
                1,
                Error::Curve(BadMessage),
                "MESSAGE name (client)",
            ),
            (
                Dir::AtoB,
                2,
                8,
                Error::Curve(BadMessage),
                "MESSAGE nonce high (client)",
            ),
            (
                Dir::AtoB,
                2,
                16,
                Error::Curve(BadMessage),
                "MESSAGE tag (client)",
            ),
            (
                Dir::AtoB,
                2,
                32,
                Error::Curve(BadMessage),
                "MESSAGE flags (client)",
            ),
            (
                Dir::AtoB,
                2,
                43,
                Error::Curve(BadMessage),
                "MESSAGE payload (client)",
            ),
            (
                Dir::BtoA,
                2,
                1,
                Error::Curve(BadMessage),
                "MESSAGE name (server)",
            ),
            (
                Dir::BtoA,
                2,
                8,
                Error::Curve(BadMessage),
                "MESSAGE nonce high (server)",
            ),
            (
                Dir::BtoA,
                2,
                20,
                Error::Curve(BadMessage),
                "MESSAGE tag (server)",
            ),
            (
                Dir::BtoA,
                2,
                43,
                Error::Curve(BadMessage),
                "MESSAGE payload (server)",
            ),
            // The nonce is checked before the box: 3 → 2 is not above the INITIATE's 2.
            (
                Dir::AtoB,
                2,
                15,
                Error::Curve(InvalidSequence),
                "MESSAGE nonce low (client)",
            ),
            // 2 → 3 is above READY's 1: the box decides.
            (
                Dir::BtoA,
                2,
                15,
                Error::Curve(BadMessage),
                "MESSAGE nonce low (server)",
            ),
        ];
        for (dir, index, at, expected, what) in cases {
            let mut ed = Editor::new(dir, index, flip(at));
            let p = run_edited(&mut ed);
            assert_receiver(&p, dir, Some(expected), what);
            assert!(
                !(p.a.established() && p.b.established()) || index >= 2,
                "{what}: handshake must fail"
            );
        }
    }

    #[test]
    fn curve_hello_padding_is_not_checked() {
        // As in libzmq: the 72 bytes of padding are outside every box and ignored.
        let mut ed = Editor::new(Dir::AtoB, 0, flip(8));
        let p = run_edited(&mut ed);
        assert!(p.a.established() && p.b.established());
        assert_eq!(p.b.messages(), vec![vec![b"from client".to_vec()]]);
    }

    #[test]
    fn curve_outer_command_flag_on_message_is_refused() {
        let mut ed = Editor::new(Dir::AtoB, 2, |f: &mut Vec<u8>| f[0] |= 0x04);
        let p = run_edited(&mut ed);
        assert_receiver(&p, Dir::AtoB, Some(Error::UnexpectedCommand), "0x04");
        // A clear command after the handshake, too.
        let mut ed = Editor::new(Dir::BtoA, 2, replace(command(b"\x04PING\x00\x00")));
        let p = run_edited(&mut ed);
        assert_receiver(&p, Dir::BtoA, Some(Error::UnexpectedCommand), "clear PING");
        // And a clear data frame.
        let mut ed = Editor::new(Dir::BtoA, 2, replace(encode(0, b"clear text")));
        let p = run_edited(&mut ed);
        assert_receiver(&p, Dir::BtoA, curve(CurveError::BadMessage), "clear data");
    }

    #[test]
    fn curve_truncated_commands_are_typed_errors() {
        use CurveError::*;
        // (direction, frame index, full length, lengths to cut to, error, what)
        let short_name = Error::UnexpectedCommand;
        let cases: Vec<(Dir, usize, Vec<usize>, Error, &str)> = vec![
            (Dir::AtoB, 0, vec![0, 3, 5], short_name.clone(), "HELLO"),
            (
                Dir::AtoB,
                0,
                vec![6, 8, 80, 120, 136, 199],
                Error::Curve(MalformedHello),
                "HELLO",
            ),
            (Dir::BtoA, 0, vec![0, 7], short_name.clone(), "WELCOME"),
            (
                Dir::BtoA,
                0,
                vec![8, 24, 40, 100, 167],
                Error::Curve(BadWelcome),
                "WELCOME",
            ),
            (Dir::AtoB, 1, vec![0, 8], short_name.clone(), "INITIATE"),
            (
                Dir::AtoB,
                1,
                vec![9, 105, 113, 129, 200, 256],
                Error::Curve(MalformedInitiate),
                "INITIATE",
            ),
            (
                Dir::AtoB,
                1,
                vec![257, 291],
                Error::Curve(BadInitiate),
                "INITIATE",
            ),
            (Dir::BtoA, 1, vec![0, 5], short_name.clone(), "READY"),
            (
                Dir::BtoA,
                1,
                vec![6, 14, 29, 30, 31, 64],
                Error::Curve(BadReady),
                "READY",
            ),
            (
                Dir::AtoB,
                2,
                vec![0, 7, 8, 16, 32, 33, 34, 43],
                Error::Curve(BadMessage),
                "MESSAGE (client)",
            ),
            (
                Dir::BtoA,
                2,
                vec![0, 8, 16, 32, 33, 43],
                Error::Curve(BadMessage),
                "MESSAGE (server)",
            ),
        ];
        for (dir, index, lengths, expected, what) in cases {
            for len in lengths {
                let mut ed = Editor::new(dir, index, cut(len));
                let p = run_edited(&mut ed);
                let what = format!("{what} cut to {len}");
                assert_receiver(&p, dir, Some(expected.clone()), &what);
            }
        }
        // One byte too many is no better.
        for (dir, index, expected) in [
            (Dir::AtoB, 0, MalformedHello),
            (Dir::BtoA, 0, BadWelcome),
            (Dir::AtoB, 1, BadInitiate),
            (Dir::BtoA, 1, BadReady),
            (Dir::AtoB, 2, BadMessage),
        ] {
            let mut ed = Editor::new(dir, index, extend(b"\x00"));
            let p = run_edited(&mut ed);
            assert_receiver(&p, dir, curve(expected), "one byte more");
        }
    }

    #[test]
    fn curve_replayed_message_is_invalid_sequence() {
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        let now = p.now;
        p.a.send(&[b"once"]);
        let bytes = p.a.pump(now);
        p.b.feed(now, &bytes);
        assert_eq!(p.b.messages(), vec![vec![b"once".to_vec()]]);
        assert_eq!(p.b.error, None);
        p.b.feed(now, &bytes);
        assert_eq!(p.b.error, curve(CurveError::InvalidSequence));
        assert_eq!(p.b.messages().len(), 1);

        // The server's MESSAGEs, replayed to the client.
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        p.b.send(&[b"a", b"b"]);
        let bytes = p.b.pump(now);
        p.a.feed(now, &bytes);
        assert_eq!(p.a.messages(), vec![vec![b"a".to_vec(), b"b".to_vec()]]);
        // Only the second frame again: its nonce is the last one seen.
        let frames = frames_of(&bytes);
        p.a.feed(now, &encode(frames[1].flags, &frames[1].body));
        assert_eq!(p.a.error, curve(CurveError::InvalidSequence));
    }

    #[test]
    fn curve_reordered_messages_are_invalid_sequence() {
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        let now = p.now;
        p.a.send(&[b"first"]);
        let first = p.a.pump(now);
        p.a.send(&[b"second"]);
        let second = p.a.pump(now);
        p.b.feed(now, &second);
        assert_eq!(p.b.messages(), vec![vec![b"second".to_vec()]]);
        assert_eq!(p.b.error, None);
        p.b.feed(now, &first);
        assert_eq!(p.b.error, curve(CurveError::InvalidSequence));
        assert_eq!(p.b.messages(), vec![vec![b"second".to_vec()]]);

        // A dropped MESSAGE (a gap) is accepted, as libzmq does.
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        p.a.send(&[b"lost"]);
        let _ = p.a.pump(now);
        p.a.send(&[b"kept"]);
        let kept = p.a.pump(now);
        p.b.feed(now, &kept);
        assert_eq!(p.b.error, None);
        assert_eq!(p.b.messages(), vec![vec![b"kept".to_vec()]]);
    }

    #[test]
    fn curve_commands_in_the_wrong_order() {
        // HELLO twice.
        let mut ed = Editor::new(Dir::AtoB, 0, twice());
        let mut p = curve_pair();
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert_eq!(p.b.error, Some(Error::UnexpectedCommand));

        // To the server, in place of HELLO: INITIATE (before WELCOME), READY, a MESSAGE.
        let mut wire = Wire::default();
        handshake(&mut curve_pair(), &mut wire);
        let client = wire.a_frames();
        let server = wire.b_frames();
        for (frame, expected) in [
            (
                encode(client[1].flags, &client[1].body),
                Error::UnexpectedCommand,
            ),
            (
                encode(server[1].flags, &server[1].body),
                Error::UnexpectedCommand,
            ),
            (encode(0, b"\x07MESSAGE"), Error::UnexpectedMessage),
        ] {
            let mut ed = Editor::new(Dir::AtoB, 0, replace(frame));
            let mut p = curve_pair();
            p.drive_tapped(|d, b| ed.tap(d, b));
            assert!(ed.applied);
            assert_eq!(p.b.error, Some(expected));
            assert!(p.b.events.is_empty());
        }

        // INITIATE twice: the second arrives while the verdict is pending.
        let mut ed = Editor::new(Dir::AtoB, 1, twice());
        let mut p = curve_pair();
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert_eq!(p.b.error, Some(Error::UnexpectedCommand));

        // To the client, in place of WELCOME: READY (from a real run), HELLO, WELCOME twice.
        for edit in [
            Box::new(replace(encode(server[1].flags, &server[1].body)))
                as Box<dyn FnMut(&mut Vec<u8>)>,
            Box::new(replace(encode(client[0].flags, &client[0].body))),
            Box::new(twice()),
        ] {
            let mut ed = Editor::new(Dir::BtoA, 0, edit);
            let mut p = curve_pair();
            drive_granting(&mut p, |d, b| ed.tap(d, b));
            assert!(ed.applied);
            assert_eq!(p.a.error, Some(Error::UnexpectedCommand));
        }

        // READY twice: the second is a clear command during traffic.
        let mut ed = Editor::new(Dir::BtoA, 1, twice());
        let mut p = curve_pair();
        drive_granting(&mut p, |d, b| ed.tap(d, b));
        assert_eq!(p.a.error, Some(Error::UnexpectedCommand));
    }

    /// Makes a vouch box from Rv and the client's own vouch box.
    type VouchOf = Box<dyn Fn(&[u8], &[u8]) -> Vec<u8>>;

    /// Rewrite the client's INITIATE with a different vouch (box resealed with the real
    /// short-term keys, as a client holding them could).
    fn forge_vouch(vouch_of: impl Fn(&[u8], &[u8]) -> Vec<u8>) -> impl FnMut(&mut Vec<u8>) {
        move |f: &mut Vec<u8>| {
            let (frame, _) = split_frame(f).expect("INITIATE");
            let body = &frame.body;
            let n = &body[105..113];
            let mut plain = open(&traffic_box(), b"CurveZMQINITIATE", n, &body[113..]);
            let rv = plain[32..48].to_vec();
            let vouch = vouch_of(&rv, &plain[48..128]);
            plain.splice(48..128, vouch);
            let mut forged = body[..113].to_vec();
            forged.extend(seal(&traffic_box(), b"CurveZMQINITIATE", n, &plain));
            *f = encode(frame.flags, &forged);
        }
    }

    #[test]
    fn curve_bad_vouch() {
        let s_short = short_keys(SERVER_ENTROPY).public;
        let c_short = short_keys(CLIENT_ENTROPY).public;
        let vouch_box = move |keys: &KeyPair| CryptoBox::new(&s_short, &keys.secret);
        let cases: Vec<(VouchOf, &str)> = vec![
            (
                Box::new(|_: &[u8], v: &[u8]| {
                    let mut v = v.to_vec();
                    v[20] ^= 1;
                    v
                }),
                "vouch box corrupted",
            ),
            (
                Box::new(move |rv: &[u8], _: &[u8]| {
                    let mut inside = [0x42u8; 32].to_vec();
                    inside.extend(key(SERVER_PUBLIC));
                    seal(&vouch_box(&client_keys()), b"VOUCH---", rv, &inside)
                }),
                "vouch names another C'",
            ),
            (
                Box::new(move |rv: &[u8], _: &[u8]| {
                    // Sealed by another long-term key than the C claimed.
                    let other = KeyPair::from_secret([9; 32]);
                    let mut inside = c_short.0.to_vec();
                    inside.extend(key(SERVER_PUBLIC));
                    seal(&vouch_box(&other), b"VOUCH---", rv, &inside)
                }),
                "vouch by another key",
            ),
        ];
        for (vouch_of, what) in cases {
            let mut ed = Editor::new(Dir::AtoB, 1, forge_vouch(vouch_of));
            let p = run_edited(&mut ed);
            assert_receiver(&p, Dir::AtoB, curve(CurveError::BadVouch), what);
            assert!(p.b.events.is_empty(), "{what}: no request");
        }

        // The forgery itself is sound: a vouch resealed as the client would is accepted,
        // even naming another server key (libzmq does not compare it).
        let vouch_of = move |rv: &[u8], _: &[u8]| {
            let mut inside = c_short.0.to_vec();
            inside.extend([0x33; 32]);
            seal(&vouch_box(&client_keys()), b"VOUCH---", rv, &inside)
        };
        let mut ed = Editor::new(Dir::AtoB, 1, forge_vouch(vouch_of));
        let p = run_edited(&mut ed);
        assert!(p.a.established() && p.b.established());
        assert_eq!(p.b.messages(), vec![vec![b"from client".to_vec()]]);
    }

    #[test]
    fn curve_without_entropy_fails() {
        let client = curve_client(SocketType::Dealer, server_keys().public);
        let server = curve_server(SocketType::Router);
        let mut p = Pair::new(client.clone(), server.clone());
        let mut wire = Wire::default();
        p.drive_tapped(|d, b| wire.record(d, b));
        assert_eq!(p.a.error, curve(CurveError::NoEntropy));
        assert_eq!(p.b.error, curve(CurveError::NoEntropy));
        // Greetings only.
        assert_eq!(wire.a_to_b.len(), 64);
        assert_eq!(wire.b_to_a.len(), 64);

        // A server without entropy: the client's HELLO goes out and is never answered.
        let mut p = Pair::from_connections(
            Connection::with_entropy(client, Pair::START, CLIENT_ENTROPY),
            Connection::new(server, Pair::START),
        );
        p.drive();
        assert_eq!(p.b.error, curve(CurveError::NoEntropy));
        assert_eq!(p.a.error, None);
        assert!(!p.a.established());
    }

    /// A whole session: handshake, traffic both ways, a subscription-free exchange.
    fn session(client_entropy: [u8; 32]) -> Wire {
        let mut p = pair_of(
            curve_client(SocketType::Dealer, server_keys().public),
            curve_server(SocketType::Router),
            client_entropy,
        );
        let mut wire = Wire::default();
        handshake(&mut p, &mut wire);
        p.a.send(&[b"", b"request"]);
        p.b.send(&[b"reply"]);
        p.drive_tapped(|d, b| wire.record(d, b));
        assert!(p.a.error.is_none() && p.b.error.is_none());
        wire
    }

    #[test]
    fn curve_is_deterministic() {
        let one = session(CLIENT_ENTROPY);
        let two = session(CLIENT_ENTROPY);
        assert_eq!(one.a_to_b, two.a_to_b);
        assert_eq!(one.b_to_a, two.b_to_a);
        // Another client entropy: other short keys, so every box differs.
        let other = session([0x77; 32]);
        assert_eq!(one.a_to_b[..64], other.a_to_b[..64]);
        assert_ne!(one.a_frames()[0], other.a_frames()[0]);
        assert_ne!(one.b_frames()[0], other.b_frames()[0]);
        assert_eq!(one.a_to_b.len(), other.a_to_b.len());
    }

    /// HELLO body for client entropy `[0x01; 32]` with libzmq's server test key:
    /// `05 HELLO 01 00`, 72 zeros, C′, nonce 1, then the box (pinned: a change to the key
    /// schedule, nonces or box layout shows here).
    const HELLO_KNOWN: &str = concat!(
        "0548454c4c4f0100",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000",
        "b096676f41f58fed3436e2dd7a65501bf6d649d1eb9f9f26485edc0a3f75f400",
        "0000000000000001",
        "097ed01edbb6cfa4c9e4fd865ff1f0682085a670154df1c2288ad99c331b5312",
        "e673dbae476ab979",
        "e4e3cc331a192b78e24b6fb6524e6b59dcd14b2a3916cf84dd5d06ffd17907c2",
        "5feae8bfba6a4815",
    );

    #[test]
    fn curve_hello_known_answer() {
        let entropy = [0x01; 32];
        let hello = |entropy| {
            let mut p = pair_of(
                curve_client(SocketType::Dealer, server_keys().public),
                curve_server(SocketType::Router),
                entropy,
            );
            let mut wire = Wire::default();
            p.drive_tapped(|d, b| wire.record(d, b));
            wire.a_frames()[0].body.clone()
        };
        let body = hello(entropy);
        assert_eq!(body, hello(entropy), "reproducible");
        let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, HELLO_KNOWN);

        // Built independently: C′ from the entropy, the box of 64 zeros to S.
        let short = short_keys(entropy);
        let mut expected = b"\x05HELLO\x01\x00".to_vec();
        expected.extend([0u8; 72]);
        expected.extend(short.public.0);
        expected.extend(1u64.to_be_bytes());
        let to_server = CryptoBox::new(&server_keys().public, &short.secret);
        expected.extend(seal(
            &to_server,
            b"CurveZMQHELLO---",
            &1u64.to_be_bytes(),
            &[0; 64],
        ));
        assert_eq!(body, expected);

        // The box opens with libzmq's server test secret.
        let server_box = CryptoBox::new(
            &PublicKey(body[80..112].try_into().expect("C'")),
            &server_keys().secret,
        );
        assert_eq!(
            open(
                &server_box,
                b"CurveZMQHELLO---",
                &body[112..120],
                &body[120..]
            ),
            [0u8; 64]
        );
    }

    #[test]
    fn curve_mechanism_mismatch_with_plain() {
        let mut p = Pair::from_connections(
            Connection::with_entropy(
                curve_client(SocketType::Dealer, server_keys().public),
                Pair::START,
                CLIENT_ENTROPY,
            ),
            Connection::new(
                config(SocketType::Router, Security::PlainServer),
                Pair::START,
            ),
        );
        p.drive();
        assert_eq!(
            p.a.error,
            Some(Error::MechanismMismatch {
                ours: Mechanism::CURVE,
                theirs: Mechanism::PLAIN
            })
        );
    }

    #[test]
    fn curve_handle_auth_without_request() {
        let now = Pair::START;
        // Before the greeting, on the server and the client.
        for server in [true, false] {
            let mut p = curve_pair();
            let end = if server { &mut p.b } else { &mut p.a };
            assert_eq!(verdict(end, now, 200), Err(Error::UnexpectedVerdict));
            assert_eq!(
                end.buf.connection().error(),
                Some(&Error::UnexpectedVerdict)
            );
        }
        // After HELLO only (WELCOME sent, INITIATE lost): still nothing asked.
        let mut p = curve_pair();
        let mut ed = Editor::new(Dir::AtoB, 1, replace(Vec::new()));
        p.drive_tapped(|d, b| ed.tap(d, b));
        assert!(ed.applied);
        assert!(p.b.events.is_empty());
        assert!(p.b.buf.connection().auth_request().is_none());
        assert_eq!(verdict(&mut p.b, now, 200), Err(Error::UnexpectedVerdict));
        // The client never asks.
        assert_eq!(verdict(&mut p.a, now, 200), Err(Error::UnexpectedVerdict));
        // After the verdict: the one request was answered.
        let mut p = curve_pair();
        handshake(&mut p, &mut Wire::default());
        assert_eq!(verdict(&mut p.b, now, 200), Err(Error::UnexpectedVerdict));
    }

    #[test]
    fn curve_large_metadata_and_identity() {
        let mut client = curve_client(SocketType::Dealer, server_keys().public);
        client.set_identity(b"alice").expect("identity");
        let mut server = curve_server(SocketType::Router);
        server
            .add_property(b"X-Big", &[b'v'; 500])
            .expect("property");
        let mut p = pair_of(client, server, CLIENT_ENTROPY);
        let mut wire = Wire::default();
        handshake(&mut p, &mut wire);
        assert_eq!(p.b.buf.connection().peer_identity(), b"alice");
        let meta = ready_meta(&p.a);
        let meta = zmtp_proto::codec::Metadata::parse(&meta).expect("metadata");
        assert_eq!(meta.get(b"X-Big"), Some(&[b'v'; 500][..]));
        // READY is now a LONG command: 30 + 35 + (1 + 5 + 4 + 500).
        let ready = &wire.b_frames()[1];
        assert_eq!(ready.flags, 0x06);
        assert_eq!(ready.body.len(), 30 + 35 + 510);
        // INITIATE carries the identity: 257 + 22 + 13 + 5.
        assert_eq!(wire.a_frames()[1].body.len(), 257 + 40);
    }

    #[test]
    fn curve_incompatible_socket_type_in_initiate() {
        let mut p = pair_of(
            curve_client(SocketType::Pub, server_keys().public),
            curve_server(SocketType::Router),
            CLIENT_ENTROPY,
        );
        p.drive();
        assert_eq!(
            p.b.error,
            Some(Error::IncompatibleSocketType {
                peer: SocketType::Pub
            })
        );
        // Refused before any verdict was asked for.
        assert!(p.b.events.is_empty());
        assert!(p.b.buf.connection().auth_request().is_none());
        assert!(!p.a.established());
    }

    /// Everything a raw connection transmits now, each frame written into a buffer of
    /// exactly the size it asked for after an empty buffer was refused.
    fn raw_transmit(conn: &mut Connection) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let mut tiny = [0u8; 0];
            match conn.poll_transmit(&mut tiny) {
                Ok(0) => return out,
                Ok(n) => panic!("{n} bytes written into an empty buffer"),
                Err(InsufficientSize { required }) => {
                    let mut buf = vec![0u8; required];
                    assert_eq!(conn.poll_transmit(&mut buf), Ok(required));
                    out.extend(buf);
                }
            }
        }
    }

    /// Send a message on a raw connection, the same way.
    fn raw_send(conn: &mut Connection, frames: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let more = i + 1 < frames.len();
            let mut tiny = [0u8; 1];
            let Err(EncodeError::InsufficientSize { required }) =
                conn.send_frame(f, more, &mut tiny)
            else {
                panic!("a sealed frame in one byte");
            };
            let mut buf = vec![0u8; required];
            assert_eq!(conn.send_frame(f, more, &mut buf), Ok(required));
            out.extend(buf);
        }
        out
    }

    /// Feed `bytes` one at a time to a raw connection; the items it yields, after checking
    /// that each payload range points at the payload in the (decrypted) input.
    fn raw_receive(
        conn: &mut Connection,
        rx: &mut Vec<u8>,
        bytes: &[u8],
    ) -> Vec<(String, Vec<u8>)> {
        let mut items = Vec::new();
        for &byte in bytes {
            rx.push(byte);
            loop {
                let len = rx.len();
                let input = conn.handle_input(Pair::START, rx).expect("valid input");
                let (consumed, needed, range) =
                    (input.consumed, input.needed, input.payload.clone());
                let item = input.item.as_ref().map(zmtp_testkit::pair::describe);
                if let Some(item) = item {
                    assert_eq!(rx[range], item.1[..], "payload range of {}", item.0);
                    items.push(item);
                }
                if consumed == 0 {
                    assert!(needed > len, "needs {needed} with {len} buffered");
                    break;
                }
                rx.drain(..consumed);
            }
        }
        items
    }

    #[test]
    fn curve_raw_connections_byte_by_byte() {
        let now = Pair::START;
        let mut client = Connection::with_entropy(
            curve_client(SocketType::Dealer, server_keys().public),
            now,
            CLIENT_ENTROPY,
        );
        let mut server =
            Connection::with_entropy(curve_server(SocketType::Router), now, SERVER_ENTROPY);
        let (mut c_rx, mut s_rx) = (Vec::new(), Vec::new());
        let mut wire = Wire::default();
        let (mut c_items, mut s_items) = (Vec::new(), Vec::new());
        let mut c_events = Vec::new();
        let mut s_events = Vec::new();
        let mut exchange =
            |client: &mut Connection, server: &mut Connection, to_s: Vec<u8>, to_c: Vec<u8>| {
                wire.record(Dir::AtoB, &to_s);
                wire.record(Dir::BtoA, &to_c);
                s_items.extend(raw_receive(server, &mut s_rx, &to_s));
                c_items.extend(raw_receive(client, &mut c_rx, &to_c));
                !(to_s.is_empty() && to_c.is_empty())
            };
        for _ in 0..100 {
            let to_s = raw_transmit(&mut client);
            let to_c = raw_transmit(&mut server);
            let moved = exchange(&mut client, &mut server, to_s, to_c);
            c_events.extend(std::iter::from_fn(|| client.poll_event()));
            s_events.extend(std::iter::from_fn(|| server.poll_event()));
            if !moved {
                if server.auth_request().is_none() {
                    break;
                }
                server.handle_auth(now, 200).expect("verdict");
            }
        }
        assert!(client.is_established() && server.is_established());
        assert_eq!(
            s_events,
            vec![
                Event::AuthRequested,
                Event::HandshakeSucceeded {
                    peer_socket_type: Some(SocketType::Dealer),
                    version: Version::V3_1
                }
            ]
        );
        assert_eq!(
            c_events,
            vec![Event::HandshakeSucceeded {
                peer_socket_type: Some(SocketType::Router),
                version: Version::V3_1
            }]
        );
        let to_s = raw_send(&mut client, &[b"", b"request"]);
        let to_c = raw_send(&mut server, &[b"reply"]);
        exchange(&mut client, &mut server, to_s, to_c);

        let item = |k: &str, p: &[u8]| (k.to_string(), p.to_vec());
        assert_eq!(
            s_items,
            vec![
                item("ready", &metadata(b"DEALER", true)),
                item("frame+", b""),
                item("frame", b"request")
            ]
        );
        assert_eq!(
            c_items,
            vec![
                item("ready", &metadata(b"ROUTER", true)),
                item("frame", b"reply")
            ]
        );
        // The same bytes as the buffered pair of `session` exchanges.
        let buffered = session(CLIENT_ENTROPY);
        assert_eq!(wire.a_to_b, buffered.a_to_b);
        assert_eq!(wire.b_to_a, buffered.b_to_a);
    }
}
