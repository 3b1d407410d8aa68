//! Routing patterns: which peer a message goes to and which message the application gets.
//!
//! Every socket type belongs to one family, and each family is one module implementing
//! [`Pattern`]: load balancing and fair queuing ([`lb`]: PUSH, PULL, DEALER), publish and
//! subscribe ([`pubsub`]: PUB, SUB, XPUB, XSUB), requests and replies ([`reqrep`]: REQ,
//! REP), routing by id ([`router`]: ROUTER), raw streams by id ([`stream`]: STREAM) and
//! the exclusive pair ([`pair`]: PAIR), as
//! libzmq 4.3 applies them; and the draft types: SERVER and PEER ([`server`]: routing by
//! numbered peers), RADIO and DISH ([`radio`]: groups), DGRAM ([`dgram`]: addressed datagrams over udp), while CLIENT, SCATTER, GATHER
//! and CHANNEL are the load-balancing and pair families restricted to single-frame
//! messages (the `single_frame` rule). The families are built from the blocks in [`queue`] (round
//! robin over attached peers, fair queuing with the messages of departed peers first).
//!
//! The one place a socket type is mapped to its behaviour is [`Rules::of`] (static
//! properties: which options apply, which fast paths are safe) and the [`dispatch!`]
//! macro (the family's hooks). A new socket type is a new module here, a [`Family`]
//! variant, a row of `Rules::of` and an arm of `dispatch!`.

pub(super) mod dgram;
pub(super) mod lb;
pub(super) mod pair;
pub(super) mod pubsub;
pub(super) mod queue;
pub(super) mod radio;
pub(super) mod reqrep;
pub(super) mod router;
pub(super) mod server;
pub(super) mod stream;

use super::{Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, Instant, SocketType};

/// The routing behaviour of a family of socket types. Each hook is called with the
/// socket; the defaults are what most families do.
pub(super) trait Pattern {
    /// A peer's handshake completed: make it routable. False if it stays unroutable
    /// (or was refused and closed).
    fn attach(s: &mut Socket, peer: PeerId, _now: Instant) -> bool {
        s.attach(peer);
        true
    }

    /// A connect peer was made (`connect` without `IMMEDIATE`): make it routable now, so
    /// that what is sent to it waits for its connection, as libzmq's pipe does (which
    /// then outlives reconnections). By default it is attached; a pattern that routes by
    /// id attaches it only if it can name it before any handshake.
    fn connecting(s: &mut Socket, peer: PeerId) {
        s.attach(peer);
    }

    /// What goes to a newly routable peer before the messages waiting for it.
    fn greet(_s: &mut Socket, _peer: PeerId) {}

    /// After a new peer's waiting messages went out (SUB: its subscriptions).
    fn established(_s: &mut Socket, _peer: PeerId) {}

    /// The pattern forgets a peer that left (its routes, its subscriptions).
    fn detach(_s: &mut Socket, _peer: PeerId) {}

    /// A complete message arrived from an attached peer (properties already set). An
    /// error fails the peer's connection.
    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) -> Result<(), crate::Error> {
        s.queue_in(peer, msg);
        Ok(())
    }

    /// A peer subscribed or cancelled a subscription.
    fn on_subscription(_s: &mut Socket, _peer: PeerId, _topic: crate::Bytes, _subscribe: bool) {}

    /// A peer joined or left a group (JOIN, LEAVE). An error fails its connection.
    fn on_group(
        _s: &mut Socket,
        _peer: PeerId,
        _group: crate::Bytes,
        _join: bool,
    ) -> Result<(), crate::Error> {
        Ok(())
    }

    /// Send a message (not empty; the socket is not closing).
    fn send(s: &mut Socket, msg: Message, now: &impl Clock) -> Result<Sent, SendError>;

    /// The next message for the application.
    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        s.fq_pop(false, now).map(|(_, _, msg)| msg)
    }

    /// Whether `send` can take a message now (the socket is not closing).
    fn can_send(s: &Socket) -> bool {
        s.lb_room()
    }

    /// Whether `recv` has a message.
    fn can_recv(s: &Socket) -> bool {
        s.fq_ready()
    }
}

/// The most messages [`Socket::recv_batch_len`] allows.
const RECV_BATCH: usize = 256;

/// The families, one module each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// PUSH, PULL, DEALER.
    LoadBalance,
    /// PUB, SUB, XPUB, XSUB.
    PubSub,
    /// REQ, REP.
    ReqRep,
    /// ROUTER.
    Router,
    /// PAIR, CHANNEL.
    Pair,
    /// SERVER, PEER.
    Server,
    /// RADIO, DISH.
    Radio,
    /// DGRAM: `[address, body]` over udp; over streams peers connect, but nothing is
    /// sent or received.
    Dgram,
    /// STREAM: raw streams addressed by routing id.
    Stream,
}

/// What a socket type is, as the rest of the socket needs to know it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    /// The family whose hooks route its messages.
    pub(super) family: Family,
    /// Honours `CONFLATE` (libzmq: DEALER, PULL, PUSH, PUB, SUB only).
    pub(super) conflate: bool,
    /// Sends an empty message first to each new peer under `PROBE_ROUTER`.
    pub(super) probes: bool,
    /// A whole single-frame message from a peer only joins its queue: no topic filter,
    /// not a subscription channel (the receive fast path may take it).
    pub(super) plain_input: bool,
    /// `send_slice` goes straight to load balancing (no envelope, no routing id).
    pub(super) direct_send: bool,
    /// `recv` is fair queuing and nothing else (no envelope, no routing id, no XPUB
    /// queue): `recv_many` may take a lone peer's queue in one move.
    pub(super) plain_recv: bool,
    /// Has local subscriptions (`subscribe`, `unsubscribe`).
    pub(super) subscribes: bool,
    /// Only single-frame messages (the draft types): a multipart send is refused, a
    /// multipart message from a peer dropped whole.
    pub(super) single_frame: bool,
    /// Sends `HELLO_MSG` to each new peer (ROUTER, DEALER, SERVER, CLIENT, PEER).
    pub(super) hello: bool,
    /// Receives `DISCONNECT_MSG` when an accepted peer is lost (ROUTER, SERVER, PEER).
    pub(super) disconnect_msg: bool,
    /// Receives `HICCUP_MSG` when a connect peer is lost (DEALER, CLIENT, PEER).
    pub(super) hiccup_msg: bool,
}

impl Rules {
    /// SERVER and PEER: each peer gets a number as its routing id.
    pub(super) fn numbers_peers(&self) -> bool {
        self.family == Family::Server
    }

    /// The rules of a socket type: its row of the table.
    pub(super) const fn of(ty: SocketType) -> Rules {
        const BASE: Rules = Rules {
            family: Family::LoadBalance,
            conflate: false,
            probes: false,
            plain_input: true,
            direct_send: false,
            plain_recv: false,
            subscribes: false,
            single_frame: false,
            hello: false,
            disconnect_msg: false,
            hiccup_msg: false,
        };
        match ty {
            SocketType::Push => Rules {
                conflate: true,
                plain_input: false,
                direct_send: true,
                ..BASE
            },
            SocketType::Pull => Rules {
                conflate: true,
                plain_recv: true,
                ..BASE
            },
            SocketType::Dealer => Rules {
                conflate: true,
                probes: true,
                hello: true,
                hiccup_msg: true,
                direct_send: true,
                plain_recv: true,
                ..BASE
            },
            SocketType::Pub => Rules {
                family: Family::PubSub,
                conflate: true,
                plain_input: false,
                ..BASE
            },
            SocketType::Sub => Rules {
                family: Family::PubSub,
                conflate: true,
                plain_input: false,
                plain_recv: true,
                subscribes: true,
                ..BASE
            },
            SocketType::XPub => Rules {
                family: Family::PubSub,
                plain_input: false,
                ..BASE
            },
            SocketType::XSub => Rules {
                family: Family::PubSub,
                plain_recv: true,
                subscribes: true,
                ..BASE
            },
            SocketType::Req => Rules {
                family: Family::ReqRep,
                probes: true,
                ..BASE
            },
            SocketType::Rep => Rules {
                family: Family::ReqRep,
                ..BASE
            },
            SocketType::Router => Rules {
                family: Family::Router,
                probes: true,
                hello: true,
                disconnect_msg: true,
                ..BASE
            },
            SocketType::Pair => Rules {
                family: Family::Pair,
                direct_send: true,
                plain_recv: true,
                ..BASE
            },
            SocketType::Client => Rules {
                hello: true,
                hiccup_msg: true,
                direct_send: true,
                plain_recv: true,
                single_frame: true,
                ..BASE
            },
            SocketType::Scatter => Rules {
                plain_input: false,
                direct_send: true,
                single_frame: true,
                ..BASE
            },
            SocketType::Gather => Rules {
                plain_recv: true,
                single_frame: true,
                ..BASE
            },
            SocketType::Channel => Rules {
                family: Family::Pair,
                direct_send: true,
                plain_recv: true,
                single_frame: true,
                ..BASE
            },
            SocketType::Server => Rules {
                family: Family::Server,
                single_frame: true,
                hello: true,
                disconnect_msg: true,
                ..BASE
            },
            SocketType::Peer => Rules {
                family: Family::Server,
                single_frame: true,
                hello: true,
                disconnect_msg: true,
                hiccup_msg: true,
                ..BASE
            },
            SocketType::Radio => Rules {
                family: Family::Radio,
                plain_input: false,
                single_frame: true,
                ..BASE
            },
            SocketType::Dish => Rules {
                family: Family::Radio,
                plain_input: false,
                ..BASE
            },
            SocketType::Stream => Rules {
                family: Family::Stream,
                plain_input: false,
                ..BASE
            },
            _ => Rules {
                family: Family::Dgram,
                plain_input: false,
                ..BASE
            },
        }
    }
}

/// Call a [`Pattern`] hook of the socket's family.
macro_rules! dispatch {
    ($s:expr, $hook:ident($($arg:expr),*)) => {
        match $s.rules.family {
            Family::LoadBalance => lb::LoadBalance::$hook($($arg),*),
            Family::PubSub => pubsub::PubSub::$hook($($arg),*),
            Family::ReqRep => reqrep::ReqRep::$hook($($arg),*),
            Family::Router => router::Router::$hook($($arg),*),
            Family::Pair => pair::Pair::$hook($($arg),*),
            Family::Server => server::Server::$hook($($arg),*),
            Family::Radio => radio::Radio::$hook($($arg),*),
            Family::Dgram => dgram::Dgram::$hook($($arg),*),
            Family::Stream => stream::Stream::$hook($($arg),*),
        }
    };
}

/// Per-socket state of the patterns that keep any.
#[derive(Debug)]
pub(crate) struct PatternState {
    pub(super) router: router::RouterState,
    pub(super) reqrep: reqrep::ReqRepState,
    pub(super) pubsub: pubsub::PubSubState,
    pub(super) server: server::ServerState,
    pub(super) dish: radio::DishState,
    pub(super) stream: stream::StreamState,
}

impl PatternState {
    pub(crate) fn new(seed: u64) -> PatternState {
        // Two independent-looking values from one seed (splitmix64 step).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        PatternState {
            router: router::RouterState::new(z as u32),
            reqrep: reqrep::ReqRepState::new((z >> 32) as u32),
            pubsub: pubsub::PubSubState::default(),
            server: server::ServerState::new((z as u32).rotate_left(16) ^ (z >> 48) as u32),
            dish: radio::DishState::default(),
            stream: stream::StreamState::new((z >> 24) as u32 ^ (z as u32).rotate_left(7)),
        }
    }
}

impl Socket {
    /// The peer's handshake completed: attach it to the pattern and send what waits.
    pub(super) fn on_handshake(&mut self, peer: PeerId, now: Instant) {
        let Some(p) = self.peers.get(&peer) else {
            return;
        };
        let endpoint = p.endpoint;
        self.monitor_peer(super::MonitorEventKind::HandshakeSucceeded, 0, peer);
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            e.ivl = self.opts.reconnect_ivl.unwrap_or_default();
        }
        if !dispatch!(self, attach(self, peer, now)) {
            return;
        }
        let subscribes_all = self.peers.get(&peer).is_some_and(|p| {
            p.stream
                .as_ref()
                .is_some_and(|l| l.conn.connection().peer_subscribes_all())
        });
        if subscribes_all {
            // An unversioned ZMTP 1.0 peer cannot subscribe: as libzmq, a PUB sends it
            // everything (and an XPUB reads that subscription as if it had come).
            self.on_subscription(peer, crate::Bytes::new(), true);
        }
        if self.probes() {
            self.deliver(peer, Message::from(crate::Bytes::new()));
        }
        // HELLO_MSG: right after the probe, ahead of what waited for the connection.
        if let Some(hello) = self.opts.hello_msg.clone().filter(|_| self.rules.hello) {
            self.deliver(peer, Message::from(hello));
        }
        dispatch!(self, greet(self, peer));
        let queued = self
            .peers
            .get_mut(&peer)
            .map(|p| core::mem::take(&mut p.out))
            .unwrap_or_default();
        for msg in queued {
            self.deliver(peer, msg);
        }
        dispatch!(self, established(self, peer));
    }

    /// A connect peer was made (`connect` without `IMMEDIATE`): the pattern may make it
    /// routable before it connects.
    pub(super) fn pattern_connecting(&mut self, peer: PeerId) {
        dispatch!(self, connecting(self, peer));
    }

    /// The pattern forgets a detached peer.
    pub(super) fn pattern_detach(&mut self, peer: PeerId) {
        dispatch!(self, detach(self, peer));
    }

    /// A complete message arrived from a peer. An error fails the peer's connection.
    pub(super) fn on_message(
        &mut self,
        peer: PeerId,
        mut msg: Message,
    ) -> Result<(), crate::Error> {
        let Some(p) = self.peers.get_mut(&peer) else {
            return Ok(());
        };
        if !p.attached {
            return Ok(());
        }
        if self.rules.single_frame && msg.len() != 1 {
            // A draft type drops a multipart message whole, as libzmq does.
            return Ok(());
        }
        if p.tagged {
            msg.set_properties(p.properties.clone());
        }
        dispatch!(self, on_message(self, peer, msg))
    }

    /// A peer joined or left a group. An error fails the peer's connection.
    pub(super) fn on_group(
        &mut self,
        peer: PeerId,
        group: crate::Bytes,
        join: bool,
    ) -> Result<(), crate::Error> {
        dispatch!(self, on_group(self, peer, group, join))
    }

    /// A peer subscribed or cancelled.
    pub(super) fn on_subscription(&mut self, peer: PeerId, topic: crate::Bytes, subscribe: bool) {
        dispatch!(self, on_subscription(self, peer, topic, subscribe));
    }

    // ----- application side ------------------------------------------------------------

    /// Send a message per the socket's pattern. Every frame goes, or none.
    #[inline]
    pub fn send(&mut self, msg: impl Into<Message>, now: impl Clock) -> Result<Sent, SendError> {
        let msg = msg.into();
        if self.closing.is_some() {
            return Err(SendError::Closed(msg));
        }
        if msg.is_empty() {
            return Err(SendError::NotSupported(msg));
        }
        if self.rules.single_frame && msg.len() != 1 {
            return Err(SendError::SingleFrameOnly(msg));
        }
        dispatch!(self, send(self, msg, &now))
    }

    /// Send a single-frame message copied from `body`: the same as
    /// `send(Bytes::copy_from_slice(body))`, but where the frame can go out at once
    /// (PUSH, DEALER or PAIR with a connected peer that has room; PUB and XPUB to their
    /// subscribed peers, a body under [`SHARED_BODY_MIN`](crate::SHARED_BODY_MIN)) it is
    /// copied straight into the peers' output, and no message is allocated. A refused send
    /// hands back a message holding a copy.
    #[inline]
    pub fn send_slice(&mut self, body: &[u8], now: impl Clock) -> Result<Sent, SendError> {
        if self.rules.direct_send && self.closing.is_none() {
            self.send_lb(super::Outgoing::Frame(body))
        } else if matches!(self.ty, SocketType::Pub | SocketType::XPub)
            && self.closing.is_none()
            && body.len() < crate::SHARED_BODY_MIN
        {
            pubsub::send_pub(self, super::Outgoing::Frame(body))
        } else {
            self.send(crate::Bytes::copy_from_slice(body), now)
        }
    }

    /// Send single-frame messages copied from `bodies`, in order, as
    /// [`send_slice`](Self::send_slice) sends each, until one would block; returns how
    /// many were taken (each `Ok` of `send_slice`). A refusal other than `WouldBlock` is
    /// returned when it comes first; after some were taken, the batch just stops there.
    ///
    /// A driver that takes the socket behind a lock sends a whole batch under one lock
    /// this way.
    pub fn send_slices<B: AsRef<[u8]>>(
        &mut self,
        bodies: &[B],
        now: impl Clock,
    ) -> Result<usize, SendError> {
        let mut n = 0;
        if self.rules.direct_send && self.closing.is_none() {
            n = self.send_lb_lone(bodies);
        }
        for body in bodies.iter().skip(n) {
            match self.send_slice(body.as_ref(), || now.now()) {
                Ok(_) => n += 1,
                Err(SendError::WouldBlock(_)) => break,
                Err(e) if n == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(n)
    }

    /// The next message for the application, if any.
    ///
    /// A type whose receiving is fair queuing and nothing else (PULL, SUB, XSUB, DEALER,
    /// PAIR and the draft CLIENT, GATHER, CHANNEL) reading from one peer takes the
    /// message straight from that peer's queue: a receiver calling `recv` per message
    /// pays little more than [`recv_many`](Self::recv_many) does per message.
    #[inline]
    pub fn recv(&mut self, now: impl Clock) -> Option<Message> {
        if self.rules.plain_recv {
            if let Some(msg) = self.fq_pop_lone(&now) {
                return Some(msg);
            }
        }
        dispatch!(self, recv(self, &now))
    }

    /// Up to `max` messages for the application, appended to `out` in the order `recv`
    /// would give them (fair-queued per message, as `recv`); returns how many.
    ///
    /// A driver that takes the socket behind a lock takes a whole batch under one lock
    /// this way, instead of one lock round trip per message.
    pub fn recv_many(
        &mut self,
        out: &mut alloc::vec::Vec<Message>,
        max: usize,
        now: impl Clock,
    ) -> usize {
        let mut n = 0;
        if self.rules.plain_recv {
            n = self.fq_drain_lone(out, max, &now);
        }
        while n < max {
            let Some(msg) = dispatch!(self, recv(self, &now)) else {
                break;
            };
            out.push(msg);
            n += 1;
        }
        n
    }

    /// How many messages a driver may take at once with [`recv_many`](Self::recv_many)
    /// and hand out one per `recv` of its own, for the same result as calling `recv` each
    /// time: more than 1 only for a type whose receiving is plain fair queuing (PULL, SUB,
    /// XSUB, DEALER, PAIR, and the draft CLIENT, GATHER, CHANNEL) without CONFLATE. What
    /// is taken counts as received for RCVHWM, so the batch is a quarter of RCVHWM, at
    /// most 256 messages.
    pub fn recv_batch_len(&self) -> usize {
        if !self.rules.plain_recv || self.conflate() {
            return 1;
        }
        match self.rcv_limit() {
            0 => RECV_BATCH,
            hwm => (hwm / 4).clamp(1, RECV_BATCH),
        }
    }

    /// Whether the socket's type may receive in batches: its
    /// [`recv_batch_len`](Self::recv_batch_len) exceeds 1 unless CONFLATE or a small
    /// RCVHWM keep it at 1.
    pub fn type_recvs_in_batches(&self) -> bool {
        self.rules.plain_recv
    }

    /// Whether `send` can take a message now (libzmq's `ZMQ_POLLOUT`).
    pub fn can_send(&self) -> bool {
        self.closing.is_none() && dispatch!(self, can_send(self))
    }

    /// Whether `recv` has a message (libzmq's `ZMQ_POLLIN`).
    pub fn can_recv(&self) -> bool {
        dispatch!(self, can_recv(self))
    }
}
