//! The `zmtp` binary with the draft socket types: CLIENT/SERVER, RADIO/DISH,
//! SCATTER/GATHER, PEER and CHANNEL, their options (`--join`, `--group`, `recv --echo` to a
//! routing id, `send -t peer`), output and exit codes.
//!
//! Each pair runs twice. The binary against itself, two processes ([`itself`]). And the
//! binary against a socket in this test's process, reached only through the [`Peer`] trait:
//! the scenarios are generic over it, and `against!` runs them all with one implementation.
//! They run with [`Ours`] (zmtp-mio) today; another implementation of the draft API, such
//! as libzmq's draft sockets, runs the same scenarios by implementing [`Peer`] and adding
//! one `against!` line.

mod common;

use std::ffi::OsString;
use std::time::Duration;

use common::{ok, run, spawn, text, usage_fails, Outcome, Running, GUARD};
use zmtp_mio::{Context, Message, Options, SocketType};

/// How long a peer waits to send or receive before the test fails.
const PEER_WAIT: Duration = Duration::from_secs(10);

/// A message as a [`Peer`] received it.
#[derive(Debug, PartialEq, Eq)]
struct Got {
    /// Its one frame.
    body: Vec<u8>,
    /// The routing id it came with (SERVER, PEER).
    routing_id: Option<u32>,
    /// The group it came with (DISH).
    group: Option<Vec<u8>>,
}

impl Got {
    /// A message with neither routing id nor group.
    fn plain(body: &str) -> Got {
        Got {
            body: body.as_bytes().to_vec(),
            routing_id: None,
            group: None,
        }
    }
}

/// The other side of a scenario: one draft socket in this process, bound or connected over
/// TCP on 127.0.0.1. Every call that fails panics (it fails the test).
trait Peer: Sized {
    /// A socket of type `ty` bound to an ephemeral port, and its endpoint.
    fn bind(ty: SocketType) -> (Self, String);
    /// A socket of type `ty` connected to `endpoint`; a DISH joins `groups` first.
    fn connect(ty: SocketType, endpoint: &str, groups: &[&str]) -> Self;
    /// A PEER connected to `endpoint` as `zmq_connect_peer` does, and the routing id of
    /// the peer there.
    fn connect_peer(endpoint: &str) -> (Self, u32);
    /// Send `body` as one message, to `routing_id` (SERVER, PEER) or `group` (RADIO).
    fn send(&self, body: &str, routing_id: Option<u32>, group: Option<&str>);
    /// The next message, waiting at most [`PEER_WAIT`].
    fn recv(&self) -> Got;
}

/// Our sockets, on the blocking zmtp-mio driver.
struct Ours {
    socket: zmtp_mio::Socket,
    /// Dropped after the socket (which lingers 0 ms: nothing waits).
    _context: Context,
}

impl Ours {
    fn new(ty: SocketType) -> Ours {
        let context = Context::new().expect("context");
        let options = Options::default().with_linger(Some(Duration::ZERO));
        let socket = context.socket_with(ty, options).expect("socket");
        socket.set_rcvtimeo(Some(PEER_WAIT));
        socket.set_sndtimeo(Some(PEER_WAIT));
        Ours {
            socket,
            _context: context,
        }
    }
}

impl Peer for Ours {
    fn bind(ty: SocketType) -> (Ours, String) {
        let ours = Ours::new(ty);
        let endpoint = ours.socket.bind("tcp://127.0.0.1:*").expect("bind");
        (ours, endpoint)
    }

    fn connect(ty: SocketType, endpoint: &str, groups: &[&str]) -> Ours {
        let ours = Ours::new(ty);
        for group in groups {
            ours.socket.join(group).expect("join");
        }
        ours.socket.connect(endpoint).expect("connect");
        ours
    }

    fn connect_peer(endpoint: &str) -> (Ours, u32) {
        let ours = Ours::new(SocketType::Peer);
        let id = ours.socket.connect_peer(endpoint).expect("connect_peer");
        (ours, id)
    }

    fn send(&self, body: &str, routing_id: Option<u32>, group: Option<&str>) {
        let mut msg = Message::from(body);
        if let Some(id) = routing_id {
            msg.set_routing_id(id).expect("routing id");
        }
        if let Some(group) = group {
            msg.set_group(group).expect("group");
        }
        self.socket.send(msg).expect("send");
    }

    fn recv(&self) -> Got {
        let msg = self.socket.recv().expect("a message in time");
        assert_eq!(msg.len(), 1, "{msg:?}");
        Got {
            body: msg.frames()[0].to_vec(),
            routing_id: msg.routing_id(),
            group: msg.group().map(<[u8]>::to_vec),
        }
    }
}

/// Every scenario, as tests in module `$module`, against peers of type `$peer`.
macro_rules! against {
    ($module:ident, $peer:ty) => {
        mod $module {
            use super::*;

            #[test]
            fn our_server_echoes_to_each_clients_routing_id() {
                server_echoes::<$peer>();
            }

            #[test]
            fn our_client_sends_each_frame_as_a_message() {
                client_sends::<$peer>();
            }

            #[test]
            fn our_radio_sends_to_a_joined_group_and_exits_4_for_another() {
                radio_sends::<$peer>();
            }

            #[test]
            fn our_dish_prints_the_groups_it_joined_group_first() {
                dish_receives::<$peer>();
            }

            #[test]
            fn our_scatter_sends_each_frame_of_each_line() {
                scatter_sends::<$peer>();
            }

            #[test]
            fn our_gather_prints_what_a_scatter_sends() {
                gather_receives::<$peer>();
            }

            #[test]
            fn our_peer_sends_to_the_peer_it_connected_to() {
                peer_sends::<$peer>();
            }

            #[test]
            fn our_peer_echoes_to_the_sender() {
                peer_echoes::<$peer>();
            }

            #[test]
            fn our_channel_sends_and_echoes() {
                channel_both_ways::<$peer>();
            }
        }
    };
}

against!(ours, Ours);

/// Start `zmtp` with `args` and a bound endpoint (`-v` is added); the endpoint it bound.
fn spawn_bound(args: &[&str], stdin: Option<&[u8]>) -> (Running, String) {
    let mut all = args.to_vec();
    all.extend(["-b", "tcp://127.0.0.1:*", "-v", "--timeout", GUARD]);
    let mut running = spawn(&all, stdin);
    let endpoint = running.bound_endpoint();
    (running, endpoint)
}

/// Run `zmtp` with `args`, connected to `endpoint`, to its end.
fn run_connected(args: &[&str], endpoint: &str, stdin: Option<&[u8]>) -> Outcome {
    let mut all = args.to_vec();
    all.extend(["-c", endpoint, "--timeout", GUARD]);
    run(&all, stdin)
}

/// `recv -t server --echo`: each message goes back to the client it came from.
fn server_echoes<P: Peer>() {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "server", "--echo", "-n", "2"], None);
    let client = P::connect(SocketType::Client, &endpoint, &[]);
    for body in ["ping", "tab\there"] {
        client.send(body, None, None);
        assert_eq!(client.recv(), Got::plain(body));
    }
    let out = running.finish();
    ok(&out);
    // The routing id is not printed; a TAB in a frame is escaped as usual.
    assert_eq!(text(&out.stdout), "ping\ntab\\there\n");
}

/// `send -t client A B -n 2`: four messages of one frame, A B A B.
fn client_sends<P: Peer>() {
    let (server, endpoint) = P::bind(SocketType::Server);
    let out = run_connected(
        &["send", "-t", "client", "-n", "2", "a", "b"],
        &endpoint,
        None,
    );
    ok(&out);
    let got: Vec<Got> = (0..4).map(|_| server.recv()).collect();
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
fn radio_sends<P: Peer>() {
    let radio = ["send", "-t", "radio", "--wait-subscribers", "1", "--group"];
    let (running, endpoint) =
        spawn_bound(&[&radio[..], &["weather", "rain", "snow"]].concat(), None);
    let dish = P::connect(SocketType::Dish, &endpoint, &["weather"]);
    let out = running.finish();
    ok(&out);
    for body in ["rain", "snow"] {
        let expected = Got {
            group: Some(b"weather".to_vec()),
            ..Got::plain(body)
        };
        assert_eq!(dish.recv(), expected);
    }

    let (running, endpoint) = spawn_bound(&[&radio[..], &["news", "quiet"]].concat(), None);
    let _dish = P::connect(SocketType::Dish, &endpoint, &["weather"]);
    let out = running.finish();
    assert_eq!(out.code, Some(4), "{out:?}");
    assert!(
        out.stderr
            .contains("1 of 1 message not delivered: no dish had joined its group"),
        "{out:?}"
    );
}

/// `recv -t dish --join A --join B`: the messages of A and B, each line starting with its
/// group; another group's never.
fn dish_receives<P: Peer>() {
    let (radio, endpoint) = P::bind(SocketType::Radio);
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "dish",
            "-c",
            &endpoint,
            "--join",
            "weather",
            "--join",
            "sport",
            "-n",
            "6",
            "--timeout",
            GUARD,
        ],
        None,
    );
    // Send until the dish has had enough (its joins arrive at some point).
    while !running.exited() {
        radio.send("sunny", None, Some("weather"));
        radio.send("quiet", None, Some("news"));
        radio.send("goal", None, Some("sport"));
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = running.finish();
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    for wanted in ["weather\tsunny", "sport\tgoal"] {
        assert!(lines.contains(&wanted), "{wanted:?} not in {lines:?}");
    }
    assert!(
        lines
            .iter()
            .all(|l| ["weather\tsunny", "sport\tgoal"].contains(l)),
        "{lines:?}"
    );
}

/// `send -t scatter` from standard input: each TAB-separated frame a message of its own.
fn scatter_sends<P: Peer>() {
    let (gather, endpoint) = P::bind(SocketType::Gather);
    let out = run_connected(&["send", "-t", "scatter"], &endpoint, Some(b"a\tb\nc\n"));
    ok(&out);
    for body in ["a", "b", "c"] {
        assert_eq!(gather.recv(), Got::plain(body));
    }
}

/// `recv -t gather` prints what a scatter sends, one line each.
fn gather_receives<P: Peer>() {
    let (scatter, endpoint) = P::bind(SocketType::Scatter);
    let running = spawn(
        &[
            "recv",
            "-t",
            "gather",
            "-c",
            &endpoint,
            "-n",
            "2",
            "--timeout",
            GUARD,
        ],
        None,
    );
    scatter.send("x", None, None);
    scatter.send("y", None, None);
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "x\ny\n");
}

/// `send -t peer -c EP`: every message to the one peer it connected to.
fn peer_sends<P: Peer>() {
    let (peer, endpoint) = P::bind(SocketType::Peer);
    let out = run_connected(&["send", "-t", "peer", "hello", "world"], &endpoint, None);
    ok(&out);
    let (first, second) = (peer.recv(), peer.recv());
    assert_eq!(
        (&first.body[..], &second.body[..]),
        (&b"hello"[..], &b"world"[..])
    );
    assert!(first.routing_id.is_some(), "{first:?}");
    assert_eq!(first.routing_id, second.routing_id);
}

/// `recv -t peer --echo`: the message goes back to the peer it came from.
fn peer_echoes<P: Peer>() {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "peer", "--echo", "-n", "1"], None);
    let (peer, id) = P::connect_peer(&endpoint);
    peer.send("hi", Some(id), None);
    let echo = peer.recv();
    assert_eq!(
        echo,
        Got {
            routing_id: Some(id),
            ..Got::plain("hi")
        }
    );
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "hi\n");
}

/// `recv -t channel --echo` answers; `send -t channel A B` sends two messages.
fn channel_both_ways<P: Peer>() {
    let (running, endpoint) = spawn_bound(&["recv", "-t", "channel", "--echo", "-n", "1"], None);
    let channel = P::connect(SocketType::Channel, &endpoint, &[]);
    channel.send("c1", None, None);
    assert_eq!(channel.recv(), Got::plain("c1"));
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "c1\n");

    let (channel, endpoint) = P::bind(SocketType::Channel);
    let out = run_connected(&["send", "-t", "channel", "x", "y"], &endpoint, None);
    ok(&out);
    assert_eq!(channel.recv(), Got::plain("x"));
    assert_eq!(channel.recv(), Got::plain("y"));
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
