//! A virtual-time, seeded, in-memory cluster of sockets: no real sockets, no real clock.
//!
//! The cluster acts on the events of its [`Socket`]s as a driver would: `Listen` registers
//! an endpoint, `Connect` links to a registered listener (or fails), `ClosePeer` closes a
//! link. Bytes move through bounded per-direction "kernel buffers" and are handed to the
//! reader in chunk sizes drawn from a seeded PRNG, only while the reader wants input.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use zmtp_proto::socket::{
    AuthReply, Command, EndpointId, Message, MonitorEvent, MonitorEventKind, Options, PeerId,
    PeerStats, SendError, Sent, Socket, ZapRequest,
};
use zmtp_proto::{Instant, SocketType};

/// Default capacity of one direction of a link (what the kernel buffers).
pub const LINK_CAPACITY: usize = 64 * 1024;

/// xorshift64*: a tiny deterministic PRNG.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        // Any seed works; zero is the one state xorshift cannot leave.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// A socket of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node(pub usize);

/// One socket with what its driver has seen.
pub struct Member {
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
    rng: XorShift,
    members: Vec<Member>,
    /// Resolved endpoint text -> listening socket and its endpoint.
    listeners: BTreeMap<String, (Node, EndpointId)>,
    links: BTreeMap<u64, Link>,
    next_link: u64,
    /// (node, peer) -> (link, which end).
    index: BTreeMap<(Node, PeerId), (u64, usize)>,
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
    pub fn new(seed: u64) -> Cluster {
        Cluster {
            now: Instant::from_millis(1_000),
            rng: XorShift::new(seed),
            members: Vec::new(),
            listeners: BTreeMap::new(),
            links: BTreeMap::new(),
            next_link: 0,
            index: BTreeMap::new(),
            writers: BTreeSet::new(),
            next_port: 40_000,
            capacity: LINK_CAPACITY,
            max_chunk: 4096,
            steps: 0,
        }
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time since the cluster started.
    pub fn elapsed(&self) -> Duration {
        self.now
            .saturating_duration_since(Instant::from_millis(1_000))
    }

    /// Virtual time since `t`.
    pub fn elapsed_since(&self, t: Instant) -> Duration {
        self.now.saturating_duration_since(t)
    }

    /// Add a socket; its seed is drawn from the cluster's PRNG.
    pub fn add(&mut self, ty: SocketType, opts: Options) -> Node {
        let seed = self.rng.next_u64();
        #[allow(unused_mut)]
        let mut socket = Socket::new(ty, opts, seed).expect("valid options");
        #[cfg(feature = "curve")]
        {
            let mut entropy = [0u8; 32];
            for chunk in entropy.chunks_mut(8) {
                chunk.copy_from_slice(&self.rng.next_u64().to_le_bytes());
            }
            socket.set_entropy(entropy);
        }
        self.members.push(Member {
            socket,
            alive: true,
            silenced: false,
            monitor: Vec::new(),
            closed_at: None,
            closed_peers: Vec::new(),
            connect_attempts: Vec::new(),
            authenticator: None,
            auth_requests: Vec::new(),
        });
        Node(self.members.len() - 1)
    }

    /// Add a socket with default options.
    pub fn add_default(&mut self, ty: SocketType) -> Node {
        self.add(ty, Options::default())
    }

    pub fn members_mut(&mut self, n: Node) -> &mut Member {
        &mut self.members[n.0]
    }

    pub fn member(&self, n: Node) -> &Member {
        &self.members[n.0]
    }

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

    pub fn send(&mut self, n: Node, msg: impl Into<Message>) -> Result<Sent, SendError> {
        let now = self.now;
        self.socket(n).send(msg, now)
    }

    /// `send_slice` at the cluster's time.
    pub fn send_slice(&mut self, n: Node, body: &[u8]) -> Result<Sent, SendError> {
        let now = self.now;
        self.socket(n).send_slice(body, now)
    }

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
    /// the other ends see the stream close), its listeners vanish.
    pub fn kill(&mut self, n: Node) {
        self.members[n.0].alive = false;
        self.listeners.retain(|_, (node, _)| *node != n);
        self.writers.retain(|(node, _)| *node != n);
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
                    self.members[end.node.0].socket.handle_closed(end.peer, now);
                }
            }
        }
    }

    /// Bytes `n` writes from now on are dropped (it still reads).
    pub fn silence(&mut self, n: Node) {
        self.members[n.0].silenced = true;
    }

    // ----- driving ---------------------------------------------------------------------

    /// Act on events, move bytes and report closes until nothing moves.
    pub fn run_until_idle(&mut self) {
        loop {
            self.steps += 1;
            assert!(self.steps < 5_000_000, "the cluster never goes idle");
            if !self.step() {
                return;
            }
        }
    }

    /// Run until idle, then jump to the earliest timer of any socket and fire it.
    /// False when no timer is armed.
    pub fn advance_to_next_timer(&mut self) -> bool {
        self.run_until_idle();
        let Some(t) = self.next_timer() else {
            return false;
        };
        self.now = self.now.max(t);
        self.fire_timers();
        self.run_until_idle();
        true
    }

    /// Let `duration` of virtual time pass, firing every timer on time.
    pub fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        loop {
            self.run_until_idle();
            match self.next_timer() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.fire_timers();
                }
                _ => {
                    self.now = end;
                    self.run_until_idle();
                    return;
                }
            }
        }
    }

    /// The earliest timer of any live socket.
    pub fn next_timer(&self) -> Option<Instant> {
        self.members
            .iter()
            .filter(|m| m.alive)
            .filter_map(|m| m.socket.poll_timeout())
            .min()
    }

    fn fire_timers(&mut self) {
        let now = self.now;
        for (i, m) in self.members.iter_mut().enumerate().filter(|(_, m)| m.alive) {
            if m.socket.poll_timeout().is_some_and(|t| t <= now) {
                m.socket.handle_timeout(now);
                // A driver would spin on a timer that stays expired.
                assert!(
                    m.socket.poll_timeout().is_none_or(|t| t > now),
                    "socket {i}: a timer is still expired after handle_timeout"
                );
            }
        }
    }

    fn step(&mut self) -> bool {
        let mut progress = self.handle_events();
        progress |= self.write();
        progress |= self.deliver();
        progress |= self.report_closes();
        progress
    }

    fn handle_events(&mut self) -> bool {
        let mut progress = false;
        for i in 0..self.members.len() {
            if !self.members[i].alive {
                continue;
            }
            while let Some(ev) = self.members[i].socket.poll_command() {
                progress = true;
                self.act(Node(i), ev);
            }
            while let Some(e) = self.members[i].socket.poll_monitor() {
                progress = true;
                self.members[i].monitor.push(e);
            }
        }
        progress
    }

    fn act(&mut self, n: Node, ev: Command) {
        let now = self.now;
        match ev {
            Command::Listen { endpoint, addr } => {
                let text = addr.to_string();
                let resolved = match text.rsplit_once(':') {
                    Some((head, "*")) | Some((head, "0")) if text.starts_with("tcp://") => {
                        let port = self.next_port;
                        self.next_port += 1;
                        format!("{head}:{port}")
                    }
                    _ => text,
                };
                let resolved = resolved.replacen("tcp://*:", "tcp://0.0.0.0:", 1);
                if self.listeners.contains_key(&resolved) {
                    // EADDRINUSE
                    self.members[n.0].socket.handle_bind_failed(endpoint, 98);
                } else {
                    self.listeners.insert(resolved.clone(), (n, endpoint));
                    self.members[n.0]
                        .socket
                        .handle_listening(endpoint, &resolved);
                }
            }
            Command::Connect { endpoint, addr } => {
                let text = addr.to_string();
                self.members[n.0].connect_attempts.push((now, text.clone()));
                let any = text
                    .rsplit_once(':')
                    .map(|(_, port)| format!("tcp://0.0.0.0:{port}"));
                let target = self
                    .listeners
                    .get(&text)
                    .or_else(|| any.and_then(|a| self.listeners.get(&a)))
                    .copied();
                let Some((ln, lep)) = target else {
                    self.members[n.0]
                        .socket
                        .handle_connect_failed(endpoint, now);
                    return;
                };
                let Some(cp) = self.members[n.0].socket.handle_connected(endpoint, "", now) else {
                    return;
                };
                match self.members[ln.0].socket.handle_accepted(lep, "", now) {
                    Some(lp) => {
                        let id = self.next_link;
                        self.next_link += 1;
                        self.links.insert(
                            id,
                            Link {
                                ends: [
                                    End {
                                        node: n,
                                        peer: cp,
                                        open: true,
                                    },
                                    End {
                                        node: ln,
                                        peer: lp,
                                        open: true,
                                    },
                                ],
                                flight: [VecDeque::new(), VecDeque::new()],
                            },
                        );
                        self.index.insert((n, cp), (id, 0));
                        self.index.insert((ln, lp), (id, 1));
                    }
                    // The listener closed the stream at once.
                    None => self.members[n.0].socket.handle_closed(cp, now),
                }
            }
            Command::StopListening { endpoint } => {
                self.listeners.retain(|_, v| *v != (n, endpoint));
            }
            Command::ClosePeer { peer } => {
                self.members[n.0].closed_peers.push(peer);
                self.writers.remove(&(n, peer));
                let Some((id, side)) = self.index.remove(&(n, peer)) else {
                    return;
                };
                let Some(link) = self.links.get_mut(&id) else {
                    return;
                };
                // A graceful close: what was written still reaches the other end, then
                // end of stream; what the other end writes from now on is lost.
                link.ends[side].open = false;
                link.flight[1 - side].clear();
                if !link.ends[1 - side].open {
                    self.links.remove(&id);
                }
            }
            Command::Authenticate { peer, request } => {
                let m = &mut self.members[n.0];
                let reply = m
                    .authenticator
                    .map_or(AuthReply::NoHandler, |auth| auth(&request));
                m.auth_requests.push(request);
                m.socket.handle_auth(peer, now, reply);
            }
            Command::Closed => self.members[n.0].closed_at = Some(now),
            _ => {}
        }
    }

    /// Write what every socket wants written, as far as link capacity allows.
    fn write(&mut self) -> bool {
        let now = self.now;
        for (i, m) in self.members.iter_mut().enumerate() {
            if !m.alive {
                continue;
            }
            while let Some(peer) = m.socket.next_dirty() {
                self.writers.insert((Node(i), peer));
            }
        }
        let mut progress = false;
        let writers: Vec<(Node, PeerId)> = self.writers.iter().copied().collect();
        for (n, peer) in writers {
            let Some(&(id, side)) = self.index.get(&(n, peer)) else {
                // No stream (the socket dropped it, or it has none yet).
                self.writers.remove(&(n, peer));
                continue;
            };
            let Some(link) = self.links.get_mut(&id) else {
                self.writers.remove(&(n, peer));
                continue;
            };
            let m = &mut self.members[n.0];
            let data = m.socket.poll_transmit(peer);
            if data.is_empty() {
                self.writers.remove(&(n, peer));
                continue;
            }
            let room = self.capacity.saturating_sub(link.flight[side].len());
            let k = data.len().min(room);
            if k == 0 {
                continue;
            }
            let whole = k == data.len();
            if !m.silenced && link.ends[1 - side].open {
                link.flight[side].extend(&data[..k]);
            }
            m.socket.advance(peer, k, now);
            progress = true;
            // The output may continue in further segments (large bodies are their own).
            if whole && m.socket.poll_transmit(peer).is_empty() {
                self.writers.remove(&(n, peer));
            }
        }
        progress
    }

    /// Hand in-flight bytes to readers that want them, in random chunk sizes.
    fn deliver(&mut self) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.links.keys().copied().collect();
        for id in ids {
            for from in 0..2 {
                let to = 1 - from;
                let Some(link) = self.links.get_mut(&id) else {
                    break;
                };
                let end = link.ends[to];
                if link.flight[from].is_empty() || !end.open {
                    continue;
                }
                let m = &mut self.members[end.node.0];
                if !m.alive || !m.socket.wants_read(end.peer) {
                    continue;
                }
                // Mostly segments of a few KiB, sometimes a handful of bytes.
                let max = if self.rng.range(0, 3) == 0 {
                    16
                } else {
                    self.max_chunk
                };
                let k = self.rng.range(1, max).min(link.flight[from].len());
                let chunk: Vec<u8> = link.flight[from].drain(..k).collect();
                m.socket.handle_received(end.peer, self.now, &chunk);
                progress = true;
            }
        }
        progress
    }

    /// Report end of stream to readers whose writer closed and whose bytes are all read.
    fn report_closes(&mut self) -> bool {
        let mut progress = false;
        let ids: Vec<u64> = self.links.keys().copied().collect();
        for id in ids {
            let Some(link) = self.links.get_mut(&id) else {
                continue;
            };
            for from in 0..2 {
                let to = 1 - from;
                let end = link.ends[to];
                if link.ends[from].open || !end.open || !link.flight[from].is_empty() {
                    continue;
                }
                let m = &mut self.members[end.node.0];
                if !m.alive || !m.socket.wants_read(end.peer) {
                    continue;
                }
                link.ends[to].open = false;
                self.index.remove(&(end.node, end.peer));
                self.writers.remove(&(end.node, end.peer));
                m.socket.handle_closed(end.peer, self.now);
                progress = true;
            }
            if link.ends.iter().all(|e| !e.open) {
                self.links.remove(&id);
            }
        }
        progress
    }
}

// ----- message helpers -----------------------------------------------------------------

/// A message from binary frames.
pub fn msg(frames: &[&[u8]]) -> Message {
    Message::from(frames)
}

/// A message from text frames.
pub fn m(frames: &[&str]) -> Message {
    frames
        .iter()
        .map(|f| bytes::Bytes::copy_from_slice(f.as_bytes()))
        .collect()
}

/// A message's frames as byte vectors, for comparisons.
pub fn frames(m: &Message) -> Vec<Vec<u8>> {
    m.frames().iter().map(|f| f.to_vec()).collect()
}

/// The frames as text joined with `|` (lossy), for compact assertions.
pub fn text(m: &Message) -> String {
    m.frames()
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect::<Vec<_>>()
        .join("|")
}

/// Options with some fields changed.
pub fn opts(f: impl FnOnce(&mut Options)) -> Options {
    let mut o = Options::default();
    f(&mut o);
    o
}
