//! The `zmtp` binary with the draft socket types: CLIENT/SERVER, RADIO/DISH,
//! SCATTER/GATHER, PEER and CHANNEL, their options (`--join`, `--group`, `recv --echo` to a
//! routing id, `send -t peer`), output and exit codes.
//!
//! Each pair runs twice. The binary against itself, two processes ([`itself`]). And the
//! binary against a socket in this test's process, made by a
//! [`DraftMaker`](zmtp_conformance::draft::DraftMaker), the conformance suite's interface to
//! any implementation of the draft API: the scenarios take the maker as an argument, and
//! `against!` runs them all with one. They run with our mio driver and with the core under
//! the suite's pumped test driver today; libzmq's draft sockets run the same scenarios by
//! giving `against!` their maker.

mod common;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use common::{ok, run, spawn, text, usage_fails, Outcome, Running, GUARD, LIMIT};
use zmtp_conformance::draft::{Curve, Draft, DraftMaker, DraftSocket, Ours, Refusal};
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::PollDriver;
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

/// Every scenario, as tests in module `$module`, against the sockets `$maker` makes.
macro_rules! against {
    ($module:ident, $maker:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn our_server_echoes_to_each_clients_routing_id() {
                server_echoes(&$maker);
            }

            #[test]
            fn our_client_sends_each_frame_as_a_message() {
                client_sends(&$maker);
            }

            #[test]
            fn our_radio_sends_to_a_joined_group_and_exits_4_for_another() {
                radio_sends(&$maker);
            }

            #[test]
            fn our_dish_prints_the_groups_it_joined_group_first() {
                dish_receives(&$maker);
            }

            #[test]
            fn our_scatter_sends_each_frame_of_each_line() {
                scatter_sends(&$maker);
            }

            #[test]
            fn our_gather_prints_what_a_scatter_sends() {
                gather_receives(&$maker);
            }

            #[test]
            fn our_peer_sends_to_the_peer_it_connected_to() {
                peer_sends(&$maker);
            }

            #[test]
            fn our_peer_echoes_to_the_sender() {
                peer_echoes(&$maker);
            }

            #[test]
            fn our_channel_sends_and_echoes() {
                channel_both_ways(&$maker);
            }
        }
    };
}

against!(mio, Ours::<MioDriver>::new());
// The core under a driver that moves only when pumped: the scenarios keep a peer going
// while the binary runs.
against!(poll, Ours::<PollDriver>::new());

/// Start `zmtp` with `args` and a bound endpoint (`-v` is added); the endpoint it bound.
fn spawn_bound(args: &[&str], stdin: Option<&[u8]>) -> (Running, String) {
    let mut all = args.to_vec();
    all.extend(["-b", "tcp://127.0.0.1:*", "-v", "--timeout", GUARD]);
    let mut running = spawn(&all, stdin);
    let endpoint = running.bound_endpoint();
    (running, endpoint)
}

/// Start `zmtp` with `args`, connected to `endpoint`.
fn spawn_connected(args: &[&str], endpoint: &str, stdin: Option<&[u8]>) -> Running {
    let mut all = args.to_vec();
    all.extend(["-c", endpoint, "--timeout", GUARD]);
    spawn(&all, stdin)
}

/// Run `zmtp` with `args`, connected to `endpoint`, to its end.
fn run_connected(args: &[&str], endpoint: &str, stdin: Option<&[u8]>) -> Outcome {
    spawn_connected(args, endpoint, stdin).finish()
}

/// A message of `body` alone.
fn plain(body: &str) -> Draft {
    Draft::new(body)
}

/// `recv -t server --echo`: each message goes back to the client it came from.
fn server_echoes(maker: &dyn DraftMaker) {
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

/// `send -t client A B -n 2`: four messages of one frame, A B A B, from one routing id.
fn client_sends(maker: &dyn DraftMaker) {
    let (mut server, endpoint) = Peer::bind(maker, SocketType::Server);
    let args = ["send", "-t", "client", "-n", "2", "a", "b"];
    let out = server.finish(spawn_connected(&args, &endpoint, None));
    ok(&out);
    let got: Vec<Draft> = (0..4).map(|_| server.recv()).collect();
    let bodies: Vec<&[u8]> = got.iter().map(|g| &g.body[..]).collect();
    assert_eq!(bodies, [b"a", b"b", b"a", b"b"]);
    let id = got[0].routing_id;
    assert!(
        id.is_some() && got.iter().all(|g| g.routing_id == id),
        "{got:?}"
    );
}

/// `send -t radio --group G --wait-subscribers 1` waits for a dish that joined G; to a
/// group that dish has not joined, nothing is delivered (exit 4).
fn radio_sends(maker: &dyn DraftMaker) {
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
    assert_eq!(out.code, Some(4), "{out:?}");
    assert!(
        out.stderr
            .contains("1 of 1 message not delivered: no dish had joined its group"),
        "{out:?}"
    );
}

/// `recv -t dish --join A --join B`: the messages of A and B, each line starting with its
/// group; another group's never.
fn dish_receives(maker: &dyn DraftMaker) {
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
fn scatter_sends(maker: &dyn DraftMaker) {
    let (mut gather, endpoint) = Peer::bind(maker, SocketType::Gather);
    let running = spawn_connected(&["send", "-t", "scatter"], &endpoint, Some(b"a\tb\nc\n"));
    ok(&gather.finish(running));
    for body in ["a", "b", "c"] {
        assert_eq!(gather.recv(), plain(body));
    }
}

/// `recv -t gather` prints what a scatter sends, one line each.
fn gather_receives(maker: &dyn DraftMaker) {
    let (mut scatter, endpoint) = Peer::bind(maker, SocketType::Scatter);
    let running = spawn_connected(&["recv", "-t", "gather", "-n", "2"], &endpoint, None);
    scatter.send(plain("x"));
    scatter.send(plain("y"));
    let out = scatter.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "x\ny\n");
}

/// `send -t peer -c EP`: every message to the one peer it connected to.
fn peer_sends(maker: &dyn DraftMaker) {
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
fn peer_echoes(maker: &dyn DraftMaker) {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "peer", "--echo", "-n", "1"], None);
    let (mut peer, id) = Peer::connect_peer(maker, &endpoint);
    peer.send(Draft::to(id, "hi"));
    assert_eq!(peer.recv(), Draft::to(id, "hi"));
    let out = peer.finish(running);
    ok(&out);
    assert_eq!(text(&out.stdout), "hi\n");
}

/// `recv -t channel --echo` answers; `send -t channel A B` sends two messages.
fn channel_both_ways(maker: &dyn DraftMaker) {
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

/// The binary against itself: both sides are `zmtp` processes.
mod itself {
    use super::*;

    #[test]
    fn client_to_a_server_that_echoes() {
        let (server, endpoint) = spawn_bound(&["recv", "-t", "server", "--echo", "-n", "2"], None);
        ok(&run_connected(
            &["send", "-t", "client", "a", "b"],
            &endpoint,
            None,
        ));
        let out = server.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "a\nb\n");
    }

    #[test]
    fn radio_to_a_dish_of_two_groups() {
        let (dish, endpoint) = spawn_bound(
            &[
                "recv", "-t", "dish", "--join", "a", "--join", "b", "-n", "3",
            ],
            None,
        );
        let radio = |group: &str, bodies: &[&str]| {
            let mut args = vec![
                "send",
                "-t",
                "radio",
                "--wait-subscribers",
                "1",
                "--group",
                group,
            ];
            args.extend(bodies);
            run_connected(&args, &endpoint, None)
        };
        ok(&radio("a", &["x"]));
        let other = radio("c", &["nobody"]);
        assert_eq!(other.code, Some(4), "{other:?}");
        ok(&radio("b", &["y", "z"]));
        let out = dish.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "a\tx\nb\ty\nb\tz\n");
    }

    #[test]
    fn scatter_to_gather() {
        let (gather, endpoint) = spawn_bound(&["recv", "-t", "gather", "-n", "3"], None);
        ok(&run_connected(
            &["send", "-t", "scatter"],
            &endpoint,
            Some(b"1\n2\t3\n"),
        ));
        let out = gather.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "1\n2\n3\n");
    }

    #[test]
    fn peer_to_a_peer_that_echoes() {
        let (echo, endpoint) = spawn_bound(&["recv", "-t", "peer", "--echo", "-n", "2"], None);
        ok(&run_connected(
            &["send", "-t", "peer", "p", "q"],
            &endpoint,
            None,
        ));
        let out = echo.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "p\nq\n");
    }

    #[test]
    fn channel_to_channel() {
        let (receiver, endpoint) = spawn_bound(&["recv", "-t", "channel", "-n", "2"], None);
        ok(&run_connected(
            &["send", "-t", "channel", "--hex-frames", "00ff", "0a"],
            &endpoint,
            None,
        ));
        let out = receiver.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "\\x00\\xff\n\\n\n");
    }

    #[test]
    fn radio_without_a_dish_exits_4_or_3_waiting() {
        let alone = [
            "send",
            "-t",
            "radio",
            "-b",
            "tcp://127.0.0.1:*",
            "--group",
            "g",
        ];
        let out = run(&[&alone[..], &["--timeout", GUARD, "x"]].concat(), None);
        assert_eq!(out.code, Some(4), "{out:?}");
        assert!(out.stderr.contains("no dish had joined"), "{out:?}");
        let args = ["--wait-subscribers", "1", "--timeout", "300", "x"];
        let out = run(&[&alone[..], &args].concat(), None);
        assert_eq!(out.code, Some(3), "{out:?}");
        assert!(out.stderr.contains("0 of 1 connected"), "{out:?}");
    }
}

#[test]
fn draft_usage_errors_exit_1_with_one_line() {
    let ep = "tcp://127.0.0.1:1";
    let long = "g".repeat(256);
    let cases: &[(&str, &str)] = &[
        ("send -t server -c EP x", "SERVER socket cannot send first"),
        ("send -t dish -c EP x", "DISH socket cannot send"),
        ("send -t gather -c EP x", "GATHER socket cannot send"),
        ("recv -t radio -c EP", "RADIO socket cannot receive"),
        ("recv -t scatter -c EP", "SCATTER socket cannot receive"),
        ("send -t radio -c EP x", "--group"),
        (
            "send -t push -c EP --group g x",
            "--group needs a radio socket",
        ),
        ("send -t radio -c EP --group LONG x", "at most 255 bytes"),
        ("recv -t dish -c EP --group g", "--group"),
        ("recv -t dish -c EP", "--join"),
        (
            "recv -t sub -c EP --join g",
            "--join needs a dish socket, not SUB",
        ),
        ("recv -t dish -c EP --join LONG", "at most 255 bytes"),
        ("send -t radio -c EP --join g x", "--join"),
        ("recv -t dish -c EP --join g --subscribe g", "--subscribe"),
        ("send -t peer -b EP x", "one -c EP"),
        ("send -t peer -c EP -c EP x", "one -c EP"),
        ("send -t peer -c EP -b EP x", "one -c EP"),
        ("recv -t gather -c EP --echo", "--echo"),
        ("recv -t dish -c EP --join g --echo", "--echo"),
        (
            "send -t client -c EP --wait-subscribers 1 x",
            "--wait-subscribers",
        ),
        ("send -t channel -c EP --echo x", "--echo"),
    ];
    for (line, needle) in cases {
        let args: Vec<OsString> = line
            .split(' ')
            .map(|w| OsString::from(w.replace("EP", ep).replace("LONG", &long)))
            .collect();
        usage_fails(&args, needle);
    }
}
