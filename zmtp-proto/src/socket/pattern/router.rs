//! ROUTER: peers addressed by routing id, fair queuing in with the id prepended.

use alloc::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};

use super::Pattern;
use crate::socket::{Ending, Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, Instant};

/// ROUTER's routing table.
#[derive(Debug)]
pub(in crate::socket) struct RouterState {
    /// The next generated routing id (libzmq starts it at a random value).
    next_id: u32,
    /// Routing id -> peer.
    routes: BTreeMap<Bytes, PeerId>,
}

impl RouterState {
    pub(super) fn new(first_id: u32) -> RouterState {
        RouterState {
            next_id: first_id,
            routes: BTreeMap::new(),
        }
    }
}

/// ROUTER.
pub(in crate::socket) struct Router;

impl Pattern for Router {
    /// Give the peer its routing id: set by `CONNECT_ROUTING_ID`, announced by the peer, or
    /// generated. A duplicate stays unroutable unless `ROUTER_HANDOVER` hands the id over.
    fn attach(s: &mut Socket, peer: PeerId, now: Instant) -> bool {
        let Some(p) = s.peers.get(&peer) else {
            return false;
        };
        let announced = p
            .stream
            .as_ref()
            .map(|l| Bytes::copy_from_slice(l.conn.connection().peer_identity()))
            .unwrap_or_default();
        let id = if !p.routing_id.is_empty() {
            p.routing_id.clone()
        } else if !announced.is_empty() {
            announced
        } else {
            let state = &mut s.pattern.router;
            let n = state.next_id;
            state.next_id = n.wrapping_add(1);
            let mut id = BytesMut::with_capacity(5);
            id.put_u8(0);
            id.put_u32(n);
            id.freeze()
        };
        if let Some(&old) = s.pattern.router.routes.get(&id) {
            if old != peer {
                if !s.opts.router_handover {
                    // libzmq keeps the new connection open but never routes to or from it.
                    return false;
                }
                s.end_stream(old, Ending::Dropped, now);
                s.remove_peer(old);
            }
        }
        if let Some(p) = s.peers.get_mut(&peer) {
            p.routing_id = id.clone();
            if s.opts.router_notify.connect {
                // `[routing id][empty]`, read before anything the peer sends on this
                // connection and after what it sent on the one before (a connect peer
                // stays attached while it reconnects), as libzmq's engine writes it
                // to the pipe.
                p.inq.push_back(Message::from(Bytes::new()));
            }
        }
        s.pattern.router.routes.insert(id, peer);
        s.attach(peer);
        true
    }

    /// A connect peer named by `CONNECT_ROUTING_ID` is routable under that id from now
    /// on (unless another peer has it), as libzmq's ROUTER names the pipe at connect;
    /// otherwise it waits for its handshake to tell its id.
    fn connecting(s: &mut Socket, peer: PeerId) {
        let Some(p) = s.peers.get(&peer) else {
            return;
        };
        if p.routing_id.is_empty() || s.pattern.router.routes.contains_key(&p.routing_id) {
            return;
        }
        s.pattern.router.routes.insert(p.routing_id.clone(), peer);
        s.attach(peer);
    }

    fn detach(s: &mut Socket, peer: PeerId) {
        let Some(p) = s.peers.get(&peer) else {
            return;
        };
        let routes = &mut s.pattern.router.routes;
        if routes.get(&p.routing_id) == Some(&peer) {
            routes.remove(&p.routing_id);
        }
    }

    fn send(s: &mut Socket, mut msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        if msg.len() < 2 {
            // A routing id alone is not a message: libzmq drops it.
            return Ok(Sent::Dropped);
        }
        let id = msg.first().cloned().unwrap_or_default();
        let Some(&peer) = s.pattern.router.routes.get(&id) else {
            return if s.opts.router_mandatory {
                Err(SendError::HostUnreachable(msg))
            } else {
                Ok(Sent::Dropped)
            };
        };
        if !s.has_room(peer) {
            return if s.opts.router_mandatory {
                Err(SendError::WouldBlock(msg))
            } else {
                Ok(Sent::Dropped)
            };
        }
        msg.pop_front();
        s.deliver(peer, msg);
        Ok(Sent::Queued)
    }

    #[inline]
    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        let (_, id, mut msg) = s.fq_pop(true, now)?;
        msg.push_front(id.unwrap_or_default());
        Some(msg)
    }

    /// ROUTER always takes a message (it drops what it cannot route).
    fn can_send(_s: &Socket) -> bool {
        true
    }
}

impl Socket {
    /// ROUTER, STREAM: whether a peer has routing id `id` now, so that a send to it is not
    /// dropped or refused as unroutable (what libzmq's ROUTER checks on a message's first
    /// frame under `ZMQ_ROUTER_MANDATORY`, and its STREAM always). False on other types.
    pub fn routes_to(&self, id: &[u8]) -> bool {
        self.route_has_room(id).is_some()
    }

    /// ROUTER, STREAM: whether the peer with routing id `id` has room for a message now
    /// (below SNDHWM, what libzmq's `zmq_socket_get_peer_state` reports as
    /// `ZMQ_POLLOUT`); `None` when no peer has that id, or on other types.
    pub fn route_has_room(&self, id: &[u8]) -> Option<bool> {
        let routes = match self.socket_type() {
            crate::SocketType::Router => &self.pattern.router.routes,
            crate::SocketType::Stream => self.pattern.stream.routes(),
            _ => return None,
        };
        let peer = *routes.get(id)?;
        Some(self.has_room(peer))
    }
}
