//! Routing patterns: which peer a message goes to and which message the application gets.
//!
//! Each socket type is a composition of a few rules: load balancing (PUSH, DEALER, REQ,
//! PAIR), fair queuing (PULL, DEALER, ROUTER, REP, PAIR, SUB), subscription matching (PUB,
//! XPUB) and envelopes (REQ, REP, ROUTER), as libzmq 4.3 applies them.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use bytes::{BufMut, Bytes, BytesMut};

use super::{
    Command, Ending, Message, MonitorEventKind, Outgoing, PeerId, SendError, Sent, Socket,
};
use crate::{Clock, Instant, SocketType};

/// Per-socket state of the routing pattern.
#[derive(Debug)]
pub(crate) struct PatternState {
    /// ROUTER: the next generated routing id (libzmq starts it at a random value).
    next_router_id: u32,
    /// ROUTER: routing id -> peer.
    routes: BTreeMap<Bytes, PeerId>,
    /// REQ: the peer asked and the correlation id, while a reply is awaited.
    awaiting: Option<(PeerId, u32)>,
    /// REQ: the next correlation id (libzmq starts it at a random value).
    next_request_id: u32,
    /// REP: the peer and envelope of the request being answered.
    replying: Option<(PeerId, Message)>,
    /// SUB/XSUB: our subscriptions, reference-counted.
    local_subs: BTreeMap<Bytes, usize>,
    /// PUB/XPUB: how many peers subscribe to each topic.
    topic_peers: BTreeMap<Bytes, usize>,
    /// XPUB: subscription messages (and upstream data) for the application.
    xpub_queue: VecDeque<Message>,
}

impl PatternState {
    pub(crate) fn new(seed: u64) -> PatternState {
        // Two independent-looking values from one seed (splitmix64 step).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        PatternState {
            next_router_id: z as u32,
            routes: BTreeMap::new(),
            awaiting: None,
            next_request_id: (z >> 32) as u32,
            replying: None,
            local_subs: BTreeMap::new(),
            topic_peers: BTreeMap::new(),
            xpub_queue: VecDeque::new(),
        }
    }
}

fn prefixed(prefix: u8, topic: &[u8]) -> Message {
    let mut b = BytesMut::with_capacity(topic.len() + 1);
    b.put_u8(prefix);
    b.put_slice(topic);
    Message::from(b.freeze())
}

impl Socket {
    /// The peer's handshake completed: attach it to the pattern and send what waits.
    pub(super) fn on_handshake(&mut self, peer: PeerId, now: Instant) {
        let Some(p) = self.peers.get(&peer) else {
            return;
        };
        let endpoint = p.endpoint;
        self.monitor(MonitorEventKind::HandshakeSucceeded, 0, endpoint);
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            e.ivl = self.opts.reconnect_ivl.unwrap_or_default();
        }
        match self.ty {
            SocketType::Router => {
                if !self.router_identify(peer, now) {
                    return;
                }
            }
            SocketType::Pair => {
                if self.attached.iter().any(|&other| other != peer) {
                    // PAIR is exclusive: a second peer is refused.
                    self.end_stream(peer, Ending::Dropped, now);
                    return;
                }
                self.attach(peer);
            }
            _ => self.attach(peer),
        }
        if self.probes() {
            self.deliver(peer, Message::from(Bytes::new()));
        }
        if self.ty == SocketType::XPub {
            if let Some(welcome) = self.opts.xpub_welcome_msg.clone() {
                self.deliver(peer, Message::from(welcome));
            }
        }
        let queued = self
            .peers
            .get_mut(&peer)
            .map(|p| core::mem::take(&mut p.out))
            .unwrap_or_default();
        for msg in queued {
            self.deliver(peer, msg);
        }
        if matches!(self.ty, SocketType::Sub | SocketType::XSub) {
            let topics: Vec<Bytes> = self.pattern.local_subs.keys().cloned().collect();
            for topic in topics {
                self.send_subscription(peer, &topic, true);
            }
        }
    }

    /// ROUTER: give the peer its routing id; false if it stays unroutable (duplicate id).
    fn router_identify(&mut self, peer: PeerId, now: Instant) -> bool {
        let Some(p) = self.peers.get(&peer) else {
            return false;
        };
        let announced = p
            .stream
            .as_ref()
            .map(|s| Bytes::copy_from_slice(s.conn.connection().peer_identity()))
            .unwrap_or_default();
        let id = if !p.routing_id.is_empty() {
            p.routing_id.clone()
        } else if !announced.is_empty() {
            announced
        } else {
            let n = self.pattern.next_router_id;
            self.pattern.next_router_id = n.wrapping_add(1);
            let mut id = BytesMut::with_capacity(5);
            id.put_u8(0);
            id.put_u32(n);
            id.freeze()
        };
        if let Some(&old) = self.pattern.routes.get(&id) {
            if old != peer {
                if !self.opts.router_handover {
                    // libzmq keeps the new connection open but never routes to or from it.
                    return false;
                }
                self.end_stream(old, Ending::Dropped, now);
                self.remove_peer(old);
            }
        }
        if let Some(p) = self.peers.get_mut(&peer) {
            p.routing_id = id.clone();
        }
        self.pattern.routes.insert(id, peer);
        self.attach(peer);
        true
    }

    /// The pattern forgets a detached peer.
    pub(super) fn pattern_detach(&mut self, peer: PeerId) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        match self.ty {
            SocketType::Router if self.pattern.routes.get(&p.routing_id) == Some(&peer) => {
                self.pattern.routes.remove(&p.routing_id);
            }
            SocketType::Pub | SocketType::XPub => {
                let topics = core::mem::take(&mut p.subs);
                for topic in topics {
                    self.drop_topic(&topic);
                }
            }
            _ => {}
        }
    }

    /// A complete message arrived from a peer.
    pub(super) fn on_message(&mut self, peer: PeerId, mut msg: Message) {
        let conflate = self.conflate();
        let ty = self.ty;
        let matches = ty != SocketType::Sub || self.sub_matches(&msg);
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if !p.attached {
            return;
        }
        if p.authenticated {
            msg.set_properties(p.properties.clone());
        }
        match ty {
            SocketType::Pub | SocketType::Push => {}
            // Anything but a subscription that an XSUB sends upstream reaches the application.
            SocketType::XPub => self.pattern.xpub_queue.push_back(msg),
            _ if !matches => {}
            _ => {
                if conflate {
                    p.inq.clear();
                }
                p.inq.push_back(msg);
            }
        }
    }

    fn sub_matches(&self, msg: &Message) -> bool {
        let first = msg.first().map(|b| &b[..]).unwrap_or_default();
        self.pattern
            .local_subs
            .keys()
            .any(|topic| first.starts_with(topic))
    }

    /// A peer subscribed or cancelled (PUB and XPUB only).
    pub(super) fn on_subscription(&mut self, peer: PeerId, topic: Bytes, subscribe: bool) {
        if !matches!(self.ty, SocketType::Pub | SocketType::XPub) {
            return;
        }
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if !p.attached {
            return;
        }
        let xpub = self.ty == SocketType::XPub;
        if subscribe {
            let new_for_peer = !p.subs.contains(&topic);
            let mut first = false;
            if new_for_peer {
                p.subs.push(topic.clone());
                let count = self.pattern.topic_peers.entry(topic.clone()).or_insert(0);
                *count += 1;
                first = *count == 1;
            }
            if xpub && (first || self.opts.xpub_verbose) {
                self.pattern.xpub_queue.push_back(prefixed(1, &topic));
            }
        } else if let Some(i) = p.subs.iter().position(|t| *t == topic) {
            p.subs.swap_remove(i);
            self.drop_topic(&topic);
        }
    }

    /// One peer less subscribes to `topic`; XPUB tells the application per its options.
    fn drop_topic(&mut self, topic: &Bytes) {
        let last = match self.pattern.topic_peers.get_mut(topic) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                self.pattern.topic_peers.remove(topic);
                true
            }
            None => false,
        };
        if self.ty == SocketType::XPub && (last || self.opts.xpub_verboser) {
            self.pattern.xpub_queue.push_back(prefixed(0, topic));
        }
    }

    /// Send a SUBSCRIBE/CANCEL to one peer whose handshake is done.
    fn send_subscription(&mut self, peer: PeerId, topic: &[u8], subscribe: bool) {
        let Some(s) = self
            .peers
            .get_mut(&peer)
            .and_then(|p| p.stream.as_mut())
            .filter(|s| s.established)
        else {
            return;
        };
        let r = if subscribe {
            s.conn.send_subscribe(topic)
        } else {
            s.conn.send_cancel(topic)
        };
        if r.is_ok() {
            self.mark_dirty(peer);
        }
    }

    fn broadcast_subscription(&mut self, topic: &[u8], subscribe: bool) {
        for i in 0..self.attached.len() {
            let peer = self.attached[i];
            self.send_subscription(peer, topic, subscribe);
        }
    }

    /// `ZMQ_SUBSCRIBE` (SUB, XSUB): reference-counted; every call is sent to the publishers.
    /// Returns false for other socket types.
    pub fn subscribe(&mut self, topic: &[u8]) -> bool {
        if !matches!(self.ty, SocketType::Sub | SocketType::XSub) {
            return false;
        }
        *self
            .pattern
            .local_subs
            .entry(Bytes::copy_from_slice(topic))
            .or_insert(0) += 1;
        self.broadcast_subscription(topic, true);
        true
    }

    /// `ZMQ_UNSUBSCRIBE` (SUB, XSUB): the last of several equal subscriptions sends CANCEL.
    /// Returns false for other socket types or a topic not subscribed.
    pub fn unsubscribe(&mut self, topic: &[u8]) -> bool {
        if !matches!(self.ty, SocketType::Sub | SocketType::XSub) {
            return false;
        }
        match self.pattern.local_subs.get_mut(topic) {
            Some(count) if *count > 1 => *count -= 1,
            Some(_) => {
                self.pattern.local_subs.remove(topic);
                self.broadcast_subscription(topic, false);
            }
            None => return false,
        }
        true
    }

    // ----- application side ------------------------------------------------------------

    /// Send a message per the socket's pattern. Every frame goes, or none.
    pub fn send(&mut self, msg: impl Into<Message>, now: impl Clock) -> Result<Sent, SendError> {
        let msg = msg.into();
        if self.closing.is_some() {
            return Err(SendError::Closed(msg));
        }
        if msg.is_empty() {
            return Err(SendError::NotSupported(msg));
        }
        match self.ty {
            SocketType::Pub | SocketType::XPub => self.send_pub(msg),
            SocketType::XSub => self.send_xsub(msg),
            SocketType::Req => self.send_req(msg, &now),
            SocketType::Rep => self.send_rep(msg),
            SocketType::Router => self.send_router(msg),
            SocketType::Push | SocketType::Dealer | SocketType::Pair => self.send_lb(msg.into()),
            _ => Err(SendError::NotSupported(msg)),
        }
    }

    /// Send a single-frame message copied from `body`: the same as
    /// `send(Bytes::copy_from_slice(body))`, but where the frame can go out at once
    /// (PUSH, DEALER or PAIR with a connected peer that has room) it is copied straight
    /// into that peer's output, and no message is allocated. A refused send hands back a
    /// message holding a copy.
    #[inline]
    pub fn send_slice(&mut self, body: &[u8], now: impl Clock) -> Result<Sent, SendError> {
        match self.ty {
            SocketType::Push | SocketType::Dealer | SocketType::Pair if self.closing.is_none() => {
                self.send_lb(Outgoing::Frame(body))
            }
            _ => self.send(Bytes::copy_from_slice(body), now),
        }
    }

    /// Round-robin over attached peers with room.
    #[inline]
    fn lb_pick(&mut self) -> Option<PeerId> {
        let n = self.attached.len();
        let start = ring_start(self.lb_cursor, n);
        for i in 0..n {
            let idx = ring_next(start, i, n);
            let peer = self.attached[idx];
            if self.has_room(peer) {
                self.lb_cursor = ring_next(idx, 1, n);
                return Some(peer);
            }
        }
        None
    }

    #[inline]
    fn send_lb(&mut self, out: Outgoing<'_>) -> Result<Sent, SendError> {
        match self.lb_pick() {
            Some(peer) => {
                self.deliver(peer, out);
                Ok(Sent::Queued)
            }
            None => Err(SendError::WouldBlock(out.into_message())),
        }
    }

    fn subscribed(&self, peer: PeerId, first: &[u8]) -> bool {
        self.peers
            .get(&peer)
            .is_some_and(|p| p.subs.iter().any(|t| first.starts_with(t)))
    }

    fn send_pub(&mut self, msg: Message) -> Result<Sent, SendError> {
        let first = msg.first().cloned().unwrap_or_default();
        if self.ty == SocketType::XPub && self.opts.xpub_nodrop {
            let blocked = self
                .attached
                .iter()
                .any(|&p| self.subscribed(p, &first) && !self.has_room(p));
            if blocked {
                return Err(SendError::WouldBlock(msg));
            }
        }
        let mut any = false;
        for i in 0..self.attached.len() {
            let peer = self.attached[i];
            if self.subscribed(peer, &first) && self.has_room(peer) {
                self.deliver(peer, msg.clone());
                any = true;
            }
        }
        Ok(if any { Sent::Queued } else { Sent::Dropped })
    }

    fn send_xsub(&mut self, msg: Message) -> Result<Sent, SendError> {
        if msg.len() == 1 {
            let first = msg.first().cloned().unwrap_or_default();
            match first.first() {
                Some(1) => {
                    self.subscribe(&first[1..]);
                    return Ok(Sent::Queued);
                }
                Some(0) => {
                    self.unsubscribe(&first[1..]);
                    return Ok(Sent::Queued);
                }
                _ => {}
            }
        }
        let mut any = false;
        for i in 0..self.attached.len() {
            let peer = self.attached[i];
            if self.has_room(peer) {
                self.deliver(peer, msg.clone());
                any = true;
            }
        }
        Ok(if any { Sent::Queued } else { Sent::Dropped })
    }

    fn send_req(&mut self, mut msg: Message, now: &impl Clock) -> Result<Sent, SendError> {
        if self.pattern.awaiting.is_some() && !self.opts.req_relaxed {
            return Err(SendError::InvalidState(msg));
        }
        // Whatever waits now (a reply to an earlier request, anything unsolicited) cannot
        // be the reply to this one: libzmq drops every queued message when a request
        // begins. Done before picking the peer: draining may drop a peer that fails.
        self.discard_input(None, now);
        let Some(peer) = self.lb_pick() else {
            return Err(SendError::WouldBlock(msg));
        };
        let id = self.pattern.next_request_id;
        self.pattern.next_request_id = id.wrapping_add(1);
        let mut envelope = Message::new();
        if self.opts.req_correlate {
            // libzmq puts the id in host byte order.
            envelope.push_back(Bytes::copy_from_slice(&id.to_ne_bytes()));
        }
        envelope.push_back(Bytes::new());
        msg.prepend(envelope);
        self.deliver(peer, msg);
        self.pattern.awaiting = Some((peer, id));
        Ok(Sent::Queued)
    }

    fn send_rep(&mut self, mut msg: Message) -> Result<Sent, SendError> {
        let Some((peer, envelope)) = self.pattern.replying.take() else {
            return Err(SendError::InvalidState(msg));
        };
        msg.prepend(envelope);
        if self.peers.get(&peer).is_some_and(|p| p.attached) && self.has_room(peer) {
            self.deliver(peer, msg);
            Ok(Sent::Queued)
        } else {
            Ok(Sent::Dropped)
        }
    }

    fn send_router(&mut self, mut msg: Message) -> Result<Sent, SendError> {
        if msg.len() < 2 {
            // A routing id alone is not a message: libzmq drops it.
            return Ok(Sent::Dropped);
        }
        let id = msg.first().cloned().unwrap_or_default();
        let Some(&peer) = self.pattern.routes.get(&id) else {
            return if self.opts.router_mandatory {
                Err(SendError::HostUnreachable(msg))
            } else {
                Ok(Sent::Dropped)
            };
        };
        if !self.has_room(peer) {
            return if self.opts.router_mandatory {
                Err(SendError::WouldBlock(msg))
            } else {
                Ok(Sent::Dropped)
            };
        }
        msg.pop_front();
        self.deliver(peer, msg);
        Ok(Sent::Queued)
    }

    /// Round-robin over attached peers with a complete message waiting. Also returns the
    /// peer's routing id, read before taking the message: taking it resumes the peer's
    /// input, which may end the peer.
    #[inline]
    fn fq_pop(
        &mut self,
        with_id: bool,
        now: &impl Clock,
    ) -> Option<(PeerId, Option<Bytes>, Message)> {
        // What departed peers left comes first: it arrived before they left.
        if !self.departed.is_empty() {
            if let Some((peer, id, msg)) = self.pop_departed(None) {
                return Some((peer, with_id.then_some(id), msg));
            }
        }
        let rcvhwm = self.rcv_limit();
        let n = self.attached.len();
        let start = ring_start(self.fq_cursor, n);
        for i in 0..n {
            let idx = ring_next(start, i, n);
            let peer = *self.attached.get(idx)?;
            let Some(p) = self.peers.get_mut(&peer) else {
                continue;
            };
            let Some(msg) = p.inq.pop_front() else {
                continue;
            };
            // Only ROUTER needs the routing id: nobody else pays for its clone.
            let id = with_id.then(|| p.routing_id.clone());
            let resume = p.held && p.inq.len() <= rcvhwm / 2;
            self.fq_cursor = ring_next(idx, 1, n);
            if resume {
                self.resume_input(peer, now.now());
            }
            return Some((peer, id, msg));
        }
        None
    }

    /// The oldest message left by a departed peer (any, or `peer`).
    fn pop_departed(&mut self, peer: Option<PeerId>) -> Option<(PeerId, Bytes, Message)> {
        let i = self
            .departed
            .iter()
            .position(|d| peer.is_none_or(|p| p == d.peer))?;
        let d = self.departed.get_mut(i)?;
        let left = d
            .inq
            .pop_front()
            .map(|msg| (d.peer, d.routing_id.clone(), msg));
        if d.inq.is_empty() {
            self.departed.remove(i);
        }
        left
    }

    /// Drop every message waiting from the peers but `keep`, resuming their input.
    fn discard_input(&mut self, keep: Option<PeerId>, now: &impl Clock) {
        self.departed.retain(|d| Some(d.peer) == keep);
        // A snapshot: resuming input may end a peer and so change `attached`.
        let peers: Vec<PeerId> = self
            .attached
            .iter()
            .copied()
            .filter(|&p| Some(p) != keep)
            .collect();
        for peer in peers {
            while self.pop_from(peer, now).is_some() {}
        }
    }

    /// Take the next message from one peer, resuming its input if that frees room.
    fn pop_from(&mut self, peer: PeerId, now: &impl Clock) -> Option<Message> {
        let rcvhwm = self.rcv_limit();
        let p = self.peers.get_mut(&peer)?;
        let msg = p.inq.pop_front()?;
        if p.held && p.inq.len() <= rcvhwm / 2 {
            self.resume_input(peer, now.now());
        }
        Some(msg)
    }

    /// A held peer's queue has drained to half: take its input again.
    #[cold]
    #[inline(never)]
    fn resume_input(&mut self, peer: PeerId, now: Instant) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.held = false;
        }
        self.process_input(peer, now);
        if self.wants_read(peer) {
            self.commands.push_back(Command::Resume { peer });
        }
    }

    /// The next message for the application, if any.
    #[inline]
    pub fn recv(&mut self, now: impl Clock) -> Option<Message> {
        match self.ty {
            SocketType::Push | SocketType::Pub => None,
            SocketType::XPub => self.pattern.xpub_queue.pop_front(),
            SocketType::Req => self.recv_req(&now),
            SocketType::Rep => self.recv_rep(&now),
            SocketType::Router => {
                let (_, id, mut msg) = self.fq_pop(true, &now)?;
                msg.push_front(id.unwrap_or_default());
                Some(msg)
            }
            _ => self.fq_pop(false, &now).map(|(_, _, msg)| msg),
        }
    }

    fn recv_req(&mut self, now: &impl Clock) -> Option<Message> {
        let (asked, id) = self.pattern.awaiting?;
        // Only the peer asked may answer: anything from the others is dropped.
        self.discard_input(Some(asked), now);
        while let Some(mut msg) = self
            .pop_departed(Some(asked))
            .map(|(_, _, msg)| msg)
            .or_else(|| self.pop_from(asked, now))
        {
            if self.opts.req_correlate {
                let matches = msg.first().is_some_and(|f| f[..] == id.to_ne_bytes());
                if !matches {
                    continue;
                }
                msg.pop_front();
            }
            if msg.first().is_none_or(|f| !f.is_empty()) {
                continue;
            }
            msg.pop_front();
            self.pattern.awaiting = None;
            return Some(msg);
        }
        None
    }

    fn recv_rep(&mut self, now: &impl Clock) -> Option<Message> {
        if self.pattern.replying.is_some() {
            return None;
        }
        loop {
            let (peer, _, mut msg) = self.fq_pop(false, now)?;
            // The envelope is everything up to and including the first empty frame.
            let Some(delimiter) = msg.frames().iter().position(|f| f.is_empty()) else {
                continue;
            };
            let body = msg.split_off(delimiter + 1);
            self.pattern.replying = Some((peer, msg));
            return Some(body);
        }
    }

    /// Whether `send` can take a message now (libzmq's `ZMQ_POLLOUT`).
    pub fn can_send(&self) -> bool {
        if self.closing.is_some() {
            return false;
        }
        let lb_room = || self.attached.iter().any(|&p| self.has_room(p));
        match self.ty {
            SocketType::Pull | SocketType::Sub => false,
            SocketType::Pub | SocketType::XPub | SocketType::XSub | SocketType::Router => true,
            SocketType::Req => {
                (self.pattern.awaiting.is_none() || self.opts.req_relaxed) && lb_room()
            }
            SocketType::Rep => self.pattern.replying.is_some(),
            _ => lb_room(),
        }
    }

    /// Whether `recv` has a message (libzmq's `ZMQ_POLLIN`).
    pub fn can_recv(&self) -> bool {
        let queued = |peer: &PeerId| self.peers.get(peer).is_some_and(|p| !p.inq.is_empty());
        let left = |peer: &PeerId| self.departed.iter().any(|d| d.peer == *peer);
        let any = || !self.departed.is_empty() || self.attached.iter().any(queued);
        match self.ty {
            SocketType::Push | SocketType::Pub => false,
            SocketType::XPub => !self.pattern.xpub_queue.is_empty(),
            SocketType::Req => self
                .pattern
                .awaiting
                .is_some_and(|(peer, _)| queued(&peer) || left(&peer)),
            SocketType::Rep => self.pattern.replying.is_none() && any(),
            _ => any(),
        }
    }
}

/// Where a round over `n` peers starts for a cursor (which may exceed `n` after peers
/// left): `cursor % n`, without a division in the common case.
fn ring_start(cursor: usize, n: usize) -> usize {
    if cursor < n {
        cursor
    } else {
        cursor.checked_rem(n).unwrap_or(0)
    }
}

/// The `i`-th position of a round over `n` peers from `start` (`start < n`, `i <= n`).
fn ring_next(start: usize, i: usize, n: usize) -> usize {
    let idx = start + i;
    if idx >= n {
        idx - n
    } else {
        idx
    }
}
