//! JeroMQ 0.3.6 (Debian's `libjeromq-java`, a pure-Java port of libzmq 3.2) against our
//! sockets (mio, tokio and smol drivers) and against libzmq, the reference: PUSH/PULL,
//! PUB/SUB, REQ/REP and DEALER/ROUTER, each with JeroMQ binding and then connecting.
//!
//! JeroMQ runs as `conformance/java/LegacyPeer.java`, compiled here at test time with
//! `javac` against `/usr/share/java/jeromq.jar` and driven over its stdin/stdout, one line
//! per command, so that one JVM serves every scenario of a test.
//!
//! **What JeroMQ 0.3.6 speaks: ZMTP 2.0 (revision 1)**, as captured and asserted by
//! `jeromq_greets_as_a_zmtp_2_0_peer`. A connecting PUSH first sends the 10-byte signature
//! `ff 00 00 00 00 00 00 00 01 7f` (padding = identity length + 1, like libzmq) and waits;
//! after the other side's signature it sends `01 08` (revision 1, type PUSH), and after the
//! other side's revision, type and identity its own empty identity in v2 framing `00 00`.
//! A message `hi` then goes out as `00 02 68 69`. It answers a peer that announces major
//! version 3 the same way (`01 08`): libzmq 4.3 then speaks 2.0 with it. To an unversioned
//! 1.0 peer or a revision-0 peer it speaks v1 framing (`jeromq_speaks_each_legacy_flavour`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zmtp_conformance::subject::{with_subject, Setup, Subject, Target};
use zmtp_proto::SocketType;

const JAR: &str = "/usr/share/java/jeromq.jar";
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long one poll of a receive loop waits.
const POLL: Duration = Duration::from_millis(20);

/// The compiled `LegacyPeer` classes (compiled once per test process).
fn classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jeromq-legacy-peer");
        std::fs::create_dir_all(&dir).expect("a directory for the classes");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("java/LegacyPeer.java");
        assert!(
            Path::new(JAR).exists(),
            "{JAR} is missing: install Debian's libjeromq-java"
        );
        let out = Command::new("javac")
            .arg("-cp")
            .arg(JAR)
            .arg("-d")
            .arg(&dir)
            .arg(&source)
            .output()
            .expect("javac runs (install a JDK, e.g. Debian's default-jdk-headless)");
        assert!(
            out.status.success(),
            "javac failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A message as `LegacyPeer` writes it: hex frames separated by commas, `-` for a single
/// empty frame.
fn show(frames: &[&[u8]]) -> String {
    if frames.len() == 1 && frames[0].is_empty() {
        return "-".into();
    }
    frames.iter().map(|f| hex(f)).collect::<Vec<_>>().join(",")
}

fn parse(text: &str) -> Vec<Vec<u8>> {
    if text == "-" {
        return vec![Vec::new()];
    }
    text.split(',').map(unhex).collect()
}

/// One JVM running `LegacyPeer`, whose JeroMQ sockets are named by short ids.
struct JeroMq {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl JeroMq {
    fn start() -> JeroMq {
        let classpath = format!("{JAR}:{}", classes().display());
        let mut child = Command::new("java")
            .args(["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", &classpath])
            .arg("LegacyPeer")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("java runs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        JeroMq {
            child,
            stdin,
            stdout,
        }
    }

    /// Send one command line, return the answer line.
    fn cmd(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").expect("write to LegacyPeer");
        self.stdin.flush().expect("flush");
        let mut answer = String::new();
        self.stdout
            .read_line(&mut answer)
            .expect("read from LegacyPeer");
        let answer = answer.trim_end().to_string();
        assert!(
            !answer.is_empty() && !answer.starts_with("error"),
            "LegacyPeer answered {answer:?} to {:?}",
            &line[..line.len().min(80)]
        );
        answer
    }

    fn socket(&mut self, id: &str, ty: &str, identity: &[u8]) {
        let identity = if identity.is_empty() {
            String::new()
        } else {
            format!(" {}", hex(identity))
        };
        assert_eq!(self.cmd(&format!("socket {id} {ty}{identity}")), "ok");
    }

    fn bind(&mut self, id: &str) -> SocketAddr {
        let answer = self.cmd(&format!("bind {id}"));
        let port = answer
            .strip_prefix("ok ")
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("bind answered {answer:?}"));
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn connect(&mut self, id: &str, addr: SocketAddr) {
        assert_eq!(self.cmd(&format!("connect {id} tcp://{addr}")), "ok");
    }

    fn subscribe(&mut self, id: &str, topic: &[u8]) {
        assert_eq!(self.cmd(&format!("subscribe {id} {}", hex(topic))), "ok");
    }

    fn send(&mut self, id: &str, frames: &[&[u8]]) {
        assert_eq!(
            self.cmd(&format!("send {id} {}", show(frames))),
            "ok",
            "JeroMQ's send"
        );
    }

    fn recv(&mut self, id: &str, limit: Duration) -> Option<Vec<Vec<u8>>> {
        let answer = self.cmd(&format!("recv {id} {}", limit.as_millis().max(1)));
        if answer == "timeout" {
            return None;
        }
        let frames = answer
            .strip_prefix("msg ")
            .unwrap_or_else(|| panic!("recv answered {answer:?}"));
        Some(parse(frames))
    }

    fn close(&mut self, id: &str) {
        assert_eq!(self.cmd(&format!("close {id}")), "ok");
    }
}

impl Drop for JeroMq {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A message with empty frames, a long frame (v2 long form) and a 100 KB frame.
fn framing_message(n: u32) -> Vec<Vec<u8>> {
    vec![
        format!("msg {n}").into_bytes(),
        Vec::new(),
        vec![b'x'; 256],
        (0..100_000u32).map(|i| (i % 251) as u8).collect(),
        Vec::new(),
    ]
}

fn refs(m: &[Vec<u8>]) -> Vec<&[u8]> {
    m.iter().map(|f| &f[..]).collect()
}

/// The numbered messages of the PUSH/PULL scenarios: plain ones, then one multipart.
fn numbered() -> Vec<Vec<Vec<u8>>> {
    let mut v: Vec<_> = (1..=5).map(|i| vec![format!("{i}").into_bytes()]).collect();
    v.push(vec![Vec::new()]);
    v.push(framing_message(6));
    v
}

fn recv_or_fail(s: &mut dyn Subject, what: &str) -> Vec<Vec<u8>> {
    s.recv(TIMEOUT)
        .unwrap_or_else(|| panic!("no {what} within {TIMEOUT:?}"))
}

fn jrecv_or_fail(jm: &mut JeroMq, id: &str, what: &str) -> Vec<Vec<u8>> {
    jm.recv(id, TIMEOUT)
        .unwrap_or_else(|| panic!("JeroMQ: no {what} within {TIMEOUT:?}"))
}

fn push_pull(target: Target) {
    let mut jm = JeroMq::start();
    // JeroMQ's PUSH binds, ours connects.
    jm.socket("push", "PUSH", b"");
    let addr = jm.bind("push");
    with_subject(target, SocketType::Pull, &Setup::default(), |pull| {
        pull.connect(addr);
        for m in numbered() {
            jm.send("push", &refs(&m));
        }
        for (i, want) in numbered().into_iter().enumerate() {
            assert_eq!(recv_or_fail(pull, "message"), want, "message {i}");
        }
    });
    jm.close("push");
    // Ours binds, JeroMQ's PULL connects.
    jm.socket("pull", "PULL", b"");
    with_subject(target, SocketType::Push, &Setup::default(), |push| {
        let addr = push.bind();
        jm.connect("pull", addr);
        for m in numbered() {
            push.send(&refs(&m));
        }
        for (i, want) in numbered().into_iter().enumerate() {
            assert_eq!(
                jrecv_or_fail(&mut jm, "pull", "message"),
                want,
                "message {i}"
            );
        }
    });
}

fn pub_sub(target: Target) {
    let mut jm = JeroMq::start();
    let deadline = Instant::now() + TIMEOUT;
    // JeroMQ's PUB binds, our SUB (subscribed to `news`) connects; JeroMQ publishes until
    // news arrive.
    jm.socket("pub", "PUB", b"");
    let addr = jm.bind("pub");
    with_subject(target, SocketType::Sub, &Setup::default(), |sub| {
        sub.subscribe(b"news");
        sub.connect(addr);
        let mut i = 0;
        let got = loop {
            assert!(Instant::now() < deadline, "no news from JeroMQ");
            jm.send("pub", &[format!("weather {i}").as_bytes()]);
            jm.send("pub", &[format!("news {i}").as_bytes(), b"", &[7; 300]]);
            i += 1;
            if let Some(m) = sub.recv(POLL) {
                break m;
            }
        };
        assert!(got[0].starts_with(b"news"), "{got:?}");
        assert_eq!(got[1..], [vec![], vec![7; 300]]);
    });
    jm.close("pub");
    // Our PUB binds, JeroMQ's SUB (subscribed to `news`) connects: its subscription reaches
    // our PUB, which then sends it the news.
    jm.socket("sub", "SUB", b"");
    jm.subscribe("sub", b"news");
    with_subject(target, SocketType::Pub, &Setup::default(), |publisher| {
        let addr = publisher.bind();
        jm.connect("sub", addr);
        let mut i = 0;
        let got = loop {
            assert!(Instant::now() < deadline, "no news at JeroMQ");
            publisher.send(&[format!("weather {i}").as_bytes()]);
            publisher.send(&[format!("news {i}").as_bytes(), b"", &[7; 300]]);
            i += 1;
            if let Some(m) = jm.recv("sub", POLL) {
                break m;
            }
        };
        assert!(got[0].starts_with(b"news"), "{got:?}");
        assert_eq!(got[1..], [vec![], vec![7; 300]]);
    });
}

fn req_rep(target: Target) {
    let mut jm = JeroMq::start();
    // JeroMQ's REP binds, our REQ connects.
    jm.socket("rep", "REP", b"");
    let addr = jm.bind("rep");
    with_subject(target, SocketType::Req, &Setup::default(), |req| {
        req.connect(addr);
        for i in 0..3 {
            req.send(&[format!("hello {i}").as_bytes()]);
            let request = jrecv_or_fail(&mut jm, "rep", "request");
            assert_eq!(request, [format!("hello {i}").into_bytes()]);
            jm.send("rep", &[format!("world {i}").as_bytes()]);
            assert_eq!(
                recv_or_fail(req, "reply"),
                [format!("world {i}").into_bytes()]
            );
        }
        let big = framing_message(9);
        req.send(&refs(&big));
        assert_eq!(jrecv_or_fail(&mut jm, "rep", "request"), big);
        jm.send("rep", &refs(&big));
        assert_eq!(recv_or_fail(req, "reply"), big);
    });
    jm.close("rep");
    // Our REP binds, JeroMQ's REQ connects.
    jm.socket("req", "REQ", b"");
    with_subject(target, SocketType::Rep, &Setup::default(), |rep| {
        let addr = rep.bind();
        jm.connect("req", addr);
        for i in 0..3 {
            jm.send("req", &[format!("hello {i}").as_bytes()]);
            let request = recv_or_fail(rep, "request");
            assert_eq!(request, [format!("hello {i}").into_bytes()]);
            rep.send(&[format!("world {i}").as_bytes()]);
            assert_eq!(
                jrecv_or_fail(&mut jm, "req", "reply"),
                [format!("world {i}").into_bytes()]
            );
        }
    });
}

fn dealer_router(target: Target) {
    let mut jm = JeroMq::start();
    // JeroMQ's ROUTER binds; our DEALER with routing id `OURS` connects and is known by it.
    jm.socket("router", "ROUTER", b"");
    let addr = jm.bind("router");
    let setup = Setup {
        routing_id: b"OURS",
        ..Setup::default()
    };
    with_subject(target, SocketType::Dealer, &setup, |dealer| {
        dealer.connect(addr);
        for i in 0..3 {
            dealer.send(&[b"", format!("hello {i}").as_bytes()]);
            let request = jrecv_or_fail(&mut jm, "router", "request");
            assert_eq!(
                request,
                [b"OURS".to_vec(), vec![], format!("hello {i}").into_bytes()]
            );
            jm.send("router", &[b"OURS", b"", format!("reply {i}").as_bytes()]);
            assert_eq!(
                recv_or_fail(dealer, "reply"),
                [vec![], format!("reply {i}").into_bytes()]
            );
        }
    });
    jm.close("router");
    // Our ROUTER binds; JeroMQ's DEALER with identity `JERO` connects.
    jm.socket("dealer", "DEALER", b"JERO");
    with_subject(target, SocketType::Router, &Setup::default(), |router| {
        let addr = router.bind();
        jm.connect("dealer", addr);
        for i in 0..3 {
            jm.send("dealer", &[b"", format!("hello {i}").as_bytes()]);
            let request = recv_or_fail(router, "request");
            assert_eq!(
                request,
                [b"JERO".to_vec(), vec![], format!("hello {i}").into_bytes()]
            );
            router.send(&[b"JERO", b"", format!("reply {i}").as_bytes()]);
            assert_eq!(
                jrecv_or_fail(&mut jm, "dealer", "reply"),
                [vec![], format!("reply {i}").into_bytes()]
            );
        }
    });
}

/// Read exactly `n` bytes within the stream's read timeout.
fn read_n(stream: &mut impl Read, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    stream.read_exact(&mut buf).expect("bytes from JeroMQ");
    buf
}

/// What JeroMQ 0.3.6 announces, captured on a plain TCP listener (see the module docs).
#[test]
fn jeromq_greets_as_a_zmtp_2_0_peer() {
    let mut jm = JeroMq::start();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    jm.socket("push", "PUSH", b"");
    jm.connect("push", addr);
    let (mut stream, _) = listener.accept().expect("JeroMQ connects");
    stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    // The signature first, and nothing more until ours arrives.
    assert_eq!(
        read_n(&mut stream, 10),
        [0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f]
    );
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut byte = [0u8; 1];
    assert!(
        stream.read(&mut byte).is_err(),
        "JeroMQ sent {byte:02x?} before the other side's signature"
    );
    stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    // Our signature (as libzmq 4.3 would send it): JeroMQ answers revision 1, type PUSH.
    stream
        .write_all(&[0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f])
        .expect("write");
    assert_eq!(read_n(&mut stream, 2), [0x01, 0x08]);
    // Revision 1, type PULL, an empty identity: JeroMQ's empty identity in v2 framing.
    stream.write_all(&[0x01, 0x07, 0x00, 0x00]).expect("write");
    assert_eq!(read_n(&mut stream, 2), [0x00, 0x00]);
    jm.send("push", &[b"hi"]);
    assert_eq!(read_n(&mut stream, 4), [0x00, 0x02, b'h', b'i']);
}

/// One test per target for each scenario: `scenario::target`.
macro_rules! scenarios {
    ($($scenario:ident),*) => {$(
        mod $scenario {
            use zmtp_conformance::subject::Target;

            #[test]
            fn libzmq() {
                super::$scenario(Target::Libzmq)
            }

            #[test]
            fn mio() {
                super::$scenario(Target::Mio)
            }

            #[test]
            fn tokio() {
                super::$scenario(Target::Tokio)
            }

            #[test]
            fn smol() {
                super::$scenario(Target::Smol)
            }
        }
    )*};
}

scenarios!(push_pull, pub_sub, req_rep, dealer_router);

/// The raw peer of `tests/legacy.rs` in each flavour against a connecting JeroMQ PUSH:
/// JeroMQ greets as libzmq 4.3 does except that it announces revision `01` where libzmq
/// announces major version `03`, and it falls back to v1 framing for an unversioned or
/// revision-0 peer: a message `["", "hi"]` goes out as `01 01 03 00 68 69` there and as
/// `01 00 00 02 68 69` to a revision-1 peer.
#[test]
fn jeromq_speaks_each_legacy_flavour() {
    use zmtp_conformance::legacy_peer::{
        encode_message, expected_greeting, socket_type, Flavour, RawPeer,
    };
    let mut jm = JeroMq::start();
    for flavour in Flavour::ALL {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local_addr");
        jm.socket("push", "PUSH", b"");
        jm.connect("push", addr);
        let mut p = RawPeer::accept(&listener, flavour, socket_type::PULL, b"")
            .unwrap_or_else(|e| panic!("{}: {e}", flavour.name()));
        jm.send("push", &[b"", b"hi"]);
        let m = p.recv().expect("a message");
        assert_eq!(m, [&b""[..], b"hi"], "{}", flavour.name());
        let mut greeting = expected_greeting(flavour, socket_type::PUSH, b"");
        if flavour != Flavour::Unversioned {
            greeting[10] = 1;
        }
        assert_eq!(
            p.greeting,
            greeting,
            "{}: JeroMQ's greeting",
            flavour.name()
        );
        let mut bytes = Vec::new();
        encode_message(flavour, &[b"", b"hi"], &mut bytes);
        assert_eq!(p.received, bytes, "{}: JeroMQ's message", flavour.name());
        jm.close("push");
    }
}
