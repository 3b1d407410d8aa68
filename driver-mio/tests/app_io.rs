//! Reads and writes done by application threads (a send to an idle stream, a receive
//! that reads or waits on the streams itself) alongside the I/O thread, and the batch
//! receive.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zmtp_mio::{
    poll, Context, Error, Message, MonitorEventKind, Options, PollItem, Socket, SocketType, POLLIN,
};

const T: Option<Duration> = Some(Duration::from_secs(10));

fn pair(ctx: &Context, endpoint: &str, bind: SocketType, connect: SocketType) -> (Socket, Socket) {
    let a = ctx.socket(bind).unwrap();
    a.set_rcvtimeo(T);
    let ep = a.bind(endpoint).unwrap();
    let b = ctx.socket(connect).unwrap();
    b.set_rcvtimeo(T);
    b.connect(&ep).unwrap();
    (a, b)
}

#[test]
fn recv_many_takes_what_is_ready_in_order_up_to_max() {
    let ctx = Context::new().unwrap();
    let (pull, push) = pair(
        &ctx,
        "tcp://127.0.0.1:*",
        SocketType::Pull,
        SocketType::Push,
    );
    let mut batch = Vec::new();
    assert_eq!(pull.try_recv_many(&mut batch, 16).unwrap(), 0);
    assert!(batch.is_empty());
    // `max` 0: nothing, at once, even with nothing ready and no timeout.
    pull.set_rcvtimeo(None);
    assert_eq!(pull.recv_many(&mut batch, 0).unwrap(), 0);
    pull.set_rcvtimeo(T);

    let n = 1000u32;
    for i in 0..n {
        push.send(i.to_be_bytes().to_vec()).unwrap();
    }
    let mut next = 0u32;
    let mut batches = 0;
    while next < n {
        // Appended after what `out` holds already.
        batch.clear();
        batch.push(Message::from("kept"));
        let got = pull.recv_many(&mut batch, 64).unwrap();
        assert!((1..=64).contains(&got), "{got}");
        assert_eq!(batch.len(), got + 1);
        assert_eq!(batch[0], Message::from("kept"));
        for msg in &batch[1..] {
            assert_eq!(&msg.frames()[0][..], &next.to_be_bytes());
            next += 1;
        }
        batches += 1;
    }
    assert!(batches >= n.div_ceil(64), "{batches} batches");
    batch.clear();
    assert_eq!(pull.try_recv_many(&mut batch, 16).unwrap(), 0);

    // recv_many waits for the first message, at most RCVTIMEO.
    pull.set_rcvtimeo(Some(Duration::from_millis(30)));
    let started = Instant::now();
    assert!(matches!(pull.recv_many(&mut batch, 8), Err(Error::Timeout)));
    assert!(started.elapsed() >= Duration::from_millis(30));
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        push.send("late").unwrap();
        push
    });
    pull.set_rcvtimeo(T);
    assert_eq!(pull.recv_many(&mut batch, 8).unwrap(), 1);
    assert_eq!(batch[0].to_str(), Ok("late"));
    drop(sender.join().unwrap());
}

#[test]
fn recv_many_refuses_like_recv() {
    let ctx = Context::new().unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    let mut batch = Vec::new();
    assert!(matches!(
        push.try_recv_many(&mut batch, 4),
        Err(Error::Unsupported)
    ));
    assert!(matches!(
        push.recv_many(&mut batch, 4),
        Err(Error::Unsupported)
    ));
    let pull = ctx.socket(SocketType::Pull).unwrap();
    ctx.clone().term();
    assert!(matches!(
        pull.try_recv_many(&mut batch, 4),
        Err(Error::Closed)
    ));
    assert!(matches!(pull.recv_many(&mut batch, 4), Err(Error::Closed)));
    assert!(batch.is_empty());
}

fn round_trips(endpoint: &str) {
    let ctx = Context::new().unwrap();
    let (rep, req) = pair(&ctx, endpoint, SocketType::Rep, SocketType::Req);
    let n = 3000u32;
    let server = std::thread::spawn(move || {
        for _ in 0..n {
            let request = rep.recv().unwrap();
            let mut reply = request.frames()[0].to_vec();
            reply.reverse();
            rep.send(reply).unwrap();
        }
    });
    for i in 0..n {
        let body = format!("request {i}");
        req.send(body.as_str()).unwrap();
        // Some replies waited for with recv, some with poll then try_recv.
        let reply = if i % 3 == 0 {
            poll(&mut [PollItem::new(&req, POLLIN)], T).unwrap();
            req.try_recv().unwrap().expect("a reply after POLLIN")
        } else {
            req.recv().unwrap()
        };
        let expected: Vec<u8> = body.bytes().rev().collect();
        assert_eq!(&reply.frames()[0][..], &expected[..]);
    }
    server.join().unwrap();
}

#[test]
fn request_reply_loop_tcp() {
    round_trips("tcp://127.0.0.1:*");
}

#[test]
fn request_reply_loop_ipc() {
    round_trips("ipc://*");
}

#[test]
fn many_peers_with_a_small_rcvhwm_deliver_everything_in_order() {
    // More peers than a receiving thread reads at once, each held at RCVHWM in turn.
    let ctx = Context::new().unwrap();
    let options = Options::default().with_rcvhwm(3);
    let pull = ctx.socket_with(SocketType::Pull, options).unwrap();
    pull.set_rcvtimeo(T);
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let peers = 12u32;
    let each = 500u32;
    let senders: Vec<_> = (0..peers)
        .map(|p| {
            let ctx = ctx.clone();
            let ep = ep.clone();
            std::thread::spawn(move || {
                let push = ctx.socket(SocketType::Push).unwrap();
                push.connect(&ep).unwrap();
                for i in 0..each {
                    let mut body = vec![p as u8; 300];
                    body[1..5].copy_from_slice(&i.to_be_bytes());
                    push.send(body).unwrap();
                }
                push
            })
        })
        .collect();
    let mut next = vec![0u32; peers as usize];
    let mut batch = Vec::new();
    let mut got = 0;
    while got < peers * each {
        // Single receives and batches, and a pause now and then to let every queue fill.
        if got % 1000 == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        batch.clear();
        if got % 2 == 0 {
            batch.push(pull.recv().unwrap());
        } else {
            pull.recv_many(&mut batch, 7).unwrap();
        }
        for msg in &batch {
            let body = &msg.frames()[0];
            let p = body[0] as usize;
            let i = u32::from_be_bytes(body[1..5].try_into().unwrap());
            assert_eq!(i, next[p], "peer {p}");
            next[p] += 1;
            got += 1;
        }
    }
    assert!(next.iter().all(|&n| n == each));
    for s in senders {
        drop(s.join().unwrap());
    }
}

#[test]
fn a_busy_peer_does_not_starve_a_quiet_one() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(T);
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let busy = ctx.socket(SocketType::Push).unwrap();
    busy.connect(&ep).unwrap();
    let quiet = ctx.socket(SocketType::Push).unwrap();
    quiet.connect(&ep).unwrap();
    // Both connected before the flood starts.
    let warm = Instant::now();
    while !(busy.can_send() && quiet.can_send()) {
        assert!(warm.elapsed() < T.unwrap());
        std::thread::sleep(Duration::from_millis(1));
    }
    let total = 200_000u32;
    let flood = std::thread::spawn(move || {
        let body = vec![b'b'; 1024];
        for _ in 0..total {
            busy.send(body.as_slice()).unwrap();
        }
        busy
    });
    // The flood is under way: the receiver has a backlog from the busy peer.
    let mut busy_got = 0u32;
    while busy_got < 5000 {
        let msg = pull.recv().unwrap();
        assert_eq!(msg.frames()[0][0], b'b');
        busy_got += 1;
    }
    for i in 0..10u32 {
        quiet.send(format!("quiet {i}")).unwrap();
    }
    let mut quiet_got = 0;
    while quiet_got < 10 {
        let msg = pull.recv().unwrap();
        if msg.frames()[0][0] == b'q' {
            assert_eq!(msg.to_str(), Ok(format!("quiet {quiet_got}").as_str()));
            quiet_got += 1;
        } else {
            busy_got += 1;
        }
    }
    // Fair queuing: the quiet peer's messages came while most of the flood was still to
    // come (what was queued and in the kernel's buffers at most came first).
    assert!(
        busy_got < total / 2,
        "{busy_got} of {total} busy messages first"
    );
    while busy_got < total {
        pull.recv().unwrap();
        busy_got += 1;
    }
    drop(flood.join().unwrap());
}

#[test]
fn input_is_read_while_no_application_thread_receives() {
    // After a receive that read (or waited on) the stream itself, the I/O thread reads
    // again: a message that arrives while the application does something else is ready
    // without a receive call, for can_recv and poll.
    let ctx = Context::new().unwrap();
    let (pull, mut push) = pair(
        &ctx,
        "tcp://127.0.0.1:*",
        SocketType::Pull,
        SocketType::Push,
    );
    for round in 0..10u32 {
        // The receiver waits before the message comes.
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            push.send(format!("waited {round}")).unwrap();
            push
        });
        assert_eq!(pull.recv_string().unwrap(), format!("waited {round}"));
        push = sender.join().unwrap();
        // The next message comes while nobody receives.
        push.send(format!("unasked {round}")).unwrap();
        let started = Instant::now();
        while !pull.can_recv() {
            assert!(started.elapsed() < T.unwrap(), "round {round}: never read");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(pull.recv_string().unwrap(), format!("unasked {round}"));
        // And poll waits for one.
        push.send(format!("polled {round}")).unwrap();
        assert_eq!(poll(&mut [PollItem::new(&pull, POLLIN)], T).unwrap(), 1);
        assert_eq!(
            pull.try_recv().unwrap().map(|m| m.to_string()),
            Some(format!("polled {round}"))
        );
    }
}

#[test]
fn term_ends_a_receive_that_waits_on_the_streams() {
    let ctx = Context::new().unwrap();
    let (pull, push) = pair(
        &ctx,
        "tcp://127.0.0.1:*",
        SocketType::Pull,
        SocketType::Push,
    );
    push.send("first").unwrap();
    assert_eq!(pull.recv_string().unwrap(), "first");
    let pull = Arc::new(pull);
    let (tx, rx) = mpsc::channel();
    let receiver = std::thread::spawn({
        let pull = pull.clone();
        move || {
            pull.set_rcvtimeo(None);
            let _ = tx.send(());
            pull.recv()
        }
    });
    rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    ctx.clone().term();
    let got = receiver.join().unwrap();
    assert!(matches!(got, Err(Error::Closed)), "{got:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_peer_lost_while_a_receive_waits_is_noticed_and_its_successor_heard() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(T);
    let monitor = pull.monitor();
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let pull = Arc::new(pull);
    let receiver = std::thread::spawn({
        let pull = pull.clone();
        move || pull.recv_string()
    });
    let first = ctx.socket(SocketType::Push).unwrap();
    first.set_linger(Some(Duration::ZERO)).unwrap();
    first.connect(&ep).unwrap();
    loop {
        let event = monitor.recv_timeout(T.unwrap()).unwrap();
        if event.kind == MonitorEventKind::HandshakeSucceeded {
            break;
        }
    }
    // The receiver waits on the stream; it goes away.
    std::thread::sleep(Duration::from_millis(20));
    drop(first);
    loop {
        let event = monitor.recv_timeout(T.unwrap()).unwrap();
        if event.kind == MonitorEventKind::Disconnected {
            break;
        }
    }
    let second = ctx.socket(SocketType::Push).unwrap();
    second.connect(&ep).unwrap();
    second.send("from the second").unwrap();
    assert_eq!(receiver.join().unwrap().unwrap(), "from the second");
}

#[test]
fn heartbeats_are_answered_while_a_receive_waits() {
    // The receiving thread reads the streams itself while it waits: PINGs that come then
    // must still be answered, or the sender would drop the connection.
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(T);
    let ep = pull.bind("tcp://127.0.0.1:*").unwrap();
    let options = Options::default()
        .with_heartbeat_ivl(Some(Duration::from_millis(10)))
        .with_heartbeat_timeout(Some(Duration::from_millis(60)));
    let push = ctx.socket_with(SocketType::Push, options).unwrap();
    let monitor = push.monitor();
    push.connect(&ep).unwrap();
    push.send("hello").unwrap();
    assert_eq!(pull.recv_string().unwrap(), "hello");
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        push.send("still here").unwrap();
        push
    });
    assert_eq!(pull.recv_string().unwrap(), "still here");
    let push = sender.join().unwrap();
    let lost: Vec<_> = monitor
        .try_iter()
        .filter(|e| e.kind == MonitorEventKind::Disconnected)
        .collect();
    assert!(lost.is_empty(), "{lost:?}");
    drop(push);
}

#[test]
fn a_burst_of_sends_arrives_whole_and_in_order() {
    // The first send of a burst may be written by the sending thread, the rest by the
    // I/O thread: nothing is lost or reordered between the two.
    let ctx = Context::new().unwrap();
    for endpoint in ["tcp://127.0.0.1:*", "ipc://*"] {
        let (pull, push) = pair(&ctx, endpoint, SocketType::Pull, SocketType::Push);
        let sender = std::thread::spawn(move || {
            for burst in 0..50u32 {
                for i in 0..200u32 {
                    let mut body = vec![0u8; 8 + (i as usize % 5) * 1000];
                    body[..4].copy_from_slice(&burst.to_be_bytes());
                    body[4..8].copy_from_slice(&i.to_be_bytes());
                    push.send_slice(&body).unwrap();
                }
                if burst % 10 == 0 {
                    // A pause: the next burst starts on an idle stream.
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            push
        });
        let mut batch = Vec::new();
        let mut expected = (0u32, 0u32);
        while expected.0 < 50 {
            batch.clear();
            pull.recv_many(&mut batch, 100).unwrap();
            for msg in &batch {
                let body = &msg.frames()[0];
                assert_eq!(body.len(), 8 + (expected.1 as usize % 5) * 1000);
                assert_eq!(&body[..4], &expected.0.to_be_bytes());
                assert_eq!(&body[4..8], &expected.1.to_be_bytes());
                expected.1 += 1;
                if expected.1 == 200 {
                    expected = (expected.0 + 1, 0);
                }
            }
        }
        drop(sender.join().unwrap());
    }
}

#[test]
fn two_threads_receive_from_one_socket() {
    // One thread may wait on the streams while the other waits on the socket's condition
    // variable: both are served, nothing is lost.
    let ctx = Context::new().unwrap();
    let (pull, push) = pair(
        &ctx,
        "tcp://127.0.0.1:*",
        SocketType::Pull,
        SocketType::Push,
    );
    let pull = Arc::new(pull);
    let n = 4000u32;
    let receivers: Vec<_> = (0..2)
        .map(|_| {
            let pull = pull.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(msg) = pull.recv_timeout(Some(Duration::from_millis(500))) {
                    got.push(u32::from_be_bytes(msg.frames()[0][..].try_into().unwrap()));
                }
                got
            })
        })
        .collect();
    for i in 0..n {
        push.send(i.to_be_bytes().to_vec()).unwrap();
        if i % 500 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let mut all: Vec<u32> = receivers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..n).collect::<Vec<_>>());
}

/// A receive that may not wait reads the streams this thread holds (a blocking receive
/// leaves them leased to it for a while, which the I/O thread does not read meanwhile):
/// what was written before `try_recv` is taken, not left for after the lease.
#[test]
fn try_recv_reads_the_streams_leased_to_this_thread() {
    let ctx = Context::new().unwrap();
    // The sender in a context of its own: its writes are its own thread's or its own
    // I/O thread's, never this one's.
    let other = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_rcvtimeo(T);
    let ep = pull.bind("ipc://*").unwrap();
    let push = other.socket(SocketType::Push).unwrap();
    push.connect(&ep).unwrap();
    let rounds = 20;
    let mut taken = 0;
    for i in 0..rounds {
        push.send(format!("wait {i}")).unwrap();
        // A blocking receive: the stream stays with this thread for a while after.
        assert_eq!(
            pull.recv().unwrap().to_str(),
            Ok(format!("wait {i}").as_str())
        );
        // An idle stream: the send is written by the sending thread before it returns.
        std::thread::sleep(Duration::from_micros(200));
        push.send(format!("now {i}")).unwrap();
        match pull.try_recv().unwrap() {
            Some(msg) => {
                assert_eq!(msg.to_str(), Ok(format!("now {i}").as_str()));
                taken += 1;
            }
            None => assert_eq!(
                pull.recv().unwrap().to_str(),
                Ok(format!("now {i}").as_str())
            ),
        }
    }
    // Before, none was: each waited for the lease to run out.
    assert!(taken >= rounds * 3 / 4, "{taken} of {rounds} taken at once");
}
