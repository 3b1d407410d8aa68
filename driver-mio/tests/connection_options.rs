//! The mio driver and the options about connections coming and going: a refused connect
//! told apart from other failures (`ZMQ_RECONNECT_STOP`), over tcp and ipc, and the
//! connection messages and application metadata between our own sockets.

use std::sync::mpsc::Receiver;
use std::time::Duration;

use zmtp_mio::{Bytes, Context, MonitorEvent, MonitorEventKind, ReconnectStop, SocketType};

const T: Option<Duration> = Some(Duration::from_secs(5));

/// The kinds of the events that arrive within `wait`.
fn kinds_within(monitor: &Receiver<MonitorEvent>, wait: Duration) -> Vec<MonitorEventKind> {
    let end = std::time::Instant::now() + wait;
    let mut kinds = Vec::new();
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        match monitor.recv_timeout(left) {
            Ok(e) => kinds.push(e.kind),
            Err(_) => break,
        }
    }
    kinds
}

/// A tcp endpoint nobody listens on.
fn refusing_tcp() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("tcp://127.0.0.1:{port}")
}

/// An ipc endpoint whose file exists and nobody listens on (refused, not missing).
fn refusing_ipc(name: &str) -> String {
    let path = std::env::temp_dir().join(format!("zmtp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    format!("ipc://{}", path.display())
}

#[test]
fn a_refused_connect_ends_the_endpoint_with_reconnect_stop_conn_refused() {
    let ctx = Context::new().unwrap();
    for ep in [refusing_tcp(), refusing_ipc("refused")] {
        for stop in [ReconnectStop::NEVER, ReconnectStop::from_bits(1)] {
            let sub = ctx.socket(SocketType::Sub).unwrap();
            sub.set_reconnect_stop(stop).unwrap();
            let monitor = sub.monitor();
            sub.connect(&ep).unwrap();
            let kinds = kinds_within(&monitor, Duration::from_millis(300));
            assert_eq!(
                kinds.first(),
                Some(&MonitorEventKind::ConnectDelayed),
                "{ep}"
            );
            if stop.conn_refused {
                assert_eq!(
                    kinds,
                    [MonitorEventKind::ConnectDelayed, MonitorEventKind::Closed]
                );
                assert!(sub.disconnect(&ep).is_err(), "{ep}: the endpoint is gone");
            } else {
                assert!(
                    kinds.contains(&MonitorEventKind::ConnectRetried),
                    "{ep}: {kinds:?}"
                );
                assert!(
                    !kinds.contains(&MonitorEventKind::Closed),
                    "{ep}: {kinds:?}"
                );
                sub.disconnect(&ep).unwrap();
            }
        }
    }
}

#[test]
fn reconnect_stop_after_disconnect_ends_a_refused_ipc_endpoint_after_a_disconnect() {
    let ctx = Context::new().unwrap();
    let ipc = refusing_ipc("after-disconnect");
    let dealer = ctx.socket(SocketType::Dealer).unwrap();
    dealer
        .set_reconnect_stop(ReconnectStop::from_bits(4))
        .unwrap();
    let other = refusing_tcp();
    dealer.connect(&other).unwrap();
    dealer.disconnect(&other).unwrap();
    let monitor = dealer.monitor();
    dealer.connect(&ipc).unwrap();
    let kinds = kinds_within(&monitor, Duration::from_millis(300));
    assert_eq!(
        kinds,
        [MonitorEventKind::ConnectDelayed, MonitorEventKind::Closed]
    );
    assert!(dealer.disconnect(&ipc).is_err());
}

#[test]
fn hello_hiccup_and_metadata_between_our_sockets() {
    let ctx = Context::new().unwrap();
    let server = ctx.socket(SocketType::Server).unwrap();
    server.set_disconnect_msg("D").unwrap();
    server.set_rcvtimeo(T);
    let ep = server.bind("tcp://127.0.0.1:*").unwrap();
    let client = ctx.socket(SocketType::Client).unwrap();
    client.set_hello_msg("H").unwrap();
    client.set_hiccup_msg("HICCUP").unwrap();
    let mut metadata = zmtp_mio::AppMetadata::new();
    metadata.insert(Bytes::from("X-who"), Bytes::from("client"));
    client.set_metadata(metadata).unwrap();
    client.set_rcvtimeo(T);
    client.connect(&ep).unwrap();
    let hello = server.recv().unwrap();
    assert_eq!(&hello.frames()[0][..], b"H");
    assert_eq!(hello.property("X-who"), Some(&b"client"[..]));
    drop(server);
    assert_eq!(&client.recv().unwrap().frames()[0][..], b"HICCUP");
    // Bad metadata is refused and changes nothing.
    let mut bad = zmtp_mio::AppMetadata::new();
    bad.insert(Bytes::from("who"), Bytes::from("x"));
    assert!(client.set_metadata(bad).is_err());
    assert_eq!(client.options().metadata.len(), 1);
}

/// `ZMQ_SOCKS_PROXY` on the blocking driver: a PUSH reaches a PULL through a SOCKS5 proxy
/// that alone knows the name connected to (the driver looks nothing up itself).
#[test]
fn a_push_reaches_its_pull_through_a_socks5_proxy() {
    use zmtp_testkit::socks::{ProxyConfig, Requested, SocksProxy};
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(T);
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let addr: std::net::SocketAddr = ep["tcp://".len()..].parse().unwrap();
    let mut config = ProxyConfig::default();
    config.routes.insert("zmtp.invalid".into(), addr);
    let proxy = SocksProxy::start(config).unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.set_socks_proxy(Some(zmtp_mio::SocksProxy::new(&proxy.address()).unwrap()))
        .unwrap();
    push.connect(&format!("tcp://zmtp.invalid:{}", addr.port()))
        .unwrap();
    push.send("through the proxy").unwrap();
    assert_eq!(pull.recv_string().unwrap(), "through the proxy");
    assert_eq!(
        proxy.requests(),
        [Requested::Name("zmtp.invalid".into(), addr.port())]
    );
}

/// `ZMQ_SNDBUF` and `ZMQ_RCVBUF` at 4 KiB on every side, with messages of twice that:
/// the sizes are set before each socket binds or connects, as libzmq sets them, so the
/// connections start with a window that fits them. (Set on live connections, the same
/// sizes left each connection crawling at one segment per retransmission timer: 400
/// messages took 14 s, and two receivers stalled.)
#[test]
fn small_kernel_buffers_set_before_connecting_still_carry_large_messages() {
    use std::time::Instant;
    const MESSAGES: usize = 400;
    const RECEIVERS: usize = 2;
    let ctx = Context::new().unwrap();
    let small = zmtp_mio::Options::default()
        .with_sndbuf(Some(4096))
        .with_rcvbuf(Some(4096));
    let push = ctx.socket_with(SocketType::Push, small.clone()).unwrap();
    let ep = push.bind("tcp://127.0.0.1:*").unwrap();
    let monitor = push.monitor();
    let pulls: Vec<_> = (0..RECEIVERS)
        .map(|_| {
            let pull = ctx.socket_with(SocketType::Pull, small.clone()).unwrap();
            pull.set_rcvtimeo(T);
            pull.connect(&ep).unwrap();
            pull
        })
        .collect();
    // Both connected before the first send, so that round robin shares the messages out.
    let mut connected = 0;
    while connected < RECEIVERS {
        let event = monitor
            .recv_timeout(Duration::from_secs(5))
            .expect("a connection");
        connected += usize::from(event.kind == MonitorEventKind::HandshakeSucceeded);
    }
    let body = vec![7u8; 8192];
    let start = Instant::now();
    std::thread::scope(|scope| {
        for pull in &pulls {
            scope.spawn(move || {
                let mut bodies = 0;
                while bodies < MESSAGES / RECEIVERS {
                    let msg = pull.recv().expect("a message within the timeout");
                    bodies += usize::from(msg.frames()[0].len() == 8192);
                }
            });
        }
        for _ in 0..MESSAGES {
            push.send_slice(&body).unwrap();
        }
    });
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "{MESSAGES} messages took {took:?}"
    );
}
