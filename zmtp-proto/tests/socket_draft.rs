//! The draft socket types, driven through the in-memory cluster: CLIENT/SERVER, PEER,
//! RADIO/DISH, SCATTER/GATHER and CHANNEL.

use std::collections::BTreeSet;

use zmtp_proto::socket::{GroupError, Message, MetadataError, SendError, Sent};
use zmtp_proto::SocketType::{self, *};
use zmtp_testkit::cluster::{Cluster, Node};
use zmtp_testkit::message::text;

const ANY: &str = "tcp://127.0.0.1:*";

fn to(id: u32, body: &str) -> Message {
    let mut msg = Message::from(body);
    msg.set_routing_id(id).unwrap();
    msg
}

fn grouped(group: &str, body: &str) -> Message {
    let mut msg = Message::from(body);
    msg.set_group(group).unwrap();
    msg
}

fn texts(c: &mut Cluster, n: Node) -> Vec<String> {
    c.recv_all(n).iter().map(text).collect()
}

#[test]
fn server_replies_to_each_client_by_routing_id() {
    let mut c = Cluster::new(1);
    let server = c.add_default(Server);
    let ep = c.bind(server, ANY);
    let clients: Vec<Node> = (0..3).map(|_| c.add_default(Client)).collect();
    for &cl in &clients {
        c.connect(cl, &ep);
    }
    c.run_until_idle();
    for (i, &cl) in clients.iter().enumerate() {
        assert_eq!(c.send(cl, format!("hi {i}")), Ok(Sent::Queued));
    }
    c.run_until_idle();
    let got = c.recv_all(server);
    assert_eq!(got.len(), 3);
    let ids: BTreeSet<u32> = got.iter().map(|m| m.routing_id().unwrap()).collect();
    assert_eq!(ids.len(), 3, "one id per client: {ids:?}");
    assert!(!ids.contains(&0));
    for msg in &got {
        let reply = to(msg.routing_id().unwrap(), &format!("re: {}", text(msg)));
        assert_eq!(c.send(server, reply), Ok(Sent::Queued));
    }
    c.run_until_idle();
    for (i, &cl) in clients.iter().enumerate() {
        let got = c.recv_all(cl);
        assert_eq!(got.len(), 1);
        assert_eq!(text(&got[0]), format!("re: hi {i}"));
        assert_eq!(
            got[0].routing_id(),
            None,
            "a CLIENT's message has no routing id"
        );
    }
}

#[test]
fn server_refuses_unknown_or_missing_routing_ids_and_multipart() {
    let mut c = Cluster::new(2);
    let server = c.add_default(Server);
    let ep = c.bind(server, ANY);
    let client = c.add_default(Client);
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, "hello").unwrap();
    c.run_until_idle();
    let id = c.recv(server).unwrap().routing_id().unwrap();
    assert!(matches!(
        c.send(server, to(id.wrapping_add(1).max(1), "x")),
        Err(SendError::HostUnreachable(_))
    ));
    let missing = c.send(server, "no id").unwrap_err();
    assert!(matches!(missing, SendError::RoutingIdRequired(_)));
    assert_eq!(
        missing.to_string(),
        "a routing id is required: a SERVER or PEER sends to the peer its message's routing \
         id names (set it to the routing id of the message it answers)"
    );
    assert_eq!(missing.into_message(), Message::from("no id"));
    // Multipart: refused by every draft type, from either side.
    let multipart = c.send(client, ["a", "b"]).unwrap_err();
    assert!(matches!(multipart, SendError::SingleFrameOnly(_)));
    assert_eq!(
        multipart.to_string(),
        "draft types (SERVER, CLIENT, RADIO, DISH, SCATTER, GATHER, PEER, CHANNEL) take \
         single-frame messages only"
    );
    assert!(matches!(
        c.send(server, ["a", "b"]),
        Err(SendError::SingleFrameOnly(_))
    ));
    let mut two = Message::from(["a", "b"]);
    assert_eq!(two.set_routing_id(id), Err(MetadataError::Frames(2)));
    assert_eq!(
        Message::from("x").set_routing_id(0),
        Err(MetadataError::ZeroRoutingId)
    );
    // The client still works afterwards.
    c.send(server, to(id, "ok")).unwrap();
    c.run_until_idle();
    assert_eq!(texts(&mut c, client), ["ok"]);
}

#[test]
fn client_load_balances_over_servers() {
    let mut c = Cluster::new(3);
    let client = c.add_default(Client);
    let servers: Vec<Node> = (0..2).map(|_| c.add_default(Server)).collect();
    for &s in &servers {
        let ep = c.bind(s, ANY);
        c.connect(client, &ep);
    }
    c.run_until_idle();
    for i in 0..4 {
        c.send(client, format!("m{i}")).unwrap();
    }
    c.run_until_idle();
    let a = texts(&mut c, servers[0]);
    let b = texts(&mut c, servers[1]);
    assert_eq!(a.len(), 2, "{a:?} {b:?}");
    assert_eq!(b.len(), 2, "{a:?} {b:?}");
}

#[test]
fn peer_addresses_a_connected_peer_before_it_connects() {
    let mut c = Cluster::new(4);
    let a = c.add_default(Peer);
    let b = c.add_default(Peer);
    let ep = c.bind(b, ANY);
    let id = c.socket(a).connect_peer(&ep).unwrap();
    assert_ne!(id, 0);
    // Queued for that peer before its connection is up.
    assert_eq!(c.send(a, to(id, "first")), Ok(Sent::Queued));
    c.run_until_idle();
    let got = c.recv(b).unwrap();
    assert_eq!(text(&got), "first");
    let back = got.routing_id().unwrap();
    c.send(b, to(back, "back")).unwrap();
    c.run_until_idle();
    let reply = c.recv(a).unwrap();
    assert_eq!(text(&reply), "back");
    assert_eq!(reply.routing_id(), Some(id), "the id connect_peer gave");
    // Only a PEER has connect_peer.
    let server = c.add_default(Server);
    assert!(c.socket(server).connect_peer(&ep).is_err());
}

#[test]
fn dish_gets_only_its_groups_and_follows_join_and_leave() {
    let mut c = Cluster::new(5);
    let radio = c.add_default(Radio);
    let ep = c.bind(radio, ANY);
    let dish = c.add_default(Dish);
    c.socket(dish).join(b"weather").unwrap();
    c.connect(dish, &ep);
    c.run_until_idle();
    c.send(radio, grouped("weather", "rain")).unwrap();
    c.send(radio, grouped("sport", "goal")).unwrap();
    c.run_until_idle();
    let got = c.recv_all(dish);
    assert_eq!(got.len(), 1);
    assert_eq!(text(&got[0]), "rain");
    assert_eq!(got[0].group(), Some(&b"weather"[..]));
    // Joining during traffic, then leaving.
    c.socket(dish).join(b"sport").unwrap();
    c.run_until_idle();
    c.send(radio, grouped("sport", "goal 2")).unwrap();
    c.run_until_idle();
    assert_eq!(texts(&mut c, dish), ["goal 2"]);
    c.socket(dish).leave(b"weather").unwrap();
    c.run_until_idle();
    // Nobody has joined: the message is dropped, not queued.
    assert_eq!(c.send(radio, grouped("weather", "sun")), Ok(Sent::Dropped));
    c.run_until_idle();
    assert!(c.recv_all(dish).is_empty());
    // Groups match whole, not as prefixes.
    c.send(radio, grouped("sports", "no")).unwrap();
    c.run_until_idle();
    assert!(c.recv_all(dish).is_empty());
    // Refusals.
    assert_eq!(
        c.socket(dish).leave(b"weather"),
        Err(GroupError::Membership)
    );
    assert_eq!(
        c.socket(dish).join(&[b'g'; 256]),
        Err(GroupError::TooLong(256))
    );
    assert_eq!(c.socket(radio).join(b"x"), Err(GroupError::NotDish));
    assert!(matches!(c.send(dish, "x"), Err(SendError::NotSupported(_))));
}

#[test]
fn dish_joins_again_after_the_radio_restarts() {
    let mut c = Cluster::new(6);
    let radio = c.add_default(Radio);
    let ep = c.bind(radio, ANY);
    let dish = c.add_default(Dish);
    c.socket(dish).join(b"b").unwrap();
    c.socket(dish).join(b"a").unwrap();
    c.connect(dish, &ep);
    c.run_until_idle();
    c.kill(radio);
    let radio2 = c.add_default(Radio);
    c.bind(radio2, &ep);
    c.run_for(std::time::Duration::from_millis(500));
    c.send(radio2, grouped("a", "1")).unwrap();
    c.send(radio2, grouped("b", "2")).unwrap();
    c.run_until_idle();
    assert_eq!(texts(&mut c, dish), ["1", "2"]);
}

#[test]
fn scatter_round_robins_to_gathers_and_channel_pairs() {
    let mut c = Cluster::new(7);
    let scatter = c.add_default(Scatter);
    let gathers: Vec<Node> = (0..2).map(|_| c.add_default(Gather)).collect();
    for &g in &gathers {
        let ep = c.bind(g, ANY);
        c.connect(scatter, &ep);
    }
    c.run_until_idle();
    for i in 0..4 {
        c.send(scatter, format!("{i}")).unwrap();
    }
    assert!(matches!(
        c.send(scatter, ["a", "b"]),
        Err(SendError::SingleFrameOnly(_))
    ));
    c.run_until_idle();
    assert_eq!(texts(&mut c, gathers[0]), ["0", "2"]);
    assert_eq!(texts(&mut c, gathers[1]), ["1", "3"]);

    let a = c.add_default(Channel);
    let b = c.add_default(Channel);
    let ep = c.bind(a, ANY);
    c.connect(b, &ep);
    c.run_until_idle();
    c.send(b, "ping").unwrap();
    c.run_until_idle();
    assert_eq!(texts(&mut c, a), ["ping"]);
    c.send(a, "pong").unwrap();
    c.run_until_idle();
    assert_eq!(texts(&mut c, b), ["pong"]);
}

#[test]
fn draft_types_connect_only_to_their_partners() {
    for (ty, partner) in [
        (Client, Server),
        (Radio, Dish),
        (Scatter, Gather),
        (Peer, Peer),
        (Channel, Channel),
    ] {
        assert!(ty.is_compatible(partner) && partner.is_compatible(ty));
        let others = SocketType::ALL.iter().filter(|&&t| t != partner);
        for &other in others {
            assert!(!ty.is_compatible(other), "{ty:?} with {other:?}");
        }
    }
}

#[test]
fn draft_senders_honour_sndhwm() {
    use zmtp_testkit::message::opts;
    // SCATTER, CLIENT and CHANNEL block at SNDHWM, as PUSH, DEALER and PAIR do.
    for (seed, (ty, peer_ty)) in [(Scatter, Gather), (Client, Server), (Channel, Channel)]
        .into_iter()
        .enumerate()
    {
        let mut c = Cluster::new(20 + seed as u64);
        let s = c.add(ty, opts(|o| o.sndhwm = 3));
        assert!(
            matches!(c.send(s, "x"), Err(SendError::WouldBlock(_))),
            "{ty:?} with no peer"
        );
        let ep = "tcp://127.0.0.1:6100";
        c.connect(s, ep);
        c.run_until_idle();
        for k in 0..3 {
            assert_eq!(c.send(s, format!("{k}")), Ok(Sent::Queued), "{ty:?}");
        }
        match c.send(s, "over") {
            Err(SendError::WouldBlock(back)) => assert_eq!(text(&back), "over", "{ty:?}"),
            other => panic!("{ty:?}: {other:?}"),
        }
        let peer = c.add_default(peer_ty);
        c.bind(peer, ep);
        c.run_for(std::time::Duration::from_millis(300));
        assert_eq!(texts(&mut c, peer), ["0", "1", "2"], "{ty:?}");
    }

    // SERVER: a client at its HWM refuses with WouldBlock, the message handed back.
    let mut c = Cluster::new(30);
    let server = c.add(Server, opts(|o| o.sndhwm = 2));
    let ep = c.bind(server, ANY);
    let client = c.add_default(Client);
    c.connect(client, &ep);
    c.run_until_idle();
    c.send(client, "hi").unwrap();
    c.run_until_idle();
    let id = c.recv(server).unwrap().routing_id().unwrap();
    c.silence(client);
    // The client stops reading: its queue and then the stream's buffers fill up.
    let mut refused = None;
    for k in 0..100_000 {
        match c.send(server, to(id, &format!("{k}"))) {
            Ok(Sent::Queued) => c.run_until_idle(),
            Err(SendError::WouldBlock(back)) => {
                refused = Some(back);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let back = refused.expect("the SERVER refused at HWM");
    assert_eq!(
        back.routing_id(),
        Some(id),
        "handed back with its routing id"
    );

    // RADIO: drops for a DISH at its HWM, never blocks.
    let mut c = Cluster::new(31);
    let radio = c.add(Radio, opts(|o| o.sndhwm = 2));
    let ep = "tcp://127.0.0.1:6101";
    let dish = c.add_default(Dish);
    c.socket(dish).join(b"g").unwrap();
    c.bind(dish, ep);
    c.connect(radio, ep);
    c.run_until_idle();
    let mut dropped = 0;
    for k in 0..10 {
        // Nothing moves between sends: the DISH's queue at the RADIO fills at 2.
        match c.send(radio, grouped("g", &format!("{k}"))) {
            Ok(Sent::Queued) => {}
            Ok(Sent::Dropped) => dropped += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(dropped, 8);
    c.run_until_idle();
    assert_eq!(texts(&mut c, dish), ["0", "1"]);
}

#[test]
fn audience_counts_who_a_message_could_reach_before_topics_and_groups() {
    let mut c = Cluster::new(3);
    let radio = c.add_default(Radio);
    let ep = c.bind(radio, ANY);
    let dish = c.add_default(Dish);
    c.connect(dish, &ep);
    c.run_until_idle();
    // Connected, but joined nothing: nobody to reach.
    assert_eq!(c.socket(radio).audience(), 0);
    c.socket(dish).join(b"weather").unwrap();
    c.run_until_idle();
    assert_eq!(c.socket(radio).audience(), 1);
    // A group the dish did not join: dropped, with an audience (filtered out).
    assert_eq!(c.send(radio, grouped("sport", "goal")), Ok(Sent::Dropped));

    // A PUB counts its connected subscribers, whatever they subscribed to; an XPUB only
    // those that subscribed to something.
    for (ty, before) in [(Pub, 1), (XPub, 0)] {
        let publisher = c.add_default(ty);
        let ep = c.bind(publisher, ANY);
        let sub = c.add_default(XSub);
        c.connect(sub, &ep);
        c.run_until_idle();
        assert_eq!(c.socket(publisher).audience(), before, "{ty:?}");
        c.send(sub, "\x01news").unwrap();
        c.run_until_idle();
        if ty == XPub {
            // XPUB hands the subscription up.
            while c.recv(publisher).is_some() {}
        }
        assert_eq!(c.socket(publisher).audience(), 1, "{ty:?}");
        assert_eq!(c.send(publisher, "sport"), Ok(Sent::Dropped), "{ty:?}");
    }
}
