//! REQ and REP: strict request/reply with envelopes.

use bytes::Bytes;

use super::Pattern;
use crate::socket::{Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, SocketType};

/// REQ's and REP's place in the exchange.
#[derive(Debug)]
pub(in crate::socket) struct ReqRepState {
    /// REQ: the peer asked and the correlation id, while a reply is awaited.
    awaiting: Option<(PeerId, u32)>,
    /// REQ: the next correlation id (libzmq starts it at a random value).
    next_request_id: u32,
    /// REP: the peer and envelope of the request being answered.
    replying: Option<(PeerId, Message)>,
}

impl ReqRepState {
    pub(super) fn new(first_request_id: u32) -> ReqRepState {
        ReqRepState {
            awaiting: None,
            next_request_id: first_request_id,
            replying: None,
        }
    }
}

/// REQ (load-balanced requests, one reply each) and REP (fair-queued requests, each
/// answered to its sender).
pub(in crate::socket) struct ReqRep;

impl Pattern for ReqRep {
    fn send(s: &mut Socket, msg: Message, now: &impl Clock) -> Result<Sent, SendError> {
        match s.ty {
            SocketType::Req => send_req(s, msg, now),
            _ => send_rep(s, msg),
        }
    }

    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        match s.ty {
            SocketType::Req => recv_req(s, now),
            _ => recv_rep(s, now),
        }
    }

    fn can_send(s: &Socket) -> bool {
        let state = &s.pattern.reqrep;
        match s.ty {
            SocketType::Req => (state.awaiting.is_none() || s.opts.req_relaxed) && s.lb_room(),
            _ => state.replying.is_some(),
        }
    }

    fn can_recv(s: &Socket) -> bool {
        let state = &s.pattern.reqrep;
        match s.ty {
            SocketType::Req => state
                .awaiting
                .is_some_and(|(peer, _)| s.has_input_from(peer)),
            _ => state.replying.is_none() && s.fq_ready(),
        }
    }
}

fn send_req(s: &mut Socket, mut msg: Message, now: &impl Clock) -> Result<Sent, SendError> {
    if s.pattern.reqrep.awaiting.is_some() && !s.opts.req_relaxed {
        return Err(SendError::InvalidState(msg));
    }
    // Whatever waits now (a reply to an earlier request, anything unsolicited) cannot
    // be the reply to this one: libzmq drops every queued message when a request
    // begins. Done before picking the peer: draining may drop a peer that fails.
    s.discard_input(None, now);
    let Some(peer) = s.lb_pick() else {
        return Err(SendError::WouldBlock(msg));
    };
    let state = &mut s.pattern.reqrep;
    let id = state.next_request_id;
    state.next_request_id = id.wrapping_add(1);
    let mut envelope = Message::new();
    if s.opts.req_correlate {
        // libzmq puts the id in host byte order.
        envelope.push_back(Bytes::copy_from_slice(&id.to_ne_bytes()));
    }
    envelope.push_back(Bytes::new());
    msg.prepend(envelope);
    s.deliver(peer, msg);
    s.pattern.reqrep.awaiting = Some((peer, id));
    Ok(Sent::Queued)
}

fn send_rep(s: &mut Socket, mut msg: Message) -> Result<Sent, SendError> {
    let Some((peer, envelope)) = s.pattern.reqrep.replying.take() else {
        return Err(SendError::InvalidState(msg));
    };
    msg.prepend(envelope);
    if s.peers.get(&peer).is_some_and(|p| p.attached) && s.has_room(peer) {
        s.deliver(peer, msg);
        Ok(Sent::Queued)
    } else {
        Ok(Sent::Dropped)
    }
}

fn recv_req(s: &mut Socket, now: &impl Clock) -> Option<Message> {
    let (asked, id) = s.pattern.reqrep.awaiting?;
    // Only the peer asked may answer: anything from the others is dropped.
    s.discard_input(Some(asked), now);
    while let Some(mut msg) = s
        .pop_departed(Some(asked))
        .map(|(_, _, msg)| msg)
        .or_else(|| s.pop_from(asked, now))
    {
        if s.opts.req_correlate {
            let matches = msg.first().is_some_and(|f| f[..] == id.to_ne_bytes());
            if !matches {
                continue;
            }
            msg.pop_front();
        }
        if msg.first().is_none_or(|f| !f.is_empty()) {
            continue;
        }
        msg.pop_front();
        s.pattern.reqrep.awaiting = None;
        return Some(msg);
    }
    None
}

fn recv_rep(s: &mut Socket, now: &impl Clock) -> Option<Message> {
    if s.pattern.reqrep.replying.is_some() {
        return None;
    }
    loop {
        let (peer, _, mut msg) = s.fq_pop(false, now)?;
        // The envelope is everything up to and including the first empty frame.
        let Some(delimiter) = msg.frames().iter().position(|f| f.is_empty()) else {
            continue;
        };
        let body = msg.split_off(delimiter + 1);
        s.pattern.reqrep.replying = Some((peer, msg));
        return Some(body);
    }
}
