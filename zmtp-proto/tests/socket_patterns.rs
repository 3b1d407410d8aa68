//! Routing patterns of the socket layer, driven through the in-memory cluster.

use std::time::Duration;

use zmtp_proto::socket::{Message, MonitorEventKind, Options, SendError, Sent};
use zmtp_proto::Bytes;
use zmtp_proto::SocketType::{self, *};
use zmtp_testkit::cluster::{Cluster, Node, RawPeer};
use zmtp_testkit::message::{frames, m, msg, opts, text};

const ANY: &str = "tcp://127.0.0.1:*";

fn texts(ms: &[Message]) -> Vec<String> {
    ms.iter().map(text).collect()
}

fn recv_texts(c: &mut Cluster, n: Node) -> Vec<String> {
    texts(&c.recv_all(n))
}

fn is_would_block(r: &Result<Sent, SendError>) -> bool {
    matches!(r, Err(SendError::WouldBlock(_)))
}

// ----- load balancing and fair queuing ---------------------------------------------------

#[test]
fn push_load_balances_round_robin_and_skips_a_full_peer() {
    let mut c = Cluster::new(1);
    let push = c.add(Push, opts(|o| o.sndhwm = 2));
    let pulls: Vec<Node> = (0..2).map(|_| c.add_default(Pull)).collect();
    let eps: Vec<String> = pulls.iter().map(|&p| c.bind(p, ANY)).collect();
    // The third PULL is not up: with IMMEDIATE=0 its queue exists but cannot drain.
    let late = "tcp://127.0.0.1:5999";
    for ep in &eps {
        c.connect(push, ep);
    }
    c.connect(push, late);
    for i in 0..6 {
        assert_eq!(c.send(push, m(&[&format!("m{i}")])), Ok(Sent::Queued));
    }
    // Nothing moved yet: every queue holds SNDHWM = 2.
    assert!(!c.socket(push).can_send());
    assert!(is_would_block(&c.send(push, m(&["m6"]))));
    c.run_until_idle();
    // The live peers drained; the dead one is still full and is skipped.
    for i in 6..10 {
        assert_eq!(c.send(push, m(&[&format!("m{i}")])), Ok(Sent::Queued));
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, pulls[0]), ["m0", "m3", "m6", "m8"]);
    assert_eq!(recv_texts(&mut c, pulls[1]), ["m1", "m4", "m7", "m9"]);
    // When the third PULL comes up, its queued messages reach it.
    let third = c.add_default(Pull);
    c.bind(third, late);
    c.run_for(Duration::from_millis(500));
    assert_eq!(recv_texts(&mut c, third), ["m2", "m5"]);
}

#[test]
fn pull_fair_queues_one_message_per_peer() {
    let mut c = Cluster::new(2);
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    let pushes: Vec<Node> = (0..3).map(|_| c.add_default(Push)).collect();
    for &p in &pushes {
        c.connect(p, &ep);
    }
    for (i, &p) in pushes.iter().enumerate() {
        for k in 0..4 {
            c.send(p, m(&[&i.to_string(), &k.to_string()])).unwrap();
        }
    }
    c.run_until_idle();
    let got = c.recv_all(pull);
    assert_eq!(got.len(), 12);
    let round_order: Vec<Vec<u8>> = got[..3].iter().map(|m| frames(m)[0].clone()).collect();
    let mut sorted = round_order.clone();
    sorted.sort();
    assert_eq!(sorted, [b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);
    for (round, chunk) in got.chunks(3).enumerate() {
        // One message from each PUSH per round, in the same peer order every round, and
        // each PUSH's messages in the order sent.
        let sources: Vec<Vec<u8>> = chunk.iter().map(|m| frames(m)[0].clone()).collect();
        assert_eq!(sources, round_order, "round {round}: {:?}", texts(chunk));
        for msg in chunk {
            assert_eq!(frames(msg)[1], round.to_string().into_bytes());
        }
    }
}

#[test]
fn recv_many_keeps_order_whether_it_takes_all_or_part_of_a_queue() {
    let mut c = Cluster::new(4);
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    let push = c.add_default(Push);
    c.connect(push, &ep);
    let mut next = 0;
    let mut send = |c: &mut Cluster, n: usize| {
        for _ in 0..n {
            c.send(push, m(&[&next.to_string()])).unwrap();
            next += 1;
        }
        c.run_until_idle();
    };
    let mut got: Vec<String> = Vec::new();
    let mut batch: Vec<Message> = Vec::with_capacity(8);
    // Part of a queue (5 of 12), then the rest into an empty list that can hold it
    // (whole queue: the buffers are swapped), then into a list that is not empty, and
    // again after the queue was refilled in the buffer it was given.
    send(&mut c, 12);
    let now = c.now();
    assert_eq!(c.socket(pull).recv_many(&mut batch, 5, now), 5);
    got.extend(texts(&batch));
    batch.clear();
    assert_eq!(c.socket(pull).recv_many(&mut batch, 100, now), 7);
    got.extend(texts(&batch));
    batch.clear();
    send(&mut c, 3);
    batch.push(m(&["kept"]));
    assert_eq!(c.socket(pull).recv_many(&mut batch, 100, now), 3);
    assert_eq!(texts(&batch)[0], "kept");
    got.extend(texts(&batch[1..]));
    batch = Vec::new();
    send(&mut c, 4);
    // An empty list without room: the messages are moved, and all arrive.
    assert_eq!(c.socket(pull).recv_many(&mut batch, 100, now), 4);
    got.extend(texts(&batch));
    send(&mut c, 2);
    assert_eq!(recv_texts(&mut c, pull), ["19", "20"]);
    let want: Vec<String> = (0..19).map(|i| i.to_string()).collect();
    assert_eq!(got, want);
}

#[test]
fn dealer_load_balances_out_and_fair_queues_in() {
    let mut c = Cluster::new(3);
    let hub = c.add_default(Dealer);
    let ep = c.bind(hub, ANY);
    let d1 = c.add_default(Dealer);
    let d2 = c.add_default(Dealer);
    c.connect(d1, &ep);
    c.run_until_idle();
    c.connect(d2, &ep);
    c.run_until_idle();
    for i in 0..4 {
        c.send(hub, m(&["to", &i.to_string()])).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, d1), ["to|0", "to|2"]);
    assert_eq!(recv_texts(&mut c, d2), ["to|1", "to|3"]);
    for i in 0..2 {
        c.send(d1, m(&["d1", &i.to_string()])).unwrap();
        c.send(d2, m(&["d2", &i.to_string()])).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, hub), ["d1|0", "d2|0", "d1|1", "d2|1"]);
}

// ----- high-water marks -----------------------------------------------------------------

type Tweak = fn(&mut Options);

/// The socket types that block at SNDHWM: (sender, its options, a peer type).
const BLOCKING_SENDERS: &[(SocketType, Tweak, SocketType)] = &[
    (Push, |_| {}, Pull),
    (Dealer, |_| {}, Router),
    (Pair, |_| {}, Pair),
    // Relaxed, so that a REQ can send again before a reply.
    (Req, |o| o.req_relaxed = true, Router),
];

/// A cluster with one sender of `ty` at SNDHWM 3, options tweaked by `f`.
fn sender_at_hwm_3(seed: u64, ty: SocketType, f: Tweak) -> (Cluster, Node) {
    let mut c = Cluster::new(seed);
    let s = c.add(
        ty,
        opts(|o| {
            o.sndhwm = 3;
            f(o)
        }),
    );
    (c, s)
}

#[test]
fn blocking_types_return_would_block_at_sndhwm() {
    for (i, &(ty, f, peer_ty)) in BLOCKING_SENDERS.iter().enumerate() {
        let (mut c, s) = sender_at_hwm_3(10 + i as u64, ty, f);
        // No peer at all: nothing can take a message.
        assert!(is_would_block(&c.send(s, m(&["x"]))), "{ty:?}");
        let ep = "tcp://127.0.0.1:6000";
        c.connect(s, ep);
        c.run_until_idle();
        for k in 0..3 {
            assert_eq!(
                c.send(s, m(&["x", &k.to_string()])),
                Ok(Sent::Queued),
                "{ty:?}"
            );
        }
        assert!(!c.socket(s).can_send(), "{ty:?}");
        match c.send(s, m(&["over", "hwm"])) {
            Err(SendError::WouldBlock(back)) => {
                assert_eq!(
                    texts(&[back]),
                    ["over|hwm"],
                    "{ty:?}: the message is handed back"
                )
            }
            other => panic!("{ty:?}: {other:?}"),
        }
        // Once a peer is there, the queue drains and the socket takes messages again.
        let peer = c.add_default(peer_ty);
        c.bind(peer, ep);
        c.run_for(Duration::from_millis(300));
        let got = c.recv_all(peer);
        assert_eq!(got.len(), 3, "{ty:?}: {:?}", texts(&got));
        assert!(got.iter().all(|g| text(g).contains("x|")), "{ty:?}");
        assert!(c.socket(s).can_send(), "{ty:?}");
    }
}

#[test]
fn send_slice_is_send_of_a_copy() {
    // Load-balancing types take the copy-free path; the others fall back to `send`.
    for (i, &(ty, f, peer_ty)) in BLOCKING_SENDERS.iter().enumerate() {
        let (mut c, s) = sender_at_hwm_3(40 + i as u64, ty, f);
        // No peer: refused, with a message holding a copy.
        match c.send_slice(s, b"early") {
            Err(SendError::WouldBlock(back)) => assert_eq!(texts(&[back]), ["early"], "{ty:?}"),
            other => panic!("{ty:?}: {other:?}"),
        }
        let peer = c.add_default(peer_ty);
        let ep = c.bind(peer, ANY);
        c.connect(s, &ep);
        c.run_until_idle();
        // Connected: slices and messages interleave in order, and count against SNDHWM.
        assert_eq!(c.send_slice(s, b"a"), Ok(Sent::Queued), "{ty:?}");
        assert_eq!(c.send(s, m(&["b"])), Ok(Sent::Queued), "{ty:?}");
        assert_eq!(c.send_slice(s, b""), Ok(Sent::Queued), "{ty:?}");
        match c.send_slice(s, b"over") {
            Err(SendError::WouldBlock(back)) => assert_eq!(texts(&[back]), ["over"], "{ty:?}"),
            other => panic!("{ty:?}: {other:?}"),
        }
        c.run_until_idle();
        let got: Vec<String> = c
            .recv_all(peer)
            .iter()
            .map(|g| text(g).rsplit('|').next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(got, ["a", "b", ""], "{ty:?}");
        assert_eq!(c.send_slice(s, b"after"), Ok(Sent::Queued), "{ty:?}");
    }
    // PUB: no subscriber, so the copy is dropped as `send` would drop it.
    let mut c = Cluster::new(50);
    let publisher = c.add_default(Pub);
    assert_eq!(c.send_slice(publisher, b"nobody"), Ok(Sent::Dropped));
    // A closing socket refuses, handing the copy back.
    let push = c.add_default(Push);
    let now = c.now();
    c.socket(push).close(now);
    assert!(matches!(
        c.send_slice(push, b"late"),
        Err(SendError::Closed(back)) if texts(std::slice::from_ref(&back)) == ["late"]
    ));
}

#[test]
fn send_slice_of_a_large_body_arrives_whole() {
    let mut c = Cluster::new(51);
    let push = c.add_default(Push);
    let pull = c.add_default(Pull);
    let ep = c.bind(pull, ANY);
    c.connect(push, &ep);
    c.run_until_idle();
    let big: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    for len in [
        zmtp_proto::SHARED_BODY_MIN - 1,
        zmtp_proto::SHARED_BODY_MIN,
        big.len(),
    ] {
        assert_eq!(c.send_slice(push, &big[..len]), Ok(Sent::Queued));
    }
    c.run_until_idle();
    let got = c.recv_all(pull);
    assert_eq!(got.len(), 3);
    for (msg, len) in got.iter().zip([
        zmtp_proto::SHARED_BODY_MIN - 1,
        zmtp_proto::SHARED_BODY_MIN,
        big.len(),
    ]) {
        assert_eq!(msg.frames().len(), 1);
        assert_eq!(&msg.frames()[0][..], &big[..len]);
    }
}

#[test]
fn pub_drops_at_sndhwm() {
    let mut c = Cluster::new(20);
    let publ = c.add(Pub, opts(|o| o.sndhwm = 2));
    let ep = c.bind(publ, ANY);
    let sub = c.add_default(Sub);
    c.socket(sub).subscribe(b"");
    c.connect(sub, &ep);
    c.run_until_idle();
    // Without running the network nothing is written: the peer's queue is full after 2.
    let results: Vec<Sent> = (0..5)
        .map(|i| c.send(publ, m(&[&i.to_string()])).unwrap())
        .collect();
    use Sent::{Dropped, Queued};
    assert_eq!(results, [Queued, Queued, Dropped, Dropped, Dropped]);
    assert!(c.socket(publ).can_send(), "PUB never blocks");
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["0", "1"]);
}

fn set_invert(c: &mut Cluster, n: Node, on: bool) {
    let options = c.socket(n).options().clone().with_invert_matching(on);
    c.socket(n).set_options(options).unwrap();
}

/// libzmq's test_pub_invert_matching: with INVERT_MATCHING on both sides, each message
/// goes to the subscribers whose prefixes do not match it.
#[test]
fn invert_matching_sends_to_the_subscribers_that_do_not_match() {
    for ty in [Pub, XPub] {
        let mut c = Cluster::new(22);
        let publ = c.add_default(ty);
        let ep = c.bind(publ, ANY);
        let (sub1, sub2) = (c.add_default(Sub), c.add_default(Sub));
        c.socket(sub1).subscribe(b"prefix1");
        c.socket(sub2).subscribe(b"p2");
        // A peer with no subscription at all, for the inverted case.
        let idle = c.add(Sub, opts(|o| o.invert_matching = true));
        for s in [sub1, sub2, idle] {
            c.connect(s, &ep);
        }
        c.run_until_idle();
        for topic in ["prefix1", "p2"] {
            c.send(publ, m(&[topic])).unwrap();
        }
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, sub1), ["prefix1"], "{ty:?}");
        assert_eq!(recv_texts(&mut c, sub2), ["p2"], "{ty:?}");
        assert_eq!(recv_texts(&mut c, idle), Vec::<String>::new(), "{ty:?}");

        set_invert(&mut c, publ, true);
        // The SUBs invert too, or they would filter out what now reaches them.
        for s in [sub1, sub2] {
            set_invert(&mut c, s, true);
        }
        for topic in ["prefix1", "p2", "other"] {
            assert_eq!(c.send(publ, m(&[topic])).unwrap(), Sent::Queued);
        }
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, sub1), ["p2", "other"], "{ty:?}");
        assert_eq!(recv_texts(&mut c, sub2), ["prefix1", "other"], "{ty:?}");
        assert_eq!(
            recv_texts(&mut c, idle),
            ["prefix1", "p2", "other"],
            "{ty:?}: no subscription matches anything"
        );
    }
}

/// A SUB that inverts but whose publisher does not drops everything it receives, as in
/// libzmq; one whose publisher inverts but that does not also drops it all.
#[test]
fn invert_matching_on_one_side_only_delivers_nothing() {
    let mut c = Cluster::new(23);
    let publ = c.add_default(Pub);
    let ep = c.bind(publ, ANY);
    let sub = c.add(Sub, opts(|o| o.invert_matching = true));
    c.socket(sub).subscribe(b"a");
    c.connect(sub, &ep);
    c.run_until_idle();
    c.send(publ, m(&["a1"])).unwrap();
    c.send(publ, m(&["b1"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), Vec::<String>::new());
    set_invert(&mut c, publ, true);
    set_invert(&mut c, sub, false);
    c.send(publ, m(&["a2"])).unwrap();
    c.send(publ, m(&["b2"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), Vec::<String>::new());
    set_invert(&mut c, sub, true);
    c.send(publ, m(&["a3"])).unwrap();
    c.send(publ, m(&["b3"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["b3"]);
}

#[test]
fn router_drops_or_fails_per_router_mandatory() {
    let mut c = Cluster::new(21);
    let router = c.add(Router, opts(|o| o.sndhwm = 2));
    let ep = c.bind(router, ANY);
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "d".into()));
    c.connect(dealer, &ep);
    c.run_until_idle();
    use Sent::{Dropped, Queued};
    let results: Vec<Sent> = (0..4)
        .map(|i| c.send(router, m(&["d", &i.to_string()])).unwrap())
        .collect();
    assert_eq!(results, [Queued, Queued, Dropped, Dropped]);
    assert_eq!(c.send(router, m(&["nobody", "x"])), Ok(Dropped));
    // A routing id alone is not a message.
    assert_eq!(c.send(router, m(&["d"])), Ok(Dropped));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["0", "1"]);

    let mut o = c.socket(router).options().clone();
    o.router_mandatory = true;
    c.socket(router).set_options(o).unwrap();
    match c.send(router, m(&["nobody", "x"])) {
        Err(SendError::HostUnreachable(back)) => assert_eq!(text(&back), "nobody|x"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.send(router, m(&["d", "a"])), Ok(Queued));
    assert_eq!(c.send(router, m(&["d", "b"])), Ok(Queued));
    match c.send(router, m(&["d", "c"])) {
        Err(SendError::WouldBlock(back)) => assert_eq!(text(&back), "d|c"),
        other => panic!("{other:?}"),
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["a", "b"]);
    assert_eq!(c.send(router, m(&["d", "c"])), Ok(Queued));
}

// ----- REQ / REP ------------------------------------------------------------------------

#[test]
fn req_rep_envelopes_through_a_router_dealer_proxy() {
    let mut c = Cluster::new(30);
    let front = c.add_default(Router);
    let back = c.add_default(Dealer);
    let fe = c.bind(front, ANY);
    let be = c.bind(back, ANY);
    let rep = c.add_default(Rep);
    c.connect(rep, &be);
    let reqs: Vec<Node> = (0..2).map(|_| c.add_default(Req)).collect();
    for &r in &reqs {
        c.connect(r, &fe);
    }
    c.run_until_idle();
    for (k, &r) in reqs.iter().enumerate() {
        c.send(r, m(&[&format!("hello {k}")])).unwrap();
    }
    c.run_until_idle();
    let mut ids = Vec::new();
    for _ in 0..2 {
        // The proxy moves the request from the frontend to the backend...
        let request = c.recv(front).expect("a request at the frontend");
        let f = frames(&request);
        assert_eq!(f.len(), 3, "[id, delimiter, body]: {f:?}");
        assert_eq!(f[0].len(), 5, "a generated id: 00 + u32");
        assert_eq!(f[0][0], 0);
        assert!(f[1].is_empty());
        ids.push(f[0].clone());
        c.send(back, request).unwrap();
        c.run_until_idle();
        // ...REP sees only the body...
        let body = c.recv(rep).expect("the request at REP");
        assert_eq!(body.len(), 1);
        let answer = text(&body).replace("hello", "world");
        c.send(rep, m(&[&answer])).unwrap();
        c.run_until_idle();
        // ...and the reply comes back with the envelope it left with.
        let reply = c.recv(back).expect("the reply at the backend");
        assert_eq!(frames(&reply)[..2], f[..2]);
        assert_eq!(frames(&reply)[2], answer.as_bytes());
        c.send(front, reply).unwrap();
        c.run_until_idle();
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(recv_texts(&mut c, reqs[0]), ["world 0"]);
    assert_eq!(recv_texts(&mut c, reqs[1]), ["world 1"]);
}

#[test]
fn rep_answers_multi_hop_envelopes() {
    let mut c = Cluster::new(31);
    let rep = c.add_default(Rep);
    let ep = c.bind(rep, ANY);
    let dealer = c.add_default(Dealer);
    c.connect(dealer, &ep);
    c.run_until_idle();
    // Without a delimiter a request is discarded.
    c.send(dealer, m(&["no delimiter"])).unwrap();
    c.send(dealer, m(&["hop1", "hop2", "", "question"]))
        .unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, rep), ["question"]);
    c.send(rep, m(&["answer"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["hop1|hop2||answer"]);
}

#[test]
fn req_alternates_strictly_and_rep_must_receive_first() {
    let mut c = Cluster::new(32);
    let rep = c.add_default(Rep);
    let ep = c.bind(rep, ANY);
    let req = c.add_default(Req);
    c.connect(req, &ep);
    c.run_until_idle();
    assert!(matches!(
        c.send(rep, m(&["early"])),
        Err(SendError::InvalidState(_))
    ));
    assert_eq!(c.recv(req), None);
    c.send(req, m(&["1"])).unwrap();
    match c.send(req, m(&["2"])) {
        Err(SendError::InvalidState(back)) => assert_eq!(text(&back), "2"),
        other => panic!("{other:?}"),
    }
    assert!(!c.socket(req).can_send());
    c.run_until_idle();
    assert_eq!(c.recv(rep).map(|m| text(&m)), Some("1".into()));
    assert_eq!(c.recv(rep), None, "REP must reply before the next request");
    c.send(rep, m(&["r1"])).unwrap();
    assert!(matches!(
        c.send(rep, m(&["r2"])),
        Err(SendError::InvalidState(_))
    ));
    c.run_until_idle();
    assert!(c.socket(req).can_recv());
    assert_eq!(c.recv(req).map(|m| text(&m)), Some("r1".into()));
    assert_eq!(c.send(req, m(&["3"])), Ok(Sent::Queued));
}

#[test]
fn req_discards_messages_that_arrived_before_its_request() {
    let mut c = Cluster::new(33);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let req = c.add(Req, opts(|o| o.routing_id = "req".into()));
    c.connect(req, &ep);
    c.run_until_idle();
    // Unsolicited, well-formed: it must not pass for the reply to the next request.
    c.send(router, m(&["req", "", "stale"])).unwrap();
    c.run_until_idle();
    assert_eq!(c.recv(req), None);
    c.send(req, m(&["q"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["req||q"]);
    c.send(router, m(&["req", "", "fresh"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, req), ["fresh"]);
}

#[test]
fn req_ignores_replies_without_a_delimiter() {
    let mut c = Cluster::new(37);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let req = c.add(Req, opts(|o| o.routing_id = "req".into()));
    c.connect(req, &ep);
    c.run_until_idle();
    c.send(req, m(&["q"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["req||q"]);
    c.send(router, m(&["req", "no delimiter"])).unwrap();
    c.send(router, m(&["req", "", "with delimiter"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, req), ["with delimiter"]);
}

#[test]
fn req_correlate_accepts_only_the_matching_reply() {
    let mut c = Cluster::new(34);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let req = c.add(
        Req,
        opts(|o| {
            o.routing_id = "r".into();
            o.req_correlate = true;
        }),
    );
    c.connect(req, &ep);
    c.run_until_idle();
    c.send(req, m(&["a"])).unwrap();
    c.run_until_idle();
    let f = frames(&c.recv(router).unwrap());
    assert_eq!(f.len(), 4, "[id, request id, delimiter, body]");
    assert_eq!(
        (&f[0][..], f[1].len(), &f[2][..], &f[3][..]),
        (&b"r"[..], 4, &b""[..], &b"a"[..])
    );
    let id_a = u32::from_ne_bytes(f[1].clone().try_into().unwrap());
    let wrong = id_a.wrapping_add(7).to_ne_bytes();
    c.send(router, msg(&[b"r", &wrong, b"", b"bad"])).unwrap();
    c.send(router, msg(&[b"r", &id_a.to_ne_bytes(), b"", b"good"]))
        .unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, req), ["good"]);
    c.send(req, m(&["b"])).unwrap();
    c.run_until_idle();
    let f = frames(&c.recv(router).unwrap());
    let id_b = u32::from_ne_bytes(f[1].clone().try_into().unwrap());
    assert_eq!(
        id_b,
        id_a.wrapping_add(1),
        "one more per request, host byte order"
    );
}

#[test]
fn req_relaxed_allows_a_new_request_and_voids_earlier_replies() {
    let mut c = Cluster::new(35);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let req = c.add(
        Req,
        opts(|o| {
            o.routing_id = "r".into();
            o.req_correlate = true;
            o.req_relaxed = true;
        }),
    );
    c.connect(req, &ep);
    c.run_until_idle();
    c.send(req, m(&["a"])).unwrap();
    c.send(req, m(&["b"])).unwrap();
    c.run_until_idle();
    let requests = c.recv_all(router);
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let mut f = frames(r);
        let body = f.pop().unwrap();
        f.push(format!("reply to {}", String::from_utf8_lossy(&body)).into_bytes());
        let parts: Vec<&[u8]> = f.iter().map(|x| &x[..]).collect();
        c.send(router, msg(&parts)).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, req), ["reply to b"]);
}

// ----- ROUTER identities ----------------------------------------------------------------

#[test]
fn router_names_peers_by_identity_or_a_generated_id() {
    let mut c = Cluster::new(40);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let alice = c.add(Dealer, opts(|o| o.routing_id = "alice".into()));
    let anon: Vec<Node> = (0..2).map(|_| c.add_default(Dealer)).collect();
    for &d in [alice].iter().chain(&anon) {
        c.connect(d, &ep);
        c.run_until_idle();
        c.send(d, m(&["hi"])).unwrap();
        c.run_until_idle();
    }
    let got: Vec<Vec<Vec<u8>>> = c.recv_all(router).iter().map(frames).collect();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], [b"alice".to_vec(), b"hi".to_vec()]);
    let ids: Vec<Vec<u8>> = got[1..].iter().map(|f| f[0].clone()).collect();
    for id in &ids {
        assert_eq!((id.len(), id[0]), (5, 0), "00 + u32: {id:?}");
    }
    let n = |id: &[u8]| u32::from_be_bytes(id[1..5].try_into().unwrap());
    assert_eq!(n(&ids[1]), n(&ids[0]).wrapping_add(1));
    // Replies reach the right peer.
    for (id, &d) in ids.iter().zip(&anon) {
        c.send(router, msg(&[id, format!("{d:?}").as_bytes()]))
            .unwrap();
    }
    c.send(router, m(&["alice", "for alice"])).unwrap();
    c.run_until_idle();
    for &d in &anon {
        assert_eq!(recv_texts(&mut c, d), [format!("{d:?}")]);
    }
    assert_eq!(recv_texts(&mut c, alice), ["for alice"]);
}

#[test]
fn connect_routing_id_names_the_outgoing_peer() {
    let mut c = Cluster::new(41);
    let server = c.add(Dealer, opts(|o| o.routing_id = "announced".into()));
    let ep = c.bind(server, ANY);
    let router = c.add(Router, opts(|o| o.connect_routing_id = Some("srv".into())));
    c.connect(router, &ep);
    assert_eq!(
        c.socket(router).options().connect_routing_id,
        None,
        "used by one connect"
    );
    c.run_until_idle();
    assert_eq!(c.send(router, m(&["srv", "hi"])), Ok(Sent::Queued));
    assert_eq!(c.send(router, m(&["announced", "x"])), Ok(Sent::Dropped));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, server), ["hi"]);
    c.send(server, m(&["back"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["srv|back"]);
}

#[test]
fn a_connect_routing_id_is_routable_from_the_connect_on_and_through_reconnects() {
    // libzmq names the connect pipe at zmq_connect: a message sent at once waits for the
    // connection (test_connect_rid), and the pipe, with its name, outlives reconnections.
    const HELD: &str = "tcp://127.0.0.1:7000";
    let mut c = Cluster::new(43);
    c.hold_connects_to(HELD);
    let router = c.add(
        Router,
        opts(|o| {
            o.connect_routing_id = Some("srv".into());
            o.router_mandatory = true;
        }),
    );
    c.connect(router, HELD);
    assert!(c.socket(router).routes_to(b"srv"));
    assert_eq!(c.send(router, m(&["srv", "early"])), Ok(Sent::Queued));
    c.run_until_idle();
    let ep = c.take_held_connect(router).unwrap();
    let r = c.connect_remote(router, ep).unwrap();
    let mut peer = RawPeer::new(&c, r, Dealer);
    peer.exchange(&mut c);
    assert_eq!(peer.messages(), vec![vec![Bytes::from("early")]]);
    // The connection drops: still routable, and what is sent meanwhile waits.
    c.remote_reset(r);
    c.run_until_idle();
    assert!(c.socket(router).routes_to(b"srv"));
    assert_eq!(c.send(router, m(&["srv", "later"])), Ok(Sent::Queued));
    c.run_for(Duration::from_millis(200));
    let ep = c.take_held_connect(router).expect("reconnects");
    let r2 = c.connect_remote(router, ep).unwrap();
    let mut peer = RawPeer::new(&c, r2, Dealer);
    peer.exchange(&mut c);
    assert_eq!(peer.messages(), vec![vec![Bytes::from("later")]]);
}

#[test]
fn router_notify_keeps_the_order_of_a_connect_peers_connections() {
    // What the peer sent, its disconnect, then the reconnection: in that order, as
    // libzmq's engines write them to the one pipe.
    const HELD: &str = "tcp://127.0.0.1:7001";
    let mut c = Cluster::new(44);
    c.hold_connects_to(HELD);
    let router = c.add(
        Router,
        opts(|o| {
            o.connect_routing_id = Some("srv".into());
            o.router_notify = zmtp_proto::socket::RouterNotify {
                connect: true,
                disconnect: true,
            };
        }),
    );
    c.connect(router, HELD);
    c.run_until_idle();
    let ep = c.take_held_connect(router).unwrap();
    let r = c.connect_remote(router, ep).unwrap();
    let mut peer = RawPeer::new(&c, r, Dealer);
    peer.exchange(&mut c);
    assert!(peer.send_frames(&mut c, &[b"before"]));
    c.remote_reset(r);
    c.run_for(Duration::from_millis(200));
    let ep = c.take_held_connect(router).expect("reconnects");
    let r2 = c.connect_remote(router, ep).unwrap();
    RawPeer::new(&c, r2, Dealer).exchange(&mut c);
    assert_eq!(
        recv_texts(&mut c, router),
        ["srv|", "srv|before", "srv|", "srv|"]
    );
}

#[test]
fn duplicate_identity_without_handover_is_never_routed() {
    let mut c = Cluster::new(42);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let first = c.add(Dealer, opts(|o| o.routing_id = "dup".into()));
    let second = c.add(Dealer, opts(|o| o.routing_id = "dup".into()));
    c.connect(first, &ep);
    c.run_until_idle();
    c.connect(second, &ep);
    c.run_until_idle();
    // The second connection stays open...
    assert_eq!(c.links_between(router, second), 1);
    c.send(second, m(&["from second"])).unwrap();
    c.send(first, m(&["from first"])).unwrap();
    for i in 0..3 {
        c.send(router, m(&["dup", &i.to_string()])).unwrap();
    }
    c.run_until_idle();
    // ...but is never routed to or from.
    assert_eq!(recv_texts(&mut c, router), ["dup|from first"]);
    assert_eq!(recv_texts(&mut c, first), ["0", "1", "2"]);
    assert_eq!(recv_texts(&mut c, second), Vec::<String>::new());
    assert_eq!(c.links_between(router, first), 1);
}

#[test]
fn router_handover_closes_the_old_peer() {
    let mut c = Cluster::new(43);
    let router = c.add(Router, opts(|o| o.router_handover = true));
    c.monitor_all(router);
    let ep = c.bind(router, ANY);
    // The old peer does not reconnect, so that the test sees one handover.
    let old = c.add(
        Dealer,
        opts(|o| {
            o.routing_id = "dup".into();
            o.reconnect_ivl = None;
        }),
    );
    let new = c.add(Dealer, opts(|o| o.routing_id = "dup".into()));
    c.connect(old, &ep);
    c.run_until_idle();
    let old_peer = c.peer_between(router, old).unwrap();
    c.take_monitor(router);
    c.connect(new, &ep);
    c.run_until_idle();
    assert_eq!(c.links_between(router, old), 0, "the old peer is closed");
    assert_eq!(c.links_between(router, new), 1);
    assert!(c.member(router).closed_peers.contains(&old_peer));
    assert!(c
        .monitor_kinds(router)
        .contains(&MonitorEventKind::Disconnected));
    c.send(router, m(&["dup", "to new"])).unwrap();
    c.send(new, m(&["from new"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, new), ["to new"]);
    assert_eq!(recv_texts(&mut c, old), Vec::<String>::new());
    assert_eq!(recv_texts(&mut c, router), ["dup|from new"]);
}

#[test]
fn probe_router_sends_an_empty_message_on_connect() {
    let mut c = Cluster::new(44);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    for (ty, id) in [(Dealer, "dealer"), (Req, "req")] {
        let s = c.add(
            ty,
            opts(|o| {
                o.probe_router = true;
                o.routing_id = id.into();
            }),
        );
        c.connect(s, &ep);
        c.run_until_idle();
        let got: Vec<Vec<Vec<u8>>> = c.recv_all(router).iter().map(frames).collect();
        assert_eq!(got, [[id.as_bytes().to_vec(), vec![]]], "{ty:?}");
    }
    // A probing ROUTER sends the probe to the peers it connects to.
    let server = c.add_default(Dealer);
    let ep = c.bind(server, ANY);
    let prober = c.add(Router, opts(|o| o.probe_router = true));
    c.connect(prober, &ep);
    c.run_until_idle();
    let got: Vec<Vec<Vec<u8>>> = c.recv_all(server).iter().map(frames).collect();
    assert_eq!(got, [[Vec::<u8>::new()]]);
}

// ----- publish / subscribe --------------------------------------------------------------

#[test]
fn sub_subscriptions_are_reference_counted() {
    let mut c = Cluster::new(50);
    let publ = c.add_default(Pub);
    let ep = c.bind(publ, ANY);
    let sub = c.add_default(Sub);
    c.connect(sub, &ep);
    assert!(c.socket(sub).subscribe(b"A"));
    assert!(c.socket(sub).subscribe(b"A"));
    c.run_until_idle();
    c.send(publ, m(&["A1"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["A1"]);
    assert!(c.socket(sub).unsubscribe(b"A"));
    c.run_until_idle();
    assert_eq!(
        c.send(publ, m(&["A2"])),
        Ok(Sent::Queued),
        "still subscribed once"
    );
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), ["A2"]);
    assert!(c.socket(sub).unsubscribe(b"A"));
    c.run_until_idle();
    assert_eq!(
        c.send(publ, m(&["A3"])),
        Ok(Sent::Dropped),
        "no subscriber left"
    );
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), Vec::<String>::new());
    assert!(!c.socket(sub).unsubscribe(b"A"), "not subscribed any more");
    assert!(!c.socket(publ).subscribe(b"A"), "PUB does not subscribe");
}

#[test]
fn subscriptions_match_prefixes_of_the_first_frame() {
    // (subscriptions, topic sent, received?)
    let table: &[(&[&str], &str, bool)] = &[
        (&[""], "anything", true),
        (&[""], "", true),
        (&["ab"], "abc", true),
        (&["ab"], "ab", true),
        (&["ab"], "a", false),
        (&["ab"], "xab", false),
        (&["ab", "x"], "xyz", true),
        (&["abc"], "ab", false),
    ];
    let mut c = Cluster::new(51);
    let publ = c.add_default(Pub);
    let ep = c.bind(publ, ANY);
    for (subs, topic, expected) in table {
        let sub = c.add_default(Sub);
        for s in subs.iter() {
            c.socket(sub).subscribe(s.as_bytes());
        }
        c.connect(sub, &ep);
        c.run_until_idle();
        c.send(publ, m(&[topic, "body"])).unwrap();
        c.run_until_idle();
        let got = recv_texts(&mut c, sub);
        let want: Vec<String> = if *expected {
            vec![format!("{topic}|body")]
        } else {
            vec![]
        };
        assert_eq!(got, want, "subscriptions {subs:?}, topic {topic:?}");
        c.kill(sub);
        c.run_until_idle();
    }
}

fn xpub_with_subscribers(
    c: &mut Cluster,
    o: Options,
    subs: &[&[&str]],
) -> (Node, String, Vec<Node>) {
    let xpub = c.add(XPub, o);
    let ep = c.bind(xpub, ANY);
    let nodes = subs
        .iter()
        .map(|topics| {
            let s = c.add_default(Sub);
            c.connect(s, &ep);
            c.run_until_idle();
            for t in topics.iter() {
                c.socket(s).subscribe(t.as_bytes());
                c.run_until_idle();
            }
            s
        })
        .collect();
    (xpub, ep, nodes)
}

#[test]
fn xpub_passes_first_subscribe_and_last_cancel() {
    let mut c = Cluster::new(52);
    let (xpub, _, subs) = xpub_with_subscribers(&mut c, Options::default(), &[&["t"], &["t"]]);
    assert_eq!(recv_texts(&mut c, xpub), ["\x01t"]);
    c.socket(subs[0]).unsubscribe(b"t");
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), Vec::<String>::new());
    c.socket(subs[1]).unsubscribe(b"t");
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["\x00t"]);
}

#[test]
fn xpub_verbose_and_verboser() {
    // (verbose, verboser, subscriptions seen, cancels seen)
    for (verbose, verboser, subs_seen, cancels_seen) in [
        (false, false, 1, 1),
        (true, false, 3, 1),
        (true, true, 3, 2),
    ] {
        let mut c = Cluster::new(53);
        let o = opts(|o| {
            o.xpub_verbose = verbose;
            o.xpub_verboser = verboser;
        });
        // The first SUB subscribes twice: verbose passes the repeat too.
        let (xpub, _, subs) = xpub_with_subscribers(&mut c, o, &[&["t", "t"], &["t"]]);
        let got = recv_texts(&mut c, xpub);
        assert_eq!(got, vec!["\x01t"; subs_seen], "verbose={verbose}");
        // The SUB sends one CANCEL for its two subscriptions (on the second unsubscribe).
        for &s in &subs {
            while c.socket(s).unsubscribe(b"t") {}
            c.run_until_idle();
        }
        let got = recv_texts(&mut c, xpub);
        assert_eq!(got, vec!["\x00t"; cancels_seen], "verboser={verboser}");
    }
}

#[test]
fn xpub_generates_cancels_when_a_subscriber_leaves() {
    let mut c = Cluster::new(54);
    let (xpub, _, subs) = xpub_with_subscribers(&mut c, Options::default(), &[&["a", "b"], &["b"]]);
    let mut got = recv_texts(&mut c, xpub);
    got.sort();
    assert_eq!(got, ["\x01a", "\x01b"]);
    c.kill(subs[0]);
    c.run_until_idle();
    assert_eq!(
        recv_texts(&mut c, xpub),
        ["\x00a"],
        "b still has a subscriber"
    );
    // Messages keep flowing to the remaining subscriber, and only what it subscribed to.
    assert_eq!(c.send(xpub, m(&["a1"])), Ok(Sent::Dropped));
    assert_eq!(c.send(xpub, m(&["b1"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, subs[1]), ["b1"]);
    c.kill(subs[1]);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["\x00b"]);
}

#[test]
fn xpub_welcome_message_goes_to_each_new_subscriber_and_is_filtered() {
    let mut c = Cluster::new(55);
    let xpub = c.add(XPub, opts(|o| o.xpub_welcome_msg = Some("W".into())));
    let ep = c.bind(xpub, ANY);
    let welcomed = c.add_default(Sub);
    c.socket(welcomed).subscribe(b"W");
    let other = c.add_default(Sub);
    c.socket(other).subscribe(b"x");
    for s in [welcomed, other] {
        c.connect(s, &ep);
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, welcomed), ["W"]);
    assert_eq!(recv_texts(&mut c, other), Vec::<String>::new());
}

#[test]
fn xpub_nodrop_blocks_instead_of_dropping() {
    let mut c = Cluster::new(56);
    let o = opts(|o| {
        o.sndhwm = 2;
        o.xpub_nodrop = true;
    });
    let (xpub, _, subs) = xpub_with_subscribers(&mut c, o, &[&["t"]]);
    c.recv_all(xpub);
    assert_eq!(c.send(xpub, m(&["t1"])), Ok(Sent::Queued));
    assert_eq!(c.send(xpub, m(&["t2"])), Ok(Sent::Queued));
    match c.send(xpub, m(&["t3"])) {
        Err(SendError::WouldBlock(back)) => assert_eq!(text(&back), "t3"),
        other => panic!("{other:?}"),
    }
    // A topic nobody takes is still dropped, not blocked.
    assert_eq!(c.send(xpub, m(&["u"])), Ok(Sent::Dropped));
    c.run_until_idle();
    assert_eq!(c.send(xpub, m(&["t3"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, subs[0]), ["t1", "t2", "t3"]);
}

#[test]
fn xsub_sends_subscriptions_and_data_upstream() {
    let mut c = Cluster::new(57);
    let xpub = c.add_default(XPub);
    let ep = c.bind(xpub, ANY);
    let xsub = c.add_default(XSub);
    c.connect(xsub, &ep);
    c.run_until_idle();
    assert_eq!(c.send(xsub, msg(&[b"\x01topic"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["\x01topic"]);
    c.send(xpub, m(&["topic.1"])).unwrap();
    c.send(xpub, m(&["other"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xsub), ["topic.1"]);
    // Anything else an XSUB sends reaches the XPUB application as data.
    c.send(xsub, m(&["hello", "upstream"])).unwrap();
    c.send(xsub, msg(&[b"\x00topic"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["hello|upstream", "\x00topic"]);
    assert_eq!(c.send(xpub, m(&["topic.2"])), Ok(Sent::Dropped));

    // A plain PUB filters on what an XSUB subscribed to.
    let publ = c.add_default(Pub);
    let ep = c.bind(publ, ANY);
    let xsub = c.add_default(XSub);
    c.send(xsub, msg(&[b"\x01x"])).unwrap();
    c.connect(xsub, &ep);
    c.run_until_idle();
    for t in ["x1", "y1", "x2"] {
        c.send(publ, m(&[t])).unwrap();
    }
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xsub), ["x1", "x2"]);
}

// ----- PAIR, IMMEDIATE, CONFLATE, multipart ---------------------------------------------

#[test]
fn pair_refuses_a_second_peer() {
    let mut c = Cluster::new(60);
    let pair = c.add_default(Pair);
    let ep = c.bind(pair, ANY);
    let first = c.add_default(Pair);
    let second = c.add_default(Pair);
    c.connect(first, &ep);
    c.run_until_idle();
    c.connect(second, &ep);
    c.run_until_idle();
    assert_eq!(c.links_between(pair, first), 1);
    assert_eq!(
        c.links_between(pair, second),
        0,
        "the second peer is refused"
    );
    assert_eq!(c.member(pair).closed_peers.len(), 1);
    for i in 0..3 {
        c.send(pair, m(&[&i.to_string()])).unwrap();
    }
    c.send(second, m(&["intruder"])).unwrap();
    c.send(first, m(&["partner"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, first), ["0", "1", "2"]);
    assert_eq!(recv_texts(&mut c, pair), ["partner"]);
    assert_eq!(recv_texts(&mut c, second), Vec::<String>::new());
}

#[test]
fn immediate_decides_whether_messages_wait_for_the_connection() {
    let ep = "tcp://127.0.0.1:6100";
    for immediate in [false, true] {
        let mut c = Cluster::new(61);
        let push = c.add(Push, opts(|o| o.immediate = immediate));
        c.connect(push, ep);
        c.run_until_idle();
        let r = c.send(push, m(&["early"]));
        if immediate {
            assert!(is_would_block(&r), "no connection yet: {r:?}");
        } else {
            assert_eq!(r, Ok(Sent::Queued));
        }
        let pull = c.add_default(Pull);
        c.bind(pull, ep);
        c.run_for(Duration::from_millis(200));
        c.send(push, m(&["late"])).unwrap();
        c.run_until_idle();
        let want: &[&str] = if immediate {
            &["late"]
        } else {
            &["early", "late"]
        };
        assert_eq!(recv_texts(&mut c, pull), want, "immediate={immediate}");
    }
}

#[test]
fn conflate_keeps_only_the_last_message() {
    // (receiver, sender, receiver's RCVHWM): CONFLATE ignores the HWM.
    for (rx, tx, rcvhwm) in [
        (Pull, Push, 1000),
        (Sub, Pub, 1000),
        (Dealer, Dealer, 1000),
        (Pull, Push, 1),
    ] {
        let mut c = Cluster::new(62);
        let r = c.add(
            rx,
            opts(|o| {
                o.conflate = true;
                o.rcvhwm = rcvhwm;
            }),
        );
        let ep = c.bind(r, ANY);
        if rx == Sub {
            c.socket(r).subscribe(b"");
        }
        let s = c.add_default(tx);
        c.connect(s, &ep);
        c.run_until_idle();
        for i in 0..10 {
            c.send(s, m(&[&i.to_string()])).unwrap();
            c.run_until_idle();
        }
        assert_eq!(recv_texts(&mut c, r), ["9"], "{rx:?} rcvhwm={rcvhwm}");
        c.send(s, m(&["10"])).unwrap();
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, r), ["10"], "{rx:?} rcvhwm={rcvhwm}");
    }
}

#[test]
fn conflate_is_ignored_where_libzmq_ignores_it() {
    let mut c = Cluster::new(64);
    let r = c.add(Pair, opts(|o| o.conflate = true));
    let ep = c.bind(r, ANY);
    let s = c.add_default(Pair);
    c.connect(s, &ep);
    c.run_until_idle();
    for i in 0..3 {
        c.send(s, m(&[&i.to_string()])).unwrap();
        c.run_until_idle();
    }
    assert_eq!(recv_texts(&mut c, r), ["0", "1", "2"]);
}

#[test]
fn conflate_on_the_sending_side_keeps_only_the_last_message() {
    let mut c = Cluster::new(63);
    let ep = "tcp://127.0.0.1:6200";
    let push = c.add(Push, opts(|o| o.conflate = true));
    c.connect(push, ep);
    c.run_until_idle();
    for i in 0..5 {
        assert_eq!(c.send(push, m(&[&i.to_string()])), Ok(Sent::Queued));
    }
    let pull = c.add_default(Pull);
    c.bind(pull, ep);
    c.run_for(Duration::from_millis(200));
    assert_eq!(recv_texts(&mut c, pull), ["4"]);
}

#[test]
fn conflate_on_the_sending_side_stays_bounded_when_the_reader_stalls() {
    let mut c = Cluster::new(65);
    c.capacity = 4096;
    let pull = c.add(Pull, opts(|o| o.rcvhwm = 1));
    let ep = c.bind(pull, ANY);
    let push = c.add(Push, opts(|o| o.conflate = true));
    c.connect(push, &ep);
    c.run_until_idle();
    let peer = c.peer_between(push, pull).unwrap();
    for i in 0..200u8 {
        let mut body = vec![b'.'; 1024];
        body[0] = i;
        assert_eq!(c.send(push, Message::from(body)), Ok(Sent::Queued));
        c.run_until_idle();
        let stats = c.peer_stats(push, peer).unwrap();
        // One message being written, one waiting (replaced by each newer one).
        assert!(stats.queued_out <= 2, "{stats:?}");
        assert!(stats.unsent_bytes <= 2 * (1024 + 9), "{stats:?}");
    }
    let mut got = Vec::new();
    loop {
        c.run_until_idle();
        let batch = c.recv_all(pull);
        if batch.is_empty() {
            break;
        }
        got.extend(batch.iter().map(|m| m.first().unwrap()[0]));
    }
    assert!(got.len() < 20, "{got:?}");
    assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
    assert_eq!(got.last(), Some(&199), "the newest arrives");
}

#[test]
fn multipart_messages_arrive_whole() {
    let mut c = Cluster::new(64);
    c.capacity = 16 * 1024;
    let pull = c.add(Pull, opts(|o| o.rcvhwm = 2));
    let ep = c.bind(pull, ANY);
    let push = c.add(Push, opts(|o| o.sndhwm = 4));
    c.connect(push, &ep);
    c.run_until_idle();
    let big = vec![0x5A; 100_000];
    let expected: Vec<Vec<Vec<u8>>> = (0..12u8)
        .map(|i| match i % 3 {
            0 => vec![vec![i], big.clone(), vec![], vec![i; 3]],
            1 => vec![vec![i]],
            _ => vec![vec![i], vec![i; 7000]],
        })
        .collect();
    let mut got = Vec::new();
    let mut pending: std::collections::VecDeque<_> = expected.iter().cloned().collect();
    while got.len() < expected.len() {
        // Send what the HWM allows; a refused message is refused whole.
        while let Some(parts) = pending.front() {
            let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
            match c.send(push, msg(&refs)) {
                Ok(Sent::Queued) => {
                    pending.pop_front();
                }
                Err(SendError::WouldBlock(back)) => {
                    assert_eq!(frames(&back), *parts);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        c.run_until_idle();
        // Read one message at a time: the reader holds at most RCVHWM complete messages.
        if let Some(msg) = c.recv(pull) {
            got.push(frames(&msg));
        }
        let stats = c
            .peer_stats(pull, c.peer_between(pull, push).unwrap())
            .unwrap();
        assert!(stats.queued_in <= 2, "{stats:?}");
    }
    assert_eq!(got, expected);
}

#[test]
fn req_survives_a_peer_failing_while_its_queue_is_drained() {
    let mut c = Cluster::new(36);
    let routers: Vec<Node> = (0..3).map(|_| c.add_default(Router)).collect();
    let req = c.add(
        Req,
        opts(|o| {
            o.rcvhwm = 1;
            o.routing_id = "q".into();
        }),
    );
    for &r in &routers {
        let ep = c.bind(r, ANY);
        c.connect(req, &ep);
    }
    c.run_until_idle();
    // The request goes to the first ROUTER (IMMEDIATE=0 peers attach in connect order).
    c.send(req, m(&["question"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, routers[0]), ["q||question"]);
    // The second peer sends two unsolicited messages, then a frame with reserved flags.
    // With RCVHWM 1 the rest stays buffered until the first message is taken.
    let peer = c.peer_between(req, routers[1]).unwrap();
    let now = c.now();
    let bytes = [0x01, 0, 0x00, 1, b'x', 0x01, 0, 0x00, 1, b'y', 0x80, 0];
    c.socket(req).handle_received(peer, now, &bytes);
    assert_eq!(c.socket(req).peer_stats(peer).unwrap().queued_in, 1);
    // Taking the reply drains the other peers, which runs into the bad frame.
    assert_eq!(c.recv(req), None);
    c.run_until_idle();
    assert!(
        c.socket(req).peer_stats(peer).is_none(),
        "the bad peer is dropped"
    );
    c.send(routers[0], m(&["q", "", "answer"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, req), ["answer"]);
}

#[test]
fn router_notify_announces_peers_coming_and_going() {
    use zmtp_proto::socket::RouterNotify;
    for notify in [
        RouterNotify::NONE,
        RouterNotify::CONNECT,
        RouterNotify::DISCONNECT,
        RouterNotify::BOTH,
    ] {
        let mut c = Cluster::new(46);
        let router = c.add(Router, opts(|o| o.router_notify = notify));
        let ep = c.bind(router, ANY);
        let dealer = c.add(Dealer, opts(|o| o.routing_id = "X".into()));
        c.connect(dealer, &ep);
        c.run_until_idle();
        let arrival: &[&str] = if notify.connect { &["X|"] } else { &[] };
        assert_eq!(recv_texts(&mut c, router), arrival, "{notify:?}");
        c.send(dealer, m(&["Hello"])).unwrap();
        c.run_until_idle();
        // The peer closes its side after one more message: it comes before the notice.
        c.send(dealer, m(&["last"])).unwrap();
        let now = c.now();
        c.socket(dealer).close(now);
        c.run_until_idle();
        let mut expected = vec!["X|Hello", "X|last"];
        if notify.disconnect {
            expected.push("X|");
        }
        assert_eq!(recv_texts(&mut c, router), expected, "{notify:?}");
    }
}

#[test]
fn router_notify_is_silent_for_failed_handshakes_and_our_own_drops() {
    let mut c = Cluster::new(47);
    let router = c.add(
        Router,
        opts(|o| o.router_notify = zmtp_proto::socket::RouterNotify::BOTH),
    );
    let ep = c.bind(router, ANY);
    // A peer that never completes its handshake: no arrival, no departure.
    let stranger = c.add_default(Dealer);
    c.silence(stranger);
    c.connect(stranger, &ep);
    c.run_until_idle();
    let peer = c.peer_between(router, stranger).unwrap();
    let now = c.now();
    c.socket(router).handle_received(peer, now, &[0u8; 10]);
    c.run_until_idle();
    assert_eq!(c.links_between(router, stranger), 0);
    assert_eq!(recv_texts(&mut c, router), Vec::<String>::new());
    // A peer whose connection we close by unbinding: its arrival only.
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "D".into()));
    c.connect(dealer, &ep);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["D|"]);
    let now = c.now();
    assert!(c.socket(router).unbind(&ep, now));
    c.run_until_idle();
    assert_eq!(c.links_between(router, dealer), 0);
    assert_eq!(recv_texts(&mut c, router), Vec::<String>::new());
}

/// libzmq's test_error_during_multipart: a peer that fails in the middle of a message
/// loses that message, and the notice comes alone.
#[test]
fn router_notify_drops_the_unfinished_message_of_a_failed_peer() {
    let mut c = Cluster::new(48);
    let router = c.add(
        Router,
        opts(|o| {
            o.router_notify = zmtp_proto::socket::RouterNotify::DISCONNECT;
            o.maxmsgsize = Some(64);
        }),
    );
    let ep = c.bind(router, ANY);
    let dealer = c.add(
        Dealer,
        opts(|o| {
            o.routing_id = "X".into();
            o.reconnect_ivl = None;
        }),
    );
    c.connect(dealer, &ep);
    c.run_until_idle();
    c.send(dealer, m(&["Hello2", &"*".repeat(127)])).unwrap();
    c.run_until_idle();
    assert_eq!(c.links_between(router, dealer), 0);
    assert_eq!(recv_texts(&mut c, router), ["X|"]);
}

#[test]
fn router_delivers_the_last_message_of_a_peer_that_fails_behind_it() {
    let mut c = Cluster::new(45);
    let router = c.add(Router, opts(|o| o.rcvhwm = 1));
    let ep = c.bind(router, ANY);
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "d".into()));
    c.connect(dealer, &ep);
    c.run_until_idle();
    let peer = c.peer_between(router, dealer).unwrap();
    let now = c.now();
    // Two messages, then a frame with reserved flags, all read at once.
    let bytes = [0x00, 1, b'x', 0x00, 1, b'y', 0x80, 0];
    c.socket(router).handle_received(peer, now, &bytes);
    assert_eq!(c.recv(router).map(|m| text(&m)), Some("d|x".into()));
    // Taking "x" resumed the input: "y" was queued, then the bad frame ended the peer.
    assert_eq!(c.recv(router).map(|m| text(&m)), Some("d|y".into()));
    assert_eq!(c.recv(router), None);
}

#[test]
fn input_held_at_rcvhwm_resumes_at_half_with_an_event() {
    let mut c = Cluster::new(65);
    let pull = c.add(Pull, opts(|o| o.rcvhwm = 4));
    let ep = c.bind(pull, ANY);
    let push = c.add(Push, opts(|o| o.sndhwm = 100));
    c.connect(push, &ep);
    c.run_until_idle();
    // Exactly RCVHWM messages: the queue is full and nothing else is buffered.
    for i in 0..4u8 {
        c.send(push, msg(&[&[i]])).unwrap();
    }
    c.run_until_idle();
    let peer = c.peer_between(pull, push).unwrap();
    assert!(!c.socket(pull).wants_read(peer), "held at RCVHWM");
    let resumes = |c: &mut Cluster| {
        let mut n = 0;
        while let Some(ev) = c.socket(pull).poll_command() {
            n += usize::from(ev == zmtp_proto::socket::Command::Resume { peer });
        }
        n
    };
    // Above half: still held, and no event.
    assert_eq!(c.recv(pull).map(|m| frames(&m)), Some(vec![vec![0]]));
    assert_eq!(resumes(&mut c), 0);
    assert!(!c.socket(pull).wants_read(peer));
    // Down to half: reading may go on, and the socket says so once.
    assert_eq!(c.recv(pull).map(|m| frames(&m)), Some(vec![vec![1]]));
    assert!(c.socket(pull).wants_read(peer));
    assert_eq!(resumes(&mut c), 1);
    assert_eq!(c.recv(pull).map(|m| frames(&m)), Some(vec![vec![2]]));
    assert_eq!(resumes(&mut c), 0, "one event per hold");
    // Many more than RCVHWM: everything arrives, in order, across holds and resumes.
    for i in 4..40u8 {
        c.send(push, msg(&[&[i]])).unwrap();
    }
    let mut got = vec![0u8, 1, 2];
    for _ in 0..1000 {
        c.run_until_idle();
        match c.recv(pull) {
            Some(m) => got.push(frames(&m)[0][0]),
            None if got.len() == 40 => break,
            None => {}
        }
    }
    assert_eq!(got, (0..40).collect::<Vec<u8>>());
}

#[test]
fn probe_router_counts_against_sndhwm_before_the_handshake() {
    // As in libzmq, where the probe is the first message in the pipe: with SNDHWM 2 a
    // probing DEALER queues one message of its own before it is connected, then the probe
    // and that message go out.
    let mut c = Cluster::new(66);
    let router = c.add_default(Router);
    let ep = c.bind(router, ANY);
    let dealer = c.add(
        Dealer,
        opts(|o| {
            o.probe_router = true;
            o.sndhwm = 2;
        }),
    );
    c.socket(dealer).connect(&ep).unwrap();
    assert_eq!(c.send(dealer, msg(&[b"one"])), Ok(Sent::Queued));
    assert!(matches!(
        c.send(dealer, msg(&[b"two"])),
        Err(SendError::WouldBlock(_))
    ));
    c.run_until_idle();
    let got: Vec<Vec<Vec<u8>>> = c.recv_all(router).iter().map(frames).collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0][1], b"", "the probe first");
    assert_eq!(got[1][1], b"one");
}

// ----- XPUB manual mode, verbose unsubscriptions, ONLY_FIRST_SUBSCRIBE -----------------

/// An XPUB with `o` bound, and an XSUB connected to it.
fn xpub_and_xsub(c: &mut Cluster, o: Options) -> (Node, Node) {
    let xpub = c.add(XPub, o);
    let ep = c.bind(xpub, ANY);
    let xsub = c.add_default(XSub);
    c.connect(xsub, &ep);
    c.run_until_idle();
    (xpub, xsub)
}

#[test]
fn xpub_manual_routes_by_the_applications_subscriptions_for_the_last_peer() {
    let mut c = Cluster::new(90);
    let (xpub, xsub) = xpub_and_xsub(&mut c, opts(|o| o.xpub_manual = true));
    assert!(c.socket(xpub).takes_subscriptions());
    assert_eq!(c.send(xsub, msg(&[b"\x01A"])), Ok(Sent::Queued));
    c.run_until_idle();
    // Passed up, but it routes nothing by itself.
    assert_eq!(recv_texts(&mut c, xpub), ["\x01A"]);
    assert_eq!(c.send(xpub, m(&["A"])), Ok(Sent::Dropped));
    // The application subscribes the peer it heard from to B instead.
    assert!(c.socket(xpub).subscribe(b"B"));
    assert_eq!(c.send(xpub, m(&["A"])), Ok(Sent::Dropped));
    assert_eq!(c.send(xpub, m(&["B"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xsub), ["B"]);
    // Its unsubscription is passed up too; the application's own UNSUBSCRIBE takes B away.
    assert_eq!(c.send(xsub, msg(&[b"\x00A"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["\x00A"]);
    assert!(c.socket(xpub).unsubscribe(b"B"));
    assert_eq!(c.send(xpub, m(&["B"])), Ok(Sent::Dropped));
}

#[test]
fn xpub_without_manual_mode_takes_no_subscriptions_of_its_own() {
    let mut c = Cluster::new(91);
    let (xpub, _) = xpub_and_xsub(&mut c, Options::default());
    assert!(!c.socket(xpub).takes_subscriptions());
    assert!(!c.socket(xpub).subscribe(b"B"));
}

#[test]
fn xpub_manual_passes_each_departed_peers_subscriptions_as_unsubscriptions() {
    let mut c = Cluster::new(92);
    let (xpub, _, subs) =
        xpub_with_subscribers(&mut c, opts(|o| o.xpub_manual = true), &[&["1"], &["1"]]);
    // Both subscriptions come up (manual mode passes every one), each confirmed.
    for _ in 0..2 {
        let now = c.now();
        let got = c.socket(xpub).recv(now).map(|m| text(&m));
        assert_eq!(got.as_deref(), Some("\x011"));
        assert!(c.socket(xpub).subscribe(b"1"));
    }
    assert_eq!(c.send(xpub, m(&["1x"])), Ok(Sent::Queued));
    c.run_until_idle();
    for &s in &subs {
        assert_eq!(recv_texts(&mut c, s), ["1x"]);
    }
    for &s in &subs {
        c.kill(s);
    }
    c.run_until_idle();
    // One unsubscription per peer, not only the last one of the topic.
    assert_eq!(recv_texts(&mut c, xpub), ["\x001", "\x001"]);
    // No peer is left to subscribe: the call does nothing.
    assert!(c.socket(xpub).subscribe(b"1"));
    assert_eq!(c.socket(xpub).topics_count(), 0);
}

#[test]
fn xpub_manual_last_value_sends_the_next_message_to_the_last_subscriber_only() {
    let mut c = Cluster::new(93);
    let o = opts(|o| o.xpub_manual_last_value = true);
    let (xpub, _, subs) = xpub_with_subscribers(&mut c, o, &[&["A"], &[]]);
    assert_eq!(recv_texts(&mut c, xpub), ["\x01A"]);
    assert!(c.socket(xpub).subscribe(b"A"));
    c.socket(subs[1]).subscribe(b"A");
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, xpub), ["\x01A"]);
    assert!(c.socket(xpub).subscribe(b"A"));
    // The first message after that subscription goes to its peer only; the next to both.
    assert_eq!(c.send(xpub, m(&["A1"])), Ok(Sent::Queued));
    assert_eq!(c.send(xpub, m(&["A2"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, subs[0]), ["A2"]);
    assert_eq!(recv_texts(&mut c, subs[1]), ["A1", "A2"]);
}

#[test]
fn xsub_verbose_unsubscribe_passes_every_cancel_and_xpub_passes_unknown_ones_up() {
    for verbose in [false, true] {
        let mut c = Cluster::new(94);
        let (xpub, xsub) = xpub_and_xsub(&mut c, opts(|o| o.xpub_verboser = true));
        c.socket(xsub)
            .set_options(opts(|o| o.xsub_verbose_unsubscribe = verbose))
            .unwrap();
        // A topic never subscribed: the XSUB filters it unless verbose; the XPUB passes
        // it up (libzmq does so for a topic the peer did not have).
        assert_eq!(c.send(xsub, msg(&[b"\x00A"])), Ok(Sent::Queued));
        c.run_until_idle();
        let none_or_one = if verbose { vec!["\x00A"] } else { vec![] };
        assert_eq!(recv_texts(&mut c, xpub), none_or_one, "verbose={verbose}");
        // Two equal subscriptions: VERBOSER alone passes both up.
        for _ in 0..2 {
            assert_eq!(c.send(xsub, msg(&[b"\x01A"])), Ok(Sent::Queued));
        }
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, xpub), ["\x01A", "\x01A"]);
        // The first cancel of two goes on only when verbose.
        assert_eq!(c.send(xsub, msg(&[b"\x00A"])), Ok(Sent::Queued));
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, xpub), none_or_one, "verbose={verbose}");
        assert_eq!(c.send(xsub, msg(&[b"\x00A"])), Ok(Sent::Queued));
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, xpub), ["\x00A"], "verbose={verbose}");
    }
}

#[test]
fn only_first_subscribe_keeps_the_later_frames_of_a_data_message_as_data() {
    for only_first in [false, true] {
        let mut c = Cluster::new(95);
        let o = opts(|o| o.only_first_subscribe = only_first);
        let (xpub, xsub) = xpub_and_xsub(&mut c, o);
        c.socket(xsub)
            .set_options(opts(|o| o.only_first_subscribe = only_first))
            .unwrap();
        let data = msg(&[b"ABC", b"\x01BC"]);
        assert_eq!(c.send(xsub, data), Ok(Sent::Queued));
        c.run_until_idle();
        let got: Vec<Vec<Vec<u8>>> = c.recv_all(xpub).iter().map(frames).collect();
        if only_first {
            assert_eq!(got, [vec![b"ABC".to_vec(), b"\x01BC".to_vec()]]);
            assert_eq!(c.socket(xpub).topics_count(), 0);
        } else {
            // The second frame is a subscription: passed up, and the data frame alone.
            assert_eq!(got, [vec![b"\x01BC".to_vec()], vec![b"ABC".to_vec()]]);
            assert_eq!(c.socket(xpub).topics_count(), 1);
        }
        // A message whose first frame is a subscription: every frame is one.
        let subs = msg(&[b"\x01CD", b"\x01DE"]);
        assert_eq!(c.send(xsub, subs), Ok(Sent::Queued));
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, xpub), ["\x01CD", "\x01DE"]);
    }
}
