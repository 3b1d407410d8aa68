//! SOCKS5 at the socket layer: a `tcp://` connect with a proxy is opened to the proxy (and
//! opened there again on reconnecting), the endpoint's name is never given to the driver to
//! resolve, an unbracketed IPv6 literal is taken as libzmq's SOCKS connecter takes it, and
//! what is not `tcp://` (or is a STREAM socket's) connects directly.

use zmtp_proto::socket::{Command, Options, Socket, SocksProxy, StreamAddr};
use zmtp_proto::SocketType;

fn dial(s: &mut Socket) -> String {
    loop {
        match s.poll_command() {
            Some(c @ Command::Connect { .. }) => return format!("{:?}", c.dial_addr()),
            Some(_) => continue,
            None => panic!("no connect command"),
        }
    }
}

/// What [`dial`] gives for a connect to the IP address `addr`.
fn ip(addr: &str) -> String {
    format!("{:?}", Some(StreamAddr::Ip(addr.parse().unwrap())))
}

fn with_proxy(ty: SocketType) -> Socket {
    let proxy = SocksProxy::new("127.0.0.1:1080").unwrap();
    let options = Options::default().with_socks_proxy(Some(proxy));
    Socket::new(ty, options, 7).unwrap()
}

#[test]
fn a_tcp_connect_through_a_proxy_dials_the_proxy_and_never_the_name() {
    let mut s = with_proxy(SocketType::Dealer);
    s.connect("tcp://service.internal:5555").unwrap();
    let proxy = ip("127.0.0.1:1080");
    assert_eq!(dial(&mut s), proxy);
    // libzmq's SOCKS connecter reads `::1:5555` as host `::1`, port 5555.
    s.connect("tcp://::1:5555").unwrap();
    assert_eq!(dial(&mut s), proxy);
    // Without a proxy that text is refused, as before.
    let mut direct = Socket::new(SocketType::Dealer, Options::default(), 7).unwrap();
    assert!(direct.connect("tcp://::1:5555").is_err());
    // A name too long for SOCKS5 (255 bytes at most) is refused at connect.
    let long = format!("tcp://{}:1", "a".repeat(256));
    assert!(s.connect(&long).is_err());
}

#[test]
fn other_transports_and_stream_sockets_connect_directly() {
    let mut s = with_proxy(SocketType::Dealer);
    s.connect("ipc:///tmp/zmtp-socks-test").unwrap();
    assert_eq!(
        dial(&mut s),
        format!("{:?}", Some(StreamAddr::IpcPath("/tmp/zmtp-socks-test")))
    );
    let mut stream = with_proxy(SocketType::Stream);
    stream.connect("tcp://127.0.0.1:6000").unwrap();
    assert_eq!(dial(&mut stream), ip("127.0.0.1:6000"));
}

/// A proxy that closes the stream before it connected us (pproxy's answer to a wrong
/// password): what waits for the endpoint says so; a peer that closes during the ZMTP
/// handshake of a direct connect is named as such.
#[test]
fn a_stream_closed_before_the_proxy_connected_it_is_named_in_what_waits() {
    use zmtp_proto::Instant;
    let now = Instant::ZERO;
    // Connect `s` to `endpoint`, queue a message, and have the stream close before its
    // handshake: why the message waits, as the reports give it.
    let closed_early = |s: &mut Socket, endpoint: &str| {
        let ep = s.connect(endpoint).unwrap();
        dial(s);
        s.send("queued", || now).unwrap();
        let peer = s.handle_connected(ep, "127.0.0.1:1080", now).unwrap();
        s.handle_closed(peer, now);
        let waiting = s.unsent_by_endpoint();
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        (ep, waiting[0].failure.clone().unwrap_or_default())
    };
    let mut s = with_proxy(SocketType::Push);
    let (ep, why) = closed_early(&mut s, "tcp://service.internal:5555");
    assert!(
        why.starts_with("the SOCKS5 proxy closed the connection before connecting it"),
        "{why}"
    );
    // A connect to the proxy that fails is the proxy's.
    s.note_connect_error(ep, &"Connection refused (os error 111)");
    let why = s.unsent_by_endpoint()[0]
        .failure
        .clone()
        .unwrap_or_default();
    assert_eq!(
        why,
        "SOCKS5 proxy 127.0.0.1:1080: Connection refused (os error 111)"
    );

    let mut direct = Socket::new(SocketType::Push, Options::default(), 7).unwrap();
    let (_, why) = closed_early(&mut direct, "tcp://127.0.0.1:5555");
    assert_eq!(why, "the peer closed the connection during the handshake");
}
