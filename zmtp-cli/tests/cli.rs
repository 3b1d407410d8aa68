//! The `zmtp` binary against libzmq peers (through zmtp-conformance's FFI): every socket
//! pattern in both directions, PLAIN and CURVE with right and wrong credentials on either
//! side, multipart and hex frames, keygen, bench, and every exit code.

mod common;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use common::{ok, push_hello_world, run, spawn, spawn_os, text, usage_fails, Outcome, GUARD};

use zmtp_conformance::ffi::{
    Ctx, ZSocket, ZMQ_CURVE_PUBLICKEY, ZMQ_CURVE_SECRETKEY, ZMQ_CURVE_SERVERKEY, ZMQ_DEALER,
    ZMQ_EVENT_ALL, ZMQ_EVENT_HANDSHAKE_SUCCEEDED, ZMQ_PUB, ZMQ_PULL, ZMQ_PUSH, ZMQ_REP, ZMQ_REQ,
    ZMQ_ROUTER, ZMQ_ROUTING_ID, ZMQ_SUB,
};
use zmtp_conformance::security::{
    expect_auth_failure, key, stranger_keys, zcurve_client, zcurve_server, zplain_client,
    zplain_server, zsock, CLIENT_PUBLIC, CLIENT_SECRET, SERVER_PUBLIC, SERVER_SECRET,
};
use zmtp_conformance::zap::ZapHandler;
use zmtp_tokio::{KeyPair, PublicKey, SecretKey};

/// A libzmq socket of `kind` bound to an ephemeral TCP port; its endpoint.
fn zbind<'c>(ctx: &'c Ctx, kind: i32) -> (ZSocket<'c>, String) {
    let z = zsock(ctx, kind);
    z.bind("tcp://127.0.0.1:*").expect("bind");
    let ep = z.last_endpoint().expect("last endpoint");
    (z, ep)
}

fn frames(list: &[&[u8]]) -> Vec<Vec<u8>> {
    list.iter().map(|f| f.to_vec()).collect()
}

// ----- patterns against libzmq ---------------------------------------------------------

#[test]
fn push_to_a_libzmq_pull() {
    let ctx = Ctx::new();
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = push_hello_world(&ep);
    assert!(out.stdout.is_empty());
    assert_eq!(
        pull.recv_multipart().unwrap(),
        frames(&[b"hello", b"world"])
    );
}

#[test]
fn libzmq_push_to_our_pull() {
    let ctx = Ctx::new();
    let (push, ep) = zbind(&ctx, ZMQ_PUSH);
    let running = spawn(
        &[
            "recv",
            "-t",
            "PULL",
            "-c",
            &ep,
            "-n",
            "3",
            "--hwm",
            "10",
            "--timeout",
            GUARD,
        ],
        None,
    );
    for m in ["m0", "m1", "m2"] {
        push.send_multipart(&[m.as_bytes()]).unwrap();
    }
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "m0\nm1\nm2\n");
}

#[test]
fn our_sub_with_a_prefix_gets_only_matching_messages_from_a_libzmq_pub() {
    let ctx = Ctx::new();
    let (publisher, ep) = zbind(&ctx, ZMQ_PUB);
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "sub",
            "-c",
            &ep,
            "--subscribe",
            "weather",
            "--subscribe",
            "sport",
            "-n",
            "4",
            "--timeout",
            GUARD,
        ],
        None,
    );
    // Publish until the subscriber has had enough (its subscription arrives at some point).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !running.exited() && Instant::now() < deadline {
        publisher.send_multipart(&[b"news", b"ignored"]).unwrap();
        publisher.send_multipart(&[b"weather", b"sunny"]).unwrap();
        publisher.send_multipart(&[b"sport.football"]).unwrap();
        publisher.send_multipart(&[b"wea"]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = running.finish();
    ok(&out);
    let lines: Vec<&str> = text(&out.stdout).lines().collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        assert!(
            *line == "weather\tsunny" || *line == "sport.football",
            "unexpected line {line:?}"
        );
    }
}

#[test]
fn our_req_to_a_libzmq_rep_prints_the_replies() {
    let ctx = Ctx::new();
    let (rep, ep) = zbind(&ctx, ZMQ_REP);
    let running = spawn(
        &[
            "send",
            "-t",
            "req",
            "-c",
            &ep,
            "-n",
            "2",
            "--timeout",
            GUARD,
            "ping",
            "1",
        ],
        None,
    );
    for _ in 0..2 {
        assert_eq!(rep.recv_multipart().unwrap(), frames(&[b"ping", b"1"]));
        rep.send_multipart(&[b"pong", b"2"]).unwrap();
    }
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "pong\t2\npong\t2\n");
}

#[test]
fn libzmq_req_to_our_rep_echo() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "rep",
            "-b",
            "tcp://127.0.0.1:*",
            "--echo",
            "-n",
            "2",
            "-v",
            "--heartbeat",
            "100",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = running.bound_endpoint();
    let req = zsock(&ctx, ZMQ_REQ);
    req.connect(&ep).unwrap();
    for i in 0..2u8 {
        let body = [b'a' + i];
        req.send_multipart(&[&body, b"x"]).unwrap();
        assert_eq!(req.recv_multipart().unwrap(), frames(&[&body, b"x"]));
    }
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "a\tx\nb\tx\n");
    // `-v` names the client by its address, not by our endpoint.
    let port = peer_port(&out.stderr, "accepted 127.0.0.1:", &ep);
    assert_ne!(
        Some(port),
        ep.rsplit(':').next().and_then(|p| p.parse().ok())
    );
    assert!(
        out.stderr.contains(&format!(
            "handshake with 127.0.0.1:{port} on {ep} succeeded"
        )),
        "{out:?}"
    );
}

/// The port in the first `PREFIX<port> on EP` of `stderr` (a peer named by `-v`).
fn peer_port(stderr: &str, prefix: &str, ep: &str) -> u16 {
    let line = stderr
        .lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no {prefix:?} in {stderr:?}"));
    let (port, rest) = line.split_once(' ').expect("a port, then the endpoint");
    assert!(rest.starts_with(&format!("on {ep}")), "{line:?}");
    port.parse()
        .unwrap_or_else(|_| panic!("a port in {line:?}"))
}

#[test]
fn libzmq_dealer_to_our_router_echo_over_ipc() {
    let ctx = Ctx::new();
    let ep = format!("ipc://@zmtp-cli-test-router-{}", std::process::id());
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "router",
            "-b",
            &ep,
            "--echo",
            "-n",
            "2",
            "-v",
            "--timeout",
            GUARD,
        ],
        None,
    );
    assert_eq!(running.bound_endpoint(), ep);
    let dealer = zsock(&ctx, ZMQ_DEALER);
    dealer.set_bytes(ZMQ_ROUTING_ID, b"D1").unwrap();
    dealer.connect(&ep).unwrap();
    dealer.send_multipart(&[b"hello", b"world"]).unwrap();
    assert_eq!(
        dealer.recv_multipart().unwrap(),
        frames(&[b"hello", b"world"])
    );
    dealer.send_multipart(&[b"", b"again"]).unwrap();
    assert_eq!(dealer.recv_multipart().unwrap(), frames(&[b"", b"again"]));
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "D1\thello\tworld\nD1\t\tagain\n");
}

#[test]
fn our_dealer_identity_reaches_a_libzmq_router() {
    let ctx = Ctx::new();
    let (router, ep) = zbind(&ctx, ZMQ_ROUTER);
    let out = run(
        &[
            "send",
            "-t",
            "dealer",
            "-c",
            &ep,
            "--identity",
            "me",
            "--timeout",
            GUARD,
            "hi",
        ],
        None,
    );
    ok(&out);
    assert_eq!(router.recv_multipart().unwrap(), frames(&[b"me", b"hi"]));
}

// ----- multipart and hex ---------------------------------------------------------------

#[test]
fn stdin_lines_are_messages_with_tab_separated_frames() {
    let ctx = Ctx::new();
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = run(
        &["send", "-t", "push", "-c", &ep, "--timeout", GUARD],
        Some(b"a\tb\tc\nsingle\n\tx\n\nlast without newline"),
    );
    ok(&out);
    let expected: [&[&[u8]]; 5] = [
        &[b"a", b"b", b"c"],
        &[b"single"],
        &[b"", b"x"],
        &[b""],
        &[b"last without newline"],
    ];
    for e in expected {
        assert_eq!(pull.recv_multipart().unwrap(), frames(e));
    }
}

#[test]
fn count_repeats_the_message() {
    let ctx = Ctx::new();
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "-n",
            "3",
            "--timeout",
            GUARD,
            "again",
        ],
        None,
    );
    ok(&out);
    for _ in 0..3 {
        assert_eq!(pull.recv_multipart().unwrap(), frames(&[b"again"]));
    }
}

#[test]
fn hex_frames_as_arguments_and_on_stdin() {
    let ctx = Ctx::new();
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--hex-frames",
            "--timeout",
            GUARD,
            "00FF",
            "",
            "0a",
        ],
        None,
    );
    ok(&out);
    assert_eq!(
        pull.recv_multipart().unwrap(),
        frames(&[&[0x00, 0xff], b"", b"\n"])
    );
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--hex-frames",
            "--timeout",
            GUARD,
        ],
        Some(b"00\t01fe\n09\n"),
    );
    ok(&out);
    assert_eq!(pull.recv_multipart().unwrap(), frames(&[&[0], &[1, 0xfe]]));
    assert_eq!(pull.recv_multipart().unwrap(), frames(&[b"\t"]));
}

#[test]
fn hex_output_round_trips_through_hex_frames() {
    let ctx = Ctx::new();
    // libzmq PUSH -> our recv --hex: binary frames, including TAB, newline and empty.
    let (push, ep) = zbind(&ctx, ZMQ_PUSH);
    let running = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-c",
            &ep,
            "--hex",
            "-n",
            "2",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let first: [&[u8]; 3] = [&[0x00, 0x01], b"\t\n", b""];
    let second: [&[u8]; 1] = [&[0xde, 0xad, 0xbe, 0xef]];
    push.send_multipart(&first).unwrap();
    push.send_multipart(&second).unwrap();
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "0001\t090a\t\ndeadbeef\n");
    // ... and that output, fed to our send --hex-frames, reproduces the frames at a libzmq PULL.
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let back = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--hex-frames",
            "--timeout",
            GUARD,
        ],
        Some(&out.stdout),
    );
    ok(&back);
    assert_eq!(pull.recv_multipart().unwrap(), frames(&first));
    assert_eq!(pull.recv_multipart().unwrap(), frames(&second));
}

/// What `pull` received from a run of `zmtp send`: waited for after a successful run (it
/// may still be on its way through libzmq), only looked for after a failed one.
fn delivered(pull: &ZSocket<'_>, out: &Outcome) -> Option<Vec<Vec<u8>>> {
    if out.code == Some(0) {
        pull.recv_multipart().ok()
    } else {
        std::thread::sleep(Duration::from_millis(100));
        pull.try_recv_multipart().ok()
    }
}

// ----- PLAIN ---------------------------------------------------------------------------

/// A libzmq PLAIN server (PULL) with a ZAP handler accepting admin/secret; runs `zmtp send`
/// as a PLAIN client with `password`.
fn plain_client_against_libzmq(password: &str) -> (Option<Vec<Vec<u8>>>, Outcome) {
    let ctx = Ctx::new();
    let _zap = ZapHandler::plain(&ctx, b"admin", b"secret");
    let pull = zsock(&ctx, ZMQ_PULL);
    zplain_server(&pull);
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let ep = pull.last_endpoint().unwrap();
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--plain-user",
            "admin",
            "--plain-password",
            password,
            "--timeout",
            GUARD,
            "through plain",
        ],
        None,
    );
    (delivered(&pull, &out), out)
}

#[test]
fn plain_client_with_the_right_password_is_delivered() {
    let (got, out) = plain_client_against_libzmq("secret");
    ok(&out);
    assert_eq!(got, Some(frames(&[b"through plain"])));
}

#[test]
fn plain_client_with_a_wrong_password_exits_2() {
    let (got, out) = plain_client_against_libzmq("wrong");
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("authentication"), "{out:?}");
    assert_eq!(got, None);
}

#[test]
fn our_plain_server_refuses_a_wrong_password_and_takes_the_right_one() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "tcp://127.0.0.1:*",
            "--plain-server",
            "--allow-user",
            "admin:se:cret",
            "--allow-user",
            "guest:guest",
            "-n",
            "1",
            "-v",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = running.bound_endpoint();

    let wrong = zsock(&ctx, ZMQ_PUSH);
    let mut monitor = wrong.monitor(&ctx, ZMQ_EVENT_ALL).unwrap();
    zplain_client(&wrong, b"admin", b"se");
    wrong.connect(&ep).unwrap();
    wrong.try_send_multipart(&[b"never"]).unwrap();
    expect_auth_failure(&mut monitor, 400, Duration::from_secs(5));

    let right = zsock(&ctx, ZMQ_PUSH);
    zplain_client(&right, b"admin", b"se:cret");
    right.connect(&ep).unwrap();
    right.send_multipart(&[b"welcome"]).unwrap();
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "welcome\n");
    assert!(out.stderr.contains("refused a client"), "{out:?}");
    // The refused client is named by its address, on our endpoint.
    peer_port(&out.stderr, "refused a client 127.0.0.1:", &ep);
    assert!(
        out.stderr
            .contains(&format!(" on {ep}: authentication failed (status 400)")),
        "{out:?}"
    );
}

// ----- CURVE ---------------------------------------------------------------------------

/// A libzmq CURVE server (PULL, the test server keys) whose ZAP handler accepts only the
/// test client key; runs `zmtp send` as a CURVE client with `extra` options.
fn curve_client_against_libzmq(extra: &[&str]) -> (Option<Vec<Vec<u8>>>, Outcome) {
    let ctx = Ctx::new();
    let _zap = ZapHandler::curve(&ctx, &[key(CLIENT_PUBLIC)]);
    let pull = zsock(&ctx, ZMQ_PULL);
    zcurve_server(&pull);
    pull.bind("tcp://127.0.0.1:*").unwrap();
    let ep = pull.last_endpoint().unwrap();
    let mut args = vec!["send", "-t", "push", "-c", ep.as_str(), "--timeout", GUARD];
    args.extend_from_slice(extra);
    args.push("sealed");
    let out = run(&args, None);
    (delivered(&pull, &out), out)
}

#[test]
fn curve_client_with_an_allowed_key_is_delivered() {
    let server = text(SERVER_PUBLIC);
    let secret = text(CLIENT_SECRET);
    let (got, out) =
        curve_client_against_libzmq(&["--curve-server-key", server, "--curve-secret", secret]);
    ok(&out);
    assert_eq!(got, Some(frames(&[b"sealed"])));
}

#[test]
fn curve_client_with_an_unknown_ephemeral_key_exits_2() {
    let (got, out) = curve_client_against_libzmq(&["--curve-server-key", text(SERVER_PUBLIC)]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("authentication"), "{out:?}");
    assert_eq!(got, None);
}

#[test]
fn curve_client_with_the_wrong_server_key_exits_2() {
    let stranger = stranger_keys().public.to_string();
    let (got, out) = curve_client_against_libzmq(&[
        "--curve-server-key",
        &stranger,
        "--curve-secret",
        text(CLIENT_SECRET),
    ]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("authentication"), "{out:?}");
    assert_eq!(got, None);
}

/// Make `z` a libzmq CURVE client with the stranger's keys, trusting the test server key.
fn stranger_client(z: &ZSocket<'_>) {
    let keys = stranger_keys();
    z.set_bytes(ZMQ_CURVE_SERVERKEY, &key(SERVER_PUBLIC))
        .unwrap();
    z.set_bytes(ZMQ_CURVE_PUBLICKEY, &keys.public.0).unwrap();
    z.set_bytes(ZMQ_CURVE_SECRETKEY, keys.secret.as_bytes())
        .unwrap();
}

#[test]
fn our_curve_server_refuses_an_unknown_key_and_takes_an_allowed_one() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "tcp://127.0.0.1:*",
            "--curve-server-secret",
            text(SERVER_SECRET),
            "--allow-client",
            text(CLIENT_PUBLIC),
            "-n",
            "1",
            "-v",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = running.bound_endpoint();

    let wrong = zsock(&ctx, ZMQ_PUSH);
    let mut monitor = wrong.monitor(&ctx, ZMQ_EVENT_ALL).unwrap();
    stranger_client(&wrong);
    wrong.connect(&ep).unwrap();
    wrong.try_send_multipart(&[b"never"]).unwrap();
    expect_auth_failure(&mut monitor, 400, Duration::from_secs(5));

    let right = zsock(&ctx, ZMQ_PUSH);
    zcurve_client(&right, &key(SERVER_PUBLIC));
    right.connect(&ep).unwrap();
    right.send_multipart(&[b"sealed"]).unwrap();
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "sealed\n");
    assert!(out.stderr.contains("refused a client"), "{out:?}");
}

#[test]
fn our_curve_server_without_allow_client_takes_any_key() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "tcp://127.0.0.1:*",
            "--curve-server-secret",
            text(SERVER_SECRET),
            "-n",
            "1",
            "-v",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = running.bound_endpoint();
    let client = zsock(&ctx, ZMQ_PUSH);
    let mut monitor = client.monitor(&ctx, ZMQ_EVENT_ALL).unwrap();
    stranger_client(&client);
    client.connect(&ep).unwrap();
    client.send_multipart(&[b"anyone"]).unwrap();
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "anyone\n");
    assert!(monitor
        .wait_event(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, Duration::from_secs(5))
        .is_some());
}

// ----- keygen, help, bench -------------------------------------------------------------

#[test]
fn keygen_prints_a_valid_key_pair() {
    let out = run(&["keygen"], None);
    ok(&out);
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout:?}");
    let public = lines[0].strip_prefix("public: ").expect("public line");
    let secret = lines[1].strip_prefix("secret: ").expect("secret line");
    let public: PublicKey = public.parse().expect("public key in Z85");
    let secret: SecretKey = secret.parse().expect("secret key in Z85");
    assert_eq!(KeyPair::from_secret(secret).public, public);
    let again = run(&["keygen"], None);
    assert_ne!(again.stdout, out.stdout, "a fresh key pair each time");
}

#[test]
fn help_prints_the_usage() {
    for args in [&["--help"][..], &["help"], &["-h"]] {
        let out = run(args, None);
        ok(&out);
        let usage = text(&out.stdout);
        for word in [
            "send",
            "recv",
            "keygen",
            "bench",
            "completions",
            "Exit status",
        ] {
            assert!(usage.contains(word), "{args:?}: {usage}");
        }
    }
    let out = run(&[], None);
    assert_eq!(out.code, Some(1));
    assert!(out.stdout.is_empty());
    assert!(out.stderr.contains("send"), "{out:?}");
    let out = run(&["--version"], None);
    ok(&out);
    assert!(text(&out.stdout).starts_with("zmtp "), "{out:?}");
}

#[test]
fn each_subcommand_has_its_own_help() {
    // (arguments, words in its help, words of other subcommands that must not be there)
    let cases: [(&[&str], &[&str], &[&str]); 5] = [
        (
            &["send", "--help"],
            &[
                "Usage: zmtp send",
                "--wait-subscribers",
                "--delay",
                "--unescape",
                "--group <GROUP>",
                "Exit status",
            ],
            &["--echo", "--subscribe <PREFIX>", "--join", "--transport"],
        ),
        (
            &["help", "recv"],
            &[
                "Usage: zmtp recv",
                "--echo",
                "--subscribe",
                "--join <GROUP>",
                "--raw",
                "\\t",
            ],
            &["--wait-subscribers", "--group", "--transport"],
        ),
        (
            &["bench", "-h"],
            &["Usage: zmtp bench", "--driver", "tokio", "smol", "mio"],
            &["--echo", "--type"],
        ),
        (&["keygen", "--help"], &["Usage: zmtp keygen"], &["--type"]),
        (
            &["completions", "--help"],
            &["bash", "zsh", "fish"],
            &["--type"],
        ),
    ];
    for (args, wanted, unwanted) in cases {
        let out = run(args, None);
        ok(&out);
        let help = text(&out.stdout);
        for w in wanted {
            assert!(help.contains(w), "{args:?}: {w:?} missing from {help}");
        }
        for u in unwanted {
            assert!(!help.contains(u), "{args:?}: {u:?} in {help}");
        }
    }
}

#[test]
fn completions_are_generated_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell], None);
        ok(&out);
        let script = text(&out.stdout);
        // (fish names long options without their dashes)
        for word in [
            "zmtp",
            "send",
            "recv",
            "bench",
            "wait-subscribers",
            "curve-server-key",
        ] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
        // The socket types and drivers complete as values.
        for value in ["router", "xpub", "smol", "mio"] {
            assert!(script.contains(value), "{shell}: value {value} missing");
        }
    }
    assert!(text(&run(&["completions", "bash"], None).stdout).contains("complete -F"));
    assert!(text(&run(&["completions", "zsh"], None).stdout).starts_with("#compdef zmtp"));
    assert!(text(&run(&["completions", "fish"], None).stdout).contains("complete -c zmtp"));
    let out = run(&["completions", "tcsh"], None);
    assert_eq!(out.code, Some(1), "{out:?}");
}

#[test]
fn a_typo_gets_a_suggestion_on_one_line() {
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            "tcp://127.0.0.1:1",
            "--linge",
            "5",
            "x",
        ],
        None,
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("'--linger'"), "{out:?}");
    assert!(out.stderr.contains("zmtp send --help"), "{out:?}");
    let out = run(&["sned"], None);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("'send'"), "{out:?}");
}

#[test]
fn bench_runs_on_every_driver_and_transport() {
    let runs = [
        ("tokio", "tcp"),
        ("tokio", "ipc"),
        ("tokio", "inproc"),
        ("smol", "tcp"),
        ("smol", "ipc"),
        ("smol", "inproc"),
        ("mio", "tcp"),
        ("mio", "ipc"),
        ("mio", "inproc"),
    ];
    for (driver, transport) in runs {
        let out = run(
            &[
                "bench",
                "--driver",
                driver,
                "--transport",
                transport,
                "--count",
                "2000",
                "--size",
                "100",
            ],
            None,
        );
        ok(&out);
        let report = text(&out.stdout);
        assert!(
            report.starts_with(&format!("zmtp bench: driver {driver} ")),
            "{report}"
        );
        for word in [
            transport,
            "2000 messages",
            "msg/s",
            "MB/s",
            "2000 round trips",
            "mean",
            "p50",
            "p99",
        ] {
            assert!(
                report.contains(word),
                "{driver} {transport}: {word} missing from {report}"
            );
        }
        // No progress indicator when standard error is not a terminal.
        assert!(out.stderr.is_empty(), "{out:?}");
    }
}

// ----- exit codes ----------------------------------------------------------------------

/// Arguments written as one string: split at spaces; `{key}` is the test server's public
/// key, `{ep}` a TCP endpoint with nothing behind it, and `''` an empty argument.
fn words(line: &str) -> Vec<OsString> {
    line.split(' ')
        .map(|w| match w {
            "''" => String::new(),
            _ => w
                .replace("{key}", text(SERVER_PUBLIC))
                .replace("{ep}", "tcp://127.0.0.1:1"),
        })
        .map(OsString::from)
        .collect()
}

#[test]
fn bad_usage_exits_1_with_one_line_naming_the_problem() {
    let cases: &[(&str, &str)] = &[
        // unknown type
        ("send -t pusher -c {ep} x", "pusher"),
        // malformed endpoints
        ("send -t push -c tcp://127.0.0.1 x", "endpoint"),
        ("recv -t pull -b udp://127.0.0.1:5555", "endpoint"),
        ("recv -t pull -c tcp://*:*", "endpoint"),
        ("send -t push -c tcp://127.0.0.1:99999 x", "endpoint"),
        // bad Z85 keys
        ("send -t push -c {ep} --curve-server-key not-a-key x", "Z85"),
        ("recv -t pull -b {ep} --curve-server-secret {key}x", "Z85"),
        (
            "recv -t pull -b {ep} --curve-server-secret {key} --allow-client ''",
            "Z85",
        ),
        // incompatible options
        ("recv -t push -c {ep} --echo", "--echo"),
        ("recv -t pull -c {ep} --echo", "--echo"),
        ("send -t dealer -c {ep} --echo x", "--echo"),
        ("send -t push -c {ep} --plain-user u x", "--plain-password"),
        ("send -t push -c {ep} --plain-password p x", "--plain-user"),
        (
            "send -t push -c {ep} --plain-user u --plain-password p --curve-server-key {key} x",
            "incompatible",
        ),
        (
            "recv -t pull -b {ep} --plain-server --curve-server-secret {key}",
            "incompatible",
        ),
        ("recv -t pull -b {ep} --allow-user u:p", "--plain-server"),
        ("recv -t pull -b {ep} --plain-server", "--allow-user"),
        (
            "recv -t pull -b {ep} --allow-client {key}",
            "--curve-server-secret",
        ),
        (
            "send -t push -c {ep} --curve-secret {key} x",
            "--curve-server-key",
        ),
        ("send -t pull -c {ep} x", "PULL"),
        ("send -t sub -c {ep} x", "SUB"),
        ("send -t rep -c {ep} x", "REP"),
        ("recv -t req -c {ep}", "REQ"),
        ("recv -t pub -c {ep}", "PUB"),
        ("recv -t pull -c {ep} --subscribe x", "--subscribe"),
        ("send -t push -c {ep} --subscribe x y", "--subscribe"),
        (
            "send -t push -c {ep} --identity {key}{key}{key}{key}{key}{key}{key}",
            "identity",
        ),
        // missing -b/-c, missing -t
        ("recv -t pull --timeout 100", "-b"),
        ("send -t push x", "-c"),
        ("recv -c {ep}", "-t"),
        // unknown options and commands, bad values
        ("recv -t pull -c {ep} --frobnicate", "--frobnicate"),
        ("recv -t pull -c {ep} --hex=yes", "--hex"),
        ("send -t push -c {ep} --hex-frames xyz", "hex"),
        ("send -t push -c {ep} -n 0 x", "--count"),
        ("send -t push -c {ep} --timeout soon x", "--timeout"),
        ("recv -t pull -c {ep} -n", "value is required"),
        ("recv -t pull -c {ep} hello", "hello"),
        ("frobnicate", "frobnicate"),
        ("keygen now", "keygen"),
        ("bench --driver nope", "tokio, smol, mio"),
        (
            "send -t push -c {ep} --wait-subscribers 1 x",
            "--wait-subscribers",
        ),
        (
            "send -t pub -c {ep} --wait-subscribers 0 x",
            "--wait-subscribers",
        ),
        ("send -t push -c {ep} --delay soon x", "--delay"),
        ("send -t push -c {ep} --unescape a\\q", "escape"),
        ("recv -t pull -c {ep} --hex --raw", "--raw"),
        ("completions", "SHELL"),
        ("bench --transport udp", "udp"),
        ("bench --size big", "--size"),
        ("bench --count 0", "--count"),
    ];
    for (line, needle) in cases {
        usage_fails(&words(line), needle);
    }
}

#[test]
fn send_reads_a_hex_error_on_stdin_as_bad_usage() {
    let ctx = Ctx::new();
    let (_pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--hex-frames",
            "--timeout",
            GUARD,
        ],
        Some(b"00\nnot hex\n"),
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("line 2"), "{out:?}");
}

#[test]
fn bind_on_a_port_in_use_exits_2() {
    let ctx = Ctx::new();
    let (_pull, ep) = zbind(&ctx, ZMQ_PULL);
    let out = run(&["recv", "-t", "pull", "-b", &ep, "--timeout", GUARD], None);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("bind"), "{out:?}");
    // It names the endpoint that is taken.
    assert!(out.stderr.contains(&ep), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
}

#[test]
fn recv_with_nothing_arriving_times_out_with_3() {
    let started = Instant::now();
    let out = run(
        &[
            "recv",
            "-t",
            "pull",
            "-b",
            "tcp://127.0.0.1:*",
            "--timeout",
            "200",
        ],
        None,
    );
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stderr.contains("timed out"), "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.stdout.is_empty());
}

#[test]
fn send_without_a_peer_times_out_with_3() {
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-b",
            "tcp://127.0.0.1:*",
            "--timeout",
            "200",
            "x",
        ],
        None,
    );
    assert_eq!(out.code, Some(3), "{out:?}");
}

#[test]
fn garbage_arguments_never_panic() {
    use std::os::unix::ffi::OsStringExt;
    let long = "a".repeat(300);
    let long_ipc = format!("ipc:///{}", "p".repeat(5000));
    let lines = [
        "''",
        "send",
        "recv",
        "bench ''",
        "-",
        "--",
        "-t",
        "--type=push",
        "send --",
        "send -t",
        "send -t ''",
        "send -t push -c ''",
        "send -t push -c tcp://:",
        "send -t push -b tcp://[::1",
        "send -t push -c inproc:// x",
        "send -t push -c ipc:// x",
        "send -t push -c tcp://[::1]:x x",
        &format!("send -t push -b {long_ipc} x"),
        &format!("send -t push -c {{ep}} --plain-user {long} --plain-password p x"),
        &format!("send -t push -c {{ep}} --allow-user {long}"),
        "recv -t pull -c {ep} -n -1",
        "recv -t pull -c {ep} -n 99999999999999999999999",
        "recv -t pull -c {ep} --timeout 18446744073709551616",
        "recv -t pull -c {ep} --timeout 0",
        "recv -t pull -c {ep} --hwm -3",
        "recv -t pull -c {ep} --hwm 99999999999999",
        "recv -t pull -c {ep} --linger -2",
        "recv -t pull -c {ep} --heartbeat 1e9",
        "recv -t pull -c {ep} --curve-server-key ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "recv -t pull -c {ep} --allow-user nocolon",
        "recv -t pull -c {ep} --subscribe",
        "recv -t pull -c {ep} --=x",
        "recv -t pull -c {ep} ---",
        "send -t router -b tcp://127.0.0.1:* --hex-frames 0",
        "sénd -t push",
        "send -t püsh -c {ep}",
        "send -tpush -c {ep}",
        "bench --size -1",
        "bench --size 999999999999",
        "bench --size=abc",
        "bench --driver=",
        "bench --count",
        "keygen --verbose",
        "help me",
        // Valid enough to run: each ends by its timeout.
        "recv -t pull -c {ep} --curve-server-key 0000000000000000000000000000000000000000 \
         --timeout 300",
        "recv -t sub -c {ep} --subscribe= --timeout=300",
        "send --type=push --connect={ep} --timeout=300 x",
        "send -t push -c {ep} --plain-user '' --plain-password '' --timeout 300 ''",
        "send -t xsub -c {ep} --timeout 300 --linger 0 --hex-frames ''",
        "recv -t XPUB -b tcp://127.0.0.1:* --timeout 300 --heartbeat 1",
        "send -t router -b tcp://127.0.0.1:* --timeout 300 nobody x",
        // The draft types.
        "send -t radio --group",
        "recv -t dish --join",
        "send -t peer -c ipc:// x",
        "send -t peer -c inproc://x --timeout 300 --linger 0 x",
        "recv -t dish -c {ep} --join '' --join '' --timeout 300",
        "send -t radio -b tcp://127.0.0.1:* --group '' --wait-subscribers 3 --timeout 300 ''",
        "recv -t server -b tcp://127.0.0.1:* --echo --timeout 300 --hex",
        "send -t scatter -c {ep} --timeout 300 --hex-frames '' 00",
    ];
    let mut cases: Vec<Vec<OsString>> = lines.iter().map(|l| words(l)).collect();
    let bad = |bytes: &[u8]| OsString::from_vec(bytes.to_vec());
    cases.push(vec![bad(b"\xff\xfe")]);
    cases.push([words("send"), vec![bad(b"-\xff")]].concat());
    cases.push([words("send -t"), vec![bad(b"\xff")]].concat());
    cases.push(
        [
            words("send -t push -c"),
            vec![bad(b"tcp://\xff:1"), bad(b"x")],
        ]
        .concat(),
    );
    cases.push(
        [
            words("recv -t sub -c {ep} --timeout 300 --subscribe"),
            vec![bad(b"\xff")],
        ]
        .concat(),
    );
    cases.push(
        [
            words("send -t push -c {ep} --timeout 300"),
            vec![bad(b"\xff\x01\x02")],
        ]
        .concat(),
    );
    for args in &cases {
        let out = spawn_os(args, None).finish();
        assert!(
            matches!(out.code, Some(0..=4)),
            "{args:?} ended with {:?}: {}",
            out.code,
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    }
}

// ----- undelivered messages (exit 4) ---------------------------------------------------

#[test]
fn pub_without_a_subscriber_exits_4_and_counts_the_dropped_messages() {
    let out = run(
        &[
            "send",
            "-t",
            "pub",
            "-b",
            "tcp://127.0.0.1:*",
            "-n",
            "3",
            "--timeout",
            GUARD,
            "news",
        ],
        None,
    );
    assert_eq!(out.code, Some(4), "{out:?}");
    assert!(
        out.stderr.contains("3 of 3 messages not delivered"),
        "{out:?}"
    );
    assert!(out.stderr.contains("subscri"), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
}

#[test]
fn pub_messages_its_subscribers_filtered_out_are_not_undelivered() {
    let mut sub = spawn(
        &[
            "recv",
            "-t",
            "sub",
            "--subscribe",
            "a",
            "-b",
            "tcp://127.0.0.1:*",
            "-v",
            "-n",
            "1",
            "--timeout",
            GUARD,
        ],
        None,
    );
    let ep = sub.bound_endpoint();
    let publish = |body: &str| {
        run(
            &[
                "send",
                "-t",
                "pub",
                "-c",
                &ep,
                "--delay",
                "500",
                "-v",
                "--timeout",
                GUARD,
                body,
            ],
            None,
        )
    };
    // Connected, subscribed to "a": "b-news" is what it did not ask for (exit 0).
    let out = publish("b-news");
    ok(&out);
    assert!(
        out.stderr.contains(
            "zmtp: 1 of 1 message matched no subscriber's topic or no dish's group: sent to \
             nobody, as the subscribers asked\n"
        ),
        "{out:?}"
    );
    assert!(!out.stderr.contains("not delivered"), "{out:?}");
    ok(&publish("a-news"));
    let got = sub.finish();
    ok(&got);
    assert_eq!(text(&got.stdout), "a-news\n");
}

#[test]
fn push_with_nobody_listening_exits_4_when_linger_runs_out() {
    // A port that was free a moment ago: nobody listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let out = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "-n",
            "2",
            "--linger",
            "200",
            "--timeout",
            GUARD,
            "hi",
        ],
        None,
    );
    assert_eq!(out.code, Some(4), "{out:?}");
    assert!(
        out.stderr.contains("2 of 2 not delivered") && out.stderr.contains("--linger"),
        "{out:?}"
    );
}

#[test]
fn router_to_an_unknown_routing_id_exits_4() {
    let out = run(
        &[
            "send",
            "-t",
            "router",
            "-b",
            "tcp://127.0.0.1:*",
            "--timeout",
            GUARD,
            "nobody",
            "hello",
        ],
        None,
    );
    assert_eq!(out.code, Some(4), "{out:?}");
    assert!(
        out.stderr.contains("1 of 1 message not delivered"),
        "{out:?}"
    );
    assert!(out.stderr.contains("routing id"), "{out:?}");
}

#[test]
fn router_to_a_known_routing_id_exits_0() {
    let ctx = Ctx::new();
    // The dealer's id is set before it binds (libzmq's listeners copy the options then);
    // our router connects, and sends once the dealer is known (--delay lets the handshake
    // finish).
    let dealer = zsock(&ctx, ZMQ_DEALER);
    dealer.set_bytes(ZMQ_ROUTING_ID, b"known").unwrap();
    dealer.bind("tcp://127.0.0.1:*").unwrap();
    let ep = dealer.last_endpoint().unwrap();
    let out = run(
        &[
            "send",
            "-t",
            "router",
            "-c",
            &ep,
            "--delay",
            "500",
            "--timeout",
            GUARD,
            "known",
            "hello",
        ],
        None,
    );
    ok(&out);
    assert_eq!(dealer.recv_multipart().unwrap(), frames(&[b"hello"]));
}

/// A libzmq SUB of everything connected to `ep`.
fn zsub<'c>(ctx: &'c Ctx, ep: &str) -> ZSocket<'c> {
    let sub = zsock(ctx, ZMQ_SUB);
    sub.subscribe(b"").unwrap();
    sub.connect(ep).unwrap();
    sub
}

#[test]
fn wait_subscribers_delivers_every_line_to_subscribers_that_join_later() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "send",
            "-t",
            "pub",
            "-b",
            "tcp://127.0.0.1:*",
            "--wait-subscribers",
            "2",
            "-v",
            "--timeout",
            GUARD,
        ],
        Some(b"one\ntwo\nthree\n"),
    );
    let ep = running.bound_endpoint();
    let first = zsub(&ctx, &ep);
    // Nothing is sent while only one of the two has joined.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !running.exited(),
        "sent before the second subscriber joined"
    );
    let second = zsub(&ctx, &ep);
    let out = running.finish();
    ok(&out);
    for sub in [&first, &second] {
        for line in ["one", "two", "three"] {
            assert_eq!(sub.recv_multipart().unwrap(), frames(&[line.as_bytes()]));
        }
    }
    assert!(out.stderr.contains("subscription 2 of 2"), "{out:?}");
}

#[test]
fn wait_subscribers_times_out_with_3_saying_how_many_came() {
    let out = run(
        &[
            "send",
            "-t",
            "pub",
            "-b",
            "tcp://127.0.0.1:*",
            "--wait-subscribers",
            "1",
            "--timeout",
            "300",
            "x",
        ],
        None,
    );
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.stderr.contains("0 of 1 subscriptions"), "{out:?}");
}

#[test]
fn delay_gives_a_subscriber_time_to_join() {
    let ctx = Ctx::new();
    let mut running = spawn(
        &[
            "send",
            "-t",
            "pub",
            "-b",
            "tcp://127.0.0.1:*",
            "--delay",
            "1500",
            "-v",
            "--timeout",
            GUARD,
            "late",
            "news",
        ],
        None,
    );
    let started = Instant::now();
    let ep = running.bound_endpoint();
    let sub = zsub(&ctx, &ep);
    let out = running.finish();
    ok(&out);
    assert!(started.elapsed() >= Duration::from_millis(1400), "{out:?}");
    assert_eq!(sub.recv_multipart().unwrap(), frames(&[b"late", b"news"]));
}

// ----- escaping ------------------------------------------------------------------------

#[test]
fn recv_escapes_separators_and_binary_so_each_message_is_one_line() {
    let ctx = Ctx::new();
    let (push, ep) = zbind(&ctx, ZMQ_PUSH);
    let messages: [&[&[u8]]; 3] = [
        &[b"tab\there", b"new\nline\r"],
        &[b"back\\slash", "gr\u{fc}\u{df}e".as_bytes(), b""],
        &[&[0x00, 0xff, b'a', 0x1b]],
    ];
    let escaped = "tab\\there\tnew\\nline\\r\n\
                   back\\\\slash\tgr\u{fc}\u{df}e\t\n\
                   \\x00\\xffa\\x1b\n";
    // Our PULL connects first; the bound libzmq PUSH then has a peer to send to.
    let recv = |output: &str, sent: &[&[&[u8]]]| {
        let n = sent.len().to_string();
        let mut args = vec![
            "recv",
            "-t",
            "pull",
            "-c",
            &ep,
            "-n",
            &n,
            "--timeout",
            GUARD,
        ];
        if !output.is_empty() {
            args.push(output);
        }
        let running = spawn(&args, None);
        for m in sent {
            push.send_multipart(m).unwrap();
        }
        running.finish()
    };
    let out = recv("", &messages);
    ok(&out);
    assert_eq!(text(&out.stdout), escaped);
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 3);

    // --raw prints the bytes as they came, --hex as hex.
    let raw = recv("--raw", &messages);
    ok(&raw);
    let mut expected = Vec::new();
    for m in messages {
        expected.extend_from_slice(&m.join(&b'\t'));
        expected.push(b'\n');
    }
    assert_eq!(raw.stdout, expected);
    let hex = recv("--hex", &messages[2..]);
    ok(&hex);
    assert_eq!(text(&hex.stdout), "00ff611b\n");

    // The escaped lines, fed to send --unescape, reproduce the frames at a libzmq PULL.
    let (pull, ep) = zbind(&ctx, ZMQ_PULL);
    let back = run(
        &[
            "send",
            "-t",
            "push",
            "-c",
            &ep,
            "--unescape",
            "--timeout",
            GUARD,
        ],
        Some(&out.stdout),
    );
    ok(&back);
    for m in messages {
        assert_eq!(pull.recv_multipart().unwrap(), frames(m));
    }
}

#[test]
fn req_replies_are_escaped_too() {
    let ctx = Ctx::new();
    let (rep, ep) = zbind(&ctx, ZMQ_REP);
    let running = spawn(
        &["send", "-t", "req", "-c", &ep, "--timeout", GUARD, "q\n"],
        None,
    );
    let request = rep.recv_multipart().unwrap();
    rep.send_multipart(&[b"a\tb", &request[0]]).unwrap();
    let out = running.finish();
    ok(&out);
    assert_eq!(text(&out.stdout), "a\\tb\tq\\n\n");
}

#[test]
fn proxy_between_libzmq_req_and_rep_with_statistics_and_terminate() {
    let mut proxy = spawn(
        &[
            "proxy",
            "-t",
            "router",
            "-b",
            "tcp://127.0.0.1:*",
            "-T",
            "dealer",
            "-B",
            "tcp://127.0.0.1:*",
            "--control",
            "tcp://127.0.0.1:*",
            "-v",
        ],
        None,
    );
    let (frontend, backend, control) = (
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
    );
    let ctx = Ctx::new();
    let rep = zsock(&ctx, ZMQ_REP);
    rep.connect(&backend).unwrap();
    let req = zsock(&ctx, ZMQ_REQ);
    req.connect(&frontend).unwrap();
    for q in ["one", "two", "three"] {
        req.send(q.as_bytes(), 0).unwrap();
        let got = rep.recv_multipart().unwrap();
        assert_eq!(got, frames(&[q.as_bytes()]));
        rep.send(b"ok", 0).unwrap();
        assert_eq!(req.recv_multipart().unwrap(), frames(&[b"ok"]));
    }
    let ctl = zsock(&ctx, ZMQ_REQ);
    ctl.connect(&control).unwrap();
    ctl.send(b"STATISTICS", 0).unwrap();
    let stats = ctl.recv_multipart().unwrap();
    assert_eq!(stats.len(), 8);
    let n: Vec<u64> = stats
        .iter()
        .map(|f| u64::from_ne_bytes(f[..].try_into().unwrap()))
        .collect();
    // Messages in and out at each side: 3 requests forward, 3 answers back.
    assert_eq!([n[0], n[2], n[4], n[6]], [3, 3, 3, 3]);
    ctl.send(b"TERMINATE", 0).unwrap();
    assert_eq!(ctl.recv_multipart().unwrap(), frames(&[b""]));
    ok(&proxy.finish());
}

#[test]
fn proxy_needs_both_sides() {
    let args: Vec<OsString> = [
        "proxy",
        "-t",
        "pull",
        "-b",
        "tcp://127.0.0.1:*",
        "-T",
        "push",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    usage_fails(&args, "the backend");
}

#[test]
fn a_bind_in_use_names_the_endpoint() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", taken.local_addr().unwrap());
    let out = run(
        &["recv", "-t", "pull", "-b", &endpoint, "--timeout", GUARD],
        None,
    );
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(
        out.stderr,
        format!("zmtp: cannot bind {endpoint}: address already in use\n")
    );
}

#[test]
fn the_proxy_acknowledges_its_commands_without_a_blank_line() {
    let mut proxy = spawn(
        &[
            "proxy",
            "-t",
            "pull",
            "-b",
            "tcp://127.0.0.1:*",
            "-T",
            "push",
            "-B",
            "tcp://127.0.0.1:*",
            "--control",
            "tcp://127.0.0.1:*",
            "-v",
        ],
        None,
    );
    let (_front, _back, control) = (
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
        proxy.bound_endpoint(),
    );
    let command = |name: &str| {
        run(
            &[
                "send",
                "-t",
                "req",
                "-c",
                &control,
                "--timeout",
                GUARD,
                name,
            ],
            None,
        )
    };
    let paused = command("PAUSE");
    ok(&paused);
    assert_eq!(text(&paused.stdout), "");
    // STATISTICS answers with eight counters: printed.
    let statistics = command("STATISTICS");
    ok(&statistics);
    assert_eq!(
        text(&statistics.stdout).lines().count(),
        1,
        "{statistics:?}"
    );
    assert_eq!(
        text(&statistics.stdout).split('\t').count(),
        8,
        "{statistics:?}"
    );
    let terminated = command("TERMINATE");
    ok(&terminated);
    assert_eq!(text(&terminated.stdout), "");
    ok(&proxy.finish());
}
