//! SERVER and PEER: peers addressed by a number the socket gives each of them, single-frame
//! messages carrying it as their routing id.

use alloc::collections::BTreeMap;

use bytes::Bytes;

use super::Pattern;
use crate::socket::{EndpointError, Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, Instant, SocketType};

/// The routing table of SERVER and PEER.
#[derive(Debug)]
pub(in crate::socket) struct ServerState {
    /// The next id to give (libzmq counts up from a random start, skipping 0).
    next_id: u32,
    /// Routing id -> peer.
    routes: BTreeMap<u32, PeerId>,
}

impl ServerState {
    pub(super) fn new(first_id: u32) -> ServerState {
        ServerState {
            next_id: first_id,
            routes: BTreeMap::new(),
        }
    }
}

/// SERVER and PEER.
pub(in crate::socket) struct Server;

impl Socket {
    /// Give `peer` the next routing id. The id is local: it never goes on the wire. The
    /// peer keeps it (as the four bytes of its `routing_id`) while it is routable.
    pub(in crate::socket) fn number_peer(&mut self, peer: PeerId) -> u32 {
        let state = &mut self.pattern.server;
        let mut id = state.next_id;
        while id == 0 || state.routes.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        state.next_id = id.wrapping_add(1);
        state.routes.insert(id, peer);
        if let Some(p) = self.peers.get_mut(&peer) {
            p.routing_id = Bytes::copy_from_slice(&id.to_be_bytes());
        }
        id
    }

    /// PEER: connect to `endpoint` and return the routing id of the peer there, to address
    /// messages to it ([`Message::set_routing_id`]) before or after it connects (libzmq's
    /// `zmq_connect_peer`). Refused on other types and, as libzmq does, while `IMMEDIATE`
    /// is set (the peer would have no id until it connects).
    ///
    /// ```
    /// use zmtp_proto::socket::{Message, Options, Socket};
    /// use zmtp_proto::SocketType;
    ///
    /// let mut peer = Socket::new(SocketType::Peer, Options::default(), 1).unwrap();
    /// let id = peer.connect_peer("tcp://127.0.0.1:5555").unwrap();
    /// let mut hello = Message::from("hello");
    /// hello.set_routing_id(id).unwrap();
    /// // Queued for that peer until it connects.
    /// peer.send(hello, zmtp_proto::Instant::ZERO).unwrap();
    /// ```
    pub fn connect_peer(&mut self, endpoint: &str) -> Result<u32, EndpointError> {
        if self.ty != SocketType::Peer || self.opts.immediate {
            return Err(EndpointError::ConnectPeerRefused);
        }
        let id = self.connect(endpoint)?;
        // `connect` numbered the endpoint's peer.
        self.endpoints
            .get(&id)
            .and_then(|e| e.peer)
            .and_then(|peer| self.peers.get(&peer))
            .map(|p| Socket::peer_number(&p.routing_id))
            .ok_or(EndpointError::ConnectPeerRefused)
    }

    /// A routing id as the four bytes a numbered peer keeps.
    fn peer_number(id: &[u8]) -> u32 {
        id.try_into().map(u32::from_be_bytes).unwrap_or(0)
    }
}

impl Pattern for Server {
    /// The connect peer's queue has its routing id from now on.
    fn connecting(s: &mut Socket, peer: PeerId) {
        s.attach(peer);
        s.number_peer(peer);
    }

    /// Number a peer that has no id yet (accepted, or connected by `connect` with
    /// `IMMEDIATE`). A peer numbered before is routable again under its id: PEER's
    /// `connect_peer` numbered its peer already, and a connected peer that `IMMEDIATE`
    /// detached while it reconnected keeps its number (unless another peer took it).
    fn attach(s: &mut Socket, peer: PeerId, _now: Instant) -> bool {
        let id = s
            .peers
            .get(&peer)
            .map_or(0, |p| Socket::peer_number(&p.routing_id));
        let routes = &mut s.pattern.server.routes;
        if id != 0 && routes.get(&id).is_none_or(|&p| p == peer) {
            routes.insert(id, peer);
        } else {
            s.number_peer(peer);
        }
        s.attach(peer);
        true
    }

    fn detach(s: &mut Socket, peer: PeerId) {
        let Some(p) = s.peers.get(&peer) else {
            return;
        };
        let id = Socket::peer_number(&p.routing_id);
        let routes = &mut s.pattern.server.routes;
        if routes.get(&id) == Some(&peer) {
            routes.remove(&id);
        }
    }

    /// To the peer the message's routing id names: none, `RoutingIdRequired`; unknown,
    /// `HostUnreachable`; full, `WouldBlock` (libzmq's EHOSTUNREACH for the first two, and
    /// EAGAIN).
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        let Some(id) = msg.routing_id() else {
            return Err(SendError::RoutingIdRequired(msg));
        };
        let Some(peer) = s.pattern.server.routes.get(&id).copied() else {
            return Err(SendError::HostUnreachable(msg));
        };
        if !s.has_room(peer) {
            return Err(SendError::WouldBlock(msg));
        }
        // The id is the socket's, not the peer's: only the body goes.
        match msg.into_body() {
            Some(body) => s.deliver(peer, Message::from(body)),
            None => return Ok(Sent::Dropped),
        }
        Ok(Sent::Queued)
    }

    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        let (_, id, mut msg) = s.fq_pop(true, now)?;
        let id = Socket::peer_number(id.as_deref().unwrap_or_default());
        msg.tag(id, None);
        Some(msg)
    }

    /// A SERVER takes a message whenever it has a peer (which one is the message's
    /// business, as with ROUTER).
    fn can_send(s: &Socket) -> bool {
        !s.attached.is_empty()
    }
}
