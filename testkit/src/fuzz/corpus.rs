//! The seed corpus of every target.

use zmtp_proto::codec::GREETING_LEN;
use zmtp_proto::codec::{emit_property, property_len, Command, Greeting, Mechanism, Version};
use zmtp_proto::{Config, Connection, SocketType};

use super::connection::{connection_configs, op};
use super::material::{LOCAL_ENTROPY, PEER_ENTROPY, SERVER_SECRET_Z85, SOCKET_TYPES, START};
use super::socket::act;
use super::stream;
#[cfg(doc)]
use super::{connection, socket, TARGETS};
use crate::pair::raw::record_handshake;
use crate::wire::{zws, DEALER_READY, LIBZMQ_GREETING, SUB_READY};

/// One seed input: the target it is for, a file name, the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The target (a name in [`TARGETS`]).
    pub target: &'static str,
    /// A file name for it in `fuzz/corpus/<target>/`.
    pub name: String,
    /// The input.
    pub data: Vec<u8>,
}

/// Append feed operations of [`connection`] carrying `bytes`.
fn feed_ops(seed: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(usize::from(op::FEED_MAX)) {
        seed.push(u8::try_from(chunk.len()).unwrap_or(0));
        seed.extend_from_slice(chunk);
    }
}

/// A [`connection`] input that replays what a real peer sends to the connection that
/// setup bytes `b0`, `b1` make: its handshake (verdicts answered 200), then traffic (a
/// message, a multipart message, PING, SUBSCRIBE), then sends and timers of ours.
fn record_connection(b0: u8, b1: u8) -> Option<Vec<u8>> {
    let (ours, theirs) = connection_configs(b0, b1)?;
    let mut local = Connection::with_entropy(ours, START, LOCAL_ENTROPY);
    let mut peer = Connection::with_entropy(theirs, START, PEER_ENTROPY);
    let mut seed = vec![b0, b1];
    for (bytes, verdict) in record_handshake(&mut local, &mut peer, START)? {
        feed_ops(&mut seed, &bytes);
        if verdict {
            seed.push(op::VERDICT);
        }
    }
    let mut traffic = Vec::new();
    let mut out = vec![0u8; 2048];
    for (body, more) in [(&b"hello"[..], false), (b"multi", true), (b"part", false)] {
        let n = peer.send_frame(body, more, &mut out).ok()?;
        traffic.extend_from_slice(out.get(..n)?);
    }
    let ping = Command::Ping {
        ttl: 10,
        context: b"ctx",
    };
    let n = peer.send_command(&ping, &mut out).ok()?;
    traffic.extend_from_slice(out.get(..n)?);
    let n = peer.send_subscribe(b"t", &mut out).ok()?;
    traffic.extend_from_slice(out.get(..n)?);
    feed_ops(&mut seed, &traffic);
    // Ours: a frame, a multipart message, then the clock to the next deadline, twice.
    seed.extend_from_slice(&[op::SEND + 2, op::SEND + 5, op::SEND + 4, 0xE6, 0xE6]);
    Some(seed)
}

/// A [`socket()`] input: the four setup bytes, then (action, parameter) pairs; a `RAW`
/// action's bytes follow its pair.
pub(super) fn socket_seed(ty: SocketType, b1: u8, b2: u8, b3: u8, actions: &[(u8, u8)]) -> Vec<u8> {
    let index = SOCKET_TYPES.iter().position(|&t| t == ty).unwrap_or(0);
    let mut out = vec![u8::try_from(index).unwrap_or(0), b1, b2, b3];
    for &(a, p) in actions {
        out.extend_from_slice(&[a, p]);
        if a & 15 == act::RAW {
            // Garbage after the handshake: a reserved flag.
            out.extend((0..p).map(|i| if i == 0 { 0x08 } else { i }));
        }
    }
    out
}

/// The seed inputs of every target. `tests/fuzz_bodies.rs` runs the bodies over them and
/// writes them to `fuzz/corpus/` when asked (see there).
pub fn seed_corpus() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut add = |target: &'static str, name: &str, data: Vec<u8>| {
        seeds.push(Seed {
            target,
            name: name.to_string(),
            data,
        });
    };

    // Greetings.
    add("greeting", "libzmq_null_31", LIBZMQ_GREETING.to_vec());
    for (name, version, mechanism, as_server) in [
        ("plain_server_30", Version::V3_0, Mechanism::PLAIN, true),
        ("curve_31", Version::V3_1, Mechanism::CURVE, false),
    ] {
        let mut g = vec![0u8; GREETING_LEN];
        let greeting = Greeting {
            version,
            mechanism,
            as_server,
        };
        if greeting.emit(&mut g).is_ok() {
            add("greeting", name, g);
        }
    }
    let mut zmtp20 = LIBZMQ_GREETING.to_vec();
    if let Some(major) = zmtp20.get_mut(10) {
        *major = 1;
    }
    add("greeting", "zmtp20", zmtp20);
    add(
        "greeting",
        "signature_only",
        LIBZMQ_GREETING.get(..11).unwrap_or_default().to_vec(),
    );

    // Command bodies (frames seen on the wire, without their 2-byte header).
    for (name, body) in [
        ("ready_dealer", DEALER_READY.get(2..).unwrap_or_default()),
        ("ready_sub", SUB_READY.get(2..).unwrap_or_default()),
        ("ping_ttl", b"\x04PING\x00\x19"),
        ("ping_context", b"\x04PING\x00\x0a0123456789abcdefghij"),
        ("pong", b"\x04PONG0123456789abcdef"),
        ("subscribe", b"\x09SUBSCRIBEA"),
        ("cancel", b"\x06CANCELA"),
        ("error", b"\x05ERROR\x03500"),
        ("error_libzmq_plain", b"\x5eRROR\x03400"),
        ("join", b"\x04JOINgroup"),
        ("leave", b"\x05LEAVEgroup"),
        ("unknown", b"\x05HELLOx"),
    ] {
        add("command", name, body.to_vec());
    }

    // Metadata blocks.
    add(
        "metadata",
        "dealer",
        DEALER_READY.get(8..).unwrap_or_default().to_vec(),
    );
    add(
        "metadata",
        "sub",
        SUB_READY.get(8..).unwrap_or_default().to_vec(),
    );
    let mut props = Config::new(SocketType::Router);
    if props.set_identity(b"me").is_ok() && props.add_property(b"X-Key", b"value").is_ok() {
        // What a ROUTER so configured sends in READY: its type, its identity (for the types
        // that send one), then its application properties.
        let ty = SocketType::Router;
        let mut w = Vec::new();
        let mut put = |name: &[u8], value: &[u8]| {
            let mut buf = vec![0u8; property_len(name, value)];
            if emit_property(name, value, &mut buf).is_ok() {
                w.extend_from_slice(&buf);
            }
        };
        put(b"Socket-Type", ty.name().as_bytes());
        if ty.sends_identity() {
            put(b"Identity", b"me");
        }
        w.extend_from_slice(props.properties().as_bytes());
        add("metadata", "router_props", w);
    }
    add("metadata", "empty", Vec::new());

    // Z85.
    add("z85", "hello_world", b"HelloWorld".to_vec());
    add(
        "z85",
        "client_public",
        b"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID".to_vec(),
    );
    add(
        "z85",
        "server_secret",
        SERVER_SECRET_Z85.as_bytes().to_vec(),
    );
    add(
        "z85",
        "binary",
        vec![0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B],
    );

    // Frame decoder: control bytes, fragment sizes, then a stream after the handshake.
    let mut long = vec![0x02, 0, 0, 0, 0, 0, 0, 0x01, 0x2C];
    long.extend_from_slice(&[0x61; 300]);
    let messages = [
        &b"\x00\x05hello"[..],
        b"\x01\x01a\x01\x00\x00\x01b",
        &long,
        b"\x04\x07\x04PING\x00\x19",
        b"\x04\x05\x04PONG",
    ]
    .concat();
    let commands = [
        &b"\x04\x0b\x09SUBSCRIBEA"[..],
        b"\x04\x08\x06CANCELA",
        b"\x00\x02\x01B",
        b"\x00\x02\x00B",
        b"\x04\x07\x05HELLOx",
        b"\x04\x06\x05READY",
        b"\x00\x01y",
    ]
    .concat();
    let mut decoder = |name: &str, control: &[u8], stream: &[u8]| {
        let mut data = control.to_vec();
        data.extend_from_slice(stream);
        add("frame_decoder", name, data);
    };
    decoder("pair_bytewise", &[0x00, 0x00, 0x00], &messages);
    decoder("pub_commands", &[0x08, 0x00, 0x02, 3, 5], &commands);
    decoder("max16", &[0x03, 0x00, 0x01, 4], &messages);
    decoder(
        "router_max_u16",
        &[0x27, 0x00, 0x03, 0x01, 0x00, 1, 9, 40],
        &messages,
    );
    decoder("shared_30", &[0x10, 0x07, 0x03, 3, 7, 1], &commands);
    decoder(
        "hostile",
        &[0x00, 0x00, 0x01, 200],
        b"\x00\x01z\x02\x40\x00\x00\x00\x00\x00\x00\x00",
    );

    ws_seeds(&mut add);

    // Connections: recorded handshakes (libzmq's bytes) and traffic.
    let pairs: [(&str, u8, u8); 9] = [
        ("null_dealer", 9 << 3, 0),
        ("null_auth_router", 1 | 10 << 3, 0),
        ("plain_client_req", 2 | 7 << 3, 0),
        ("plain_server_rep", 3 | 8 << 3, 0x08),
        ("curve_client_dealer", 4 | 9 << 3, 0),
        ("curve_server_router", 5 | 10 << 3, 0x02),
        ("null_identity_pair_heartbeat", 6, 0x02),
        ("null_sub_30", 2 << 3, 0x01),
        ("null_pub_maxsize", 1 << 3, 0x04),
    ];
    for (name, b0, b1) in pairs {
        if let Some(data) = record_connection(b0, b1) {
            add("connection", name, data);
        }
    }
    // A peer that only sends garbage after a valid greeting.
    let mut garbage = vec![0, 0];
    feed_ops(&mut garbage, &LIBZMQ_GREETING);
    feed_ops(&mut garbage, b"\x0c\x00");
    add("connection", "null_garbage", garbage);

    // CURVE traffic: untampered, then one mutation each.
    for (name, data) in [
        ("clean", &[0x00][..]),
        ("server_fragments", &[0x01 | 5 << 1]),
        ("flip", &[0x00, 0, 1, 0x00, 0x20, 3]),
        ("duplicate", &[0x00, 2, 0]),
        ("swap", &[0x00, 3, 0, 1]),
        ("remove_middle", &[0x00, 4, 2]),
        ("truncate", &[0x02, 1, 6, 0x00, 0x10]),
        ("insert", &[0x00, 5, 3, 4, 1, 2, 3, 4]),
    ] {
        add("curve_traffic", name, data.to_vec());
    }

    // Sockets: one scenario per type, plus ZAP, a connect endpoint and raw bytes.
    use act::*;
    const HWM4: u8 = 0x0F;
    let recv4 = RECV | 0x30;
    let messages = [
        (MESSAGE, 0x01),
        (MESSAGE, 0x0A),
        (MESSAGE, 0x10),
        (FLUSH, 0),
    ];
    let mut scenario = |name: &str, ty: SocketType, b1: u8, b2: u8, actions: &[(u8, u8)]| {
        add("socket", name, socket_seed(ty, b1, b2, 0, actions));
    };
    for (name, ty) in [
        ("pair", SocketType::Pair),
        ("pull", SocketType::Pull),
        ("dealer", SocketType::Dealer),
        ("router", SocketType::Router),
        ("xsub", SocketType::XSub),
        ("gather", SocketType::Gather),
        ("channel", SocketType::Channel),
    ] {
        let mut actions = vec![(ACCEPT, 0), (SETTLE, 0)];
        actions.extend_from_slice(&messages);
        actions.extend_from_slice(&[(recv4, 0), (SEND, 0x05), (SETTLE, 0), (TIMEOUT, 0)]);
        actions.extend_from_slice(&[(CLOSED, 0), (recv4, 0)]);
        scenario(name, ty, HWM4, 0, &actions);
    }
    let mut sub = vec![(SUBSCRIBE, 0), (ACCEPT, 0), (SETTLE, 0)];
    sub.extend_from_slice(&messages);
    sub.push((recv4, 0));
    scenario("sub", SocketType::Sub, HWM4, 0, &sub);
    for (name, ty) in [("pub", SocketType::Pub), ("xpub", SocketType::XPub)] {
        let actions = [
            (ACCEPT, 0),
            (PEER_SUBSCRIBE, 0),
            (FLUSH, 0),
            (SEND, 0x01),
            (SEND, 0x12),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (recv4, 0),
        ];
        scenario(name, ty, HWM4, 0, &actions);
    }
    scenario(
        "push",
        SocketType::Push,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (SEND, 0x00),
            (SEND, 0x16),
            (SETTLE, 0),
        ],
    );
    scenario(
        "req",
        SocketType::Req,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (SEND, 0x01),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "rep",
        SocketType::Rep,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x21),
            (MESSAGE, 0x02),
            (FLUSH, 0),
            (RECV, 0),
            (SEND, 0x01),
            (SETTLE, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "dealer_zap",
        SocketType::Dealer,
        HWM4 | 0x10,
        0,
        &[
            (ACCEPT, 0x10),
            (FLUSH, 0),
            (VERDICT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x05),
            (FLUSH, 0),
            (recv4, 0),
        ],
    );
    scenario(
        "router_connect",
        SocketType::Router,
        HWM4 | 0x20,
        0x01,
        &[
            (CONNECTED, 0x11),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (FLUSH, 0),
            (RECV, 0),
            (CLOSED, 0),
            (TIMEOUT, 0),
            (CONNECTED, 0x12),
            (SETTLE, 0),
            (MESSAGE, 0x02),
            (FLUSH, 0),
            (RECV, 0),
        ],
    );
    scenario(
        "pull_hwm1_raw",
        SocketType::Pull,
        0x00,
        0,
        &[
            (ACCEPT, 0),
            (ACCEPT, 0x04),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (MESSAGE, 0x00),
            (MESSAGE | 0x10, 0x03),
            (SETTLE, 0),
            (RAW, 4),
            (recv4, 0),
            (recv4, 0),
        ],
    );
    // Draft types: multipart input and sends (refused), routing ids, groups, connect_peer.
    scenario(
        "server",
        SocketType::Server,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (ACCEPT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x01),
            (MESSAGE, 0x00),
            (MESSAGE | 0x10, 0x04),
            (FLUSH, 0),
            (FLUSH | 0x10, 0),
            (recv4, 0),
            // To the first peer, the second, an unknown id, none.
            (SEND, 0x00),
            (SEND | 0x10, 0x04),
            (SEND | 0x20, 0x00),
            (SEND | 0x30, 0x00),
            (SEND, 0x01),
            (SETTLE, 0),
        ],
    );
    for (name, ty) in [
        ("client", SocketType::Client),
        ("scatter", SocketType::Scatter),
    ] {
        let actions = [
            (ACCEPT, 0),
            (SETTLE, 0),
            (MESSAGE, 0x00),
            (FLUSH, 0),
            (recv4, 0),
            (SEND, 0x00),
            (SEND, 0x01),
            (SEND, 0x24),
            (SETTLE, 0),
        ];
        scenario(name, ty, HWM4, 0, &actions);
    }
    scenario(
        "radio",
        SocketType::Radio,
        HWM4,
        0,
        &[
            (ACCEPT, 0),
            (ACCEPT, 0x04),
            (SETTLE, 0),
            // JOIN g1 from both (the second a 3.0 peer), LEAVE g1 from the second.
            (PEER_SUBSCRIBE, 0x02),
            (PEER_SUBSCRIBE | 0x10, 0x02),
            (PEER_SUBSCRIBE | 0x10, 0x03),
            (FLUSH, 0),
            (FLUSH | 0x10, 0),
            // To g1, g2 (nobody), a group of 256 bytes (refused).
            (SEND | 0x10, 0x00),
            (SEND | 0x20, 0x04),
            (SEND | 0x50, 0x00),
            (SETTLE, 0),
            // A JOIN of 256 bytes.
            (PEER_SUBSCRIBE, 0x0A),
            (FLUSH, 0),
            (SETTLE, 0),
        ],
    );
    scenario(
        "dish",
        SocketType::Dish,
        HWM4,
        0,
        &[
            // Join g1 and g (and a group of 256 bytes: refused), accept a RADIO.
            (SUBSCRIBE, 0x02),
            (SUBSCRIBE, 0x06),
            (SUBSCRIBE, 0x0A),
            (ACCEPT, 0),
            (SETTLE, 0),
            // [g1, body] twice, [g, body], [g2, body] (not joined), then [g1, body, extra].
            (MESSAGE, 0x20),
            (MESSAGE, 0x24),
            (MESSAGE, 0x60),
            (MESSAGE, 0x40),
            (MESSAGE, 0x21),
            (FLUSH, 0),
            (recv4, 0),
            (SUBSCRIBE, 0x03),
        ],
    );
    scenario(
        "peer_connect_peer",
        SocketType::Peer,
        HWM4,
        0,
        &[
            (CONNECT_FAILED | 0x10, 0),
            (SEND, 0x00),
            (CONNECTED, 0),
            (SETTLE, 0),
            (MESSAGE, 0x00),
            (FLUSH, 0),
            (recv4, 0),
            (SEND, 0x04),
            (SETTLE, 0),
        ],
    );
    scenario(
        "dealer_connect_queue",
        SocketType::Dealer,
        0x05 | 0x20,
        0x01,
        &[
            (SEND, 0x00),
            (SEND, 0x01),
            (CONNECTED, 0),
            (SETTLE, 0),
            (TIMEOUT, 0),
            (CLOSE, 0),
            (SETTLE, 0),
        ],
    );

    // udp: RADIO/DISH datagrams, messages to send, DGRAM addresses, udp endpoints.
    for (name, data) in super::datagram::seeds() {
        add("datagram", name, data);
    }

    // The file transfer's wire rules: transfers fetched, resumed and PUT, broken ones,
    // hostile paths, part records.
    for (name, data) in super::file_wire::seeds() {
        add("file_wire", name, data);
    }

    // The C ABI: round trips over inproc and tcp, closed sockets, NULL and made-up
    // arguments, options, a context's end, the poller and the rest.
    #[cfg(feature = "cabi")]
    for (name, data) in super::cabi::seeds() {
        add("cabi", name, data);
    }

    // STREAM: raw connections, the application's sends, closes and resets.
    for (name, data) in stream_seeds() {
        add("stream", name, data);
    }

    // Legacy peers: the captured exchanges of the ZMTP notes (9.6), and long frames.
    // An empty identity, then a 300-byte frame in the long form of each framing.
    let mut long_v1 = b"\x01\x00\xff\x00\x00\x00\x00\x00\x00\x01\x2d\x00".to_vec();
    long_v1.extend_from_slice(&[0x62; 300]);
    let mut long_v2 = b"\x00\x00\x02\x00\x00\x00\x00\x00\x00\x01\x2c".to_vec();
    long_v2.extend_from_slice(&[0x63; 300]);
    for (name, control, stream) in [
        // Unversioned, a ROUTER: identity `PYID`, then [AB][hello] in 1.0 framing.
        (
            "unversioned_router",
            &[0x18, 0x00][..],
            &b"\x05\x00PYID\x03\x01AB\x06\x00hello"[..],
        ),
        // Revision 0 DEALER to a REP, bytewise: empty identity, [empty][ping].
        (
            "rev0_rep_bytewise",
            &[0x11, 0x05, 0x00],
            b"\x01\x00\x01\x01\x05\x00ping",
        ),
        // Revision 1 (2.0) DEALER to a ROUTER: the capture.
        (
            "rev1_router",
            &[0x1A, 0x05, 0x02, 3, 1],
            b"\x00\x04PYID\x01\x02AB\x00\x05hello",
        ),
        // Revision 1 SUB subscribing on a PUB, fed shared.
        (
            "rev1_pub_sub",
            &[0x06, 0x02, 0x09, 2],
            b"\x00\x00\x00\x05\x01news",
        ),
        // Long forms, under a 255-byte limit on a PULL.
        ("unversioned_long_max255", &[0xDC, 0x01, 7], &long_v1),
        (
            "rev1_long_pull",
            &[0x1E, 0x08, 0x00],
            &[&b"\x00\x00"[..], &long_v2].concat(),
        ),
        // Hostile: an identity over 255 bytes; a zero length.
        (
            "identity_too_long",
            &[0x00, 0x00],
            b"\xff\x00\x00\x00\x00\x00\x00\x01\x2d\x00",
        ),
        ("zero_length", &[0x00, 0x00], b"\x01\x00\x00"),
    ] {
        let mut data = control.to_vec();
        data.extend_from_slice(stream);
        add("legacy", name, data);
    }
    seeds
}

/// A [`stream()`](super::stream()) input: the option byte, then (action, parameter,
/// bytes) triples; the bytes follow a `RAW` action (as many as the parameter says) or a
/// `SEND` one (parameter >> 3 of them).
pub(super) fn stream_seed(b0: u8, actions: &[(u8, u8, &[u8])]) -> Vec<u8> {
    let mut out = vec![b0];
    for &(a, p, bytes) in actions {
        out.extend_from_slice(&[a, p]);
        let n = match a & 15 {
            stream::act::RAW => usize::from(p),
            stream::act::SEND => usize::from(p >> 3),
            _ => 0,
        };
        out.extend(bytes.iter().copied().cycle().take(n));
    }
    out
}

/// The seeds of the `stream` target.
fn stream_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use stream::act::*;
    // SEND parameters: the form in the low 3 bits, the data length above.
    let send = |form: u8, len: u8| (len << 3) | form;
    vec![
        (
            "echo_then_close",
            stream_seed(
                0x00,
                &[
                    (ACCEPT, 0, b""),
                    (RECV, 0, b""),
                    (RAW, 18, b"GET / HTTP/1.0\r\n\r\n"),
                    (RECV, 0, b""),
                    (SEND, send(0, 5), b"hello"),
                    (WRITE, 0, b""),
                    (SEND, send(1, 0), b""),
                    (SETTLE, 0, b""),
                    (RECV | 0x30, 0, b""),
                ],
            ),
        ),
        (
            "two_clients_routed",
            stream_seed(
                0x00,
                &[
                    (ACCEPT, 0, b""),
                    (ACCEPT, 0, b""),
                    (RAW, 4, b"from"),
                    (RAW | 0x10, 5, b"other"),
                    (SEND, send(5, 8), b"a-b-c-d-"),
                    (SEND | 0x10, send(0, 3), b"one"),
                    (SETTLE, 0, b""),
                    (RESET | 0x10, 0, b""),
                    (RECV | 0xF0, 0, b""),
                    (SEND | 0x10, send(3, 2), b"xx"),
                ],
            ),
        ),
        (
            "connect_named_reconnect",
            stream_seed(
                0x60,
                &[
                    (CONNECTED, 0, b""),
                    (RECV, 0, b""),
                    (SEND, send(0, 4), b"ping"),
                    (SETTLE, 0, b""),
                    (RAW, 4, b"pong"),
                    (RESET, 0, b""),
                    (TIMEOUT, 0, b""),
                    (CONNECTED, 0, b""),
                    (RECV | 0xF0, 0, b""),
                    (SEND, send(3, 3), b"old"),
                    (SEND, send(0, 3), b"new"),
                    (WRITE, 0, b""),
                ],
            ),
        ),
        (
            "notify_off_hwm_1",
            stream_seed(
                0x01 | 1 << 1 | 1 << 3,
                &[
                    (ACCEPT, 0, b""),
                    (RAW, 3, b"abc"),
                    (RAW, 3, b"def"),
                    (RECV, 0, b""),
                    (RAW, 3, b"ghi"),
                    (SEND, send(4, 0), b""),
                    (SEND, send(0, 4), b"lost"),
                    (SEND, send(6, 4), b"trio"),
                    (SEND, send(2, 4), b"nope"),
                    (SEND, send(0, 4), b"full"),
                    (SETTLE, 0, b""),
                    (RECV | 0xF0, 0, b""),
                ],
            ),
        ),
        (
            "close_with_pending_linger_0",
            stream_seed(
                0x80,
                &[
                    (ACCEPT, 0, b""),
                    (RECV, 0, b""),
                    (RAW, 2, b"hi"),
                    (SEND, send(7, 9), b"goodbye!!"),
                    (WRITE, 3, b""),
                    (TIMEOUT, 0, b""),
                    (SETTLE, 0, b""),
                    (RECV | 0xF0, 0, b""),
                ],
            ),
        ),
    ]
}

/// The seeds of [`ws_upgrade`](super::ws_upgrade) and [`ws_frame`](super::ws_frame): libzmq's
/// heads and frames (per the project's ZMTP notes), our own for every mechanism, and a few
/// that must be refused.
fn ws_seeds(add: &mut impl FnMut(&'static str, &str, Vec<u8>)) {
    use zmtp_proto::codec::{FrameFlags, Status};
    use zmtp_proto::ws::{self, ClientHandshake, ServerHandshake, Target};

    let mut upgrade = |name: &str, control: &[u8], head: &[u8]| {
        let mut data = control.to_vec();
        data.extend_from_slice(head);
        add("ws_upgrade", name, data);
    };
    upgrade("libzmq_null_request", &[0x00], zws::NULL_REQUEST);
    upgrade("libzmq_null_response", &[0x00], zws::NULL_RESPONSE);
    let replace = |head: &[u8], from: &str, to: &str| {
        String::from_utf8_lossy(head)
            .replacen(from, to, 1)
            .into_bytes()
    };
    upgrade(
        "rfc45_order",
        &[0x00],
        &replace(
            zws::NULL_REQUEST,
            "ZWS2.0/NULL,ZWS2.0",
            "ZWS2.0,ZWS2.0/NULL",
        ),
    );
    upgrade(
        "plain_first_to_null",
        &[2 << 2, 9, 30],
        &replace(
            zws::NULL_REQUEST,
            "ZWS2.0/NULL,ZWS2.0",
            "ZWS2.0/PLAIN, ZWS2.0/NULL\r\nSec-WebSocket-Protocol: ZWS2.0",
        ),
    );
    upgrade(
        "http10",
        &[0x00],
        &replace(zws::NULL_REQUEST, "HTTP/1.1", "HTTP/1.0"),
    );
    upgrade(
        "bare_response",
        &[1 << 2, 40],
        &replace(zws::NULL_RESPONSE, "ZWS2.0/NULL", "ZWS2.0"),
    );
    // Our client's request and our server's response, for each mechanism, with the key
    // the body's client uses (libzmq's first).
    for (i, name) in ["null", "plain", "curve"].into_iter().enumerate() {
        let mechanism = [Mechanism::NULL, Mechanism::PLAIN, Mechanism::CURVE][i];
        let (Ok(client), Ok(server), Ok(target)) = (
            ClientHandshake::new(mechanism, zws::LIBZMQ_NONCE),
            ServerHandshake::new(mechanism),
            Target::from_address("ws://localhost:5555/zmq"),
        ) else {
            continue;
        };
        let mut request = vec![0u8; client.request_len(&target)];
        if client.emit_request(&target, &mut request).is_err() {
            continue;
        }
        let Ok(Status::Complete((req, _))) = server.parse_request(&request) else {
            continue;
        };
        let mut response = vec![0u8; req.response_len()];
        if req.emit_response(&mut response).is_err() {
            continue;
        }
        let b0 = u8::try_from(i).unwrap_or(0);
        upgrade(
            &format!("{name}_request"),
            &[b0 | 3 << 2, 1, 4, 60],
            &request,
        );
        upgrade(&format!("{name}_response"), &[b0], &response);
    }

    let mut frames = |name: &str, control: &[u8], stream: &[u8]| {
        let mut data = control.to_vec();
        data.extend_from_slice(stream);
        add("ws_frame", name, data);
    };
    let data = FrameFlags {
        more: false,
        command: false,
    };
    let more = FrameFlags {
        more: true,
        command: false,
    };
    let mut long = vec![0u8; ws::frame_len(300, false)];
    let _ = ws::emit_frame(more, &[0x61; 300], None, &mut long);
    let server_stream = [
        zws::SERVER_READY,
        zws::SERVER_DATA,
        &long,
        b"\x89\x00",
        zws::PONG,
        zws::CLOSE_ECHO,
    ]
    .concat();
    frames("libzmq_server", &[0x00, 0x00, 0x00], &server_stream);
    frames(
        "libzmq_server_max16",
        &[0x03 << 1, 0x03, 0x17, 1, 5, 2],
        &server_stream,
    );
    let mut client_stream = zws::CLIENT_READY.to_vec();
    let key = zws::CLIENT_MASK;
    for (flags, body) in [(more, &b""[..]), (data, b"hello")] {
        let mut out = vec![0u8; ws::frame_len(body.len(), true)];
        if ws::emit_frame(flags, body, Some(key), &mut out).is_ok() {
            client_stream.extend_from_slice(&out);
        }
    }
    let mut control = [0u8; 32];
    for emit in [ws::emit_ping, ws::emit_close] {
        if let Ok(n) = emit(b"\x03\xe8bye", Some(key), &mut control) {
            client_stream.extend_from_slice(control.get(..n).unwrap_or_default());
        }
    }
    frames("libzmq_client", &[0x01, 0x00, 0xa3], &client_stream);
    frames(
        "libzmq_client_u16_limit",
        &[0x01 | 7 << 1, 0x02, 0x11, 0x01, 0x2c, 3, 8],
        &client_stream,
    );
    for (name, stream) in [
        ("text", &b"\x81\x02hi"[..]),
        ("fragment", b"\x02\x02\x00x\x80\x01y"),
        ("huge", b"\x82\x7f\x7f\xff\xff\xff\xff\xff\xff\xff"),
        ("reserved_flags", b"\x82\x02\x04x"),
    ] {
        frames(name, &[0x00, 0x00, 0x00], stream);
    }
}
