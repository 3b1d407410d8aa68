//! The udp:// building blocks: RADIO/DISH datagrams, DGRAM address frames and udp
//! endpoints.

use zmtp_proto::socket::endpoint::Endpoint;
use zmtp_proto::udp::{
    check_dgram_body, emit_dgram_address, may_bind_udp, may_connect_udp, parse_dgram_address,
    DatagramEmitError, DatagramError, RadioDatagram, DGRAM_ADDRESS_MAX_LEN, MAX_DATAGRAM_LEN,
    UDP_GROUP_MAX_LEN,
};
use zmtp_proto::SocketType;

/// What the first byte of a [`datagram`] input selects (modulo 4); the rest is the input.
pub(super) mod mode {
    /// The rest is a received RADIO/DISH datagram.
    pub const PARSE: u8 = 0;
    /// The rest is a message to send: group length, u16 body length, bytes.
    pub const EMIT: u8 = 1;
    /// The rest is a DGRAM address frame.
    pub const ADDRESS: u8 = 2;
    /// The rest is what follows `udp://` in an endpoint.
    pub const ENDPOINT: u8 = 3;
}

/// The udp building blocks on arbitrary bytes. The first byte picks what the rest is:
///
/// - a received datagram: [`RadioDatagram::parse`] covers it exactly or names the right
///   error, and whatever we may send of it emits back byte for byte, whole or as header
///   and body;
/// - a message to send (a group length, a body length, then their bytes): the emit succeeds
///   exactly when the group has at most 127 bytes and the datagram at most 8192, and parses
///   back;
/// - a DGRAM address frame: what parses emits back (with its NUL) to the same address;
/// - an endpoint after `udp://`: what parses displays to a string that parses back to it,
///   passes the bind check, and the socket-type checks follow libzmq's table.
pub fn datagram(data: &[u8]) {
    run_datagram(data);
}

/// [`datagram`], saying whether the input was taken: parsed, or emitted. `None` for an
/// input too short to say anything.
pub(super) fn run_datagram(data: &[u8]) -> Option<bool> {
    let (&selector, rest) = data.split_first()?;
    match selector % 4 {
        mode::PARSE => Some(parse(rest)),
        mode::EMIT => emit(rest),
        mode::ADDRESS => Some(address(rest)),
        _ => Some(endpoint(rest)),
    }
}

/// What we may send of a parsed datagram emits back to the same bytes.
fn parse(input: &[u8]) -> bool {
    let parsed = RadioDatagram::parse(input);
    match parsed {
        Ok(d) => {
            assert!(d.datagram_len() == input.len(), "datagram length");
            assert!(
                input.first().map(|&b| usize::from(b)) == Some(d.group.len()),
                "group length"
            );
            let sendable = d.group.len() <= UDP_GROUP_MAX_LEN && input.len() <= MAX_DATAGRAM_LEN;
            let mut out = vec![0u8; input.len()];
            match d.emit(&mut out) {
                Ok(n) => {
                    assert!(sendable, "emitted past the limits");
                    assert!(n == input.len() && out == input, "re-emit");
                }
                Err(e) => assert!(!sendable, "a sendable datagram refused: {e:?}"),
            }
            if sendable {
                let mut header = vec![0u8; d.header_len()];
                assert!(
                    d.emit_header(&mut header) == Ok(d.header_len()),
                    "emit_header"
                );
                assert!(
                    input.get(..d.header_len()) == Some(&header[..]),
                    "header is the datagram's start"
                );
            }
        }
        Err(DatagramError::Empty) => assert!(input.is_empty(), "Empty for a non-empty input"),
        Err(DatagramError::GroupPastEnd {
            group_len,
            datagram_len,
        }) => {
            assert!(datagram_len == input.len(), "GroupPastEnd length");
            assert!(
                input.first() == Some(&group_len),
                "GroupPastEnd group length"
            );
            assert!(usize::from(group_len) >= input.len(), "the group fits");
        }
        Err(e) => panic!("unexpected error {e:?}"),
    }
    parsed.is_ok()
}

/// A message to send: `[group length][u16 body length][bytes]`. The group is the first
/// bytes (as many as there are), the body the rest repeated to its length (modulo 9000,
/// enough to cross the 8192 limit; zeros when nothing is left).
fn emit(input: &[u8]) -> Option<bool> {
    let [group_len, hi, lo, rest @ ..] = input else {
        return None;
    };
    let (group, tail) = rest.split_at(usize::from(*group_len).min(rest.len()));
    let body_len = usize::from(u16::from_be_bytes([*hi, *lo])) % 9000;
    let body: Vec<u8> = if tail.is_empty() {
        vec![0; body_len]
    } else {
        tail.iter().copied().cycle().take(body_len).collect()
    };
    let d = RadioDatagram { group, body: &body };
    let len = 1 + group.len() + body.len();
    assert!(d.datagram_len() == len, "datagram_len");
    let mut out = vec![0u8; len];
    let emitted = d.emit(&mut out);
    match emitted {
        Ok(n) => {
            assert!(group.len() <= UDP_GROUP_MAX_LEN, "a long group emitted");
            assert!(n == len && n <= MAX_DATAGRAM_LEN, "emitted length");
            assert!(RadioDatagram::parse(&out) == Ok(d), "emit/parse round trip");
            let mut short = vec![0u8; len - 1];
            assert!(
                d.emit(&mut short)
                    == Err(DatagramEmitError::InsufficientSize(
                        zmtp_proto::codec::InsufficientSize { required: len }
                    )),
                "emitted into a short buffer"
            );
        }
        Err(DatagramEmitError::GroupTooLongForUdp { len: g }) => {
            assert!(
                g == group.len() && g > UDP_GROUP_MAX_LEN,
                "GroupTooLongForUdp"
            );
        }
        Err(DatagramEmitError::DatagramTooLong { len: l }) => {
            assert!(
                l == len && l > MAX_DATAGRAM_LEN && group.len() <= UDP_GROUP_MAX_LEN,
                "DatagramTooLong"
            );
        }
        Err(e) => panic!("unexpected error {e:?}"),
    }
    assert!(
        d.emit_header(&mut out).is_ok() == emitted.is_ok(),
        "emit_header checks as emit does"
    );
    assert!(
        check_dgram_body(&body).is_ok() == (body.len() <= MAX_DATAGRAM_LEN),
        "check_dgram_body"
    );
    Some(emitted.is_ok())
}

/// A DGRAM address frame that parses emits back to the same address, as text with a NUL.
fn address(input: &[u8]) -> bool {
    let Ok(addr) = parse_dgram_address(input) else {
        return false;
    };
    assert!(addr.port() != 0, "port 0 accepted");
    let mut out = [0u8; DGRAM_ADDRESS_MAX_LEN];
    let n = emit_dgram_address(addr, &mut out);
    let frame = n.ok().and_then(|n| out.get(..n));
    assert!(frame.is_some(), "an address does not fit the frame");
    let frame = frame.unwrap_or_default();
    assert!(frame.last() == Some(&0), "no trailing NUL");
    let text = frame
        .get(..frame.len().saturating_sub(1))
        .unwrap_or_default();
    assert!(
        text == format!("{}:{}", addr.ip(), addr.port()).as_bytes(),
        "frame text"
    );
    assert!(parse_dgram_address(frame) == Ok(addr), "with the NUL");
    assert!(parse_dgram_address(text) == Ok(addr), "without the NUL");
    let canonical = input.strip_suffix(b"\0").unwrap_or(input);
    // Only leading zeros in the port can make the input differ from the canonical text.
    if canonical != text {
        let port_at = canonical.iter().rposition(|&b| b == b':');
        let digits = port_at.and_then(|at| canonical.get(at + 1..));
        assert!(
            digits.is_some_and(|d| d.first() == Some(&b'0')),
            "a non-canonical address parsed: {input:02x?}"
        );
    }
    true
}

/// `udp://` followed by the input: what parses round-trips through its display, and the
/// socket-type checks are libzmq's.
fn endpoint(input: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(input) else {
        return false;
    };
    let Ok(e) = Endpoint::parse(&format!("udp://{text}")) else {
        return false;
    };
    let Endpoint::Udp(udp) = &e else {
        panic!("udp:// parsed as {e:?}");
    };
    assert!(
        Endpoint::parse(&e.to_string()).as_ref() == Ok(&e),
        "display/parse round trip"
    );
    assert!(e.check_bind().is_ok(), "a parsed endpoint fails check_bind");
    assert!(
        udp.interface.is_none() || udp.multicast_group().is_some(),
        "an interface before a unicast host"
    );
    for &ty in SocketType::ALL {
        if e.check_bind_for(ty).is_ok() {
            assert!(may_bind_udp(ty), "{ty:?} binds udp");
        }
        let connect = e.check_connect_for(ty);
        if connect.is_ok() {
            assert!(may_connect_udp(ty), "{ty:?} connects over udp");
            assert!(
                e.check_connect().is_ok(),
                "check_connect_for without check_connect"
            );
        }
    }
    true
}

/// The seeds of [`datagram`]: the libzmq capture and the limits, DGRAM address frames and
/// the endpoint forms tested against libzmq.
pub(super) fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let with = |m: u8, bytes: &[u8]| [&[m][..], bytes].concat();
    let message = |group: &[u8], body_len: u16, body: &[u8]| {
        let len = u8::try_from(group.len()).unwrap_or(u8::MAX);
        let [hi, lo] = body_len.to_be_bytes();
        [&[mode::EMIT, len, hi, lo][..], group, body].concat()
    };
    let mut g128 = vec![0x80];
    g128.extend_from_slice(&[b'g'; 128]);
    g128.extend_from_slice(b"body");
    vec![
        ("radio_g1_hello", with(mode::PARSE, b"\x02g1hello")),
        ("radio_empty_body", with(mode::PARSE, b"\x02g1")),
        ("radio_group_128", with(mode::PARSE, &g128)),
        ("radio_lying_length", with(mode::PARSE, b"\x08g1hello")),
        ("emit_g1_hello", message(b"g1", 5, b"hello")),
        ("emit_group_127", message(&[b'g'; 127], 1, b"b")),
        ("emit_group_128", message(&[b'g'; 128], 1, b"b")),
        ("emit_8192", message(b"", 8191, b"x")),
        ("emit_8193", message(b"", 8192, b"x")),
        ("dgram_nul", with(mode::ADDRESS, b"192.0.2.1:5555\0")),
        ("dgram_no_nul", with(mode::ADDRESS, b"192.0.2.1:5555")),
        (
            "dgram_longest",
            with(mode::ADDRESS, b"255.255.255.255:65535\0"),
        ),
        ("dgram_shorthand", with(mode::ADDRESS, b"127.1:5")),
        (
            "udp_iface",
            with(mode::ENDPOINT, b"192.0.2.2;239.0.0.7:5920"),
        ),
        ("udp_any_iface", with(mode::ENDPOINT, b"*;239.0.0.9:5922")),
        ("udp_group", with(mode::ENDPOINT, b"239.0.0.10:5923")),
        ("udp_nic_ipv6", with(mode::ENDPOINT, b"eth0;[ff02::1]:5555")),
        (
            "udp_iface_unicast",
            with(mode::ENDPOINT, b"192.0.2.2;127.0.0.1:5555"),
        ),
    ]
}
