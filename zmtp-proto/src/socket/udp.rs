//! `udp://` endpoints: no streams, no handshakes, one message per datagram (see
//! [`crate::udp`] for the datagrams themselves).
//!
//! A udp endpoint is not a peer. [`Socket::bind`] or [`Socket::connect`] of a `udp://`
//! endpoint asks the driver for a UDP socket with [`Command::OpenUdp`]; from then on the
//! driver only moves datagrams:
//!
//! - **Out:** every datagram the socket wants sent is taken with
//!   [`Socket::poll_datagram`] into a buffer of [`MAX_DATAGRAM_LEN`](crate::udp::MAX_DATAGRAM_LEN) bytes and sent from
//!   the UDP socket of its endpoint (to its `to` address when there is one: DGRAM).
//!   [`Socket::has_work`] is true while some wait.
//! - **In:** every datagram received on a bound endpoint is given to
//!   [`Socket::handle_datagram`] with its source address.
//!
//! What travels: a RADIO sends every message to each of its connected udp endpoints (JOIN
//! and LEAVE never go on the wire; the receiving DISH filters), dropping it for an endpoint
//! that has SNDHWM datagrams waiting. A DISH parses each datagram, keeps those of the
//! groups it joined, and drops at RCVHWM, as libzmq's udp engine does; a datagram that
//! does not parse is dropped and counted ([`Socket::malformed_datagrams`]). A DGRAM sends
//! `[address, body]` as the body to that address and receives `[address, body]`.

use alloc::collections::{BTreeMap, VecDeque};
use core::net::{SocketAddr, SocketAddrV4};

use bytes::Bytes;

use super::{Command, EndpointId, EndpointKind, Message, SendError, Socket};
use crate::socket::endpoint::UdpEndpoint;
use crate::udp::{emit_dgram_address, DatagramEmitError, RadioDatagram, DGRAM_ADDRESS_MAX_LEN};
use crate::SocketType;

/// One datagram taken by [`Socket::poll_datagram`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatagramOut {
    /// The udp endpoint whose UDP socket sends it.
    pub endpoint: EndpointId,
    /// Where to: `None` for a connected endpoint (RADIO: the endpoint's address), the
    /// address of the message for a DGRAM.
    pub to: Option<SocketAddrV4>,
    /// The datagram's length: it is the first `len` bytes of the buffer.
    pub len: usize,
}

/// A datagram waiting to be sent: a RADIO message (with its group) or a DGRAM body.
#[derive(Debug)]
struct Outbound {
    to: Option<SocketAddrV4>,
    group: Option<Bytes>,
    body: Bytes,
}

/// One udp endpoint's queues.
#[derive(Debug, Default)]
struct UdpLink {
    out: VecDeque<Outbound>,
    inq: VecDeque<Message>,
}

/// Every udp endpoint of a socket, and what was dropped.
#[derive(Debug, Default)]
pub(super) struct UdpState {
    links: BTreeMap<EndpointId, UdpLink>,
    malformed: u64,
}

impl UdpState {
    /// Whether no datagram waits to be sent.
    pub(super) fn drained(&self) -> bool {
        self.links.values().all(|l| l.out.is_empty())
    }

    /// Datagrams waiting to be sent.
    pub(super) fn unsent(&self) -> usize {
        self.links.values().map(|l| l.out.len()).sum()
    }

    /// Whether any datagram waits to be sent.
    #[inline]
    pub(super) fn has_output(&self) -> bool {
        !self.links.is_empty() && !self.drained()
    }

    pub(super) fn clear(&mut self) {
        self.links.clear();
    }
}

impl Socket {
    /// A new `udp://` endpoint (checked already): its queues, and the command to open it.
    pub(super) fn open_udp(&mut self, id: EndpointId, addr: UdpEndpoint, kind: EndpointKind) {
        self.udp.links.insert(id, UdpLink::default());
        self.commands.push_back(Command::OpenUdp {
            endpoint: id,
            addr,
            bind: kind == EndpointKind::Bind,
            multicast_loop: self.opts.multicast_loop,
            multicast_hops: self.opts.multicast_hops,
        });
    }

    /// Forget a udp endpoint's queues (unbind, disconnect, failure).
    pub(super) fn forget_udp(&mut self, id: EndpointId) -> bool {
        self.udp.links.remove(&id).is_some()
    }

    /// The driver could not open the UDP socket of a udp endpoint: the endpoint is gone
    /// (a bind reports `errno` to the monitor as a failed bind).
    pub fn handle_udp_failed(&mut self, endpoint: EndpointId, errno: u32) {
        self.forget_udp(endpoint);
        if self
            .endpoints
            .get(&endpoint)
            .is_some_and(|e| e.kind == EndpointKind::Bind)
        {
            self.handle_bind_failed(endpoint, errno);
        } else {
            self.endpoints.remove(&endpoint);
        }
    }

    /// The next datagram to send, written into `buf` (give it [`MAX_DATAGRAM_LEN`](crate::udp::MAX_DATAGRAM_LEN) bytes;
    /// a datagram that does not fit a shorter buffer is dropped). `None` when nothing
    /// waits; a lingering close finishes then if nothing else waits.
    pub fn poll_datagram(&mut self, buf: &mut [u8]) -> Option<DatagramOut> {
        loop {
            let Some((&endpoint, link)) =
                self.udp.links.iter_mut().find(|(_, l)| !l.out.is_empty())
            else {
                self.datagrams_drained();
                return None;
            };
            let out = link.out.pop_front()?;
            let written = match &out.group {
                Some(group) => RadioDatagram {
                    group,
                    body: &out.body,
                }
                .emit(buf),
                None => buf
                    .get_mut(..out.body.len())
                    .map(|dst| {
                        dst.copy_from_slice(&out.body);
                        out.body.len()
                    })
                    .ok_or(DatagramEmitError::DatagramTooLong {
                        len: out.body.len(),
                    }),
            };
            if let Ok(len) = written {
                return Some(DatagramOut {
                    endpoint,
                    to: out.to,
                    len,
                });
            }
        }
    }

    /// A datagram arrived on a bound udp endpoint from `from`. A DISH keeps it if it
    /// parses and its group is joined; a DGRAM keeps it as `[address, body]` if it came
    /// from an IPv4 address. Either drops it when the endpoint's receive queue is at
    /// RCVHWM.
    pub fn handle_datagram(&mut self, endpoint: EndpointId, from: SocketAddr, datagram: &[u8]) {
        let msg = match self.ty {
            SocketType::Dish => match RadioDatagram::parse(datagram) {
                Ok(d) if self.is_joined(d.group) => {
                    let mut msg = Message::from(Bytes::copy_from_slice(d.body));
                    msg.tag(0, Some(Bytes::copy_from_slice(d.group)));
                    msg
                }
                Ok(_) => return,
                Err(_) => {
                    self.udp.malformed += 1;
                    return;
                }
            },
            SocketType::Dgram => {
                let SocketAddr::V4(from) = from else {
                    return;
                };
                let mut address = [0u8; DGRAM_ADDRESS_MAX_LEN];
                let n = emit_dgram_address(from, &mut address).unwrap_or(0);
                Message::two(
                    Bytes::copy_from_slice(address.get(..n).unwrap_or_default()),
                    Bytes::copy_from_slice(datagram),
                )
            }
            _ => return,
        };
        let limit = self.rcv_limit();
        if let Some(link) = self.udp.links.get_mut(&endpoint) {
            if limit == 0 || link.inq.len() < limit {
                link.inq.push_back(msg);
            }
        }
    }

    /// Datagrams a DISH dropped because they did not parse (empty, or a group length past
    /// the end).
    pub fn malformed_datagrams(&self) -> u64 {
        self.udp.malformed
    }

    /// The next message received over udp.
    pub(super) fn udp_pop(&mut self) -> Option<Message> {
        self.udp.links.values_mut().find_map(|l| l.inq.pop_front())
    }

    /// Whether a message received over udp waits.
    pub(super) fn udp_ready(&self) -> bool {
        self.udp.links.values().any(|l| !l.inq.is_empty())
    }

    /// RADIO: `msg` to every connected udp endpoint with room (dropped for the others).
    /// A group or a datagram the codec refuses fails the send before anything is queued.
    /// Returns whether any endpoint took it.
    pub(super) fn radio_udp_send(&mut self, msg: &Message) -> Result<bool, DatagramEmitError> {
        if self.udp.links.is_empty() {
            return Ok(false);
        }
        let group = msg.group().unwrap_or_default();
        let body = msg.first().cloned().unwrap_or_default();
        RadioDatagram { group, body: &body }.check()?;
        let group = Bytes::copy_from_slice(group);
        let hwm = self.opts.sndhwm;
        let mut any = false;
        for link in self.udp.links.values_mut() {
            if hwm == 0 || link.out.len() < hwm {
                link.out.push_back(Outbound {
                    to: None,
                    group: Some(group.clone()),
                    body: body.clone(),
                });
                any = true;
            }
        }
        Ok(any)
    }

    /// DGRAM: `body` to `to` from the first bound udp endpoint; `WouldBlock` when there is
    /// none or it has SNDHWM datagrams waiting.
    pub(super) fn dgram_udp_send(
        &mut self,
        to: SocketAddrV4,
        body: Bytes,
        msg: Message,
    ) -> Result<(), SendError> {
        let hwm = self.opts.sndhwm;
        match self.udp.links.values_mut().next() {
            Some(link) if hwm == 0 || link.out.len() < hwm => {
                link.out.push_back(Outbound {
                    to: Some(to),
                    group: None,
                    body,
                });
                Ok(())
            }
            _ => Err(SendError::WouldBlock(msg)),
        }
    }

    /// DGRAM: whether a send can be queued now.
    pub(super) fn dgram_udp_room(&self) -> bool {
        let hwm = self.opts.sndhwm;
        self.udp
            .links
            .values()
            .next()
            .is_some_and(|l| hwm == 0 || l.out.len() < hwm)
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;
    use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

    use super::DatagramOut;
    use crate::socket::{Command, EndpointId, Message, Options, SendError, Sent, Socket};
    use crate::udp::{DatagramEmitError, MAX_DATAGRAM_LEN};
    use crate::{Instant, SocketType};

    const NOW: Instant = Instant::from_micros(0);

    fn addr(port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
    }

    /// The socket's udp endpoint, from its `OpenUdp` command.
    fn opened(s: &mut Socket, bind: bool) -> EndpointId {
        match s.poll_command() {
            Some(Command::OpenUdp {
                endpoint,
                bind: b,
                multicast_loop,
                multicast_hops,
                ..
            }) => {
                assert_eq!(b, bind);
                assert_eq!((multicast_loop, multicast_hops), (true, 1));
                endpoint
            }
            other => panic!("expected OpenUdp, got {other:?}"),
        }
    }

    /// Every datagram `from` wants sent, as (endpoint, destination, bytes).
    fn datagrams(from: &mut Socket) -> Vec<(DatagramOut, Vec<u8>)> {
        let mut buf = [0u8; MAX_DATAGRAM_LEN];
        let mut out = Vec::new();
        while let Some(d) = from.poll_datagram(&mut buf) {
            out.push((d, buf[..d.len].to_vec()));
        }
        out
    }

    fn grouped(body: &str, group: &str) -> Message {
        let mut msg = Message::from(body.as_bytes().to_vec());
        msg.set_group(group).unwrap();
        msg
    }

    fn radio_and_dish(opts: Options) -> (Socket, Socket, EndpointId) {
        let mut radio = Socket::new(SocketType::Radio, opts.clone(), 1).unwrap();
        let mut dish = Socket::new(SocketType::Dish, opts, 2).unwrap();
        radio.connect("udp://127.0.0.1:5555").unwrap();
        opened(&mut radio, false);
        dish.bind("udp://*:5555").unwrap();
        let at = opened(&mut dish, true);
        (radio, dish, at)
    }

    #[test]
    fn radio_sends_everything_and_dish_keeps_joined_groups() {
        let (mut radio, mut dish, at) = radio_and_dish(Options::default());
        dish.join(b"g1").unwrap();
        for (body, group) in [("a", "g1"), ("b", "g2"), ("c", "g1")] {
            assert_eq!(radio.send(grouped(body, group), NOW), Ok(Sent::Queued));
        }
        assert!(radio.has_work());
        let sent = datagrams(&mut radio);
        let wire: Vec<&[u8]> = sent.iter().map(|(_, d)| &d[..]).collect();
        assert_eq!(wire, [&b"\x02g1a"[..], b"\x02g2b", b"\x02g1c"]);
        assert!(sent.iter().all(|(d, _)| d.to.is_none()));
        assert!(!radio.has_work());
        for (_, d) in &sent {
            dish.handle_datagram(at, SocketAddr::V4(addr(40000)), d);
        }
        // Not datagrams: dropped and counted.
        dish.handle_datagram(at, SocketAddr::V4(addr(40000)), b"");
        dish.handle_datagram(at, SocketAddr::V4(addr(40000)), b"\x09g1");
        assert_eq!(dish.malformed_datagrams(), 2);
        let got: Vec<(Vec<u8>, Vec<u8>)> = core::iter::from_fn(|| dish.recv(NOW))
            .map(|m| (m.group().unwrap().to_vec(), m.first().unwrap().to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (b"g1".to_vec(), b"a".to_vec()),
                (b"g1".to_vec(), b"c".to_vec())
            ]
        );
        assert!(!dish.can_recv());
    }

    #[test]
    fn radio_refuses_what_udp_cannot_carry() {
        let (mut radio, _, _) = radio_and_dish(Options::default());
        let long_group = "g".repeat(128);
        match radio.send(grouped("x", &long_group), NOW) {
            Err(SendError::Datagram(DatagramEmitError::GroupTooLongForUdp { len: 128 }, _)) => {}
            other => panic!("{other:?}"),
        }
        let body = "b".repeat(MAX_DATAGRAM_LEN - 1);
        match radio.send(grouped(&body, "g"), NOW) {
            Err(SendError::Datagram(DatagramEmitError::DatagramTooLong { len }, _)) => {
                assert_eq!(len, MAX_DATAGRAM_LEN + 1);
            }
            other => panic!("{other:?}"),
        }
        // The largest that fits goes.
        let body = "b".repeat(MAX_DATAGRAM_LEN - 2);
        assert_eq!(radio.send(grouped(&body, "g"), NOW), Ok(Sent::Queued));
        assert_eq!(datagrams(&mut radio)[0].1.len(), MAX_DATAGRAM_LEN);
    }

    #[test]
    fn radio_drops_at_sndhwm_and_dish_at_rcvhwm() {
        let (mut radio, mut dish, at) =
            radio_and_dish(Options::default().with_sndhwm(2).with_rcvhwm(1));
        dish.join(b"g").unwrap();
        let results: Vec<_> = (0..3).map(|_| radio.send(grouped("m", "g"), NOW)).collect();
        assert_eq!(
            results,
            [Ok(Sent::Queued), Ok(Sent::Queued), Ok(Sent::Dropped)]
        );
        let sent = datagrams(&mut radio);
        assert_eq!(sent.len(), 2);
        for (_, d) in &sent {
            dish.handle_datagram(at, SocketAddr::V4(addr(1)), d);
        }
        assert!(dish.recv(NOW).is_some());
        assert!(dish.recv(NOW).is_none());
    }

    #[test]
    fn dgram_round_trip_with_address_frames() {
        let mut a = Socket::new(SocketType::Dgram, Options::default(), 1).unwrap();
        let mut b = Socket::new(SocketType::Dgram, Options::default(), 2).unwrap();
        assert!(!a.can_send());
        a.bind("udp://127.0.0.1:7001").unwrap();
        let a_at = opened(&mut a, true);
        b.bind("udp://127.0.0.1:7002").unwrap();
        let b_at = opened(&mut b, true);
        assert!(a.can_send());
        let msg = Message::from(["127.0.0.1:7002", "ping"]);
        assert_eq!(a.send(msg, NOW), Ok(Sent::Queued));
        let sent = datagrams(&mut a);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0.endpoint, a_at);
        assert_eq!(sent[0].0.to, Some(addr(7002)));
        assert_eq!(sent[0].1, b"ping");
        b.handle_datagram(b_at, SocketAddr::V4(addr(7001)), &sent[0].1);
        let got = b.recv(NOW).unwrap();
        assert_eq!(got.frames(), [&b"127.0.0.1:7001\0"[..], b"ping"]);
        // The address frame goes back unchanged.
        let mut reply = Message::from(got.frames()[0].clone());
        reply.push_back(&b"pong"[..]);
        assert_eq!(b.send(reply, NOW), Ok(Sent::Queued));
        let back = datagrams(&mut b);
        assert_eq!(
            (back[0].0.to, &back[0].1[..]),
            (Some(addr(7001)), &b"pong"[..])
        );
        // IPv6 sources are dropped, as libzmq only takes IPv4.
        let v6: SocketAddr = "[::1]:7003".parse().unwrap();
        b.handle_datagram(b_at, v6, b"x");
        assert!(b.recv(NOW).is_none());
    }

    #[test]
    fn dgram_refuses_or_drops_bad_messages() {
        let mut d = Socket::new(SocketType::Dgram, Options::default(), 1).unwrap();
        let lone = Message::from(["127.0.0.1:1", "x"]);
        assert!(matches!(d.send(lone, NOW), Err(SendError::WouldBlock(_))));
        d.bind("udp://*:7004").unwrap();
        opened(&mut d, true);
        assert!(matches!(
            d.send(Message::from(["just one"]), NOW),
            Err(SendError::NotSupported(_))
        ));
        assert_eq!(
            d.send(Message::from(["nowhere", "x"]), NOW),
            Ok(Sent::Dropped)
        );
        let big = "x".repeat(MAX_DATAGRAM_LEN + 1);
        assert!(matches!(
            d.send(Message::from(["127.0.0.1:1", big.as_str()]), NOW),
            Err(SendError::Datagram(
                DatagramEmitError::DatagramTooLong { .. },
                _
            ))
        ));
        assert!(datagrams(&mut d).is_empty());
        assert!(d.connect("udp://127.0.0.1:1").is_err());
    }

    #[test]
    fn close_sends_queued_datagrams_before_closing_the_udp_socket() {
        let (mut radio, _, _) = radio_and_dish(Options::default());
        radio.send(grouped("last", "g"), NOW).unwrap();
        radio.close(NOW);
        assert_eq!(radio.poll_command(), None);
        assert_eq!(datagrams(&mut radio).len(), 1);
        assert!(matches!(
            radio.poll_command(),
            Some(Command::StopListening { .. })
        ));
        assert_eq!(radio.poll_command(), Some(Command::Closed));
    }
}
