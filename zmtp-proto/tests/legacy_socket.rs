//! Sockets with ZMTP 1.0 and 2.0 peers the test plays byte by byte (the exchanges of the
//! project's ZMTP notes, 9.6): ids from the identity frame, subscriptions as messages, and
//! the subscribe-all libzmq's PUB gives an unversioned 1.0 peer.

use zmtp_proto::socket::Sent;
use zmtp_proto::SocketType::*;
use zmtp_testkit::cluster::Cluster;
use zmtp_testkit::message::{frames, msg, opts};

const ADDR: &str = "tcp://127.0.0.1:5555";

const SIGNATURE: &[u8] = b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f";

#[test]
fn router_takes_a_zmtp20_dealers_identity_as_its_id() {
    let mut c = Cluster::new(1);
    let s = c.add(Router, opts(|_| {}));
    c.bind(s, ADDR);
    let r = c.accept_remote(ADDR).unwrap();
    assert!(c.remote_send(r, SIGNATURE));
    assert!(c.remote_send(r, b"\x01\x05\x00\x04PYID\x01\x02AB\x00\x05hello"));
    c.run_until_idle();
    let m = c.recv(s).expect("the request");
    assert_eq!(
        frames(&m),
        [b"PYID".to_vec(), b"AB".to_vec(), b"hello".to_vec()]
    );
    assert_eq!(c.send(s, msg(&[b"PYID", b"world"])), Ok(Sent::Queued));
    let mut expected = SIGNATURE.to_vec();
    expected.extend_from_slice(b"\x03\x06\x00\x00\x00\x05world");
    assert_eq!(c.remote_written(r), expected);
}

#[test]
fn pub_sends_everything_to_an_unversioned_peer_and_only_subscribed_to_a_zmtp20_one() {
    let mut c = Cluster::new(2);
    let s = c.add(Pub, opts(|_| {}));
    c.bind(s, ADDR);
    // An unversioned 1.0 SUB: its identity frame, and no way to subscribe.
    let old = c.accept_remote(ADDR).unwrap();
    assert!(c.remote_send(old, b"\x01\x00"));
    // A 2.0 SUB subscribing to "news" with a message.
    let new = c.accept_remote(ADDR).unwrap();
    assert!(c.remote_send(new, SIGNATURE));
    assert!(c.remote_send(new, b"\x01\x02\x00\x00\x00\x05\x01news"));
    c.run_until_idle();
    c.remote_written(old);
    c.remote_written(new);
    for m in [&b"news 1"[..], b"sport 1"] {
        assert_eq!(c.send(s, msg(&[m])), Ok(Sent::Queued));
    }
    c.run_until_idle();
    assert_eq!(c.remote_written(old), b"\x07\x00news 1\x08\x00sport 1");
    assert_eq!(c.remote_written(new), b"\x00\x06news 1");
}

#[test]
fn rep_answers_a_revision0_req_in_v1_framing() {
    let mut c = Cluster::new(3);
    let s = c.add(Rep, opts(|_| {}));
    c.bind(s, ADDR);
    let r = c.accept_remote(ADDR).unwrap();
    assert!(c.remote_send(r, SIGNATURE));
    // Revision 0, type REQ, empty identity, then [empty][ping].
    assert!(c.remote_send(r, b"\x00\x03\x01\x00\x01\x01\x05\x00ping"));
    c.run_until_idle();
    let m = c.recv(s).expect("the request");
    assert_eq!(frames(&m), [b"ping".to_vec()]);
    assert_eq!(c.send(s, msg(&[b"pong"])), Ok(Sent::Queued));
    let mut expected = SIGNATURE.to_vec();
    expected.extend_from_slice(b"\x03\x04\x01\x00\x01\x01\x05\x00pong");
    assert_eq!(c.remote_written(r), expected);
}

#[test]
fn refused_when_asked_or_with_security() {
    for o in [
        opts(|o| o.legacy_peers = false),
        opts(|o| o.zap_domain = "global".into()),
    ] {
        let mut c = Cluster::new(4);
        let s = c.add(Pull, o);
        c.bind(s, ADDR);
        let r = c.accept_remote(ADDR).unwrap();
        assert!(c.remote_send(r, SIGNATURE));
        assert!(c.remote_send(r, b"\x01\x08\x00\x00\x00\x03one"));
        c.run_until_idle();
        assert!(c.recv(s).is_none());
        assert!(!c.remote_open(r), "the stream is closed");
    }
}
