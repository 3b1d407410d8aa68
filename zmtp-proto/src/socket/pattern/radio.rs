//! RADIO and DISH: messages to groups. A DISH joins groups (JOIN and LEAVE commands to every
//! RADIO, all joins again on each reconnect); a RADIO sends each message, as two frames
//! `[group (MORE), body]`, to the peers that joined its group, dropping it for a peer at
//! its HWM. Over `udp://` (see `socket/udp.rs`) a RADIO sends every message to every
//! endpoint and the DISH filters what arrives.

use alloc::collections::BTreeSet;

use bytes::Bytes;

use super::Pattern;
use crate::codec::Command;
use crate::socket::{Message, PeerId, SendError, Sent, Socket, GROUP_MAX_LEN};
use crate::{Clock, Error, SocketType};

/// DISH: the groups joined.
#[derive(Debug, Default)]
pub(in crate::socket) struct DishState {
    joined: BTreeSet<Bytes>,
}

/// Why [`Socket::join`] or [`Socket::leave`] refused.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupError {
    /// Only a DISH joins and leaves groups (libzmq's `ENOTSUP`).
    NotDish,
    /// The group is this many bytes, more than [`GROUP_MAX_LEN`] (libzmq's `EINVAL`).
    TooLong(usize),
    /// `join` of a group already joined, or `leave` of one not joined (libzmq's `EINVAL`).
    Membership,
}

impl core::fmt::Display for GroupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GroupError::NotDish => f.write_str("only a DISH joins or leaves groups"),
            GroupError::TooLong(n) => {
                write!(f, "a group of {n} bytes is longer than {GROUP_MAX_LEN}")
            }
            GroupError::Membership => {
                f.write_str("join of a group already joined, or leave of one not joined")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for GroupError {}

/// RADIO and DISH.
pub(in crate::socket) struct Radio;

impl Socket {
    /// DISH: receive the messages RADIO peers send to `group` (at most [`GROUP_MAX_LEN`]
    /// bytes; matched whole, not as a prefix). Every RADIO peer is told now, and again
    /// whenever it reconnects.
    ///
    /// ```
    /// use zmtp_proto::socket::{GroupError, Options, Socket};
    /// use zmtp_proto::SocketType;
    ///
    /// let mut dish = Socket::new(SocketType::Dish, Options::default(), 1).unwrap();
    /// dish.join(b"weather").unwrap();
    /// assert_eq!(dish.join(b"weather"), Err(GroupError::Membership));
    /// dish.leave(b"weather").unwrap();
    /// let mut radio = Socket::new(SocketType::Radio, Options::default(), 2).unwrap();
    /// assert_eq!(radio.join(b"weather"), Err(GroupError::NotDish));
    /// ```
    pub fn join(&mut self, group: &[u8]) -> Result<(), GroupError> {
        self.check_group(group)?;
        if !self
            .pattern
            .dish
            .joined
            .insert(Bytes::copy_from_slice(group))
        {
            return Err(GroupError::Membership);
        }
        self.broadcast_group(group, true);
        Ok(())
    }

    /// DISH: stop receiving the messages of `group`.
    pub fn leave(&mut self, group: &[u8]) -> Result<(), GroupError> {
        self.check_group(group)?;
        if !self.pattern.dish.joined.remove(group) {
            return Err(GroupError::Membership);
        }
        self.broadcast_group(group, false);
        Ok(())
    }

    /// DISH: whether `group` was joined.
    pub(in crate::socket) fn is_joined(&self, group: &[u8]) -> bool {
        self.pattern.dish.joined.contains(group)
    }

    fn check_group(&self, group: &[u8]) -> Result<(), GroupError> {
        if self.ty != SocketType::Dish {
            return Err(GroupError::NotDish);
        }
        if group.len() > GROUP_MAX_LEN {
            return Err(GroupError::TooLong(group.len()));
        }
        Ok(())
    }

    fn broadcast_group(&mut self, group: &[u8], join: bool) {
        for i in 0..self.attached.len() {
            let peer = self.attached[i];
            self.send_group(peer, group, join);
        }
    }

    /// A JOIN or LEAVE command to one peer whose handshake is done.
    fn send_group(&mut self, peer: PeerId, group: &[u8], join: bool) {
        let Some(link) = self.established_link(peer) else {
            return;
        };
        let cmd = if join {
            Command::Join(group)
        } else {
            Command::Leave(group)
        };
        if link.conn.send_command(&cmd).is_ok() {
            self.mark_dirty(peer);
        }
    }
}

impl Pattern for Radio {
    /// DISH: every joined group to the new peer, in sorted order, as libzmq does.
    fn established(s: &mut Socket, peer: PeerId) {
        if s.ty != SocketType::Dish {
            return;
        }
        let groups: alloc::vec::Vec<Bytes> = s.pattern.dish.joined.iter().cloned().collect();
        for group in groups {
            s.send_group(peer, &group, true);
        }
    }

    /// DISH: a message is `[group (MORE), body]`; anything else, or a group over
    /// [`GROUP_MAX_LEN`], fails the connection (as libzmq's DISH drops it). RADIO takes no
    /// messages.
    fn on_message(s: &mut Socket, peer: PeerId, msg: Message) -> Result<(), Error> {
        if s.ty != SocketType::Dish {
            return Ok(());
        }
        let mut msg = msg;
        let group = match msg.ungroup() {
            Some(group) if group.len() <= GROUP_MAX_LEN => group,
            _ => return Err(Error::MalformedGroupMessage),
        };
        if !s.pattern.dish.joined.contains(&group) {
            return Ok(());
        }
        s.queue_in(peer, msg);
        Ok(())
    }

    /// RADIO: a peer joined or left a group. A group over [`GROUP_MAX_LEN`] fails the
    /// connection (libzmq's RADIO aborts the process).
    fn on_group(s: &mut Socket, peer: PeerId, group: Bytes, join: bool) -> Result<(), Error> {
        if group.len() > GROUP_MAX_LEN {
            return Err(Error::GroupTooLong { len: group.len() });
        }
        if s.ty != SocketType::Radio {
            return Ok(());
        }
        let Some(p) = s.peers.get_mut(&peer) else {
            return Ok(());
        };
        let at = p.subs.iter().position(|g| *g == group);
        match (join, at) {
            (true, None) => p.subs.push(group),
            (false, Some(i)) => {
                p.subs.swap_remove(i);
            }
            _ => {}
        }
        Ok(())
    }

    /// RADIO: `[group, body]` to every peer that joined the message's group and has room
    /// (none set: the empty group), and to every udp endpoint with room whatever the group.
    /// Only single-frame messages (checked before); with udp endpoints, only what fits a
    /// datagram.
    fn send(s: &mut Socket, msg: Message, _now: &impl Clock) -> Result<Sent, SendError> {
        if s.ty != SocketType::Radio {
            return Err(SendError::NotSupported(msg));
        }
        let mut any = match s.radio_udp_send(&msg) {
            Ok(any) => any,
            Err(e) => return Err(SendError::Datagram(e, msg)),
        };
        let group = Bytes::copy_from_slice(msg.group().unwrap_or_default());
        for i in 0..s.attached.len() {
            let peer = s.attached[i];
            let joined = s.peers.get(&peer).is_some_and(|p| p.subs.contains(&group));
            if joined && s.has_room(peer) {
                let body = msg.first().cloned().unwrap_or_default();
                s.deliver(peer, Message::two(group.clone(), body));
                any = true;
            }
        }
        Ok(if any { Sent::Queued } else { Sent::Dropped })
    }

    fn recv(s: &mut Socket, now: &impl Clock) -> Option<Message> {
        if s.ty != SocketType::Dish {
            return None;
        }
        match s.fq_pop(false, now) {
            Some((_, _, msg)) => Some(msg),
            None => s.udp_pop(),
        }
    }

    /// RADIO always takes a message (it drops what no peer can take); DISH sends nothing.
    fn can_send(s: &Socket) -> bool {
        s.ty == SocketType::Radio
    }

    fn can_recv(s: &Socket) -> bool {
        s.ty == SocketType::Dish && (s.fq_ready() || s.udp_ready())
    }
}
