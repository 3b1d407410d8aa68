//! STREAM: raw byte streams addressed by routing id, as libzmq's `ZMQ_STREAM`.
//!
//! A peer's stream carries no ZMTP: it is raw from the start (`Buffered::wrap_raw`), and
//! counts as up as soon as it is open. Each chunk read from it reaches the application
//! as `[id][chunk]`; `[id][data]` writes `data` to it; empty data closes it. With
//! `stream_notify` (the default), `[id][empty]` announces a stream coming up, and again
//! its going away (unless we closed it).

use alloc::collections::BTreeMap;
use core::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};

use super::Pattern;
use crate::socket::output::mark;
use crate::socket::{Departed, Ending, Message, PeerId, SendError, Sent, Socket};
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
    /// A stream is being closed on request: its detaching is not announced.
    quiet: bool,
}

impl StreamState {
    pub(super) fn new(first_id: u32) -> StreamState {
        StreamState {
            next_id: first_id,
            routes: BTreeMap::new(),
            discard_next: false,
            quiet: false,
        }
    }
}

/// STREAM.
pub(in crate::socket) struct Stream;

impl Pattern for Stream {
    /// Give the stream its routing id (`CONNECT_ROUTING_ID` for a connect peer, if set and
    /// free, else generated: `00` and a counter) and announce it.
    fn attach(s: &mut Socket, peer: PeerId, _now: Instant) -> bool {
        let Some(p) = s.peers.get(&peer) else {
            return false;
        };
        let state = &mut s.pattern.stream;
        let id = if !p.routing_id.is_empty() && !state.routes.contains_key(&p.routing_id) {
            p.routing_id.clone()
        } else {
            loop {
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
            }
        };
        state.routes.insert(id.clone(), peer);
        let notify = s.opts.stream_notify;
        if let Some(p) = s.peers.get_mut(&peer) {
            p.routing_id = id;
            if notify {
                p.inq.push_back(Message::from(Bytes::new()));
            }
        }
        s.attach(peer);
        true
    }

    /// Forget the stream's id and announce its end after what it sent.
    fn detach(s: &mut Socket, peer: PeerId) {
        let Some(p) = s.peers.get_mut(&peer) else {
            return;
        };
        let id = core::mem::take(&mut p.routing_id);
        let state = &mut s.pattern.stream;
        if state.routes.get(&id) == Some(&peer) {
            state.routes.remove(&id);
        }
        if !s.opts.stream_notify || state.quiet || s.closing.is_some() {
            return;
        }
        let note = Message::from(Bytes::new());
        match s.departed.back_mut() {
            // What the stream left unread goes first (`Socket::detach` just queued it).
            Some(d) if d.peer == peer && d.routing_id == id => d.inq.push_back(note),
            _ => s.departed.push_back(Departed {
                peer,
                routing_id: id,
                inq: [note].into_iter().collect(),
            }),
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
            } else {
                write(s, peer, &data);
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

/// Close a stream on request: its id is forgotten at once, without a notification; the
/// stream itself closes once what was queued on it before is written (or after `linger`,
/// 30 s by default).
fn close(s: &mut Socket, peer: PeerId, now: Instant) {
    s.pattern.stream.quiet = true;
    s.detach(peer);
    s.pattern.stream.quiet = false;
    let flush = s.opts.linger.unwrap_or(CLOSE_FLUSH);
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

impl Socket {
    /// A raw stream (STREAM) is up as soon as it is open: attach it now.
    pub(in crate::socket) fn raw_stream_up(&mut self, peer: PeerId, now: Instant) {
        let Some(l) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
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
            p.inq.push_back(Message::from(chunk));
        }
    }
}
