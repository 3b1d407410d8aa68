//! The draft socket types against peers the test plays byte by byte (the cluster's remote
//! streams with a bare connection at the far end): what they put on the wire (JOIN and
//! LEAVE commands, `[group, body]` messages) and how they take hostile input (multipart
//! messages to single-frame types, over-long groups, malformed group messages).
//!
//! The core fails a stream on a group rule with a typed error (`Error::GroupTooLong`,
//! `Error::MalformedGroupMessage`) that it keeps to itself once the handshake is done, as
//! libzmq reports only DISCONNECTED there. What shows outside, and is checked here: the
//! socket closes that stream (`ClosePeer`), monitors one DISCONNECTED, and, for a stream it
//! connected, never reconnects, as after any protocol error (a stream the peer merely
//! closed is connected again). Its other peers keep working.

use std::time::Duration;

use zmtp_proto::codec::{Command, Version};
use zmtp_proto::socket::{Message, MonitorEventKind, Sent, GROUP_MAX_LEN};
use zmtp_proto::{Bytes, Config, OwnedItem, SocketType::*};
use zmtp_testkit::cluster::{Cluster, Node, RawPeer};
use zmtp_testkit::message::{opts, text};

const ADDR: &str = "tcp://127.0.0.1:5555";
/// Connects here wait for the test, which plays the listener.
const HELD: &str = "tcp://127.0.0.1:6000";
const GREETING_LEN: usize = 64;

fn grouped(group: &[u8], body: &str) -> Message {
    let mut msg = Message::from(body);
    msg.set_group(group).unwrap();
    msg
}

fn to(id: u32, body: &str) -> Message {
    let mut msg = Message::from(body);
    msg.set_routing_id(id).unwrap();
    msg
}

fn texts(c: &mut Cluster, n: Node) -> Vec<String> {
    c.recv_all(n).iter().map(text).collect()
}

/// A raw peer of type `ty` the test connects to `addr`, its handshake done.
fn accept(c: &mut Cluster, addr: &str, ty: zmtp_proto::SocketType) -> RawPeer {
    let remote = c.accept_remote(addr).expect("a listener");
    let mut peer = RawPeer::new(c, remote, ty);
    peer.exchange(c);
    assert!(peer.conn.is_established(), "{ty:?}: handshake");
    peer
}

/// The raw peer (of `config`) at the end of `n`'s next held connect, its handshake done.
fn answer_connect(c: &mut Cluster, n: Node, config: Config) -> RawPeer {
    c.run_until_idle();
    let endpoint = c.take_held_connect(n).expect("a held connect");
    let remote = c.connect_remote(n, endpoint).expect("connected");
    let mut peer = RawPeer::with_config(c, remote, config);
    peer.exchange(c);
    assert!(peer.conn.is_established(), "handshake");
    peer
}

/// The bytes the socket wrote after its greeting and READY.
fn traffic(received: &[u8]) -> &[u8] {
    let ready = &received[GREETING_LEN..];
    let (header, len) = match ready[0] {
        0x04 => (2, usize::from(ready[1])),
        flags => {
            assert_eq!(flags, 0x06, "READY is a command");
            (
                9,
                u64::from_be_bytes(ready[1..9].try_into().unwrap()) as usize,
            )
        }
    };
    assert_eq!(&ready[header..header + 6], b"\x05READY");
    &ready[header + len..]
}

fn count(c: &Cluster, n: Node, kind: MonitorEventKind) -> usize {
    c.monitor_kinds(n).iter().filter(|&&k| k == kind).count()
}

/// `peer`'s stream is the one `n` closed, and the only one it lost.
fn closed_alone(c: &Cluster, n: Node, peer: &RawPeer, what: &str) {
    assert!(
        !c.remote_open(peer.remote),
        "{what}: the stream is still open"
    );
    let (_, id) = c.remote_peer(peer.remote).unwrap();
    assert_eq!(c.member(n).closed_peers, [id], "{what}: streams closed");
    assert_eq!(
        count(c, n, MonitorEventKind::Disconnected),
        1,
        "{what}: {:?}",
        c.monitor_kinds(n)
    );
}

// ----- single-frame types take no multipart message ----------------------------------------

#[test]
fn server_drops_a_multipart_message_whole_and_serves_both_clients() {
    let mut c = Cluster::new(1);
    let server = c.add_default(Server);
    c.monitor_all(server);
    c.bind(server, ADDR);
    let mut raw = accept(&mut c, ADDR, Client);
    let other = c.add_default(Client);
    c.connect(other, ADDR);
    c.run_until_idle();

    // Two frames of a three-frame message; the other client's message in between; the
    // last frame; then a message of one frame.
    assert!(raw.send_raw(&mut c, b"\x01\x01x\x01\x01y"));
    c.send(other, "from the other").unwrap();
    c.run_until_idle();
    let first = c.recv_all(server);
    assert_eq!(
        first.iter().map(text).collect::<Vec<_>>(),
        ["from the other"]
    );
    assert!(raw.send_raw(&mut c, b"\x00\x01z"));
    assert!(raw.send_frames(&mut c, &[b"after"]));
    c.run_until_idle();
    let second = c.recv_all(server);
    assert_eq!(second.iter().map(text).collect::<Vec<_>>(), ["after"]);
    let other_id = first[0].routing_id().unwrap();
    let raw_id = second[0].routing_id().unwrap();
    assert_ne!(other_id, raw_id);
    assert!(c.remote_open(raw.remote));
    assert_eq!(count(&c, server, MonitorEventKind::Disconnected), 0);

    // Both still get their replies.
    c.send(server, to(raw_id, "to raw")).unwrap();
    c.send(server, to(other_id, "to other")).unwrap();
    c.run_until_idle();
    raw.exchange(&mut c);
    assert_eq!(raw.messages(), [[&b"to raw"[..]]]);
    assert_eq!(texts(&mut c, other), ["to other"]);
}

#[test]
fn every_single_frame_type_drops_multipart_input_and_keeps_the_stream() {
    for (seed, (ty, partner)) in [
        (Server, Client),
        (Client, Server),
        (Gather, Scatter),
        (Channel, Channel),
        (Peer, Peer),
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = Cluster::new(10 + seed as u64);
        let sock = c.add_default(ty);
        c.monitor_all(sock);
        c.bind(sock, ADDR);
        let mut raw = accept(&mut c, ADDR, partner);
        assert!(raw.send_frames(&mut c, &[b"a", b"b"]));
        assert!(raw.send_frames(&mut c, &[b"x", b"", b"z"]));
        // A multipart message a byte at a time, then a single frame.
        for b in b"\x01\x02p1\x00\x02p2" {
            assert!(raw.send_raw(&mut c, &[*b]));
        }
        assert!(raw.send_frames(&mut c, &[b"single"]));
        c.run_until_idle();
        let got = c.recv_all(sock);
        assert_eq!(
            got.iter().map(text).collect::<Vec<_>>(),
            ["single"],
            "{ty:?}"
        );
        assert!(c.remote_open(raw.remote), "{ty:?}: stream closed");
        assert_eq!(count(&c, sock, MonitorEventKind::Disconnected), 0, "{ty:?}");
        // The stream still carries messages the other way (GATHER sends nothing).
        if ty == Gather {
            continue;
        }
        let reply = match got[0].routing_id() {
            Some(id) => to(id, "reply"),
            None => Message::from("reply"),
        };
        assert_eq!(c.send(sock, reply), Ok(Sent::Queued), "{ty:?}");
        c.run_until_idle();
        raw.exchange(&mut c);
        assert_eq!(raw.messages(), [[&b"reply"[..]]], "{ty:?}");
    }
}

// ----- RADIO: JOIN and LEAVE from a peer ----------------------------------------------------

#[test]
fn radio_takes_a_join_of_255_bytes() {
    let mut c = Cluster::new(20);
    let radio = c.add_default(Radio);
    c.bind(radio, ADDR);
    let mut raw = accept(&mut c, ADDR, Dish);
    let group = [b'g'; GROUP_MAX_LEN];
    assert!(raw.send_command(&mut c, &Command::Join(&group)));
    c.run_until_idle();
    assert_eq!(c.send(radio, grouped(&group, "long")), Ok(Sent::Queued));
    c.run_until_idle();
    raw.exchange(&mut c);
    assert_eq!(raw.messages(), [[&group[..], &b"long"[..]]]);
    // And a LEAVE of it.
    assert!(raw.send_command(&mut c, &Command::Leave(&group)));
    c.run_until_idle();
    assert_eq!(c.send(radio, grouped(&group, "gone")), Ok(Sent::Dropped));
    assert!(c.remote_open(raw.remote));
}

#[test]
fn an_over_long_join_or_leave_fails_only_that_radio_stream() {
    let too_long = [b'g'; GROUP_MAX_LEN + 1];
    let very_long = [b'h'; 4000];
    for (seed, cmd) in [
        Command::Join(&too_long),
        Command::Leave(&too_long),
        Command::Join(&very_long),
    ]
    .iter()
    .enumerate()
    {
        let mut c = Cluster::new(21 + seed as u64);
        let radio = c.add_default(Radio);
        c.monitor_all(radio);
        c.bind(radio, ADDR);
        let dish = c.add_default(Dish);
        c.socket(dish).join(b"g").unwrap();
        c.connect(dish, ADDR);
        let mut raw = accept(&mut c, ADDR, Dish);
        assert!(raw.send_command(&mut c, &Command::Join(b"g")));
        c.run_until_idle();
        c.send(radio, grouped(b"g", "before")).unwrap();
        c.run_until_idle();
        raw.exchange(&mut c);
        assert_eq!(raw.messages(), [[&b"g"[..], &b"before"[..]]]);
        assert_eq!(texts(&mut c, dish), ["before"]);

        raw.send_command(&mut c, cmd);
        c.run_until_idle();
        closed_alone(&c, radio, &raw, &format!("{cmd:?}"));
        // The other DISH is still served.
        assert_eq!(c.send(radio, grouped(b"g", "after")), Ok(Sent::Queued));
        c.run_until_idle();
        assert_eq!(texts(&mut c, dish), ["after"]);
    }
}

#[test]
fn a_radio_does_not_reconnect_after_an_over_long_join_but_does_after_a_close() {
    let mut c = Cluster::new(25);
    c.hold_connects_to(HELD);
    let radio = c.add(
        Radio,
        opts(|o| o.reconnect_ivl = Some(Duration::from_millis(100))),
    );
    c.connect(radio, HELD);
    let mut raw = answer_connect(&mut c, radio, Config::new(Dish));

    // A peer that hangs up is connected again.
    c.remote_reset(raw.remote);
    c.run_for(Duration::from_millis(500));
    assert_eq!(c.member(radio).connect_attempts.len(), 2);
    raw = answer_connect(&mut c, radio, Config::new(Dish));

    // A peer that breaks the group rule is not.
    raw.send_command(&mut c, &Command::Join(&[b'x'; GROUP_MAX_LEN + 1]));
    c.run_until_idle();
    assert!(!c.remote_open(raw.remote));
    c.run_for(Duration::from_secs(5));
    assert_eq!(c.member(radio).connect_attempts.len(), 2, "reconnected");
    assert_eq!(c.held_connects(radio), 0);
}

// ----- DISH: messages from a peer -----------------------------------------------------------

#[test]
fn a_dish_fails_a_stream_whose_message_is_not_group_and_body() {
    let long_group = [b'g'; GROUP_MAX_LEN + 1];
    let cases: [(&str, &[&[u8]]); 5] = [
        ("a group frame alone", &[b"g1"]),
        ("an unjoined group alone", &[b"zz"]),
        ("three frames", &[b"g1", b"body", b"extra"]),
        (
            "three frames, group not joined",
            &[b"zz", b"body", b"extra"],
        ),
        ("a group of 256 bytes", &[&long_group, b"body"]),
    ];
    for (seed, (what, frames)) in cases.into_iter().enumerate() {
        let mut c = Cluster::new(30 + seed as u64);
        let dish = c.add_default(Dish);
        c.monitor_all(dish);
        c.socket(dish).join(b"g1").unwrap();
        c.bind(dish, ADDR);
        let radio = c.add_default(Radio);
        c.connect(radio, ADDR);
        let mut raw = accept(&mut c, ADDR, Radio);
        // The DISH told the raw RADIO its group; a well-formed message goes through.
        assert!(raw
            .items
            .contains(&OwnedItem::Join(Bytes::from_static(b"g1"))));
        assert!(raw.send_frames(&mut c, &[b"g1", b"fine"]));
        let got = c.recv(dish).expect("the raw RADIO's message");
        assert_eq!((text(&got), got.group()), ("fine".into(), Some(&b"g1"[..])));

        raw.send_frames(&mut c, frames);
        c.run_until_idle();
        closed_alone(&c, dish, &raw, what);
        assert!(c.recv_all(dish).is_empty(), "{what}: a message came of it");
        // The other RADIO is still heard.
        c.send(radio, grouped(b"g1", "still")).unwrap();
        c.run_until_idle();
        assert_eq!(texts(&mut c, dish), ["still"], "{what}");
    }
}

#[test]
fn a_dish_does_not_reconnect_after_a_malformed_message() {
    let mut c = Cluster::new(40);
    c.hold_connects_to(HELD);
    let dish = c.add(
        Dish,
        opts(|o| o.reconnect_ivl = Some(Duration::from_millis(100))),
    );
    c.socket(dish).join(b"g1").unwrap();
    c.connect(dish, HELD);
    let mut raw = answer_connect(&mut c, dish, Config::new(Radio));
    assert!(raw.send_frames(&mut c, &[b"g1"]));
    c.run_until_idle();
    assert!(!c.remote_open(raw.remote));
    c.run_for(Duration::from_secs(5));
    assert_eq!(c.member(dish).connect_attempts.len(), 1, "reconnected");
}

// ----- the bytes on the wire ----------------------------------------------------------------

#[test]
fn radio_sends_group_and_body_frames_to_the_peers_that_joined() {
    let mut c = Cluster::new(50);
    let radio = c.add_default(Radio);
    c.bind(radio, ADDR);
    let mut v31 = accept(&mut c, ADDR, Dish);
    let mut config = Config::new(Dish);
    config.version = Version::V3_0;
    let remote = c.accept_remote(ADDR).unwrap();
    let mut v30 = RawPeer::with_config(&c, remote, config);
    v30.exchange(&mut c);
    assert!(v30.conn.is_established());
    let mut other = accept(&mut c, ADDR, Dish);
    // JOIN as libzmq's DISH sends it (to 3.0 and 3.1 peers alike).
    for peer in [&mut v31, &mut v30] {
        assert!(peer.send_raw(&mut c, b"\x04\x07\x04JOINg1"));
    }
    assert!(other.send_raw(&mut c, b"\x04\x07\x04JOINg2"));
    c.run_until_idle();

    assert_eq!(c.send(radio, grouped(b"g1", "hello")), Ok(Sent::Queued));
    assert_eq!(c.send(radio, grouped(b"g3", "nobody")), Ok(Sent::Dropped));
    c.run_until_idle();
    for (name, peer) in [("3.1", &mut v31), ("3.0", &mut v30), ("g2", &mut other)] {
        peer.exchange(&mut c);
        let expected: &[u8] = if name == "g2" {
            b""
        } else {
            b"\x01\x02g1\x00\x05hello"
        };
        assert_eq!(traffic(&peer.received), expected, "{name}");
    }

    // A LEAVE as libzmq sends it: nothing more for that peer.
    assert!(v31.send_raw(&mut c, b"\x04\x08\x05LEAVEg1"));
    c.run_until_idle();
    c.send(radio, grouped(b"g1", "again")).unwrap();
    c.run_until_idle();
    v31.exchange(&mut c);
    v30.exchange(&mut c);
    assert_eq!(traffic(&v31.received), b"\x01\x02g1\x00\x05hello");
    assert_eq!(
        traffic(&v30.received),
        b"\x01\x02g1\x00\x05hello\x01\x02g1\x00\x05again"
    );
}

#[test]
fn dish_sends_its_joins_sorted_on_every_connect_and_join_and_leave_as_they_come() {
    let mut c = Cluster::new(60);
    c.hold_connects_to(HELD);
    let dish = c.add(
        Dish,
        opts(|o| o.reconnect_ivl = Some(Duration::from_millis(100))),
    );
    for group in [&b"b"[..], b"a", b"g1"] {
        c.socket(dish).join(group).unwrap();
    }
    c.connect(dish, HELD);
    let mut radio = answer_connect(&mut c, dish, Config::new(Radio));
    assert_eq!(
        traffic(&radio.received),
        b"\x04\x06\x04JOINa\x04\x06\x04JOINb\x04\x07\x04JOINg1"
    );

    // Joins and leaves while connected go out at once.
    let seen = radio.received.len();
    c.socket(dish).join(b"c").unwrap();
    c.socket(dish).leave(b"g1").unwrap();
    c.run_until_idle();
    radio.exchange(&mut c);
    assert_eq!(
        &radio.received[seen..],
        b"\x04\x06\x04JOINc\x04\x08\x05LEAVEg1"
    );

    // The RADIO goes away; the next one, a 3.0 peer, hears every join again, sorted, and
    // nothing of the group left.
    c.remote_reset(radio.remote);
    c.run_for(Duration::from_millis(150));
    let mut config = Config::new(Radio);
    config.version = Version::V3_0;
    let again = answer_connect(&mut c, dish, config);
    assert_eq!(
        traffic(&again.received),
        b"\x04\x06\x04JOINa\x04\x06\x04JOINb\x04\x06\x04JOINc"
    );
}

// ----- routing ids across reconnects --------------------------------------------------------

#[test]
fn server_and_peer_route_to_a_peer_they_reconnected_to() {
    for (seed, (ty, partner)) in [(Server, Client), (Peer, Peer)].into_iter().enumerate() {
        for immediate in [false, true] {
            let what = format!("{ty:?}, immediate {immediate}");
            let mut c = Cluster::new(70 + seed as u64);
            c.hold_connects_to(HELD);
            let sock = c.add(
                ty,
                opts(|o| {
                    o.reconnect_ivl = Some(Duration::from_millis(100));
                    o.immediate = immediate;
                }),
            );
            c.connect(sock, HELD);
            for round in 0..3 {
                let mut raw = answer_connect(&mut c, sock, Config::new(partner));
                assert!(raw.send_frames(&mut c, &[b"hi"]));
                c.run_until_idle();
                let got = c.recv(sock).expect("the message");
                let id = got.routing_id().expect("a routing id");
                assert_eq!(
                    c.send(sock, to(id, "back")),
                    Ok(Sent::Queued),
                    "{what}, round {round}"
                );
                c.run_until_idle();
                raw.exchange(&mut c);
                assert_eq!(raw.messages(), [[&b"back"[..]]], "{what}, round {round}");
                c.remote_reset(raw.remote);
                c.run_for(Duration::from_millis(150));
            }
        }
    }
}
