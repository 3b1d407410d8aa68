//! PLAIN, CURVE and ZAP between our own sockets, for every runtime: the in-code
//! authenticator and a ZAP handler bound at `inproc://zeromq.zap.01`. Declared per runtime
//! by [`security_tests!`](crate::security_tests).

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use zmtp_proto::Bytes;

use super::{runtime, timeout, unique, within};
use crate::{
    Authenticator, KeyPair, Message, Monitor, MonitorEventKind, Options, PublicKey, Runtime,
    SecretKey, Security, Socket, SocketType,
};

/// Declare one `#[test]` per shared security test for `$runtime`, each run by `$block_on`.
#[macro_export]
macro_rules! security_tests {
    ($runtime:ty, $block_on:path) => {
        $crate::security_tests!(@each $runtime, $block_on;
            plain_with_the_in_code_authenticator,
            plain_wrong_password_is_refused_with_400,
            curve_allowed_and_refused_keys,
            curve_without_any_handler_encrypts_for_every_client,
            a_zap_handler_at_inproc_decides,
        );
    };
    (@each $runtime:ty, $block_on:path; $($name:ident,)*) => {$(
        #[test]
        fn $name() {
            $block_on($crate::testing::security::$name::<$runtime>())
        }
    )*};
}

/// Held by tests whose outcome depends on whether a ZAP handler is bound at
/// `inproc://zeromq.zap.01` (one per process): those that bind one, and those whose servers
/// rely on there being none.
async fn zap_endpoint_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

fn with_security(security: Security) -> Options {
    let mut o = Options::default();
    o.security = security;
    o
}

/// libzmq's test keys (doc/zmq_curve.txt).
const CLIENT_SECRET: &str = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";
const SERVER_PUBLIC: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const SERVER_SECRET: &str = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
const CLIENT_PUBLIC: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";

/// Wait for the first monitor event of `kind`; its value.
async fn wait_event<R: Runtime>(monitor: &mut Monitor, kind: MonitorEventKind) -> u32 {
    loop {
        let e = within::<R, _>(poll_fn(|cx| Pin::new(&mut *monitor).poll_next(cx)))
            .await
            .expect("monitor open");
        if e.kind == kind {
            return e.value;
        }
    }
}

async fn plain_pair<R: Runtime>(password: &str) -> (Socket<R>, Socket<R>, String) {
    let server =
        Socket::<R>::with_options(SocketType::Pull, with_security(Security::PlainServer)).unwrap();
    server.set_authenticator(Some(Authenticator::new().plain_user("admin", "secret")));
    let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
    let client = Socket::<R>::with_options(
        SocketType::Push,
        with_security(Security::plain_client("admin", password).unwrap()),
    )
    .unwrap();
    (server, client, ep)
}

/// Shared security test `plain_with_the_in_code_authenticator`.
pub async fn plain_with_the_in_code_authenticator<R: Runtime>() {
    let (server, client, ep) = plain_pair::<R>("secret").await;
    client.connect(&ep).unwrap();
    client.send("hello").await.unwrap();
    let got = within::<R, _>(server.recv()).await.unwrap();
    assert_eq!(&got.frames()[0][..], b"hello");
    assert_eq!(got.property("User-Id"), Some(&b"admin"[..]));
    assert_eq!(got.property("Socket-Type"), Some(&b"PUSH"[..]));
}

/// Shared security test `plain_wrong_password_is_refused_with_400`.
pub async fn plain_wrong_password_is_refused_with_400<R: Runtime>() {
    let (server, client, ep) = plain_pair::<R>("wrong").await;
    let mut server_monitor = server.monitor();
    let mut client_monitor = client.monitor();
    client.connect(&ep).unwrap();
    let _ = client.try_send("never");
    assert_eq!(
        wait_event::<R>(&mut client_monitor, MonitorEventKind::HandshakeFailedAuth).await,
        400
    );
    assert_eq!(
        wait_event::<R>(&mut server_monitor, MonitorEventKind::HandshakeFailedAuth).await,
        400
    );
    let late = timeout::<R, _>(Duration::from_millis(300), server.recv()).await;
    assert!(late.is_none(), "nothing is delivered: {late:?}");
}

/// Shared security test `curve_allowed_and_refused_keys`.
pub async fn curve_allowed_and_refused_keys<R: Runtime>() {
    let client_keys = KeyPair::from_secret(SecretKey::from_z85(CLIENT_SECRET).unwrap());
    assert_eq!(client_keys.public.to_string(), CLIENT_PUBLIC);
    for (allowed, delivered) in [(true, true), (false, false)] {
        let server = Socket::<R>::with_options(
            SocketType::Rep,
            with_security(Security::curve_server_z85(SERVER_SECRET).unwrap()),
        )
        .unwrap();
        let auth = if allowed {
            Authenticator::new().curve_allow(client_keys.public)
        } else {
            Authenticator::new().curve_allow(PublicKey::from_bytes([7; 32]))
        };
        server.set_authenticator(Some(auth));
        let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
        let client = Socket::<R>::with_options(
            SocketType::Req,
            with_security(Security::curve_client_z85(SERVER_PUBLIC, CLIENT_SECRET).unwrap()),
        )
        .unwrap();
        let mut monitor = client.monitor();
        client.connect(&ep).unwrap();
        client
            .send(Message::from(vec![
                Bytes::from_static(b"ping"),
                Bytes::from(vec![1u8; 1 << 20]),
            ]))
            .await
            .unwrap();
        if delivered {
            let req = within::<R, _>(server.recv()).await.unwrap();
            assert_eq!(req.frames().len(), 2);
            assert_eq!(req.frames()[1].len(), 1 << 20);
            assert_eq!(req.property("User-Id"), Some(CLIENT_PUBLIC.as_bytes()));
            server.send("pong").await.unwrap();
            let rep = within::<R, _>(client.recv()).await.unwrap();
            assert_eq!(&rep.frames()[0][..], b"pong");
        } else {
            assert_eq!(
                wait_event::<R>(&mut monitor, MonitorEventKind::HandshakeFailedAuth).await,
                400
            );
        }
    }
}

/// Shared security test `curve_without_any_handler_encrypts_for_every_client`.
pub async fn curve_without_any_handler_encrypts_for_every_client<R: Runtime>() {
    let _zap = zap_endpoint_lock().await;
    let server = Socket::<R>::with_options(
        SocketType::Pull,
        with_security(Security::curve_server_z85(SERVER_SECRET).unwrap()),
    )
    .unwrap();
    let ep = server
        .bind(&format!("ipc://@{}", unique("curve-any")))
        .await
        .unwrap();
    let client = Socket::<R>::with_options(
        SocketType::Push,
        with_security(Security::curve_client_z85(SERVER_PUBLIC, CLIENT_SECRET).unwrap()),
    )
    .unwrap();
    client.connect(&ep).unwrap();
    client.send("sealed").await.unwrap();
    let got = within::<R, _>(server.recv()).await.unwrap();
    assert_eq!(&got.frames()[0][..], b"sealed");
}

/// A ZAP handler written as libzmq users write them: a REP socket bound at
/// `inproc://zeromq.zap.01`, answering RFC 27 requests.
async fn serve_zap<R: Runtime>(
    handler: Socket<R>,
    requests: tokio::sync::mpsc::UnboundedSender<Vec<Bytes>>,
) {
    while let Ok(req) = handler.recv().await {
        let frames = req.frames().to_vec();
        let _ = requests.send(frames.clone());
        let ok = frames.get(5).map(|m| &m[..]) == Some(b"PLAIN")
            && frames.get(6).map(|u| &u[..]) == Some(b"admin")
            && frames.get(7).map(|p| &p[..]) == Some(b"secret");
        let (code, user): (&[u8], &[u8]) = if ok {
            (b"200", b"zap-admin")
        } else {
            (b"400", b"")
        };
        let reply = Message::from(vec![
            Bytes::from_static(b"1.0"),
            frames.get(1).cloned().unwrap_or_default(),
            Bytes::copy_from_slice(code),
            Bytes::from_static(b"OK"),
            Bytes::copy_from_slice(user),
            Bytes::new(),
        ]);
        if handler.send(reply).await.is_err() {
            return;
        }
    }
}

/// Shared security test `a_zap_handler_at_inproc_decides`.
pub async fn a_zap_handler_at_inproc_decides<R: Runtime>() {
    let _zap = zap_endpoint_lock().await;
    let handler = Socket::<R>::new(SocketType::Rep).unwrap();
    handler.bind("inproc://zeromq.zap.01").await.unwrap();
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let _handler = runtime::<R>().spawn(serve_zap(handler, tx));

    let mut opts = with_security(Security::PlainServer);
    opts.zap_domain = Bytes::from_static(b"test");
    let server = Socket::<R>::with_options(SocketType::Pull, opts).unwrap();
    let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut server_monitor = server.monitor();
    for (password, delivered) in [(&b"secret"[..], true), (b"nope", false)] {
        let client = Socket::<R>::with_options(
            SocketType::Push,
            with_security(Security::plain_client(b"admin", password).unwrap()),
        )
        .unwrap();
        client.connect(&ep).unwrap();
        let _ = client.try_send("through zap");
        let req = within::<R, _>(seen.recv()).await.unwrap();
        let req: Vec<&[u8]> = req.iter().map(|f| &f[..]).collect();
        assert_eq!(req[..4], [&b"1.0"[..], b"1", b"test", b"127.0.0.1"]);
        assert_eq!(req[5..], [&b"PLAIN"[..], b"admin", password]);
        if delivered {
            let got = within::<R, _>(server.recv()).await.unwrap();
            assert_eq!(got.property("User-Id"), Some(&b"zap-admin"[..]));
        } else {
            assert_eq!(
                wait_event::<R>(&mut server_monitor, MonitorEventKind::HandshakeFailedAuth).await,
                400
            );
        }
    }
}
