//! The mio driver between our own sockets: transports, patterns, timeouts and poll.

use std::time::{Duration, Instant};

use zmtp_mio::{poll, Bytes, Context, Error, Message, PollItem, SocketType, POLLIN, POLLOUT};

const T: Option<Duration> = Some(Duration::from_secs(5));

fn push_pull_over(endpoint: &str) {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let ep = pull.bind(endpoint).unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    for i in 0..1000u32 {
        push.send(i.to_string()).unwrap();
    }
    let big = vec![7u8; 4 << 20];
    push.send(Message::from(vec![
        Bytes::new(),
        Bytes::from(big.clone()),
        Bytes::from_static(b"end"),
    ]))
    .unwrap();
    for i in 0..1000u32 {
        let m = pull.recv_timeout(T).unwrap();
        assert_eq!(&m.frames()[0][..], i.to_string().as_bytes());
    }
    let m = pull.recv_timeout(T).unwrap();
    assert_eq!(m.frames().len(), 3);
    assert_eq!(m.frames()[1].len(), big.len());
    assert_eq!(&m.frames()[2][..], b"end");
}

#[test]
fn push_pull_tcp() {
    push_pull_over("tcp://127.0.0.1:*");
}

#[test]
fn push_pull_ipc_path_and_abstract() {
    let path = std::env::temp_dir().join(format!("zmtp-mio-{}.ipc", std::process::id()));
    push_pull_over(&format!("ipc://{}", path.display()));
    push_pull_over(&format!("ipc://@zmtp-mio-{}", std::process::id()));
}

#[test]
fn req_rep_round_trips() {
    let ctx = Context::new().unwrap();
    let rep = ctx.socket(SocketType::Rep).unwrap();
    let ep = rep.bind("tcp://127.0.0.1:*").unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..100 {
            let req = rep.recv_timeout(T).unwrap();
            rep.send(req).unwrap();
        }
    });
    let req = ctx.socket(SocketType::Req).unwrap();
    req.connect(&ep).unwrap();
    for i in 0..100u32 {
        req.send(i.to_string()).unwrap();
        let rep = req.recv_timeout(T).unwrap();
        assert_eq!(&rep.frames()[0][..], i.to_string().as_bytes());
    }
    server.join().unwrap();
}

#[test]
fn pub_sub_filters_by_prefix() {
    let ctx = Context::new().unwrap();
    let publisher = ctx.socket(SocketType::Pub).unwrap();
    let ep = publisher.bind("tcp://127.0.0.1:*").unwrap();
    let sub = ctx.socket(SocketType::Sub).unwrap();
    sub.subscribe("a");
    sub.connect(&ep).unwrap();
    // Publish until the subscription has arrived.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        publisher.send("b-no").unwrap();
        publisher.send("a-yes").unwrap();
        if let Ok(m) = sub.recv_timeout(Some(Duration::from_millis(20))) {
            assert_eq!(&m.frames()[0][..], b"a-yes");
            break;
        }
        assert!(Instant::now() < deadline, "no subscribed message");
    }
}

#[test]
fn blocking_recv_times_out_on_time() {
    let ctx = Context::new().unwrap();
    let mut pull = ctx.socket(SocketType::Pull).unwrap();
    pull.bind("tcp://127.0.0.1:*").unwrap();
    pull.set_rcvtimeo(Some(Duration::from_millis(200)));
    let start = Instant::now();
    assert!(matches!(pull.recv(), Err(Error::Timeout)));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(600),
        "{took:?}"
    );
    // A send with nowhere to go times out too, on time.
    let push = ctx.socket(SocketType::Push).unwrap();
    let start = Instant::now();
    assert!(matches!(
        push.send_timeout("x", Some(Duration::from_millis(150))),
        Err(Error::Timeout)
    ));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_millis(550),
        "{took:?}"
    );
}

#[test]
fn poll_wakes_for_the_right_socket() {
    let ctx = Context::new().unwrap();
    let a = ctx.socket(SocketType::Pull).unwrap();
    let b = ctx.socket(SocketType::Pull).unwrap();
    let ep_b = b.bind("tcp://127.0.0.1:*").unwrap();
    a.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&ep_b).unwrap();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        push.send("for b").unwrap();
        push
    });
    let start = Instant::now();
    let mut items = [PollItem::new(&a, POLLIN), PollItem::new(&b, POLLIN)];
    let ready = poll(&mut items, Some(Duration::from_secs(5))).unwrap();
    let took = start.elapsed();
    assert_eq!(ready, 1);
    assert_eq!((items[0].revents, items[1].revents), (0, POLLIN));
    assert!(
        took >= Duration::from_millis(90) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(&b.try_recv().unwrap().unwrap().frames()[0][..], b"for b");
    let push = sender.join().unwrap();
    // POLLOUT: a connected PUSH can send at once; nothing is readable after the message.
    let mut items = [PollItem::new(&push, POLLOUT), PollItem::new(&b, POLLIN)];
    assert_eq!(poll(&mut items, Some(Duration::ZERO)).unwrap(), 1);
    assert_eq!((items[0].revents, items[1].revents), (POLLOUT, 0));
    // Nothing ready: poll returns 0 after its timeout.
    let start = Instant::now();
    let mut items = [PollItem::new(&a, POLLIN)];
    assert_eq!(
        poll(&mut items, Some(Duration::from_millis(100))).unwrap(),
        0
    );
    assert!(start.elapsed() >= Duration::from_millis(100));
}

#[test]
fn inproc_is_not_offered() {
    let ctx = Context::new().unwrap();
    let s = ctx.socket(SocketType::Pair).unwrap();
    assert!(matches!(s.bind("inproc://x"), Err(Error::Unsupported)));
    assert!(matches!(s.connect("inproc://x"), Err(Error::Unsupported)));
}

#[test]
fn many_threads_share_one_socket() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = std::sync::Arc::new(ctx.socket(SocketType::Push).unwrap());
    push.connect(&ep).unwrap();
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let push = push.clone();
            std::thread::spawn(move || {
                for i in 0..500u32 {
                    push.send(format!("{t}-{i}")).unwrap();
                }
            })
        })
        .collect();
    let mut got = std::collections::BTreeSet::new();
    for _ in 0..2000 {
        let m = pull.recv_timeout(T).unwrap();
        got.insert(String::from_utf8(m.frames()[0].to_vec()).unwrap());
    }
    for s in senders {
        s.join().unwrap();
    }
    assert_eq!(got.len(), 2000);
}

#[test]
fn reading_resumes_after_rcvhwm_drains() {
    // Input held at RCVHWM resumes when the application drains the queue, also when the
    // resumed reading has more to read than one turn takes (a backlog in the kernel).
    for rcvhwm in [5, 1000] {
        let ctx = Context::new().unwrap();
        let mut opts = zmtp_mio::Options::default();
        opts.rcvhwm = rcvhwm;
        let pull = ctx.socket_with(SocketType::Pull, opts).unwrap();
        let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&ep).unwrap();
        let n = 50_000u32;
        let sender = std::thread::spawn(move || {
            for i in 0..n {
                let mut body = vec![0u8; 1024];
                body[..4].copy_from_slice(&i.to_be_bytes());
                push.send(body).unwrap();
            }
            push
        });
        std::thread::sleep(Duration::from_millis(200));
        for i in 0..n {
            let m = pull.recv_timeout(T).unwrap();
            assert_eq!(&m.frames()[0][..4], &i.to_be_bytes(), "rcvhwm {rcvhwm}");
        }
        sender.join().unwrap();
    }
}
