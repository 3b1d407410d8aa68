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

use zmtp_proto::socket::{AuthReply, EndpointId, PeerId};

use super::{Cluster, Node};

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
