//! The udp:// building blocks: RADIO/DISH datagrams, DGRAM address frames, udp endpoints
//! and which socket types may bind or connect them, with libzmq 4.3.5's limits.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4};

use proptest::collection::vec;
use proptest::prelude::*;
use zmtp_proto::codec::InsufficientSize;
use zmtp_proto::socket::endpoint::{Endpoint, EndpointError, Host, UdpEndpoint};
use zmtp_proto::socket::{Command, Options, Socket};
use zmtp_proto::udp::*;
use zmtp_proto::SocketType;

/// Group `g1`, body `hello`, as captured from libzmq.
const CAPTURE: &[u8] = b"\x02\x67\x31\x68\x65\x6c\x6c\x6f";

fn emit(group: &[u8], body: &[u8]) -> Result<Vec<u8>, DatagramEmitError> {
    let d = RadioDatagram { group, body };
    let mut out = vec![0u8; d.datagram_len()];
    let n = d.emit(&mut out)?;
    assert_eq!(n, out.len());
    Ok(out)
}

// ----- RADIO/DISH datagrams --------------------------------------------------------------

#[test]
fn the_capture_both_ways() {
    assert_eq!(
        RadioDatagram::parse(CAPTURE),
        Ok(RadioDatagram {
            group: b"g1",
            body: b"hello"
        })
    );
    assert_eq!(emit(b"g1", b"hello").unwrap(), CAPTURE);
}

#[test]
fn empty_bodies_and_groups() {
    assert_eq!(emit(b"g1", b"").unwrap(), b"\x02g1");
    assert_eq!(
        RadioDatagram::parse(b"\x02g1"),
        Ok(RadioDatagram {
            group: b"g1",
            body: b""
        })
    );
    assert_eq!(emit(b"", b"x").unwrap(), b"\x00x");
    assert_eq!(
        RadioDatagram::parse(b"\x00"),
        Ok(RadioDatagram {
            group: b"",
            body: b""
        })
    );
}

#[test]
fn groups_up_to_127_bytes_are_sent() {
    let g127 = [b'g'; 127];
    let d = emit(&g127, b"b").unwrap();
    assert_eq!((d[0], d.len()), (127, 129));
    assert_eq!(RadioDatagram::parse(&d).unwrap().group, &g127[..]);

    let g128 = [b'g'; 128];
    let too_long = RadioDatagram {
        group: &g128,
        body: b"b",
    };
    let err = Err(DatagramEmitError::GroupTooLongForUdp { len: 128 });
    let mut out = [0u8; 512];
    assert_eq!(too_long.check(), err.map(|_: usize| ()));
    assert_eq!(too_long.emit(&mut out), err);
    assert_eq!(too_long.emit_header(&mut out), err);
    // The libzmq limit over tcp is 255; it is not ours over udp.
    assert_eq!(
        RadioDatagram {
            group: &[0; 255],
            body: b""
        }
        .check(),
        Err(DatagramEmitError::GroupTooLongForUdp { len: 255 })
    );
}

#[test]
fn datagrams_up_to_8192_bytes_are_sent() {
    assert_eq!(MAX_DATAGRAM_LEN, 8192);
    assert_eq!(RADIO_BODY_MAX_LEN, 8191);
    // Empty group: 1 + 8191.
    let body = vec![7u8; RADIO_BODY_MAX_LEN];
    let d = emit(b"", &body).unwrap();
    assert_eq!(d.len(), 8192);
    assert_eq!(RadioDatagram::parse(&d).unwrap().body, &body[..]);
    // Longest group: 1 + 127 + 8064.
    let g = [b'g'; 127];
    let body = vec![7u8; 8192 - 128];
    assert_eq!(emit(&g, &body).unwrap().len(), 8192);

    let body = vec![7u8; 8192 - 127];
    let over = RadioDatagram {
        group: &g,
        body: &body,
    };
    let err = Err(DatagramEmitError::DatagramTooLong { len: 8193 });
    let mut out = vec![0u8; 10_000];
    assert_eq!(over.datagram_len(), 8193);
    assert_eq!(over.emit(&mut out), err);
    // The header alone is short, but the datagram it starts is not.
    assert_eq!(over.emit_header(&mut out), err);
    let body = vec![7u8; 8192];
    let over = RadioDatagram {
        group: b"",
        body: &body,
    };
    assert_eq!(
        over.emit(&mut out),
        Err(DatagramEmitError::DatagramTooLong { len: 8193 })
    );
}

#[test]
fn a_short_buffer_is_insufficient_size() {
    let d = RadioDatagram {
        group: b"g1",
        body: b"hello",
    };
    let mut out = [0u8; 7];
    assert_eq!(
        d.emit(&mut out),
        Err(DatagramEmitError::InsufficientSize(InsufficientSize {
            required: 8
        }))
    );
    let mut header = [0u8; 2];
    assert_eq!(
        d.emit_header(&mut header),
        Err(DatagramEmitError::InsufficientSize(InsufficientSize {
            required: 3
        }))
    );
}

#[test]
fn header_then_body_is_the_datagram() {
    let d = RadioDatagram {
        group: b"g1",
        body: b"hello",
    };
    let mut header = [0u8; 128];
    let n = d.emit_header(&mut header).unwrap();
    assert_eq!(n, d.header_len());
    assert_eq!([&header[..n], d.body].concat(), CAPTURE);
}

#[test]
fn lying_group_lengths_are_errors() {
    assert_eq!(RadioDatagram::parse(b""), Err(DatagramError::Empty));
    for (input, group_len) in [
        (&b"\x01"[..], 1u8),
        (b"\x03g1", 3),
        (b"\x08g1hello", 8),
        (b"\x7f", 127),
        (b"\xffabc", 255),
    ] {
        assert_eq!(
            RadioDatagram::parse(input),
            Err(DatagramError::GroupPastEnd {
                group_len,
                datagram_len: input.len()
            }),
            "{input:02x?}"
        );
    }
    // A group that takes the whole rest is fine: an empty body.
    assert_eq!(RadioDatagram::parse(b"\x07g1hello").unwrap().body, b"");
}

#[test]
fn group_lengths_of_128_to_255_are_read_as_unsigned() {
    // A libzmq DISH would abort on these; ours reads them as libzmq's sender meant them.
    for len in [128usize, 200, 255] {
        let mut d = vec![len as u8];
        d.extend(std::iter::repeat_n(b'g', len));
        d.extend_from_slice(b"body");
        let parsed = RadioDatagram::parse(&d).unwrap();
        assert_eq!((parsed.group.len(), parsed.body), (len, &b"body"[..]));
    }
}

#[test]
fn datagrams_longer_than_libzmq_takes_still_parse() {
    let mut d = vec![0u8; 9000];
    d[0] = 2;
    let parsed = RadioDatagram::parse(&d).unwrap();
    assert_eq!(parsed.body.len(), 9000 - 3);
}

#[test]
fn errors_display_on_one_line() {
    let texts = [
        DatagramError::Empty.to_string(),
        DatagramError::GroupPastEnd {
            group_len: 9,
            datagram_len: 3,
        }
        .to_string(),
        DatagramEmitError::GroupTooLongForUdp { len: 128 }.to_string(),
        DatagramEmitError::DatagramTooLong { len: 8193 }.to_string(),
        DatagramEmitError::InsufficientSize(InsufficientSize { required: 3 }).to_string(),
        DgramAddressError::MissingPort.to_string(),
        DgramAddressError::BadIpv4.to_string(),
        DgramAddressError::BadPort.to_string(),
    ];
    for t in texts {
        assert!(!t.is_empty() && !t.contains('\n'), "{t}");
    }
}

// ----- DGRAM -----------------------------------------------------------------------------

fn v4(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), port)
}

#[test]
fn dgram_address_frames_with_and_without_the_nul() {
    let mut out = [0u8; DGRAM_ADDRESS_MAX_LEN];
    for (addr, text) in [
        (v4(192, 0, 2, 1, 5555), &b"192.0.2.1:5555\0"[..]),
        (v4(127, 0, 0, 1, 1), b"127.0.0.1:1\0"),
        (v4(255, 255, 255, 255, 65535), b"255.255.255.255:65535\0"),
        (v4(0, 0, 0, 0, 80), b"0.0.0.0:80\0"),
    ] {
        let n = emit_dgram_address(addr, &mut out).unwrap();
        assert_eq!(&out[..n], text);
        assert_eq!(parse_dgram_address(text), Ok(addr));
        assert_eq!(parse_dgram_address(&text[..text.len() - 1]), Ok(addr));
    }
    assert_eq!(DGRAM_ADDRESS_MAX_LEN, b"255.255.255.255:65535\0".len());
    // Leading zeros in the port are what atoi reads too.
    assert_eq!(
        parse_dgram_address(b"10.0.0.1:0080"),
        Ok(v4(10, 0, 0, 1, 80))
    );
}

#[test]
fn dgram_address_into_a_short_buffer() {
    let mut out = [0u8; 21];
    assert_eq!(
        emit_dgram_address(v4(255, 255, 255, 255, 65535), &mut out),
        Err(InsufficientSize { required: 22 })
    );
    let mut out = [0u8; 11];
    assert_eq!(emit_dgram_address(v4(1, 2, 3, 4, 5), &mut out), Ok(10));
    assert_eq!(&out[..10], b"1.2.3.4:5\0");
}

#[test]
fn bad_dgram_addresses_name_the_mistake() {
    use DgramAddressError as E;
    for (input, err) in [
        (&b""[..], E::MissingPort),
        (b"\0", E::MissingPort),
        (b"1.2.3.4", E::MissingPort),
        (b"1.2.3.4\0", E::MissingPort),
        (b":5", E::BadIpv4),
        (b"localhost:5", E::BadIpv4),
        (b"[::1]:5", E::BadIpv4),
        (b"::1:5", E::BadIpv4),
        // inet_addr would take these; we refuse rather than guess.
        (b"127.1:5", E::BadIpv4),
        (b"01.2.3.4:5", E::BadIpv4),
        (b"0x7f.0.0.1:5", E::BadIpv4),
        (b" 1.2.3.4:5", E::BadIpv4),
        (b"1.2.3.4\0:5", E::BadIpv4),
        (b"\xff.2.3.4:5", E::BadIpv4),
        (b"1.2.3.4:", E::BadPort),
        (b"1.2.3.4:\0", E::BadPort),
        (b"1.2.3.4:0", E::BadPort),
        (b"1.2.3.4:65536", E::BadPort),
        (b"1.2.3.4:+5", E::BadPort),
        (b"1.2.3.4:5 ", E::BadPort),
        (b"1.2.3.4:5\0\0", E::BadPort),
        (b"1.2.3.4:99999999999999999999", E::BadPort),
    ] {
        assert_eq!(parse_dgram_address(input), Err(err), "{input:02x?}");
    }
}

#[test]
fn dgram_bodies_up_to_8192_bytes() {
    assert_eq!(check_dgram_body(&[]), Ok(()));
    assert_eq!(check_dgram_body(&[0; 8192]), Ok(()));
    assert_eq!(
        check_dgram_body(&[0; 8193]),
        Err(DatagramEmitError::DatagramTooLong { len: 8193 })
    );
}

// ----- who may bind and connect ----------------------------------------------------------

#[test]
fn radio_connects_dish_and_dgram_bind_nothing_else_uses_udp() {
    for &ty in SocketType::ALL {
        let bind = matches!(ty, SocketType::Dish | SocketType::Dgram);
        let connect = ty == SocketType::Radio;
        assert_eq!(may_bind_udp(ty), bind, "{ty:?}");
        assert_eq!(may_connect_udp(ty), connect, "{ty:?}");

        let group = Endpoint::parse("udp://239.0.0.10:5923").unwrap();
        let expect = |ok: bool, bind: bool| {
            if ok {
                Ok(())
            } else {
                Err(EndpointError::IncompatibleTransport {
                    transport: "udp",
                    socket_type: ty,
                    bind,
                })
            }
        };
        assert_eq!(group.check_bind_for(ty), expect(bind, true), "{ty:?}");
        assert_eq!(
            group.check_connect_for(ty),
            expect(connect, false),
            "{ty:?}"
        );

        // Other transports: every type, both ways.
        for other in ["tcp://127.0.0.1:5555", "ipc://@x", "inproc://x"] {
            let e = Endpoint::parse(other).unwrap();
            assert_eq!(e.check_bind_for(ty), Ok(()), "{ty:?} {other}");
            assert_eq!(e.check_connect_for(ty), Ok(()), "{ty:?} {other}");
        }
    }
}

#[test]
fn form_errors_come_before_socket_type_errors() {
    let any = Endpoint::parse("udp://*:5555").unwrap();
    assert_eq!(
        any.check_connect_for(SocketType::Radio),
        Err(EndpointError::WildcardHostOnConnect)
    );
    assert_eq!(any.check_bind_for(SocketType::Dish), Ok(()));
    assert_eq!(any.check_bind_for(SocketType::Dgram), Ok(()));
}

#[test]
fn sockets_check_udp_endpoints_then_ask_for_a_udp_socket() {
    let mut dish = Socket::new(SocketType::Dish, Options::default(), 1).unwrap();
    let id = dish.bind("udp://*;239.0.0.9:5922").unwrap();
    match dish.poll_command() {
        Some(Command::OpenUdp {
            endpoint,
            addr,
            bind: true,
            multicast_loop: true,
            multicast_hops: 1,
        }) => {
            assert_eq!(endpoint, id);
            assert_eq!(Endpoint::Udp(addr).to_string(), "udp://*;239.0.0.9:5922");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        dish.connect("udp://239.0.0.9:5922"),
        Err(EndpointError::IncompatibleTransport { bind: false, .. })
    ));
    let opts = Options::default()
        .with_multicast_loop(false)
        .with_multicast_hops(4);
    let mut radio = Socket::new(SocketType::Radio, opts, 1).unwrap();
    radio.connect("udp://192.0.2.2;239.0.0.7:5920").unwrap();
    assert!(matches!(
        radio.poll_command(),
        Some(Command::OpenUdp {
            bind: false,
            multicast_loop: false,
            multicast_hops: 4,
            ..
        })
    ));
    assert!(matches!(
        radio.bind("udp://*:5555"),
        Err(EndpointError::IncompatibleTransport { bind: true, .. })
    ));
    let mut pubs = Socket::new(SocketType::Pub, Options::default(), 1).unwrap();
    assert_eq!(
        pubs.bind("udp://*:5555"),
        Err(EndpointError::IncompatibleTransport {
            transport: "udp",
            socket_type: SocketType::Pub,
            bind: true
        })
    );
    // Nothing was registered, and tcp is as it was.
    assert_eq!(pubs.poll_command(), None);
    assert!(pubs.bind("tcp://127.0.0.1:*").is_ok());
}

// ----- udp endpoints ---------------------------------------------------------------------

fn udp(interface: Option<Host>, host: Host, port: Option<u16>) -> Endpoint {
    Endpoint::Udp(UdpEndpoint {
        interface,
        host,
        port,
    })
}

fn ip4(a: u8, b: u8, c: u8, d: u8) -> Host {
    Host::Ipv4(Ipv4Addr::new(a, b, c, d))
}

fn ip6(s: &str) -> Host {
    Host::Ipv6(s.parse().unwrap())
}

fn name(n: &str) -> Host {
    Host::Name(n.to_owned())
}

#[test]
fn udp_endpoints_parse_and_round_trip() {
    // (input, value, canonical display, multicast group)
    let g = |a, b, c, d| Some(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
    let ff02 = Some(IpAddr::V6("ff02::1".parse::<Ipv6Addr>().unwrap()));
    let cases: &[(&str, Endpoint, &str, Option<IpAddr>)] = &[
        // The forms tested against libzmq.
        (
            "udp://192.0.2.2;239.0.0.7:5920",
            udp(Some(ip4(192, 0, 2, 2)), ip4(239, 0, 0, 7), Some(5920)),
            "udp://192.0.2.2;239.0.0.7:5920",
            g(239, 0, 0, 7),
        ),
        (
            "udp://*;239.0.0.9:5922",
            udp(Some(Host::Any), ip4(239, 0, 0, 9), Some(5922)),
            "udp://*;239.0.0.9:5922",
            g(239, 0, 0, 9),
        ),
        (
            "udp://239.0.0.10:5923",
            udp(None, ip4(239, 0, 0, 10), Some(5923)),
            "udp://239.0.0.10:5923",
            g(239, 0, 0, 10),
        ),
        // NIC names are kept for the driver.
        (
            "udp://eth0;239.0.0.7:5920",
            udp(Some(name("eth0")), ip4(239, 0, 0, 7), Some(5920)),
            "udp://eth0;239.0.0.7:5920",
            g(239, 0, 0, 7),
        ),
        (
            "udp://224.0.0.1:1",
            udp(None, ip4(224, 0, 0, 1), Some(1)),
            "udp://224.0.0.1:1",
            g(224, 0, 0, 1),
        ),
        // Unicast.
        (
            "udp://127.0.0.1:5555",
            udp(None, ip4(127, 0, 0, 1), Some(5555)),
            "udp://127.0.0.1:5555",
            None,
        ),
        (
            "udp://240.0.0.1:5555",
            udp(None, ip4(240, 0, 0, 1), Some(5555)),
            "udp://240.0.0.1:5555",
            None,
        ),
        (
            "udp://*:5555",
            udp(None, Host::Any, Some(5555)),
            "udp://*:5555",
            None,
        ),
        ("udp://*:*", udp(None, Host::Any, None), "udp://*:*", None),
        (
            "udp://localhost:05555",
            udp(None, name("localhost"), Some(5555)),
            "udp://localhost:5555",
            None,
        ),
        (
            "udp://[::1]:5555",
            udp(None, ip6("::1"), Some(5555)),
            "udp://[::1]:5555",
            None,
        ),
        // IPv6 multicast, the interface with or without brackets.
        (
            "udp://[ff02::1]:5555",
            udp(None, ip6("ff02::1"), Some(5555)),
            "udp://[ff02::1]:5555",
            ff02,
        ),
        (
            "udp://fe80::1;[ff02::1]:5555",
            udp(Some(ip6("fe80::1")), ip6("ff02::1"), Some(5555)),
            "udp://[fe80::1];[ff02::1]:5555",
            ff02,
        ),
        (
            "udp://[fe80::1];[ff02::1]:5555",
            udp(Some(ip6("fe80::1")), ip6("ff02::1"), Some(5555)),
            "udp://[fe80::1];[ff02::1]:5555",
            ff02,
        ),
        (
            "udp://*;[ff02::1]:5555",
            udp(Some(Host::Any), ip6("ff02::1"), Some(5555)),
            "udp://*;[ff02::1]:5555",
            ff02,
        ),
        (
            "udp://eth0;[ff02::1]:5555",
            udp(Some(name("eth0")), ip6("ff02::1"), Some(5555)),
            "udp://eth0;[ff02::1]:5555",
            ff02,
        ),
    ];
    for (input, expected, canonical, group) in cases {
        let parsed = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(&parsed, expected, "{input}");
        assert_eq!(parsed.transport(), "udp");
        let shown = parsed.to_string();
        assert_eq!(&shown, canonical, "{input}");
        assert_eq!(Endpoint::parse(&shown).as_ref(), Ok(expected), "{input}");
        assert_eq!(parsed.check_bind(), Ok(()), "{input}");
        let Endpoint::Udp(u) = &parsed else {
            unreachable!()
        };
        assert_eq!(u.multicast_group(), *group, "{input}");
    }
}

#[test]
fn invalid_udp_endpoints_name_the_mistake() {
    use EndpointError as E;
    let s = |v: &str| v.to_owned();
    let cases: &[(&str, EndpointError)] = &[
        // An interface only before a multicast literal (libzmq: EINVAL).
        (
            "udp://192.0.2.2;127.0.0.1:5555",
            E::InterfaceNeedsMulticast(s("127.0.0.1")),
        ),
        ("udp://*;*:5555", E::InterfaceNeedsMulticast(s("*"))),
        (
            "udp://eth0;localhost:5555",
            E::InterfaceNeedsMulticast(s("localhost")),
        ),
        ("udp://*;[::1]:5555", E::InterfaceNeedsMulticast(s("[::1]"))),
        (
            "udp://239.0.0.2;239.0.0.1:5555",
            E::MulticastInterface(s("239.0.0.2")),
        ),
        (
            "udp://ff02::2;[ff02::1]:5555",
            E::MulticastInterface(s("[ff02::2]")),
        ),
        ("udp://192.0.2.2;[ff02::1]:5555", E::InterfaceFamilyMismatch),
        ("udp://[::1];239.0.0.1:5555", E::InterfaceFamilyMismatch),
        // Malformed interfaces.
        (";239.0.0.1:5555", E::MissingScheme),
        ("udp://;239.0.0.1:5555", E::EmptyInterface),
        (
            "udp://192.0.2.2:1;239.0.0.1:5555",
            E::BadInterface(s("192.0.2.2:1")),
        ),
        ("udp://a;b;239.0.0.1:5555", E::BadInterface(s("a;b"))),
        ("udp://a b;239.0.0.1:5555", E::BadInterface(s("a b"))),
        ("udp://eth/0;239.0.0.1:5555", E::BadInterface(s("eth/0"))),
        (
            "udp://fe80::1%eth0;[ff02::1]:5",
            E::BadInterface(s("fe80::1%eth0")),
        ),
        ("udp://1.2.3;239.0.0.1:5555", E::BadIpv4(s("1.2.3"))),
        ("udp://[fe80::1;239.0.0.1:5555", E::UnclosedBracket),
        ("udp://[zz];239.0.0.1:5555", E::BadIpv6(s("zz"))),
        // The host and port as for tcp.
        ("udp://239.0.0.1", E::MissingPort),
        ("udp://239.0.0.1:", E::MissingPort),
        ("udp://*;239.0.0.1", E::MissingPort),
        ("udp://239.0.0.1:65536", E::BadPort(s("65536"))),
        ("udp://239.0.0.1:x", E::BadPort(s("x"))),
        ("udp://:5555", E::EmptyHost),
        ("udp://*;:5555", E::EmptyHost),
        ("udp://1.2:5555", E::BadIpv4(s("1.2"))),
        ("udp://[::1:5555", E::UnclosedBracket),
        ("udp://[zz]:5555", E::BadIpv6(s("zz"))),
        ("udp://::1:5555", E::UnbracketedIpv6(s("::1:5555"))),
        ("udp://a b:5555", E::BadHost(s("a b"))),
        ("UDP://127.0.0.1:5555", E::UnknownTransport(s("UDP"))),
    ];
    for (input, expected) in cases {
        assert_eq!(Endpoint::parse(input).as_ref(), Err(expected), "{input}");
    }
}

#[test]
fn udp_bind_and_connect_checks() {
    use EndpointError as E;
    type Check = Result<(), E>;
    // (input, check_bind, check_connect)
    let cases: &[(&str, Check, Check)] = &[
        ("udp://239.0.0.10:5923", Ok(()), Ok(())),
        ("udp://*;239.0.0.9:5922", Ok(()), Ok(())),
        ("udp://127.0.0.1:5555", Ok(()), Ok(())),
        ("udp://localhost:5555", Ok(()), Ok(())),
        ("udp://*:5555", Ok(()), Err(E::WildcardHostOnConnect)),
        ("udp://127.0.0.1:*", Ok(()), Err(E::WildcardPortOnConnect)),
        ("udp://127.0.0.1:0", Ok(()), Err(E::WildcardPortOnConnect)),
        ("udp://*;239.0.0.9:0", Ok(()), Err(E::WildcardPortOnConnect)),
    ];
    for (input, bind, connect) in cases {
        let e = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(&e.check_bind(), bind, "{input}");
        assert_eq!(&e.check_connect(), connect, "{input}");
    }
}

#[test]
fn hand_built_udp_endpoints_are_checked_like_parsed_ones() {
    use EndpointError as E;
    let s = |v: &str| v.to_owned();
    let cases: &[(Endpoint, E)] = &[
        (udp(None, name(""), Some(1)), E::EmptyHost),
        (udp(None, name("a b"), Some(1)), E::BadHost(s("a b"))),
        (
            udp(Some(name("")), ip4(239, 0, 0, 1), Some(1)),
            E::EmptyInterface,
        ),
        (
            udp(Some(name("a;b")), ip4(239, 0, 0, 1), Some(1)),
            E::BadInterface(s("a;b")),
        ),
        (
            udp(Some(Host::Any), ip4(10, 0, 0, 1), Some(1)),
            E::InterfaceNeedsMulticast(s("10.0.0.1")),
        ),
        (
            udp(Some(ip4(239, 1, 1, 1)), ip4(239, 0, 0, 1), Some(1)),
            E::MulticastInterface(s("239.1.1.1")),
        ),
        (
            udp(Some(ip6("::1")), ip4(239, 0, 0, 1), Some(1)),
            E::InterfaceFamilyMismatch,
        ),
    ];
    for (e, expected) in cases {
        assert_eq!(e.check_bind().as_ref(), Err(expected), "{e:?}");
        assert_eq!(e.check_connect().as_ref(), Err(expected), "{e:?}");
    }
}

#[test]
fn endpoint_errors_display_on_one_line() {
    let errors = [
        EndpointError::EmptyInterface,
        EndpointError::BadInterface("a b".to_owned()),
        EndpointError::MulticastInterface("239.0.0.1".to_owned()),
        EndpointError::InterfaceNeedsMulticast("10.0.0.1".to_owned()),
        EndpointError::InterfaceFamilyMismatch,
        EndpointError::IncompatibleTransport {
            transport: "udp",
            socket_type: SocketType::Pub,
            bind: true,
        },
        EndpointError::TransportUnavailable("udp"),
    ];
    for e in errors {
        let text = e.to_string();
        assert!(!text.is_empty() && !text.contains('\n'), "{e:?}: {text}");
    }
    assert_eq!(
        EndpointError::IncompatibleTransport {
            transport: "udp",
            socket_type: SocketType::Dish,
            bind: false,
        }
        .to_string(),
        "a DISH socket cannot connect over udp:// (udp: RADIO connects, DISH and DGRAM bind)"
    );
}

// ----- properties ------------------------------------------------------------------------

proptest! {
    /// Whatever we may send parses back to what was sent, and is at most 8192 bytes.
    #[test]
    fn emit_parse_round_trips(
        group in vec(any::<u8>(), 0..=UDP_GROUP_MAX_LEN),
        body in vec(any::<u8>(), 0..=600),
    ) {
        let d = RadioDatagram { group: &group, body: &body };
        let mut out = vec![0u8; d.datagram_len()];
        prop_assert_eq!(d.emit(&mut out), Ok(1 + group.len() + body.len()));
        prop_assert_eq!(RadioDatagram::parse(&out), Ok(d));
        let mut header = vec![0u8; d.header_len()];
        prop_assert_eq!(d.emit_header(&mut header), Ok(d.header_len()));
        prop_assert_eq!(&out[..d.header_len()], &header[..]);
    }

    /// The limits hold whatever the sizes: an emit succeeds exactly when the group has at
    /// most 127 bytes and the datagram at most 8192.
    #[test]
    fn emit_keeps_the_limits(group_len in 0usize..300, body_len in 0usize..9000) {
        let (group, body) = (vec![b'g'; group_len], vec![b'b'; body_len]);
        let d = RadioDatagram { group: &group, body: &body };
        let mut out = vec![0u8; 10_000];
        let fits = group_len <= 127 && 1 + group_len + body_len <= 8192;
        let emitted = d.emit(&mut out);
        prop_assert_eq!(emitted.is_ok(), fits);
        if let Ok(n) = emitted {
            prop_assert!(n <= MAX_DATAGRAM_LEN);
        }
    }

    /// Parsing arbitrary bytes never panics; what parses covers the datagram exactly, and
    /// emits back byte for byte when its group is short enough to send.
    #[test]
    fn parse_is_total(input in vec(any::<u8>(), 0..400)) {
        match RadioDatagram::parse(&input) {
            Ok(d) => {
                prop_assert_eq!(d.datagram_len(), input.len());
                prop_assert_eq!(usize::from(input[0]), d.group.len());
                if d.group.len() <= UDP_GROUP_MAX_LEN {
                    let mut out = vec![0u8; input.len()];
                    prop_assert_eq!(d.emit(&mut out), Ok(input.len()));
                    prop_assert_eq!(out, input);
                }
            }
            Err(DatagramError::Empty) => prop_assert!(input.is_empty()),
            Err(DatagramError::GroupPastEnd { group_len, datagram_len }) => {
                prop_assert_eq!(datagram_len, input.len());
                prop_assert!(usize::from(group_len) >= input.len());
            }
            Err(e) => prop_assert!(false, "unexpected {:?}", e),
        }
    }

    /// Every IPv4 address and port but 0 makes a frame that reads back, with or without
    /// its NUL.
    #[test]
    fn dgram_addresses_round_trip(ip in any::<u32>(), port in 1u16..) {
        let addr = SocketAddrV4::new(Ipv4Addr::from(ip), port);
        let mut out = [0u8; DGRAM_ADDRESS_MAX_LEN];
        let n = emit_dgram_address(addr, &mut out).unwrap();
        prop_assert_eq!(out[n - 1], 0);
        let text = format!("{}:{}", addr.ip(), addr.port());
        prop_assert_eq!(&out[..n - 1], text.as_bytes());
        prop_assert_eq!(parse_dgram_address(&out[..n]), Ok(addr));
        prop_assert_eq!(parse_dgram_address(&out[..n - 1]), Ok(addr));
    }

    /// Reading arbitrary address frames never panics, and what reads writes back the same.
    #[test]
    fn dgram_address_parse_is_total(
        input in prop_oneof![
            vec(any::<u8>(), 0..30),
            "[0-9.:\\x00a ]{0,24}".prop_map(String::into_bytes),
        ]
    ) {
        if let Ok(addr) = parse_dgram_address(&input) {
            let mut out = [0u8; DGRAM_ADDRESS_MAX_LEN];
            let n = emit_dgram_address(addr, &mut out).unwrap();
            prop_assert_eq!(parse_dgram_address(&out[..n]), Ok(addr));
        }
    }

    /// udp endpoint parsing never panics; what parses displays to a string that parses
    /// back to the same value, and passes the bind check.
    #[test]
    fn udp_parse_is_total_and_round_trips(
        input in "udp://[\\[\\]:*;a-f0-9.%/ ]{0,28}"
    ) {
        if let Ok(e) = Endpoint::parse(&input) {
            prop_assert_eq!(Endpoint::parse(&e.to_string()), Ok(e.clone()));
            prop_assert_eq!(e.check_bind(), Ok(()));
        }
    }

    /// The same over the forms that do parse: interfaces, groups and ports.
    #[test]
    fn udp_forms_round_trip(
        interface in prop_oneof![
            Just(String::new()),
            Just("*;".to_owned()),
            Just("eth0;".to_owned()),
            any::<[u8; 4]>().prop_map(|a| format!("{};", Ipv4Addr::from(a))),
        ],
        group in any::<[u8; 4]>(),
        port in any::<u16>(),
    ) {
        let input = format!("udp://{interface}{}:{port}", Ipv4Addr::from(group));
        if let Ok(e) = Endpoint::parse(&input) {
            prop_assert_eq!(e.to_string(), input);
            let Endpoint::Udp(u) = &e else { unreachable!() };
            prop_assert!(u.interface.is_none() || u.multicast_group().is_some());
        } else {
            // Only an interface before a unicast host, or a multicast interface, fails.
            prop_assert!(!interface.is_empty());
        }
    }
}
