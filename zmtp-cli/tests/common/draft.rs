//! The draft scenarios of the `zmtp` binary: the binary as one process, against a socket of
//! any [`DraftMaker`] (the conformance suite's interface to an implementation of the draft
//! API) in the test's own process, for every draft type (CLIENT/SERVER, RADIO/DISH,
//! SCATTER/GATHER, PEER, CHANNEL), and [`against!`], which makes them tests for one maker.
//!
//! Shared by two test binaries, which include it as the module `scenarios` of their crate
//! root (`#[macro_use] #[path = ".../common/draft.rs"] mod scenarios;`) beside
//! `common/mod.rs` as the module `common`: `zmtp-cli`'s `draft` (our own drivers as the
//! peer) and `zmtp-conformance-draft`'s `cli_libzmq` (the draft libzmq as the peer; that
//! binary links libzmq 4.3.5 statically, which no binary of `zmtp-cli` may).

// Each test crate uses its own part of this module.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use crate::common::{ok, spawn, text, Outcome, Running, GUARD, LIMIT};
use zmtp_conformance::draft::{Curve, Draft, DraftMaker, DraftSocket, Refusal};
use zmtp_tokio::SocketType;

/// How long a peer waits to send or receive before the test fails.
const PEER_WAIT: Duration = Duration::from_secs(10);

/// The other side of a scenario: a socket of `maker`'s, over TCP on 127.0.0.1 with NULL
/// security, with waits that give up after [`PEER_WAIT`]. Every failure panics (it fails the
/// test).
struct Peer {
    socket: Box<dyn DraftSocket>,
}

impl Peer {
    /// A socket of type `ty` bound to an ephemeral port, and its endpoint.
    fn bind(maker: &dyn DraftMaker, ty: SocketType) -> (Peer, String) {
        let mut socket = maker.socket(ty, &Curve::Off);
        let endpoint = socket.bind("tcp://127.0.0.1:*").expect("bind");
        (Peer { socket }, endpoint)
    }

    /// A socket of type `ty` connected to `endpoint`; a DISH joins `groups` first.
    fn connect(maker: &dyn DraftMaker, ty: SocketType, endpoint: &str, groups: &[&str]) -> Peer {
        let mut socket = maker.socket(ty, &Curve::Off);
        for group in groups {
            socket.join(group.as_bytes());
        }
        socket.connect(endpoint).expect("connect");
        Peer { socket }
    }

    /// A PEER connected to `endpoint` as `zmq_connect_peer` does, and the routing id of
    /// the peer there.
    fn connect_peer(maker: &dyn DraftMaker, endpoint: &str) -> (Peer, u32) {
        let mut socket = maker.socket(SocketType::Peer, &Curve::Off);
        let id = socket.connect_peer(endpoint).expect("connect_peer");
        (Peer { socket }, id)
    }

    /// Call `attempt` until it gives a value, letting the socket make progress in between.
    fn within<T>(
        &mut self,
        what: &str,
        mut attempt: impl FnMut(&mut dyn DraftSocket) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + PEER_WAIT;
        loop {
            if let Some(value) = attempt(self.socket.as_mut()) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: nothing after {PEER_WAIT:?}"
            );
            self.pause(Duration::from_millis(1));
        }
    }

    /// Let the socket make progress for `duration`.
    fn pause(&mut self, duration: Duration) {
        let end = Instant::now() + duration;
        loop {
            self.socket.pump();
            if Instant::now() >= end {
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Send `msg`, waiting while the socket would block.
    fn send(&mut self, msg: Draft) {
        self.within("send", |s| match s.try_send(&msg) {
            Ok(()) => Some(()),
            Err(Refusal::WouldBlock) => None,
            Err(e) => panic!("send {msg:?}: {e:?}"),
        });
    }

    /// The next message.
    fn recv(&mut self) -> Draft {
        self.within("recv", |s| s.try_recv())
    }

    /// Keep the socket going until `running` exits (or [`LIMIT`] passes), then its outcome.
    fn finish(&mut self, mut running: Running) -> Outcome {
        let started = Instant::now();
        while !running.exited() && started.elapsed() < LIMIT {
            self.pause(Duration::from_millis(1));
        }
        running.finish()
    }
}

/// Every scenario, as tests in module `$module`, against the sockets `$maker` makes (an
/// expression of a [`DraftMaker`] type, its names resolved at the crate root).
macro_rules! against {
    ($module:ident, $maker:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn our_server_echoes_to_each_clients_routing_id() {
                $crate::scenarios::server_echoes(&$maker);
            }

            #[test]
            fn our_client_sends_each_frame_as_a_message() {
                $crate::scenarios::client_sends(&$maker);
            }

            #[test]
            fn our_radio_sends_to_a_joined_group_and_not_to_another() {
                $crate::scenarios::radio_sends(&$maker);
            }

            #[test]
            fn our_dish_prints_the_groups_it_joined_group_first() {
                $crate::scenarios::dish_receives(&$maker);
            }

            #[test]
            fn our_scatter_sends_each_frame_of_each_line() {
                $crate::scenarios::scatter_sends(&$maker);
            }

            #[test]
            fn our_gather_prints_what_a_scatter_sends() {
                $crate::scenarios::gather_receives(&$maker);
            }

            #[test]
            fn our_peer_sends_to_the_peer_it_connected_to() {
                $crate::scenarios::peer_sends(&$maker);
            }

            #[test]
            fn our_peer_echoes_to_the_sender() {
                $crate::scenarios::peer_echoes(&$maker);
            }

            #[test]
            fn our_channel_sends_and_echoes() {
                $crate::scenarios::channel_both_ways(&$maker);
            }
        }
    };
}

/// Start `zmtp` with `args` and a bound endpoint (`-v` is added); the endpoint it bound.
pub fn spawn_bound(args: &[&str], stdin: Option<&[u8]>) -> (Running, String) {
    let mut all = args.to_vec();
    all.extend(["-b", "tcp://127.0.0.1:*", "-v", "--timeout", GUARD]);
    let mut running = spawn(&all, stdin);
    let endpoint = running.bound_endpoint();
    (running, endpoint)
}

/// Start `zmtp` with `args`, connected to `endpoint`.
pub fn spawn_connected(args: &[&str], endpoint: &str, stdin: Option<&[u8]>) -> Running {
    let mut all = args.to_vec();
    all.extend(["-c", endpoint, "--timeout", GUARD]);
    spawn(&all, stdin)
}

/// Run `zmtp` with `args`, connected to `endpoint`, to its end.
pub fn run_connected(args: &[&str], endpoint: &str, stdin: Option<&[u8]>) -> Outcome {
    spawn_connected(args, endpoint, stdin).finish()
}

/// A message of `body` alone.
pub fn plain(body: &str) -> Draft {
    Draft::new(body)
}

/// `recv -t server --echo`: each message goes back to the client it came from.
pub fn server_echoes(maker: &dyn DraftMaker) {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "server", "--echo", "-n", "2"], None);
    let mut client = Peer::connect(maker, SocketType::Client, &endpoint, &[]);
    for body in ["ping", "tab\there"] {
        client.send(plain(body));
        assert_eq!(client.recv(), plain(body));
    }
    let out = client.finish(running);
    ok(&out);
    // The routing id is not printed; a TAB in a frame is escaped as usual.
    assert_eq!(text(&out.stdout), "ping\ntab\\there\n");
}

/// `send -t client A B -n 2`: four messages of one frame, A B A B, from one routing id,
/// each waiting for its reply, which is printed (as `-t req` does).
pub fn client_sends(maker: &dyn DraftMaker) {
    let (mut server, endpoint) = Peer::bind(maker, SocketType::Server);
    let args = ["send", "-t", "client", "-n", "2", "a", "b"];
    let running = spawn_connected(&args, &endpoint, None);
    let got: Vec<Draft> = (0..4)
        .map(|i| {
            let request = server.recv();
            let id = request.routing_id.expect("a routing id");
            let body = String::from_utf8_lossy(&request.body).into_owned();
            server.send(Draft::to(id, format!("re {body} {i}")));
            request
        })
        .collect();
    let out = server.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "re a 0\nre b 1\nre a 2\nre b 3\n");
    let bodies: Vec<&[u8]> = got.iter().map(|g| &g.body[..]).collect();
    assert_eq!(bodies, [b"a", b"b", b"a", b"b"]);
    let id = got[0].routing_id;
    assert!(
        id.is_some() && got.iter().all(|g| g.routing_id == id),
        "{got:?}"
    );
}

/// `send -t radio --group G --wait-subscribers 1` waits for a dish that joined G; to a
/// group that dish has not joined, nothing is delivered, as the dish asked (exit 0).
pub fn radio_sends(maker: &dyn DraftMaker) {
    let radio = ["send", "-t", "radio", "--wait-subscribers", "1", "--group"];
    let (running, endpoint) =
        spawn_bound(&[&radio[..], &["weather", "rain", "snow"]].concat(), None);
    let mut dish = Peer::connect(maker, SocketType::Dish, &endpoint, &["weather"]);
    let out = dish.finish(running);
    ok(&out);
    for body in ["rain", "snow"] {
        assert_eq!(dish.recv(), Draft::in_group(b"weather", body));
    }

    let (running, endpoint) = spawn_bound(&[&radio[..], &["news", "quiet"]].concat(), None);
    let mut dish = Peer::connect(maker, SocketType::Dish, &endpoint, &["weather"]);
    let out = dish.finish(running);
    // A dish had joined a group, not this one: filtered out as it asked, not a failure.
    ok(&out);
    assert!(!out.stderr.contains("not delivered"), "{out:?}");
    dish.pause(Duration::from_millis(50));
    assert!(dish.socket.try_recv().is_none());
}

/// `recv -t dish --join A --join B`: the messages of A and B, each line starting with its
/// group; another group's never.
pub fn dish_receives(maker: &dyn DraftMaker) {
    let (mut radio, endpoint) = Peer::bind(maker, SocketType::Radio);
    let args = [
        "recv", "-t", "dish", "--join", "weather", "--join", "sport", "-n", "6",
    ];
    let mut running = spawn_connected(&args, &endpoint, None);
    // Send until the dish has had enough (its joins arrive at some point).
    while !running.exited() {
        radio.send(Draft::in_group(b"weather", "sunny"));
        radio.send(Draft::in_group(b"news", "quiet"));
        radio.send(Draft::in_group(b"sport", "goal"));
        radio.pause(Duration::from_millis(10));
    }
    let out = radio.finish(running);
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    let expected = ["weather\tsunny", "sport\tgoal"];
    for wanted in expected {
        assert!(lines.contains(&wanted), "{wanted:?} not in {lines:?}");
    }
    assert!(lines.iter().all(|l| expected.contains(l)), "{lines:?}");
}

/// `send -t scatter` from standard input: each TAB-separated frame a message of its own.
pub fn scatter_sends(maker: &dyn DraftMaker) {
    let (mut gather, endpoint) = Peer::bind(maker, SocketType::Gather);
    let running = spawn_connected(&["send", "-t", "scatter"], &endpoint, Some(b"a\tb\nc\n"));
    ok(&gather.finish(running));
    for body in ["a", "b", "c"] {
        assert_eq!(gather.recv(), plain(body));
    }
}

/// `recv -t gather` prints what a scatter sends, one line each.
pub fn gather_receives(maker: &dyn DraftMaker) {
    let (mut scatter, endpoint) = Peer::bind(maker, SocketType::Scatter);
    let running = spawn_connected(&["recv", "-t", "gather", "-n", "2"], &endpoint, None);
    scatter.send(plain("x"));
    scatter.send(plain("y"));
    let out = scatter.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "x\ny\n");
}

/// `send -t peer -c EP`: every message to the one peer it connected to.
pub fn peer_sends(maker: &dyn DraftMaker) {
    let (mut peer, endpoint) = Peer::bind(maker, SocketType::Peer);
    let running = spawn_connected(&["send", "-t", "peer", "hello", "world"], &endpoint, None);
    ok(&peer.finish(running));
    let (first, second) = (peer.recv(), peer.recv());
    assert_eq!(
        (&first.body[..], &second.body[..]),
        (&b"hello"[..], &b"world"[..])
    );
    assert!(first.routing_id.is_some(), "{first:?}");
    assert_eq!(first.routing_id, second.routing_id);
}

/// `recv -t peer --echo`: the message goes back to the peer it came from.
pub fn peer_echoes(maker: &dyn DraftMaker) {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "peer", "--echo", "-n", "1"], None);
    let (mut peer, id) = Peer::connect_peer(maker, &endpoint);
    peer.send(Draft::to(id, "hi"));
    assert_eq!(peer.recv(), Draft::to(id, "hi"));
    let out = peer.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "hi\n");
}

/// `recv -t channel --echo` answers; `send -t channel A B` sends two messages.
pub fn channel_both_ways(maker: &dyn DraftMaker) {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "channel", "--echo", "-n", "1"], None);
    let mut channel = Peer::connect(maker, SocketType::Channel, &endpoint, &[]);
    channel.send(plain("c1"));
    assert_eq!(channel.recv(), plain("c1"));
    let out = channel.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "c1\n");

    let (mut channel, endpoint) = Peer::bind(maker, SocketType::Channel);
    let running = spawn_connected(&["send", "-t", "channel", "x", "y"], &endpoint, None);
    ok(&channel.finish(running));
    assert_eq!(channel.recv(), plain("x"));
    assert_eq!(channel.recv(), plain("y"));
}
