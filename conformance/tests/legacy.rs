//! Peers that speak ZMTP 1.0 and 2.0, as libzmq 4.3 handles them: a raw TCP peer
//! ([`zmtp_conformance::legacy_peer`], written from the wire rules, not from our codecs) in
//! each of three flavours (unversioned 1.0, versioned revision 0, revision 1 = ZMTP 2.0)
//! against libzmq, the reference, and against our socket through each driver (mio, tokio,
//! smol). Every scenario runs the same raw peer with the same assertions on each side.
//!
//! What libzmq 4.3.4 sends such a peer, captured by these tests and asserted for libzmq and
//! for ours alike (`legacy_peer::expected_greeting`; `TT` is the socket-type byte):
//!
//! - **unversioned 1.0**: `ff 00 00 00 00 00 00 00 01 7f` (an identity frame's long-form
//!   header: length 1, flags `7f`) and the identity body, empty here; with routing id
//!   `OURS`: `ff 00 00 00 00 00 00 00 05 7f 4f 55 52 53`. Then v1 framing.
//! - **revision 0**: `ff 00 00 00 00 00 00 00 01 7f 03 TT 01 00`: the signature, major
//!   version 3, its type, an empty identity in v1 framing (`OURS`: `…05 7f 03 05 05 00
//!   4f 55 52 53`).
//! - **revision 1**: `ff 00 00 00 00 00 00 00 01 7f 03 TT 00 00`: the same with the
//!   identity in v2 framing (`OURS`: `…05 7f 03 05 00 04 4f 55 52 53`).
//!
//! After that, every frame the raw peer reads must be in canonical form (the short length
//! whenever it fits: v1 below 255 including the flags byte, v2 up to 255) with no flag bits
//! but MORE (and LONG in v2), so the bytes received are fixed by the frames asserted.
//!
//! Subscriptions: a versioned SUB sends `\x01topic` as a message; a PUB gives an
//! unversioned 1.0 peer a phantom subscribe-all. Peers below 3.0 are refused by a socket
//! with a security mechanism (here a PLAIN server) or with ZAP on (a NULL socket with a ZAP
//! domain), and by ours with `legacy_peers` off. Before closing, libzmq was seen sending
//! `ff 00 00 00 00 00 00 00 01 7f 03` to a versioned peer (the type byte it queues next
//! never goes out), and its signature or nothing at all to an unversioned one (it may close
//! before its first write); ours sends a prefix of the same (the signature, and `03` to a
//! versioned peer), depending on timing. Either way nothing is delivered.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use zmtp_conformance::legacy_peer::{
    encode_message, expect_refusal, expected_greeting, libzmq_signature, socket_type as raw,
    Flavour, RawPeer,
};
use zmtp_conformance::subject::{with_subject, Setup, Subject, Target};
use zmtp_proto::SocketType;

const TIMEOUT: Duration = Duration::from_secs(10);
/// How long to watch for something that must not happen.
const QUIET: Duration = Duration::from_millis(300);

/// A multipart message that exercises the framing: empty frames, bodies on both sides of
/// each long-form boundary (v1: 253/254, v2: 255/256) and a 100 KB frame.
fn framing_message() -> Vec<Vec<u8>> {
    vec![
        b"".to_vec(),
        vec![b'a'; 253],
        vec![b'b'; 254],
        vec![b'c'; 255],
        vec![b'd'; 256],
        b"".to_vec(),
        (0..100_000u32).map(|i| (i % 251) as u8).collect(),
    ]
}

fn refs(m: &[Vec<u8>]) -> Vec<&[u8]> {
    m.iter().map(|f| &f[..]).collect()
}

/// The messages of the PUSH/PULL scenarios, in order.
fn push_messages() -> Vec<Vec<Vec<u8>>> {
    vec![
        framing_message(),
        vec![b"".to_vec()],
        vec![b"1".to_vec()],
        vec![b"2".to_vec(), b"".to_vec()],
        vec![b"3".to_vec()],
    ]
}

/// Spawn the raw peer's side of a scenario.
fn raw_side<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> thread::JoinHandle<T> {
    thread::spawn(move || f().expect("the raw peer's exchange"))
}

fn join<T>(h: thread::JoinHandle<T>) -> T {
    h.join()
        .expect("the raw peer's thread panicked (see above)")
}

fn listener() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a raw listener");
    let a = l.local_addr().expect("local_addr");
    (l, a)
}

fn recv_or_fail(s: &mut dyn Subject, what: &str) -> Vec<Vec<u8>> {
    s.recv(TIMEOUT)
        .unwrap_or_else(|| panic!("no {what} within {TIMEOUT:?}"))
}

fn check_greeting(flavour: Flavour, peer: &RawPeer, ty: u8, routing_id: &[u8]) {
    assert_eq!(
        peer.greeting,
        expected_greeting(flavour, ty, routing_id),
        "greeting and identity sent to a {} peer",
        flavour.name()
    );
    assert_eq!(peer.peer_identity, routing_id, "identity");
}

/// `got == want` for byte streams, reporting the first difference rather than both.
fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let near = |b: &[u8]| b[at.saturating_sub(8)..(at + 8).min(b.len())].to_vec();
        panic!(
            "{what}: {} bytes received, {} expected; first difference at {at}: \
             got {:02x?}, want {:02x?} (from offset {})",
            got.len(),
            want.len(),
            near(got),
            near(want),
            at.saturating_sub(8)
        );
    }
}

/// Raw PUSH → our PULL (which binds).
fn push_to_pull(target: Target, flavour: Flavour) {
    with_subject(target, SocketType::Pull, &Setup::default(), |pull| {
        let addr = pull.bind();
        let raw = raw_side(move || {
            let mut p = RawPeer::connect(addr, flavour, raw::PUSH, b"")?;
            for m in push_messages() {
                p.send(&refs(&m))?;
            }
            Ok(p)
        });
        for (i, want) in push_messages().into_iter().enumerate() {
            assert_eq!(recv_or_fail(pull, "message"), want, "message {i}");
        }
        check_greeting(flavour, &join(raw), raw::PULL, b"");
    });
}

/// Our PUSH (which connects) → raw PULL.
fn pull_from_push(target: Target, flavour: Flavour) {
    let (l, addr) = listener();
    let raw = raw_side(move || {
        let mut p = RawPeer::accept(&l, flavour, raw::PULL, b"")?;
        let got = (0..push_messages().len())
            .map(|_| p.recv())
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok((p, got))
    });
    with_subject(target, SocketType::Push, &Setup::default(), |push| {
        push.connect(addr);
        for m in push_messages() {
            push.send(&refs(&m));
        }
        let (p, got) = join(raw);
        assert_eq!(got, push_messages());
        check_greeting(flavour, &p, raw::PUSH, b"");
        let mut want = Vec::new();
        for m in push_messages() {
            encode_message(flavour, &refs(&m), &mut want);
        }
        assert_bytes(&p.received, &want, "the PUSH's byte stream");
    });
}

/// Our PUB (which binds) → raw SUB. A versioned SUB subscribes to `news` with a `\x01news`
/// message and must get only `news` messages; an unversioned one sends nothing and gets
/// everything (the phantom subscribe-all).
fn pub_to_sub(target: Target, flavour: Flavour) {
    with_subject(target, SocketType::Pub, &Setup::default(), |publisher| {
        let addr = publisher.bind();
        let done = Arc::new(AtomicBool::new(false));
        let raw = raw_side({
            let done = done.clone();
            move || {
                let mut p = RawPeer::connect(addr, flavour, raw::SUB, b"")?;
                if flavour != Flavour::Unversioned {
                    p.send(&[b"\x01news"])?;
                }
                let mut got = Vec::new();
                let mut news = 0;
                while news < 3 {
                    let m = p.recv()?;
                    news += usize::from(m[0].starts_with(b"news"));
                    got.push(m);
                }
                done.store(true, Ordering::SeqCst);
                Ok((p, got))
            }
        });
        // Publish until the raw SUB has had three news: what goes out before the
        // subscription arrives is dropped.
        let deadline = Instant::now() + TIMEOUT;
        let big = vec![b'n'; 300];
        let mut i = 0u32;
        while !done.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the raw SUB got no news");
            publisher.send(&[format!("weather {i}").as_bytes()]);
            publisher.send(&[format!("news {i}").as_bytes(), b"", &big]);
            i += 1;
            thread::sleep(Duration::from_millis(5));
        }
        let (p, got) = join(raw);
        check_greeting(flavour, &p, raw::PUB, b"");
        for m in got.iter().filter(|m| m[0].starts_with(b"news")) {
            assert_eq!(m.len(), 3, "{m:?}");
            assert_eq!((&m[1][..], &m[2][..]), (&b""[..], &big[..]));
        }
        let weather = got.iter().filter(|m| m[0].starts_with(b"weather")).count();
        if flavour == Flavour::Unversioned {
            assert!(weather > 0, "no phantom subscribe-all: {got:?}");
        } else {
            assert_eq!(
                weather, 0,
                "a versioned SUB got what it did not subscribe to"
            );
        }
    });
}

/// Raw PUB → our SUB (which connects): our subscription reaches the raw PUB as a
/// `\x01news` message; the raw PUB sends everything and our SUB keeps only `news`.
fn sub_from_pub(target: Target, flavour: Flavour) {
    let (l, addr) = listener();
    let raw = raw_side(move || {
        let mut p = RawPeer::accept(&l, flavour, raw::PUB, b"")?;
        let subscription = p.recv()?;
        p.send(&[b"weather 1"])?;
        p.send(&refs(
            &[b"news 1".to_vec()]
                .into_iter()
                .chain(framing_message())
                .collect::<Vec<_>>(),
        ))?;
        p.send(&[b"weather 2"])?;
        p.send(&[b"news 2"])?;
        Ok((p, subscription))
    });
    with_subject(target, SocketType::Sub, &Setup::default(), |sub| {
        sub.subscribe(b"news");
        sub.connect(addr);
        let first = recv_or_fail(sub, "news");
        assert_eq!(first[0], b"news 1");
        assert_eq!(first[1..], framing_message()[..]);
        assert_eq!(recv_or_fail(sub, "news"), [b"news 2"]);
        let (p, subscription) = join(raw);
        assert_eq!(subscription, [b"\x01news"], "the subscription message");
        check_greeting(flavour, &p, raw::SUB, b"");
    });
}

/// Raw REQ → our REP (which binds), the empty delimiter on the wire.
fn req_to_rep(target: Target, flavour: Flavour) {
    with_subject(target, SocketType::Rep, &Setup::default(), |rep| {
        let addr = rep.bind();
        let raw = raw_side(move || {
            let mut p = RawPeer::connect(addr, flavour, raw::REQ, b"")?;
            p.send(&[b"", b"hello"])?;
            let first = p.recv()?;
            let mut second = vec![b"".to_vec()];
            second.extend(framing_message());
            p.send(&refs(&second))?;
            let echo = p.recv()?;
            Ok((p, first, second, echo))
        });
        assert_eq!(recv_or_fail(rep, "request"), [b"hello"]);
        rep.send(&[b"world"]);
        let big = recv_or_fail(rep, "request");
        assert_eq!(big, framing_message());
        rep.send(&refs(&big));
        let (p, first, second, echo) = join(raw);
        assert_eq!(first, [&b""[..], b"world"]);
        assert_eq!(echo, second);
        check_greeting(flavour, &p, raw::REP, b"");
    });
}

/// Our REQ (which connects) → raw REP.
fn rep_for_req(target: Target, flavour: Flavour) {
    let (l, addr) = listener();
    let raw = raw_side(move || {
        let mut p = RawPeer::accept(&l, flavour, raw::REP, b"")?;
        let request = p.recv()?;
        p.send(&[b"", b"world"])?;
        Ok((p, request))
    });
    with_subject(target, SocketType::Req, &Setup::default(), |req| {
        req.connect(addr);
        req.send(&[b"hello"]);
        assert_eq!(recv_or_fail(req, "reply"), [b"world"]);
        let (p, request) = join(raw);
        assert_eq!(request, [&b""[..], b"hello"]);
        check_greeting(flavour, &p, raw::REQ, b"");
        // v1: `01 01` (length 1, MORE) `06 00 hello`; v2: `01 00` (MORE, size 0) `00 05 hello`.
        let want: &[u8] = if flavour.v1_framing() {
            b"\x01\x01\x06\x00hello"
        } else {
            b"\x01\x00\x00\x05hello"
        };
        assert_eq!(p.received, want, "the request's bytes");
    });
}

/// Raw DEALER with identity `PYID` → our ROUTER (which binds): the ROUTER sees
/// `[PYID, ...]` and routes the reply back by it.
fn dealer_to_router(target: Target, flavour: Flavour) {
    with_subject(target, SocketType::Router, &Setup::default(), |router| {
        let addr = router.bind();
        let raw = raw_side(move || {
            let mut p = RawPeer::connect(addr, flavour, raw::DEALER, b"PYID")?;
            p.send(&[b"AB", b"hello"])?;
            let reply = p.recv()?;
            Ok((p, reply))
        });
        assert_eq!(
            recv_or_fail(router, "request"),
            [&b"PYID"[..], b"AB", b"hello"]
        );
        router.send(&[b"PYID", b"", b"world"]);
        let (p, reply) = join(raw);
        assert_eq!(reply, [&b""[..], b"world"]);
        check_greeting(flavour, &p, raw::ROUTER, b"");
    });
}

/// Our DEALER with routing id `OURS` (which connects) → raw ROUTER: the raw ROUTER reads
/// `OURS` as the identity frame.
fn router_for_dealer(target: Target, flavour: Flavour) {
    let (l, addr) = listener();
    let raw = raw_side(move || {
        let mut p = RawPeer::accept(&l, flavour, raw::ROUTER, b"")?;
        let request = p.recv()?;
        p.send(&[b"reply", b""])?;
        Ok((p, request))
    });
    let setup = Setup {
        routing_id: b"OURS",
        ..Setup::default()
    };
    with_subject(target, SocketType::Dealer, &setup, |dealer| {
        dealer.connect(addr);
        dealer.send(&[b"hello", b""]);
        assert_eq!(recv_or_fail(dealer, "reply"), [&b"reply"[..], b""]);
        let (p, request) = join(raw);
        assert_eq!(request, [&b"hello"[..], b""]);
        check_greeting(flavour, &p, raw::DEALER, b"OURS");
    });
}

/// The most a socket may send a legacy peer before refusing it: its signature, and to a
/// versioned peer `03` and its type byte. libzmq 4.3.4 (a PLAIN server) was seen sending
/// the signature and `03` to a versioned peer, and the signature or nothing at all to an
/// unversioned one: it may close before its first write has gone out.
fn refusal_bytes_at_most(flavour: Flavour, ty: u8) -> Vec<u8> {
    let mut v = libzmq_signature(0).to_vec();
    if flavour != Flavour::Unversioned {
        v.extend_from_slice(&[3, ty]);
    }
    v
}

/// A PULL configured per `setup` (which binds) refuses a raw PUSH of `flavour`: it closes
/// the connection and delivers nothing, having sent at most [`refusal_bytes_at_most`].
fn refused(target: Target, flavour: Flavour, setup: &Setup) {
    with_subject(target, SocketType::Pull, setup, |pull| {
        let addr = pull.bind();
        let raw = raw_side(move || {
            let stream = TcpStream::connect(addr)?;
            Ok(expect_refusal(
                stream,
                flavour,
                raw::PUSH,
                &[b"leak"],
                TIMEOUT,
            ))
        });
        let outcome = join(raw);
        let refusal = outcome.unwrap_or_else(|r| {
            panic!(
                "the {} peer's connection is still open; received {:02x?}",
                flavour.name(),
                r.received
            )
        });
        eprintln!(
            "{target:?} {}: {:02x?} before closing",
            flavour.name(),
            refusal.received
        );
        let full = refusal_bytes_at_most(flavour, raw::PULL);
        assert!(
            full.starts_with(&refusal.received),
            "{target:?} sent {:02x?} before refusing, not a prefix of {full:02x?}",
            refusal.received
        );
        assert_eq!(pull.recv(QUIET), None, "a refused peer's message delivered");
    });
}

fn refused_by_plain_server(target: Target, flavour: Flavour) {
    let setup = Setup {
        plain_server: true,
        ..Setup::default()
    };
    refused(target, flavour, &setup);
}

fn refused_with_zap_domain(target: Target, flavour: Flavour) {
    let setup = Setup {
        zap_domain: true,
        ..Setup::default()
    };
    refused(target, flavour, &setup);
}

fn refused_without_legacy_peers(target: Target, flavour: Flavour) {
    let setup = Setup {
        legacy_peers: Some(false),
        ..Setup::default()
    };
    refused(target, flavour, &setup);
}

/// One test per target and flavour for each scenario: `scenario::target_flavour`.
macro_rules! per_flavour {
    ($scenario:ident, $target:ident, $($test:ident => $flavour:ident),*) => {$(
        #[test]
        fn $test() {
            super::$scenario(Target::$target, Flavour::$flavour)
        }
    )*};
}

macro_rules! scenarios {
    ($($scenario:ident: $($target:ident => [$u:ident, $r0:ident, $r1:ident]),*;)*) => {$(
        mod $scenario {
            use super::{Flavour, Target};
            $(per_flavour!(
                $scenario, $target,
                $u => Unversioned, $r0 => Revision0, $r1 => Revision1
            );)*
        }
    )*};
}

scenarios! {
    push_to_pull:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    pull_from_push:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    pub_to_sub:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    sub_from_pub:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    req_to_rep:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    rep_for_req:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    dealer_to_router:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    router_for_dealer:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    refused_by_plain_server:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    refused_with_zap_domain:
        Libzmq => [libzmq_unversioned, libzmq_rev0, libzmq_rev1],
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
    refused_without_legacy_peers:
        Mio => [mio_unversioned, mio_rev0, mio_rev1],
        Tokio => [tokio_unversioned, tokio_rev0, tokio_rev1],
        Smol => [smol_unversioned, smol_rev0, smol_rev1];
}
