//! Streams that end at the test instead of at a second socket.
//!
//! A [`Remote`] is one stream of a member's socket whose other end is the test: a
//! scripted peer, a hostile one, or an observer of what the socket writes. The test
//! opens it on a listener ([`Cluster::accept_remote`]) or completes a connect the
//! cluster held for it ([`Cluster::hold_connects_to`], [`Cluster::take_held_connect`],
//! [`Cluster::connect_remote`]), hands the socket bytes with [`Cluster::remote_send`],
//! takes what the socket writes with [`Cluster::remote_receive`] and resets the stream
//! with [`Cluster::remote_reset`]. Everything happens when the test calls it, in the
//! sizes it chooses: the cluster's own driving never touches a remote stream.
//!
//! Its peer address is made up as for the streams between two sockets of the cluster
//! (see [`FIRST_EPHEMERAL_PORT`](super::FIRST_EPHEMERAL_PORT)). A remote stream is open until either side closes it: the socket (`ClosePeer`, acted on
//! by [`Cluster::handle_events`]), the test ([`Cluster::remote_reset`]) or the death of the
//! member ([`Cluster::kill`]).
//!
//! A [`RawPeer`] is a bare connection at the test's end of a remote stream: it handshakes
//! with the socket, sends frames, commands or raw bytes, and keeps what the socket wrote.

use zmtp_proto::codec::Command;
use zmtp_proto::socket::{AuthReply, EndpointId, PeerId};
use zmtp_proto::{Bytes, Config, Connection, EncodeError, OwnedItem, SocketType};

use super::{Cluster, Node};
use crate::pair::raw::{pump, transmit};

/// A stream between a socket of the cluster and the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Remote(u64);

/// The cluster's side of a [`Remote`].
#[derive(Debug)]
pub(super) struct RemoteLink {
    pub(super) node: Node,
    pub(super) peer: PeerId,
    /// Neither side has closed it.
    pub(super) open: bool,
}

impl Cluster {
    /// Connects to `addr` (as the socket gives it in `Connect`) wait for the test instead
    /// of linking to a listener or failing.
    pub fn hold_connects_to(&mut self, addr: &str) {
        self.held_addrs.insert(addr.to_string());
    }

    /// A connect of `n` held for the test (the one of its lowest endpoint), taken out of
    /// the waiting list; complete it with [`connect_remote`](Self::connect_remote) or
    /// refuse it with [`refuse_connect`](Self::refuse_connect).
    pub fn take_held_connect(&mut self, n: Node) -> Option<EndpointId> {
        let key = self.held.keys().find(|(node, _)| *node == n).copied()?;
        let address = self.held.remove(&key)?;
        self.taken.insert(key, address);
        Some(key.1)
    }

    /// Connects of `n` waiting for the test.
    pub fn held_connects(&self, n: Node) -> usize {
        self.held.keys().filter(|(node, _)| *node == n).count()
    }

    /// The stream of a held connect opens, with the test at the other end; `None` if the
    /// socket closed it at once.
    pub fn connect_remote(&mut self, n: Node, endpoint: EndpointId) -> Option<Remote> {
        let now = self.now;
        let text = self.taken.remove(&(n, endpoint)).unwrap_or_default();
        let address = self.peer_address(&text, false);
        let peer = self.members[n.0]
            .socket
            .handle_connected(endpoint, &address, now)?;
        Some(self.open_remote(n, peer))
    }

    /// A held connect fails (as if refused).
    pub fn refuse_connect(&mut self, n: Node, endpoint: EndpointId) {
        let now = self.now;
        self.taken.remove(&(n, endpoint));
        self.members[n.0]
            .socket
            .handle_connect_failed(endpoint, now);
    }

    /// The test connects to the listener at `addr`; `None` if nobody listens there or the
    /// socket closed the stream at once.
    pub fn accept_remote(&mut self, addr: &str) -> Option<Remote> {
        let (n, endpoint) = self.listeners.get(addr).copied()?;
        if !self.members[n.0].alive {
            return None;
        }
        let now = self.now;
        let address = self.peer_address(addr, true);
        let peer = self.members[n.0]
            .socket
            .handle_accepted(endpoint, &address, now)?;
        Some(self.open_remote(n, peer))
    }

    fn open_remote(&mut self, node: Node, peer: PeerId) -> Remote {
        let id = self.next_link;
        self.next_link += 1;
        self.remotes.insert(
            id,
            RemoteLink {
                node,
                peer,
                open: true,
            },
        );
        self.remote_index.insert((node, peer), id);
        Remote(id)
    }

    /// Whether the stream is still open on both sides.
    pub fn remote_open(&self, r: Remote) -> bool {
        self.remotes.get(&r.0).is_some_and(|l| l.open)
    }

    /// The socket and its peer at the other end of the stream.
    pub fn remote_peer(&self, r: Remote) -> Option<(Node, PeerId)> {
        self.remotes.get(&r.0).map(|l| (l.node, l.peer))
    }

    /// Whether the socket reads from the stream now (`wants_read`); false once closed.
    pub fn remote_wants_read(&self, r: Remote) -> bool {
        match self.remotes.get(&r.0) {
            Some(l) if l.open => self.members[l.node.0].socket.wants_read(l.peer),
            _ => false,
        }
    }

    /// The socket reads `bytes` from the stream now, in one piece (even none); false if
    /// the stream is closed. Like a driver, the test should send only while
    /// [`remote_wants_read`](Self::remote_wants_read); this call does not check it.
    pub fn remote_send(&mut self, r: Remote, bytes: &[u8]) -> bool {
        let Some(l) = self.remotes.get(&r.0).filter(|l| l.open) else {
            return false;
        };
        let (n, peer, now) = (l.node, l.peer, self.now);
        self.members[n.0].socket.handle_received(peer, now, bytes);
        true
    }

    /// What the socket writes to the stream now: up to `max` bytes (`0`: no limit) of its
    /// next output segment, reported written. Empty once closed.
    pub fn remote_receive(&mut self, r: Remote, max: usize) -> Vec<u8> {
        let Some(l) = self.remotes.get(&r.0).filter(|l| l.open) else {
            return Vec::new();
        };
        let (n, peer, now) = (l.node, l.peer, self.now);
        let socket = &mut self.members[n.0].socket;
        let out = socket.poll_transmit(peer);
        let k = if max == 0 {
            out.len()
        } else {
            max.min(out.len())
        };
        let written = out[..k].to_vec();
        socket.advance(peer, k, now);
        written
    }

    /// Everything the socket has written to the stream so far, reported written.
    pub fn remote_written(&mut self, r: Remote) -> Vec<u8> {
        let mut all = Vec::new();
        loop {
            let chunk = self.remote_receive(r, 0);
            if chunk.is_empty() {
                return all;
            }
            all.extend_from_slice(&chunk);
        }
    }

    /// The test drops the stream: the socket sees it close at once (as on a reset).
    pub fn remote_reset(&mut self, r: Remote) {
        let Some(l) = self.remotes.get_mut(&r.0).filter(|l| l.open) else {
            return;
        };
        l.open = false;
        let (n, peer, now) = (l.node, l.peer, self.now);
        self.remote_index.remove(&(n, peer));
        self.writers.remove(&(n, peer));
        let m = &mut self.members[n.0];
        m.forget(peer);
        m.socket.handle_closed(peer, now);
    }

    /// Answer the oldest authentication request `n` keeps (see `Member::defer_auth`);
    /// false if none waits.
    pub fn answer_auth(&mut self, n: Node, reply: AuthReply) -> bool {
        let now = self.now;
        let m = &mut self.members[n.0];
        let Some((peer, _)) = m.pending_auth.pop_front() else {
            return false;
        };
        m.socket.handle_auth(peer, now, reply);
        true
    }
}

/// A peer at the test's end of a [`Remote`] stream: a bare [`Connection`] the test drives
/// by hand, to script or observe what goes over the stream byte by byte.
///
/// [`exchange`](Self::exchange) moves bytes both ways until both sides are idle (the
/// handshake, then whatever either side has queued), checking that what the socket writes
/// is valid ZMTP. The peer keeps every byte the socket wrote ([`received`](Self::received))
/// and every item its connection parsed from them ([`items`](Self::items)); the `send_*`
/// calls hand the socket frames, commands or raw bytes at once.
///
/// ```
/// use zmtp_proto::SocketType;
/// use zmtp_testkit::cluster::{Cluster, RawPeer};
///
/// let mut c = Cluster::new(1);
/// let pull = c.add_default(SocketType::Pull);
/// c.bind(pull, "tcp://127.0.0.1:5555");
/// let remote = c.accept_remote("tcp://127.0.0.1:5555").unwrap();
/// let mut push = RawPeer::new(&c, remote, SocketType::Push);
/// push.exchange(&mut c);
/// assert!(push.conn.is_established());
/// push.send_frames(&mut c, &[b"hello"]);
/// assert_eq!(&c.recv(pull).unwrap().frames()[0][..], b"hello");
/// ```
pub struct RawPeer {
    /// The stream.
    pub remote: Remote,
    /// The peer's connection.
    pub conn: Connection,
    /// Bytes from the socket not yet parsed by `conn`.
    rx: Vec<u8>,
    /// Bytes of `conn` the socket has not read yet.
    tx: Vec<u8>,
    /// Every byte the socket wrote to the stream, in order, greeting included.
    pub received: Vec<u8>,
    /// Every item `conn` parsed from what the socket wrote, in order.
    pub items: Vec<OwnedItem>,
}

impl RawPeer {
    /// A peer of type `ty` (NULL security, ZMTP 3.1, no handshake deadline) at the test's
    /// end of `remote`.
    pub fn new(c: &Cluster, remote: Remote, ty: SocketType) -> RawPeer {
        let mut config = Config::new(ty);
        config.handshake_timeout = None;
        RawPeer::with_config(c, remote, config)
    }

    /// A peer with a connection made from `config`.
    pub fn with_config(c: &Cluster, remote: Remote, config: Config) -> RawPeer {
        RawPeer {
            remote,
            conn: Connection::new(config, c.now()),
            rx: Vec::new(),
            tx: Vec::new(),
            received: Vec::new(),
            items: Vec::new(),
        }
    }

    /// Move bytes both ways until neither side has anything more to say (or the stream
    /// closed). The peer's bytes wait while the socket does not read (RCVHWM). Panics if
    /// the socket writes invalid ZMTP or the two never go idle.
    pub fn exchange(&mut self, c: &mut Cluster) {
        for _ in 0..64 {
            c.handle_events();
            if !c.remote_open(self.remote) {
                return;
            }
            let out = transmit(&mut self.conn);
            self.tx.extend_from_slice(&out);
            let sent = !self.tx.is_empty() && c.remote_wants_read(self.remote);
            if sent {
                assert!(c.remote_send(self.remote, &self.tx));
                self.tx.clear();
            }
            let got = c.remote_receive(self.remote, 0);
            self.take(c, &got);
            if !sent && got.is_empty() {
                c.handle_events();
                return;
            }
        }
        panic!("the exchange never went idle");
    }

    /// Parse bytes the socket wrote.
    fn take(&mut self, c: &Cluster, got: &[u8]) {
        self.received.extend_from_slice(got);
        self.rx.extend_from_slice(got);
        let items = &mut self.items;
        pump(&mut self.conn, c.now(), &mut self.rx, &mut |item| {
            items.push(item)
        })
        .expect("the socket writes valid ZMTP");
    }

    /// What `encode` writes into a buffer large enough for it (any control frame the
    /// connection has pending comes first). Panics on any other refusal.
    fn encode(
        &mut self,
        encode: impl Fn(&mut Connection, &mut [u8]) -> Result<usize, EncodeError>,
    ) -> Vec<u8> {
        let mut out = vec![0u8; 64];
        loop {
            match encode(&mut self.conn, &mut out) {
                Ok(n) => {
                    out.truncate(n);
                    return out;
                }
                Err(EncodeError::InsufficientSize { required }) if required > out.len() => {
                    out.resize(required, 0);
                }
                Err(e) => panic!("the peer's connection cannot send: {e:?}"),
            }
        }
    }

    /// The frames of one message (each but the last with MORE), to the socket now; false
    /// if the stream is closed. Panics if the connection cannot send yet.
    pub fn send_frames(&mut self, c: &mut Cluster, frames: &[&[u8]]) -> bool {
        let mut bytes = Vec::new();
        for (i, body) in frames.iter().enumerate() {
            let more = i + 1 < frames.len();
            bytes.extend(self.encode(|conn, out| conn.send_frame(body, more, out)));
        }
        self.send_raw(c, &bytes)
    }

    /// A command (JOIN, SUBSCRIBE, ...) to the socket now; false if the stream is closed.
    /// Panics if the connection cannot send it.
    pub fn send_command(&mut self, c: &mut Cluster, cmd: &Command<'_>) -> bool {
        let bytes = self.encode(|conn, out| conn.send_command(cmd, out));
        self.send_raw(c, &bytes)
    }

    /// Bytes to the socket as they are, in one piece (whether it reads now or not), then
    /// the socket's commands acted on; false if the stream is closed.
    pub fn send_raw(&mut self, c: &mut Cluster, bytes: &[u8]) -> bool {
        let open = c.remote_send(self.remote, bytes);
        c.handle_events();
        open
    }

    /// The messages parsed so far, as lists of frames (frames grouped by their MORE flag;
    /// commands left out).
    pub fn messages(&self) -> Vec<Vec<Bytes>> {
        let mut out = Vec::new();
        let mut current = Vec::new();
        for item in &self.items {
            if let OwnedItem::Frame { body, more } = item {
                current.push(body.clone());
                if !more {
                    out.push(std::mem::take(&mut current));
                }
            }
        }
        out
    }
}
