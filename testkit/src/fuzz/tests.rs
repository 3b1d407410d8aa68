//! Tests of the bodies' own harness: the seeds reach what they are meant to reach.

use zmtp_proto::SocketType;

use super::connection::run_connection;
use super::curve_traffic::{run_curve_traffic, CURVE_FRAMES};
use super::datagram::run_datagram;
use super::socket::{act, run_socket, MAGIC};
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
