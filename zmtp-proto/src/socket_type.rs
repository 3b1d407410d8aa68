//! Socket types, their wire names and libzmq's peer compatibility table.

/// A ZeroMQ socket type. Discriminants are libzmq's `ZMQ_*` numbers.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SocketType {
    /// Exclusive pair.
    Pair = 0,
    /// Publisher.
    Pub = 1,
    /// Subscriber.
    Sub = 2,
    /// Request.
    Req = 3,
    /// Reply.
    Rep = 4,
    /// Asynchronous request.
    Dealer = 5,
    /// Asynchronous reply with routing by identity.
    Router = 6,
    /// Pipeline sink.
    Pull = 7,
    /// Pipeline source.
    Push = 8,
    /// Publisher that sees subscriptions.
    XPub = 9,
    /// Subscriber that sends subscriptions as messages.
    XSub = 10,
    /// Raw TCP (libzmq's `ZMQ_STREAM`): no greeting, no framing, no security. Each chunk
    /// read from a connection is received as `[routing id][data]`; `[routing id][data]`
    /// writes `data` to that connection, and empty data closes it. A connection coming up
    /// or going away is announced as `[routing id][empty]` (`ZMQ_STREAM_NOTIFY`). Talks
    /// to no ZMTP socket type: only to raw TCP peers and other STREAM sockets.
    Stream = 11,
    /// Draft: thread-safe server.
    Server = 12,
    /// Draft: thread-safe client.
    Client = 13,
    /// Draft: group publisher.
    Radio = 14,
    /// Draft: group subscriber.
    Dish = 15,
    /// Draft: fan-in.
    Gather = 16,
    /// Draft: fan-out.
    Scatter = 17,
    /// Draft: datagram.
    Dgram = 18,
    /// Draft: peer-to-peer.
    Peer = 19,
    /// Draft: thread-safe pair.
    Channel = 20,
}

const ALL: [SocketType; 21] = [
    SocketType::Pair,
    SocketType::Pub,
    SocketType::Sub,
    SocketType::Req,
    SocketType::Rep,
    SocketType::Dealer,
    SocketType::Router,
    SocketType::Pull,
    SocketType::Push,
    SocketType::XPub,
    SocketType::XSub,
    SocketType::Stream,
    SocketType::Server,
    SocketType::Client,
    SocketType::Radio,
    SocketType::Dish,
    SocketType::Gather,
    SocketType::Scatter,
    SocketType::Dgram,
    SocketType::Peer,
    SocketType::Channel,
];

impl SocketType {
    /// Every socket type, classic and draft.
    pub const ALL: &'static [SocketType] = &ALL;

    /// The `Socket-Type` metadata value (upper case, as libzmq sends and expects).
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Pair => "PAIR",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
            SocketType::Dealer => "DEALER",
            SocketType::Router => "ROUTER",
            SocketType::Pull => "PULL",
            SocketType::Push => "PUSH",
            SocketType::XPub => "XPUB",
            SocketType::XSub => "XSUB",
            SocketType::Stream => "STREAM",
            SocketType::Server => "SERVER",
            SocketType::Client => "CLIENT",
            SocketType::Radio => "RADIO",
            SocketType::Dish => "DISH",
            SocketType::Gather => "GATHER",
            SocketType::Scatter => "SCATTER",
            SocketType::Dgram => "DGRAM",
            SocketType::Peer => "PEER",
            SocketType::Channel => "CHANNEL",
        }
    }

    /// Parse a `Socket-Type` value; case-sensitive, as libzmq is.
    pub fn from_name(name: &[u8]) -> Option<SocketType> {
        ALL.iter().copied().find(|t| t.name().as_bytes() == name)
    }

    /// The type of libzmq's number (`ZMQ_PAIR` 0 ... `ZMQ_CHANNEL` 20), as a ZMTP 2.0
    /// greeting carries it.
    pub fn from_number(n: u8) -> Option<SocketType> {
        ALL.iter().copied().find(|t| *t as u8 == n)
    }

    /// Whether a connection between `self` and a `peer` is allowed (libzmq's `check_socket_type`).
    pub fn is_compatible(self, peer: SocketType) -> bool {
        use SocketType::*;
        match self {
            Req => matches!(peer, Rep | Router),
            Rep => matches!(peer, Req | Dealer),
            Dealer => matches!(peer, Rep | Dealer | Router),
            Router => matches!(peer, Req | Dealer | Router),
            Pub | XPub => matches!(peer, Sub | XSub),
            Sub | XSub => matches!(peer, Pub | XPub),
            Push => peer == Pull,
            Pull => peer == Push,
            Pair => peer == Pair,
            Client => peer == Server,
            Server => peer == Client,
            Radio => peer == Dish,
            Dish => peer == Radio,
            Scatter => peer == Gather,
            Gather => peer == Scatter,
            Peer => peer == Peer,
            Channel => peer == Channel,
            Dgram => peer == Dgram,
            // STREAM never handshakes: it talks to raw TCP peers only.
            Stream => false,
        }
    }

    /// The first type (in libzmq's numbering) that [`is_compatible`](Self::is_compatible)
    /// with this one: the type a peer that names none (bare `ZWS2.0`) is taken for.
    pub fn first_compatible_peer(self) -> SocketType {
        ALL.iter()
            .copied()
            .find(|&peer| self.is_compatible(peer))
            .unwrap_or(self)
    }

    /// Whether libzmq puts an `Identity` property in this type's READY (REQ, DEALER, ROUTER).
    pub fn sends_identity(self) -> bool {
        matches!(
            self,
            SocketType::Req | SocketType::Dealer | SocketType::Router
        )
    }

    /// Whether this type receives messages. PUB and PUSH never do (nor the draft RADIO
    /// and SCATTER): libzmq refuses their `recv` with `ENOTSUP`, and so do the drivers, at
    /// once, rather than wait for a message that cannot come.
    ///
    /// ```
    /// use zmtp_proto::SocketType;
    /// assert!(SocketType::Sub.receives() && !SocketType::Pub.receives());
    /// ```
    pub const fn receives(self) -> bool {
        !matches!(
            self,
            SocketType::Pub | SocketType::Push | SocketType::Radio | SocketType::Scatter
        )
    }

    /// Whether this type sends messages. SUB and PULL never do (nor the draft DISH and
    /// GATHER): their `send` is refused with `ENOTSUP`.
    ///
    /// ```
    /// use zmtp_proto::SocketType;
    /// assert!(SocketType::Push.sends() && !SocketType::Pull.sends());
    /// ```
    pub const fn sends(self) -> bool {
        !matches!(
            self,
            SocketType::Sub | SocketType::Pull | SocketType::Dish | SocketType::Gather
        )
    }

    /// Whether this type has subscriptions of its own (`ZMQ_SUBSCRIBE`,
    /// `ZMQ_UNSUBSCRIBE`): SUB, and XSUB, where libzmq takes subscriptions as messages and
    /// this library takes both. Other types refuse them (`Unsupported` in the drivers).
    pub const fn subscribes(self) -> bool {
        matches!(self, SocketType::Sub | SocketType::XSub)
    }

    /// Whether this type receives subscriptions (PUB, XPUB), so that `0x01`/`0x00`
    /// prefixed single-frame messages from a peer are subscriptions.
    pub fn accepts_subscriptions(self) -> bool {
        matches!(self, SocketType::Pub | SocketType::XPub)
    }
}

impl core::fmt::Display for SocketType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_symmetric_and_names_round_trip() {
        for &a in SocketType::ALL {
            assert_eq!(SocketType::from_name(a.name().as_bytes()), Some(a));
            for &b in SocketType::ALL {
                assert_eq!(a.is_compatible(b), b.is_compatible(a), "{a} {b}");
            }
        }
        assert_eq!(SocketType::from_name(b"dealer"), None);
        assert!(SocketType::Dealer.is_compatible(SocketType::Router));
        assert!(!SocketType::Push.is_compatible(SocketType::Push));
    }

    #[test]
    fn who_sends_receives_and_subscribes() {
        use SocketType::*;
        let receive_only = [Sub, Pull, Dish, Gather];
        let send_only = [Pub, Push, Radio, Scatter];
        for &t in SocketType::ALL {
            assert_eq!(t.sends(), !receive_only.contains(&t), "{t}");
            assert_eq!(t.receives(), !send_only.contains(&t), "{t}");
            assert_eq!(t.subscribes(), matches!(t, Sub | XSub), "{t}");
            // Every type does one or the other, and its peers do the opposite.
            assert!(t.sends() || t.receives(), "{t}");
        }
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn the_core_takes_subscriptions_where_the_type_says() {
        for &t in SocketType::ALL {
            let mut s = crate::socket::Socket::new(t, Default::default(), 1).unwrap();
            assert_eq!(s.subscribe(b"topic"), t.subscribes(), "{t}");
        }
    }
}
