//! `ZMQ_TCP_ACCEPT_FILTER`: the networks a listener accepts peers from, parsed as libzmq
//! parses them and applied to every stream accepted on a TCP or WebSocket endpoint.

use std::net::IpAddr;

use zmtp_proto::socket::{AcceptFilterError, MonitorEventKind, Options, Socket, TcpAcceptFilter};
use zmtp_proto::{Instant, SocketType};

fn filter(text: &str) -> TcpAcceptFilter {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn filters_parse_as_libzmq_reads_them() {
    // The strings libzmq's own test refuses.
    for bad in [
        "foo",
        "0.0.0.0foo",
        "0.0.0.0/foo",
        "0.0.0.0/",
        "0.0.0.0/-1",
        "0.0.0.0/33",
    ] {
        assert!(
            bad.parse::<TcpAcceptFilter>().is_err(),
            "{bad} was accepted"
        );
    }
    assert_eq!(
        "localhost".parse::<TcpAcceptFilter>(),
        Err(AcceptFilterError::Address),
        "names are not resolved"
    );
    assert_eq!(
        "::1/129".parse::<TcpAcceptFilter>(),
        Err(AcceptFilterError::Prefix)
    );
    assert_eq!(
        "10.0.0.0/08x".parse::<TcpAcceptFilter>(),
        Err(AcceptFilterError::Prefix)
    );

    let f = filter("127.0.0.1");
    assert_eq!((f.network(), f.prefix()), (ip("127.0.0.1"), 32));
    let f = filter("0.0.0.0/0");
    assert_eq!((f.network(), f.prefix()), (ip("0.0.0.0"), 0));
    let f = filter("[::1]/128");
    assert_eq!((f.network(), f.prefix()), (ip("::1"), 128));
    assert_eq!(filter("fe80::/10").to_string(), "fe80::/10");
}

#[test]
fn a_network_matches_its_leading_bits_and_its_family_only() {
    let half = filter("192.168.0.0/17");
    assert!(half.matches(ip("192.168.127.255")));
    assert!(!half.matches(ip("192.168.128.0")), "bit 17 differs");
    assert!(!half.matches(ip("192.169.0.1")));

    let any4 = filter("0.0.0.0/0");
    assert!(any4.matches(ip("203.0.113.9")));
    assert!(
        !any4.matches(ip("2001:db8::1")),
        "an IPv4 network never matches IPv6"
    );
    assert!(!filter("::/0").matches(ip("10.0.0.1")));

    // An IPv4 peer on a dual-stack listener is matched as IPv4.
    assert!(filter("10.0.0.0/8").matches(ip("::ffff:10.1.2.3")));

    let host = filter("127.0.0.1");
    assert!(host.matches(ip("127.0.0.1")));
    assert!(!host.matches(ip("127.0.0.2")));
}

#[test]
fn addresses_as_drivers_give_them() {
    let lo = [filter("127.0.0.0/8"), filter("::1")];
    assert!(TcpAcceptFilter::accepts(&lo, "127.0.0.1:53412"));
    assert!(TcpAcceptFilter::accepts(&lo, "[::1]:5555"));
    assert!(TcpAcceptFilter::accepts(&lo, "127.9.9.9"), "a bare IP");
    assert!(!TcpAcceptFilter::accepts(&lo, "10.0.0.1:80"));
    assert!(
        !TcpAcceptFilter::accepts(&lo, ""),
        "no address: refused when filtering"
    );
    assert!(TcpAcceptFilter::accepts(&[], ""), "no filter: every peer");
}

/// A PAIR listening on `endpoint` with `filters`, watching ACCEPTED and ACCEPT_FAILED.
fn listener(endpoint: &str, filters: &[&str]) -> (Socket, zmtp_proto::socket::EndpointId) {
    let opts = Options::default().with_tcp_accept_filters(filters.iter().map(|f| filter(f)));
    let mut s = Socket::new(SocketType::Pair, opts, 1).unwrap();
    s.set_monitor(MonitorEventKind::Accepted.value() | MonitorEventKind::AcceptFailed.value());
    let ep = s.bind(endpoint).unwrap();
    s.handle_listening(ep, endpoint);
    (s, ep)
}

#[test]
fn a_peer_outside_the_networks_is_refused_with_accept_failed() {
    let (mut s, ep) = listener("tcp://127.0.0.1:5555", &["127.0.0.255/32", "10.0.0.0/8"]);
    assert!(
        s.handle_accepted(ep, "127.0.0.1:40000", Instant::from_millis(0))
            .is_none(),
        "127.0.0.1 is in neither network"
    );
    let ev = s.poll_monitor().expect("an event");
    assert_eq!(ev.kind, MonitorEventKind::AcceptFailed);
    assert_eq!(ev.endpoint, "tcp://127.0.0.1:5555");
    assert!(s.poll_monitor().is_none());

    assert!(s
        .handle_accepted(ep, "10.20.30.40:40001", Instant::from_millis(1))
        .is_some());
    assert_eq!(s.poll_monitor().unwrap().kind, MonitorEventKind::Accepted);
}

#[test]
fn filters_apply_to_websocket_listeners_but_not_to_ipc() {
    let (mut ws, ep) = listener("ws://127.0.0.1:8080/zmq", &["192.0.2.0/24"]);
    assert!(ws
        .handle_accepted(ep, "127.0.0.1:40000", Instant::from_millis(0))
        .is_none());
    assert!(ws
        .handle_accepted(ep, "192.0.2.7:40000", Instant::from_millis(0))
        .is_some());

    let (mut ipc, ep) = listener("ipc:///tmp/zmtp-accept-filter-test", &["192.0.2.0/24"]);
    assert!(
        ipc.handle_accepted(ep, "", Instant::from_millis(0))
            .is_some(),
        "ipc peers have no IP: the TCP filter does not apply"
    );
}

#[test]
fn with_no_filter_every_peer_is_accepted() {
    let (mut s, ep) = listener("tcp://127.0.0.1:5555", &[]);
    for (i, peer) in ["127.0.0.1:1", "[2001:db8::1]:2", "198.51.100.1:3"]
        .iter()
        .enumerate()
    {
        assert!(s
            .handle_accepted(ep, peer, Instant::from_millis(i as u64))
            .is_some());
    }
}
