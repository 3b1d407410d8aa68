//! A bare [`Connection`] driven by hand, with its calling contract checked on every call.
//!
//! [`transmit`] and [`pump`] are what a driver does after each input: take every byte the
//! connection wants to send, and feed it received bytes until it stops consuming. Both
//! assert the contract of the core as they go (an [`InsufficientSize`] only when even the
//! first frame does not fit; no item without consumed bytes; progress whenever the bytes
//! asked for are there; payload ranges that locate the payload). [`record_handshake`] runs
//! two connections against each other and keeps what one of them received, so that
//! [`replay_handshake`] can take a fresh, identically built connection through the same
//! handshake without its peer.

use zmtp_proto::codec::InsufficientSize;
use zmtp_proto::{Bytes, Connection, Error, Instant, Item, OwnedItem};

/// Everything `conn` wants to send now (its output, drained with `poll_transmit`).
pub fn transmit(conn: &mut Connection) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 512];
    for _ in 0..64 {
        match conn.poll_transmit(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(buf.get(..n).unwrap_or_default()),
            Err(InsufficientSize { required }) => {
                // The contract: a failure means not even the first frame fits.
                assert!(
                    required > buf.len(),
                    "InsufficientSize below the buffer size"
                );
                buf.resize(required, 0);
            }
        }
    }
    all
}

/// Feed the front of `rx` to `conn` until it consumes nothing (checking the input
/// contract on every step), hand each item to `sink` and drop what was consumed.
/// Returns the connection's error, if it failed.
pub fn pump(
    conn: &mut Connection,
    now: Instant,
    rx: &mut Vec<u8>,
    sink: &mut dyn FnMut(OwnedItem),
) -> Result<(), Error> {
    let mut at = 0;
    let result = loop {
        let Some(rest) = rx.get_mut(at..) else {
            break Ok(());
        };
        let len = rest.len();
        let input = match conn.handle_input(now, rest) {
            Ok(input) => input,
            Err(e) => break Err(e),
        };
        assert!(input.consumed <= len, "consumed more than the input");
        let item = input.item.as_ref().map(owned);
        let (consumed, needed, payload) = (input.consumed, input.needed, input.payload.clone());
        if consumed == 0 {
            // Otherwise the driver would wait forever for bytes it already has.
            assert!(
                needed > len,
                "no progress although {needed} <= {len} bytes are buffered"
            );
            assert!(item.is_none(), "an item without consumed bytes");
            break Ok(());
        }
        if let Some(item) = item {
            // The payload range locates the payload in the input (zero-copy slicing).
            assert!(
                payload.end <= consumed,
                "payload range past the consumed bytes"
            );
            let located = rx.get(at + payload.start..at + payload.end);
            assert!(
                located == Some(owned_payload(&item)),
                "payload range does not locate the payload"
            );
            sink(item);
        }
        at += consumed;
    };
    rx.drain(..at.min(rx.len()));
    result
}

/// The payload of an item.
pub fn owned_payload(item: &OwnedItem) -> &[u8] {
    match item {
        OwnedItem::Ready(b)
        | OwnedItem::Frame { body: b, .. }
        | OwnedItem::Subscribe(b)
        | OwnedItem::Cancel(b)
        | OwnedItem::Join(b)
        | OwnedItem::Leave(b) => b,
    }
}

/// A handshake as `local` saw it: in each round, the bytes `peer` sent, and whether
/// `local` then gave a verdict (200). Replaying it into a connection built exactly like
/// `local` (same configuration, entropy and clock) takes that one through the same
/// handshake without a peer: its own output is the same, so the peer's answers still fit.
pub type Rounds = Vec<(Vec<u8>, bool)>;

/// Run `local` and `peer` against each other at `now` until both are established and idle
/// (verdicts answered 200); `None` if they do not get there.
pub fn record_handshake(
    local: &mut Connection,
    peer: &mut Connection,
    now: Instant,
) -> Option<Rounds> {
    let mut rounds = Vec::new();
    let (mut local_rx, mut peer_rx) = (Vec::new(), Vec::new());
    for _ in 0..32 {
        let to_peer = transmit(local);
        peer_rx.extend_from_slice(&to_peer);
        pump(peer, now, &mut peer_rx, &mut |_| {}).ok()?;
        while peer.poll_event().is_some() {}
        if peer.auth_request().is_some() {
            peer.handle_auth(now, 200).ok()?;
        }
        let to_local = transmit(peer);
        local_rx.extend_from_slice(&to_local);
        pump(local, now, &mut local_rx, &mut |_| {}).ok()?;
        while local.poll_event().is_some() {}
        let verdict = local.auth_request().is_some();
        if verdict {
            local.handle_auth(now, 200).ok()?;
        }
        let moved = !to_peer.is_empty() || !to_local.is_empty();
        if !moved && local.is_established() && peer.is_established() {
            // Whatever either still has to say has been said.
            return Some(rounds);
        }
        rounds.push((to_local, verdict));
    }
    None
}

/// Take `local` through a recorded handshake at `now` (the time it was recorded at);
/// `None` if it is not established after it.
pub fn replay_handshake(local: &mut Connection, rounds: &Rounds, now: Instant) -> Option<()> {
    let mut rx = Vec::new();
    for (bytes, verdict) in rounds {
        transmit(local);
        rx.extend_from_slice(bytes);
        pump(local, now, &mut rx, &mut |_| {}).ok()?;
        while local.poll_event().is_some() {}
        if *verdict {
            local.handle_auth(now, 200).ok()?;
        }
    }
    transmit(local);
    while local.poll_event().is_some() {}
    local.is_established().then_some(())
}

/// An item that borrows the input, copied into one that owns its payload.
pub fn owned(item: &Item<'_>) -> OwnedItem {
    let b = Bytes::copy_from_slice(item.payload());
    match item {
        Item::Ready(_) => OwnedItem::Ready(b),
        Item::Frame { more, .. } => OwnedItem::Frame {
            body: b,
            more: *more,
        },
        Item::Subscribe(_) => OwnedItem::Subscribe(b),
        Item::Cancel(_) => OwnedItem::Cancel(b),
        Item::Join(_) => OwnedItem::Join(b),
        Item::Leave(_) => OwnedItem::Leave(b),
    }
}
