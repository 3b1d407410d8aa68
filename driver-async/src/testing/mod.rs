//! Driver tests written once, run by every runtime crate: each test is a generic `async fn`
//! here, and [`driver_tests!`](crate::driver_tests) declares one `#[test]` per test for a
//! runtime and a way to block on a future with it.
//!
//! ```ignore
//! fn block_on<F: std::future::Future>(f: F) -> F::Output { /* a runtime */ }
//! zmtp_async::driver_tests!(zmtp_tokio::Tokio, block_on);
//! ```

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use futures_sink::Sink;
use zmtp_proto::Bytes;

use crate::core::{first, Either};

mod api;
mod close;
mod monitor;
pub mod pages;
pub mod poll;
pub mod security;
use crate::{Message, MonitorEventKind, Options, Runtime, SendError, Sent, Socket, SocketType};
pub use api::*;
pub use close::*;
pub use monitor::*;
pub use poll::*;

/// Upper bound of every wait.
pub const T: Duration = Duration::from_secs(5);

/// Declare one `#[test]` per shared driver test for `$runtime`, each run by `$block_on`
/// (a function from a future to its output, e.g. one that builds a runtime).
#[macro_export]
macro_rules! driver_tests {
    ($runtime:ty, $block_on:path) => {
        $crate::driver_tests!(@each $runtime, $block_on;
            push_pull_tcp_ipv4,
            push_pull_tcp_ipv6,
            push_pull_ws,
            push_pull_ipc_path_and_abstract,
            host_names_are_resolved_for_bind_and_connect,
            ipc_wildcard_binds_a_fresh_file_removed_on_unbind,
            push_pull_inproc_bind_first_and_connect_first,
            unbind_closes_the_connections_accepted_on_the_endpoint,
            a_pair_that_will_not_reconnect_can_connect_again_after_an_unbind,
            req_rep_round_trips,
            question_mark_across_send_and_recv,
            pub_sub_filters_by_prefix,
            cancelled_recv_loses_no_message,
            cancelled_send_queues_all_or_nothing,
            send_slice_copies_and_waits,
            monitor_stream_reports_connection_events,
            monitor_events_name_the_peer,
            tcp_source_addresses_are_bound_before_connecting,
            close_lingers_until_messages_are_written,
            close_reports_what_linger_cut_off,
            poll_wakes_for_whichever_socket_gets_a_message,
            poll_times_out_and_looks_without_waiting,
            poll_out_waits_for_a_peer_with_room,
            poll_set_changes_between_calls,
            cancelled_poll_takes_nothing_and_leaves_no_waiter,
            message_stream_next_without_stream_ext,
            context_term_flushes_dropped_sockets_and_closes_the_rest,
            stream_and_sink,
            dealer_router_many_peers,
            inproc_hands_large_bodies_over_without_copying,
            recv_string_gives_text_and_hands_back_what_is_not,
            recv_on_a_type_that_never_receives_fails_at_once,
            subscriptions_only_on_sub_and_xsub,
            option_setters_change_a_live_socket,
            batches_keep_order_under_small_hwms,
        );
    };
    (@each $runtime:ty, $block_on:path; $($name:ident,)*) => {$(
        #[test]
        fn $name() {
            $block_on($crate::testing::$name::<$runtime>())
        }
    )*};
}

/// The runtime the calling test runs in.
pub fn runtime<R: Runtime>() -> R {
    R::current().expect("tests run inside a runtime")
}

/// `f`, failing the test if it takes longer than [`T`].
pub async fn within<R: Runtime, F: Future>(f: F) -> F::Output {
    timeout::<R, F>(T, f).await.expect("timed out")
}

/// `f`, or `None` after `limit`.
pub async fn timeout<R: Runtime, F: Future>(limit: Duration, f: F) -> Option<F::Output> {
    crate::runtime::timeout(&runtime::<R>(), limit, f).await
}

/// A message's frames as text.
pub fn text(m: &Message) -> Vec<String> {
    m.frames()
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// A name no other test of this process uses (ipc paths, abstract names, inproc names).
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "zmtp-async-{}-{tag}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

async fn push_pull_over<R: Runtime>(endpoint: &str) {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull.bind(endpoint).await.unwrap();
    // Named by its own transport (`ws://` listens on TCP but is still `ws://`).
    assert_eq!(ep.split("://").next(), endpoint.split("://").next());
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let big = vec![7u8; 4 << 20];
    for i in 0..100u32 {
        push.send(i.to_string()).await.unwrap();
    }
    push.send(Message::from(vec![
        Bytes::new(),
        Bytes::from(big.clone()),
        Bytes::from_static(b"end"),
    ]))
    .await
    .unwrap();
    for i in 0..100u32 {
        let m = within::<R, _>(pull.recv()).await.unwrap();
        assert_eq!(text(&m), [i.to_string()]);
    }
    let m = within::<R, _>(pull.recv()).await.unwrap();
    assert_eq!(m.len(), 3);
    assert!(m.frames()[0].is_empty());
    assert_eq!(m.frames()[1].len(), big.len());
    assert!(m.frames()[1].iter().all(|&b| b == 7));
}

/// PUSH/PULL over TCP on IPv4 loopback: 100 messages and a 4 MiB multipart.
pub async fn push_pull_tcp_ipv4<R: Runtime>() {
    push_pull_over::<R>("tcp://127.0.0.1:*").await;
}

/// The same over `ws://` (ZWS 2.0 over TCP), with a path in the endpoint.
pub async fn push_pull_ws<R: Runtime>() {
    push_pull_over::<R>("ws://127.0.0.1:*/zmq").await;
}

/// The same over IPv6 loopback, where there is one.
pub async fn push_pull_tcp_ipv6<R: Runtime>() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    push_pull_over::<R>("tcp://[::1]:*").await;
}

/// The same over a Unix socket file and an abstract name.
pub async fn push_pull_ipc_path_and_abstract<R: Runtime>() {
    let path = std::env::temp_dir().join(format!("{}.sock", unique("ipc")));
    push_pull_over::<R>(&format!("ipc://{}", path.display())).await;
    push_pull_over::<R>(&format!("ipc://@{}", unique("abstract"))).await;
}

/// `tcp://localhost:…`: the name is resolved (on the runtime) for bind and connect; a
/// name that does not resolve fails the bind.
pub async fn host_names_are_resolved_for_bind_and_connect<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://localhost:*").await.unwrap();
    let port = ep.rsplit(':').next().unwrap();
    assert_ne!(port, "0");
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&format!("tcp://localhost:{port}")).unwrap();
    push.send("by name").await.unwrap();
    assert_eq!(
        text(&within::<R, _>(pull.recv()).await.unwrap()),
        ["by name"]
    );
    let bad = within::<R, _>(pull.bind("tcp://no-such-host.invalid:5555")).await;
    assert!(matches!(bad, Err(crate::Error::Bind { .. })), "{bad:?}");
}

/// `ipc://*` binds a fresh socket file, which unbinding removes.
pub async fn ipc_wildcard_binds_a_fresh_file_removed_on_unbind<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let a = pull.bind("ipc://*").await.unwrap();
    let b = pull.bind("ipc://*").await.unwrap();
    assert_ne!(a, b);
    let path = std::path::PathBuf::from(a.strip_prefix("ipc://").unwrap());
    assert!(path.exists());
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&a).unwrap();
    push.send("over ipc").await.unwrap();
    assert_eq!(
        text(&within::<R, _>(pull.recv()).await.unwrap()),
        ["over ipc"]
    );
    pull.unbind(&a).unwrap();
    assert!(!path.exists());
}

/// Unbinding closes the connections accepted on the endpoint, as libzmq does: a bound
/// PUSH has nobody left to send to (libzmq's test_term_endpoint).
pub async fn unbind_closes_the_connections_accepted_on_the_endpoint<R: Runtime>() {
    let inproc = format!("inproc://{}", unique("unbind"));
    for endpoint in ["tcp://127.0.0.1:*", "ipc://*", &inproc] {
        let push = Socket::<R>::new(SocketType::Push).unwrap();
        let ep = push.bind(endpoint).await.unwrap();
        let pull = Socket::<R>::new(SocketType::Pull).unwrap();
        pull.connect(&ep).unwrap();
        push.send("ABC").await.unwrap();
        assert_eq!(text(&within::<R, _>(pull.recv()).await.unwrap()), ["ABC"]);
        push.unbind(&ep).unwrap();
        let blocked = within::<R, _>(async {
            loop {
                match push.try_send("ABC") {
                    Err(SendError::WouldBlock(_)) => break,
                    _ => {
                        let _ =
                            timeout::<R, _>(Duration::from_millis(2), std::future::pending::<()>())
                                .await;
                    }
                }
            }
        });
        blocked.await;
    }
}

/// libzmq's test_reconnect_ivl: with reconnecting off, a PAIR whose connection an unbind
/// closed loses its connect endpoint with it, and can connect to the endpoint again.
pub async fn a_pair_that_will_not_reconnect_can_connect_again_after_an_unbind<R: Runtime>() {
    let sb = Socket::<R>::new(SocketType::Pair).unwrap();
    let ep = sb.bind("tcp://127.0.0.1:*").await.unwrap();
    let sc = Socket::<R>::new(SocketType::Pair).unwrap();
    sc.set_reconnect_ivl(None).unwrap();
    let mut monitor = sc.monitor();
    sc.connect(&ep).unwrap();
    sc.send("one").await.unwrap();
    assert_eq!(text(&within::<R, _>(sb.recv()).await.unwrap()), ["one"]);
    sb.unbind(&ep).unwrap();
    monitor::next_of::<R>(&mut monitor, MonitorEventKind::Disconnected).await;
    assert!(
        matches!(sc.disconnect(&ep), Err(crate::Error::NotFound)),
        "the connect endpoint outlived its connection"
    );
    sb.bind(&ep).await.unwrap();
    sc.connect(&ep).unwrap();
    sc.send("two").await.unwrap();
    assert_eq!(text(&within::<R, _>(sb.recv()).await.unwrap()), ["two"]);
    sb.send("back").await.unwrap();
    assert_eq!(text(&within::<R, _>(sc.recv()).await.unwrap()), ["back"]);
}

/// The same in process, binding first and connecting first.
pub async fn push_pull_inproc_bind_first_and_connect_first<R: Runtime>() {
    push_pull_over::<R>(&format!("inproc://{}", unique("bind-first"))).await;
    // Connect before bind: the connection is made once the name exists.
    let name = format!("inproc://{}", unique("connect-first"));
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&name).unwrap();
    push.send("early").await.unwrap();
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    pull.bind(&name).await.unwrap();
    assert_eq!(text(&within::<R, _>(pull.recv()).await.unwrap()), ["early"]);
}

/// `send` and `recv` fail with errors that `?` turns into the driver's `Error`, a refused
/// send keeping its reason and its message; borrowed text converts into messages.
pub async fn question_mark_across_send_and_recv<R: Runtime>() {
    async fn round_trip<R: Runtime>() -> Result<Message, crate::Error> {
        let rep = Socket::<R>::new(SocketType::Rep)?;
        let ep = rep.bind("tcp://127.0.0.1:*").await?;
        let req = Socket::<R>::new(SocketType::Req)?;
        req.connect(&ep)?;
        let line = String::from("ping");
        req.send(line.as_str()).await?;
        let request = within::<R, _>(rep.recv()).await?;
        rep.send(request).await?;
        let reply = within::<R, _>(req.recv()).await?;
        assert_eq!(text(&reply), ["ping"]);
        // REP has nothing to answer now: the refusal is an error like any other for `?`.
        rep.send(&line).await?;
        Ok(reply)
    }
    match round_trip::<R>().await {
        Err(crate::Error::Send(SendError::InvalidState(m))) => {
            assert_eq!(m, Message::from("ping"))
        }
        other => panic!("{other:?}"),
    }
}

/// REQ/REP strict alternation, the server on a task of its own.
pub async fn req_rep_round_trips<R: Runtime>() {
    let rep = Socket::<R>::new(SocketType::Rep).unwrap();
    let ep = rep.bind("tcp://127.0.0.1:*").await.unwrap();
    assert_eq!(rep.last_endpoint(), ep);
    let req = Socket::<R>::new(SocketType::Req).unwrap();
    req.connect(&ep).unwrap();
    let (done_tx, done) = tokio::sync::oneshot::channel();
    let _server = runtime::<R>().spawn(async move {
        for _ in 0..10 {
            let m = rep.recv().await.unwrap();
            let mut reply = text(&m);
            reply.push("ok".into());
            let frames: Vec<Bytes> = reply.into_iter().map(Into::into).collect();
            rep.send(Message::from(frames)).await.unwrap();
        }
        let _ = done_tx.send(());
    });
    for i in 0..10 {
        req.send(format!("q{i}")).await.unwrap();
        // Strict alternation: a second request before the reply is refused.
        assert!(matches!(
            req.try_send("again"),
            Err(SendError::InvalidState(_))
        ));
        let m = within::<R, _>(req.recv()).await.unwrap();
        assert_eq!(text(&m), [format!("q{i}"), "ok".into()]);
    }
    within::<R, _>(done).await.expect("server finished");
}

/// SUB receives only what matches its prefix.
pub async fn pub_sub_filters_by_prefix<R: Runtime>() {
    let publisher = Socket::<R>::new(SocketType::Pub).unwrap();
    let ep = publisher.bind("tcp://127.0.0.1:*").await.unwrap();
    let sub = Socket::<R>::new(SocketType::Sub).unwrap();
    sub.subscribe("a").unwrap();
    sub.connect(&ep).unwrap();
    // Publish until the subscription has arrived.
    let got = within::<R, _>(async {
        loop {
            publisher.send("b-no").await.unwrap();
            publisher.send("a-yes").await.unwrap();
            if let Some(Ok(m)) = timeout::<R, _>(Duration::from_millis(20), sub.recv()).await {
                return m;
            }
        }
    })
    .await;
    assert_eq!(text(&got), ["a-yes"]);
}

/// A `recv` cancelled half-way takes no message.
pub async fn cancelled_recv_loses_no_message<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull
        .bind(&format!("inproc://{}", unique("cancel-recv")))
        .await
        .unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let mut received = Vec::new();
    let mut sent = 0u32;
    while received.len() < 200 {
        if sent < 200 {
            push.send(sent.to_string()).await.unwrap();
            sent += 1;
        }
        // A recv raced against a yield that often wins: cancelled receives must not eat
        // messages.
        if let Either::Left(m) = first(pull.recv(), runtime::<R>().yield_now()).await {
            received.push(text(&m.unwrap())[0].clone());
        }
    }
    let expected: Vec<String> = (0..200).map(|i: u32| i.to_string()).collect();
    assert_eq!(received, expected);
}

/// A `send` cancelled while waiting at the HWM queues nothing.
pub async fn cancelled_send_queues_all_or_nothing<R: Runtime>() {
    let mut options = Options::default();
    options.sndhwm = 2;
    let push = Socket::<R>::with_options(SocketType::Push, options).unwrap();
    // No peer: the HWM applies to the connect queue; the third send waits.
    push.connect("tcp://127.0.0.1:1").unwrap();
    assert_eq!(push.try_send("1"), Ok(Sent::Queued));
    assert_eq!(push.try_send("2"), Ok(Sent::Queued));
    let waited = timeout::<R, _>(Duration::from_millis(50), push.send("3")).await;
    assert!(waited.is_none(), "send must wait at HWM");
    // Cancelled: nothing was queued, so the queue still takes nothing more.
    assert!(matches!(push.try_send("4"), Err(SendError::WouldBlock(_))));
    // Nobody will take the two: the process must not wait for them at exit.
    push.set_linger(Some(Duration::ZERO)).unwrap();
}

/// `send_slice` copies the caller's buffer (which is reused at once), hands a copy back at
/// the HWM, waits like `send`, and a cancelled wait queues nothing.
pub async fn send_slice_copies_and_waits<R: Runtime>() {
    let name = format!("inproc://{}", unique("slice"));
    let mut options = Options::default();
    options.sndhwm = 1;
    let push = Socket::<R>::with_options(SocketType::Push, options).unwrap();
    push.connect(&name).unwrap();
    let mut buf = *b"first";
    assert_eq!(push.try_send_slice(&buf), Ok(Sent::Queued));
    buf.copy_from_slice(b"other");
    match push.try_send_slice(&buf) {
        Err(SendError::WouldBlock(back)) => assert_eq!(text(&back), ["other"]),
        other => panic!("{other:?}"),
    }
    let waited = timeout::<R, _>(Duration::from_millis(50), push.send_slice(&buf)).await;
    assert!(waited.is_none(), "send_slice must wait at HWM");
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    pull.bind(&name).await.unwrap();
    within::<R, _>(push.send_slice(b"second")).await.unwrap();
    assert_eq!(text(&within::<R, _>(pull.recv()).await.unwrap()), ["first"]);
    assert_eq!(
        text(&within::<R, _>(pull.recv()).await.unwrap()),
        ["second"]
    );
    // Over TCP, from one reused buffer.
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let mut buf = [0u8; 64];
    for i in 0..3000u32 {
        buf[..4].copy_from_slice(&i.to_le_bytes());
        push.send_slice(&buf).await.unwrap();
    }
    for i in 0..3000u32 {
        let m = within::<R, _>(pull.recv()).await.unwrap();
        assert_eq!(m.frames().len(), 1);
        assert_eq!(m.frames()[0].len(), 64);
        assert_eq!(m.frames()[0][..4], i.to_le_bytes());
    }
}

/// The monitor `Stream` reports listening, accepted and the handshake.
pub async fn monitor_stream_reports_connection_events<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let mut monitor = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    push.send("x").await.unwrap();
    within::<R, _>(pull.recv()).await.unwrap();
    let mut kinds = Vec::new();
    while !kinds.contains(&MonitorEventKind::HandshakeSucceeded) {
        let event = within::<R, _>(poll_fn(|cx| Pin::new(&mut monitor).poll_next(cx)))
            .await
            .expect("monitor open");
        kinds.push(event.kind);
    }
    assert_eq!(kinds[0], MonitorEventKind::Listening);
    assert!(kinds.contains(&MonitorEventKind::Accepted));
}

/// `close` waits until what was queued is written.
pub async fn close_lingers_until_messages_are_written<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").await.unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    for i in 0..1000u32 {
        push.send(i.to_string()).await.unwrap();
    }
    within::<R, _>(push.close()).await;
    for i in 0..1000u32 {
        assert_eq!(
            text(&within::<R, _>(pull.recv()).await.unwrap()),
            [i.to_string()]
        );
    }
}

/// The `Stream` and `Sink` adapters.
pub async fn stream_and_sink<R: Runtime>() {
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    let ep = pull
        .bind(&format!("inproc://{}", unique("stream-sink")))
        .await
        .unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let mut sink = push.stream();
    for i in 0..5u32 {
        within::<R, _>(poll_fn(|cx| Pin::new(&mut sink).poll_ready(cx)))
            .await
            .unwrap();
        Pin::new(&mut sink)
            .start_send(Message::from(i.to_string().into_bytes()))
            .unwrap();
    }
    let mut stream = pull.stream();
    for i in 0..5u32 {
        let m = within::<R, _>(poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)))
            .await
            .unwrap();
        assert_eq!(text(&m), [i.to_string()]);
    }
}

/// A ROUTER with four DEALERs: fair queuing, order per peer, routing by id (run on a
/// multi-threaded executor too).
pub async fn dealer_router_many_peers<R: Runtime>() {
    let router = Socket::<R>::new(SocketType::Router).unwrap();
    let ep = router.bind("tcp://127.0.0.1:*").await.unwrap();
    let mut dealers = Vec::new();
    for i in 0..4 {
        let mut o = Options::default();
        o.routing_id = format!("d{i}").into_bytes().into();
        let d = Socket::<R>::with_options(SocketType::Dealer, o).unwrap();
        d.connect(&ep).unwrap();
        dealers.push(d);
    }
    for d in &dealers {
        for j in 0..50u32 {
            d.send(j.to_string()).await.unwrap();
        }
    }
    let mut per_peer = std::collections::BTreeMap::<String, Vec<String>>::new();
    for _ in 0..200 {
        let m = text(&within::<R, _>(router.recv()).await.unwrap());
        per_peer.entry(m[0].clone()).or_default().push(m[1].clone());
    }
    let expected: Vec<String> = (0..50).map(|j: u32| j.to_string()).collect();
    assert_eq!(per_peer.len(), 4);
    for (_, got) in per_peer {
        assert_eq!(got, expected, "ordered per peer");
    }
    // And back, routed by id.
    for i in 0..4 {
        let frames: Vec<Bytes> = vec![format!("d{i}").into(), "hi".into()];
        router.send(Message::from(frames)).await.unwrap();
    }
    for d in &dealers {
        assert_eq!(text(&within::<R, _>(d.recv()).await.unwrap()), ["hi"]);
    }
}

/// Large inproc frame bodies arrive as the very buffer sent.
pub async fn inproc_hands_large_bodies_over_without_copying<R: Runtime>() {
    let name = format!("inproc://{}", unique("zero-copy"));
    let pull = Socket::<R>::new(SocketType::Pull).unwrap();
    pull.bind(&name).await.unwrap();
    let push = Socket::<R>::new(SocketType::Push).unwrap();
    push.connect(&name).unwrap();
    for round in 0..3u8 {
        let body = Bytes::from(vec![round; 1 << 20]);
        let sent_at = body.as_ptr();
        push.send(Message::from(vec![Bytes::from_static(b"head"), body]))
            .await
            .unwrap();
        let m = within::<R, _>(pull.recv()).await.unwrap();
        assert_eq!(&m.frames()[0][..], b"head");
        assert_eq!(m.frames()[1].len(), 1 << 20);
        // The very buffer the sender filled: no copy on the way.
        assert_eq!(m.frames()[1].as_ptr(), sent_at, "round {round}");
    }
}
