//! Input: bytes read from a peer's stream become items, messages reach the pattern, and
//! RCVHWM holds a peer's input back.

use bytes::{Bytes, BytesMut};

use super::{Ending, Message, Peer, PeerId, Socket};
use crate::{Instant, OwnedItem};

impl Socket {
    /// The receive buffer of a peer's stream: the driver may read straight into it, then
    /// call [`handle_input`](Self::handle_input).
    pub fn read_buf(&mut self, peer: PeerId) -> Option<&mut BytesMut> {
        self.read_buf_room(peer, 0)
    }

    /// [`read_buf`](Self::read_buf) with at least `room` bytes free (a larger read for a
    /// stream that filled the last one); see
    /// [`Buffered::read_buf_pooled`](crate::Buffered::read_buf_pooled).
    pub fn read_buf_room(&mut self, peer: PeerId, room: usize) -> Option<&mut BytesMut> {
        let conn = &mut self.peers.get_mut(&peer)?.stream.as_mut()?.conn;
        Some(conn.read_buf_pooled(&mut self.rx_pool, room))
    }

    /// The receive buffer of a peer's stream taken out, with at least `room` bytes free,
    /// for a driver whose read completes later (see
    /// [`Buffered::take_read_buf`](crate::Buffered::take_read_buf)); give it back with
    /// [`restore_read_buf`](Self::restore_read_buf), then call
    /// [`handle_input`](Self::handle_input).
    pub fn take_read_buf(&mut self, peer: PeerId, room: usize) -> Option<BytesMut> {
        let conn = &mut self.peers.get_mut(&peer)?.stream.as_mut()?.conn;
        Some(conn.take_read_buf_pooled(&mut self.rx_pool, room))
    }

    /// Give back a buffer [`take_read_buf`](Self::take_read_buf) took, with the bytes read
    /// into it appended (dropped if the peer's stream is gone).
    pub fn restore_read_buf(&mut self, peer: PeerId, buf: BytesMut) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            s.conn.restore_read_buf(buf);
        }
    }

    /// Append bytes read from a peer's stream and process them.
    pub fn handle_received(&mut self, peer: PeerId, now: Instant, data: &[u8]) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            s.conn.receive(data);
        }
        self.handle_input(peer, now);
    }

    /// Process whatever is in a peer's receive buffer.
    pub fn handle_input(&mut self, peer: PeerId, now: Instant) {
        self.process_input(peer, now);
    }

    /// Whether the driver should read from this peer's stream (false while its receive
    /// queue is at RCVHWM).
    pub fn wants_read(&self, peer: PeerId) -> bool {
        self.peers
            .get(&peer)
            .is_some_and(|p| p.stream.is_some() && self.in_room(p))
    }

    pub(super) fn in_room(&self, p: &Peer) -> bool {
        let rcvhwm = self.rcv_limit();
        !p.held && (rcvhwm == 0 || p.inq.len() < rcvhwm)
    }

    /// Whether CONFLATE is in force: libzmq honours it on DEALER, PULL, PUSH, PUB and SUB
    /// only, and ignores it elsewhere.
    pub(crate) fn conflate(&self) -> bool {
        self.opts.conflate && self.rules.conflate
    }

    /// Messages queued per peer before input stops: RCVHWM, which CONFLATE ignores (its
    /// queue keeps one message whatever arrives). 0 = no limit.
    pub(crate) fn rcv_limit(&self) -> usize {
        if self.conflate() {
            0
        } else {
            self.opts.rcvhwm
        }
    }

    pub(super) fn process_input(&mut self, peer: PeerId, now: Instant) {
        self.read_input(peer, now);
        self.note_input(peer);
        if !self.verdicts.is_empty() {
            self.apply_verdicts(now);
        }
        // Input moves the connection's timers (heartbeats, the end of the handshake).
        self.rearm(peer);
    }

    pub(super) fn read_input(&mut self, peer: PeerId, now: Instant) {
        if self.rules.family == super::pattern::Family::Stream {
            // Raw bytes, no ZMTP (STREAM).
            self.read_raw(peer);
            return;
        }
        let rcvhwm = self.rcv_limit();
        // Where a whole single-frame message only joins the peer's queue (no topic filter,
        // no conflation, not a subscription channel), it does so here, without the
        // general path's lookups.
        let plain = !self.conflate() && self.rules.plain_input;
        // SUB's messages take the same path, but for its topic filter (as `on_message`
        // filters them on the general path).
        let sub = !self.conflate() && self.ty == crate::SocketType::Sub;
        let bulk = plain || sub;
        // INVERT_MATCHING: SUB keeps what matches none of its subscriptions.
        let invert = self.opts.invert_matching;
        loop {
            let filter = sub.then_some(&self.pattern.pubsub);
            let Some(p) = self.peers.get_mut(&peer) else {
                return;
            };
            // Plain messages are queued in this inner loop, with the peer at hand; anything
            // else leaves it for the general path.
            let next = loop {
                if rcvhwm != 0 && p.inq.len() >= rcvhwm {
                    // Held until the queue drains to half (libzmq's low-water mark), so
                    // that input resumes in batches rather than one message at a time.
                    p.held = true;
                    break Next::Held;
                }
                let Some(stream) = p.stream.as_mut() else {
                    return;
                };
                if bulk && p.attached && stream.partial.is_empty() {
                    // Whole single-frame messages in bulk, as many as RCVHWM leaves room for.
                    let room = match rcvhwm {
                        0 => usize::MAX,
                        hwm => hwm - p.inq.len(),
                    };
                    let (inq, properties) = (&mut p.inq, p.tagged.then_some(&p.properties));
                    let mut queue = |body: Bytes| {
                        let mut msg = Message::from(body);
                        if let Some(props) = properties {
                            msg.set_properties(props.clone());
                        }
                        inq.push_back(msg);
                    };
                    // Two loops, so that the plain types' loop carries no filter test.
                    let n = match filter {
                        None => stream.conn.poll_messages(room, queue),
                        Some(f) if !invert => stream.conn.poll_messages(room, |body| {
                            if f.subscribed(&body) {
                                queue(body);
                            }
                        }),
                        Some(f) => stream.conn.poll_messages(room, |body| {
                            if !f.subscribed(&body) {
                                queue(body);
                            }
                        }),
                    };
                    if n > 0 {
                        continue;
                    }
                }
                match stream.conn.poll_item(now) {
                    Ok(Some(OwnedItem::Frame { body, more: false }))
                        if bulk && p.attached && stream.partial.is_empty() =>
                    {
                        if filter.is_some_and(|f| f.subscribed(&body) == invert) {
                            continue;
                        }
                        let mut msg = Message::from(body);
                        if p.tagged {
                            msg.set_properties(p.properties.clone());
                        }
                        p.inq.push_back(msg);
                    }
                    Ok(Some(item)) => break Next::Item(item),
                    Ok(None) => break Next::Idle,
                    Err(e) => break Next::Failed(e),
                }
            };
            match next {
                Next::Held => break,
                Next::Idle => {
                    // Handshake commands move the connection without yielding an item.
                    self.process_conn_events(peer, now);
                    break;
                }
                Next::Failed(e) => {
                    self.end_stream(peer, Ending::Failed(e), now);
                    return;
                }
                Next::Item(item) => {
                    // Data frames raise no connection events; handshake items may.
                    let events = !matches!(item, OwnedItem::Frame { .. });
                    if let Err(e) = self.on_item(peer, item) {
                        self.end_stream(peer, Ending::Failed(e), now);
                        return;
                    }
                    if events {
                        self.process_conn_events(peer, now);
                    }
                }
            }
        }
        self.after_output(peer);
    }

    /// Act on a peer's connection events: a wanted verdict, the end of the handshake.
    /// PING/PONG notices are counted by the connection; nothing here needs them.
    pub(super) fn process_conn_events(&mut self, peer: PeerId, now: Instant) {
        loop {
            let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
                return;
            };
            match s.conn.connection_mut().poll_event() {
                None => return,
                Some(crate::Event::AuthRequested) => self.request_auth(peer),
                Some(crate::Event::HandshakeSucceeded { .. }) if !s.established => {
                    s.established = true;
                    let endpoint = self.peers.get(&peer).map(|p| p.endpoint);
                    if let Some(e) = endpoint.and_then(|e| self.endpoints.get_mut(&e)) {
                        e.failure = None;
                    }
                    self.on_handshake(peer, now);
                }
                Some(_) => {}
            }
        }
    }

    /// One item received from a peer's stream. An error fails the stream (the caller
    /// ends it).
    pub(super) fn on_item(&mut self, peer: PeerId, item: OwnedItem) -> Result<(), crate::Error> {
        let Some(stream) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return Ok(());
        };
        match item {
            OwnedItem::Ready(metadata) => {
                let every = self.opts.properties_on_every_message;
                if let Some(p) = self.peers.get_mut(&peer) {
                    // Application metadata (`ZMQ_METADATA`) is read on the peer's messages.
                    let app = every
                        || crate::codec::Metadata::parse(&metadata)
                            .is_ok_and(|m| m.iter().any(|prop| prop.name.starts_with(b"X-")));
                    p.properties_mut().peer = metadata;
                    p.tagged |= app;
                }
            }
            // A single-frame message needs no frame list.
            OwnedItem::Frame { body, more: false } if stream.partial.is_empty() => {
                return self.on_message(peer, Message::from(body));
            }
            OwnedItem::Frame { body, more } => {
                stream.partial.push_back(body);
                if !more {
                    let msg = core::mem::take(&mut stream.partial);
                    return self.on_message(peer, msg);
                }
            }
            OwnedItem::Subscribe(topic) => self.on_subscription(peer, topic, true),
            OwnedItem::Cancel(topic) => self.on_subscription(peer, topic, false),
            OwnedItem::Join(group) => return self.on_group(peer, group, true),
            OwnedItem::Leave(group) => return self.on_group(peer, group, false),
        }
        Ok(())
    }

    /// A chunk of bytes from an in-process stream, shared rather than copied: a frame body
    /// that arrives whole behind its header is delivered as it is (see
    /// [`Buffered::receive_shared`](crate::Buffered::receive_shared)). Call only while [`wants_read`](Self::wants_read).
    pub fn handle_received_shared(&mut self, peer: PeerId, now: Instant, chunk: Bytes) {
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        match s.conn.receive_shared(now, chunk) {
            Ok(Some(item)) => {
                if let Err(e) = self.on_item(peer, item) {
                    self.end_stream(peer, Ending::Failed(e), now);
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                self.end_stream(peer, Ending::Failed(e), now);
                return;
            }
        }
        self.process_input(peer, now);
    }
}

/// Where reading a peer's input stopped (see `Socket::process_input`).
pub(super) enum Next {
    /// The receive queue is at RCVHWM.
    Held,
    /// Nothing more is buffered.
    Idle,
    /// An item for the general path.
    Item(OwnedItem),
    /// The connection failed.
    Failed(crate::Error),
}
