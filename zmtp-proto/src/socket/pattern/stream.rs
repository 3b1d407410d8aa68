//! STREAM: raw byte streams addressed by routing id, as libzmq's `ZMQ_STREAM`.
//!
//! A peer's stream carries no ZMTP: it is raw from the start (`Buffered::wrap_raw`), and
//! counts as up as soon as it is open. Each chunk read from it reaches the application
//! as `[id][chunk]`; `[id][data]` writes `data` to it; empty data closes it. With
//! `stream_notify` (the default), `[id][empty]` announces a stream coming up, and again
//! its going away (unless we closed it).
//!
//! As in libzmq, a connect peer (without `immediate`) has its routing id from `connect`
//! on, and keeps it through reconnections: data sent to it before it is up waits for
//! it, and the socket's `routing_id` option reads the id last generated, which is how a
//! libzmq program learns the id of the connection it just asked for.

use alloc::collections::BTreeMap;
use core::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};

use super::Pattern;
use crate::socket::output::mark;
use crate::socket::{Ending, Message, Peer, PeerId, SendError, Sent, Socket};
use crate::{Clock, Instant};

/// How long a stream closed by an empty message may take to write what was queued for it
/// before that, when `linger` does not say.
const CLOSE_FLUSH: Duration = Duration::from_secs(30);

/// STREAM's routing table and send state.
#[derive(Debug)]
pub(in crate::socket) struct StreamState {
    /// The next generated routing id (libzmq starts it at a random value).
    next_id: u32,
    /// Routing id -> peer.
    routes: BTreeMap<Bytes, PeerId>,
    /// A routing id frame came last, without data: the next frame sent is dropped (as
    /// libzmq drops the frame after an id sent without MORE).
    discard_next: bool,
}

impl StreamState {
    /// Routing id -> peer.
    pub(super) fn routes(&self) -> &BTreeMap<Bytes, PeerId> {
        &self.routes
    }

    pub(super) fn new(first_id: u32) -> StreamState {
        StreamState {
            next_id: first_id,
            routes: BTreeMap::new(),
            discard_next: false,
        }
    }
}

/// STREAM.
pub(in crate::socket) struct Stream;

impl Pattern for Stream {
    /// A connect peer gets its routing id at once, and is routable from now on.
    fn connecting(s: &mut Socket, peer: PeerId) {
        name(s, peer);
        s.attach(peer);
    }

    /// The stream is up: give it its routing id if it has none yet, announce it, and
    /// write what was sent to it before.
    fn attach(s: &mut Socket, peer: PeerId, _now: Instant) -> bool {
        if !name(s, peer) {
            return false;
        }
        let notify = s.opts.stream_notify;
        let Some(p) = s.peers.get_mut(&peer) else {
            return false;
        };
        if notify {
            p.inq.push_back(from_peer(p, Bytes::new()));
        }
        let waiting = core::mem::take(&mut p.out);
        s.attach(peer);
        for msg in waiting {
            if let Some(data) = msg.frames().first() {
                write(s, peer, data);
            }
        }
        true
    }

    /// Forget the stream's id (its end was announced by `Socket::end_stream`).
    fn detach(s: &mut Socket, peer: PeerId) {
        let Some(p) = s.peers.get_mut(&peer) else {
            return;
        };
        let id = core::mem::take(&mut p.routing_id);
        let state = &mut s.pattern.stream;
        if state.routes.get(&id) == Some(&peer) {
            state.routes.remove(&id);
        }
    }

    /// `[id][data]` pairs, frame by frame as libzmq takes them: the frame after an id is
    /// its data whatever its MORE flag; an id without data makes the next frame sent be
    /// dropped. An unknown id fails with `HostUnreachable`, a full stream with
    /// `WouldBlock` (when the message's first id is refused: the message is handed back).
    fn send(s: &mut Socket, msg: Message, now: &impl Clock) -> Result<Sent, SendError> {
        let n = msg.len();
        let mut i = 0;
        if s.pattern.stream.discard_next {
            s.pattern.stream.discard_next = false;
            i = 1;
        }
        let mut sent = Sent::Dropped;
        while i < n {
            let frames = msg.frames();
            let (Some(id), Some(data)) = (frames.get(i), frames.get(i + 1)) else {
                // An id without data.
                s.pattern.stream.discard_next = true;
                break;
            };
            let (id, data) = (id.clone(), data.clone());
            let Some(peer) = s.pattern.stream.routes.get(&id).copied() else {
                if i == 0 {
                    return Err(SendError::HostUnreachable(msg));
                }
                break;
            };
            if !s.has_room(peer) {
                if i == 0 {
                    return Err(SendError::WouldBlock(msg));
                }
                break;
            }
            if data.is_empty() {
                close(s, peer, now.now());
            } else if s.peers.get(&peer).is_some_and(|p| p.stream.is_some()) {
                write(s, peer, &data);
            } else if let Some(p) = s.peers.get_mut(&peer) {
                // A connect peer not (or no longer) connected: the data waits for it.
                p.out.push_back(Message::from(data));
            }
            sent = Sent::Queued;
            i += 2;
        }
        Ok(sent)
    }

    #[inline]
    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        let (_, id, mut msg) = s.fq_pop(true, now)?;
        msg.push_front(id.unwrap_or_default());
        Some(msg)
    }

    /// STREAM always takes a message (it refuses what it cannot route when sent).
    fn can_send(_s: &Socket) -> bool {
        true
    }
}

/// Queue `data` on a peer's stream as it is.
fn write(s: &mut Socket, peer: PeerId, data: &Bytes) {
    let Some(l) = s.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
        return;
    };
    l.conn.send_raw(data);
    let end = l.queued_bytes_end();
    l.encoded_ends.push_back(end);
    mark(&mut s.dirty, l, peer);
}

/// Give a peer its routing id if it has none routable: `CONNECT_ROUTING_ID` for a
/// connect peer, if set and free, else generated (`00` and a counter), which the socket's
/// `routing_id` option then reads, as libzmq's does. False if the peer is gone.
fn name(s: &mut Socket, peer: PeerId) -> bool {
    let Some(p) = s.peers.get(&peer) else {
        return false;
    };
    let state = &mut s.pattern.stream;
    let id = match state.routes.get(&p.routing_id) {
        // Named at connect (and kept through reconnections).
        Some(&named) if named == peer => return true,
        None if !p.routing_id.is_empty() => p.routing_id.clone(),
        _ => {
            let id = loop {
                let n = state.next_id;
                state.next_id = n.wrapping_add(1);
                let mut id = BytesMut::with_capacity(5);
                id.put_u8(0);
                id.put_u32(n);
                let id = id.freeze();
                // After 2^32 connections a generated id could still be in use.
                if !state.routes.contains_key(&id) {
                    break id;
                }
            };
            s.opts.routing_id = id.clone();
            id
        }
    };
    s.pattern.stream.routes.insert(id.clone(), peer);
    if let Some(p) = s.peers.get_mut(&peer) {
        p.routing_id = id;
    }
    true
}

/// Close a stream on request: its id is forgotten at once, without a notification; the
/// stream itself closes once what was queued on it before is written (or after `linger`,
/// 30 s by default). A connect peer not connected yet is dropped with what waited for it,
/// and its endpoint with it (libzmq's session ends with its pipe).
fn close(s: &mut Socket, peer: PeerId, now: Instant) {
    s.detach(peer);
    let flush = s.opts.linger.unwrap_or(CLOSE_FLUSH);
    let Some(p) = s.peers.get(&peer) else {
        return;
    };
    let (endpoint, outbound, connected) = (p.endpoint, p.outbound, p.stream.is_some());
    if !connected {
        s.forget_unconnected_endpoint(endpoint, peer);
        return;
    }
    if outbound {
        // As libzmq's session, which ends with its pipe: no reconnecting, even if the
        // stream ends before what was queued on it is written.
        if let Some(e) = s.endpoints.get_mut(&endpoint) {
            e.dead = true;
        }
        s.set_retry(endpoint, None);
    }
    let Some(l) = s.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
        return;
    };
    if l.conn.queued_len() == 0 {
        s.end_stream(peer, Ending::Dropped, now);
    } else {
        l.farewell = Some((None, now + flush));
        s.rearm(peer);
    }
}

/// What a peer's stream gave (a chunk, or a notification), as the application gets it:
/// with the peer's properties (its `Peer-Address`), as libzmq's raw engine sends them.
pub(in crate::socket) fn from_peer(p: &Peer, data: Bytes) -> Message {
    let mut msg = Message::from(data);
    msg.set_properties(p.properties.clone());
    msg
}

impl Socket {
    /// A raw stream (STREAM) is up as soon as it is open: attach it now. Its messages
    /// carry the address of this stream.
    pub(in crate::socket) fn raw_stream_up(&mut self, peer: PeerId, now: Instant) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        // Made afresh for this stream's address; the descriptor the driver gave stays.
        let fd = p.properties.take().and_then(|props| props.fd);
        p.properties_mut().fd = fd;
        let Some(l) = p.stream.as_mut() else {
            return;
        };
        if !l.established {
            l.established = true;
            self.on_handshake(peer, now);
        }
    }

    /// A raw stream's input: what was read is one chunk, `[chunk]` in the peer's queue
    /// (its id is prepended by `recv`). Input of a stream no longer routable is dropped.
    pub(in crate::socket) fn read_raw(&mut self, peer: PeerId) {
        let rcvhwm = self.rcv_limit();
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        let Some(l) = p.stream.as_mut() else {
            return;
        };
        if !p.attached {
            let _ = l.conn.take_raw();
            return;
        }
        if rcvhwm != 0 && p.inq.len() >= rcvhwm {
            p.held = true;
            return;
        }
        if let Some(chunk) = l.conn.take_raw() {
            let msg = from_peer(p, chunk);
            p.inq.push_back(msg);
        }
    }
}
