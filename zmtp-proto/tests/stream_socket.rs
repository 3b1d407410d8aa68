//! STREAM (libzmq's `ZMQ_STREAM`) against raw peers the test plays byte by byte: no
//! greeting, `[id][chunk]` per chunk read, notifications when a connection comes up and
//! goes away, `[id][data]` written raw, empty data closing the connection.

use zmtp_proto::socket::{Command, Message, SendError, Sent};
use zmtp_proto::{Bytes, SocketType::*};
use zmtp_testkit::cluster::{Cluster, Remote};
use zmtp_testkit::message::{frames, msg, opts};

const ADDR: &str = "tcp://127.0.0.1:5555";
const HELD: &str = "tcp://127.0.0.1:6000";

fn stream_server(
    c: &mut Cluster,
    f: impl FnOnce(&mut zmtp_proto::socket::Options),
) -> zmtp_testkit::cluster::Node {
    let n = c.add(Stream, opts(f));
    c.bind(n, ADDR);
    n
}

#[test]
fn accepted_connection_is_announced_and_each_chunk_is_id_and_data() {
    let mut c = Cluster::new(1);
    let s = stream_server(&mut c, |_| {});
    let r = c.accept_remote(ADDR).unwrap();
    c.run_until_idle();
    let up = c.recv(s).expect("connect notification");
    let f = frames(&up);
    assert_eq!(f.len(), 2);
    let id = f[0].clone();
    assert_eq!(id.len(), 5, "generated ids are 5 bytes");
    assert_eq!(id[0], 0);
    assert!(f[1].is_empty());
    // Nothing is written by a STREAM on its own: no greeting.
    assert!(c.remote_written(r).is_empty());

    assert!(c.remote_send(r, b"GET / HTTP/1.0\r\n\r\n"));
    let m = c.recv(s).unwrap();
    assert_eq!(
        frames(&m),
        vec![id.clone(), b"GET / HTTP/1.0\r\n\r\n".to_vec()]
    );
    // Chunks are what was read, however it came.
    assert!(c.remote_send(r, b"a"));
    assert!(c.remote_send(r, b"bc"));
    let m1 = c.recv(s).unwrap();
    assert_eq!(frames(&m1)[1], b"a");
    let m2 = c.recv(s).unwrap();
    assert_eq!(frames(&m2)[1], b"bc");

    // A reply goes out raw.
    assert_eq!(
        c.send(s, msg(&[&id, b"HTTP/1.0 200 OK\r\n\r\nhi"])),
        Ok(Sent::Queued)
    );
    assert_eq!(c.remote_written(r), b"HTTP/1.0 200 OK\r\n\r\nhi");

    // The peer leaves: announced once, after what it sent.
    assert!(c.remote_send(r, b"bye"));
    c.remote_reset(r);
    c.run_until_idle();
    let last = c.recv(s).unwrap();
    assert_eq!(frames(&last), vec![id.clone(), b"bye".to_vec()]);
    let down = c.recv(s).expect("disconnect notification");
    assert_eq!(frames(&down), vec![id.clone(), Vec::new()]);
    assert!(c.recv(s).is_none());
    // Its id is gone.
    assert!(matches!(
        c.send(s, msg(&[&id, b"x"])),
        Err(SendError::HostUnreachable(_))
    ));
}

#[test]
fn generated_ids_count_up_per_connection() {
    let mut c = Cluster::new(7);
    let s = stream_server(&mut c, |_| {});
    let mut ids = Vec::new();
    for _ in 0..3 {
        c.accept_remote(ADDR).unwrap();
        let up = c.recv(s).unwrap();
        ids.push(u32::from_be_bytes(frames(&up)[0][1..5].try_into().unwrap()));
    }
    assert_eq!(ids[1], ids[0].wrapping_add(1));
    assert_eq!(ids[2], ids[0].wrapping_add(2));
    // The start comes from the seed.
    let mut other = Cluster::new(8);
    let s2 = stream_server(&mut other, |_| {});
    other.accept_remote(ADDR).unwrap();
    let up = other.recv(s2).unwrap();
    assert_ne!(
        u32::from_be_bytes(frames(&up)[0][1..5].try_into().unwrap()),
        ids[0]
    );
}

#[test]
fn empty_data_closes_the_connection_without_notification() {
    let mut c = Cluster::new(2);
    let s = stream_server(&mut c, |_| {});
    let r = c.accept_remote(ADDR).unwrap();
    let id = frames(&c.recv(s).unwrap())[0].clone();
    // Data queued before the close is written first, then the stream closes.
    assert_eq!(c.send(s, msg(&[&id, b"last words"])), Ok(Sent::Queued));
    assert_eq!(c.send(s, msg(&[&id, b""])), Ok(Sent::Queued));
    assert_eq!(c.remote_written(r), b"last words");
    c.run_until_idle();
    assert!(!c.remote_open(r), "closed by the socket");
    assert!(c.recv(s).is_none(), "no disconnect notification");
    assert!(matches!(
        c.send(s, msg(&[&id, b"x"])),
        Err(SendError::HostUnreachable(_))
    ));

    // With nothing queued it closes at once.
    let r2 = c.accept_remote(ADDR).unwrap();
    let id2 = frames(&c.recv(s).unwrap())[0].clone();
    assert_ne!(id, id2);
    assert_eq!(c.send(s, msg(&[&id2, b""])), Ok(Sent::Queued));
    let closes: Vec<_> = std::iter::from_fn(|| c.socket(s).poll_command())
        .filter(|cmd| matches!(cmd, Command::ClosePeer { .. }))
        .collect();
    assert_eq!(closes.len(), 1);
    let _ = r2;
    assert!(c.recv(s).is_none());
}

#[test]
fn unknown_id_is_unreachable_and_an_id_without_more_drops_the_next_frame() {
    let mut c = Cluster::new(3);
    let s = stream_server(&mut c, |_| {});
    let r = c.accept_remote(ADDR).unwrap();
    let id = frames(&c.recv(s).unwrap())[0].clone();
    let refused = c.send(s, msg(&[b"\x00nope", b"data"]));
    match refused {
        Err(SendError::HostUnreachable(m)) => assert_eq!(frames(&m)[1], b"data"),
        other => panic!("{other:?}"),
    }
    // An id alone: it and the next frame go nowhere.
    assert_eq!(
        c.send(s, Message::from(Bytes::from(id.clone()))),
        Ok(Sent::Dropped)
    );
    assert_eq!(c.send(s, Message::from("swallowed")), Ok(Sent::Dropped));
    assert_eq!(c.send(s, msg(&[&id, b"kept"])), Ok(Sent::Queued));
    assert_eq!(c.remote_written(r), b"kept");
    // MORE on the data frame is ignored: a third frame is an id again (without MORE, so
    // the frame after it is dropped).
    assert_eq!(c.send(s, msg(&[&id, b"one", &id])), Ok(Sent::Queued));
    assert_eq!(c.send(s, Message::from("dropped")), Ok(Sent::Dropped));
    assert_eq!(
        c.send(s, msg(&[&id, b"two", &id, b"three"])),
        Ok(Sent::Queued)
    );
    assert_eq!(c.remote_written(r), b"onetwothree");
}

#[test]
fn notify_off_announces_nothing() {
    let mut c = Cluster::new(4);
    let s = stream_server(&mut c, |o| o.stream_notify = false);
    let r = c.accept_remote(ADDR).unwrap();
    c.run_until_idle();
    assert!(c.recv(s).is_none());
    assert!(c.remote_send(r, b"hello"));
    let m = c.recv(s).unwrap();
    assert_eq!(frames(&m)[1], b"hello");
    c.remote_reset(r);
    c.run_until_idle();
    assert!(c.recv(s).is_none());
}

#[test]
fn connect_is_up_at_once_with_the_connect_routing_id() {
    let mut c = Cluster::new(5);
    c.hold_connects_to(HELD);
    let s = c.add(
        Stream,
        opts(|o| o.connect_routing_id = Some(Bytes::from_static(b"web"))),
    );
    c.connect(s, HELD);
    c.run_until_idle();
    assert!(c.recv(s).is_none(), "nothing before the TCP connect");
    let endpoint = c.take_held_connect(s).unwrap();
    let r = c.connect_remote(s, endpoint).unwrap();
    let up = c.recv(s).unwrap();
    assert_eq!(frames(&up), vec![b"web".to_vec(), Vec::new()]);
    // A connecting STREAM writes nothing until told to.
    assert!(c.remote_written(r).is_empty());
    assert_eq!(c.send(s, msg(&[b"web", b"ping"])), Ok(Sent::Queued));
    assert_eq!(c.remote_written(r), b"ping");
    assert!(c.remote_send(r, b"pong"));
    assert_eq!(
        frames(&c.recv(s).unwrap()),
        vec![b"web".to_vec(), b"pong".to_vec()]
    );
    // The peer closes: announced. As libzmq's pipe, the connect peer keeps its id while
    // it reconnects: what is sent meanwhile waits, and the reconnection is announced
    // under the same id.
    c.remote_reset(r);
    c.run_until_idle();
    assert_eq!(
        frames(&c.recv(s).unwrap()),
        vec![b"web".to_vec(), Vec::new()]
    );
    assert_eq!(c.send(s, msg(&[b"web", b"again"])), Ok(Sent::Queued));
    c.run_for(std::time::Duration::from_millis(200));
    let endpoint = c.take_held_connect(s).expect("reconnects");
    let r2 = c.connect_remote(s, endpoint).unwrap();
    assert_eq!(
        frames(&c.recv(s).unwrap()),
        vec![b"web".to_vec(), Vec::new()]
    );
    assert_eq!(c.remote_written(r2), b"again");
}

#[test]
fn a_connect_peer_has_its_generated_id_at_once_and_the_option_reads_it() {
    let mut c = Cluster::new(8);
    c.hold_connects_to(HELD);
    let s = c.add(Stream, opts(|_| {}));
    assert!(c.socket(s).options().routing_id.is_empty());
    c.connect(s, HELD);
    // libzmq's documented way to learn the id of a connection asked for: ZMQ_ROUTING_ID
    // right after zmq_connect.
    let id = c.socket(s).options().routing_id.to_vec();
    assert_eq!((id.len(), id[0]), (5, 0), "{id:?}");
    assert!(c.socket(s).routes_to(&id));
    // Data sent before the connection is up waits for it, in order.
    assert_eq!(c.send(s, msg(&[&id, b"early "])), Ok(Sent::Queued));
    assert_eq!(c.send(s, msg(&[&id, b"bird"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert!(c.recv(s).is_none(), "nothing before the TCP connect");
    let endpoint = c.take_held_connect(s).unwrap();
    let r = c.connect_remote(s, endpoint).unwrap();
    assert_eq!(frames(&c.recv(s).unwrap()), vec![id.clone(), Vec::new()]);
    assert_eq!(c.remote_written(r), b"early bird");
    // An accepted connection's generated id is what the option reads next.
    c.bind(s, ADDR);
    let _a = c.accept_remote(ADDR).unwrap();
    let accepted = frames(&c.recv(s).unwrap())[0].clone();
    assert_ne!(accepted, id);
    assert_eq!(c.socket(s).options().routing_id.to_vec(), accepted);
}

#[test]
fn closing_a_connect_peer_before_it_connects_drops_its_endpoint() {
    let mut c = Cluster::new(9);
    c.hold_connects_to(HELD);
    let s = c.add(Stream, opts(|_| {}));
    c.connect(s, HELD);
    let id = c.socket(s).options().routing_id.to_vec();
    assert_eq!(c.send(s, msg(&[&id, b"never sent"])), Ok(Sent::Queued));
    assert_eq!(c.send(s, msg(&[&id, b""])), Ok(Sent::Queued));
    assert!(!c.socket(s).routes_to(&id));
    // The connection that was being made is refused when it comes, and none is retried.
    c.run_until_idle();
    let endpoint = c.take_held_connect(s).unwrap();
    assert!(c.connect_remote(s, endpoint).is_none());
    c.run_for(std::time::Duration::from_secs(1));
    assert_eq!(c.held_connects(s), 0);
    assert!(c.recv(s).is_none());
}

#[test]
fn with_immediate_a_connect_peer_is_named_when_it_connects() {
    let mut c = Cluster::new(10);
    c.hold_connects_to(HELD);
    let s = c.add(Stream, opts(|o| o.immediate = true));
    c.connect(s, HELD);
    c.run_until_idle();
    assert!(c.socket(s).options().routing_id.is_empty());
    let endpoint = c.take_held_connect(s).unwrap();
    let _r = c.connect_remote(s, endpoint).unwrap();
    let id = frames(&c.recv(s).unwrap())[0].clone();
    assert_eq!(c.socket(s).options().routing_id.to_vec(), id);
}

#[test]
fn messages_carry_the_peer_address() {
    let mut c = Cluster::new(11);
    let s = stream_server(&mut c, |_| {});
    let r = c.accept_remote(ADDR).unwrap();
    let up = c.recv(s).unwrap();
    let address = up.property("Peer-Address").expect("on the notification");
    let text = String::from_utf8_lossy(address);
    assert!(
        text.parse::<std::net::IpAddr>().is_ok(),
        "an IP without a port: {text:?}"
    );
    let address = address.to_vec();
    assert!(c.remote_send(r, b"data"));
    let data = c.recv(s).unwrap();
    assert_eq!(data.property("Peer-Address"), Some(&address[..]));
    c.remote_reset(r);
    c.run_until_idle();
    let down = c.recv(s).unwrap();
    assert_eq!(frames(&down)[1], b"");
    assert_eq!(down.property("Peer-Address"), Some(&address[..]));
}

#[test]
fn hostile_input_is_just_chunks() {
    let mut c = Cluster::new(6);
    let s = stream_server(&mut c, |_| {});
    let r = c.accept_remote(ADDR).unwrap();
    c.recv(s).unwrap();
    // What would be a ZMTP greeting, a huge frame header, garbage: all data.
    let greeting = {
        let mut g = vec![0xff, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x7f, 3, 0];
        g.extend_from_slice(b"NULL");
        g.resize(64, 0);
        g
    };
    assert!(c.remote_send(r, &greeting));
    assert_eq!(frames(&c.recv(s).unwrap())[1], greeting);
    let big = vec![0xa5u8; 1 << 20];
    let mut got = 0;
    for piece in big.chunks(64 * 1024) {
        assert!(c.remote_send(r, piece));
        while let Some(m) = c.recv(s) {
            got += frames(&m)[1].len();
        }
    }
    assert_eq!(got, big.len());
    assert!(c.remote_open(r));
    // No timer of its own: an idle raw stream stays open (no handshake deadline).
    c.run_for(std::time::Duration::from_secs(120));
    assert!(c.remote_open(r));
}

#[test]
fn receive_queue_is_bounded_by_rcvhwm() {
    let mut c = Cluster::new(9);
    let s = stream_server(&mut c, |o| o.rcvhwm = 4);
    let r = c.accept_remote(ADDR).unwrap();
    for i in 0..10u8 {
        if !c.remote_wants_read(r) {
            break;
        }
        assert!(c.remote_send(r, &[i]));
    }
    assert!(!c.remote_wants_read(r), "held at RCVHWM");
    let mut n = 0;
    while c.recv(s).is_some() {
        n += 1;
    }
    assert!(n >= 4);
    assert!(c.remote_wants_read(r), "resumed once drained");
}

#[test]
fn two_stream_sockets_talk_raw() {
    let mut c = Cluster::new(10);
    let a = stream_server(&mut c, |_| {});
    let b = c.add_default(Stream);
    c.connect(b, ADDR);
    c.run_until_idle();
    let b_id = frames(&c.recv(b).unwrap())[0].clone();
    let a_id = frames(&c.recv(a).unwrap())[0].clone();
    assert_eq!(c.send(b, msg(&[&b_id, b"hello"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(
        frames(&c.recv(a).unwrap()),
        vec![a_id.clone(), b"hello".to_vec()]
    );
    assert_eq!(c.send(a, msg(&[&a_id, b"world"])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(
        frames(&c.recv(b).unwrap()),
        vec![b_id.clone(), b"world".to_vec()]
    );
    // Closing from one side is seen by the other.
    assert_eq!(c.send(b, msg(&[&b_id, b""])), Ok(Sent::Queued));
    c.run_until_idle();
    assert_eq!(frames(&c.recv(a).unwrap()), vec![a_id, Vec::new()]);
    assert!(c.recv(b).is_none());
}

#[test]
fn random_traffic_neither_panics_nor_loses_track() {
    use zmtp_testkit::rng::Rng;
    for seed in 0..20u64 {
        let mut rng = Rng::new(seed);
        let mut c = Cluster::new(100 + seed);
        let s = stream_server(&mut c, |o| {
            o.sndhwm = 8;
            o.rcvhwm = 8;
        });
        let mut remotes: Vec<Remote> = Vec::new();
        let mut ids: Vec<Vec<u8>> = vec![b"\x00\x00\x00\x00\x00".to_vec()];
        for _ in 0..400 {
            match rng.below(7) {
                0 => {
                    if let Some(r) = c.accept_remote(ADDR) {
                        remotes.push(r);
                    }
                }
                1 if !remotes.is_empty() => {
                    let r = remotes.swap_remove(rng.below(remotes.len()));
                    c.remote_reset(r);
                }
                2 if !remotes.is_empty() => {
                    let r = remotes[rng.below(remotes.len())];
                    if c.remote_wants_read(r) {
                        let len = rng.range(0, 3000);
                        let data = rng.bytes(len);
                        c.remote_send(r, &data);
                    }
                }
                3 if !remotes.is_empty() => {
                    let r = remotes[rng.below(remotes.len())];
                    let _ = c.remote_receive(r, rng.range(0, 100));
                }
                4 => {
                    // Any frames: known ids, made-up ones, empty data, odd counts.
                    let n = rng.range(1, 5);
                    let frames: Vec<Bytes> = (0..n)
                        .map(|_| match rng.below(4) {
                            0 => Bytes::from(ids[rng.below(ids.len())].clone()),
                            1 => Bytes::new(),
                            _ => {
                                let len = rng.range(0, 20);
                                Bytes::from(rng.bytes(len))
                            }
                        })
                        .collect();
                    let _ = c.send(s, Message::from(frames));
                }
                _ => {
                    while let Some(m) = c.recv(s) {
                        let f = frames(&m);
                        assert_eq!(f.len(), 2, "always [id][data]");
                        if !ids.contains(&f[0]) {
                            ids.push(f[0].clone());
                        }
                    }
                }
            }
            c.run_until_idle();
            remotes.retain(|&r| c.remote_open(r));
        }
    }
}

#[test]
fn stream_refuses_ws_wss_and_udp_in_both_directions() {
    use zmtp_proto::socket::{EndpointError, Options, Socket};
    let mut s = Socket::new(Stream, Options::default(), 1).unwrap();
    for (endpoint, transport) in [
        ("ws://127.0.0.1:5555", "ws"),
        ("wss://127.0.0.1:5555", "wss"),
        ("udp://127.0.0.1:5555", "udp"),
    ] {
        let bind = s.bind(endpoint);
        assert_eq!(
            bind,
            Err(EndpointError::IncompatibleTransport {
                transport,
                socket_type: Stream,
                bind: true,
            }),
            "{endpoint}"
        );
        let text = bind.unwrap_err().to_string();
        assert!(
            text.contains("STREAM socket cannot bind") && text.contains(transport),
            "{text}"
        );
        assert_eq!(
            s.connect(endpoint),
            Err(EndpointError::IncompatibleTransport {
                transport,
                socket_type: Stream,
                bind: false,
            }),
            "{endpoint}"
        );
    }
    // Nothing was started for the refused endpoints; tcp, ipc and inproc are fine.
    assert!(s.poll_command().is_none());
    for endpoint in ["tcp://127.0.0.1:5555", "ipc://@stream", "inproc://stream"] {
        assert!(s.bind(endpoint).is_ok(), "{endpoint}");
    }
    // Other types keep ws://.
    let mut dealer = Socket::new(Dealer, Options::default(), 1).unwrap();
    assert!(dealer.bind("ws://127.0.0.1:5556").is_ok());
}
