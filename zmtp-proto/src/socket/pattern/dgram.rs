//! DGRAM: `[address, body]` messages, one datagram each, over a bound `udp://` endpoint
//! (libzmq's `dgram.cpp`). Over a stream transport peers connect, but nothing is sent or
//! received.

use super::Pattern;
use crate::socket::{Message, PeerId, SendError, Sent, Socket};
use crate::udp::{check_dgram_body, parse_dgram_address};
use crate::Clock;

/// DGRAM.
pub(in crate::socket) struct Dgram;

impl Pattern for Dgram {
    fn on_message(_s: &mut Socket, _peer: PeerId, _msg: Message) -> Result<(), crate::Error> {
        Ok(())
    }

    /// `[address "a.b.c.d:port", body]`: the body to that address. Another shape is
    /// refused (libzmq's `EINVAL`); an address that does not parse drops the message, as
    /// libzmq does; a body over 8,192 bytes is refused.
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        let [address, body] = msg.frames() else {
            return Err(SendError::NotSupported(msg));
        };
        let Ok(to) = parse_dgram_address(address) else {
            return Ok(Sent::Dropped);
        };
        if let Err(e) = check_dgram_body(body) {
            return Err(SendError::Datagram(e, msg));
        }
        let body = body.clone();
        s.dgram_udp_send(to, body, msg).map(|()| Sent::Queued)
    }

    fn recv(s: &mut Socket, _now: &impl Clock) -> Option<Message> {
        s.udp_pop()
    }

    fn can_send(s: &Socket) -> bool {
        s.dgram_udp_room()
    }

    fn can_recv(s: &Socket) -> bool {
        s.udp_ready()
    }
}
