//! The io_uring backend ([`Backend::IoUring`]): the same sockets over a ring.

use std::time::Duration;

use zmtp_mio::{Backend, Context, SocketType, ZeroCopy};

fn ring() -> Context {
    let ctx = Context::with_backend(Backend::IoUring).expect("io_uring on the test machine");
    assert_eq!(ctx.backend(), Backend::IoUring);
    ctx
}

#[test]
fn push_pull_over_tcp_and_ipc() {
    let ctx = ring();
    for ep in ["tcp://127.0.0.1:*", "ipc://@zmtp-ring-test"] {
        let pull = ctx.socket(SocketType::Pull).unwrap();
        let endpoint = pull.bind(ep).unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        for i in 0..1000u32 {
            push.send(format!("m{i}")).unwrap();
        }
        for i in 0..1000u32 {
            let m = pull
                .recv_timeout(Some(Duration::from_secs(5)))
                .expect("a message");
            assert_eq!(m.to_str().ok(), Some(format!("m{i}").as_str()), "{ep}");
        }
    }
}

#[test]
fn a_big_message_and_rcvhwm_hold_back() {
    let ctx = ring();
    let pull = ctx
        .socket_with(
            SocketType::Pull,
            zmtp_mio::Options::default().with_rcvhwm(5),
        )
        .unwrap();
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&endpoint).unwrap();
    let big = vec![7u8; 3 << 20];
    push.send(big.clone()).unwrap();
    for i in 0..200u32 {
        push.send(format!("m{i}")).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    let m = pull
        .recv_timeout(Some(Duration::from_secs(5)))
        .expect("the big one");
    assert_eq!(m.len(), 1);
    assert_eq!(m.frames()[0].len(), big.len());
    for i in 0..200u32 {
        let m = pull
            .recv_timeout(Some(Duration::from_secs(5)))
            .expect("a message");
        assert_eq!(m.to_str().ok(), Some(format!("m{i}").as_str()));
    }
}

#[test]
fn large_messages_both_ways_between_ring_sockets() {
    // Bulk: the streams read into their own input buffers after their first full shared
    // buffer, over tcp, ws (the same buffer, unmasked by the WebSocket layer) and ipc.
    let ctx = ring();
    for ep in [
        "tcp://127.0.0.1:*",
        "ws://127.0.0.1:*/zmq",
        "ipc://@zmtp-ring-bulk",
    ] {
        let a = ctx.socket(SocketType::Dealer).unwrap();
        let endpoint = a.bind(ep).unwrap();
        let b = ctx.socket(SocketType::Dealer).unwrap();
        b.connect(&endpoint).unwrap();
        for round in 0..20u32 {
            let big: Vec<u8> = (0..(4u32 << 20) + round)
                .map(|i| (i.wrapping_mul(31) ^ round) as u8)
                .collect();
            let msg = vec![b"".to_vec(), big.clone(), round.to_be_bytes().to_vec()];
            b.send(msg.clone()).unwrap();
            let got = a
                .recv_timeout(Some(Duration::from_secs(5)))
                .unwrap_or_else(|e| panic!("{ep} round {round}: a got nothing: {e}"));
            assert_eq!(got.frames().len(), 3);
            assert!(got.frames()[1][..] == big[..], "{ep} round {round}: whole");
            assert_eq!(&got.frames()[2][..], &round.to_be_bytes());
            a.send(msg).unwrap();
            let back = b
                .recv_timeout(Some(Duration::from_secs(5)))
                .unwrap_or_else(|e| panic!("{ep} round {round}: b got nothing back: {e}"));
            assert!(
                back.frames()[1][..] == big[..],
                "{ep} round {round}: back whole"
            );
        }
    }
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn dropped_ring_contexts_give_their_buffers_back() {
    // Each context's ring has 4 MiB of receive buffers, all touched by 8 MiB of traffic:
    // were they kept after the context ends, 40 contexts would keep 160 MiB.
    let traffic = |ctx: &Context| {
        let pull = ctx.socket(SocketType::Pull).unwrap();
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let push = ctx.socket(SocketType::Push).unwrap();
        push.connect(&endpoint).unwrap();
        let chunk = vec![1u8; 256 << 10];
        for _ in 0..32 {
            push.send(chunk.clone()).unwrap();
        }
        for _ in 0..32 {
            pull.recv_timeout(Some(Duration::from_secs(5))).unwrap();
        }
    };
    traffic(&ring());
    std::thread::sleep(Duration::from_millis(200));
    let before = rss();
    for _ in 0..40 {
        let ctx = ring();
        traffic(&ctx);
        ctx.term();
    }
    // The I/O threads end (and free their rings) after their contexts.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut grown = rss().saturating_sub(before);
    while grown > 64 << 20 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        grown = rss().saturating_sub(before);
    }
    assert!(
        grown < 64 << 20,
        "40 ring contexts left {} MiB resident",
        grown >> 20
    );
}

#[test]
fn a_burst_to_a_slow_reader_goes_out_whole_and_in_order_through_ring_writes() {
    // The first send of the burst is written by the sending thread, the rest by the I/O
    // thread through the ring: writes of many chunks that the slow reader's stream takes
    // in part, the rest submitted again (or waiting in the kernel for room). With each
    // zero-copy mode: copied, sent without copying (`Always`: the ring keeps the chunks
    // until the kernel's notification), and tried then dropped (`Auto`, over loopback).
    for mode in [ZeroCopy::Off, ZeroCopy::Always, ZeroCopy::Auto] {
        a_burst_to_a_slow_reader(mode);
    }
}

fn a_burst_to_a_slow_reader(mode: ZeroCopy) {
    let ctx = ring();
    ctx.set_zero_copy(mode);
    let reader = Context::new().unwrap();
    let pull = reader.socket(SocketType::Pull).unwrap();
    let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect(&endpoint).unwrap();
    let body = |i: u32| -> Vec<u8> {
        let mut b = vec![(i % 251) as u8; 200_000 + (i as usize % 7) * 1000];
        b[..4].copy_from_slice(&i.to_be_bytes());
        b
    };
    for i in 0..200u32 {
        push.send(body(i)).unwrap();
        // Small ones between: many chunks per write.
        push.send(format!("small {i}")).unwrap();
    }
    for i in 0..200u32 {
        if i % 20 == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let m = pull
            .recv_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{mode:?}: message {i}: {e}"));
        assert!(
            m.frames()[0][..] == body(i)[..],
            "{mode:?}: message {i} whole, in order"
        );
        let m = pull.recv_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(m.to_str().ok(), Some(format!("small {i}").as_str()));
    }
    // Everything sent was written: the socket closes with nothing cut off.
    assert!(push.close().delivered_all(), "{mode:?}");
}

#[test]
fn a_stream_that_ends_while_its_input_is_held_back_loses_none_of_it() {
    // The sender writes everything and closes at once: the receiving ring often sees the
    // stream's end while the socket holds input back at RCVHWM. The end waits for that
    // input to be taken, as the input before it does.
    for round in 0..10 {
        let rx = ring();
        let pull = rx
            .socket_with(
                SocketType::Pull,
                zmtp_mio::Options::default().with_rcvhwm(100),
            )
            .unwrap();
        pull.set_rcvtimeo(Some(Duration::from_secs(5)));
        let endpoint = pull.bind("tcp://127.0.0.1:*").unwrap();
        let count = 20_000u32;
        let sender = std::thread::spawn(move || {
            let tx = ring();
            let push = tx.socket(SocketType::Push).unwrap();
            push.connect(&endpoint).unwrap();
            let bodies: Vec<zmtp_mio::Bytes> = (0..count)
                .map(|i| zmtp_mio::Bytes::from(i.to_be_bytes().to_vec()))
                .collect();
            let mut rest = &bodies[..];
            while !rest.is_empty() {
                let n = push.send_many(rest).unwrap();
                rest = &rest[n..];
            }
            assert!(push.close().delivered_all());
        });
        let mut next = 0u32;
        let mut batch = Vec::new();
        while next < count {
            batch.clear();
            pull.recv_many(&mut batch, 256)
                .unwrap_or_else(|e| panic!("round {round}: {e} after {next} messages"));
            for m in &batch {
                assert_eq!(m.frames()[0][..], next.to_be_bytes(), "round {round}");
                next += 1;
            }
        }
        sender.join().unwrap();
    }
}

#[test]
fn a_port_is_free_again_once_its_ring_context_is_dropped() {
    // The ring's accept holds the listening socket while it is armed: dropping the socket
    // and its context must let the port go, for a program restarted at once.
    for _ in 0..20 {
        let ctx = ring();
        let rep = ctx.socket(SocketType::Rep).unwrap();
        let endpoint = rep.bind("tcp://127.0.0.1:*").unwrap();
        let port = endpoint.rsplit(':').next().unwrap().to_string();
        drop(rep);
        drop(ctx);
        let again = std::net::TcpListener::bind(format!("127.0.0.1:{port}"));
        assert!(again.is_ok(), "port {port} still taken: {again:?}");
    }
}

#[test]
fn an_abstract_ipc_name_is_free_again_once_unbound_or_its_ring_socket_dropped() {
    // A shutdown does not unbind a unix socket: only the last close of the listening
    // socket frees an abstract name, so `unbind` and the drops wait until the ring's
    // accept has let go of it.
    let name = format!("ipc://@zmtp-ring-rebind-{}", std::process::id());
    for round in 0..20 {
        let ctx = ring();
        let rep = ctx.socket(SocketType::Rep).unwrap();
        rep.bind(&name).unwrap();
        rep.unbind(&name).unwrap();
        // Unbound: the same socket binds the name again at once.
        rep.bind(&name)
            .unwrap_or_else(|e| panic!("round {round}: bind after unbind: {e}"));
        match round % 2 {
            // The socket dropped, then its context.
            0 => {
                drop(rep);
                drop(ctx);
            }
            // The context dropped first; the socket's drop then ends it.
            _ => {
                drop(ctx);
                drop(rep);
            }
        }
        let again = ring();
        let rep = again.socket(SocketType::Rep).unwrap();
        rep.bind(&name)
            .unwrap_or_else(|e| panic!("round {round}: bind in a new context: {e}"));
    }
}
