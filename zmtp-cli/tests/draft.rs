//! The `zmtp` binary with the draft socket types: CLIENT/SERVER, RADIO/DISH,
//! SCATTER/GATHER, PEER and CHANNEL, their options (`--join`, `--group`, `recv --echo` to a
//! routing id, `send -t peer`), output and exit codes.
//!
//! Each pair runs twice. The binary against itself, two processes ([`itself`]). And the
//! binary against a socket in this test's process, made by a
//! [`DraftMaker`](zmtp_conformance::draft::DraftMaker), the conformance suite's interface to
//! any implementation of the draft API: the scenarios take the maker as an argument, and
//! `against!` runs them all with one (both in `common/draft.rs`). They run here with our mio
//! driver and with the core under the suite's pumped test driver; the draft libzmq cannot
//! be linked into this package's tests, so `zmtp-conformance-draft`'s `cli_libzmq` test
//! binary runs the same scenarios with libzmq's draft sockets.

mod common;
#[macro_use]
#[path = "common/draft.rs"]
mod scenarios;

use std::ffi::OsString;

use common::{ok, run, text, usage_fails, GUARD};
use scenarios::{run_connected, spawn_bound};
use zmtp_conformance::draft::Ours;
use zmtp_conformance::mio_driver::MioDriver;
use zmtp_conformance::our::PollDriver;

against!(mio, Ours::<MioDriver>::new());
// The core under a driver that moves only when pumped: the scenarios keep a peer going
// while the binary runs.
against!(poll, Ours::<PollDriver>::new());

/// The binary against itself: both sides are `zmtp` processes.
mod itself {
    use super::*;

    #[test]
    fn client_to_a_server_that_echoes() {
        let (server, endpoint) = spawn_bound(&["recv", "-t", "server", "--echo", "-n", "2"], None);
        let client = run_connected(&["send", "-t", "client", "a", "b"], &endpoint, None);
        ok(&client);
        // Each request's reply, printed as -t req prints it.
        assert_eq!(text(&client.stdout), "a\nb\n");
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
        // Filtered out by the dish's groups, as it asked: not a failure.
        ok(&radio("c", &["nobody"]));
        ok(&radio("b", &["y", "z"]));
        let out = dish.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "a\tx\nb\ty\nb\tz\n");
    }

    /// Over `udp://` the RADIO sends every message (no join reaches it: nothing is
    /// refused) and the DISH keeps the groups it joined.
    #[test]
    fn radio_to_a_dish_over_udp() {
        let dish_args = [
            "recv",
            "-t",
            "dish",
            "--join",
            "a",
            "-n",
            "2",
            "-b",
            "udp://127.0.0.1:*",
            "-v",
            "--timeout",
            GUARD,
        ];
        let mut dish = common::spawn(&dish_args, None);
        let endpoint = dish.bound_endpoint();
        assert!(endpoint.starts_with("udp://127.0.0.1:"), "{endpoint}");
        let radio = |group: &str, body: &str| {
            run_connected(
                &["send", "-t", "radio", "--group", group, body],
                &endpoint,
                None,
            )
        };
        ok(&radio("c", "nobody"));
        ok(&radio("a", "x"));
        ok(&radio("a", "y"));
        let out = dish.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), "a\tx\na\ty\n");
    }

    /// `-t dgram`: `send` makes its two FRAME arguments (address, body) one datagram;
    /// `recv --echo` prints the sender's address and the body, and answers the address.
    #[test]
    fn dgram_sends_and_echoes_over_udp() {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("a timeout");
        let peer_at = peer.local_addr().expect("its address").to_string();
        let sender = [
            "send",
            "-t",
            "dgram",
            "-b",
            "udp://127.0.0.1:*",
            "--timeout",
            GUARD,
        ];
        let mut args = sender.to_vec();
        args.extend([peer_at.as_str(), "hi"]);
        ok(&common::spawn(&args, None).finish());
        let mut buf = [0u8; 16];
        let (n, _) = peer.recv_from(&mut buf).expect("the datagram");
        assert_eq!(&buf[..n], b"hi");

        let echo_args = [
            "recv",
            "-t",
            "dgram",
            "--echo",
            "-n",
            "1",
            "-b",
            "udp://127.0.0.1:*",
            "-v",
            "--timeout",
            GUARD,
        ];
        let mut echo = common::spawn(&echo_args, None);
        let endpoint = echo.bound_endpoint();
        let to = endpoint.strip_prefix("udp://").expect("a udp endpoint");
        peer.send_to(b"ping", to).expect("send");
        let (n, _) = peer.recv_from(&mut buf).expect("the echo");
        assert_eq!(&buf[..n], b"ping");
        let out = echo.finish();
        ok(&out);
        assert_eq!(text(&out.stdout), format!("{peer_at}\\x00\tping\n"));
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
