//! Tests of the bodies' own harness: the seeds reach what they are meant to reach.

use zmtp_proto::SocketType;

#[cfg(feature = "cabi")]
use super::cabi::run_cabi;
use super::connection::run_connection;
use super::curve_traffic::{run_curve_traffic, CURVE_FRAMES};
use super::datagram::run_datagram;
use super::file_wire::{run_file_wire, Outcome};
use super::socket::{act, run_socket, MAGIC};
use super::stream::run_stream;
use super::{corpus::socket_seed, seed_corpus, Seed, TARGETS};

fn seeds_of(target: &str) -> Vec<Seed> {
    seed_corpus()
        .into_iter()
        .filter(|s| s.target == target)
        .collect()
}

#[test]
fn every_target_has_small_seeds() {
    let seeds = seed_corpus();
    for (target, _) in TARGETS {
        let n = seeds.iter().filter(|s| s.target == *target).count();
        assert!(n >= 3, "{target}: {n} seeds");
    }
    for s in &seeds {
        assert!(
            s.data.len() < 4096,
            "{} {}: {} bytes",
            s.target,
            s.name,
            s.data.len()
        );
    }
}

#[test]
fn connection_seeds_complete_the_handshake_and_deliver() {
    let seeds = seeds_of("connection");
    assert!(
        seeds.len() >= 9,
        "a recording failed: {} seeds",
        seeds.len()
    );
    for s in seeds.iter().filter(|s| s.name != "null_garbage") {
        let out = run_connection(&s.data);
        std::println!("{}: {out:?}", s.name);
        assert!(out.established && !out.failed, "{}: {out:?}", s.name);
        assert!(out.items >= 2, "{}: {out:?}", s.name);
    }
    let garbage = seeds.iter().find(|s| s.name == "null_garbage");
    assert!(garbage.is_some_and(|s| run_connection(&s.data).failed));
}

#[test]
fn clean_curve_traffic_is_delivered() {
    assert_eq!(run_curve_traffic(&[0x00]), Some(CURVE_FRAMES.len()));
    assert_eq!(
        run_curve_traffic(&[0x01 | 3 << 1]),
        Some(CURVE_FRAMES.len())
    );
}

#[test]
fn socket_seeds_move_messages() {
    for s in seeds_of("socket") {
        let out = run_socket(&s.data);
        std::println!("{}: {out:?}", s.name);
        let moved = out.received + out.app_delivered;
        assert!(moved > 0, "{}: {out:?}", s.name);
    }
}

#[test]
fn raw_bytes_never_hold_the_tag() {
    // A raw chunk made of the tag itself, twice, split across the tail.
    let mut data = socket_seed(SocketType::Pull, 0x0F, 0, 0, &[(act::ACCEPT, 0)]);
    data.extend_from_slice(&[act::RAW, 20]);
    data.extend_from_slice(&MAGIC);
    data.extend_from_slice(&MAGIC);
    data.extend_from_slice(&[0, 0, 0, 0]);
    run_socket(&data);
}

#[test]
fn draft_seeds_reach_what_they_are_meant_to() {
    for (name, received, delivered) in [
        // Two single-frame messages of three (the multipart one dropped); one to each peer.
        ("server", 2, 2),
        // [g1, body] twice and [g, body]; not g2, and nothing after the malformed one.
        ("dish", 3, 0),
        // Only the peer that kept g1 joined.
        ("radio", 0, 1),
        // Queued to connect_peer's id before the stream opened, then another.
        ("peer_connect_peer", 1, 2),
    ] {
        let seed = seeds_of("socket").into_iter().find(|s| s.name == name);
        let out = run_socket(&seed.expect("the seed").data);
        assert_eq!(
            (out.received, out.app_delivered),
            (received, delivered),
            "{name}: {out:?}"
        );
    }
}

#[test]
fn a_server_reconnected_with_immediate_routes_to_its_peer() {
    // SERVER with IMMEDIATE connects; its peer sends, goes away and comes back; then a
    // message to the peer's id (the only one) must not be refused as unknown.
    let data = socket_seed(
        SocketType::Server,
        0x0F | 0x20 | 0x40,
        0,
        0,
        &[
            (act::CONNECTED, 0),
            (act::SETTLE, 0),
            (act::MESSAGE, 0),
            (act::FLUSH, 0),
            (act::RECV, 0),
            (act::CLOSED, 0),
            (act::TIMEOUT, 0),
            (act::CONNECTED, 0),
            (act::SETTLE, 0),
            (act::SEND, 0),
            (act::SETTLE, 0),
        ],
    );
    let out = run_socket(&data);
    assert_eq!((out.received, out.app_delivered), (1, 1), "{out:?}");
}

/// A deep state the socket body reaches by its actions: a peer's stream reset in the
/// middle of a multipart message (two of its three frames partly fed), the socket
/// reconnecting, and a whole message on the new stream. Only that one is received: the
/// cut one never reaches the application, not even its first frame.
#[test]
fn a_multipart_message_cut_by_a_reset_is_dropped_and_the_reconnected_peer_delivers() {
    let three_frames_of_40 = 2 | 3 << 2;
    let data = socket_seed(
        SocketType::Pull,
        0x0F | 0x20,
        0,
        0,
        &[
            (act::CONNECTED, 0),
            (act::SETTLE, 0),
            (act::MESSAGE, three_frames_of_40),
            // The first frame (2 + 58 bytes) and 10 bytes of the second.
            (act::FLUSH, 70),
            (act::CLOSED, 0),
            (act::TIMEOUT, 0),
            (act::CONNECTED, 0),
            (act::SETTLE, 0),
            (act::MESSAGE, three_frames_of_40),
            (act::SETTLE, 0),
            (act::RECV, 0),
            (act::RECV, 0),
        ],
    );
    let out = run_socket(&data);
    assert_eq!(out.received, 1, "{out:?}");
    // Without the reset, both arrive: the cut is what dropped the first.
    let mut whole = data.clone();
    let cut = whole
        .windows(2)
        .position(|w| w == [act::CLOSED, 0])
        .unwrap();
    whole[cut] = act::SETTLE;
    assert_eq!(run_socket(&whole).received, 2);
}

/// Another: PUSH with SNDHWM 1 and two peers, both queues full (the other sends
/// refused, nothing written yet), one peer leaving with its message queued. The other's
/// queued message is delivered, and sending goes on to it alone; the body's checks (every
/// message whole and once per stream, no queue over SNDHWM) hold throughout.
#[test]
fn a_peer_leaving_while_the_send_queues_are_full_leaves_sending_to_the_other() {
    let mut actions = vec![(act::ACCEPT, 0), (act::ACCEPT, 0), (act::SETTLE, 0)];
    actions.extend([(act::SEND, 0); 6]);
    actions.extend([(act::CLOSED, 0), (act::SETTLE, 0)]);
    actions.extend([
        (act::SEND, 0),
        (act::SETTLE, 0),
        (act::SEND, 0),
        (act::SETTLE, 0),
    ]);
    let data = socket_seed(SocketType::Push, 0x03, 0, 0, &actions);
    // One of the two queued before the leave, then both sent after it.
    assert_eq!(run_socket(&data).app_delivered, 3);
    // Without the leave: both queued messages, then the two sent after.
    let mut stayed = data.clone();
    let leave = stayed
        .windows(2)
        .position(|w| w == [act::CLOSED, 0])
        .unwrap();
    stayed[leave] = act::SETTLE;
    assert_eq!(run_socket(&stayed).app_delivered, 4);
}

#[test]
fn ws_seeds_reach_what_they_are_meant_to() {
    use zmtp_proto::codec::Mechanism;
    use zmtp_proto::ws::{
        ClientHandshake, Decoder, FrameError, HandshakeError, Protocol, Role, ServerHandshake,
    };

    let seed = |target: &str, name: &str| {
        seeds_of(target)
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no seed {target}/{name}"))
            .data
    };
    // ws_upgrade: byte 0, then (byte 0 >> 2 & 7) piece sizes, then the head.
    let head = |data: &[u8]| data[1 + usize::from(data[0] >> 2 & 7)..].to_vec();
    let mechanisms = [Mechanism::NULL, Mechanism::PLAIN, Mechanism::CURVE];
    let request = |name: &str| {
        let data = seed("ws_upgrade", name);
        let server = ServerHandshake::new(mechanisms[usize::from(data[0] & 3)]).unwrap();
        server
            .parse_request(&head(&data))
            .map(|s| s.complete().map(|(r, _)| r.protocol))
    };
    let response = |name: &str| {
        let data = seed("ws_upgrade", name);
        let mechanism = mechanisms[usize::from(data[0] & 3)];
        let client = ClientHandshake::new(mechanism, crate::wire::zws::LIBZMQ_NONCE).unwrap();
        client
            .parse_response(&head(&data))
            .map(|s| s.complete().map(|(p, _)| p))
    };
    assert_eq!(request("libzmq_null_request"), Ok(Some(Protocol::Null)));
    assert_eq!(request("rfc45_order"), Ok(Some(Protocol::Null)));
    assert_eq!(request("plain_first_to_null"), Ok(Some(Protocol::Null)));
    assert_eq!(request("http10"), Err(HandshakeError::BadVersion));
    assert_eq!(request("plain_request"), Ok(Some(Protocol::Plain)));
    assert_eq!(request("curve_request"), Ok(Some(Protocol::Curve)));
    assert_eq!(response("libzmq_null_response"), Ok(Some(Protocol::Null)));
    assert_eq!(response("bare_response"), Ok(Some(Protocol::Bare)));
    assert_eq!(response("null_response"), Ok(Some(Protocol::Null)));
    assert_eq!(response("plain_response"), Ok(Some(Protocol::Plain)));
    assert_eq!(response("curve_response"), Ok(Some(Protocol::Curve)));

    // ws_frame: 3 control bytes, then the stream (these seeds have no pieces or u16).
    let frames = |name: &str, role: Role| {
        let data = seed("ws_frame", name);
        let stream = &data[3..];
        super::ws::run(&Decoder::new(role, None), stream, &[stream.len()])
    };
    let server = frames("libzmq_server", Role::Client);
    assert_eq!((server.frames(), server.error), (6, None));
    let client = frames("libzmq_client", Role::Server);
    assert_eq!((client.frames(), client.error), (5, None));
    assert_eq!(frames("text", Role::Client).error, Some(FrameError::Text));
    assert_eq!(
        frames("fragment", Role::Client).error,
        Some(FrameError::Fragmented)
    );
}

#[test]
fn datagram_seeds_are_taken_or_refused_as_meant() {
    let seeds = seeds_of("datagram");
    let refused = [
        "radio_lying_length",
        "emit_group_128",
        "emit_8193",
        "dgram_shorthand",
        "udp_iface_unicast",
    ];
    assert!(seeds.len() >= 15, "{} seeds", seeds.len());
    for s in seeds {
        let taken = !refused.contains(&s.name.as_str());
        assert_eq!(run_datagram(&s.data), Some(taken), "{}", s.name);
    }
}

#[test]
fn stream_seeds_move_bytes_both_ways() {
    let seeds = seeds_of("stream");
    assert!(seeds.len() >= 5, "{} seeds", seeds.len());
    for s in &seeds {
        let out = run_stream(&s.data);
        std::println!("{}: {out:?}", s.name);
        assert!(out.opened >= 1, "{}: {out:?}", s.name);
        assert!(out.chunks >= 1, "{}: {out:?}", s.name);
    }
    let echo = seeds.iter().find(|s| s.name == "echo_then_close");
    let out = echo.map(|s| run_stream(&s.data)).unwrap_or_default();
    assert_eq!(out.written, 5, "the echo's bytes were written: {out:?}");
    assert!(out.notes >= 1, "the up notification: {out:?}");
}

#[test]
fn stream_random_inputs_agree_with_the_model() {
    // Pseudo-random inputs run clean (the model and the socket agree), and reach traffic.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut chunks, mut written, mut notes) = (0, 0, 0);
    for _ in 0..300 {
        let data: Vec<u8> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let out = run_stream(&data);
        chunks += out.chunks;
        written += out.written;
        notes += out.notes;
    }
    std::println!("chunks {chunks}, bytes written {written}, notifications {notes}");
    assert!(chunks > 0 && written > 0 && notes > 0);
}

#[test]
fn file_wire_seeds_reach_what_they_are_meant_to() {
    let outcome = |name: &str| {
        let seed = seeds_of("file_wire")
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no seed {name}"));
        run_file_wire(&seed.data)
    };
    let o = |taken, chunks, complete, refused| Outcome {
        taken,
        chunks,
        complete,
        refused,
    };
    // Three 1-byte chunks complete the file; the FETCH of all 3 bytes is answered.
    assert_eq!(outcome("fetched_in_order"), o(1, 3, 1, 0));
    // Resumed from the part's 2 bytes: the 2 chunks left complete it.
    assert_eq!(outcome("resumed_part"), o(1, 2, 1, 0));
    assert_eq!(outcome("put_small"), o(1, 0, 1, 0));
    // The chunk at 1 answers no fetch (the oldest is at 0).
    assert_eq!(outcome("chunk_out_of_order"), o(1, 0, 0, 1));
    // 8 + 4 > 10, and a FETCH of 0 bytes.
    assert_eq!(outcome("fetch_past_end"), o(1, 0, 0, 2));
    // Six hostile names and a symbolic link refused; the same file there is compared.
    assert_eq!(outcome("hostile_paths"), o(0, 0, 0, 7));
}

#[cfg(feature = "cabi")]
#[test]
fn cabi_seeds_reach_what_they_are_meant_to() {
    let outcome = |name: &str| {
        let seed = seeds_of("cabi")
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no seed {name}"));
        run_cabi(&seed.data)
    };
    // A frame sent with zmq_send over inproc comes back whole from zmq_recv; over tcp
    // too; and a zmq_msg_t sent and received, then copied, moved and closed (twice).
    for name in ["inproc_round_trip", "tcp_round_trip", "msg_round_trip"] {
        let o = outcome(name);
        assert_eq!(
            (o.sockets, o.sent, o.round_trips),
            (2, 1, 1),
            "{name}: {o:?}"
        );
    }
    assert_eq!(
        outcome("msg_round_trip").efault,
        1,
        "the second zmq_msg_close"
    );
    // Every call on a closed socket: ENOTSOCK (zmq_close twice, options, endpoints,
    // send, receive, zmq_msg_send, zmq_poll, zmq_join).
    let o = outcome("closed_socket");
    assert_eq!((o.sockets, o.enotsock), (1, 10), "{o:?}");
    // A shut down context: ETERM on its sockets (send, receive, poll, a new socket);
    // terminated: EFAULT (term, socket, get, shutdown).
    let o = outcome("context_shutdown_and_term");
    assert_eq!((o.eterm, o.efault), (4, 4), "{o:?}");
    let o = outcome("null_and_bad_arguments");
    assert!(o.efault >= 8 && o.einval >= 8 && o.enotsock >= 1, "{o:?}");
    // Every seed stays within the operation limit.
    for seed in seeds_of("cabi") {
        assert!(run_cabi(&seed.data).ops <= super::cabi::MAX_OPS as u32);
    }
}
