//! PUSH, PULL and DEALER: load balancing out, fair queuing in.

use super::Pattern;
use crate::socket::{Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, SocketType};

/// PUSH sends only, PULL receives only, DEALER does both.
pub(in crate::socket) struct LoadBalance;

impl Pattern for LoadBalance {
    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) {
        // PUSH has no application input: what a peer sends it is dropped.
        if s.ty != SocketType::Push {
            s.queue_in(peer, msg);
        }
    }

    #[inline]
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        match s.ty {
            SocketType::Pull => Err(SendError::NotSupported(msg)),
            _ => s.send_lb(msg.into()),
        }
    }

    #[inline]
    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        match s.ty {
            SocketType::Push => None,
            _ => s.fq_pop(false, now).map(|(_, _, msg)| msg),
        }
    }

    fn can_send(s: &Socket) -> bool {
        s.ty != SocketType::Pull && s.lb_room()
    }

    fn can_recv(s: &Socket) -> bool {
        s.ty != SocketType::Push && s.fq_ready()
    }
}
