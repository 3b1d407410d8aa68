//! PLAIN, CURVE and ZAP between whole sockets: each async driver (tokio, smol: one generic
//! suite, declared per runtime by `suite!`) against libzmq, each scenario in both directions
//! (our socket binds and libzmq connects, `*_libzmq_connects`; libzmq binds and we connect,
//! `*_we_connect`).
//!
//! Our servers are judged by the driver's in-code [`Authenticator`] or by a ZAP handler of
//! ours bound at `inproc://zeromq.zap.01`; libzmq clients see the verdict in their monitor.
//! libzmq's view comes from its socket monitor; ours from our monitor stream.

use std::ffi::c_int;
use std::time::{Duration, Instant as StdInstant};

use zmtp_async::runtime::{timeout, Runtime, Task as _};
use zmtp_async::{Authenticator, Bytes, Message, MonitorEventKind, Options, Security, SocketType};
use zmtp_conformance::async_driver::{our_events, MatrixRuntime};
use zmtp_conformance::ffi::{
    Ctx, Monitor, ZSocket, ZMQ_DEALER, ZMQ_EVENT_ALL, ZMQ_EVENT_HANDSHAKE_SUCCEEDED,
    ZMQ_HEARTBEAT_IVL, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH, ZMQ_SUB,
};
use zmtp_conformance::security::{
    client_keys, expect_auth_failure, key, server_keys, stranger_keys, zcurve_client,
    zcurve_server, zplain_client, zsock, CLIENT_PUBLIC, SERVER_PUBLIC,
};
use zmtp_conformance::Direction;

type Socket<R> = zmtp_async::Socket<R>;

/// Where ZAP handlers bind.
const ZAP: &str = "inproc://zeromq.zap.01";
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long to watch for something that must not happen.
const QUIET: Duration = Duration::from_millis(200);

/// Held by tests whose outcome depends on whether a ZAP handler is bound at
/// `inproc://zeromq.zap.01`, which is one per process: those that bind one, and those whose
/// servers rely on there being none.
fn zap_endpoint_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// One of our sockets on the process-wide runtime `R` of the matrix.
fn socket<R: MatrixRuntime>(rt: &R, ty: SocketType, options: Options) -> Socket<R> {
    Socket::with_runtime(rt.clone(), ty, options).expect("valid options")
}

fn options(security: Security) -> Options {
    let mut o = Options::default();
    o.security = security;
    o
}

/// Link our socket and libzmq's: the binder per `dir`. Returns nothing; both are connecting.
fn link<R: MatrixRuntime>(rt: &R, ours: &Socket<R>, z: &ZSocket<'_>, dir: Direction) {
    match dir {
        Direction::LibzmqConnects => {
            let ep = rt
                .block_on(ours.bind("tcp://127.0.0.1:*"))
                .expect("bind ours");
            z.connect(&ep).expect("zmq_connect");
        }
        Direction::WeConnect => {
            z.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let ep = z.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            ours.connect(&ep).expect("connect ours");
        }
    }
}

/// Receive on our socket within `limit`.
fn recv_within<R: MatrixRuntime>(rt: &R, ours: &Socket<R>, limit: Duration) -> Option<Message> {
    rt.block_on(timeout(rt, limit, ours.recv()))?.ok()
}

fn frames(m: &Message) -> Vec<&[u8]> {
    m.frames().iter().map(|f| &f[..]).collect()
}

/// A libzmq PUSH with `setup` applied, and its monitor. Keep the monitor as long as the
/// socket: libzmq blocks its I/O thread on a monitor whose reader has gone.
fn libzmq_push<'c>(ctx: &'c Ctx, setup: impl Fn(&ZSocket<'c>)) -> (ZSocket<'c>, Monitor<'c>) {
    let z = zsock(ctx, ZMQ_PUSH);
    setup(&z);
    let mon = z.monitor(ctx, ZMQ_EVENT_ALL).expect("monitor");
    (z, mon)
}

// ----- PLAIN: our server, libzmq clients, judged by the in-code authenticator ------------

fn plain_in_code<R: MatrixRuntime>(dir: Direction) {
    let rt = R::shared();
    let ours = socket(&rt, SocketType::Pull, options(Security::PlainServer));
    ours.set_authenticator(Some(Authenticator::new().plain_user(b"admin", b"secret")));
    let ctx = Ctx::new();
    let (good, _good_monitor) = libzmq_push(&ctx, |z| zplain_client(z, b"admin", b"secret"));
    link(&rt, &ours, &good, dir);
    good.send_multipart(&[b"hello", b""]).expect("send");
    let got = recv_within(&rt, &ours, TIMEOUT).expect("the good client's message");
    assert_eq!(frames(&got), [&b"hello"[..], b""]);
    assert_eq!(got.property("User-Id"), Some(&b"admin"[..]));
    assert_eq!(got.property("Socket-Type"), Some(&b"PUSH"[..]));
    // A second client with the wrong password: refused, reported, nothing delivered.
    let (bad, mut mon) = libzmq_push(&ctx, |z| zplain_client(z, b"admin", b"guess"));
    match dir {
        Direction::LibzmqConnects => bad.connect(&ours.last_endpoint()).expect("connect"),
        Direction::WeConnect => {
            bad.bind("tcp://127.0.0.1:*").expect("bind");
            let ep = bad.last_endpoint().expect("endpoint");
            ours.connect(&ep).expect("connect");
        }
    }
    bad.try_send_multipart(&[b"intruder"]).ok();
    expect_auth_failure(&mut mon, 400, TIMEOUT);
    assert!(
        recv_within(&rt, &ours, QUIET).is_none(),
        "refused client delivered"
    );
}

// ----- PLAIN: our server, judged by our ZAP handler at inproc://zeromq.zap.01 -------------

/// A ZAP handler as libzmq users write one: a ROUTER bound at `inproc://zeromq.zap.01`
/// answering RFC 27 requests; admits admin/secret.
async fn zap_handler<R: Runtime>(handler: std::sync::Arc<Socket<R>>) {
    while let Ok(req) = handler.recv().await {
        let f = req.frames();
        // [peer id, empty, "1.0", id, domain, address, identity, mechanism, user, pass]
        let ok = f.len() == 10
            && &f[7][..] == b"PLAIN"
            && &f[8][..] == b"admin"
            && &f[9][..] == b"secret";
        let (status, user): (&[u8], &[u8]) = if ok {
            (b"200", b"zap:admin")
        } else {
            (b"400", b"")
        };
        let reply = Message::from(vec![
            f[0].clone(),
            Bytes::new(),
            Bytes::from_static(b"1.0"),
            f[3].clone(),
            Bytes::copy_from_slice(status),
            Bytes::from_static(b""),
            Bytes::copy_from_slice(user),
            Bytes::new(),
        ]);
        if handler.send(reply).await.is_err() {
            return;
        }
    }
}

fn plain_zap_handler<R: MatrixRuntime>(dir: Direction) {
    let _zap = zap_endpoint_lock();
    let rt = R::shared();
    let handler = std::sync::Arc::new(socket(&rt, SocketType::Router, Options::default()));
    rt.block_on(handler.bind(ZAP)).unwrap();
    let task = rt.spawn(zap_handler(handler.clone()));
    let _handler = ZapHandler {
        handler,
        task: Some(task),
    };
    let ours = socket(&rt, SocketType::Pull, options(Security::PlainServer));
    let ctx = Ctx::new();
    let (good, _good_monitor) = libzmq_push(&ctx, |z| zplain_client(z, b"admin", b"secret"));
    link(&rt, &ours, &good, dir);
    good.send_multipart(&[b"via zap"]).expect("send");
    let got = recv_within(&rt, &ours, TIMEOUT).expect("admitted by the ZAP handler");
    assert_eq!(frames(&got), [&b"via zap"[..]]);
    assert_eq!(got.property("User-Id"), Some(&b"zap:admin"[..]));
    let (bad, mut mon) = libzmq_push(&ctx, |z| zplain_client(z, b"mallory", b"secret"));
    let ours2 = socket(&rt, SocketType::Pull, options(Security::PlainServer));
    link(&rt, &ours2, &bad, dir);
    bad.try_send_multipart(&[b"intruder"]).ok();
    expect_auth_failure(&mut mon, 400, TIMEOUT);
    assert!(recv_within(&rt, &ours2, QUIET).is_none());
}

/// A running ZAP handler. The runtime outlives the test: when the test ends (passed or
/// not), the handler leaves the ZAP endpoint before the lock on it is released.
struct ZapHandler<R: MatrixRuntime> {
    handler: std::sync::Arc<Socket<R>>,
    task: Option<R::Task>,
}

impl<R: MatrixRuntime> Drop for ZapHandler<R> {
    fn drop(&mut self) {
        let _ = self.handler.unbind(ZAP);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

// ----- CURVE: our server, libzmq clients ----------------------------------------------------

fn curve_in_code<R: MatrixRuntime>(dir: Direction, allowed: bool) {
    let rt = R::shared();
    let ours = socket(
        &rt,
        SocketType::Router,
        options(Security::CurveServer {
            keys: server_keys(),
        }),
    );
    let allow = if allowed {
        client_keys().public
    } else {
        stranger_keys().public
    };
    ours.set_authenticator(Some(Authenticator::new().curve_allow(allow)));
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_DEALER);
    zcurve_client(&z, &key(SERVER_PUBLIC));
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    link(&rt, &ours, &z, dir);
    let big = vec![0x5a; 1 << 20];
    if !allowed {
        // A bound DEALER has nowhere to queue before a peer is attached: nothing to send.
        z.try_send_multipart(&[b"req", &big]).ok();
        expect_auth_failure(&mut mon, 400, TIMEOUT);
        assert!(recv_within(&rt, &ours, QUIET).is_none());
        return;
    }
    // Blocks until the (encrypted) connection is up when libzmq is the binder.
    z.send_multipart(&[b"req", &big]).expect("send");
    let got = recv_within(&rt, &ours, TIMEOUT).expect("the allowed client's request");
    let f = frames(&got);
    assert_eq!(f.len(), 3, "routing id, then the two frames");
    assert_eq!((f[1], f[2].len()), (&b"req"[..], big.len()));
    assert_eq!(got.property("User-Id"), Some(CLIENT_PUBLIC));
    // The reply travels encrypted back through ROUTER.
    let reply = Message::from(vec![got.frames()[0].clone(), Bytes::from_static(b"rep")]);
    rt.block_on(ours.send(reply)).expect("reply");
    assert_eq!(
        z.recv_multipart().expect("libzmq gets the reply"),
        [b"rep".to_vec()]
    );
}

// ----- CURVE: our client with the wrong server key, libzmq server ---------------------------

fn curve_wrong_server_key<R: MatrixRuntime>(dir: Direction) {
    let rt = R::shared();
    let ours = socket(
        &rt,
        SocketType::Push,
        options(Security::CurveClient {
            server_key: stranger_keys().public,
            keys: client_keys(),
        }),
    );
    let mut monitor = ours.monitor();
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_PULL);
    zcurve_server(&z);
    link(&rt, &ours, &z, dir);
    let _ = ours.try_send("must not arrive");
    let events = our_events(&rt, &mut monitor, TIMEOUT, |e| {
        matches!(
            e.kind,
            MonitorEventKind::HandshakeFailedNoDetail
                | MonitorEventKind::HandshakeFailedProtocol
                | MonitorEventKind::HandshakeFailedAuth
        )
    });
    let failed = events.iter().any(|e| {
        matches!(
            e.kind,
            MonitorEventKind::HandshakeFailedNoDetail
                | MonitorEventKind::HandshakeFailedProtocol
                | MonitorEventKind::HandshakeFailedAuth
        )
    });
    assert!(failed, "no handshake failure reported: {events:?}");
    assert!(
        !events
            .iter()
            .any(|e| e.kind == MonitorEventKind::HandshakeSucceeded),
        "{events:?}"
    );
    assert!(z.try_recv_multipart().is_err(), "libzmq received something");
    // The message never will arrive: the test process must not wait for it at exit.
    ours.set_linger(Some(std::time::Duration::ZERO)).unwrap();
}

// ----- CURVE: PUB/SUB and heartbeats --------------------------------------------------------

/// Our PUB (CURVE server, heartbeats every 50 ms) and a libzmq SUB (CURVE client, also
/// heartbeating): subscriptions travel encrypted, filtering holds, and the connection
/// survives many heartbeat intervals.
fn curve_pub_sub<R: MatrixRuntime>(dir: Direction) {
    let _zap = zap_endpoint_lock();
    let rt = R::shared();
    let mut o = options(Security::CurveServer {
        keys: server_keys(),
    });
    o.heartbeat_ivl = Some(Duration::from_millis(50));
    let ours = socket(&rt, SocketType::Pub, o);
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_SUB);
    zcurve_client(&z, &key(SERVER_PUBLIC));
    z.set_int(ZMQ_HEARTBEAT_IVL, 50 as c_int)
        .expect("ZMQ_HEARTBEAT_IVL");
    let mut mon = z.monitor(&ctx, ZMQ_EVENT_ALL).expect("monitor");
    z.subscribe(b"a").expect("subscribe");
    link(&rt, &ours, &z, dir);
    mon.wait_event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, TIMEOUT)
        .expect("libzmq's handshake");
    // Publish until the subscription has arrived (it races the first messages).
    let deadline = StdInstant::now() + TIMEOUT;
    loop {
        rt.block_on(ours.send("b-skipped")).unwrap();
        rt.block_on(ours.send("a-wanted")).unwrap();
        if let Ok(m) = z.try_recv_multipart() {
            assert_eq!(m, [b"a-wanted".to_vec()]);
            break;
        }
        assert!(
            StdInstant::now() < deadline,
            "no subscribed message arrived"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ten heartbeat intervals later the connection is still the same one.
    std::thread::sleep(Duration::from_millis(500));
    rt.block_on(ours.send("b-late")).unwrap();
    rt.block_on(ours.send("a-late")).unwrap();
    let deadline = StdInstant::now() + TIMEOUT;
    let late = loop {
        match z.try_recv_multipart() {
            Ok(m) if m == [b"a-wanted".to_vec()] => {}
            Ok(m) => break m,
            Err(_) if StdInstant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("nothing after the heartbeats: {e}"),
        }
    };
    assert_eq!(late, [b"a-late".to_vec()]);
    mon.poll();
    let handshakes = mon
        .events()
        .iter()
        .filter(|e| e.event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
        .count();
    assert_eq!(handshakes, 1, "the connection was re-made");
}

/// Our SUB (CURVE client) and a libzmq PUB (CURVE server without ZAP: any client).
fn curve_our_sub<R: MatrixRuntime>(dir: Direction) {
    let rt = R::shared();
    let ours = socket(
        &rt,
        SocketType::Sub,
        options(Security::CurveClient {
            server_key: server_keys().public,
            keys: client_keys(),
        }),
    );
    ours.subscribe("x").expect("subscribe");
    let ctx = Ctx::new();
    let z = zsock(&ctx, ZMQ_PUB);
    zcurve_server(&z);
    link(&rt, &ours, &z, dir);
    let deadline = StdInstant::now() + TIMEOUT;
    let got = loop {
        z.send_multipart(&[b"y-no"]).expect("publish");
        z.send_multipart(&[b"x-yes"]).expect("publish");
        if let Some(m) = recv_within(&rt, &ours, Duration::from_millis(20)) {
            break m;
        }
        assert!(StdInstant::now() < deadline, "nothing arrived");
    };
    assert_eq!(frames(&got), [&b"x-yes"[..]]);
}

/// The suite for one runtime, in a module of its own (`on_tokio::...`, `on_smol::...`).
macro_rules! suite {
    ($module:ident, $runtime:ty) => {
        mod $module {
            use zmtp_conformance::Direction;

            #[test]
            fn plain_in_code_authenticator_libzmq_connects() {
                super::plain_in_code::<$runtime>(Direction::LibzmqConnects);
            }

            #[test]
            fn plain_in_code_authenticator_we_connect() {
                super::plain_in_code::<$runtime>(Direction::WeConnect);
            }

            #[test]
            fn plain_zap_handler_libzmq_connects() {
                super::plain_zap_handler::<$runtime>(Direction::LibzmqConnects);
            }

            #[test]
            fn plain_zap_handler_we_connect() {
                super::plain_zap_handler::<$runtime>(Direction::WeConnect);
            }

            #[test]
            fn curve_allowed_client_libzmq_connects() {
                super::curve_in_code::<$runtime>(Direction::LibzmqConnects, true);
            }

            #[test]
            fn curve_allowed_client_we_connect() {
                super::curve_in_code::<$runtime>(Direction::WeConnect, true);
            }

            #[test]
            fn curve_refused_client_libzmq_connects() {
                super::curve_in_code::<$runtime>(Direction::LibzmqConnects, false);
            }

            #[test]
            fn curve_refused_client_we_connect() {
                super::curve_in_code::<$runtime>(Direction::WeConnect, false);
            }

            #[test]
            fn curve_wrong_server_key_libzmq_connects() {
                super::curve_wrong_server_key::<$runtime>(Direction::LibzmqConnects);
            }

            #[test]
            fn curve_wrong_server_key_we_connect() {
                super::curve_wrong_server_key::<$runtime>(Direction::WeConnect);
            }

            #[test]
            fn curve_pub_sub_heartbeats_libzmq_connects() {
                super::curve_pub_sub::<$runtime>(Direction::LibzmqConnects);
            }

            #[test]
            fn curve_pub_sub_heartbeats_we_connect() {
                super::curve_pub_sub::<$runtime>(Direction::WeConnect);
            }

            #[test]
            fn curve_our_sub_libzmq_connects() {
                super::curve_our_sub::<$runtime>(Direction::LibzmqConnects);
            }

            #[test]
            fn curve_our_sub_we_connect() {
                super::curve_our_sub::<$runtime>(Direction::WeConnect);
            }
        }
    };
}

suite!(on_tokio, zmtp_tokio::Tokio);
suite!(on_smol, zmtp_smol::Smol);
