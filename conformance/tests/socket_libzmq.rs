//! A whole `Socket` (patterns, queues, reconnects) against libzmq, in both directions.

use std::time::Duration;

use zmtp_conformance::ffi::{
    self, Ctx, ZSocket, ZMQ_DEALER, ZMQ_PUB, ZMQ_ROUTER, ZMQ_ROUTING_ID, ZMQ_SUB,
};
use zmtp_conformance::socket_driver::SocketDriver;
use zmtp_conformance::{both_directions, Direction};
use zmtp_proto::socket::{Message, MonitorEventKind, Options, Sent};
use zmtp_proto::SocketType;

const TIMEOUT: Duration = Duration::from_secs(5);

fn frames(m: &Message) -> Vec<Vec<u8>> {
    m.frames().iter().map(|f| f.to_vec()).collect()
}

/// Peers of our socket whose handshake is done.
fn established(d: &mut SocketDriver) -> usize {
    let s = d.socket();
    let peers: Vec<_> = s.peers().collect();
    peers
        .into_iter()
        .filter(|&p| s.peer_stats(p).is_some_and(|st| st.established))
        .count()
}

/// Wire our socket and a libzmq socket together in direction `dir`.
fn link(dir: Direction, ours: &mut SocketDriver, theirs: &ZSocket<'_>) {
    match dir {
        Direction::WeConnect => {
            theirs.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let ep = theirs.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            ours.connect(&ep);
        }
        Direction::LibzmqConnects => {
            let ep = ours.bind("tcp://127.0.0.1:*");
            assert!(ep.starts_with("tcp://127.0.0.1:"), "{ep}");
            theirs.connect(&ep).expect("zmq_connect");
        }
    }
}

/// Receive on a libzmq socket while our driver keeps stepping.
fn zrecv(ours: &mut SocketDriver, theirs: &ZSocket<'_>) -> Vec<Vec<u8>> {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        match theirs.try_recv_multipart() {
            Ok(m) => return m,
            Err(e) if e.is_again() && std::time::Instant::now() < deadline => {
                ours.step();
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("libzmq receive failed: {e}"),
        }
    }
}

fn our_router_libzmq_dealers(dir: Direction) {
    let ctx = Ctx::new();
    let mut router = SocketDriver::new(SocketType::Router, Options::default());
    let a = ctx.socket(ZMQ_DEALER).expect("dealer");
    a.set_bytes(ZMQ_ROUTING_ID, b"alpha").expect("routing id");
    let b = ctx.socket(ZMQ_DEALER).expect("dealer");
    link(dir, &mut router, &a);
    if dir == Direction::WeConnect {
        b.bind("tcp://127.0.0.1:*").expect("bind");
        router.connect(&b.last_endpoint().expect("endpoint"));
    } else {
        b.connect(router.socket().last_endpoint()).expect("connect");
    }
    // libzmq's DEALER blocks without a peer: let both handshakes finish first.
    let both_up = router.step_until(TIMEOUT, |d| established(d) == 2);
    assert!(both_up, "both dealers connected");
    a.send_multipart(&[b"from-a"]).expect("send");
    b.send_multipart(&[b"from-b", b""]).expect("send");
    let mut got = [
        frames(&router.recv(TIMEOUT).expect("message from a dealer")),
        frames(&router.recv(TIMEOUT).expect("message from the other dealer")),
    ];
    got.sort();
    // The named dealer is known by its Identity; the other gets a generated 00+u32 id.
    assert_eq!(got[1], vec![b"alpha".to_vec(), b"from-a".to_vec()]);
    let generated = got[0][0].clone();
    assert_eq!(generated.len(), 5);
    assert_eq!(generated[0], 0);
    assert_eq!(&got[0][1..], &[b"from-b".to_vec(), vec![]]);
    // Replies are routed by id.
    let reply: [&[u8]; 2] = [&generated, b"to-b"];
    assert_eq!(router.send(Message::from(reply), TIMEOUT), Ok(Sent::Queued));
    assert_eq!(
        router.send(Message::from([&b"alpha"[..], b"to-a"]), TIMEOUT),
        Ok(Sent::Queued)
    );
    assert_eq!(zrecv(&mut router, &b), vec![b"to-b".to_vec()]);
    assert_eq!(zrecv(&mut router, &a), vec![b"to-a".to_vec()]);
    // Unknown ids are dropped silently.
    assert_eq!(
        router.send(Message::from([&b"nobody"[..], b"x"]), TIMEOUT),
        Ok(Sent::Dropped)
    );
}

fn our_dealer_libzmq_router(dir: Direction) {
    let ctx = Ctx::new();
    let mut options = Options::default();
    options.routing_id = zmtp_proto::Bytes::from_static(b"our-dealer");
    let mut dealer = SocketDriver::new(SocketType::Dealer, options);
    let router = ctx.socket(ZMQ_ROUTER).expect("router");
    link(dir, &mut dealer, &router);
    // Queued before the handshake completes (IMMEDIATE=0 on our connect side).
    assert_eq!(
        dealer.send(Message::from([&b""[..], b"hello"]), TIMEOUT),
        Ok(Sent::Queued)
    );
    assert_eq!(
        zrecv(&mut dealer, &router),
        vec![b"our-dealer".to_vec(), vec![], b"hello".to_vec()]
    );
    router
        .send_multipart(&[b"our-dealer", b"", b"world"])
        .expect("send");
    let reply = dealer.recv(TIMEOUT).expect("reply");
    assert_eq!(frames(&reply), vec![vec![], b"world".to_vec()]);
    assert!(dealer
        .monitor_events()
        .iter()
        .any(|e| e.kind == MonitorEventKind::HandshakeSucceeded));
}

fn our_pub_libzmq_sub(dir: Direction) {
    let ctx = Ctx::new();
    let mut publisher = SocketDriver::new(SocketType::Pub, Options::default());
    let sub = ctx.socket(ZMQ_SUB).expect("sub");
    sub.subscribe(b"A").expect("subscribe");
    link(dir, &mut publisher, &sub);
    // Until the subscription arrives, PUB drops: publish until the SUB sees something.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        publisher
            .send(Message::from(&b"B-ignored"[..]), TIMEOUT)
            .expect("send");
        publisher
            .send(Message::from(&b"A-first"[..]), TIMEOUT)
            .expect("send");
        publisher.pump_for(Duration::from_millis(5));
        if let Ok(m) = sub.try_recv_multipart() {
            assert_eq!(m, vec![b"A-first".to_vec()]);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "subscription never arrived"
        );
    }
    for i in 0..50u8 {
        let a = [b'A', i];
        let b = [b'B', i];
        publisher
            .send(Message::from(b.to_vec()), TIMEOUT)
            .expect("send");
        publisher
            .send(Message::from(a.to_vec()), TIMEOUT)
            .expect("send");
    }
    let mut seen = Vec::new();
    while seen.len() < 50 {
        let m = zrecv(&mut publisher, &sub);
        if m == vec![b"A-first".to_vec()] {
            continue;
        }
        seen.push(m);
    }
    let expected: Vec<Vec<Vec<u8>>> = (0..50u8).map(|i| vec![vec![b'A', i]]).collect();
    assert_eq!(seen, expected, "only matching messages, in order");
}

fn our_sub_libzmq_pub(dir: Direction) {
    let ctx = Ctx::new();
    let mut sub = SocketDriver::new(SocketType::Sub, Options::default());
    sub.socket().subscribe(b"weather");
    let publisher = ctx.socket(ZMQ_PUB).expect("pub");
    link(dir, &mut sub, &publisher);
    let deadline = std::time::Instant::now() + TIMEOUT;
    let got = loop {
        publisher.send_multipart(&[b"news", b"x"]).expect("send");
        publisher
            .send_multipart(&[b"weather", b"sunny"])
            .expect("send");
        if let Some(m) = sub.recv(Duration::from_millis(20)) {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "nothing arrived");
    };
    assert_eq!(frames(&got), vec![b"weather".to_vec(), b"sunny".to_vec()]);
    // Nothing but weather ever arrives.
    publisher.send_multipart(&[b"news", b"y"]).expect("send");
    publisher
        .send_multipart(&[b"weather", b"rain"])
        .expect("send");
    loop {
        let m = sub.recv(TIMEOUT).expect("weather");
        assert_eq!(m.frames()[0].as_ref(), b"weather");
        if m.frames()[1].as_ref() == b"rain" {
            break;
        }
    }
}

/// Our SUB connects to a libzmq PUB that goes away; a new PUB binds the same port; our SUB
/// reconnects and resubscribes by itself.
#[test]
fn our_sub_reconnects_and_resubscribes() {
    let ctx = Ctx::new();
    let mut options = Options::default();
    options.reconnect_ivl = Some(Duration::from_millis(20));
    let mut sub = SocketDriver::new(SocketType::Sub, options);
    sub.socket().subscribe(b"t");
    let first = ctx.socket(ZMQ_PUB).expect("pub");
    first.bind("tcp://127.0.0.1:*").expect("bind");
    let ep = first.last_endpoint().expect("endpoint");
    sub.connect(&ep);
    let deadline = std::time::Instant::now() + TIMEOUT;
    while sub.recv(Duration::from_millis(10)).is_none() {
        first.send_multipart(&[b"t1"]).expect("send");
        assert!(
            std::time::Instant::now() < deadline,
            "first PUB never reached us"
        );
    }
    drop(first);
    assert!(
        sub.step_until(TIMEOUT, |d| d.open_streams() == 0),
        "close seen"
    );
    let second = ctx.socket(ZMQ_PUB).expect("pub");
    second.bind(&ep).expect("bind the same endpoint again");
    let deadline = std::time::Instant::now() + TIMEOUT;
    let got = loop {
        second.send_multipart(&[b"t2"]).expect("send");
        second.send_multipart(&[b"u2"]).expect("send");
        if let Some(m) = sub.recv(Duration::from_millis(10)) {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "no resubscription");
    };
    assert_eq!(frames(&got), vec![b"t2".to_vec()]);
    let kinds: Vec<MonitorEventKind> = sub.monitor_events().iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&MonitorEventKind::Disconnected), "{kinds:?}");
    assert!(
        kinds.contains(&MonitorEventKind::ConnectRetried)
            || kinds
                .iter()
                .filter(|k| **k == MonitorEventKind::Connected)
                .count()
                >= 2,
        "{kinds:?}"
    );
    let _ = ffi::version();
}

/// ipc: a stale socket file left at the path is replaced on bind, `ipc://*` makes up a
/// path, and the socket file is removed when our socket goes away.
#[test]
fn ipc_stale_file_wildcard_and_cleanup() {
    let ctx = Ctx::new();
    let path = std::env::temp_dir().join(format!("zmtp-stale-{}.sock", std::process::id()));
    drop(std::os::unix::net::UnixListener::bind(&path).expect("a stale socket file"));
    assert!(path.exists());
    let endpoint = format!("ipc://{}", path.display());
    let mut pull = SocketDriver::new(SocketType::Pull, Options::default());
    assert_eq!(
        pull.bind(&endpoint),
        endpoint,
        "the resolved ipc endpoint is the one given"
    );
    let mut wild = SocketDriver::new(SocketType::Pull, Options::default());
    let made_up = wild.bind("ipc://*");
    assert!(made_up.starts_with("ipc:///"), "{made_up}");
    for ep in [&endpoint, &made_up] {
        let push = ctx.socket(ffi::ZMQ_PUSH).expect("push");
        push.connect(ep).expect("connect");
        push.send_multipart(&[b"over", b"ipc"]).expect("send");
        let d = if ep == &endpoint {
            &mut pull
        } else {
            &mut wild
        };
        let got = d.recv(TIMEOUT).expect("a message over ipc");
        assert_eq!(frames(&got), vec![b"over".to_vec(), b"ipc".to_vec()]);
    }
    drop(pull);
    drop(wild);
    assert!(!path.exists(), "socket file removed");
    assert!(!std::path::Path::new(&made_up["ipc://".len()..]).exists());
}

/// `tcp://source;destination` either way: the connecting side binds the source port
/// first, and the listening side's ACCEPTED (ours) names it.
fn source_address_connects(dir: Direction) {
    let ctx = Ctx::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let source = format!("127.0.0.1:{port}");
    let mut options = Options::default();
    options.routing_id = zmtp_proto::Bytes::from_static(b"ours");
    let (mut ours, theirs) = match dir {
        Direction::WeConnect => {
            let ours = SocketDriver::new(SocketType::Dealer, options);
            (ours, ctx.socket(ZMQ_ROUTER).expect("router"))
        }
        Direction::LibzmqConnects => {
            let ours = SocketDriver::new(SocketType::Router, options);
            (ours, ctx.socket(ZMQ_DEALER).expect("dealer"))
        }
    };
    match dir {
        Direction::WeConnect => {
            theirs.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let ep = theirs.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            ours.connect(&format!("tcp://{source};{}", &ep["tcp://".len()..]));
            ours.send(Message::from([&b""[..], b"from a source"]), TIMEOUT)
                .expect("send");
            assert_eq!(
                zrecv(&mut ours, &theirs),
                vec![b"ours".to_vec(), vec![], b"from a source".to_vec()]
            );
        }
        Direction::LibzmqConnects => {
            let ep = ours.bind("tcp://127.0.0.1:*");
            theirs
                .connect(&format!("tcp://{source};{}", &ep["tcp://".len()..]))
                .expect("zmq_connect");
            theirs
                .send_multipart(&[b"", b"from a source"])
                .expect("send");
            let got = ours.recv(TIMEOUT).expect("message");
            assert_eq!(&frames(&got)[1..], [vec![], b"from a source".to_vec()]);
            let accepted = ours
                .monitor_events()
                .iter()
                .find(|e| e.kind == MonitorEventKind::Accepted)
                .map(|e| e.peer_address.clone());
            assert_eq!(accepted, Some(source));
        }
    }
}

/// SOCKS5 either way, through a proxy of the test's own that records what it is asked:
/// our DEALER (with a username and password) asks the proxy for a name it never looks up
/// itself, and reaches a libzmq ROUTER; a libzmq DEALER with `ZMQ_SOCKS_PROXY` reaches our
/// ROUTER through the same kind of proxy (so the proxy is checked against libzmq's client).
/// Messages go both ways once connected.
fn socks_proxy_connects(dir: Direction) {
    use zmtp_testkit::socks::{ProxyConfig, Requested, SocksProxy};
    const ZMQ_SOCKS_PROXY: std::os::raw::c_int = 68;
    let ctx = Ctx::new();
    let mut config = ProxyConfig::default();
    let mut options = Options::default();
    options.routing_id = zmtp_proto::Bytes::from_static(b"ours");
    match dir {
        Direction::WeConnect => {
            let router = ctx.socket(ZMQ_ROUTER).expect("router");
            router.bind("tcp://127.0.0.1:*").expect("zmq_bind");
            let ep = router.last_endpoint().expect("ZMQ_LAST_ENDPOINT");
            let addr: std::net::SocketAddr = ep["tcp://".len()..].parse().expect("address");
            config.credentials = Some(("someuser".into(), "somepass".into()));
            config.routes.insert("zmtp.invalid".into(), addr);
            let proxy = SocksProxy::start(config).expect("proxy");
            let via = zmtp_proto::socket::SocksProxy::new(&proxy.address())
                .and_then(|p| p.with_credentials("someuser", "somepass"))
                .expect("proxy option");
            let mut ours =
                SocketDriver::new(SocketType::Dealer, options.with_socks_proxy(Some(via)));
            ours.connect(&format!("tcp://zmtp.invalid:{}", addr.port()));
            ours.send(Message::from([&b""[..], b"via the proxy"]), TIMEOUT)
                .expect("send");
            let got = zrecv(&mut ours, &router);
            assert_eq!(
                got,
                vec![b"ours".to_vec(), vec![], b"via the proxy".to_vec()]
            );
            router
                .send_multipart(&[b"ours", b"", b"and back"])
                .expect("reply");
            let back = ours.recv(TIMEOUT).expect("the reply");
            assert_eq!(frames(&back), [vec![], b"and back".to_vec()]);
            assert_eq!(
                proxy.requests(),
                [Requested::Name("zmtp.invalid".into(), addr.port())]
            );
        }
        Direction::LibzmqConnects => {
            let mut ours = SocketDriver::new(SocketType::Router, options);
            let ep = ours.bind("tcp://127.0.0.1:*");
            let addr: std::net::SocketAddr = ep["tcp://".len()..].parse().expect("address");
            let proxy = SocksProxy::start(config).expect("proxy");
            let dealer = ctx.socket(ZMQ_DEALER).expect("dealer");
            dealer
                .set_bytes(ZMQ_ROUTING_ID, b"theirs")
                .expect("routing id");
            dealer
                .set_bytes(ZMQ_SOCKS_PROXY, proxy.address().as_bytes())
                .expect("ZMQ_SOCKS_PROXY");
            dealer.connect(&ep).expect("zmq_connect");
            dealer
                .send_multipart(&[b"", b"via the proxy"])
                .expect("send");
            let got = ours.recv(TIMEOUT).expect("message");
            assert_eq!(
                frames(&got),
                [b"theirs".to_vec(), vec![], b"via the proxy".to_vec()]
            );
            ours.send(Message::from([&b"theirs"[..], b"", b"and back"]), TIMEOUT)
                .expect("reply");
            assert_eq!(zrecv(&mut ours, &dealer), [vec![], b"and back".to_vec()]);
            assert_eq!(
                proxy.requests(),
                [Requested::V4(std::net::Ipv4Addr::LOCALHOST, addr.port())]
            );
        }
    }
}

/// A proxy that refuses our username and password: nothing is delivered, the endpoint
/// keeps trying (each attempt reaches the proxy again), and the monitor names the cause.
#[test]
fn socks_proxy_refusing_our_credentials_is_reported_and_retried() {
    use zmtp_testkit::socks::{ProxyConfig, SocksProxy};
    let config = ProxyConfig {
        credentials: Some(("someuser".into(), "somepass".into())),
        ..ProxyConfig::default()
    };
    let proxy = SocksProxy::start(config).expect("proxy");
    let via = zmtp_proto::socket::SocksProxy::new(&proxy.address())
        .and_then(|p| p.with_credentials("someuser", "wrong"))
        .expect("proxy option");
    let options = Options::default()
        .with_socks_proxy(Some(via))
        .with_reconnect_ivl(Some(Duration::from_millis(20)));
    let mut ours = SocketDriver::new(SocketType::Dealer, options);
    ours.connect("tcp://127.0.0.1:9");
    let deadline = std::time::Instant::now() + TIMEOUT;
    let failed = |d: &SocketDriver| {
        d.monitor_events()
            .iter()
            .filter(|e| e.kind == MonitorEventKind::HandshakeFailedNoDetail)
            .filter_map(|e| e.error.clone())
            .collect::<Vec<_>>()
    };
    while failed(&ours).len() < 2 && std::time::Instant::now() < deadline {
        ours.step();
        std::thread::sleep(Duration::from_millis(1));
    }
    let errors = failed(&ours);
    assert!(errors.len() >= 2, "{:?}", ours.monitor_events());
    assert_eq!(
        errors[0],
        zmtp_proto::Error::Socks(zmtp_proto::socks::SocksError::AuthFailed(1))
    );
    let text = errors[0].to_string();
    assert!(text.contains("refused the username and password"), "{text}");
    assert!(proxy.requests().is_empty());
    // A message queued meanwhile waits for the endpoint, and what reports it (the line a
    // program that exits while it lingers prints) says why nothing took it.
    assert_eq!(
        ours.send("queued", TIMEOUT),
        Ok(zmtp_proto::socket::Sent::Queued)
    );
    let waiting = ours.socket().unsent_by_endpoint();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].failure.as_deref(), Some(text.as_str()));
    let line = waiting[0].to_string();
    assert!(
        line.starts_with("1 message(s) for tcp://127.0.0.1:9 (its last attempt failed: SOCKS5"),
        "{line}"
    );
}

/// ROUTER_NOTIFY: our ROUTER announces a libzmq DEALER's arrival (after its handshake)
/// and its departure (it closed its socket) as `[routing id][empty]`.
fn our_router_notify_sees_a_libzmq_dealer_come_and_go(dir: Direction) {
    let ctx = Ctx::new();
    let options = Options::default().with_router_notify(zmtp_proto::socket::RouterNotify::BOTH);
    let mut router = SocketDriver::new(SocketType::Router, options);
    let dealer = ctx.socket(ZMQ_DEALER).expect("dealer");
    dealer.set_bytes(ZMQ_ROUTING_ID, b"X").expect("routing id");
    dealer.set_int(ffi::ZMQ_LINGER, 0).expect("linger");
    link(dir, &mut router, &dealer);
    let arrival = router.recv(TIMEOUT).expect("the arrival notice");
    assert_eq!(frames(&arrival), vec![b"X".to_vec(), vec![]]);
    dealer.send_multipart(&[b"Hello"]).expect("send");
    let hello = router.recv(TIMEOUT).expect("the dealer's message");
    assert_eq!(frames(&hello), vec![b"X".to_vec(), b"Hello".to_vec()]);
    drop(dealer);
    let departure = router.recv(TIMEOUT).expect("the departure notice");
    assert_eq!(frames(&departure), vec![b"X".to_vec(), vec![]]);
    assert!(router.recv(Duration::from_millis(100)).is_none());
}

/// INVERT_MATCHING: our PUB sends a libzmq SUB (inverting too) the messages its
/// subscription does not match.
fn our_inverted_pub_libzmq_sub(dir: Direction) {
    let ctx = Ctx::new();
    let options = Options::default().with_invert_matching(true);
    let mut publisher = SocketDriver::new(SocketType::Pub, options);
    let sub = ctx.socket(ZMQ_SUB).expect("sub");
    sub.set_int(ffi::ZMQ_INVERT_MATCHING, 1).expect("invert");
    sub.subscribe(b"A").expect("subscribe");
    link(dir, &mut publisher, &sub);
    // Until the subscription arrives, "A" messages reach the SUB (it subscribed to
    // nothing as far as the PUB knows) and the SUB drops them: wait for it. A bound
    // libzmq socket takes its connections in when it is called: poke it meanwhile.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while publisher.socket().topics_count() != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the subscription never arrived"
        );
        assert!(sub.try_recv_multipart().is_err(), "nothing was sent yet");
        publisher.pump_for(Duration::from_millis(1));
    }
    for i in 0..20u8 {
        publisher
            .send(Message::from(vec![b'A', i]), TIMEOUT)
            .expect("send");
        publisher
            .send(Message::from(vec![b'B', i]), TIMEOUT)
            .expect("send");
    }
    let got: Vec<Vec<Vec<u8>>> = (0..20).map(|_| zrecv(&mut publisher, &sub)).collect();
    let expected: Vec<Vec<Vec<u8>>> = (0..20u8).map(|i| vec![vec![b'B', i]]).collect();
    assert_eq!(got, expected, "only what the subscription does not match");
}

/// INVERT_MATCHING: our SUB keeps what its subscription does not match from a libzmq PUB
/// that inverts too.
fn our_inverted_sub_libzmq_pub(dir: Direction) {
    let ctx = Ctx::new();
    let options = Options::default().with_invert_matching(true);
    let mut sub = SocketDriver::new(SocketType::Sub, options);
    assert!(sub.socket().subscribe(b"A"));
    let publisher = ctx.socket(ZMQ_PUB).expect("pub");
    publisher
        .set_int(ffi::ZMQ_INVERT_MATCHING, 1)
        .expect("invert");
    link(dir, &mut sub, &publisher);
    // Until the subscription arrives, libzmq sends everything and our SUB drops the "A"
    // messages itself: the result is the same either way.
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut got = Vec::new();
    while got.len() < 10 {
        assert!(std::time::Instant::now() < deadline, "got {got:?}");
        publisher.send_multipart(&[b"A-no"]).expect("send");
        publisher.send_multipart(&[b"B-yes"]).expect("send");
        sub.pump_for(Duration::from_millis(2));
        while let Some(m) = sub.recv(Duration::ZERO) {
            got.push(frames(&m));
        }
    }
    assert!(got.iter().all(|m| m == &vec![b"B-yes".to_vec()]), "{got:?}");
}

/// ZMQ_METADATA: application properties cross the handshake both ways, libzmq reading
/// ours with `zmq_msg_gets` and we reading its own on its messages.
fn application_metadata_both_ways(dir: Direction) {
    let ctx = Ctx::new();
    let mut props = zmtp_proto::socket::AppMetadata::new();
    props.insert("X-ours".into(), "zmtp".into());
    props.insert("X-shared".into(), "a:b".into());
    let mut dealer = SocketDriver::new(SocketType::Dealer, Options::default().with_metadata(props));
    let theirs = ctx.socket(ZMQ_DEALER).expect("dealer");
    theirs
        .set_bytes(ffi::ZMQ_METADATA, b"X-theirs:libzmq")
        .expect("ZMQ_METADATA");
    theirs.set_int(ffi::ZMQ_LINGER, 0).expect("linger");
    theirs.set_int(ffi::ZMQ_RCVTIMEO, 100).expect("rcvtimeo");
    link(dir, &mut dealer, &theirs);
    assert_eq!(
        dealer.send(Message::from(&b"hi"[..]), TIMEOUT),
        Ok(Sent::Queued)
    );
    let mut msg = ffi::Msg::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        dealer.pump_for(Duration::from_millis(2));
        match theirs.recv_msg(&mut msg) {
            Ok(()) => break,
            Err(e) if e.is_again() && std::time::Instant::now() < deadline => {}
            Err(e) => panic!("libzmq receive failed: {e}"),
        }
    }
    assert_eq!(msg.data(), b"hi");
    assert_eq!(msg.gets("X-ours").as_deref(), Some("zmtp"));
    assert_eq!(msg.gets("X-shared").as_deref(), Some("a:b"));
    assert_eq!(msg.gets("Socket-Type").as_deref(), Some("DEALER"));
    assert_eq!(msg.gets("X-none"), None);
    theirs.send_multipart(&[b"back"]).expect("send");
    let back = dealer.recv(TIMEOUT).expect("libzmq's answer");
    assert_eq!(frames(&back), vec![b"back".to_vec()]);
    assert_eq!(back.property("X-theirs"), Some(&b"libzmq"[..]));
    assert_eq!(back.property("Socket-Type"), Some(&b"DEALER"[..]));
}

/// `ZMQ_XPUB_VERBOSER`.
const ZMQ_XPUB_VERBOSER: std::ffi::c_int = 78;

/// Step our socket until its peer's handshake is done, poking the libzmq socket (which
/// takes its connections in when it is called).
fn until_established(ours: &mut SocketDriver, theirs: &ZSocket<'_>) {
    let deadline = std::time::Instant::now() + TIMEOUT;
    while established(ours) == 0 {
        assert!(std::time::Instant::now() < deadline, "no handshake");
        assert!(theirs.try_recv_multipart().is_err(), "nothing was sent yet");
        ours.pump_for(Duration::from_millis(1));
    }
}

/// XSUB_VERBOSE_UNSUBSCRIBE: our XSUB passes every unsubscription on, and a libzmq XPUB
/// with XPUB_VERBOSER passes each up, also one of a topic the peer never subscribed to
/// (which our XPUB does too).
fn our_verbose_xsub_libzmq_xpub(dir: Direction) {
    let ctx = Ctx::new();
    let options = Options::default().with_xsub_verbose_unsubscribe(true);
    let mut xsub = SocketDriver::new(SocketType::XSub, options);
    let xpub = ctx.socket(ffi::ZMQ_XPUB).expect("xpub");
    xpub.set_int(ZMQ_XPUB_VERBOSER, 1).expect("verboser");
    link(dir, &mut xsub, &xpub);
    until_established(&mut xsub, &xpub);
    for sub in [&b"\x00Z"[..], b"\x01A", b"\x01A", b"\x00A", b"\x00A"] {
        xsub.send(Message::from(sub), TIMEOUT).expect("send");
    }
    let got: Vec<Vec<Vec<u8>>> = (0..5).map(|_| zrecv(&mut xsub, &xpub)).collect();
    let expected = [&b"\x00Z"[..], b"\x01A", b"\x01A", b"\x00A", b"\x00A"];
    let expected: Vec<Vec<Vec<u8>>> = expected.iter().map(|m| vec![m.to_vec()]).collect();
    assert_eq!(got, expected, "every (un)subscription, passed up");
}

/// XPUB_MANUAL: our XPUB passes a libzmq XSUB's subscription up and routes by the one the
/// application makes for that peer instead.
fn our_manual_xpub_libzmq_xsub(dir: Direction) {
    let ctx = Ctx::new();
    let options = Options::default().with_xpub_manual(true);
    let mut xpub = SocketDriver::new(SocketType::XPub, options);
    let xsub = ctx.socket(ffi::ZMQ_XSUB).expect("xsub");
    link(dir, &mut xpub, &xsub);
    until_established(&mut xpub, &xsub);
    xsub.send_multipart(&[b"\x01A"]).expect("subscribe");
    let got = xpub.recv(TIMEOUT).expect("the subscription");
    assert_eq!(frames(&got), [b"\x01A".to_vec()]);
    assert!(xpub.socket().subscribe(b"B"));
    assert_eq!(xpub.send(Message::from("A-no"), TIMEOUT), Ok(Sent::Dropped));
    assert_eq!(xpub.send(Message::from("B-yes"), TIMEOUT), Ok(Sent::Queued));
    assert_eq!(zrecv(&mut xpub, &xsub), [b"B-yes".to_vec()]);
}

both_directions! {
    application_metadata_both_ways => metadata_we_connect, metadata_libzmq_connects;
    our_verbose_xsub_libzmq_xpub => verbose_xsub_we_connect, verbose_xsub_libzmq_connects;
    our_manual_xpub_libzmq_xsub => manual_xpub_we_connect, manual_xpub_libzmq_connects;
    source_address_connects => source_address_we_connect, source_address_libzmq_connects;
    socks_proxy_connects => socks_proxy_we_connect, socks_proxy_libzmq_connects;
    our_inverted_pub_libzmq_sub => inverted_pub_we_connect, inverted_pub_libzmq_connects;
    our_inverted_sub_libzmq_pub => inverted_sub_we_connect, inverted_sub_libzmq_connects;
    our_router_notify_sees_a_libzmq_dealer_come_and_go
        => router_notify_we_connect, router_notify_libzmq_connects;
    our_router_libzmq_dealers => router_dealers_we_connect, router_dealers_libzmq_connects;
    our_dealer_libzmq_router => dealer_router_we_connect, dealer_router_libzmq_connects;
    our_pub_libzmq_sub => pub_sub_we_connect, pub_sub_libzmq_connects;
    our_sub_libzmq_pub => sub_pub_we_connect, sub_pub_libzmq_connects;
}
