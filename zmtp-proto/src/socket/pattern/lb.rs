//! PUSH, PULL and DEALER (and the single-frame SCATTER, GATHER and CLIENT): load
//! balancing out, fair queuing in.

use super::Pattern;
use crate::socket::{Message, PeerId, SendError, Sent, Socket};
use crate::Clock;

/// PUSH and SCATTER send only, PULL and GATHER receive only, DEALER and CLIENT do both.
pub(in crate::socket) struct LoadBalance;

impl Pattern for LoadBalance {
    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) -> Result<(), crate::Error> {
        // PUSH and SCATTER have no application input: what a peer sends them is dropped.
        if s.ty.receives() {
            s.queue_in(peer, msg);
        }
        Ok(())
    }

    #[inline]
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        if s.ty.sends() {
            s.send_lb(msg.into())
        } else {
            Err(SendError::NotSupported(msg))
        }
    }

    #[inline]
    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        if s.ty.receives() {
            s.fq_pop(false, now).map(|(_, _, msg)| msg)
        } else {
            None
        }
    }

    fn can_send(s: &Socket) -> bool {
        s.ty.sends() && s.lb_room()
    }

    fn can_recv(s: &Socket) -> bool {
        s.ty.receives() && s.fq_ready()
    }
}
