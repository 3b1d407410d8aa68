//! The proxy against libzmq 4.3: libzmq REQ clients through our ROUTER/DEALER proxy to
//! libzmq REP workers; our sockets through libzmq's `zmq_proxy_steerable`, whose
//! STATISTICS must equal ours for the same traffic; XSUB/XPUB forwarding subscriptions up
//! and messages down; the steerable commands; and back-pressure from a stalled backend.
//!
//! libzmq sockets block the test's thread for at most 5 s per call (`zsock`); our sockets
//! and proxies run on the runtime's worker threads meanwhile.

use std::sync::Arc;
use std::time::Duration;

use zmtp_conformance::ffi::{
    zmq_proxy, Ctx, ZSocket, ZMQ_DEALER, ZMQ_DONTWAIT, ZMQ_PAIR, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH,
    ZMQ_RCVHWM, ZMQ_RCVTIMEO, ZMQ_REP, ZMQ_REQ, ZMQ_ROUTER, ZMQ_SNDHWM, ZMQ_SUB, ZMQ_SUBSCRIBE,
};
use zmtp_conformance::security::zsock;
use zmtp_tokio::{
    proxy, proxy_steerable, Message, Options, ProxyStats, Socket, SocketType, Traffic,
};

const TIMEOUT: Duration = Duration::from_secs(5);

async fn bound(ty: SocketType) -> (Arc<Socket>, String) {
    let s = Socket::new(ty).unwrap();
    let ep = s.bind("tcp://127.0.0.1:*").await.unwrap();
    (Arc::new(s), ep)
}

async fn recv(s: &Socket) -> Message {
    tokio::time::timeout(TIMEOUT, s.recv())
        .await
        .expect("nothing within the timeout")
        .unwrap()
}

/// A REQ client's requests and their answers, through the ROUTER at `frontend`; the
/// workers answer `done:` and the request.
fn zreq_client(ctx: &Ctx, frontend: &str, name: &str, n: usize) {
    let req = zsock(ctx, ZMQ_REQ);
    req.connect(frontend).unwrap();
    for i in 0..n {
        let q = format!("{name}-{i}");
        req.send(q.as_bytes(), 0).unwrap();
        let a = req.recv_multipart().expect("an answer through the proxy");
        assert_eq!(a, [format!("done:{q}").into_bytes()]);
    }
}

/// A libzmq REP worker on `backend` answering requests until none comes for a second;
/// how many it answered.
fn zrep_worker(ctx: &Ctx, backend: &str) -> usize {
    let rep = zsock(ctx, ZMQ_REP);
    rep.set_int(ZMQ_RCVTIMEO, 1000).unwrap();
    rep.connect(backend).unwrap();
    let mut answered = 0;
    while let Ok(q) = rep.recv_multipart() {
        rep.send(&[b"done:".as_slice(), &q[0]].concat(), 0).unwrap();
        answered += 1;
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libzmq_clients_through_our_proxy_to_libzmq_workers() {
    let (frontend, fe) = bound(SocketType::Router).await;
    let (backend, be) = bound(SocketType::Dealer).await;
    let task = {
        let (f, b) = (frontend.clone(), backend.clone());
        tokio::spawn(async move { proxy(&f, &b, None).await })
    };
    tokio::task::spawn_blocking(move || {
        let ctx = Ctx::new();
        std::thread::scope(|s| {
            // 3 clients of 20 requests, 2 workers: 60 answers between them.
            let answered: Vec<_> = (0..2)
                .map(|_| {
                    let (ctx, be) = (&ctx, &be);
                    s.spawn(move || zrep_worker(ctx, be))
                })
                .collect();
            let clients: Vec<_> = (0..3)
                .map(|c| {
                    let (ctx, fe) = (&ctx, &fe);
                    s.spawn(move || zreq_client(ctx, fe, &format!("c{c}"), 20))
                })
                .collect();
            for c in clients {
                c.join().unwrap();
            }
            let answered: usize = answered.into_iter().map(|w| w.join().unwrap()).sum();
            assert_eq!(answered, 60);
        });
    })
    .await
    .unwrap();
    task.abort();
}

/// The same REQ/REP traffic through a proxy: `rounds` requests of `body`.
async fn round_trips(req: &Socket, rep: &Socket, rounds: usize, body: &[u8]) {
    for _ in 0..rounds {
        req.send(Message::from(body.to_vec())).await.unwrap();
        let q = recv(rep).await;
        rep.send(q).await.unwrap();
        assert_eq!(recv(req).await.frames()[0][..], *body);
    }
}

/// Our REQ and REP through libzmq's proxy, then through ours: the STATISTICS answers
/// agree, frame for frame and byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_sockets_through_libzmq_proxy_and_its_statistics_match_ours() {
    let ctx = Arc::new(Ctx::new());
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = {
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let f = zsock(&ctx, ZMQ_ROUTER);
            f.bind("tcp://127.0.0.1:*").unwrap();
            let b = zsock(&ctx, ZMQ_DEALER);
            b.bind("tcp://127.0.0.1:*").unwrap();
            let control = zsock(&ctx, ZMQ_PAIR);
            control.bind("inproc://proxy-control").unwrap();
            tx.send((f.last_endpoint().unwrap(), b.last_endpoint().unwrap()))
                .unwrap();
            zmq_proxy(&f, &b, None, Some(&control))
        })
    };
    let (fe, be) = rx.recv().unwrap();
    let req = Socket::new(SocketType::Req).unwrap();
    req.connect(&fe).unwrap();
    let rep = Socket::new(SocketType::Rep).unwrap();
    rep.connect(&be).unwrap();
    round_trips(&req, &rep, 7, b"twelve bytes").await;
    let theirs = {
        let ctl = zsock(&ctx, ZMQ_PAIR);
        ctl.connect("inproc://proxy-control").unwrap();
        ctl.send(b"STATISTICS", 0).unwrap();
        let frames = ctl.recv_multipart().unwrap();
        ctl.send(b"TERMINATE", 0).unwrap();
        let _ = ctl.recv_multipart();
        frames
    };
    thread
        .join()
        .unwrap()
        .expect("libzmq's proxy ended by TERMINATE");
    let theirs = ProxyStats::from_message(&Message::from(
        theirs
            .into_iter()
            .map(Into::into)
            .collect::<Vec<zmtp_tokio::Bytes>>(),
    ))
    .expect("eight u64 frames");

    // The same through ours, steered by our PAIR control.
    let (f, fe) = bound(SocketType::Router).await;
    let (b, be) = bound(SocketType::Dealer).await;
    let (control, ce) = bound(SocketType::Pair).await;
    let task = {
        let (f, b, c) = (f.clone(), b.clone(), control.clone());
        tokio::spawn(async move { proxy_steerable(&f, &b, None, Some(&c)).await })
    };
    let req = Socket::new(SocketType::Req).unwrap();
    req.connect(&fe).unwrap();
    let rep = Socket::new(SocketType::Rep).unwrap();
    rep.connect(&be).unwrap();
    round_trips(&req, &rep, 7, b"twelve bytes").await;
    let ctl = Socket::new(SocketType::Pair).unwrap();
    ctl.connect(&ce).unwrap();
    ctl.send("STATISTICS").await.unwrap();
    let ours = ProxyStats::from_message(&recv(&ctl).await).expect("eight u64 frames");
    assert_eq!(ours, theirs);
    // Messages (libzmq counts a multipart message once) and the bytes of all their frames:
    // each request is [routing id (5 bytes), empty, body] at the frontend.
    assert_eq!(
        ours.frontend_in,
        Traffic {
            messages: 7,
            bytes: 7 * (5 + 12)
        }
    );
    ctl.send("TERMINATE").await.unwrap();
    assert!(recv(&ctl).await.frames()[0].is_empty());
    tokio::time::timeout(TIMEOUT, task)
        .await
        .expect("TERMINATE ends our proxy")
        .unwrap()
        .unwrap();
}

/// libzmq PUB → our XSUB | proxy | our XPUB → libzmq SUB: the subscription goes up, only
/// matching messages come down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xsub_xpub_forward_subscriptions_and_messages() {
    let ctx = Ctx::new();
    let publisher = zsock(&ctx, ZMQ_PUB);
    publisher.bind("tcp://127.0.0.1:*").unwrap();
    let xsub = Socket::new(SocketType::XSub).unwrap();
    xsub.connect(&publisher.last_endpoint().unwrap()).unwrap();
    let (xpub, xe) = bound(SocketType::XPub).await;
    let xsub = Arc::new(xsub);
    let task = {
        let (f, b) = (xsub.clone(), xpub.clone());
        tokio::spawn(async move { proxy(&f, &b, None).await })
    };
    let sub = zsock(&ctx, ZMQ_SUB);
    sub.set_bytes(ZMQ_SUBSCRIBE, b"news").unwrap();
    sub.connect(&xe).unwrap();
    let mut got = None;
    for _ in 0..200 {
        publisher.send(b"weather", 0).unwrap();
        publisher.send(b"news: up", 0).unwrap();
        if let Ok(m) = sub.try_recv_multipart() {
            got = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(got.expect("news through the proxy"), [b"news: up".to_vec()]);
    // Only news afterwards.
    for _ in 0..20 {
        publisher.send(b"weather", 0).unwrap();
        publisher.send(b"news: up", 0).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    while let Ok(m) = sub.try_recv_multipart() {
        assert_eq!(m, [b"news: up".to_vec()]);
    }
    task.abort();
}

/// PAUSE stops the flow, RESUME starts it again, STATISTICS counts what went, TERMINATE
/// ends the proxy: with a libzmq REQ as the control's client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steerable_commands_from_a_libzmq_client() {
    let (front, fe) = bound(SocketType::Pull).await;
    let (back, be) = bound(SocketType::Push).await;
    let (control, ce) = bound(SocketType::Rep).await;
    let task = {
        let (f, b, c) = (front.clone(), back.clone(), control.clone());
        tokio::spawn(async move { proxy_steerable(&f, &b, None, Some(&c)).await })
    };
    let ctx = Ctx::new();
    let input = zsock(&ctx, ZMQ_PUSH);
    input.connect(&fe).unwrap();
    let output = Socket::new(SocketType::Pull).unwrap();
    output.connect(&be).unwrap();
    let ctl = zsock(&ctx, ZMQ_REQ);
    ctl.connect(&ce).unwrap();
    let command = |c: &[u8]| {
        ctl.send(c, 0).unwrap();
        ctl.recv_multipart().expect("every command is answered")
    };
    input.send(b"one", 0).unwrap();
    assert_eq!(recv(&output).await.frames()[0][..], *b"one");
    assert_eq!(command(b"PAUSE"), [Vec::<u8>::new()]);
    input.send(b"two", 0).unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), output.recv())
            .await
            .is_err(),
        "moved while paused"
    );
    assert_eq!(command(b"RESUME"), [Vec::<u8>::new()]);
    assert_eq!(recv(&output).await.frames()[0][..], *b"two");
    let stats = command(b"STATISTICS");
    let stats = ProxyStats::from_message(&Message::from(
        stats
            .into_iter()
            .map(Into::into)
            .collect::<Vec<zmtp_tokio::Bytes>>(),
    ))
    .unwrap();
    let two = Traffic {
        messages: 2,
        bytes: 6,
    };
    assert_eq!(stats.frontend_in, two);
    assert_eq!(stats.backend_out, two);
    assert_eq!(stats.backend_in, Traffic::default());
    assert_eq!(command(b"TERMINATE"), [Vec::<u8>::new()]);
    tokio::time::timeout(TIMEOUT, task)
        .await
        .expect("TERMINATE ends the proxy")
        .unwrap()
        .unwrap();
}

/// A backend that stops reading: the proxy holds one message and stops reading its
/// frontend, so the queues fill back to the libzmq sender, which gets EAGAIN; once the
/// backend reads again, everything the sender handed over arrives, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_backend_pushes_back_and_nothing_is_lost() {
    let hwm = |n: usize| {
        let mut o = Options::default();
        o.sndhwm = n;
        o.rcvhwm = n;
        o
    };
    let front = Arc::new(Socket::with_options(SocketType::Pull, hwm(10)).unwrap());
    let fe = front.bind("tcp://127.0.0.1:*").await.unwrap();
    let back = Arc::new(Socket::with_options(SocketType::Push, hwm(10)).unwrap());
    let be = back.bind("tcp://127.0.0.1:*").await.unwrap();
    let task = {
        let (f, b) = (front.clone(), back.clone());
        tokio::spawn(async move { proxy(&f, &b, None).await })
    };
    let ctx = Ctx::new();
    let sink: ZSocket<'_> = zsock(&ctx, ZMQ_PULL);
    sink.set_int(ZMQ_RCVHWM, 10).unwrap();
    sink.connect(&be).unwrap();
    let source = zsock(&ctx, ZMQ_PUSH);
    source.set_int(ZMQ_SNDHWM, 10).unwrap();
    source.connect(&fe).unwrap();
    // Send until libzmq refuses for a whole second: the back-pressure reached it.
    let body = vec![9u8; 100_000];
    let mut sent = 0u32;
    let mut refused_since = None;
    loop {
        let mut m = body.clone();
        m[..4].copy_from_slice(&sent.to_be_bytes());
        match source.send(&m, ZMQ_DONTWAIT) {
            Ok(()) => {
                sent += 1;
                refused_since = None;
            }
            Err(_) => {
                let since = *refused_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        assert!(sent < 100_000, "no back-pressure: {sent} messages taken");
    }
    // Bounded: HWMs of 10 on four queues, the proxy's one, and the kernel's buffers.
    assert!(
        sent < 2_000,
        "{sent} messages taken before the sender was refused"
    );
    for i in 0..sent {
        let m = sink
            .recv_multipart()
            .unwrap_or_else(|e| panic!("message {i} of {sent} did not arrive: {e:?}"));
        assert_eq!(m[0][..4], i.to_be_bytes(), "in order, none lost");
    }
    task.abort();
}

/// The blocking driver's proxy, in a thread of its own: libzmq REQ clients through it to a
/// libzmq REP worker, then STATISTICS and TERMINATE from a PAIR of ours.
#[test]
fn the_blocking_proxy_between_libzmq_peers() {
    let ctx = zmtp_mio::Context::new().unwrap();
    let bind = |ty| {
        let s = ctx.socket(ty).unwrap();
        let ep = s.bind("tcp://127.0.0.1:*").unwrap();
        (s, ep)
    };
    let (frontend, fe) = bind(SocketType::Router);
    let (backend, be) = bind(SocketType::Dealer);
    let (control, ce) = bind(SocketType::Pair);
    let proxy = std::thread::spawn(move || {
        zmtp_mio::proxy_steerable(&frontend, &backend, None, Some(&control))
    });
    let z = Ctx::new();
    std::thread::scope(|s| {
        let worker = s.spawn(|| zrep_worker(&z, &be));
        zreq_client(&z, &fe, "blocking", 10);
        assert_eq!(worker.join().unwrap(), 10);
    });
    let ctl = ctx.socket(SocketType::Pair).unwrap();
    ctl.connect(&ce).unwrap();
    ctl.send("STATISTICS").unwrap();
    let stats = ProxyStats::from_message(&ctl.recv().unwrap()).unwrap();
    assert_eq!(stats.frontend_in.messages, 10);
    assert_eq!(stats.backend_out.messages, 10);
    assert_eq!(stats.backend_in.messages, 10);
    assert_eq!(stats.frontend_out.messages, 10);
    ctl.send("TERMINATE").unwrap();
    assert!(ctl.recv().unwrap().frames()[0].is_empty());
    proxy.join().unwrap().unwrap();
}
