//! The blocking (mio) driver's ZAP handler against libzmq clients: our PLAIN and CURVE
//! servers ask a REP handler bound in their context at its ZAP endpoint (where libzmq's
//! C interface puts `inproc://zeromq.zap.01`); libzmq clients the handler accepts get
//! through, with the handler's user id on their messages, and those it refuses see the
//! refusal in libzmq's own monitor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use zmtp_conformance::ffi::{Ctx, ZMQ_EVENT_ALL, ZMQ_PUSH};
use zmtp_conformance::security::key;
use zmtp_conformance::security::{
    expect_auth_failure, server_keys, zcurve_client, zplain_client, zsock, CLIENT_PUBLIC,
    SERVER_PUBLIC,
};
use zmtp_mio::{Bytes, Context, Message, Options, Security, SocketType};

const TIMEOUT: Duration = Duration::from_secs(5);
/// How long to watch for something that must not happen.
const QUIET: Duration = Duration::from_millis(300);

/// A REP handler at `endpoint` of `ctx`: PLAIN user "admin" with password "secret", and
/// CURVE with libzmq's client test key, are let in with a user id; anyone else is refused
/// with 400. Stops when dropped.
struct Handler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handler {
    fn start(ctx: &Context, endpoint: &str) -> Handler {
        let rep = ctx.socket(SocketType::Rep).unwrap();
        rep.bind(endpoint).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let Ok(request) = rep.recv_timeout(Some(Duration::from_millis(50))) else {
                    continue;
                };
                let f = request.frames();
                let user: Option<Vec<u8>> = match (&f[5][..], &f[6..]) {
                    (b"PLAIN", [u, p]) if &u[..] == b"admin" && &p[..] == b"secret" => {
                        Some(b"admin".to_vec())
                    }
                    (b"CURVE", [k]) if k[..] == key(CLIENT_PUBLIC)[..] => {
                        Some(CLIENT_PUBLIC.to_vec())
                    }
                    _ => None,
                };
                let (status, user) = match user {
                    Some(u) => (&b"200"[..], u),
                    None => (&b"400"[..], Vec::new()),
                };
                let reply = [&b"1.0"[..], &f[1], status, b"", &user, b""]
                    .map(Bytes::copy_from_slice)
                    .to_vec();
                rep.send(Message::from(reply)).unwrap();
            }
        });
        Handler {
            stop,
            thread: Some(thread),
        }
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

fn context(name: &str) -> (Context, Handler) {
    let ctx = Context::new().unwrap();
    let zap = format!("ipc://@zmtp-conformance-zap-{}-{name}", std::process::id());
    ctx.set_zap_endpoint(Some(&zap));
    let handler = Handler::start(&ctx, &zap);
    (ctx, handler)
}

fn server(ctx: &Context, security: Security) -> (zmtp_mio::Socket, String) {
    let options = Options::default().with_security(security);
    let pull = ctx.socket_with(SocketType::Pull, options).unwrap();
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    (pull, endpoint)
}

#[test]
fn libzmq_plain_clients_are_judged_by_our_zap_handler() {
    let (ctx, _handler) = context("plain");
    let (pull, endpoint) = server(&ctx, Security::plain_server());
    let zctx = Ctx::new();

    let good = zsock(&zctx, ZMQ_PUSH);
    zplain_client(&good, b"admin", b"secret");
    good.connect(&endpoint).unwrap();
    good.send(b"from libzmq", 0).unwrap();
    let msg = pull
        .recv_timeout(Some(TIMEOUT))
        .expect("the accepted client's message");
    assert_eq!(&msg.frames()[0][..], b"from libzmq");
    assert_eq!(msg.property("User-Id"), Some(&b"admin"[..]));

    let bad = zsock(&zctx, ZMQ_PUSH);
    zplain_client(&bad, b"admin", b"guess");
    let mut mon = bad.monitor(&zctx, ZMQ_EVENT_ALL).unwrap();
    bad.connect(&endpoint).unwrap();
    // libzmq hears the refusal: our ERROR "400".
    expect_auth_failure(&mut mon, 400, TIMEOUT);
    let _ = bad.send(b"refused", zmtp_conformance::ffi::ZMQ_DONTWAIT);
    assert!(pull.recv_timeout(Some(QUIET)).is_err());
}

#[test]
fn libzmq_curve_clients_are_judged_by_our_zap_handler() {
    let (ctx, _handler) = context("curve");
    let (pull, endpoint) = server(&ctx, Security::curve_server(server_keys()));
    let zctx = Ctx::new();

    let good = zsock(&zctx, ZMQ_PUSH);
    zcurve_client(&good, &key(SERVER_PUBLIC));
    good.connect(&endpoint).unwrap();
    good.send(b"sealed", 0).unwrap();
    let msg = pull
        .recv_timeout(Some(TIMEOUT))
        .expect("the accepted client's message");
    assert_eq!(&msg.frames()[0][..], b"sealed");
    assert_eq!(msg.property("User-Id"), Some(CLIENT_PUBLIC));
}
