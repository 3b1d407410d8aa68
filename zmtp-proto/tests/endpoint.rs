//! Endpoint parsing, as libzmq users write endpoints.

use std::net::{Ipv4Addr, Ipv6Addr};

use zmtp_proto::socket::endpoint::*;

fn tcp(host: Host, port: Option<u16>) -> Endpoint {
    Endpoint::Tcp(TcpEndpoint {
        host,
        port,
        source: None,
    })
}

fn name(n: &str) -> Host {
    Host::Name(n.to_owned())
}

#[test]
fn valid_endpoints_parse_and_round_trip() {
    // (input, expected value, canonical display)
    let cases: &[(&str, Endpoint, &str)] = &[
        (
            "tcp://127.0.0.1:5555",
            tcp(Host::Ipv4(Ipv4Addr::LOCALHOST), Some(5555)),
            "tcp://127.0.0.1:5555",
        ),
        (
            "tcp://[::1]:5555",
            tcp(Host::Ipv6(Ipv6Addr::LOCALHOST), Some(5555)),
            "tcp://[::1]:5555",
        ),
        (
            "tcp://[0:0:0:0:0:0:0:1]:1",
            tcp(Host::Ipv6(Ipv6Addr::LOCALHOST), Some(1)),
            "tcp://[::1]:1",
        ),
        (
            "tcp://[::ffff:10.0.0.1]:7",
            tcp(
                Host::Ipv6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()),
                Some(7),
            ),
            "tcp://[::ffff:10.0.0.1]:7",
        ),
        ("tcp://*:*", tcp(Host::Any, None), "tcp://*:*"),
        ("tcp://*:0", tcp(Host::Any, Some(0)), "tcp://*:0"),
        (
            "tcp://*:65535",
            tcp(Host::Any, Some(65535)),
            "tcp://*:65535",
        ),
        (
            "tcp://localhost:80",
            tcp(name("localhost"), Some(80)),
            "tcp://localhost:80",
        ),
        (
            "tcp://localhost:0080",
            tcp(name("localhost"), Some(80)),
            "tcp://localhost:80",
        ),
        ("tcp://eth0:*", tcp(name("eth0"), None), "tcp://eth0:*"),
        (
            "tcp://my-host.example.com:5555",
            tcp(name("my-host.example.com"), Some(5555)),
            "tcp://my-host.example.com:5555",
        ),
        (
            "tcp://1.2.3.4.example:1",
            tcp(name("1.2.3.4.example"), Some(1)),
            "tcp://1.2.3.4.example:1",
        ),
        (
            "ipc:///tmp/x",
            Endpoint::Ipc(IpcEndpoint::Path("/tmp/x".to_owned())),
            "ipc:///tmp/x",
        ),
        (
            "ipc://relative/sock",
            Endpoint::Ipc(IpcEndpoint::Path("relative/sock".to_owned())),
            "ipc://relative/sock",
        ),
        (
            "ipc://*",
            Endpoint::Ipc(IpcEndpoint::Path("*".to_owned())),
            "ipc://*",
        ),
        (
            "ipc://@name",
            Endpoint::Ipc(IpcEndpoint::Abstract("name".to_owned())),
            "ipc://@name",
        ),
        (
            "ipc://@@",
            Endpoint::Ipc(IpcEndpoint::Abstract("@".to_owned())),
            "ipc://@@",
        ),
        (
            "inproc://name",
            Endpoint::Inproc("name".to_owned()),
            "inproc://name",
        ),
        (
            "inproc://a:b;c//d",
            Endpoint::Inproc("a:b;c//d".to_owned()),
            "inproc://a:b;c//d",
        ),
    ];
    for (input, expected, canonical) in cases {
        let parsed = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(&parsed, expected, "{input}");
        assert_eq!(input.parse::<Endpoint>().as_ref(), Ok(expected), "{input}");
        let shown = parsed.to_string();
        assert_eq!(&shown, canonical, "{input}");
        assert_eq!(Endpoint::parse(&shown).as_ref(), Ok(expected), "{input}");
        assert_eq!(parsed.check_bind(), Ok(()), "{input}");
    }
}

#[test]
fn invalid_endpoints_name_the_mistake() {
    use EndpointError as E;
    let s = |v: &str| v.to_owned();
    let cases: &[(&str, EndpointError)] = &[
        ("", E::MissingScheme),
        ("127.0.0.1:5555", E::MissingScheme),
        ("tcp:/127.0.0.1:5555", E::MissingScheme),
        ("://x", E::MissingScheme),
        ("TCP://127.0.0.1:5555", E::UnknownTransport(s("TCP"))),
        (
            "epgm://eth0;239.192.1.1:5555",
            E::UnknownTransport(s("epgm")),
        ),
        ("pgm://eth0;239.192.1.1:5555", E::UnknownTransport(s("pgm"))),
        ("tcp://localhost", E::MissingPort),
        ("tcp://localhost:", E::MissingPort),
        ("tcp://[::1]", E::MissingPort),
        ("tcp://[::1]5555", E::MissingPort),
        ("tcp://[::1]:", E::MissingPort),
        ("tcp://localhost:65536", E::BadPort(s("65536"))),
        ("tcp://localhost:+80", E::BadPort(s("+80"))),
        ("tcp://localhost:-1", E::BadPort(s("-1"))),
        ("tcp://localhost:80 ", E::BadPort(s("80 "))),
        ("tcp://localhost:http", E::BadPort(s("http"))),
        ("tcp://localhost:5555/x", E::BadPort(s("5555/x"))),
        (
            "tcp://localhost:99999999999999999999",
            E::BadPort(s("99999999999999999999")),
        ),
        ("tcp://:5555", E::EmptyHost),
        ("tcp://[]:5555", E::EmptyHost),
        ("tcp:// localhost:5555", E::BadHost(s(" localhost"))),
        ("tcp://a/b:5555", E::BadHost(s("a/b"))),
        ("tcp://a]:5555", E::BadHost(s("a]"))),
        ("tcp://256.0.0.1:5555", E::BadIpv4(s("256.0.0.1"))),
        ("tcp://127.1:5555", E::BadIpv4(s("127.1"))),
        ("tcp://01.2.3.4:5555", E::BadIpv4(s("01.2.3.4"))),
        ("tcp://1234:5555", E::BadIpv4(s("1234"))),
        ("tcp://[1.2.3.4]:5555", E::BadIpv6(s("1.2.3.4"))),
        ("tcp://[fe80::1%eth0]:5555", E::BadIpv6(s("fe80::1%eth0"))),
        ("tcp://[*]:5555", E::BadIpv6(s("*"))),
        ("tcp://[::1:5555", E::UnclosedBracket),
        ("tcp://::1:5555", E::UnbracketedIpv6(s("::1:5555"))),
        ("tcp://::1", E::UnbracketedIpv6(s("::1"))),
        ("tcp://a:b:5555", E::UnbracketedIpv6(s("a:b:5555"))),
        // A source needs its port, as libzmq's does.
        ("tcp://eth0;10.0.0.2:5555", E::MissingPort),
        ("tcp://10.0.0.1:x;10.0.0.2:5555", E::BadPort(s("x"))),
        ("tcp://10.0.0.1:1;10.0.0.2", E::MissingPort),
        ("ws://10.0.0.1:1;10.0.0.2:5555", E::UnsupportedSourceAddress),
        ("ipc://", E::EmptyPath),
        ("ipc://@", E::EmptyAbstractName),
        ("inproc://", E::EmptyName),
    ];
    for (input, expected) in cases {
        assert_eq!(Endpoint::parse(input).as_ref(), Err(expected), "{input}");
        assert_eq!(input.parse::<Endpoint>().as_ref(), Err(expected), "{input}");
    }
}

#[test]
fn bind_and_connect_checks() {
    use EndpointError as E;
    type Check = Result<(), E>;
    // (input, check_bind, check_connect)
    let cases: &[(&str, Check, Check)] = &[
        ("tcp://127.0.0.1:5555", Ok(()), Ok(())),
        ("tcp://[::1]:1", Ok(()), Ok(())),
        ("tcp://localhost:65535", Ok(()), Ok(())),
        ("tcp://*:5555", Ok(()), Err(E::WildcardHostOnConnect)),
        ("tcp://*:*", Ok(()), Err(E::WildcardHostOnConnect)),
        ("tcp://127.0.0.1:*", Ok(()), Err(E::WildcardPortOnConnect)),
        ("tcp://127.0.0.1:0", Ok(()), Err(E::WildcardPortOnConnect)),
        ("tcp://eth0:*", Ok(()), Err(E::WildcardPortOnConnect)),
        ("ipc:///tmp/x", Ok(()), Ok(())),
        ("ipc://*", Ok(()), Err(E::WildcardPathOnConnect)),
        ("ipc://@name", Ok(()), Ok(())),
        ("inproc://name", Ok(()), Ok(())),
        ("inproc://*", Ok(()), Ok(())),
        // A source address is for connecting.
        (
            "tcp://127.0.0.1:5564;127.0.0.1:5555",
            Err(E::UnsupportedSourceAddress),
            Ok(()),
        ),
        (
            "tcp://*:*;localhost:5555",
            Err(E::UnsupportedSourceAddress),
            Ok(()),
        ),
        (
            "tcp://127.0.0.1:0;127.0.0.1:*",
            Err(E::UnsupportedSourceAddress),
            Err(E::WildcardPortOnConnect),
        ),
    ];
    for (input, bind, connect) in cases {
        let e = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(&e.check_bind(), bind, "{input}");
        assert_eq!(&e.check_connect(), connect, "{input}");
    }
}

#[test]
fn hand_built_endpoints_are_checked_like_parsed_ones() {
    use EndpointError as E;
    let cases: &[(Endpoint, E)] = &[
        (Endpoint::Inproc(String::new()), E::EmptyName),
        (
            Endpoint::Ipc(IpcEndpoint::Path(String::new())),
            E::EmptyPath,
        ),
        (
            Endpoint::Ipc(IpcEndpoint::Abstract(String::new())),
            E::EmptyAbstractName,
        ),
        (tcp(name(""), Some(1)), E::EmptyHost),
        (tcp(name("a b"), Some(1)), E::BadHost(s("a b"))),
        (tcp(name("::1"), Some(1)), E::UnbracketedIpv6(s("::1"))),
    ];
    fn s(v: &str) -> String {
        v.to_owned()
    }
    for (e, expected) in cases {
        assert_eq!(e.check_bind().as_ref(), Err(expected), "{e:?}");
        assert_eq!(e.check_connect().as_ref(), Err(expected), "{e:?}");
    }
}

#[test]
fn tcp_source_addresses_parse_and_round_trip() {
    // (input, source host, source port, destination, canonical display)
    let cases = [
        (
            "tcp://127.0.0.1:5564;127.0.0.1:5555",
            Host::Ipv4(Ipv4Addr::LOCALHOST),
            5564,
            tcp(Host::Ipv4(Ipv4Addr::LOCALHOST), Some(5555)),
            "tcp://127.0.0.1:5564;127.0.0.1:5555",
        ),
        (
            "tcp://[::1]:*;[::1]:7",
            Host::Ipv6(Ipv6Addr::LOCALHOST),
            0,
            tcp(Host::Ipv6(Ipv6Addr::LOCALHOST), Some(7)),
            "tcp://[::1]:0;[::1]:7",
        ),
        (
            "tcp://lo:5555;localhost:1235",
            name("lo"),
            5555,
            tcp(name("localhost"), Some(1235)),
            "tcp://lo:5555;localhost:1235",
        ),
        // The source ends at the last `;`.
        (
            "tcp://*:0;example.org:1",
            Host::Any,
            0,
            tcp(name("example.org"), Some(1)),
            "tcp://*:0;example.org:1",
        ),
    ];
    for (input, host, port, destination, canonical) in cases {
        let parsed = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        let Endpoint::Tcp(tcp) = &parsed else {
            panic!("{input}: {parsed:?}");
        };
        let Endpoint::Tcp(want) = destination else {
            unreachable!()
        };
        assert_eq!((&tcp.host, tcp.port), (&want.host, want.port), "{input}");
        assert_eq!(tcp.source, Some(TcpSource { host, port }), "{input}");
        assert_eq!(parsed.to_string(), canonical, "{input}");
        assert_eq!(Endpoint::parse(canonical), Ok(parsed.clone()), "{input}");
        assert_eq!(parsed.check_connect(), Ok(()), "{input}");
    }
}

#[test]
fn transport_names() {
    for (input, transport) in [
        ("tcp://*:*", "tcp"),
        ("ipc://@x", "ipc"),
        ("inproc://x", "inproc"),
    ] {
        let e = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(e.transport(), transport);
        assert!(e.to_string().starts_with(transport));
    }
}

proptest::proptest! {
    /// Parsing never panics, and whatever parses displays to a string that parses back
    /// to the same value.
    #[test]
    fn parse_is_total_and_round_trips(
        input in "(tcp|ipc|inproc|TCP|)(://|:/)?[\\[\\]:*@;a-f0-9.%/ ]{0,24}"
    ) {
        if let Ok(e) = Endpoint::parse(&input) {
            proptest::prop_assert_eq!(Endpoint::parse(&e.to_string()), Ok(e.clone()));
            let sourced = e.tcp().is_some_and(|t| t.source.is_some());
            proptest::prop_assert_eq!(e.check_bind().is_ok(), !sourced);
        }
    }
}

#[test]
fn errors_display_on_one_line() {
    let errors = [
        EndpointError::MissingScheme,
        EndpointError::UnknownTransport("TCP".to_owned()),
        EndpointError::MissingPort,
        EndpointError::BadPort("x".to_owned()),
        EndpointError::EmptyHost,
        EndpointError::BadHost("a b".to_owned()),
        EndpointError::BadIpv4("1.2".to_owned()),
        EndpointError::BadIpv6("x".to_owned()),
        EndpointError::UnclosedBracket,
        EndpointError::UnbracketedIpv6("::1".to_owned()),
        EndpointError::UnsupportedSourceAddress,
        EndpointError::EmptyPath,
        EndpointError::EmptyAbstractName,
        EndpointError::EmptyName,
        EndpointError::WildcardHostOnConnect,
        EndpointError::WildcardPortOnConnect,
        EndpointError::WildcardPathOnConnect,
    ];
    for e in errors {
        let text = e.to_string();
        assert!(!text.is_empty() && !text.contains('\n'), "{e:?}: {text}");
    }
    assert_eq!(
        EndpointError::BadPort("65536".to_owned()).to_string(),
        "invalid port \"65536\" (expected 0..=65535 or *)"
    );
}

#[test]
fn a_missing_or_unknown_transport_lists_every_transport() {
    assert_eq!(
        EndpointError::UnknownTransport("epgm".into()).to_string(),
        "unknown transport \"epgm\" (expected tcp, ipc, inproc, udp, ws or wss, in lowercase)"
    );
    assert_eq!(
        EndpointError::MissingScheme.to_string(),
        "endpoint has no transport (expected tcp://, ipc://, inproc://, udp://, ws:// or wss://)"
    );
    // Each transport listed is one the parser knows.
    for transport in ["tcp", "ipc", "inproc", "udp", "ws", "wss"] {
        let e = Endpoint::parse(&format!("{transport}://")).err();
        assert!(
            !matches!(e, Some(EndpointError::UnknownTransport(_))),
            "{transport}: {e:?}"
        );
    }
}
