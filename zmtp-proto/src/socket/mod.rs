//! The socket layer (`alloc`): one ZeroMQ socket = many peers behind one queue with a
//! routing rule, as an I/O-free state machine.
//!
//! A [`Socket`] owns its peers (each a [`Connection`](crate::Connection) with its buffers),
//! per-peer send and receive queues bounded by the high-water marks, the routing pattern of
//! its [`SocketType`], its endpoints and their reconnect policy. It tells the driver what to
//! do through [`Command`]s (listen here, connect there, close that peer), reports what
//! happened to its monitor through [`MonitorEvent`]s (a queue of their own), and is told
//! what happened through `handle_*` calls. Nothing here performs I/O (not even name
//! resolution), reads a clock or draws randomness: every call that changes the socket's
//! state and may need the time takes it (an [`Instant`], or a [`Clock`](crate::Clock) read
//! only on the paths that need it), and the seed given to [`Socket::new`] replaces the
//! random starting values libzmq uses (generated ROUTER ids, REQ correlation ids).
//!
//! # Driving a socket
//! - Carry out every [`Command`] from [`Socket::poll_command`]: `Listen`/`Connect` start
//!   I/O and are answered with [`Socket::handle_listening`], [`Socket::handle_accepted`],
//!   [`Socket::handle_connected`] or [`Socket::handle_connect_failed`] (a host name is
//!   resolved by the driver, which tries every address in turn); `ClosePeer` closes a
//!   stream; `Authenticate` asks a ZAP handler (only when no [`Authenticator`] is installed
//!   with [`Socket::set_authenticator`]). Hand every [`MonitorEvent`] from
//!   [`Socket::poll_monitor`] to whoever monitors the socket, those queued before a
//!   command first.
//! - Put bytes read from a peer's stream into [`Socket::read_buf`] (or pass them to
//!   [`Socket::handle_received`]) and call [`Socket::handle_input`]. Stop reading from a
//!   peer while [`Socket::wants_read`] is false (its receive queue is at RCVHWM).
//! - Write [`Socket::poll_transmit`] for every peer named by [`Socket::next_dirty`], and
//!   report what was written with [`Socket::advance`].
//! - Arm one timer at [`Socket::poll_timeout`] and call [`Socket::handle_timeout`]. The
//!   timers of all peers and endpoints live in one ordered set: idle peers cost nothing.
//! - Report a stream that ended with [`Socket::handle_closed`], or failed with
//!   [`Socket::handle_stream_failed`] (its monitor events then say why).
//! - `udp://` endpoints have no streams: [`Command::OpenUdp`] opens a UDP socket, every
//!   datagram of [`Socket::poll_datagram`] is sent from it, and every datagram received on
//!   a bound one goes to [`Socket::handle_datagram`] (see `udp.rs`).
//!
//! # Where things are
//! `mod.rs` holds the types and the command and monitor queues; `endpoints.rs` binding,
//! connecting and reconnecting; `input.rs` and `output.rs` a peer's bytes in and out;
//! `peers.rs` streams ending and peers joining or leaving the pattern; `auth.rs` ZAP and
//! the in-core authenticator; `timers.rs` deadlines; `close.rs` LINGER. The routing of
//! each socket type is in `pattern/`, one module per family behind one dispatch point.

mod accept_filter;
mod auth;
mod close;
pub mod endpoint;
mod endpoints;
mod input;
mod ipc_filter;
mod message;
pub mod monitor;
mod options;
mod output;
mod pattern;
mod peers;
mod timers;
mod udp;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use bytes::Bytes;

pub use crate::socks::{SocksProxy, SocksProxyError};
pub use accept_filter::{AcceptFilterError, TcpAcceptFilter};
pub use auth::{AuthReply, Authenticator, PeerProperties, ZapRequest};
pub use close::{CloseReport, Loss};
pub use endpoint::{Endpoint, EndpointError, StreamAddr};
pub use ipc_filter::{IpcAcceptFilters, PeerCredentials};
pub use message::{Message, MetadataError, TextError, GROUP_MAX_LEN};
pub use monitor::{MonitorEvent, MonitorEventKind, PipesStatsError, QueueCounts};
pub use options::{AppMetadata, Options, ReconnectStop, RouterNotify};
pub use pattern::radio::GroupError;
pub use udp::DatagramOut;

use crate::{Buffered, ConfigError, Error, Instant, SocketType};
use pattern::{PatternState, Rules};
use timers::Timers;

/// A peer of a socket: one accepted stream, or one connect endpoint (whose queue outlives
/// reconnections unless `immediate` is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(u64);

/// An endpoint given to [`Socket::bind`] or [`Socket::connect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointId(u64);

/// What the socket asks of its driver: the I/O it must start or stop. Read with
/// [`Socket::poll_command`]; monitor events have their own queue ([`Socket::poll_monitor`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Start listening on `addr`; answer with `handle_listening` or `handle_bind_failed`.
    Listen {
        /// The endpoint.
        endpoint: EndpointId,
        /// Where to listen.
        addr: Endpoint,
    },
    /// Open a stream to `addr` (trying each address a host name resolves to, in order);
    /// answer with `handle_connected` or `handle_connect_failed`.
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
    /// A peer must be authenticated and no [`Authenticator`] is installed: ask the ZAP
    /// handler and answer with [`Socket::handle_auth`], or answer [`AuthReply::NoHandler`].
    Authenticate {
        /// The peer.
        peer: PeerId,
        /// What to ask (the peer's address included).
        request: ZapRequest,
    },
    /// Open a UDP socket for a `udp://` endpoint (see [`Socket::poll_datagram`] and
    /// [`Socket::handle_datagram`]). A bind (DISH, DGRAM) binds the host and port, or for a
    /// multicast group the wildcard address on the port with `SO_REUSEADDR` and
    /// `SO_REUSEPORT`, then joins the group on the interface; answer with
    /// `handle_listening`. A connect (RADIO) connects to the host and port, with the
    /// multicast interface, loop and hops for a group. Answer a failure with
    /// `handle_udp_failed`. [`Command::StopListening`] closes the UDP socket.
    OpenUdp {
        /// The endpoint.
        endpoint: EndpointId,
        /// The `udp://` endpoint.
        addr: endpoint::UdpEndpoint,
        /// Bind (DISH, DGRAM) rather than connect (RADIO).
        bind: bool,
        /// `IP_MULTICAST_LOOP` for a multicast connect.
        multicast_loop: bool,
        /// `IP_MULTICAST_TTL` for a multicast connect.
        multicast_hops: u32,
    },
    /// `close` has finished lingering: every stream is closed and the socket is done.
    Closed,
}

impl Command {
    /// The address to open a stream to for a [`Command::Connect`] (`None` for every other
    /// command), before any name is resolved: an IP address, a host name and port to
    /// resolve, an `ipc://` path or abstract name, or an `inproc://` name. A `wss://`
    /// endpoint gives its TCP address; run TLS on the stream (see [`StreamAddr`]).
    ///
    /// ```
    /// use zmtp_proto::socket::{Options, Socket, StreamAddr};
    /// use zmtp_proto::SocketType;
    ///
    /// let mut req = Socket::new(SocketType::Req, Options::default(), 7).unwrap();
    /// req.connect("tcp://localhost:5555").unwrap();
    /// let command = req.poll_command().unwrap();
    /// assert_eq!(command.dial_addr(), Some(StreamAddr::Name { host: "localhost", port: 5555 }));
    /// ```
    pub fn dial_addr(&self) -> Option<StreamAddr<'_>> {
        match self {
            Command::Connect { addr, .. } => addr.stream_addr(),
            _ => None,
        }
    }
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
    /// The message cannot go over `udp://`: a group over 127 bytes, or a datagram over
    /// 8,192 bytes (see [`crate::udp`]).
    Datagram(crate::udp::DatagramEmitError, Message),
    /// A SERVER's message without a routing id ([`Message::set_routing_id`]) names no
    /// peer to go to (libzmq's `EHOSTUNREACH`): give it the id of the message it answers.
    RoutingIdRequired(Message),
    /// A multipart message to a draft type (SERVER, CLIENT, RADIO, DISH, SCATTER, GATHER,
    /// PEER, CHANNEL), which takes single-frame messages only (libzmq's `EINVAL`).
    SingleFrameOnly(Message),
}

impl SendError {
    /// The message that was not sent.
    pub fn into_message(self) -> Message {
        match self {
            SendError::WouldBlock(m)
            | SendError::HostUnreachable(m)
            | SendError::InvalidState(m)
            | SendError::NotSupported(m)
            | SendError::Closed(m)
            | SendError::Datagram(_, m)
            | SendError::RoutingIdRequired(m)
            | SendError::SingleFrameOnly(m) => m,
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
            SendError::Datagram(e, _) => return write!(f, "cannot send over udp: {e}"),
            SendError::RoutingIdRequired(_) => {
                "a routing id is required: a SERVER or PEER sends to the peer its message's \
                 routing id names (set it to the routing id of the message it answers)"
            }
            SendError::SingleFrameOnly(_) => {
                "draft types (SERVER, CLIENT, RADIO, DISH, SCATTER, GATHER, PEER, CHANNEL) \
                 take single-frame messages only"
            }
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
    /// `tcp://` connect endpoints: the SOCKS5 proxy their streams are opened through (the
    /// socket's when it connected).
    socks: Option<alloc::boxed::Box<crate::socks::SocksProxy>>,
    /// Connect endpoints: why the last attempt failed (the driver's error, or the
    /// stream's), for the reports of what still waits for the endpoint; cleared by a
    /// handshake that succeeds.
    failure: Option<String>,
}

impl EndpointState {
    /// Where a stream for this endpoint is opened: the endpoint, or its SOCKS proxy.
    fn dial_addr(&self) -> Endpoint {
        match &self.socks {
            Some(proxy) => Endpoint::Tcp(proxy.endpoint().clone()),
            None => self.addr.clone(),
        }
    }
}

/// One open stream of a peer: its connection and the accounting of what was written.
#[derive(Debug)]
struct Link {
    conn: Buffered,
    /// Bytes written so far (cumulative), to know which encoded messages left.
    written: u64,
    /// Cumulative end offsets of encoded messages not yet fully written (counted for HWM).
    encoded_ends: VecDeque<u64>,
    /// Frames of the message being received (the first two need no list).
    partial: Message,
    established: bool,
    /// Listed in `Socket::dirty`.
    dirty: bool,
    /// Refused by its verdict (with the error), or closed on request (STREAM, no error):
    /// close once what is queued is written, or at the deadline.
    farewell: Option<(Option<Error>, Instant)>,
    /// The deadline armed for this stream in `Socket::timers`.
    deadline: Option<Instant>,
}

impl Link {
    fn new(conn: Buffered) -> alloc::boxed::Box<Link> {
        alloc::boxed::Box::new(Link {
            conn,
            written: 0,
            encoded_ends: VecDeque::new(),
            partial: Message::new(),
            established: false,
            dirty: false,
            farewell: None,
            deadline: None,
        })
    }

    fn queued_bytes_end(&self) -> u64 {
        self.written + self.conn.queued_len() as u64
    }
}

#[derive(Debug)]
struct Peer {
    endpoint: EndpointId,
    outbound: bool,
    /// Boxed: a `Link` is kilobytes (the connection's configuration and handshake state),
    /// and the peer map moves its values as it grows and shrinks.
    stream: Option<alloc::boxed::Box<Link>>,
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
    /// The peer is in `Socket::fq_active`.
    in_fq: bool,
    /// The peer's properties, once its metadata arrived.
    properties: Option<alloc::sync::Arc<PeerProperties>>,
    /// Its messages carry its properties: a verdict accepted the peer, or its metadata has
    /// application (`X-`) properties. (libzmq tags every message; tagging only where there
    /// is something an application set or a verdict added keeps the rest free of it.)
    tagged: bool,
    /// The address of the peer's current stream, as the driver gave it: `IP:port` for tcp
    /// (a bare IP from older drivers), empty for ipc and inproc. Monitor events carry it;
    /// ZAP's `Address` is its IP ([`Peer::ip`]).
    address: String,
    /// A connect peer's current stream: its local address as the driver gave it
    /// ([`Socket::handle_connected_from`]), empty for ipc; `None` when not given (and for
    /// accepted peers). Monitor events carry it.
    local_address: Option<String>,
}

impl Peer {
    /// The IP of the peer's address, as ZAP's `Address` frame wants it (see [`ip_of`]).
    fn ip(&self) -> String {
        ip_of(&self.address)
    }

    /// The peer's properties, made (with its `Peer-Address`) if it has none yet.
    fn properties_mut(&mut self) -> &mut PeerProperties {
        if self.properties.is_none() {
            self.properties = Some(alloc::sync::Arc::new(PeerProperties {
                address: self.ip(),
                ..PeerProperties::default()
            }));
        }
        let props = self.properties.get_or_insert_with(Default::default);
        alloc::sync::Arc::make_mut(props)
    }
}

/// The IP of a peer address, as ZAP's `Address` frame wants it: libzmq sends the IP without
/// the port, and an IPv6 address without brackets or zone. An address that is not
/// `IP:port` (a bare IP, or empty) is given as it is.
fn ip_of(address: &str) -> String {
    match address.parse::<core::net::SocketAddr>() {
        Ok(addr) => alloc::string::ToString::to_string(&addr.ip()),
        Err(_) => address.into(),
    }
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
    /// What the type is, for everything outside its pattern's module.
    rules: Rules,
    opts: Options,
    endpoints: BTreeMap<EndpointId, EndpointState>,
    peers: BTreeMap<PeerId, Peer>,
    /// Receive buffers the peers' streams gave up while still shared, to read into again.
    rx_pool: crate::RxPool,
    /// Attached peers in attach order: the ring for load balancing and fair queuing.
    attached: Vec<PeerId>,
    /// Messages of peers that left the pattern, oldest first; never empty entries.
    departed: VecDeque<Departed>,
    lb_cursor: usize,
    /// Fair queuing's turn: the attached peers that had a message waiting when they were
    /// put here, each at most once (`Peer::in_fq`), in the order they take turns. A peer
    /// whose queue emptied otherwise (or that was detached) stays until its turn comes,
    /// and is then passed over. Receiving costs the same with ten peers or ten thousand.
    fq_active: VecDeque<PeerId>,
    next_id: u64,
    /// What the driver must do ([`Socket::poll_command`]).
    commands: VecDeque<Command>,
    /// Monitor events enabled by `monitor_mask` ([`Socket::poll_monitor`]).
    monitors: VecDeque<MonitorEvent>,
    monitor_mask: u32,
    /// Peers with output since `next_dirty` last named them (each once: see `Link::dirty`).
    dirty: VecDeque<PeerId>,
    last_endpoint: String,
    /// Decides authentication in the core when installed ([`Socket::set_authenticator`]).
    authenticator: Option<Authenticator>,
    /// Every peer's and endpoint's next deadline.
    timers: Timers,
    /// Verdicts decided in the core, applied once the input that asked is processed.
    verdicts: VecDeque<(PeerId, AuthReply)>,
    pattern: PatternState,
    /// `Some(deadline)` once `close` was called (`Some(None)`: linger forever).
    closing: Option<Option<Instant>>,
    closed: bool,
    /// What closing left unwritten, once it has finished.
    close_report: Option<CloseReport>,
    /// The unwritten messages of a finished close, by endpoint.
    close_losses: Vec<close::Loss>,
    /// The `udp://` endpoints' datagram queues.
    udp: udp::UdpState,
    /// Seeds each CURVE connection's randomness ([`Socket::set_entropy`]).
    #[cfg(feature = "curve")]
    entropy: Option<crate::curve_crypto::Drbg>,
    /// The seed's state, drawn from for `ws://` keys and masks without CURVE entropy.
    seed: u64,
    /// `disconnect` was called with `RECONNECT_STOP_AFTER_DISCONNECT` set.
    disconnected: bool,
}

impl Socket {
    /// A socket of type `ty`. `seed` stands in for libzmq's random starting values.
    pub fn new(ty: SocketType, opts: Options, seed: u64) -> Result<Socket, ConfigError> {
        check_options(ty, &opts)?;
        Ok(Socket {
            pattern: PatternState::new(seed),
            rules: Rules::of(ty),
            ty,
            opts,
            endpoints: BTreeMap::new(),
            peers: BTreeMap::new(),
            attached: Vec::new(),
            departed: VecDeque::new(),
            rx_pool: crate::RxPool::default(),
            lb_cursor: 0,
            fq_active: VecDeque::new(),
            next_id: 1,
            commands: VecDeque::new(),
            monitors: VecDeque::new(),
            monitor_mask: 0,
            dirty: VecDeque::new(),
            last_endpoint: String::new(),
            authenticator: None,
            timers: Timers::default(),
            verdicts: VecDeque::new(),
            closing: None,
            closed: false,
            close_report: None,
            close_losses: Vec::new(),
            udp: udp::UdpState::default(),
            #[cfg(feature = "curve")]
            entropy: None,
            seed,
            disconnected: false,
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
        check_options(self.ty, &opts)?;
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

    /// Queue an event about an endpoint (if the monitor wants this kind).
    fn monitor(&mut self, kind: MonitorEventKind, value: u32, endpoint: EndpointId) {
        if self.monitor_mask & kind.value() == 0 {
            return;
        }
        let endpoint = self
            .endpoints
            .get(&endpoint)
            .map(|e| e.text.clone())
            .unwrap_or_default();
        self.monitors
            .push_back(MonitorEvent::new(kind, value, endpoint));
    }

    /// Queue an event about a peer's connection: on its endpoint, naming its address.
    fn monitor_peer(&mut self, kind: MonitorEventKind, value: u32, peer: PeerId) {
        self.monitor_peer_error(kind, value, peer, None);
    }

    /// As `monitor_peer`, with why the peer's connection ended.
    fn monitor_peer_error(
        &mut self,
        kind: MonitorEventKind,
        value: u32,
        peer: PeerId,
        error: Option<&Error>,
    ) {
        if self.monitor_mask & kind.value() == 0 {
            return;
        }
        let Some(p) = self.peers.get(&peer) else {
            return;
        };
        let endpoint = self
            .endpoints
            .get(&p.endpoint)
            .map(|e| e.text.clone())
            .unwrap_or_default();
        let mut event =
            MonitorEvent::new(kind, value, endpoint).with_peer_address(p.address.clone());
        event.local_address = p.local_address.clone();
        event.error = error.cloned();
        self.monitors.push_back(event);
    }

    /// The next thing the driver must do.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// The next monitor event (only kinds enabled with [`Socket::set_monitor`]).
    pub fn poll_monitor(&mut self) -> Option<MonitorEvent> {
        self.monitors.pop_front()
    }

    /// Whether [`poll_command`](Self::poll_command), [`poll_monitor`](Self::poll_monitor),
    /// [`next_dirty`](Self::next_dirty) or [`poll_datagram`](Self::poll_datagram) has
    /// anything: a cheap check that lets a driver skip its command loop after most calls.
    #[inline]
    pub fn has_work(&self) -> bool {
        !self.commands.is_empty()
            || !self.monitors.is_empty()
            || !self.dirty.is_empty()
            || self.udp.has_output()
    }
}

/// Check the options a socket is given: routing ids of at most 255 bytes, application
/// metadata a connection can carry (see [`Config::add_property`](crate::Config::add_property)).
fn check_options(ty: SocketType, opts: &Options) -> Result<(), ConfigError> {
    if opts.routing_id.len() > 255
        || opts
            .connect_routing_id
            .as_ref()
            .is_some_and(|id| id.len() > 255)
    {
        return Err(ConfigError::IdentityTooLong);
    }
    add_metadata(&mut crate::Config::new(ty), opts)
}

/// Add the application metadata (`ZMQ_METADATA`) to a connection's configuration.
fn add_metadata(config: &mut crate::Config, opts: &Options) -> Result<(), ConfigError> {
    for (name, value) in &opts.metadata {
        config.add_property(name, value)?;
    }
    Ok(())
}

/// What a send hands to one peer: a message, or a single-frame message whose body is
/// still the caller's (copied into the peer's output, or into a message if it must wait).
pub(crate) enum Outgoing<'a> {
    Message(Message),
    Frame(&'a [u8]),
}

impl<'a> Outgoing<'a> {
    /// The first frame (what PUB matches subscriptions against).
    pub(crate) fn first(&self) -> &[u8] {
        match self {
            Outgoing::Message(msg) => msg.first().map_or(&[], |f| &f[..]),
            Outgoing::Frame(body) => body,
        }
    }

    /// One more of the same, for another peer: a message shares its frames, a borrowed
    /// body stays borrowed (each peer copies it into its output).
    pub(crate) fn share(&self) -> Outgoing<'a> {
        match self {
            Outgoing::Message(msg) => Outgoing::Message(msg.clone()),
            Outgoing::Frame(body) => Outgoing::Frame(body),
        }
    }

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

#[cfg(test)]
mod tests {
    #[test]
    fn zap_address_is_the_ip_of_the_peer_address() {
        for (address, ip) in [
            ("127.0.0.1:53412", "127.0.0.1"),
            ("[::1]:5555", "::1"),
            ("[fe80::1%2]:5555", "fe80::1"),
            ("[::ffff:10.0.0.1]:1", "::ffff:10.0.0.1"),
            // A bare IP (as older drivers give) and an empty address stay as they are.
            ("10.1.2.3", "10.1.2.3"),
            ("::1", "::1"),
            ("", ""),
        ] {
            assert_eq!(super::ip_of(address), ip, "{address}");
        }
    }
}
