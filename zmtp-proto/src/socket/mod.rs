//! The socket layer (`alloc`): one ZeroMQ socket = many peers behind one queue with a
//! routing rule, as an I/O-free state machine.
//!
//! A [`Socket`] owns its peers (each a [`Connection`] with its buffers),
//! per-peer send and receive queues bounded by the high-water marks, the routing pattern of
//! its [`SocketType`], its endpoints and their reconnect policy. It tells the driver what to
//! do through [`Event`]s (listen here, connect there, close that peer) and is told what
//! happened through `handle_*` calls. Nothing here performs I/O, reads a clock or draws
//! randomness: time is an argument and the seed given to [`Socket::new`] replaces the
//! random starting values libzmq uses (generated ROUTER ids, REQ correlation ids).
//!
//! # Driving a socket
//! - Act on every [`Event`] from [`Socket::poll_event`]: `Listen`/`Connect` start I/O and are
//!   answered with [`Socket::handle_listening`], [`Socket::handle_accepted`],
//!   [`Socket::handle_connected`] or [`Socket::handle_connect_failed`]; `ClosePeer` closes a
//!   stream; `Monitor` events go to whoever monitors the socket.
//! - Put bytes read from a peer's stream into [`Socket::read_buf`] (or pass them to
//!   [`Socket::handle_received`]) and call [`Socket::handle_input`]. Stop reading from a
//!   peer while [`Socket::wants_read`] is false (its receive queue is at RCVHWM).
//! - Write [`Socket::poll_transmit`] for every peer named by [`Socket::next_dirty`], and
//!   report what was written with [`Socket::advance`].
//! - Arm one timer at [`Socket::poll_timeout`] and call [`Socket::handle_timeout`].
//! - Report a stream that ended with [`Socket::handle_closed`].

mod auth;
pub mod endpoint;
mod message;
pub mod monitor;
mod options;
mod pattern;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;

use bytes::{Bytes, BytesMut};

pub use auth::{AuthReply, Authenticator, PeerProperties, ZapRequest};
pub use endpoint::{Endpoint, EndpointError};
pub use message::Message;
pub use monitor::{MonitorEvent, MonitorEventKind};
pub use options::Options;

use crate::{Buffered, Config, ConfigError, Connection, Error, Instant, OwnedItem, SocketType};
use pattern::PatternState;

/// A peer of a socket: one accepted stream, or one connect endpoint (whose queue outlives
/// reconnections unless `immediate` is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(u64);

/// An endpoint given to [`Socket::bind`] or [`Socket::connect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointId(u64);

/// What the socket asks of its driver, or reports to its monitor.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Start listening on `addr`; answer with `handle_listening` or `handle_bind_failed`.
    Listen {
        /// The endpoint.
        endpoint: EndpointId,
        /// Where to listen.
        addr: Endpoint,
    },
    /// Open a stream to `addr`; answer with `handle_connected` or `handle_connect_failed`.
    Connect {
        /// The endpoint.
        endpoint: EndpointId,
        /// Where to connect.
        addr: Endpoint,
    },
    /// Stop listening on this endpoint (unbind or close).
    StopListening {
        /// The endpoint.
        endpoint: EndpointId,
    },
    /// Close this peer's stream; the socket has already forgotten it.
    ClosePeer {
        /// The peer.
        peer: PeerId,
    },
    /// The peer's input, stopped because its receive queue reached RCVHWM, may be read
    /// again ([`Socket::wants_read`] is true): the application drained the queue to half.
    Resume {
        /// The peer.
        peer: PeerId,
    },
    /// A peer must be authenticated: ask the ZAP handler (adding the peer's address) and
    /// answer with [`Socket::handle_auth`], or answer [`AuthReply::NoHandler`].
    Authenticate {
        /// The peer.
        peer: PeerId,
        /// What to ask.
        request: ZapRequest,
    },
    /// A monitor event (only those enabled with [`Socket::set_monitor`]).
    Monitor(MonitorEvent),
    /// `close` has finished lingering: every stream is closed and the socket is done.
    Closed,
}

/// A message the socket accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Queued for at least one peer.
    Queued,
    /// Dropped by the socket's policy (PUB with no matching subscriber or all at HWM,
    /// ROUTER to an unknown or full peer without `ROUTER_MANDATORY`, REP to a gone peer).
    Dropped,
}

/// Why `send` did not take the message; the message is handed back.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// No peer has room (HWM) or there is no peer yet: try again later (`EAGAIN`).
    WouldBlock(Message),
    /// ROUTER with `ROUTER_MANDATORY`: no peer has this routing id (`EHOSTUNREACH`).
    HostUnreachable(Message),
    /// The socket's state does not allow a send now, e.g. REQ awaiting a reply (`EFSM`).
    InvalidState(Message),
    /// This socket type does not send (PULL, SUB), or the message is malformed for it,
    /// e.g. empty (`ENOTSUP`/`EINVAL`).
    NotSupported(Message),
    /// The socket is closing.
    Closed(Message),
}

impl SendError {
    /// The message that was not sent.
    pub fn into_message(self) -> Message {
        match self {
            SendError::WouldBlock(m)
            | SendError::HostUnreachable(m)
            | SendError::InvalidState(m)
            | SendError::NotSupported(m)
            | SendError::Closed(m) => m,
        }
    }
}

impl core::fmt::Display for SendError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SendError::WouldBlock(_) => "no peer can take the message now",
            SendError::HostUnreachable(_) => "no peer with that routing id",
            SendError::InvalidState(_) => "operation not allowed in the current socket state",
            SendError::NotSupported(_) => "this socket cannot send that message",
            SendError::Closed(_) => "socket is closing",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SendError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndpointKind {
    Bind,
    Connect,
}

#[derive(Debug)]
struct EndpointState {
    addr: Endpoint,
    /// The endpoint as text: as given, or as resolved by the driver once listening.
    text: String,
    kind: EndpointKind,
    /// Connect endpoints: their peer.
    peer: Option<PeerId>,
    /// Connect endpoints: when to try again.
    retry_at: Option<Instant>,
    /// Connect endpoints: the current reconnect interval (grows with backoff).
    ivl: Duration,
    /// Connect endpoints: no more reconnecting (protocol error, disconnect, close).
    dead: bool,
}

/// One open stream of a peer.
#[derive(Debug)]
struct Stream {
    conn: Buffered,
    /// Bytes written so far (cumulative), to know which encoded messages left.
    written: u64,
    /// Cumulative end offsets of encoded messages not yet fully written (counted for HWM).
    encoded_ends: VecDeque<u64>,
    /// Frames of the message being received.
    partial: Vec<Bytes>,
    established: bool,
    /// Listed in `Socket::dirty`.
    dirty: bool,
    /// Refused by its verdict: close once the ERROR is written, or at the deadline.
    farewell: Option<(Error, Instant)>,
}

impl Stream {
    fn queued_bytes_end(&self) -> u64 {
        self.written + self.conn.queued_len() as u64
    }
}

#[derive(Debug)]
struct Peer {
    endpoint: EndpointId,
    outbound: bool,
    stream: Option<Stream>,
    /// Routable by the pattern.
    attached: bool,
    /// Messages for the peer that wait for its stream.
    out: VecDeque<Message>,
    /// Complete messages received.
    inq: VecDeque<Message>,
    /// ROUTER: the id this peer is known by.
    routing_id: Bytes,
    /// PUB/XPUB: the topics this peer subscribed to.
    subs: Vec<Bytes>,
    /// Input is held back: the receive queue reached RCVHWM and has not drained to half.
    held: bool,
    /// The peer's properties, once its metadata arrived.
    properties: Option<alloc::sync::Arc<PeerProperties>>,
    /// A verdict accepted the peer: its messages carry its properties.
    authenticated: bool,
}

/// Complete messages a peer left behind when it left the pattern (its stream ended), not
/// yet taken by `recv`. As in libzmq, where a pipe is read up to its end even after the
/// peer is gone, they are still delivered: a peer may send and hang up at once.
#[derive(Debug)]
struct Departed {
    peer: PeerId,
    routing_id: Bytes,
    inq: VecDeque<Message>,
}

/// Queue sizes of one peer (see [`Socket::peer_stats`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStats {
    /// Routable by the pattern.
    pub attached: bool,
    /// A stream is open and its handshake done.
    pub established: bool,
    /// ROUTER: the routing id the peer is known by.
    pub routing_id: Bytes,
    /// Messages queued to send (waiting for the stream, or encoded and not yet written);
    /// bounded by SNDHWM.
    pub queued_out: usize,
    /// Complete messages received and not yet taken by `recv`; bounded by RCVHWM.
    pub queued_in: usize,
    /// Bytes encoded and not yet written.
    pub unsent_bytes: usize,
    /// Bytes read and not yet processed (held back while the receive queue is full).
    pub unread_bytes: usize,
}

/// Why a stream ended.
enum Ending {
    /// The driver saw the stream close.
    Closed,
    /// The connection failed with this error; the driver must close the stream.
    Failed(Error),
    /// We decided to close it (PAIR refusing a second peer, handover, disconnect, close).
    Dropped,
}

/// A ZeroMQ socket as a state machine. See the [module documentation](self).
#[derive(Debug)]
pub struct Socket {
    ty: SocketType,
    opts: Options,
    endpoints: BTreeMap<EndpointId, EndpointState>,
    peers: BTreeMap<PeerId, Peer>,
    /// Attached peers in attach order: the ring for load balancing and fair queuing.
    attached: Vec<PeerId>,
    /// Messages of peers that left the pattern, oldest first; never empty entries.
    departed: VecDeque<Departed>,
    lb_cursor: usize,
    fq_cursor: usize,
    next_id: u64,
    events: VecDeque<Event>,
    monitor_mask: u32,
    /// Peers with output since `next_dirty` last named them (each once: see `Stream::dirty`).
    dirty: VecDeque<PeerId>,
    now: Instant,
    last_endpoint: String,
    pattern: PatternState,
    /// `Some(deadline)` once `close` was called (`Some(None)`: linger forever).
    closing: Option<Option<Instant>>,
    closed: bool,
    /// Seeds each CURVE connection's randomness ([`Socket::set_entropy`]).
    #[cfg(feature = "curve")]
    entropy: Option<crate::curve_crypto::Drbg>,
}

impl Socket {
    /// A socket of type `ty`. `seed` stands in for libzmq's random starting values.
    pub fn new(ty: SocketType, opts: Options, seed: u64) -> Result<Socket, ConfigError> {
        if opts.routing_id.len() > 255 {
            return Err(ConfigError::IdentityTooLong);
        }
        if opts
            .connect_routing_id
            .as_ref()
            .is_some_and(|id| id.len() > 255)
        {
            return Err(ConfigError::IdentityTooLong);
        }
        Ok(Socket {
            pattern: PatternState::new(seed),
            ty,
            opts,
            endpoints: BTreeMap::new(),
            peers: BTreeMap::new(),
            attached: Vec::new(),
            departed: VecDeque::new(),
            lb_cursor: 0,
            fq_cursor: 0,
            next_id: 1,
            events: VecDeque::new(),
            monitor_mask: 0,
            dirty: VecDeque::new(),
            now: Instant::ZERO,
            last_endpoint: String::new(),
            closing: None,
            closed: false,
            #[cfg(feature = "curve")]
            entropy: None,
        })
    }

    /// Seed the randomness of CURVE connections (short-term keys, cookies, nonces): 32
    /// bytes from a secure source (the operating system). Each connection gets its own
    /// seed drawn from this one. Without it, CURVE handshakes fail with
    /// [`CurveError::NoEntropy`](crate::mechanism::CurveError).
    #[cfg(feature = "curve")]
    pub fn set_entropy(&mut self, seed: [u8; 32]) {
        self.entropy = Some(crate::curve_crypto::Drbg::new(seed));
    }

    /// The socket type.
    pub fn socket_type(&self) -> SocketType {
        self.ty
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Change options. New values apply to connections opened afterwards (HWMs and
    /// pattern options apply at once).
    pub fn set_options(&mut self, opts: Options) -> Result<(), ConfigError> {
        if opts.routing_id.len() > 255
            || opts
                .connect_routing_id
                .as_ref()
                .is_some_and(|id| id.len() > 255)
        {
            return Err(ConfigError::IdentityTooLong);
        }
        self.opts = opts;
        Ok(())
    }

    /// Report monitor events whose kind's bit is in `mask` (`EVENT_ALL` = 0xFFFF; 0 = none,
    /// the default).
    pub fn set_monitor(&mut self, mask: u32) {
        self.monitor_mask = mask;
    }

    /// The last endpoint bound (resolved, e.g. with the port chosen for `*`).
    pub fn last_endpoint(&self) -> &str {
        &self.last_endpoint
    }

    fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn monitor(&mut self, kind: MonitorEventKind, value: u32, endpoint: EndpointId) {
        if self.monitor_mask & kind.value() == 0 {
            return;
        }
        let endpoint = self
            .endpoints
            .get(&endpoint)
            .map(|e| e.text.clone())
            .unwrap_or_default();
        self.events.push_back(Event::Monitor(MonitorEvent {
            kind,
            value,
            endpoint,
        }));
    }

    // ----- endpoints -------------------------------------------------------------------

    /// Listen on `endpoint` (`tcp://*:5555`, `tcp://127.0.0.1:*`, `ipc://path`, `inproc://name`).
    pub fn bind(&mut self, endpoint: &str) -> Result<EndpointId, EndpointError> {
        let addr = Endpoint::parse(endpoint)?;
        addr.check_bind()?;
        let id = EndpointId(self.new_id());
        self.endpoints.insert(
            id,
            EndpointState {
                text: addr.to_string(),
                addr: addr.clone(),
                kind: EndpointKind::Bind,
                peer: None,
                retry_at: None,
                ivl: Duration::ZERO,
                dead: false,
            },
        );
        self.events.push_back(Event::Listen { endpoint: id, addr });
        Ok(id)
    }

    /// Connect to `endpoint`. Unless `immediate` is set, the peer's queue exists at once:
    /// messages sent now wait for the connection (not for ROUTER, which routes by the id
    /// learnt in the handshake).
    pub fn connect(&mut self, endpoint: &str) -> Result<EndpointId, EndpointError> {
        let addr = Endpoint::parse(endpoint)?;
        addr.check_connect()?;
        let id = EndpointId(self.new_id());
        let peer = PeerId(self.new_id());
        let routing_id = self.opts.connect_routing_id.take().unwrap_or_default();
        self.endpoints.insert(
            id,
            EndpointState {
                text: addr.to_string(),
                addr: addr.clone(),
                kind: EndpointKind::Connect,
                peer: Some(peer),
                retry_at: None,
                ivl: self.opts.reconnect_ivl.unwrap_or_default(),
                dead: false,
            },
        );
        self.peers.insert(
            peer,
            Peer {
                endpoint: id,
                outbound: true,
                stream: None,
                attached: false,
                out: VecDeque::new(),
                inq: VecDeque::new(),
                routing_id,
                subs: Vec::new(),
                held: false,
                properties: None,
                authenticated: false,
            },
        );
        if !self.opts.immediate && self.ty != SocketType::Router {
            self.attach(peer);
        }
        self.events.push_back(Event::Connect { endpoint: id, addr });
        self.monitor(MonitorEventKind::ConnectDelayed, 0, id);
        Ok(id)
    }

    fn find_endpoint(&self, endpoint: &str, kind: EndpointKind) -> Option<EndpointId> {
        let parsed = Endpoint::parse(endpoint).ok();
        self.endpoints
            .iter()
            .find(|(_, e)| {
                e.kind == kind && (e.text == endpoint || parsed.as_ref() == Some(&e.addr))
            })
            .map(|(id, _)| *id)
    }

    /// Stop listening on an endpoint given to `bind` (or its resolved form). Peers accepted
    /// on it stay connected, as in libzmq. Returns false if no such endpoint is bound.
    pub fn unbind(&mut self, endpoint: &str) -> bool {
        let Some(id) = self.find_endpoint(endpoint, EndpointKind::Bind) else {
            return false;
        };
        self.monitor(MonitorEventKind::Closed, 0, id);
        self.endpoints.remove(&id);
        self.events.push_back(Event::StopListening { endpoint: id });
        true
    }

    /// Drop a connect endpoint and its peer (queued messages are discarded). Returns false
    /// if no such endpoint is connected.
    pub fn disconnect(&mut self, endpoint: &str) -> bool {
        let Some(id) = self.find_endpoint(endpoint, EndpointKind::Connect) else {
            return false;
        };
        if let Some(peer) = self.endpoints.get(&id).and_then(|e| e.peer) {
            self.end_stream(peer, Ending::Dropped);
            self.remove_peer(peer);
            // libzmq terminates the pipe without delay: what it held is dropped.
            self.departed.retain(|d| d.peer != peer);
        }
        self.endpoints.remove(&id);
        true
    }

    /// The driver is listening on `endpoint`, resolved to `resolved` (for example the port
    /// chosen for `tcp://127.0.0.1:*`).
    pub fn handle_listening(&mut self, endpoint: EndpointId, resolved: &str) {
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            e.text = resolved.to_string();
            self.last_endpoint = resolved.to_string();
            self.monitor(MonitorEventKind::Listening, 0, endpoint);
        }
    }

    /// The driver could not listen on `endpoint`; `errno` is reported to the monitor.
    pub fn handle_bind_failed(&mut self, endpoint: EndpointId, errno: u32) {
        self.monitor(MonitorEventKind::BindFailed, errno, endpoint);
        self.endpoints.remove(&endpoint);
    }

    fn new_stream(&mut self, now: Instant) -> Stream {
        let mut config = Config::new(self.ty);
        // Validated in `new`/`set_options`: at most 255 bytes.
        let _ = config.set_identity(&self.opts.routing_id);
        config.handshake_timeout = self.opts.handshake_ivl;
        config.heartbeat_interval = self.opts.heartbeat_ivl;
        config.heartbeat_timeout = self.opts.heartbeat_timeout;
        config.heartbeat_ttl = self.opts.heartbeat_ttl;
        config.max_message_size = self.opts.maxmsgsize;
        config.max_message_frames = self.opts.max_message_frames;
        config.security = self.opts.security.clone();
        config.authenticate_null = !self.opts.zap_domain.is_empty();
        #[cfg(feature = "curve")]
        let conn = match &mut self.entropy {
            Some(rng) => {
                let mut seed = [0u8; 32];
                rng.fill(&mut seed);
                Connection::with_entropy(config, now, seed)
            }
            None => Connection::new(config, now),
        };
        #[cfg(not(feature = "curve"))]
        let conn = Connection::new(config, now);
        Stream {
            conn: Buffered::wrap(conn),
            written: 0,
            encoded_ends: VecDeque::new(),
            partial: Vec::new(),
            established: false,
            dirty: false,
            farewell: None,
        }
    }

    /// A stream was accepted on a listening endpoint; returns the new peer, or `None` if the
    /// endpoint is gone or the socket is closing (close the stream).
    pub fn handle_accepted(&mut self, endpoint: EndpointId, now: Instant) -> Option<PeerId> {
        self.now = now;
        if self.closing.is_some() || !self.endpoints.contains_key(&endpoint) {
            return None;
        }
        let peer = PeerId(self.new_id());
        let stream = self.new_stream(now);
        self.peers.insert(
            peer,
            Peer {
                endpoint,
                outbound: false,
                stream: Some(stream),
                attached: false,
                out: VecDeque::new(),
                inq: VecDeque::new(),
                routing_id: Bytes::new(),
                subs: Vec::new(),
                held: false,
                properties: None,
                authenticated: false,
            },
        );
        self.mark_dirty(peer);
        self.monitor(MonitorEventKind::Accepted, 0, endpoint);
        Some(peer)
    }

    /// A stream to a connect endpoint is open; returns its peer, or `None` if the endpoint
    /// is gone or no longer connects (close the stream).
    pub fn handle_connected(&mut self, endpoint: EndpointId, now: Instant) -> Option<PeerId> {
        self.now = now;
        let e = self.endpoints.get(&endpoint)?;
        if e.dead {
            return None;
        }
        let peer = e.peer?;
        let stream = self.new_stream(now);
        let limit = self.rcv_limit();
        let p = self.peers.get_mut(&peer)?;
        if p.stream.is_some() {
            return None;
        }
        p.stream = Some(stream);
        // A new stream starts reading unless the queue is still above half.
        p.held = p.held && p.inq.len() > limit / 2;
        self.mark_dirty(peer);
        self.monitor(MonitorEventKind::Connected, 0, endpoint);
        Some(peer)
    }

    /// Connecting to `endpoint` failed; a retry is scheduled per the reconnect options.
    pub fn handle_connect_failed(&mut self, endpoint: EndpointId, now: Instant) {
        self.now = now;
        self.schedule_reconnect(endpoint, now);
    }

    fn schedule_reconnect(&mut self, endpoint: EndpointId, now: Instant) {
        if self.closing.is_some() && !self.has_waiting(endpoint) {
            return;
        }
        let Some(base) = self.opts.reconnect_ivl else {
            return;
        };
        let max = self.opts.reconnect_ivl_max;
        let Some(e) = self.endpoints.get_mut(&endpoint) else {
            return;
        };
        if e.dead || e.kind != EndpointKind::Connect {
            return;
        }
        let ivl = e.ivl.max(base);
        e.retry_at = Some(now + ivl);
        e.ivl = if max > base { (ivl * 2).min(max) } else { base };
        let ms = u32::try_from(ivl.as_millis()).unwrap_or(u32::MAX);
        self.monitor(MonitorEventKind::ConnectRetried, ms, endpoint);
    }

    /// Whether messages wait for a connect endpoint's peer to connect.
    fn has_waiting(&self, endpoint: EndpointId) -> bool {
        self.endpoints
            .get(&endpoint)
            .and_then(|e| e.peer)
            .and_then(|peer| self.peers.get(&peer))
            .is_some_and(|p| !p.out.is_empty())
    }

    // ----- streams ---------------------------------------------------------------------

    /// The receive buffer of a peer's stream: the driver may read straight into it, then
    /// call [`handle_input`](Self::handle_input).
    pub fn read_buf(&mut self, peer: PeerId) -> Option<&mut BytesMut> {
        Some(self.peers.get_mut(&peer)?.stream.as_mut()?.conn.read_buf())
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
        self.now = now;
        self.process_input(peer);
    }

    /// Whether the driver should read from this peer's stream (false while its receive
    /// queue is at RCVHWM).
    pub fn wants_read(&self, peer: PeerId) -> bool {
        self.peers
            .get(&peer)
            .is_some_and(|p| p.stream.is_some() && self.in_room(p))
    }

    fn in_room(&self, p: &Peer) -> bool {
        let rcvhwm = self.rcv_limit();
        !p.held && (rcvhwm == 0 || p.inq.len() < rcvhwm)
    }

    /// Whether CONFLATE is in force: libzmq honours it on DEALER, PULL, PUSH, PUB and SUB
    /// only, and ignores it elsewhere.
    pub(crate) fn conflate(&self) -> bool {
        self.opts.conflate
            && matches!(
                self.ty,
                SocketType::Dealer
                    | SocketType::Pull
                    | SocketType::Push
                    | SocketType::Pub
                    | SocketType::Sub
            )
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

    fn process_input(&mut self, peer: PeerId) {
        let now = self.now;
        let rcvhwm = self.rcv_limit();
        // Where a whole single-frame message only joins the peer's queue (no topic filter,
        // no conflation, not a subscription channel), it does so here, without the
        // general path's lookups.
        let plain = !self.conflate()
            && !matches!(
                self.ty,
                SocketType::Pub | SocketType::Push | SocketType::XPub | SocketType::Sub
            );
        loop {
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
                    break Input::Held;
                }
                let Some(stream) = p.stream.as_mut() else {
                    return;
                };
                match stream.conn.poll_item(now) {
                    Ok(Some(OwnedItem::Frame { body, more: false }))
                        if plain && p.attached && stream.partial.is_empty() =>
                    {
                        let mut msg = Message::from(body);
                        if p.authenticated {
                            msg.set_properties(p.properties.clone());
                        }
                        p.inq.push_back(msg);
                    }
                    Ok(Some(item)) => break Input::Item(item),
                    Ok(None) => break Input::Idle,
                    Err(e) => break Input::Failed(e),
                }
            };
            match next {
                Input::Held => break,
                Input::Idle => {
                    // Handshake commands move the connection without yielding an item.
                    self.process_conn_events(peer);
                    break;
                }
                Input::Failed(e) => {
                    self.end_stream(peer, Ending::Failed(e));
                    return;
                }
                Input::Item(item) => {
                    // Data frames raise no connection events; handshake items may.
                    let events = !matches!(item, OwnedItem::Frame { .. });
                    self.on_item(peer, item);
                    if events {
                        self.process_conn_events(peer);
                    }
                }
            }
        }
        self.after_output(peer);
    }

    /// Act on a peer's connection events: a wanted verdict, the end of the handshake.
    /// PING/PONG notices are counted by the connection; nothing here needs them.
    fn process_conn_events(&mut self, peer: PeerId) {
        loop {
            let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
                return;
            };
            match s.conn.connection_mut().poll_event() {
                None => return,
                Some(crate::Event::AuthRequested) => self.request_auth(peer),
                Some(crate::Event::HandshakeSucceeded { .. }) if !s.established => {
                    s.established = true;
                    self.on_handshake(peer);
                }
                Some(_) => {}
            }
        }
    }

    /// One item received from a peer's stream.
    fn on_item(&mut self, peer: PeerId, item: OwnedItem) {
        let Some(stream) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        match item {
            OwnedItem::Ready(metadata) => {
                if let Some(p) = self.peers.get_mut(&peer) {
                    let props = p.properties.get_or_insert_with(Default::default);
                    alloc::sync::Arc::make_mut(props).peer = metadata;
                }
            }
            // A single-frame message needs no frame list.
            OwnedItem::Frame { body, more: false } if stream.partial.is_empty() => {
                self.on_message(peer, Message::from(body));
            }
            OwnedItem::Frame { body, more } => {
                stream.partial.push(body);
                if !more {
                    let msg = Message::from(core::mem::take(&mut stream.partial));
                    self.on_message(peer, msg);
                }
            }
            OwnedItem::Subscribe(topic) => self.on_subscription(peer, topic, true),
            OwnedItem::Cancel(topic) => self.on_subscription(peer, topic, false),
            OwnedItem::Join(_) | OwnedItem::Leave(_) => {}
        }
    }

    /// A chunk of bytes from an in-process stream, shared rather than copied: a frame body
    /// that arrives whole behind its header is delivered as it is (see
    /// [`Buffered::receive_shared`]). Call only while [`wants_read`](Self::wants_read).
    pub fn handle_received_shared(&mut self, peer: PeerId, now: Instant, chunk: Bytes) {
        self.now = now;
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        match s.conn.receive_shared(now, chunk) {
            Ok(Some(item)) => self.on_item(peer, item),
            Ok(None) => {}
            Err(e) => {
                self.end_stream(peer, Ending::Failed(e));
                return;
            }
        }
        self.process_input(peer);
    }

    /// Hand everything queued for a peer to `f` as owned chunks (large frame bodies as they
    /// are, encoded bytes copied), for an in-process stream; returns the bytes handed over,
    /// to pass to [`advance`](Self::advance).
    pub fn transmit_bytes(&mut self, peer: PeerId, f: impl FnMut(Bytes)) -> usize {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit_bytes(f);
                s.conn.queued_len()
            }
            None => 0,
        }
    }

    /// Queue the connection's control frames and mark the peer for writing if it has output.
    fn after_output(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            s.conn.poll_transmit();
            if s.conn.queued_len() > 0 {
                mark(&mut self.dirty, s, peer);
            }
        }
    }

    /// The next peer with bytes to write, if any.
    ///
    /// A peer is named once per batch of output: once named, its further output is not
    /// announced again until everything queued for it has been written
    /// ([`advance`](Self::advance) down to nothing, or a transmit call finding nothing).
    /// So the driver writes a named peer until its output is empty or the stream would
    /// block, and in the latter case writes again when the stream is writable. (A burst of
    /// sends thus costs the driver one notice, not one per message.)
    pub fn next_dirty(&mut self) -> Option<PeerId> {
        while let Some(peer) = self.dirty.pop_front() {
            // Entries of peers gone or closed since are skipped.
            let named = self
                .peers
                .get(&peer)
                .and_then(|p| p.stream.as_ref())
                .is_some_and(|s| s.dirty);
            if named {
                return Some(peer);
            }
        }
        None
    }

    fn mark_dirty(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            mark(&mut self.dirty, s, peer);
        }
    }

    /// Bytes to write to a peer's stream now: the first segment of its output (write it,
    /// then call again until empty, or use [`transmit_chunks`](Self::transmit_chunks)).
    pub fn poll_transmit(&mut self, peer: PeerId) -> &[u8] {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit()
            }
            None => &[],
        }
    }

    /// Everything queued for a peer, as segments for one vectored write (large frame
    /// bodies are their own segments, shared with the sender, not copied); returns how
    /// many of `out` were filled.
    pub fn transmit_chunks<'a>(&'a mut self, peer: PeerId, out: &mut [&'a [u8]]) -> usize {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit_chunks(out)
            }
            None => 0,
        }
    }

    /// `n` bytes of [`poll_transmit`](Self::poll_transmit) (or of the chunks) were written.
    pub fn advance(&mut self, peer: PeerId, n: usize) {
        let mut waiting = VecDeque::new();
        if let Some(p) = self.peers.get_mut(&peer) {
            if let Some(s) = p.stream.as_mut() {
                s.conn.advance(n);
                s.written += n as u64;
                if s.conn.queued_len() == 0 {
                    s.dirty = false;
                }
                while s.encoded_ends.front().is_some_and(|&end| end <= s.written) {
                    s.encoded_ends.pop_front();
                }
                // Messages held back while the stream was busy (CONFLATE) go out now.
                if s.established && s.encoded_ends.is_empty() {
                    waiting = core::mem::take(&mut p.out);
                }
            }
        }
        for msg in waiting {
            self.deliver(peer, msg);
        }
        self.finish_farewell(peer, self.now);
        if self.closing.is_some() {
            self.try_finish_close();
        }
    }

    /// The connection of a peer's current stream (peer identity, socket type, version).
    pub fn connection(&self, peer: PeerId) -> Option<&Connection> {
        Some(self.peers.get(&peer)?.stream.as_ref()?.conn.connection())
    }

    /// Queue sizes of a peer, for monitoring and tests.
    pub fn peer_stats(&self, peer: PeerId) -> Option<PeerStats> {
        let p = self.peers.get(&peer)?;
        let stream = p.stream.as_ref();
        Some(PeerStats {
            attached: p.attached,
            established: stream.is_some_and(|s| s.established),
            routing_id: p.routing_id.clone(),
            queued_out: p.out.len() + stream.map_or(0, |s| s.encoded_ends.len()),
            queued_in: p.inq.len(),
            unsent_bytes: stream.map_or(0, |s| s.conn.queued_len()),
            unread_bytes: stream.map_or(0, |s| s.conn.buffered_input()),
        })
    }

    /// Every peer.
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.keys().copied()
    }

    /// A peer's stream ended (end of file or an I/O error). The driver has closed it.
    pub fn handle_closed(&mut self, peer: PeerId, now: Instant) {
        self.now = now;
        let error = self.connection(peer).and_then(|c| c.error().cloned());
        self.end_stream(peer, auth::ending_of(error.as_ref()));
    }

    fn end_stream(&mut self, peer: PeerId, ending: Ending) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        let Some(stream) = p.stream.take() else {
            return;
        };
        let endpoint = p.endpoint;
        let outbound = p.outbound;
        let protocol_error = match &ending {
            Ending::Failed(e) => !matches!(
                e,
                Error::HandshakeTimeout | Error::HeartbeatTimeout | Error::HeartbeatTtlExpired
            ),
            _ => false,
        };
        if !stream.established {
            match &ending {
                // An ERROR with a ZAP status ("300", "400", "500") is an authentication
                // failure, reported with that status as libzmq does.
                Ending::Failed(Error::PeerError(reason))
                    if matches!(&reason[..], b"300" | b"400" | b"500") =>
                {
                    let status = core::str::from_utf8(reason)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    self.monitor(MonitorEventKind::HandshakeFailedAuth, status, endpoint)
                }
                // Our own verdict refused the peer.
                Ending::Failed(Error::AuthRejected { status }) => self.monitor(
                    MonitorEventKind::HandshakeFailedAuth,
                    u32::from(*status),
                    endpoint,
                ),
                Ending::Failed(e) => match monitor::protocol_error_code(e) {
                    Some(code) => {
                        self.monitor(MonitorEventKind::HandshakeFailedProtocol, code, endpoint)
                    }
                    None => self.monitor(MonitorEventKind::HandshakeFailedNoDetail, 0, endpoint),
                },
                Ending::Closed => {
                    self.monitor(MonitorEventKind::HandshakeFailedNoDetail, 0, endpoint)
                }
                Ending::Dropped => {}
            }
        }
        self.monitor(MonitorEventKind::Disconnected, 0, endpoint);
        if !matches!(ending, Ending::Closed) {
            self.events.push_back(Event::ClosePeer { peer });
        }
        if !outbound {
            self.remove_peer(peer);
        } else if protocol_error || matches!(ending, Ending::Dropped) {
            // libzmq stops reconnecting after a protocol error; a dropped connect peer
            // (PAIR refusal, handover, disconnect) is gone too.
            if let Some(e) = self.endpoints.get_mut(&endpoint) {
                e.dead = true;
            }
            self.remove_peer(peer);
        } else {
            if self.opts.immediate || self.ty == SocketType::Router {
                self.detach(peer);
                if let Some(p) = self.peers.get_mut(&peer) {
                    p.out.clear();
                }
            }
            self.schedule_reconnect(endpoint, self.now);
        }
        if self.closing.is_some() {
            self.try_finish_close();
        }
    }

    fn remove_peer(&mut self, peer: PeerId) {
        self.detach(peer);
        self.peers.remove(&peer);
    }

    /// Make a peer routable.
    fn attach(&mut self, peer: PeerId) {
        if let Some(p) = self.peers.get_mut(&peer) {
            if !p.attached {
                p.attached = true;
                self.attached.push(peer);
            }
        }
    }

    /// Make a peer unroutable; the pattern forgets it. Messages received from it stay
    /// readable.
    fn detach(&mut self, peer: PeerId) {
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if !p.attached {
            return;
        }
        p.attached = false;
        p.held = false;
        let inq = core::mem::take(&mut p.inq);
        if !inq.is_empty() {
            self.departed.push_back(Departed {
                peer,
                routing_id: p.routing_id.clone(),
                inq,
            });
        }
        if let Some(i) = self.attached.iter().position(|&x| x == peer) {
            self.attached.remove(i);
            if self.lb_cursor > i {
                self.lb_cursor -= 1;
            }
            if self.fq_cursor > i {
                self.fq_cursor -= 1;
            }
        }
        self.pattern_detach(peer);
    }

    // ----- sending to peers ------------------------------------------------------------

    fn out_room(&self, p: &Peer) -> bool {
        if self.opts.sndhwm == 0 || self.conflate() {
            return true;
        }
        let encoded = p.stream.as_ref().map_or(0, |s| s.encoded_ends.len());
        // Until the handshake, a slot is kept for the probe that goes first (in libzmq it
        // is written to the pipe as soon as the pipe exists, before any message).
        let probe = usize::from(self.probes() && !p.stream.as_ref().is_some_and(|s| s.established));
        p.out.len() + encoded + probe < self.opts.sndhwm
    }

    /// Whether each new peer gets an empty message first (`ZMQ_PROBE_ROUTER`).
    pub(crate) fn probes(&self) -> bool {
        self.opts.probe_router
            && matches!(
                self.ty,
                SocketType::Router | SocketType::Dealer | SocketType::Req
            )
    }

    fn has_room(&self, peer: PeerId) -> bool {
        self.peers.get(&peer).is_some_and(|p| self.out_room(p))
    }

    /// Hand a message to a peer: encode it now if its handshake is done, else queue it.
    /// With CONFLATE a message also waits while an earlier one is still being written, so
    /// that a newer one can replace it: the peer's queue holds one message, not a backlog.
    fn deliver<'a>(&mut self, peer: PeerId, out: impl Into<Outgoing<'a>>) {
        let out = out.into();
        let conflate = self.conflate();
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        match p.stream.as_mut() {
            Some(s) if s.established && (!conflate || s.encoded_ends.is_empty()) => {
                if encode(s, &out).is_err() {
                    return;
                }
                mark(&mut self.dirty, s, peer);
            }
            _ => {
                if conflate {
                    p.out.clear();
                }
                p.out.push_back(out.into_message());
            }
        }
    }

    // ----- timers ----------------------------------------------------------------------

    /// The earliest instant at which [`handle_timeout`](Self::handle_timeout) must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        let streams = self.peers.values().filter_map(|p| {
            let s = p.stream.as_ref()?;
            match &s.farewell {
                Some((_, deadline)) => Some(*deadline),
                None => s.conn.connection().poll_timeout(),
            }
        });
        let retries = self.endpoints.values().filter_map(|e| e.retry_at);
        let linger = self.closing.flatten();
        streams.chain(retries).chain(linger).min()
    }

    /// Fire every expired timer: connection deadlines and heartbeats, reconnects, linger.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        let due: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, p)| {
                p.stream.as_ref().is_some_and(|s| match &s.farewell {
                    Some((_, deadline)) => *deadline <= now,
                    None => s.conn.connection().poll_timeout().is_some_and(|t| t <= now),
                })
            })
            .map(|(id, _)| *id)
            .collect();
        for peer in due {
            let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
                continue;
            };
            if s.farewell.is_some() {
                self.finish_farewell(peer, now);
                continue;
            }
            match s.conn.connection_mut().handle_timeout(now) {
                Ok(()) => self.after_output(peer),
                Err(e) => self.end_stream(peer, Ending::Failed(e)),
            }
        }
        let retry: Vec<EndpointId> = self
            .endpoints
            .iter()
            .filter(|(_, e)| e.retry_at.is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in retry {
            if let Some(e) = self.endpoints.get_mut(&id) {
                e.retry_at = None;
                let addr = e.addr.clone();
                self.events.push_back(Event::Connect { endpoint: id, addr });
                self.monitor(MonitorEventKind::ConnectDelayed, 0, id);
            }
        }
        if self.closing.flatten().is_some_and(|t| t <= now) {
            self.finish_close();
        }
    }

    /// The next event for the driver or the monitor.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether [`poll_event`](Self::poll_event) or [`next_dirty`](Self::next_dirty) has
    /// anything: a cheap check that lets a driver skip its event loop after most calls.
    pub fn has_work(&self) -> bool {
        !self.events.is_empty() || !self.dirty.is_empty()
    }

    // ----- closing ---------------------------------------------------------------------

    /// Close the socket: stop listening, refuse new sends, and linger until queued
    /// messages are written or `LINGER` expires; then [`Event::Closed`]. As in libzmq, a
    /// connect endpoint whose peer still has messages waiting for a connection keeps
    /// reconnecting while the socket lingers; the others stop.
    pub fn close(&mut self, now: Instant) {
        if self.closing.is_some() {
            return;
        }
        self.now = now;
        self.closing = Some(self.opts.linger.map(|l| now + l));
        let ids: Vec<(EndpointId, EndpointKind)> =
            self.endpoints.iter().map(|(id, e)| (*id, e.kind)).collect();
        for (id, kind) in ids {
            match kind {
                EndpointKind::Bind => {
                    self.monitor(MonitorEventKind::Closed, 0, id);
                    self.events.push_back(Event::StopListening { endpoint: id });
                }
                EndpointKind::Connect => {
                    if self.has_waiting(id) {
                        continue;
                    }
                    if let Some(e) = self.endpoints.get_mut(&id) {
                        e.dead = true;
                        e.retry_at = None;
                    }
                }
            }
        }
        self.try_finish_close();
    }

    /// Whether `close` has finished.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn try_finish_close(&mut self) {
        if self.closed {
            return;
        }
        // LINGER 0, or a deadline already past: no waiting for a timer.
        if self.closing.flatten().is_some_and(|t| t <= self.now) {
            self.finish_close();
            return;
        }
        let drained = self.peers.values().all(|p| {
            p.out.is_empty()
                && p.stream
                    .as_ref()
                    .is_none_or(|s| s.conn.queued_len() == 0 && !s.conn.connection().wants_write())
        });
        if drained {
            self.finish_close();
        }
    }

    fn finish_close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for peer in peers {
            if self.peers.get(&peer).is_some_and(|p| p.stream.is_some()) {
                self.events.push_back(Event::ClosePeer { peer });
            }
            self.peers.remove(&peer);
        }
        self.attached.clear();
        self.departed.clear();
        self.dirty.clear();
        self.endpoints.clear();
        if self.monitor_mask & MonitorEventKind::MonitorStopped.value() != 0 {
            self.events.push_back(Event::Monitor(MonitorEvent {
                kind: MonitorEventKind::MonitorStopped,
                value: 0,
                endpoint: String::new(),
            }));
        }
        self.events.push_back(Event::Closed);
    }
}

/// List a peer's stream as having output, once.
fn mark(dirty: &mut VecDeque<PeerId>, s: &mut Stream, peer: PeerId) {
    if !s.dirty {
        s.dirty = true;
        dirty.push_back(peer);
    }
}

/// Encode a whole message into a stream and record where it ends (for HWM accounting).
fn encode(s: &mut Stream, out: &Outgoing<'_>) -> Result<(), crate::EncodeError> {
    match out {
        Outgoing::Message(msg) => {
            let n = msg.len();
            for (i, frame) in msg.frames().iter().enumerate() {
                s.conn.send_frame_shared(frame, i + 1 < n)?;
            }
        }
        // Large bodies stay out of the encode buffer (which keeps its size as scratch): a
        // copy of their own, queued by reference, as `send` would queue them.
        Outgoing::Frame(body) if body.len() >= crate::SHARED_BODY_MIN => s
            .conn
            .send_frame_shared(&Bytes::copy_from_slice(body), false)?,
        Outgoing::Frame(body) => s.conn.send_frame(body, false)?,
    }
    let end = s.queued_bytes_end();
    s.encoded_ends.push_back(end);
    Ok(())
}

/// Where reading a peer's input stopped (see `Socket::process_input`).
enum Input {
    /// The receive queue is at RCVHWM.
    Held,
    /// Nothing more is buffered.
    Idle,
    /// An item for the general path.
    Item(OwnedItem),
    /// The connection failed.
    Failed(crate::Error),
}

/// What a send hands to one peer: a message, or a single-frame message whose body is
/// still the caller's (copied into the peer's output, or into a message if it must wait).
pub(crate) enum Outgoing<'a> {
    Message(Message),
    Frame(&'a [u8]),
}

impl Outgoing<'_> {
    pub(crate) fn into_message(self) -> Message {
        match self {
            Outgoing::Message(msg) => msg,
            Outgoing::Frame(body) => Message::from(Bytes::copy_from_slice(body)),
        }
    }
}

impl From<Message> for Outgoing<'_> {
    fn from(msg: Message) -> Self {
        Outgoing::Message(msg)
    }
}
