//! The cluster's streams that end at the test: remote peers, held connects and deferred
//! authentication, each checked against what the socket does.

use std::time::Duration;

use zmtp_proto::codec::SIGNATURE_LEN;
use zmtp_proto::socket::AuthReply;
use zmtp_proto::{Bytes, SocketType};
use zmtp_testkit::cluster::{Cluster, RawPeer};
use zmtp_testkit::message::{opts, text};

const ADDR: &str = "tcp://127.0.0.1:5555";

#[test]
fn a_remote_peer_handshakes_and_its_message_is_received() {
    let mut c = Cluster::new(1);
    let pull = c.add_default(SocketType::Pull);
    c.bind(pull, ADDR);
    let r = c.accept_remote(ADDR).expect("a listener at the address");
    assert!(c.remote_open(r));
    assert_eq!(c.remote_peer(r).map(|(n, _)| n), Some(pull));

    let mut peer = RawPeer::new(&c, r, SocketType::Push);
    peer.exchange(&mut c);
    assert!(peer.conn.is_established());

    let mut out = vec![0u8; 64];
    let n = peer
        .conn
        .send_frame(b"hello", false, &mut out)
        .expect("send");
    assert!(c.remote_send(r, &out[..n]));
    let got = c.recv(pull).expect("the message");
    assert_eq!(text(&got), "hello");
    assert!(
        c.accept_remote("tcp://127.0.0.1:1").is_none(),
        "nobody listens"
    );
}

#[test]
fn remote_receive_takes_at_most_what_is_asked() {
    let mut c = Cluster::new(2);
    let push = c.add_default(SocketType::Push);
    c.bind(push, ADDR);
    let r = c.accept_remote(ADDR).expect("accepted");
    c.handle_events();
    // The 10-byte signature goes first, as libzmq sends it: taken 4 bytes at a time, it
    // comes as 4, 4 and 2.
    let mut sizes = Vec::new();
    let mut signature = Vec::new();
    loop {
        let chunk = c.remote_receive(r, 4);
        if chunk.is_empty() {
            break;
        }
        sizes.push(chunk.len());
        signature.extend_from_slice(&chunk);
    }
    assert_eq!(sizes, [4, 4, 2], "the rest waits for the peer's signature");
    assert_eq!(signature.len(), SIGNATURE_LEN - 1);
    assert_eq!(signature[0], 0xFF, "a greeting starts with 0xFF");
}

#[test]
fn a_reset_closes_the_stream_at_once() {
    let mut c = Cluster::new(3);
    let pull = c.add_default(SocketType::Pull);
    c.monitor_all(pull);
    c.bind(pull, ADDR);
    let r = c.accept_remote(ADDR).expect("accepted");
    let mut peer = RawPeer::new(&c, r, SocketType::Push);
    peer.exchange(&mut c);
    assert_eq!(c.socket(pull).peers().count(), 1);

    c.remote_reset(r);
    c.run_until_idle();
    assert!(!c.remote_open(r));
    assert_eq!(c.socket(pull).peers().count(), 0);
    assert!(
        !c.remote_send(r, b"late"),
        "nothing goes through a closed stream"
    );
    assert!(c.remote_receive(r, 0).is_empty());
}

#[test]
fn held_connects_wait_for_the_test_and_can_be_refused() {
    let mut c = Cluster::new(4);
    c.hold_connects_to("tcp://127.0.0.1:6000");
    let dealer = c.add(
        SocketType::Dealer,
        opts(|o| o.reconnect_ivl = Some(Duration::from_millis(100))),
    );
    c.connect(dealer, "tcp://127.0.0.1:6000");
    c.run_until_idle();
    assert_eq!(c.held_connects(dealer), 1);
    let ep = c.take_held_connect(dealer).expect("held");
    assert_eq!(c.held_connects(dealer), 0);
    assert!(c.take_held_connect(dealer).is_none(), "taken once");

    // Refused: the socket tries again after its reconnect interval.
    c.refuse_connect(dealer, ep);
    c.run_until_idle();
    assert!(
        c.take_held_connect(dealer).is_none(),
        "not before the interval"
    );
    c.run_for(Duration::from_millis(150));
    let again = c.take_held_connect(dealer).expect("a second attempt");
    assert_eq!(c.member(dealer).connect_attempts.len(), 2);

    // Completed: the stream is the test's.
    let r = c.connect_remote(dealer, again).expect("connected");
    let mut peer = RawPeer::new(&c, r, SocketType::Router);
    peer.exchange(&mut c);
    assert!(peer.conn.is_established());
}

#[test]
fn deferred_authentication_waits_for_an_answer() {
    let mut c = Cluster::new(5);
    let pull = c.add(
        SocketType::Pull,
        opts(|o| o.zap_domain = Bytes::from_static(b"test")),
    );
    c.members_mut(pull).defer_auth = true;
    c.bind(pull, ADDR);

    let r = c.accept_remote(ADDR).expect("accepted");
    let mut peer = RawPeer::new(&c, r, SocketType::Push);
    peer.exchange(&mut c);
    assert_eq!(c.member(pull).pending_auth.len(), 1);
    assert_eq!(c.member(pull).auth_requests.len(), 1);
    assert!(!peer.conn.is_established(), "no verdict yet");

    assert!(c.answer_auth(pull, AuthReply::status(200)));
    assert!(!c.answer_auth(pull, AuthReply::status(200)), "none left");
    peer.exchange(&mut c);
    assert!(peer.conn.is_established());

    // A request whose stream goes away goes with it.
    let r2 = c.accept_remote(ADDR).expect("accepted");
    let mut second = RawPeer::new(&c, r2, SocketType::Push);
    second.exchange(&mut c);
    assert_eq!(c.member(pull).pending_auth.len(), 1);
    c.remote_reset(r2);
    assert!(c.member(pull).pending_auth.is_empty());
}
