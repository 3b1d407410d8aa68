//! Options about connections coming and going, driven through the in-memory cluster:
//! `HELLO_MSG`, `DISCONNECT_MSG`, `HICCUP_MSG`, `RECONNECT_STOP` and application metadata
//! (`ZMQ_METADATA`).

use std::time::Duration;

use zmtp_proto::socket::{AppMetadata, MonitorEventKind, Options, ReconnectStop, Socket};
use zmtp_proto::ConfigError;
use zmtp_proto::SocketType::{self, *};
use zmtp_testkit::cluster::{Cluster, Node};
use zmtp_testkit::message::{m, opts, text};

const ANY: &str = "tcp://127.0.0.1:*";

fn recv_texts(c: &mut Cluster, n: Node) -> Vec<String> {
    c.recv_all(n).iter().map(text).collect()
}

fn kinds(c: &mut Cluster, n: Node) -> Vec<MonitorEventKind> {
    c.take_monitor(n).into_iter().map(|e| e.kind).collect()
}

// ----- HELLO_MSG ---------------------------------------------------------------------------

#[test]
fn hello_msg_goes_first_to_each_new_peer() {
    let mut c = Cluster::new(1);
    let router = c.add(Router, opts(|o| o.hello_msg = Some("H".into())));
    let ep = c.bind(router, ANY);
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "me".into()));
    c.connect(dealer, &ep);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["H"]);
    c.send(dealer, m(&["ping"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["me|ping"]);
    c.send(router, m(&["me", "pong"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), ["pong"]);
    // A second peer gets its own hello.
    let second = c.add_default(Dealer);
    c.connect(second, &ep);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, second), ["H"]);
    assert_eq!(recv_texts(&mut c, dealer), Vec::<String>::new());
}

#[test]
fn hello_msg_is_sent_by_the_connecting_side_too_and_precedes_queued_messages() {
    let mut c = Cluster::new(2);
    let server = c.add(Server, opts(|o| o.hello_msg = Some("W".into())));
    let ep = c.bind(server, ANY);
    let client = c.add(Client, opts(|o| o.hello_msg = Some("H".into())));
    c.connect(client, &ep);
    c.send(client, m(&["queued"])).unwrap();
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, client), ["W"]);
    assert_eq!(recv_texts(&mut c, server), ["H", "queued"]);
}

#[test]
fn hello_msg_is_ignored_by_types_that_do_not_send_it() {
    for (sender, receiver) in [(Push, Pull), (Pair, Pair), (Req, Rep)] {
        let mut c = Cluster::new(3);
        let a = c.add(sender, opts(|o| o.hello_msg = Some("H".into())));
        let ep = c.bind(a, ANY);
        let b = c.add_default(receiver);
        c.connect(b, &ep);
        c.run_until_idle();
        assert_eq!(recv_texts(&mut c, b), Vec::<String>::new(), "{sender:?}");
    }
    // An empty hello is none, as in libzmq.
    assert_eq!(Options::default().with_hello_msg("").hello_msg, None);
}

// ----- DISCONNECT_MSG ----------------------------------------------------------------------

#[test]
fn disconnect_msg_follows_what_a_lost_accepted_peer_sent() {
    let mut c = Cluster::new(4);
    let server = c.add(Server, opts(|o| o.disconnect_msg = Some("D".into())));
    let ep = c.bind(server, ANY);
    let client = c.add_default(Client);
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, m(&["last"])).unwrap();
    c.run_until_idle();
    c.kill(client);
    c.run_until_idle();
    let got = c.recv_all(server);
    assert_eq!(got.iter().map(text).collect::<Vec<_>>(), ["last", "D"]);
    // Both carry the lost peer's routing id.
    assert!(got[0].routing_id().is_some());
    assert_eq!(got[0].routing_id(), got[1].routing_id());
}

#[test]
fn router_disconnect_msg_carries_the_routing_id() {
    let mut c = Cluster::new(5);
    let router = c.add(Router, opts(|o| o.disconnect_msg = Some("D".into())));
    let ep = c.bind(router, ANY);
    let dealer = c.add(Dealer, opts(|o| o.routing_id = "X".into()));
    c.connect(dealer, &ep);
    c.run_until_idle();
    let now = c.now();
    c.socket(dealer).close(now);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), ["X|D"]);
}

#[test]
fn disconnect_msg_is_not_left_by_connections_we_close_or_that_never_completed() {
    let mut c = Cluster::new(6);
    let router = c.add(Router, opts(|o| o.disconnect_msg = Some("D".into())));
    let ep = c.bind(router, ANY);
    // Closed by us: unbind.
    let dealer = c.add_default(Dealer);
    c.connect(dealer, &ep);
    c.run_until_idle();
    let now = c.now();
    assert!(c.socket(router).unbind(&ep, now));
    c.run_until_idle();
    assert_eq!(c.links_between(router, dealer), 0);
    assert_eq!(recv_texts(&mut c, router), Vec::<String>::new());
    // A handshake that never completed.
    let ep = c.bind(router, ANY);
    let stranger = c.add_default(Dealer);
    c.silence(stranger);
    c.connect(stranger, &ep);
    c.run_until_idle();
    c.kill(stranger);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), Vec::<String>::new());
    // A connect peer of a ROUTER is not an accepted one: no disconnect message.
    let other = c.add_default(Router);
    let ep2 = c.bind(other, ANY);
    c.connect(router, &ep2);
    c.run_until_idle();
    c.kill(other);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, router), Vec::<String>::new());
}

#[test]
fn disconnect_msg_is_ignored_by_types_that_do_not_receive_it() {
    let mut c = Cluster::new(7);
    let dealer = c.add(Dealer, opts(|o| o.disconnect_msg = Some("D".into())));
    let ep = c.bind(dealer, ANY);
    let peer = c.add_default(Dealer);
    c.connect(peer, &ep);
    c.run_until_idle();
    c.kill(peer);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), Vec::<String>::new());
}

// ----- HICCUP_MSG --------------------------------------------------------------------------

#[test]
fn hiccup_msg_is_received_when_a_connection_is_lost_and_the_socket_reconnects() {
    let mut c = Cluster::new(8);
    let server = c.add_default(Server);
    let ep = c.bind(server, ANY);
    let client = c.add(
        Client,
        opts(|o| {
            o.hiccup_msg = Some("HICCUP".into());
            o.hello_msg = Some("HELLO".into());
        }),
    );
    c.connect(client, &ep);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, server), ["HELLO"]);
    c.kill(server);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, client), ["HICCUP"]);
    // A new server at the same address: the client reconnects and says hello again.
    let server = c.add_default(Server);
    c.bind(server, &ep);
    c.run_for(Duration::from_millis(500));
    assert_eq!(recv_texts(&mut c, server), ["HELLO"]);
    assert_eq!(recv_texts(&mut c, client), Vec::<String>::new());
}

#[test]
fn hiccup_msg_is_not_received_by_accepting_sides_nor_for_our_own_disconnect() {
    let mut c = Cluster::new(9);
    // DEALER takes it on its connect peers only.
    let dealer = c.add(Dealer, opts(|o| o.hiccup_msg = Some("HICCUP".into())));
    let ep = c.bind(dealer, ANY);
    let peer = c.add_default(Dealer);
    c.connect(peer, &ep);
    c.run_until_idle();
    c.kill(peer);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), Vec::<String>::new());
    // Our own disconnect is no hiccup.
    let other = c.add_default(Dealer);
    let ep2 = c.bind(other, ANY);
    c.connect(dealer, &ep2);
    c.run_until_idle();
    let now = c.now();
    assert!(c.socket(dealer).disconnect(&ep2, now));
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, dealer), Vec::<String>::new());
    // A connection that never completed its handshake is no hiccup either.
    let mute = c.add_default(Dealer);
    let ep4 = c.bind(mute, ANY);
    c.silence(mute);
    let impatient = c.add(
        Dealer,
        opts(|o| {
            o.hiccup_msg = Some("HICCUP".into());
            o.handshake_ivl = Some(Duration::from_millis(100));
        }),
    );
    c.connect(impatient, &ep4);
    c.run_for(Duration::from_millis(150));
    assert_eq!(recv_texts(&mut c, impatient), Vec::<String>::new());
    // SUB does not take it.
    let publisher = c.add_default(Pub);
    let ep3 = c.bind(publisher, ANY);
    let sub = c.add(Sub, opts(|o| o.hiccup_msg = Some("HICCUP".into())));
    c.socket(sub).subscribe(b"");
    c.connect(sub, &ep3);
    c.run_until_idle();
    c.kill(publisher);
    c.run_until_idle();
    assert_eq!(recv_texts(&mut c, sub), Vec::<String>::new());
}

// ----- RECONNECT_STOP ----------------------------------------------------------------------

const NOWHERE: &str = "tcp://127.0.0.1:5999";

#[test]
fn a_refused_connect_is_retried_unless_reconnect_stop_conn_refused() {
    for stop in [ReconnectStop::NEVER, ReconnectStop::from_bits(1)] {
        let mut c = Cluster::new(10);
        c.hold_connects_to(NOWHERE);
        let sub = c.add(Sub, opts(|o| o.reconnect_stop = stop));
        c.monitor_all(sub);
        c.connect(sub, NOWHERE);
        c.run_until_idle();
        let ep = c.take_held_connect(sub).unwrap();
        let now = c.now();
        c.socket(sub).handle_connect_refused(ep, now);
        c.run_for(Duration::from_millis(500));
        let events = kinds(&mut c, sub);
        if stop.conn_refused {
            assert_eq!(
                events,
                [MonitorEventKind::ConnectDelayed, MonitorEventKind::Closed]
            );
            assert_eq!(c.held_connects(sub), 0);
            // The endpoint is gone, as after a disconnect.
            let now = c.now();
            assert!(!c.socket(sub).disconnect(NOWHERE, now));
        } else {
            assert_eq!(
                &events[..3],
                [
                    MonitorEventKind::ConnectDelayed,
                    MonitorEventKind::ConnectRetried,
                    MonitorEventKind::ConnectDelayed
                ]
            );
            assert_eq!(c.held_connects(sub), 1);
        }
    }
}

#[test]
fn reconnect_stop_after_disconnect_ends_only_ipc_endpoints_after_a_disconnect() {
    let ipc = "ipc:///tmp/zmtp-reconnect-stop-test";
    let mut c = Cluster::new(11);
    c.hold_connects_to(ipc);
    c.hold_connects_to(NOWHERE);
    let dealer = c.add(
        Dealer,
        opts(|o| o.reconnect_stop = ReconnectStop::from_bits(4)),
    );
    c.connect(dealer, ipc);
    c.run_until_idle();
    let first = c.take_held_connect(dealer).unwrap();
    let now = c.now();
    // No disconnect yet: a refusal is retried.
    c.socket(dealer).handle_connect_refused(first, now);
    c.run_for(Duration::from_millis(150));
    assert_eq!(c.held_connects(dealer), 1);
    let first = c.take_held_connect(dealer).unwrap();
    // After a disconnect (of another endpoint), the ipc endpoint gives up; tcp does not.
    c.connect(dealer, NOWHERE);
    let now = c.now();
    assert!(c.socket(dealer).disconnect(NOWHERE, now));
    c.connect(dealer, NOWHERE);
    c.run_until_idle();
    c.socket(dealer).handle_connect_refused(first, now);
    let now = c.now();
    assert!(!c.socket(dealer).disconnect(ipc, now));
    let tcp = c.take_held_connect(dealer).unwrap();
    c.socket(dealer).handle_connect_refused(tcp, now);
    c.run_for(Duration::from_millis(150));
    assert_eq!(c.held_connects(dealer), 1);
}

#[test]
fn reconnect_stop_handshake_failed_does_not_retry_a_handshake_that_timed_out() {
    for stop in [ReconnectStop::NEVER, ReconnectStop::from_bits(2)] {
        let mut c = Cluster::new(12);
        // A peer that accepts and never speaks ZMTP.
        let mute = c.add_default(Pub);
        let ep = c.bind(mute, ANY);
        c.silence(mute);
        let sub = c.add(
            Sub,
            opts(|o| {
                o.reconnect_stop = stop;
                o.handshake_ivl = Some(Duration::from_millis(100));
            }),
        );
        c.monitor_all(sub);
        c.connect(sub, &ep);
        c.run_for(Duration::from_millis(150));
        let events = kinds(&mut c, sub);
        assert_eq!(
            &events[..4],
            [
                MonitorEventKind::ConnectDelayed,
                MonitorEventKind::Connected,
                MonitorEventKind::HandshakeFailedNoDetail,
                MonitorEventKind::Disconnected
            ],
            "{stop:?}"
        );
        c.run_for(Duration::from_millis(500));
        let retried = events.contains(&MonitorEventKind::ConnectRetried)
            || kinds(&mut c, sub).contains(&MonitorEventKind::ConnectRetried);
        assert_eq!(retried, !stop.handshake_failed, "{stop:?}");
    }
}

// ----- ZMQ_METADATA ------------------------------------------------------------------------

fn metadata(props: &[(&'static str, &'static str)]) -> AppMetadata {
    props
        .iter()
        .map(|&(n, v)| (n.as_bytes().into(), v.as_bytes().into()))
        .collect()
}

#[test]
fn application_metadata_is_read_on_the_peers_messages() {
    let mut c = Cluster::new(13);
    let rep = c.add(
        Rep,
        opts(|o| o.metadata = metadata(&[("X-hello", "world"), ("X-connection", "backup")])),
    );
    let ep = c.bind(rep, ANY);
    let req = c.add(
        Req,
        opts(|o| o.metadata = metadata(&[("X-hello", "hello")])),
    );
    c.connect(req, &ep);
    c.send(req, m(&["q"])).unwrap();
    c.run_until_idle();
    let q = c.recv(rep).unwrap();
    assert_eq!(q.property("X-hello"), Some(&b"hello"[..]));
    assert_eq!(q.property("X-connection"), None);
    assert_eq!(q.property("Socket-Type"), Some(&b"REQ"[..]));
    // Over tcp the peer's IP is among them.
    assert_eq!(q.property("Peer-Address"), Some(&b"127.0.0.1"[..]));
    c.send(rep, m(&["a"])).unwrap();
    c.run_until_idle();
    let a = c.recv(req).unwrap();
    assert_eq!(a.property("X-hello"), Some(&b"world"[..]));
    assert_eq!(a.property("X-connection"), Some(&b"backup"[..]));
    // A peer with no application metadata (and no verdict) tags nothing.
    let plain = c.add_default(Req);
    c.connect(plain, &ep);
    c.send(plain, m(&["q2"])).unwrap();
    c.run_until_idle();
    let q2 = c.recv(rep).unwrap();
    assert_eq!(text(&q2), "q2");
    assert_eq!(q2.property("Socket-Type"), None);
}

#[test]
fn properties_on_every_message_tags_a_plain_peers_messages_as_libzmq_does() {
    let mut c = Cluster::new(14);
    let pull = c.add(Pull, opts(|o| o.properties_on_every_message = true));
    let ep = c.bind(pull, ANY);
    // No application metadata, no mechanism, no verdict.
    let push = c.add_default(Push);
    c.connect(push, &ep);
    c.send(push, m(&["a"])).unwrap();
    c.send(push, m(&["b"])).unwrap();
    c.run_until_idle();
    for body in ["a", "b"] {
        let mut msg = c.recv(pull).unwrap();
        assert_eq!(text(&msg), body);
        assert_eq!(msg.property("Socket-Type"), Some(&b"PUSH"[..]));
        assert_eq!(msg.property("Peer-Address"), Some(&b"127.0.0.1"[..]));
        // The driver gave no descriptor here.
        let props = msg.take_properties().expect("taken once");
        assert_eq!(props.fd, None);
        assert!(msg.properties().is_none());
    }
}

#[test]
fn application_metadata_is_checked_when_given_to_a_socket() {
    let bad = Options::default().with_metadata(metadata(&[("hello", "x")]));
    assert_eq!(
        Socket::new(SocketType::Dealer, bad, 1).err(),
        Some(ConfigError::BadPropertyName)
    );
    let long_name: &'static str = Box::leak(format!("X-{}", "n".repeat(254)).into_boxed_str());
    let mut s = Socket::new(SocketType::Dealer, Options::default(), 1).unwrap();
    let too_long = Options::default().with_metadata(metadata(&[(long_name, "v")]));
    assert_eq!(s.set_options(too_long), Err(ConfigError::BadPropertyName));
    let big: &'static str = Box::leak("v".repeat(2000).into_boxed_str());
    let too_big = Options::default().with_metadata(metadata(&[("X-big", big)]));
    assert_eq!(s.set_options(too_big), Err(ConfigError::PropertiesFull));
    // Nothing was changed by the refusals.
    assert!(s.options().metadata.is_empty());
    let fine = Options::default().with_metadata(metadata(&[("X-a", "1"), ("X-b", "")]));
    assert_eq!(s.set_options(fine), Ok(()));
}
