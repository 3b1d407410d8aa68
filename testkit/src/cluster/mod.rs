//! A virtual-time, seeded, in-memory cluster of sockets: no real sockets, no real clock.
//!
//! The cluster acts on the commands of its [`Socket`]s as a driver would: `Listen`
//! registers an endpoint, `Connect` links to a registered listener (or fails), `ClosePeer`
//! closes a link, `Authenticate` is answered by the member's `authenticator`; it keeps
//! each member's monitor events. Peers' addresses are made up as a driver on one host
//! would see them (see [`FIRST_EPHEMERAL_PORT`]). Bytes move through
//! bounded per-direction "kernel buffers" and are handed to the reader in chunk sizes drawn
//! from a seeded PRNG, only while the reader wants input.
//!
//! Streams can also end at the test itself instead of at a second socket: a [`Remote`]
//! (see [`remote`]) is a stream the test writes and reads byte by byte, for peers that
//! are scripted or hostile; a [`RawPeer`] plays such a peer with a bare connection. Connects to an address given to [`Cluster::hold_connects_to`]
//! wait for the test to complete or refuse them, and a member with `defer_auth` keeps
//! its authentication requests for [`Cluster::answer_auth`]. The cluster never moves the
//! bytes of a remote stream on its own; [`Cluster::run_until_idle`] and the other driving
//! calls leave them to the test.

mod drive;
pub mod remote;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use zmtp_proto::socket::{
    AuthReply, EndpointId, Message, MonitorEvent, MonitorEventKind, Options, PeerId, PeerStats,
    SendError, Sent, Socket, ZapRequest,
};
use zmtp_proto::{Instant, SocketType};

pub use remote::{RawPeer, Remote};

use crate::Rng;

/// For a zmtp-proto without CURVE, whose `Socket` has no `set_entropy`: nothing to seed.
#[allow(dead_code)]
trait NoEntropy {
    fn set_entropy(&mut self, _seed: [u8; 32]) {}
}

impl NoEntropy for Socket {}

/// Default capacity of one direction of a link (what the kernel buffers).
pub const LINK_CAPACITY: usize = 64 * 1024;

/// The port the cluster gives the connecting side of its first tcp stream; each stream
/// after takes the next.
///
/// The cluster makes up peers' addresses as a driver on one host would see them: for
/// `tcp://`, a socket that connected sees the listener as the `HOST:PORT` it connected to,
/// and a listener sees the connecting side as `127.0.0.1:PORT` with a port from this one
/// on; streams of other transports have no peer address (empty). Remote streams
/// ([`Remote`]) get theirs the same way.
pub const FIRST_EPHEMERAL_PORT: u16 = 50_000;

/// A socket of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node(pub usize);

/// One socket with what its driver has seen.
pub struct Member {
    /// The socket.
    pub socket: Socket,
    /// False once killed: the process is gone.
    pub alive: bool,
    /// Bytes it writes are dropped on the floor.
    pub silenced: bool,
    /// Monitor events, in order.
    pub monitor: Vec<MonitorEvent>,
    /// `Command::Closed` was seen, and when.
    pub closed_at: Option<Instant>,
    /// Every `ClosePeer` the socket asked for.
    pub closed_peers: Vec<PeerId>,
    /// Every `Connect` acted on: when, and to where.
    pub connect_attempts: Vec<(Instant, String)>,
    /// Answers authentication requests; `None`: no handler.
    pub authenticator: Option<fn(&ZapRequest) -> AuthReply>,
    /// Every authentication request seen.
    pub auth_requests: Vec<ZapRequest>,
    /// Keep authentication requests in `pending_auth` until [`Cluster::answer_auth`]
    /// instead of answering them at once.
    pub defer_auth: bool,
    /// Requests waiting for an answer (with `defer_auth`), oldest first; a request leaves
    /// when its peer's stream closes.
    pub pending_auth: VecDeque<(PeerId, ZapRequest)>,
}

impl Member {
    fn new(socket: Socket) -> Member {
        Member {
            socket,
            alive: true,
            silenced: false,
            monitor: Vec::new(),
            closed_at: None,
            closed_peers: Vec::new(),
            connect_attempts: Vec::new(),
            authenticator: None,
            auth_requests: Vec::new(),
            defer_auth: false,
            pending_auth: VecDeque::new(),
        }
    }

    /// The stream of `peer` is gone: its pending authentication goes with it.
    fn forget(&mut self, peer: PeerId) {
        self.pending_auth.retain(|(p, _)| *p != peer);
    }
}

/// One end of a link.
#[derive(Debug, Clone, Copy)]
struct End {
    node: Node,
    peer: PeerId,
    open: bool,
}

/// A stream between two sockets.
#[derive(Debug)]
struct Link {
    ends: [End; 2],
    /// `flight[i]`: bytes written by `ends[i]`, not yet read by the other end.
    flight: [VecDeque<u8>; 2],
}

/// The cluster: sockets, listeners, links and a virtual clock.
pub struct Cluster {
    now: Instant,
    rng: Rng,
    members: Vec<Member>,
    /// Resolved endpoint text -> listening socket and its endpoint.
    listeners: BTreeMap<String, (Node, EndpointId)>,
    links: BTreeMap<u64, Link>,
    next_link: u64,
    /// (node, peer) -> (link, which end).
    index: BTreeMap<(Node, PeerId), (u64, usize)>,
    /// Streams that end at the test, by id; and (node, peer) -> id.
    remotes: BTreeMap<u64, remote::RemoteLink>,
    remote_index: BTreeMap<(Node, PeerId), u64>,
    /// Addresses whose connects wait for the test.
    held_addrs: BTreeSet<String>,
    /// Connects waiting for the test: (node, endpoint) -> address.
    held: BTreeMap<(Node, EndpointId), String>,
    /// Held connects the test took out, not yet completed or refused: their address.
    taken: BTreeMap<(Node, EndpointId), String>,
    /// The port of the next connecting side of a tcp stream.
    next_ephemeral: u16,
    /// Peers with bytes the socket wants written (`next_dirty`, or a partial write).
    writers: BTreeSet<(Node, PeerId)>,
    next_port: u16,
    /// Capacity of each direction of a link.
    pub capacity: usize,
    /// Largest chunk handed to `handle_received` at once.
    pub max_chunk: usize,
    /// Steps taken by `run_until_idle` (for livelock detection).
    steps: u64,
}

impl Cluster {
    /// An empty cluster at [`START`](crate::START); `seed` drives every random choice.
    pub fn new(seed: u64) -> Cluster {
        Cluster {
            now: crate::START,
            rng: Rng::new(seed),
            members: Vec::new(),
            listeners: BTreeMap::new(),
            links: BTreeMap::new(),
            next_link: 0,
            index: BTreeMap::new(),
            remotes: BTreeMap::new(),
            remote_index: BTreeMap::new(),
            held_addrs: BTreeSet::new(),
            held: BTreeMap::new(),
            taken: BTreeMap::new(),
            next_ephemeral: FIRST_EPHEMERAL_PORT,
            writers: BTreeSet::new(),
            next_port: 40_000,
            capacity: LINK_CAPACITY,
            max_chunk: 4096,
            steps: 0,
        }
    }

    /// The peer address the cluster gives a socket for a stream on the endpoint `text`
    /// (the address connected to, or the listener's resolved endpoint), as a driver on one
    /// host would: for `tcp://`, the listening side of a stream is `HOST:PORT` of the
    /// address connected to and the connecting side is `127.0.0.1:PORT`, with ports from
    /// [`FIRST_EPHEMERAL_PORT`] on; other transports have no peer address (empty).
    /// `connecting` names the side whose address is wanted.
    pub(crate) fn peer_address(&mut self, text: &str, connecting: bool) -> String {
        let Some(host_port) = text.strip_prefix("tcp://") else {
            return String::new();
        };
        if !connecting {
            return host_port.to_string();
        }
        let port = self.next_ephemeral;
        self.next_ephemeral = self
            .next_ephemeral
            .wrapping_add(1)
            .max(FIRST_EPHEMERAL_PORT);
        format!("127.0.0.1:{port}")
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time since the cluster started.
    pub fn elapsed(&self) -> Duration {
        self.now.saturating_duration_since(crate::START)
    }

    /// Virtual time since `t`.
    pub fn elapsed_since(&self, t: Instant) -> Duration {
        self.now.saturating_duration_since(t)
    }

    /// Move the clock to `t` (never back) without firing any timer.
    pub fn set_now(&mut self, t: Instant) {
        self.now = self.now.max(t);
    }

    /// Add a socket; its seed and its entropy (for CURVE) are drawn from the cluster's
    /// PRNG. Panics on invalid options.
    pub fn add(&mut self, ty: SocketType, opts: Options) -> Node {
        let seed = self.rng.next_u64();
        let mut socket = Socket::new(ty, opts, seed).expect("valid options");
        let mut entropy = [0u8; 32];
        self.rng.fill(&mut entropy);
        // `Socket::set_entropy` when zmtp-proto has CURVE (an inherent method wins over a
        // trait's), else the no-op of `NoEntropy`: the tests of zmtp-proto take this crate
        // without its `curve` feature and may still turn CURVE on.
        socket.set_entropy(entropy);
        self.insert(socket)
    }

    /// Add a socket with default options.
    pub fn add_default(&mut self, ty: SocketType) -> Node {
        self.add(ty, Options::default())
    }

    /// Add a socket made elsewhere (with its own seed and entropy).
    pub fn insert(&mut self, socket: Socket) -> Node {
        self.members.push(Member::new(socket));
        Node(self.members.len() - 1)
    }

    /// A member, to change how its driver behaves.
    pub fn members_mut(&mut self, n: Node) -> &mut Member {
        &mut self.members[n.0]
    }

    /// A member and what its driver has seen.
    pub fn member(&self, n: Node) -> &Member {
        &self.members[n.0]
    }

    /// A member's socket.
    pub fn socket(&mut self, n: Node) -> &mut Socket {
        &mut self.members[n.0].socket
    }

    /// Enable every monitor event on a socket.
    pub fn monitor_all(&mut self, n: Node) {
        self.socket(n).set_monitor(0xFFFF);
    }

    /// Take the monitor events seen so far.
    pub fn take_monitor(&mut self, n: Node) -> Vec<MonitorEvent> {
        std::mem::take(&mut self.members[n.0].monitor)
    }

    /// The monitor events seen so far, as (kind, value), without taking them.
    pub fn monitor_kinds(&self, n: Node) -> Vec<MonitorEventKind> {
        self.members[n.0].monitor.iter().map(|e| e.kind).collect()
    }

    /// Bind and run until idle; returns the resolved endpoint.
    pub fn bind(&mut self, n: Node, endpoint: &str) -> String {
        self.socket(n).bind(endpoint).expect("valid bind endpoint");
        self.run_until_idle();
        self.members[n.0].socket.last_endpoint().to_string()
    }

    /// Connect (the cluster acts on it at the next step).
    pub fn connect(&mut self, n: Node, endpoint: &str) -> EndpointId {
        self.socket(n)
            .connect(endpoint)
            .expect("valid connect endpoint")
    }

    /// `send` on a member's socket at the cluster's time.
    pub fn send(&mut self, n: Node, msg: impl Into<Message>) -> Result<Sent, SendError> {
        let now = self.now;
        self.socket(n).send(msg, now)
    }

    /// `send_slice` at the cluster's time.
    pub fn send_slice(&mut self, n: Node, body: &[u8]) -> Result<Sent, SendError> {
        let now = self.now;
        self.socket(n).send_slice(body, now)
    }

    /// `recv` on a member's socket at the cluster's time.
    pub fn recv(&mut self, n: Node) -> Option<Message> {
        let now = self.now;
        self.socket(n).recv(now)
    }

    /// Every message `recv` gives now.
    pub fn recv_all(&mut self, n: Node) -> Vec<Message> {
        let now = self.now;
        std::iter::from_fn(|| self.socket(n).recv(now)).collect()
    }

    /// The peer of `a` at the end of an open link to `b`, if any (the first one).
    pub fn peer_between(&self, a: Node, b: Node) -> Option<PeerId> {
        self.links.values().find_map(|l| {
            (0..2).find_map(|i| {
                let (me, other) = (l.ends[i], l.ends[1 - i]);
                (me.node == a && other.node == b && me.open && other.open).then_some(me.peer)
            })
        })
    }

    /// Open links between `a` and `b`.
    pub fn links_between(&self, a: Node, b: Node) -> usize {
        self.links
            .values()
            .filter(|l| {
                l.ends[0].open
                    && l.ends[1].open
                    && ((l.ends[0].node == a && l.ends[1].node == b)
                        || (l.ends[0].node == b && l.ends[1].node == a))
            })
            .count()
    }

    /// The statistics of one peer of a member.
    pub fn peer_stats(&self, n: Node, peer: PeerId) -> Option<PeerStats> {
        self.members[n.0].socket.peer_stats(peer)
    }

    /// Bytes in flight from `from`'s end of its link to `to`.
    pub fn in_flight(&self, from: Node, to: Node) -> usize {
        self.links
            .values()
            .map(|l| {
                (0..2)
                    .filter(|&i| l.ends[i].node == from && l.ends[1 - i].node == to)
                    .map(|i| l.flight[i].len())
                    .sum::<usize>()
            })
            .sum()
    }

    /// The process of `n` dies: every link it has is reset (bytes in flight are lost and
    /// the other ends see the stream close), its listeners vanish. Its remote streams
    /// close too.
    pub fn kill(&mut self, n: Node) {
        self.members[n.0].alive = false;
        self.listeners.retain(|_, (node, _)| *node != n);
        self.writers.retain(|(node, _)| *node != n);
        self.held.retain(|(node, _), _| *node != n);
        self.taken.retain(|(node, _), _| *node != n);
        let ids: Vec<u64> = self
            .links
            .iter()
            .filter(|(_, l)| l.ends.iter().any(|e| e.node == n))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let Some(link) = self.links.remove(&id) else {
                continue;
            };
            for end in link.ends {
                self.index.remove(&(end.node, end.peer));
                if end.node != n && end.open {
                    let now = self.now;
                    let m = &mut self.members[end.node.0];
                    m.forget(end.peer);
                    m.socket.handle_closed(end.peer, now);
                }
            }
        }
        self.remotes.retain(|_, r| r.node != n);
        self.remote_index.retain(|(node, _), _| *node != n);
    }

    /// Bytes `n` writes from now on are dropped (it still reads).
    pub fn silence(&mut self, n: Node) {
        self.members[n.0].silenced = true;
    }
}
