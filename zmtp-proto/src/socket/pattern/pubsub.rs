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
    /// XPUB: subscription messages (and upstream data) for the application, each with
    /// where it came from.
    xpub_queue: VecDeque<(Message, Origin)>,
    /// XPUB_MANUAL: the topics each peer subscribed to by its own messages (which the
    /// application may have routed otherwise); they become unsubscriptions when it leaves.
    manual_subs: BTreeMap<PeerId, alloc::vec::Vec<Bytes>>,
    /// XPUB_MANUAL: the peer whose subscription message the application received last
    /// (while it is attached): the XPUB's own `subscribe` and `unsubscribe` apply to it.
    last_peer: Option<PeerId>,
}

/// Where a message in an XPUB's queue came from (manual mode reads it on `recv`).
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// Data a peer sent upstream.
    Data,
    /// A subscription or unsubscription message of this peer.
    Peer(PeerId),
    /// An unsubscription passed up for a peer that left.
    Departed,
}

/// What removing one peer's subscription to a topic did (libzmq passes an
/// unsubscription up unless others remain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Removed {
    /// The peer was not subscribed to it.
    NotFound,
    /// Other peers still subscribe to it.
    Remain,
    /// It was the last peer subscribed to it.
    Last,
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
        let manual = manual(s);
        for topic in topics {
            let last = forget_topic(&mut s.pattern.pubsub, &topic) == Removed::Last;
            if !manual && s.ty == SocketType::XPub && (last || s.opts.xpub_verboser) {
                let state = &mut s.pattern.pubsub;
                state
                    .xpub_queue
                    .push_back((prefixed(0, &topic), Origin::Departed));
            }
        }
        // Manual mode: an unsubscription for each topic the peer had subscribed itself.
        let state = &mut s.pattern.pubsub;
        let own = state.manual_subs.remove(&peer).unwrap_or_default();
        if manual {
            for topic in &own {
                let unsub = prefixed(0, topic);
                state.xpub_queue.push_back((unsub, Origin::Departed));
            }
        }
        if !own.is_empty() || state.last_peer == Some(peer) {
            state.last_peer = None;
        }
    }

    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) -> Result<(), crate::Error> {
        match s.ty {
            // Several frames: each may be a subscription (a single frame is one already
            // when it is, see `Connection`).
            SocketType::Pub | SocketType::XPub if msg.len() > 1 => {
                on_frames(s, peer, msg);
            }
            SocketType::Pub => {}
            // Anything but a subscription that an XSUB sends upstream reaches the application.
            SocketType::XPub => s.pattern.pubsub.xpub_queue.push_back((msg, Origin::Data)),
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
        if !s.peers.get(&peer).is_some_and(|p| p.attached) {
            return;
        }
        let notice = (prefixed(u8::from(subscribe), &topic), Origin::Peer(peer));
        if manual(s) {
            // Recorded for the peer's departure and passed up; the application decides.
            let own = s.pattern.pubsub.manual_subs.entry(peer).or_default();
            match own.iter().position(|t| *t == topic) {
                None if subscribe => own.push(topic),
                Some(i) if !subscribe => {
                    own.swap_remove(i);
                }
                _ => {}
            }
            s.pattern.pubsub.xpub_queue.push_back(notice);
            return;
        }
        let notify = if subscribe {
            add_route(s, peer, &topic) || s.opts.xpub_verbose || s.opts.xpub_verboser
        } else {
            // As libzmq: also a topic the peer had not subscribed to is passed up.
            remove_route(s, peer, &topic) != Removed::Remain || s.opts.xpub_verboser
        };
        if s.ty == SocketType::XPub && notify {
            s.pattern.pubsub.xpub_queue.push_back(notice);
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
            SocketType::XPub => {
                let (msg, origin) = s.pattern.pubsub.xpub_queue.pop_front()?;
                if manual(s) {
                    match origin {
                        // Only a peer still there can be given subscriptions.
                        Origin::Peer(peer) => {
                            let here = s.attached.contains(&peer);
                            s.pattern.pubsub.last_peer = here.then_some(peer);
                        }
                        Origin::Departed => s.pattern.pubsub.last_peer = None,
                        Origin::Data => {}
                    }
                }
                Some(msg)
            }
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
    /// Whether [`subscribe`](Self::subscribe) and [`unsubscribe`](Self::unsubscribe)
    /// apply: on SUB and XSUB, and on an XPUB in manual mode (`xpub_manual` or
    /// `xpub_manual_last_value`).
    pub fn takes_subscriptions(&self) -> bool {
        self.rules.subscribes || manual(self)
    }

    /// `ZMQ_SUBSCRIBE` (SUB, XSUB): reference-counted; every call is sent to the publishers.
    /// On an XPUB in manual mode: the peer whose subscription message was received last
    /// gets `topic` among its subscriptions (nothing happens without such a peer, as in
    /// libzmq). Returns false for other socket types.
    pub fn subscribe(&mut self, topic: &[u8]) -> bool {
        if manual(self) {
            if let Some(peer) = self.pattern.pubsub.last_peer {
                add_route(self, peer, &Bytes::copy_from_slice(topic));
            }
            return true;
        }
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

    /// `ZMQ_UNSUBSCRIBE` (SUB, XSUB): the last of several equal subscriptions sends CANCEL
    /// (with `xsub_verbose_unsubscribe`, every call does). On an XPUB in manual mode: the
    /// peer whose subscription message was received last loses `topic`. Returns false for
    /// other socket types or a topic not subscribed.
    pub fn unsubscribe(&mut self, topic: &[u8]) -> bool {
        if manual(self) {
            if let Some(peer) = self.pattern.pubsub.last_peer {
                remove_route(self, peer, topic);
            }
            return true;
        }
        if !self.rules.subscribes {
            return false;
        }
        let verbose = self.opts.xsub_verbose_unsubscribe;
        let subs = &mut self.pattern.pubsub.local_subs;
        match subs.get_mut(topic) {
            Some(count) if *count > 1 => {
                *count -= 1;
                if verbose {
                    broadcast_subscription(self, topic, false);
                }
                true
            }
            Some(_) => {
                subs.remove(topic);
                broadcast_subscription(self, topic, false);
                true
            }
            None => {
                if verbose {
                    broadcast_subscription(self, topic, false);
                }
                false
            }
        }
    }
}

/// An XPUB in manual mode (`ZMQ_XPUB_MANUAL` or `ZMQ_XPUB_MANUAL_LAST_VALUE`).
fn manual(s: &Socket) -> bool {
    s.ty == SocketType::XPub && (s.opts.xpub_manual || s.opts.xpub_manual_last_value)
}

/// Which frames of a message of several are subscriptions (first byte 1) or
/// unsubscriptions (0), as libzmq reads them: every frame starting so, or with
/// `ONLY_FIRST_SUBSCRIBE` the later frames only when the first one is one.
fn subscription_frames(frames: &[Bytes], only_first: bool) -> impl Iterator<Item = bool> + '_ {
    let is_sub = |f: &Bytes| matches!(f.first(), Some(0 | 1));
    let every = !only_first || frames.first().is_some_and(is_sub);
    frames
        .iter()
        .enumerate()
        .map(move |(i, f)| (i == 0 || every) && is_sub(f))
}

/// A message of several frames from a subscriber (PUB, XPUB): its subscription frames act
/// as such; the others reach an XPUB's application as one message.
fn on_frames(s: &mut Socket, peer: PeerId, msg: Message) {
    let subs: alloc::vec::Vec<bool> =
        subscription_frames(msg.frames(), s.opts.only_first_subscribe).collect();
    let mut data = Message::new();
    for (frame, sub) in msg.into_frames().into_iter().zip(subs) {
        if sub {
            s.on_subscription(peer, frame.slice(1..), frame[0] == 1);
        } else {
            data.push_back(frame);
        }
    }
    if s.ty != SocketType::XPub || data.is_empty() {
        return;
    }
    if let Some(p) = s.peers.get(&peer).filter(|p| p.tagged) {
        data.set_properties(p.properties.clone());
    }
    s.pattern.pubsub.xpub_queue.push_back((data, Origin::Data));
}

/// A peer subscribes to `topic` (PUB, XPUB); whether it is the first peer to.
fn add_route(s: &mut Socket, peer: PeerId, topic: &Bytes) -> bool {
    let Some(p) = s.peers.get_mut(&peer) else {
        return false;
    };
    if p.subs.contains(topic) {
        return false;
    }
    p.subs.push(topic.clone());
    let count = s
        .pattern
        .pubsub
        .topic_peers
        .entry(topic.clone())
        .or_insert(0);
    *count += 1;
    *count == 1
}

/// A peer no longer subscribes to `topic` (PUB, XPUB).
fn remove_route(s: &mut Socket, peer: PeerId, topic: &[u8]) -> Removed {
    let Some(p) = s.peers.get_mut(&peer) else {
        return Removed::NotFound;
    };
    let Some(i) = p.subs.iter().position(|t| t[..] == *topic) else {
        return Removed::NotFound;
    };
    let topic = p.subs.swap_remove(i);
    forget_topic(&mut s.pattern.pubsub, &topic)
}

fn prefixed(prefix: u8, topic: &[u8]) -> Message {
    let mut b = BytesMut::with_capacity(topic.len() + 1);
    b.put_u8(prefix);
    b.put_slice(topic);
    Message::from(b.freeze())
}

/// One subscription more (or less) to `topic` among ours, with nothing sent.
fn count_local(state: &mut PubSubState, topic: &[u8], subscribe: bool) {
    if subscribe {
        *state
            .local_subs
            .entry(Bytes::copy_from_slice(topic))
            .or_insert(0) += 1;
    } else if let Some(count) = state.local_subs.get_mut(topic) {
        *count -= 1;
        if *count == 0 {
            state.local_subs.remove(topic);
        }
    }
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

/// One peer less subscribes to `topic` (its own list is updated already).
fn forget_topic(state: &mut PubSubState, topic: &Bytes) -> Removed {
    match state.topic_peers.get_mut(topic) {
        Some(count) if *count > 1 => {
            *count -= 1;
            Removed::Remain
        }
        Some(_) => {
            state.topic_peers.remove(topic);
            Removed::Last
        }
        None => Removed::NotFound,
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
    // XPUB_MANUAL_LAST_VALUE: the first message after a subscription message was
    // received goes to that subscription's peer only.
    let only = match s.ty == SocketType::XPub && s.opts.xpub_manual_last_value {
        true => s.pattern.pubsub.last_peer.take(),
        false => None,
    };
    let takes = |s: &Socket, p: PeerId| {
        subscribed(s, p, first) != invert && only.is_none_or(|only| only == p)
    };
    if s.ty == SocketType::XPub && s.opts.xpub_nodrop {
        let blocked = s.attached.iter().any(|&p| takes(s, p) && !s.has_room(p));
        if blocked {
            return Err(SendError::WouldBlock(out.into_message()));
        }
    }
    let mut any = false;
    for i in 0..s.attached.len() {
        let peer = s.attached[i];
        if takes(s, peer) && s.has_room(peer) {
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
    } else {
        // Several frames go as they are, and those that are subscriptions (as an XPUB
        // reads them) count among ours.
        let subs = subscription_frames(msg.frames(), s.opts.only_first_subscribe);
        for (frame, sub) in msg.frames().iter().zip(subs) {
            if sub {
                count_local(&mut s.pattern.pubsub, &frame[1..], frame[0] == 1);
            }
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
