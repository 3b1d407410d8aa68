//! `wss://`: ZWS 2.0 over TLS between our tokio sockets, with the test certificates of
//! `zmtp-testkit` (a CA, and a server certificate it signed for `localhost` and
//! `127.0.0.1`). Every socket type's bytes over `wss://` are those of `ws://`, which the
//! conformance suites run against libzmq; here the TLS layer is what is tested: the
//! handshake in both roles, messages small and large in both directions (large enough that
//! the stream must wait to write), certificates and names checked, and the refusals.

use std::time::Duration;

use zmtp_testkit::tls::{self, CA, OTHER_CA, SERVER_CERT, SERVER_KEY};
use zmtp_tokio::{Message, MonitorEventKind, Socket, SocketType, Tls};

const TIMEOUT: Duration = Duration::from_secs(10);

fn server_tls() -> Tls {
    Tls::new()
        .with_identity_pem(SERVER_CERT, SERVER_KEY)
        .unwrap()
}

fn client_tls(roots: &[u8]) -> Tls {
    Tls::new().with_roots_pem(roots).unwrap()
}

async fn recv(socket: &Socket) -> Message {
    tokio::time::timeout(TIMEOUT, socket.recv())
        .await
        .expect("nothing received within the timeout")
        .unwrap()
}

/// A bound server of type `server` and a client of type `client` connected to it over
/// `wss://` at `host`, the client trusting `roots`.
async fn link(
    server: SocketType,
    client: SocketType,
    host: &str,
    roots: &[u8],
) -> (Socket, Socket) {
    let s = Socket::new(server).unwrap();
    s.set_tls(server_tls());
    let endpoint = s.bind("wss://127.0.0.1:*").await.unwrap();
    assert!(endpoint.starts_with("wss://127.0.0.1:"), "{endpoint}");
    let port = endpoint.rsplit(':').next().unwrap();
    let c = Socket::new(client).unwrap();
    c.set_tls(client_tls(roots));
    c.connect(&format!("wss://{host}:{port}/zmtp")).unwrap();
    (s, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn req_rep_round_trips() {
    let (rep, req) = link(SocketType::Rep, SocketType::Req, "127.0.0.1", CA).await;
    for i in 0..100u32 {
        req.send(Message::from(i.to_be_bytes().to_vec()))
            .await
            .unwrap();
        let m = recv(&rep).await;
        rep.send(m).await.unwrap();
        assert_eq!(recv(&req).await.frames()[0], i.to_be_bytes()[..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_both_ways_with_the_name_checked() {
    // The client connects by name: `localhost` is in the certificate.
    let (a, b) = link(SocketType::Pair, SocketType::Pair, "localhost", CA).await;
    let big: Vec<u8> = (0..4_000_000u32).map(|i| (i % 253) as u8).collect();
    for (from, to) in [(&a, &b), (&b, &a)] {
        for _ in 0..3 {
            from.send(Message::from(big.clone())).await.unwrap();
        }
        for _ in 0..3 {
            assert!(recv(to).await.frames()[0] == big[..]);
        }
    }
    // And many small ones, after the large.
    for i in 0..10_000u32 {
        a.send(Message::from(i.to_be_bytes().to_vec()))
            .await
            .unwrap();
    }
    for i in 0..10_000u32 {
        assert_eq!(recv(&b).await.frames()[0], i.to_be_bytes()[..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pub_sub_subscriptions_cross_tls() {
    let (publisher, sub) = link(SocketType::Pub, SocketType::Sub, "127.0.0.1", CA).await;
    sub.subscribe(b"a").unwrap();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        publisher
            .send(Message::from(&b"b-skipped"[..]))
            .await
            .unwrap();
        publisher.send(Message::from(&b"a-kept"[..])).await.unwrap();
        if let Ok(m) = tokio::time::timeout(Duration::from_millis(50), sub.recv()).await {
            assert_eq!(m.unwrap().frames()[0], b"a-kept"[..]);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no subscription");
    }
}

/// A client that does not trust the server's certificate (an unrelated CA, or a name the
/// certificate lacks) never connects: nothing is delivered, and the server sees only
/// failed handshakes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_servers_and_wrong_names_are_refused() {
    for (host, roots) in [("127.0.0.1", OTHER_CA), ("127.0.0.2", CA)] {
        let pull = Socket::new(SocketType::Pull).unwrap();
        pull.set_tls(server_tls());
        let mut monitor = pull.monitor();
        let endpoint = pull.bind("wss://0.0.0.0:*").await.unwrap();
        let port = endpoint.rsplit(':').next().unwrap();
        let push = Socket::new(SocketType::Push).unwrap();
        push.set_tls(client_tls(roots));
        push.connect(&format!("wss://{host}:{port}")).unwrap();
        // Queued, never delivered.
        push.send(Message::from(&b"secret"[..])).await.unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(700), pull.recv())
                .await
                .is_err(),
            "{host}: delivered to an untrusted server"
        );
        // It never will be: the process must not wait for it at exit.
        push.set_linger(Some(Duration::ZERO)).unwrap();
        let mut seen = Vec::new();
        while let Ok(Some(e)) =
            tokio::time::timeout(Duration::from_millis(50), monitor.next()).await
        {
            seen.push(e.kind);
        }
        assert!(
            !seen.contains(&MonitorEventKind::HandshakeSucceeded),
            "{host}: {seen:?}"
        );
        assert!(
            seen.contains(&MonitorEventKind::Accepted),
            "{host}: {seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_without_a_certificate_fails_and_files_load() {
    let s = Socket::new(SocketType::Pull).unwrap();
    let e = s.bind("wss://127.0.0.1:*").await.unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    // The same certificate from files works.
    s.set_tls(
        Tls::new()
            .with_identity_files(tls::path("server.pem"), tls::path("server.key"))
            .unwrap(),
    );
    let endpoint = s.bind("wss://127.0.0.1:*").await.unwrap();
    let c = Socket::new(SocketType::Push).unwrap();
    c.set_tls(Tls::new().with_roots_file(tls::path("ca.pem")).unwrap());
    c.connect(&endpoint).unwrap();
    c.send(Message::from(&b"over files"[..])).await.unwrap();
    assert_eq!(recv(&s).await.frames()[0], b"over files"[..]);
}

/// A sender that closes right after sending (LINGER waits) loses nothing over TLS: the
/// receiver reads only after the sender closed, so most of it sat in buffers meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_and_close_delivers_everything() {
    let pull = Socket::new(SocketType::Pull).unwrap();
    pull.set_tls(server_tls());
    let endpoint = pull.bind("wss://127.0.0.1:*").await.unwrap();
    let push = Socket::new(SocketType::Push).unwrap();
    push.set_tls(client_tls(CA));
    push.connect(&endpoint).unwrap();
    let body = vec![5u8; 64 * 1024];
    for i in 0..300u32 {
        let mut m = body.clone();
        m[..4].copy_from_slice(&i.to_be_bytes());
        push.send(Message::from(m)).await.unwrap();
    }
    let report = tokio::time::timeout(TIMEOUT, push.close())
        .await
        .expect("LINGER ended within the timeout");
    assert!(report.delivered_all(), "{report:?}");
    for i in 0..300u32 {
        let m = recv(&pull).await;
        assert_eq!(m.frames()[0][..4], i.to_be_bytes());
        assert_eq!(m.frames()[0].len(), body.len());
    }
}

/// The first handshake failure a client connecting to `to` trusting `roots` reports on
/// its monitor, and the reason it gives.
async fn first_failure(to: &str, roots: &[u8]) -> (MonitorEventKind, Option<String>) {
    let push = Socket::new(SocketType::Push).unwrap();
    push.set_tls(client_tls(roots));
    let mut monitor = push.monitor();
    push.connect(to).unwrap();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let e = tokio::time::timeout_at(deadline, monitor.next())
            .await
            .expect("no handshake failure within the timeout")
            .expect("the monitor ended");
        assert_ne!(e.kind, MonitorEventKind::HandshakeSucceeded, "{to}");
        if e.kind.name().starts_with("HANDSHAKE_FAILED") {
            return (e.kind, e.reason);
        }
    }
}

/// A TLS handshake that fails says why, in rustls's words, on the connecting socket's
/// monitor: an unknown CA, a name the certificate lacks, a peer that is not TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_tls_handshakes_carry_their_reason_to_the_monitor() {
    let server = Socket::new(SocketType::Pull).unwrap();
    server.set_tls(server_tls());
    // Every local address: 127.0.0.2 too.
    let endpoint = server.bind("wss://0.0.0.0:*").await.unwrap();
    let port = endpoint.rsplit(':').next().unwrap();
    let plain = Socket::new(SocketType::Pull).unwrap();
    let tcp = plain.bind("tcp://127.0.0.1:*").await.unwrap();
    let tcp_port = tcp.rsplit(':').next().unwrap();
    let cases = [
        (
            format!("wss://127.0.0.1:{port}"),
            OTHER_CA,
            "TLS: invalid peer certificate: UnknownIssuer".to_string(),
        ),
        (
            format!("wss://127.0.0.2:{port}"),
            CA,
            "TLS: invalid peer certificate: certificate not valid for name \"127.0.0.2\"; \
             certificate is only valid for DnsName(\"localhost\"), IpAddress(127.0.0.1) or \
             IpAddress(0::1)"
                .to_string(),
        ),
    ];
    for (to, roots, reason) in cases {
        let (kind, got) = first_failure(&to, roots).await;
        assert_eq!(kind, MonitorEventKind::HandshakeFailedNoDetail, "{to}");
        assert_eq!(got.as_deref(), Some(&reason[..]), "{to}");
    }
    // A ZMTP peer over plain tcp: ours closes on the ClientHello it cannot parse; one that
    // sent its greeting first (as libzmq does) shows what it sent is not TLS.
    let to = format!("wss://127.0.0.1:{tcp_port}");
    let (kind, got) = first_failure(&to, CA).await;
    assert_eq!(kind, MonitorEventKind::HandshakeFailedNoDetail);
    assert!(
        [
            "TLS: the peer closed the connection during the handshake (does it speak TLS?)",
            "TLS: received corrupt message of type InvalidContentType (the peer does not \
             speak TLS?)"
        ]
        .contains(&got.as_deref().unwrap_or_default()),
        "{got:?}"
    );
}
