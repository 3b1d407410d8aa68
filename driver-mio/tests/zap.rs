//! ZAP handlers (RFC 27) bound in the context: a REP or ROUTER socket at the context's ZAP
//! endpoint is asked about the peers of PLAIN, CURVE and NULL servers, and its replies are
//! the verdicts, checked as libzmq checks them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zmtp_mio::{
    Bytes, Context, Message, MonitorEvent, MonitorEventKind, Options, Security, Socket, SocketType,
};

const T: Duration = Duration::from_secs(10);
/// How long a peer that should not get through is given to try.
const SHORT: Duration = Duration::from_millis(300);

/// `ZMQ_PROTOCOL_ERROR_ZAP_BAD_VERSION`.
const ZAP_BAD_VERSION: u32 = 0x2000_0003;
/// `ZMQ_PROTOCOL_ERROR_ZAP_MALFORMED_REPLY`.
const ZAP_MALFORMED_REPLY: u32 = 0x2000_0001;
const EFAULT: u32 = 14;

/// A context whose ZAP handler binds at an abstract name of its own.
fn context(name: &str) -> (Context, String) {
    let ctx = Context::new().unwrap();
    let endpoint = format!("ipc://@zmtp-mio-zap-{}-{name}", std::process::id());
    ctx.set_zap_endpoint(Some(&endpoint));
    (ctx, endpoint)
}

/// A handler thread: a socket of `ty` (REP or ROUTER) bound at `endpoint`, answering each
/// request (its RFC 27 frames, without envelope) with what `decide` returns (the reply's
/// frames, without envelope), until stopped. Counts the requests it answered.
struct Handler {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Handler {
    fn start(
        ctx: &Context,
        endpoint: &str,
        ty: SocketType,
        decide: impl Fn(&[Bytes]) -> Vec<Bytes> + Send + 'static,
    ) -> Handler {
        let socket = ctx.socket(ty).unwrap();
        socket.bind(endpoint).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicUsize::new(0));
        let (s, a) = (stop.clone(), answered.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let Ok(request) = socket.recv_timeout(Some(Duration::from_millis(50))) else {
                    continue;
                };
                let mut frames = request.into_frames();
                // A ROUTER's envelope: the peer's routing id and the delimiter.
                let envelope: Vec<Bytes> = match ty {
                    SocketType::Router => frames.drain(..2).collect(),
                    _ => Vec::new(),
                };
                let mut reply = envelope;
                reply.extend(decide(&frames));
                socket.send(Message::from(reply)).unwrap();
                a.fetch_add(1, Ordering::SeqCst);
            }
        });
        Handler {
            stop,
            answered,
            thread: Some(thread),
        }
    }

    fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn frames(f: &[&[u8]]) -> Vec<Bytes> {
    f.iter().map(|f| Bytes::copy_from_slice(f)).collect()
}

/// A reply to `request` with `status` and `user_id`, and `metadata`.
fn reply(request: &[Bytes], status: &str, user_id: &[u8], metadata: &[u8]) -> Vec<Bytes> {
    frames(&[
        b"1.0",
        &request[1],
        status.as_bytes(),
        b"",
        user_id,
        metadata,
    ])
}

/// A server of `security` bound on tcp, with its monitor.
fn server(
    ctx: &Context,
    security: Security,
    options: Options,
) -> (Socket, String, std::sync::mpsc::Receiver<MonitorEvent>) {
    let options = options.with_security(security);
    let server = ctx.socket_with(SocketType::Pull, options).unwrap();
    let monitor = server.monitor();
    let endpoint = server.bind("tcp://127.0.0.1:*").unwrap();
    (server, endpoint, monitor)
}

fn client(ctx: &Context, security: Security, endpoint: &str) -> Socket {
    let client = unconnected_client(ctx, security);
    client.connect(endpoint).unwrap();
    client
}

fn unconnected_client(ctx: &Context, security: Security) -> Socket {
    let options = Options::default()
        .with_security(security)
        .with_linger(Some(Duration::ZERO));
    ctx.socket_with(SocketType::Push, options).unwrap()
}

/// A client with its monitor, watching before it connects: a refused handshake can end
/// before a monitor made after the connect would have started.
fn client_watched(
    ctx: &Context,
    security: Security,
    endpoint: &str,
) -> (Socket, std::sync::mpsc::Receiver<MonitorEvent>) {
    let client = unconnected_client(ctx, security);
    let monitor = client.monitor();
    client.connect(endpoint).unwrap();
    (client, monitor)
}

/// A message from a client that is to be refused, which must never arrive. Not waited
/// for: the client's handshake may have failed already, and then there is no peer to
/// queue it for (a blocking send would wait for one).
fn offer(client: &Socket, body: &str) {
    let _ = client.try_send(body);
}

/// The first handshake outcome (succeeded or failed) the monitor reports.
fn outcome(monitor: &std::sync::mpsc::Receiver<MonitorEvent>) -> (MonitorEventKind, u32) {
    let deadline = Instant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = monitor.recv_timeout(left).expect("no handshake outcome");
        if e.kind == MonitorEventKind::HandshakeSucceeded
            || e.kind.name().starts_with("HANDSHAKE_FAILED")
        {
            return (e.kind, e.value);
        }
    }
}

#[test]
fn a_rep_handler_lets_a_plain_user_in_with_its_user_id_and_refuses_others() {
    let (ctx, zap) = context("plain");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let _handler = Handler::start(&ctx, &zap, SocketType::Rep, move |request| {
        s.lock().unwrap().push(request.to_vec());
        match &request[6..] {
            [user, pass] if &user[..] == b"admin" && &pass[..] == b"secret" => {
                // A property of the handler's own for the peer's messages.
                reply(
                    request,
                    "200",
                    b"admin-id",
                    b"\x05Hello\x00\x00\x00\x05World",
                )
            }
            _ => reply(request, "400", b"", b""),
        }
    });
    let options = Options::default()
        .with_zap_domain("global")
        .with_routing_id("IDENT");
    let (server, endpoint, monitor) = server(&ctx, Security::plain_server(), options);

    let good = client(
        &ctx,
        Security::plain_client("admin", "secret").unwrap(),
        &endpoint,
    );
    good.send("hello").unwrap();
    let msg = server.recv_timeout(Some(T)).unwrap();
    assert_eq!(&msg.frames()[0][..], b"hello");
    assert_eq!(msg.property("User-Id"), Some(&b"admin-id"[..]));
    assert_eq!(msg.property("Hello"), Some(&b"World"[..]));
    assert_eq!(outcome(&monitor), (MonitorEventKind::HandshakeSucceeded, 0));
    {
        let seen = seen.lock().unwrap();
        let request = &seen[0];
        assert_eq!(&request[0][..], b"1.0");
        assert_eq!(&request[2][..], b"global");
        assert_eq!(&request[3][..], b"127.0.0.1");
        assert_eq!(&request[4][..], b"IDENT");
        assert_eq!(&request[5][..], b"PLAIN");
    }

    let (bad, bad_monitor) = client_watched(
        &ctx,
        Security::plain_client("admin", "guess").unwrap(),
        &endpoint,
    );
    offer(&bad, "let me in");
    assert_eq!(
        outcome(&monitor),
        (MonitorEventKind::HandshakeFailedAuth, 400)
    );
    // The client was told why (ERROR "400").
    assert_eq!(
        outcome(&bad_monitor),
        (MonitorEventKind::HandshakeFailedAuth, 400)
    );
    assert!(server.recv_timeout(Some(SHORT)).is_err());
}

#[test]
fn a_router_handler_decides_on_curve_keys() {
    let (ctx, zap) = context("curve");
    let allowed = zmtp_mio::curve_keypair().unwrap();
    let other = zmtp_mio::curve_keypair().unwrap();
    let server_keys = zmtp_mio::curve_keypair().unwrap();
    let allowed_key = allowed.public;
    let handler = Handler::start(&ctx, &zap, SocketType::Router, move |request| {
        assert_eq!(&request[5][..], b"CURVE");
        if request[6][..] == allowed_key.as_bytes()[..] {
            reply(request, "200", allowed_key.to_z85().as_bytes(), b"")
        } else {
            reply(request, "400", b"", b"")
        }
    });
    let server_public = server_keys.public;
    let (server, endpoint, monitor) = server(
        &ctx,
        Security::curve_server(server_keys),
        Options::default(),
    );

    let good = client(
        &ctx,
        Security::curve_client(server_public, allowed),
        &endpoint,
    );
    good.send("sealed").unwrap();
    let msg = server.recv_timeout(Some(T)).unwrap();
    let z85 = allowed_key.to_z85();
    assert_eq!(msg.property("User-Id"), Some(&z85.as_bytes()[..]));
    assert_eq!(outcome(&monitor), (MonitorEventKind::HandshakeSucceeded, 0));

    let bad = client(
        &ctx,
        Security::curve_client(server_public, other),
        &endpoint,
    );
    offer(&bad, "sealed too");
    assert_eq!(
        outcome(&monitor),
        (MonitorEventKind::HandshakeFailedAuth, 400)
    );
    assert!(server.recv_timeout(Some(SHORT)).is_err());
    assert!(handler.answered() >= 2);
}

#[test]
fn a_reply_that_breaks_rfc_27_fails_the_handshake_with_its_protocol_error() {
    let (ctx, zap) = context("bad-reply");
    let _handler = Handler::start(&ctx, &zap, SocketType::Rep, |request| {
        match &request[6][..] {
            // The wrong version.
            b"v" => frames(&[b"2.0", &request[1], b"200", b"", b"", b""]),
            // A frame too many.
            _ => frames(&[b"1.0", &request[1], b"200", b"", b"", b"", b""]),
        }
    });
    let (server, endpoint, monitor) = server(&ctx, Security::plain_server(), Options::default());
    let version = client(&ctx, Security::plain_client("v", "x").unwrap(), &endpoint);
    offer(&version, "no");
    assert_eq!(
        outcome(&monitor),
        (MonitorEventKind::HandshakeFailedProtocol, ZAP_BAD_VERSION)
    );
    drop(version);
    let long = client(
        &ctx,
        Security::plain_client("long", "x").unwrap(),
        &endpoint,
    );
    offer(&long, "no");
    // Skip the first client's reconnects, if any came before it was dropped.
    let deadline = Instant::now() + T;
    loop {
        assert!(Instant::now() < deadline, "no malformed-reply failure");
        let (kind, value) = outcome(&monitor);
        if value != ZAP_BAD_VERSION {
            assert_eq!(
                (kind, value),
                (
                    MonitorEventKind::HandshakeFailedProtocol,
                    ZAP_MALFORMED_REPLY
                )
            );
            break;
        }
    }
    assert!(server.recv_timeout(Some(SHORT)).is_err());
}

#[test]
fn without_a_handler_libzmq_rules_apply() {
    let (ctx, _zap) = context("none");
    // PLAIN: refused, with EFAULT and no ERROR.
    let (server_plain, endpoint, monitor) =
        server(&ctx, Security::plain_server(), Options::default());
    let c = client(
        &ctx,
        Security::plain_client("admin", "secret").unwrap(),
        &endpoint,
    );
    offer(&c, "no");
    assert_eq!(
        outcome(&monitor),
        (MonitorEventKind::HandshakeFailedNoDetail, EFAULT)
    );
    assert!(server_plain.recv_timeout(Some(SHORT)).is_err());

    // NULL with a domain: let in, unless the domain is enforced.
    let options = Options::default().with_zap_domain("global");
    let (server_null, endpoint, monitor) = server(&ctx, Security::Null, options.clone());
    let c = client(&ctx, Security::Null, &endpoint);
    c.send("yes").unwrap();
    assert_eq!(
        &server_null.recv_timeout(Some(T)).unwrap().frames()[0][..],
        b"yes"
    );
    assert_eq!(outcome(&monitor), (MonitorEventKind::HandshakeSucceeded, 0));
    let enforced = options.with_zap_enforce_domain(true);
    let (server_enforced, endpoint, monitor) = server(&ctx, Security::Null, enforced);
    let c = client(&ctx, Security::Null, &endpoint);
    offer(&c, "no");
    assert_eq!(
        outcome(&monitor),
        (MonitorEventKind::HandshakeFailedNoDetail, EFAULT)
    );
    assert!(server_enforced.recv_timeout(Some(SHORT)).is_err());
}

#[test]
fn a_handler_that_goes_away_with_a_request_unanswered_leaves_no_one_stuck() {
    let (ctx, zap) = context("gone");
    let handler = ctx.socket(SocketType::Rep).unwrap();
    handler.bind(&zap).unwrap();
    let options = Options::default().with_handshake_ivl(Some(Duration::from_millis(500)));
    let (server, endpoint, monitor) = server(&ctx, Security::plain_server(), options);
    let c = client(
        &ctx,
        Security::plain_client("admin", "secret").unwrap(),
        &endpoint,
    );
    c.send("waiting").unwrap();
    // The request arrives; the handler goes without answering.
    let request = handler.recv_timeout(Some(T)).unwrap();
    assert_eq!(&request.frames()[5][..], b"PLAIN");
    drop(handler);
    // The peer's handshake ends at its deadline, as in libzmq.
    assert_eq!(
        outcome(&monitor).0,
        MonitorEventKind::HandshakeFailedNoDetail
    );

    // A new handler at the same endpoint is asked about the next peers.
    let handler = Handler::start(&ctx, &zap, SocketType::Rep, |request| {
        reply(request, "200", b"back", b"")
    });
    let msg = server.recv_timeout(Some(T)).unwrap();
    assert_eq!(&msg.frames()[0][..], b"waiting");
    assert_eq!(msg.property("User-Id"), Some(&b"back"[..]));
    assert!(handler.answered() >= 1);
    drop(c);
    drop(server);
    // The context ends though the reactor's own ZAP socket is still connected.
    drop(handler);
    ctx.term();
}
