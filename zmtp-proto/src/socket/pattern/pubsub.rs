//! PUB, SUB, XPUB and XSUB: subscriptions upstream, matching messages downstream.

use alloc::collections::{BTreeMap, VecDeque};

use bytes::{BufMut, Bytes, BytesMut};

use super::Pattern;
use crate::socket::{Message, Outgoing, PeerId, SendError, Sent, Socket};
use crate::{Clock, SocketType};

/// Subscriptions on both sides.
#[derive(Debug, Default)]
pub(in crate::socket) struct PubSubState {
    /// SUB/XSUB: our subscriptions, reference-counted.
    local_subs: BTreeMap<Bytes, usize>,
    /// PUB/XPUB: how many peers subscribe to each topic.
    topic_peers: BTreeMap<Bytes, usize>,
    /// XPUB: subscription messages (and upstream data) for the application.
    xpub_queue: VecDeque<Message>,
}

/// PUB/XPUB distribute to matching subscribers; SUB/XSUB subscribe and receive.
pub(in crate::socket) struct PubSub;

impl Pattern for PubSub {
    fn greet(s: &mut Socket, peer: PeerId) {
        if s.ty == SocketType::XPub {
            if let Some(welcome) = s.opts.xpub_welcome_msg.clone() {
                s.deliver(peer, Message::from(welcome));
            }
        }
    }

    fn established(s: &mut Socket, peer: PeerId) {
        if s.rules.subscribes {
            let topics: alloc::vec::Vec<Bytes> =
                s.pattern.pubsub.local_subs.keys().cloned().collect();
            for topic in topics {
                send_subscription(s, peer, &topic, true);
            }
        }
    }

    fn detach(s: &mut Socket, peer: PeerId) {
        if !matches!(s.ty, SocketType::Pub | SocketType::XPub) {
            return;
        }
        let Some(p) = s.peers.get_mut(&peer) else {
            return;
        };
        let topics = core::mem::take(&mut p.subs);
        for topic in topics {
            drop_topic(s, &topic);
        }
    }

    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) -> Result<(), crate::Error> {
        match s.ty {
            SocketType::Pub => {}
            // Anything but a subscription that an XSUB sends upstream reaches the application.
            SocketType::XPub => s.pattern.pubsub.xpub_queue.push_back(msg),
            SocketType::Sub if sub_matches(s, &msg) == s.opts.invert_matching => {}
            _ => s.queue_in(peer, msg),
        }
        Ok(())
    }

    /// A peer subscribed or cancelled (PUB and XPUB only).
    fn on_subscription(s: &mut Socket, peer: PeerId, topic: Bytes, subscribe: bool) {
        if !matches!(s.ty, SocketType::Pub | SocketType::XPub) {
            return;
        }
        let Some(p) = s.peers.get_mut(&peer) else {
            return;
        };
        if !p.attached {
            return;
        }
        let xpub = s.ty == SocketType::XPub;
        let state = &mut s.pattern.pubsub;
        if subscribe {
            let new_for_peer = !p.subs.contains(&topic);
            let mut first = false;
            if new_for_peer {
                p.subs.push(topic.clone());
                let count = state.topic_peers.entry(topic.clone()).or_insert(0);
                *count += 1;
                first = *count == 1;
            }
            if xpub && (first || s.opts.xpub_verbose) {
                state.xpub_queue.push_back(prefixed(1, &topic));
            }
        } else if let Some(i) = p.subs.iter().position(|t| *t == topic) {
            p.subs.swap_remove(i);
            drop_topic(s, &topic);
        }
    }

    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        match s.ty {
            SocketType::Pub | SocketType::XPub => send_pub(s, msg.into()),
            SocketType::XSub => send_xsub(s, msg),
            _ => Err(SendError::NotSupported(msg)),
        }
    }

    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        match s.ty {
            SocketType::Pub => None,
            SocketType::XPub => s.pattern.pubsub.xpub_queue.pop_front(),
            _ => s.fq_pop(false, now).map(|(_, _, msg)| msg),
        }
    }

    /// PUB, XPUB and XSUB always take a message (PUB drops what no one can take); SUB
    /// sends nothing.
    fn can_send(s: &Socket) -> bool {
        s.ty != SocketType::Sub
    }

    fn can_recv(s: &Socket) -> bool {
        match s.ty {
            SocketType::Pub => false,
            SocketType::XPub => !s.pattern.pubsub.xpub_queue.is_empty(),
            _ => s.fq_ready(),
        }
    }
}

impl Socket {
    /// `ZMQ_SUBSCRIBE` (SUB, XSUB): reference-counted; every call is sent to the publishers.
    /// Returns false for other socket types.
    pub fn subscribe(&mut self, topic: &[u8]) -> bool {
        if !self.rules.subscribes {
            return false;
        }
        *self
            .pattern
            .pubsub
            .local_subs
            .entry(Bytes::copy_from_slice(topic))
            .or_insert(0) += 1;
        broadcast_subscription(self, topic, true);
        true
    }

    /// `ZMQ_UNSUBSCRIBE` (SUB, XSUB): the last of several equal subscriptions sends CANCEL.
    /// Returns false for other socket types or a topic not subscribed.
    pub fn unsubscribe(&mut self, topic: &[u8]) -> bool {
        if !self.rules.subscribes {
            return false;
        }
        let subs = &mut self.pattern.pubsub.local_subs;
        match subs.get_mut(topic) {
            Some(count) if *count > 1 => *count -= 1,
            Some(_) => {
                subs.remove(topic);
                broadcast_subscription(self, topic, false);
            }
            None => return false,
        }
        true
    }
}

fn prefixed(prefix: u8, topic: &[u8]) -> Message {
    let mut b = BytesMut::with_capacity(topic.len() + 1);
    b.put_u8(prefix);
    b.put_slice(topic);
    Message::from(b.freeze())
}

fn sub_matches(s: &Socket, msg: &Message) -> bool {
    let first = msg.first().map(|b| &b[..]).unwrap_or_default();
    s.pattern.pubsub.subscribed(first)
}

impl PubSubState {
    /// SUB: whether a message whose first frame is `first` matches one of our
    /// subscriptions (a prefix of it).
    #[inline]
    pub(in crate::socket) fn subscribed(&self, first: &[u8]) -> bool {
        // Subscribed to everything (the empty topic sorts first): the common case.
        if self
            .local_subs
            .first_key_value()
            .is_some_and(|(t, _)| t.is_empty())
        {
            return true;
        }
        self.local_subs.keys().any(|topic| first.starts_with(topic))
    }
}

/// One peer less subscribes to `topic`; XPUB tells the application per its options.
fn drop_topic(s: &mut Socket, topic: &Bytes) {
    let state = &mut s.pattern.pubsub;
    let last = match state.topic_peers.get_mut(topic) {
        Some(count) if *count > 1 => {
            *count -= 1;
            false
        }
        Some(_) => {
            state.topic_peers.remove(topic);
            true
        }
        None => false,
    };
    if s.ty == SocketType::XPub && (last || s.opts.xpub_verboser) {
        state.xpub_queue.push_back(prefixed(0, topic));
    }
}

/// Send a SUBSCRIBE/CANCEL to one peer whose handshake is done.
fn send_subscription(s: &mut Socket, peer: PeerId, topic: &[u8], subscribe: bool) {
    let Some(link) = s.established_link(peer) else {
        return;
    };
    let r = if subscribe {
        link.conn.send_subscribe(topic)
    } else {
        link.conn.send_cancel(topic)
    };
    if r.is_ok() {
        s.mark_dirty(peer);
    }
}

fn broadcast_subscription(s: &mut Socket, topic: &[u8], subscribe: bool) {
    for i in 0..s.attached.len() {
        let peer = s.attached[i];
        send_subscription(s, peer, topic, subscribe);
    }
}

fn subscribed(s: &Socket, peer: PeerId, first: &[u8]) -> bool {
    s.peers
        .get(&peer)
        .is_some_and(|p| p.subs.iter().any(|t| first.starts_with(t)))
}

/// PUB and XPUB: a copy to every subscribed peer with room (XPUB_NODROP: none unless all
/// have room). A borrowed body (`send_slice`) is copied into each peer's output, so that a
/// small message is never allocated.
pub(in crate::socket) fn send_pub(s: &mut Socket, out: Outgoing<'_>) -> Result<Sent, SendError> {
    let first = out.first();
    // INVERT_MATCHING: the peers whose subscriptions do not match take the message.
    let invert = s.opts.invert_matching;
    if s.ty == SocketType::XPub && s.opts.xpub_nodrop {
        let blocked = s
            .attached
            .iter()
            .any(|&p| subscribed(s, p, first) != invert && !s.has_room(p));
        if blocked {
            return Err(SendError::WouldBlock(out.into_message()));
        }
    }
    let mut any = false;
    for i in 0..s.attached.len() {
        let peer = s.attached[i];
        if subscribed(s, peer, first) != invert && s.has_room(peer) {
            s.deliver(peer, out.share());
            any = true;
        }
    }
    Ok(if any { Sent::Queued } else { Sent::Dropped })
}

fn send_xsub(s: &mut Socket, msg: Message) -> Result<Sent, SendError> {
    if msg.len() == 1 {
        let first = msg.first().cloned().unwrap_or_default();
        match first.first() {
            Some(1) => {
                s.subscribe(&first[1..]);
                return Ok(Sent::Queued);
            }
            Some(0) => {
                s.unsubscribe(&first[1..]);
                return Ok(Sent::Queued);
            }
            _ => {}
        }
    }
    let mut any = false;
    for i in 0..s.attached.len() {
        let peer = s.attached[i];
        if s.has_room(peer) {
            s.deliver(peer, msg.clone());
            any = true;
        }
    }
    Ok(if any { Sent::Queued } else { Sent::Dropped })
}

impl Socket {
    /// How many distinct topics are subscribed: on SUB and XSUB its own subscriptions, on
    /// PUB and XPUB those of all its peers together (libzmq's `ZMQ_TOPICS_COUNT`); 0 on
    /// other types.
    pub fn topics_count(&self) -> usize {
        match self.ty {
            SocketType::Sub | SocketType::XSub => self.pattern.pubsub.local_subs.len(),
            SocketType::Pub | SocketType::XPub => self.pattern.pubsub.topic_peers.len(),
            _ => 0,
        }
    }
}
