//! PAIR: one peer at a time, both ways.

use super::Pattern;
use crate::socket::{Ending, Message, PeerId, SendError, Sent, Socket};
use crate::{Clock, Instant};

/// PAIR is exclusive: a second peer is refused while the first is attached.
pub(in crate::socket) struct Pair;

impl Pattern for Pair {
    fn attach(s: &mut Socket, peer: PeerId, now: Instant) -> bool {
        if s.attached.iter().any(|&other| other != peer) {
            s.end_stream(peer, Ending::Dropped, now);
            return false;
        }
        s.attach(peer);
        true
    }

    #[inline]
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        s.send_lb(msg.into())
    }
}
