//! Property tests: round-trips, robustness against arbitrary bytes, and chunking invariance.

use proptest::collection::vec;
use proptest::prelude::*;
use zmtp_proto::codec::{
    emit_property, Command, FrameFlags, FrameHeader, Greeting, Mechanism, Metadata, Status, Version,
};
use zmtp_proto::{Buffered, Config, Connection, Instant, OwnedItem, SocketType};
use zmtp_testkit::pair::describe;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..=max)
}

fn props() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    vec((vec(any::<u8>(), 1..=255), bytes(300)), 0..5)
}

fn encode_props(props: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in props {
        let mut buf = vec![0u8; 1 + n.len() + 4 + v.len()];
        let len = emit_property(n, v, &mut buf).unwrap();
        out.extend_from_slice(&buf[..len]);
    }
    out
}

/// Owned description of a command, to generate and compare.
#[derive(Debug, Clone)]
enum Cmd {
    Ready(Vec<u8>),
    Error(Vec<u8>),
    Ping(u16, Vec<u8>),
    Pong(Vec<u8>),
    Subscribe(Vec<u8>),
    Cancel(Vec<u8>),
    Join(Vec<u8>),
    Leave(Vec<u8>),
    Unknown(Vec<u8>, Vec<u8>),
}

impl Cmd {
    fn as_command(&self) -> Command<'_> {
        match self {
            Cmd::Ready(m) => Command::Ready(Metadata::parse(m).unwrap()),
            Cmd::Error(r) => Command::Error(r),
            Cmd::Ping(ttl, c) => Command::Ping {
                ttl: *ttl,
                context: c,
            },
            Cmd::Pong(c) => Command::Pong { context: c },
            Cmd::Subscribe(t) => Command::Subscribe(t),
            Cmd::Cancel(t) => Command::Cancel(t),
            Cmd::Join(t) => Command::Join(t),
            Cmd::Leave(t) => Command::Leave(t),
            Cmd::Unknown(n, d) => Command::Unknown { name: n, data: d },
        }
    }
}

fn command() -> impl Strategy<Value = Cmd> {
    let known: &[&[u8]] = &zmtp_testkit::wire::KNOWN_COMMANDS;
    prop_oneof![
        props().prop_map(|p| Cmd::Ready(encode_props(&p))),
        bytes(255).prop_map(Cmd::Error),
        (any::<u16>(), bytes(16)).prop_map(|(t, c)| Cmd::Ping(t, c)),
        bytes(16).prop_map(Cmd::Pong),
        bytes(300).prop_map(Cmd::Subscribe),
        bytes(300).prop_map(Cmd::Cancel),
        bytes(255).prop_map(Cmd::Join),
        bytes(255).prop_map(Cmd::Leave),
        ("[A-Za-z]{1,20}", bytes(64))
            .prop_filter("not a known name", move |(n, _)| !known
                .contains(&n.as_bytes()))
            .prop_map(|(n, d)| Cmd::Unknown(n.into_bytes(), d)),
    ]
}

proptest! {
    #[test]
    fn frame_header_round_trips(more: bool, command: bool, size in prop_oneof![0u64..300, any::<u32>().prop_map(u64::from), 0u64..(1 << 60)]) {
        let h = FrameHeader { flags: FrameFlags { more: more && !command, command }, size };
        let mut out = [0u8; 9];
        let n = h.emit(&mut out).unwrap();
        prop_assert_eq!(FrameHeader::parse(&out[..n], u64::MAX), Ok(Status::Complete((h, n))));
        // Every strict prefix is merely partial.
        for cut in 0..n {
            prop_assert_eq!(FrameHeader::parse(&out[..cut], u64::MAX), Ok(Status::Partial));
        }
    }

    #[test]
    fn command_round_trips(cmd in command()) {
        let c = cmd.as_command();
        let mut out = vec![0u8; c.frame_len()];
        prop_assert_eq!(c.emit_frame(&mut out), Ok(out.len()));
        let (h, hl) = FrameHeader::parse(&out, u64::MAX).unwrap().complete().unwrap();
        prop_assert!(h.flags.command && !h.flags.more);
        prop_assert_eq!(hl + h.size as usize, out.len());
        prop_assert_eq!(Command::parse(&out[hl..]), Ok(c));
    }

    #[test]
    fn metadata_round_trips(p in props()) {
        let enc = encode_props(&p);
        let meta = Metadata::parse(&enc).unwrap();
        let back: Vec<(Vec<u8>, Vec<u8>)> =
            meta.iter().map(|p| (p.name.to_vec(), p.value.to_vec())).collect();
        prop_assert_eq!(back, p);
    }

    #[test]
    fn greeting_round_trips(major in 3u8.., minor: u8, mech: [u8; 20], as_server: bool) {
        let g = Greeting { version: Version { major, minor }, mechanism: Mechanism(mech), as_server };
        let mut out = [0u8; 64];
        prop_assert_eq!(g.emit(&mut out), Ok(64));
        prop_assert_eq!(Greeting::parse(&out), Ok(Status::Complete(g)));
        prop_assert_eq!(Greeting::parse_signature(&out[..11]), Ok(Status::Complete(major)));
    }

    #[test]
    fn parsers_never_panic_or_overclaim(input in bytes(600), limit: u64) {
        if let Ok(Status::Complete((_, n))) = FrameHeader::parse(&input, limit) {
            prop_assert!(n <= input.len());
        }
        let _ = Command::parse(&input);
        if let Ok(m) = Metadata::parse(&input) {
            prop_assert!(m.iter().count() <= input.len());
        }
        let _ = Greeting::parse(&input);
    }

    #[test]
    fn connection_survives_arbitrary_bytes(
        depth in 0u8..3,
        ty in 0usize..11,
        garbage in bytes(2000),
    ) {
        let ty = SocketType::ALL[ty];
        let mut conn = Connection::new(Config::new(ty), Instant::ZERO);
        let mut input = Vec::new();
        if depth >= 1 {
            input.extend_from_slice(&greeting_bytes(Version::V3_1));
        }
        if depth >= 2 {
            // A READY without Socket-Type, which every type accepts, then garbage traffic.
            input.extend_from_slice(b"\x04\x06\x05READY");
        }
        input.extend_from_slice(&garbage);
        let mut at = 0;
        loop {
            let remaining = input.len() - at;
            match conn.handle_input(Instant::ZERO, &mut input[at..]) {
                Ok(i) => {
                    prop_assert!(i.consumed <= remaining);
                    prop_assert!(i.payload.end <= i.consumed || i.item.is_none());
                    if i.consumed == 0 {
                        prop_assert!(i.needed > remaining);
                        break;
                    }
                    at += i.consumed;
                }
                Err(e) => {
                    // Sticky.
                    let mut more = [0u8; 3];
                    prop_assert_eq!(conn.handle_input(Instant::ZERO, &mut more), Err(e));
                    break;
                }
            }
        }
        let mut out = [0u8; 2048];
        prop_assert!(conn.poll_transmit(&mut out).is_ok());
    }

    #[test]
    fn chunking_does_not_change_events(
        v30: bool,
        frames in vec(prop_oneof![
            (bytes(300), any::<bool>()).prop_map(|(b, more)| (false, b, more)),
            command().prop_filter("traffic commands", |c| !matches!(c, Cmd::Error(_))).prop_map(|c| {
                let c = c.as_command();
                let mut out = vec![0u8; c.frame_len()];
                c.emit_frame(&mut out).unwrap();
                (true, out, false)
            }),
        ], 0..30),
        cuts in vec(1usize..200, 1..50),
    ) {
        let version = if v30 { Version::V3_0 } else { Version::V3_1 };
        let mut stream = greeting_bytes(version).to_vec();
        stream.extend_from_slice(b"\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB");
        for (is_cmd, body, more) in &frames {
            if *is_cmd {
                stream.extend_from_slice(body);
            } else {
                let mut h = [0u8; 9];
                let n = FrameHeader::data(body.len(), *more).emit(&mut h).unwrap();
                stream.extend_from_slice(&h[..n]);
                stream.extend_from_slice(body);
            }
        }
        let whole = run_chunked(&stream, &[stream.len()]);
        let chunked = run_chunked(&stream, &cuts);
        prop_assert_eq!(&whole, &chunked);
        // The owning layer yields the same items, fed in the same chunks.
        let mut b = Buffered::new(Config::new(SocketType::Pub), Instant::ZERO);
        let mut owned = Vec::new();
        let mut at = 0;
        let mut cut = cuts.iter().cycle();
        while at < stream.len() {
            let end = (at + cut.next().unwrap()).min(stream.len());
            b.receive(&stream[at..end]);
            at = end;
            while let Some(item) = b.poll_item(Instant::ZERO).unwrap() {
                owned.push(describe_owned(&item));
            }
        }
        let items: Vec<_> = whole.iter().filter(|s| !s.0.starts_with("event")).cloned().collect();
        prop_assert_eq!(owned, items);
    }
}

fn greeting_bytes(version: Version) -> [u8; 64] {
    let mut g = [0u8; 64];
    Greeting {
        version,
        mechanism: Mechanism::NULL,
        as_server: false,
    }
    .emit(&mut g)
    .unwrap();
    g
}

fn describe_owned(item: &OwnedItem) -> (String, Vec<u8>) {
    let (kind, b) = match item {
        OwnedItem::Ready(b) => ("ready", b),
        OwnedItem::Frame { body, more: true } => ("frame+", body),
        OwnedItem::Frame { body, more: false } => ("frame", body),
        OwnedItem::Subscribe(b) => ("sub", b),
        OwnedItem::Cancel(b) => ("cancel", b),
        OwnedItem::Join(b) => ("join", b),
        OwnedItem::Leave(b) => ("leave", b),
    };
    (kind.to_string(), b.to_vec())
}

/// Feed `stream` to a PUB connection in chunks of the given sizes (cycled), accumulating
/// unconsumed bytes as a driver would; returns items and events in order.
fn run_chunked(stream: &[u8], cuts: &[usize]) -> Vec<(String, Vec<u8>)> {
    let mut conn = Connection::new(Config::new(SocketType::Pub), Instant::ZERO);
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut cut = cuts.iter().cycle();
    while at < stream.len() {
        let end = (at + cut.next().unwrap()).min(stream.len());
        buf.extend_from_slice(&stream[at..end]);
        at = end;
        loop {
            let input = conn.handle_input(Instant::ZERO, &mut buf).unwrap();
            if let Some(item) = &input.item {
                out.push(describe(item));
            }
            let consumed = input.consumed;
            if consumed == 0 {
                break;
            }
            buf.drain(..consumed);
            while let Some(e) = conn.poll_event() {
                out.push((format!("event {e:?}"), Vec::new()));
            }
        }
    }
    assert!(buf.is_empty());
    out
}
