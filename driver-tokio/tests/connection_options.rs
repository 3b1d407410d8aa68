//! The options about connections coming and going on the async drivers (their setters come
//! from the same table as the core's options): a refused connect with `RECONNECT_STOP`,
//! the hello and hiccup messages, and the `ipc://` accept filters.

use std::time::Duration;

use zmtp_tokio::{Message, ReconnectStop, Socket, SocketType};

const T: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_refused_connect_ends_the_endpoint_with_reconnect_stop_conn_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("tcp://127.0.0.1:{port}");
    for stop in [ReconnectStop::NEVER, ReconnectStop::from_bits(1)] {
        let sub = Socket::new(SocketType::Sub).unwrap();
        sub.set_reconnect_stop(stop).unwrap();
        sub.connect(&ep).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(sub.disconnect(&ep).is_err(), stop.conn_refused, "{stop:?}");
    }
}

#[tokio::test]
async fn hello_and_hiccup_messages() {
    let server = Socket::new(SocketType::Server).unwrap();
    let ep = server.bind("tcp://127.0.0.1:*").await.unwrap();
    let client = Socket::new(SocketType::Client).unwrap();
    client.set_hello_msg("H").unwrap();
    client.set_hiccup_msg("HICCUP").unwrap();
    client.connect(&ep).unwrap();
    let hello: Message = tokio::time::timeout(T, server.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&hello.frames()[0][..], b"H");
    drop(server);
    let hiccup: Message = tokio::time::timeout(T, client.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&hiccup.frames()[0][..], b"HICCUP");
}

/// The effective user id of this process: the owner of a file it creates.
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    let path = std::env::temp_dir().join(format!("zmtp-uid-{}", std::process::id()));
    std::fs::write(&path, b"").unwrap();
    let uid = std::fs::metadata(&path).unwrap().uid();
    let _ = std::fs::remove_file(&path);
    uid
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn ipc_filters_judge_peers_by_their_credentials() {
    let uid = own_uid();
    let pull = Socket::new(SocketType::Pull).unwrap();
    let mut filters = zmtp_tokio::IpcAcceptFilters::default();
    filters.uids.insert(uid.wrapping_add(1));
    pull.set_ipc_accept_filters(filters.clone()).unwrap();
    let ep = pull.bind("ipc://*").await.unwrap();

    let refused = Socket::new(SocketType::Push).unwrap();
    // Its message is never taken: it must not linger at exit.
    refused.set_linger(Some(Duration::ZERO)).unwrap();
    refused.connect(&ep).unwrap();
    let _ = refused.try_send(Message::from("refused"));
    let got = tokio::time::timeout(Duration::from_millis(300), pull.recv()).await;
    assert!(got.is_err(), "a peer of another user got through");
    drop(refused);

    filters.uids.insert(uid);
    pull.set_ipc_accept_filters(filters).unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    push.send(Message::from("ours")).await.unwrap();
    let msg: Message = tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
    assert_eq!(&msg.frames()[0][..], b"ours");
}

/// `ZMQ_SOCKS_PROXY` on the async drivers: a PUSH reaches a PULL through a SOCKS5 proxy
/// (with a username and password) that alone knows the name connected to.
#[tokio::test]
async fn a_push_reaches_its_pull_through_a_socks5_proxy() {
    use zmtp_testkit::socks::{ProxyConfig, Requested, SocksProxy};
    let pull = Socket::new(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let addr: std::net::SocketAddr = ep["tcp://".len()..].parse().unwrap();
    let mut config = ProxyConfig::default();
    config.routes.insert("zmtp.invalid".into(), addr);
    config.credentials = Some(("user".into(), "pass".into()));
    let proxy = SocksProxy::start(config).unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    let via = zmtp_tokio::SocksProxy::new(&proxy.address())
        .and_then(|p| p.with_credentials("user", "pass"))
        .unwrap();
    push.set_socks_proxy(Some(via)).unwrap();
    push.connect(&format!("tcp://zmtp.invalid:{}", addr.port()))
        .unwrap();
    push.send("through the proxy").await.unwrap();
    let got = tokio::time::timeout(T, pull.recv_string()).await.unwrap();
    assert_eq!(got.unwrap(), "through the proxy");
    assert_eq!(
        proxy.requests(),
        [Requested::Name("zmtp.invalid".into(), addr.port())]
    );
}

/// `ZMQ_SNDBUF` and `ZMQ_RCVBUF` at 4 KiB on every side, with messages of twice that: the
/// sizes are set before each socket binds or connects, so the connections start with a
/// window that fits them (see the blocking driver's test of the same name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_kernel_buffers_set_before_connecting_still_carry_large_messages() {
    use zmtp_tokio::{MonitorEventKind, Options};
    const MESSAGES: usize = 400;
    const RECEIVERS: usize = 2;
    let small = Options::default()
        .with_sndbuf(Some(4096))
        .with_rcvbuf(Some(4096));
    let push = Socket::with_options(SocketType::Push, small.clone()).unwrap();
    let ep = push.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut monitor = push.monitor();
    let mut pulls = Vec::new();
    for _ in 0..RECEIVERS {
        let pull = Socket::with_options(SocketType::Pull, small.clone()).unwrap();
        pull.connect(&ep).unwrap();
        pulls.push(pull);
    }
    // Both connected before the first send, so that round robin shares the messages out.
    let mut connected = 0;
    while connected < RECEIVERS {
        let event = tokio::time::timeout(T, monitor.next())
            .await
            .unwrap()
            .unwrap();
        connected += usize::from(event.kind == MonitorEventKind::HandshakeSucceeded);
    }
    let body = vec![7u8; 8192];
    let start = std::time::Instant::now();
    let receivers: Vec<_> = pulls
        .into_iter()
        .map(|pull| {
            tokio::spawn(async move {
                for _ in 0..MESSAGES / RECEIVERS {
                    let msg = tokio::time::timeout(T, pull.recv()).await.unwrap().unwrap();
                    assert_eq!(msg.frames()[0].len(), 8192);
                }
            })
        })
        .collect();
    for _ in 0..MESSAGES {
        push.send_slice(&body).await.unwrap();
    }
    for receiver in receivers {
        receiver.await.unwrap();
    }
    let took = start.elapsed();
    assert!(took < T, "{MESSAGES} messages took {took:?}");
}
