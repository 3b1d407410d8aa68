//! The tokio driver between our own sockets, over every transport.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use futures_sink::Sink;
use zmtp_tokio::{Message, MonitorEventKind, Options, SendError, Sent, Socket, SocketType};

const T: Duration = Duration::from_secs(5);

async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(T, f).await.expect("timed out")
}

fn text(m: &Message) -> Vec<String> {
    m.frames()
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

async fn push_pull_over(endpoint: &str) {
    let pull = Socket::new(SocketType::Pull).unwrap();
    let ep = pull.bind(endpoint).await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).await.unwrap();
    let big = vec![7u8; 4 << 20];
    for i in 0..100u32 {
        push.send(i.to_string()).await.unwrap();
    }
    push.send(Message::from(vec![
        zmtp_tokio::Bytes::new(),
        zmtp_tokio::Bytes::from(big.clone()),
        zmtp_tokio::Bytes::from_static(b"end"),
    ]))
    .await
    .unwrap();
    for i in 0..100u32 {
        let m = within(pull.recv()).await.unwrap();
        assert_eq!(text(&m), [i.to_string()]);
    }
    let m = within(pull.recv()).await.unwrap();
    assert_eq!(m.len(), 3);
    assert!(m.frames()[0].is_empty());
    assert_eq!(m.frames()[1].len(), big.len());
    assert!(m.frames()[1].iter().all(|&b| b == 7));
}

#[tokio::test]
async fn push_pull_tcp_ipv4() {
    push_pull_over("tcp://127.0.0.1:*").await;
}

#[tokio::test]
async fn push_pull_tcp_ipv6() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    push_pull_over("tcp://[::1]:*").await;
}

#[tokio::test]
async fn push_pull_ipc_path_and_abstract() {
    let path = std::env::temp_dir().join(format!("zmtp-tokio-{}.sock", std::process::id()));
    push_pull_over(&format!("ipc://{}", path.display())).await;
    push_pull_over(&format!("ipc://@zmtp-tokio-{}", std::process::id())).await;
}

#[tokio::test]
async fn push_pull_inproc_bind_first_and_connect_first() {
    push_pull_over("inproc://bind-first").await;
    // Connect before bind: the connection is made once the name exists.
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect("inproc://connect-first").await.unwrap();
    push.send("early").await.unwrap();
    let pull = Socket::new(SocketType::Pull).unwrap();
    pull.bind("inproc://connect-first").await.unwrap();
    assert_eq!(text(&within(pull.recv()).await.unwrap()), ["early"]);
}

#[tokio::test]
async fn req_rep_round_trips() {
    let rep = Socket::new(SocketType::Rep).unwrap();
    let ep = rep.bind("tcp://127.0.0.1:*").await.unwrap();
    assert_eq!(rep.last_endpoint(), ep);
    let req = Socket::new(SocketType::Req).unwrap();
    req.connect(&ep).await.unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..10 {
            let m = rep.recv().await.unwrap();
            let mut reply = text(&m);
            reply.push("ok".into());
            let frames: Vec<zmtp_tokio::Bytes> = reply.into_iter().map(Into::into).collect();
            rep.send(Message::from(frames)).await.unwrap();
        }
    });
    for i in 0..10 {
        req.send(format!("q{i}")).await.unwrap();
        // Strict alternation: a second request before the reply is refused.
        assert!(matches!(
            req.try_send("again"),
            Err(SendError::InvalidState(_))
        ));
        let m = within(req.recv()).await.unwrap();
        assert_eq!(text(&m), [format!("q{i}"), "ok".into()]);
    }
    within(server).await.unwrap();
}

#[tokio::test]
async fn pub_sub_filters_by_prefix() {
    let publisher = Socket::new(SocketType::Pub).unwrap();
    let ep = publisher.bind("tcp://127.0.0.1:*").await.unwrap();
    let sub = Socket::new(SocketType::Sub).unwrap();
    sub.subscribe("a");
    sub.connect(&ep).await.unwrap();
    // Publish until the subscription has arrived.
    let got = within(async {
        loop {
            publisher.send("b-no").await.unwrap();
            publisher.send("a-yes").await.unwrap();
            if let Ok(Ok(m)) = tokio::time::timeout(Duration::from_millis(20), sub.recv()).await {
                return m;
            }
        }
    })
    .await;
    assert_eq!(text(&got), ["a-yes"]);
}

#[tokio::test]
async fn cancelled_recv_loses_no_message() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    let ep = pull.bind("inproc://cancel-recv").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).await.unwrap();
    let mut received = Vec::new();
    let mut sent = 0u32;
    while received.len() < 200 {
        if sent < 200 {
            push.send(sent.to_string()).await.unwrap();
            sent += 1;
        }
        // A recv raced against a timer that often wins: cancelled receives must not eat
        // messages.
        tokio::select! {
            m = pull.recv() => received.push(text(&m.unwrap())[0].clone()),
            _ = tokio::task::yield_now() => {}
        }
    }
    let expected: Vec<String> = (0..200).map(|i: u32| i.to_string()).collect();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn cancelled_send_queues_all_or_nothing() {
    let mut options = Options::default();
    options.sndhwm = 2;
    let push = Socket::with_options(SocketType::Push, options).unwrap();
    // No peer: the HWM applies to the connect queue; the third send waits.
    push.connect("tcp://127.0.0.1:1").await.unwrap();
    assert_eq!(push.try_send("1"), Ok(Sent::Queued));
    assert_eq!(push.try_send("2"), Ok(Sent::Queued));
    let waited = tokio::time::timeout(Duration::from_millis(50), push.send("3")).await;
    assert!(waited.is_err(), "send must wait at HWM");
    // Cancelled: nothing was queued, so the queue still takes nothing more.
    assert!(matches!(push.try_send("4"), Err(SendError::WouldBlock(_))));
}

#[tokio::test]
async fn monitor_stream_reports_connection_events() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    let mut monitor = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).await.unwrap();
    push.send("x").await.unwrap();
    within(pull.recv()).await.unwrap();
    let mut kinds = Vec::new();
    while !kinds.contains(&MonitorEventKind::HandshakeSucceeded) {
        let event = within(poll_fn(|cx| Pin::new(&mut monitor).poll_next(cx)))
            .await
            .expect("monitor open");
        kinds.push(event.kind);
    }
    assert_eq!(kinds[0], MonitorEventKind::Listening);
    assert!(kinds.contains(&MonitorEventKind::Accepted));
}

#[tokio::test]
async fn close_lingers_until_messages_are_written() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).await.unwrap();
    for i in 0..1000u32 {
        push.send(i.to_string()).await.unwrap();
    }
    within(push.close()).await;
    for i in 0..1000u32 {
        assert_eq!(text(&within(pull.recv()).await.unwrap()), [i.to_string()]);
    }
}

#[tokio::test]
async fn stream_and_sink() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    let ep = pull.bind("inproc://stream-sink").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect(&ep).await.unwrap();
    let mut sink = push.stream();
    for i in 0..5u32 {
        within(poll_fn(|cx| Pin::new(&mut sink).poll_ready(cx)))
            .await
            .unwrap();
        Pin::new(&mut sink)
            .start_send(Message::from(i.to_string().into_bytes()))
            .unwrap();
    }
    let mut stream = pull.stream();
    for i in 0..5u32 {
        let m = within(poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)))
            .await
            .unwrap();
        assert_eq!(text(&m), [i.to_string()]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dealer_router_many_peers_multithreaded() {
    let router = Socket::new(SocketType::Router).unwrap();
    let ep = router.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut dealers = Vec::new();
    for i in 0..4 {
        let mut o = Options::default();
        o.routing_id = format!("d{i}").into_bytes().into();
        let d = Socket::with_options(SocketType::Dealer, o).unwrap();
        d.connect(&ep).await.unwrap();
        dealers.push(d);
    }
    for d in &dealers {
        for j in 0..50u32 {
            d.send(j.to_string()).await.unwrap();
        }
    }
    let mut per_peer = std::collections::BTreeMap::<String, Vec<String>>::new();
    for _ in 0..200 {
        let m = text(&within(router.recv()).await.unwrap());
        per_peer.entry(m[0].clone()).or_default().push(m[1].clone());
    }
    let expected: Vec<String> = (0..50).map(|j: u32| j.to_string()).collect();
    assert_eq!(per_peer.len(), 4);
    for (_, got) in per_peer {
        assert_eq!(got, expected, "ordered per peer");
    }
    // And back, routed by id.
    for i in 0..4 {
        let frames: Vec<zmtp_tokio::Bytes> = vec![format!("d{i}").into(), "hi".into()];
        router.send(Message::from(frames)).await.unwrap();
    }
    for d in &dealers {
        assert_eq!(text(&within(d.recv()).await.unwrap()), ["hi"]);
    }
}

#[test]
fn outside_a_runtime_is_an_error_not_a_panic() {
    assert!(matches!(
        Socket::new(SocketType::Pair),
        Err(zmtp_tokio::Error::NoRuntime)
    ));
}

#[tokio::test]
async fn inproc_hands_large_bodies_over_without_copying() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    pull.bind("inproc://zero-copy").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.connect("inproc://zero-copy").await.unwrap();
    for round in 0..3u8 {
        let body = zmtp_tokio::Bytes::from(vec![round; 1 << 20]);
        let sent_at = body.as_ptr();
        push.send(Message::from(vec![
            zmtp_tokio::Bytes::from_static(b"head"),
            body,
        ]))
        .await
        .unwrap();
        let m = within(pull.recv()).await.unwrap();
        assert_eq!(&m.frames()[0][..], b"head");
        assert_eq!(m.frames()[1].len(), 1 << 20);
        // The very buffer the sender filled: no copy on the way.
        assert_eq!(m.frames()[1].as_ptr(), sent_at, "round {round}");
    }
}
