//! `inproc://` on the mio driver: sockets of one context joined in memory.

use std::time::Duration;

use zmtp_mio::{Context, Error, Options, SendError, SocketType};

const T: Option<Duration> = Some(Duration::from_secs(5));

#[test]
fn push_pull_carries_small_and_large_messages_in_order() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    assert_eq!(pull.bind("inproc://pipeline").unwrap(), "inproc://pipeline");
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect("inproc://pipeline").unwrap();
    // Within SNDHWM + RCVHWM (1000 each): nothing is read until all are sent.
    for i in 0..1500u32 {
        push.send(i.to_string()).unwrap();
    }
    let big = vec![9u8; 3 << 20];
    push.send(big.clone()).unwrap();
    for i in 0..1500u32 {
        assert_eq!(pull.recv_timeout(T).unwrap().to_str(), Ok(&*i.to_string()));
    }
    assert_eq!(&pull.recv_timeout(T).unwrap().frames()[0][..], &big[..]);
}

#[test]
fn a_connect_made_before_the_bind_is_joined_by_it_with_what_it_queued() {
    let ctx = Context::new().unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.connect("inproc://later").unwrap();
    push.send("queued before the bind").unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.bind("inproc://later").unwrap();
    // Handed over in the bind: no wait needed.
    let got = pull.try_recv().unwrap().expect("delivered by the bind");
    assert_eq!(got.to_str(), Ok("queued before the bind"));
}

#[test]
fn a_subscription_has_arrived_when_connect_returns() {
    let ctx = Context::new().unwrap();
    let publisher = ctx.socket(SocketType::Pub).unwrap();
    publisher.bind("inproc://news").unwrap();
    let sub = ctx.socket(SocketType::Sub).unwrap();
    sub.subscribe("a").unwrap();
    sub.connect("inproc://news").unwrap();
    // No settling time: the handshake and the subscription went in the connect.
    publisher.send("a first").unwrap();
    publisher.send("b dropped").unwrap();
    publisher.send("a second").unwrap();
    assert_eq!(sub.recv_timeout(T).unwrap().to_str(), Ok("a first"));
    assert_eq!(sub.recv_timeout(T).unwrap().to_str(), Ok("a second"));
    assert!(sub.try_recv().unwrap().is_none());
}

#[test]
fn request_and_reply_across_threads() {
    let ctx = Context::new().unwrap();
    let rep = ctx.socket(SocketType::Rep).unwrap();
    rep.bind("inproc://service").unwrap();
    let server = std::thread::spawn(move || {
        for _ in 0..1000 {
            let m = rep.recv_timeout(T).unwrap();
            rep.send(format!("re: {}", m.to_str().unwrap())).unwrap();
        }
    });
    let req = ctx.socket(SocketType::Req).unwrap();
    req.connect("inproc://service").unwrap();
    for i in 0..1000 {
        req.send(i.to_string()).unwrap();
        assert_eq!(
            req.recv_timeout(T).unwrap().to_str(),
            Ok(&*format!("re: {i}"))
        );
    }
    server.join().unwrap();
}

#[test]
fn a_link_holds_about_sndhwm_plus_rcvhwm_messages() {
    let ctx = Context::new().unwrap();
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_options(Options::default().with_rcvhwm(30))
        .unwrap();
    pull.bind("inproc://bounded").unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.set_options(Options::default().with_sndhwm(20))
        .unwrap();
    push.connect("inproc://bounded").unwrap();
    let mut sent = 0;
    loop {
        match push.try_send("m") {
            Ok(_) => sent += 1,
            Err(SendError::WouldBlock(_)) => break,
            Err(e) => panic!("{e:?}"),
        }
        assert!(sent <= 1000, "nothing held the sender back");
    }
    assert_eq!(sent, 50);
    // Taking one makes room for one more.
    let mut taken = 0;
    while pull.try_recv().unwrap().is_some() {
        taken += 1;
    }
    assert_eq!(taken, 50);
    push.send("after").unwrap();
    assert_eq!(pull.recv_timeout(T).unwrap().to_str(), Ok("after"));
}

#[test]
fn names_are_per_context_and_taken_once() {
    let one = Context::new().unwrap();
    let two = Context::new().unwrap();
    let a = one.socket(SocketType::Pair).unwrap();
    a.bind("inproc://same").unwrap();
    let b = two.socket(SocketType::Pair).unwrap();
    b.bind("inproc://same").unwrap();
    let c = one.socket(SocketType::Pair).unwrap();
    let taken = c.bind("inproc://same").unwrap_err();
    assert!(matches!(taken, Error::Bind { .. }), "{taken:?}");
    assert_eq!(taken.to_string(), "inproc://same: address already in use");
}

#[test]
fn closing_one_side_ends_the_other_sides_peer_and_a_new_bind_is_joined() {
    let ctx = Context::new().unwrap();
    let pair = ctx.socket(SocketType::Dealer).unwrap();
    pair.connect("inproc://again").unwrap();
    let first = ctx.socket(SocketType::Router).unwrap();
    first.bind("inproc://again").unwrap();
    pair.send("one").unwrap();
    assert_eq!(first.recv_timeout(T).unwrap().frames()[1], "one");
    drop(first);
    // The name is free again, and the connect is made once more (after its reconnect
    // interval) to whoever binds it next.
    let second = ctx.socket(SocketType::Router).unwrap();
    second.bind("inproc://again").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        pair.send("two").unwrap();
        if let Ok(m) = second.recv_timeout(Some(Duration::from_millis(50))) {
            assert_eq!(m.frames()[1], "two");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never joined again");
    }
}

#[test]
fn what_a_closed_sender_still_holds_reaches_a_receiver_that_held_it_back() {
    let ctx = Context::new().unwrap();
    let push = ctx.socket(SocketType::Push).unwrap();
    push.set_options(
        Options::default()
            .with_sndhwm(20)
            .with_linger(Some(Duration::from_secs(5))),
    )
    .unwrap();
    // Queued before the bind: handed over together when it comes.
    push.connect("inproc://linger").unwrap();
    for i in 0..15u32 {
        push.try_send(vec![i as u8; 600]).unwrap();
    }
    drop(push);
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.set_options(Options::default().with_rcvhwm(5)).unwrap();
    pull.bind("inproc://linger").unwrap();
    // The receiver takes five at the bind; the other ten stay in the closed sender's
    // queue, which lingers until they are taken.
    for i in 0..15u32 {
        let m = pull
            .recv_timeout(T)
            .unwrap_or_else(|e| panic!("message {i}: {e}"));
        assert_eq!(m.frames()[0][..], vec![i as u8; 600][..], "message {i}");
    }
}

#[test]
fn any_two_types_are_joined_and_no_security_mechanism_runs_as_with_libzmq() {
    let ctx = Context::new().unwrap();
    // A PAIR reaches a PULL (over tcp the handshake refuses the pair).
    let pull = ctx.socket(SocketType::Pull).unwrap();
    pull.bind("inproc://mixed").unwrap();
    let pair = ctx.socket(SocketType::Pair).unwrap();
    pair.connect("inproc://mixed").unwrap();
    pair.send("from a pair").unwrap();
    assert_eq!(pull.recv_timeout(T).unwrap().to_str(), Ok("from a pair"));
    // A CURVE server and a NULL client: joined all the same, in memory.
    let keys = zmtp_mio::KeyPair::from_secret([7u8; 32]);
    let server = ctx.socket(SocketType::Pull).unwrap();
    server
        .set_options(Options::default().with_security(zmtp_mio::Security::CurveServer { keys }))
        .unwrap();
    server.bind("inproc://secured").unwrap();
    let client = ctx.socket(SocketType::Push).unwrap();
    client.connect("inproc://secured").unwrap();
    client.send("in the clear").unwrap();
    assert_eq!(server.recv_timeout(T).unwrap().to_str(), Ok("in the clear"));
}
