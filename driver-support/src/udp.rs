//! `udp://` endpoints as libzmq 4.3.5 opens them, with `std` types: one function for every
//! driver, which then registers the non-blocking [`std::net::UdpSocket`] with its reactor.
//!
//! - **Bind** (DISH, DGRAM): a unicast host binds `host:port` (`*`: every interface). A
//!   multicast group binds the wildcard address on the port with `SO_REUSEADDR` and
//!   `SO_REUSEPORT`, so that several receivers on one host share it, then joins the group
//!   on the interface (`*` or none: the system's choice).
//! - **Connect** (RADIO): connects to `host:port`; for a multicast group it sets the
//!   sending interface, `IP_MULTICAST_LOOP` and `IP_MULTICAST_TTL` (libzmq's
//!   `ZMQ_MULTICAST_LOOP` and `ZMQ_MULTICAST_HOPS`) and sends to the group with each
//!   datagram ([`UdpOpened::send_to`]) rather than connecting: a link-local IPv6 group
//!   (`ff02::…`) cannot be connected to without naming an interface, but can be sent to,
//!   the system choosing the interface, as libzmq does.
//!
//! Interface names (`eth0;239.0.0.1:5555`) are refused with `ENODEV`, as by the libzmq
//! builds without `ifaddrs`; a host name is resolved here, blocking.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use zmtp_proto::socket::endpoint::{Host, UdpEndpoint};
use zmtp_proto::socket::{Endpoint, EndpointId};

/// What [`Command::OpenUdp`](zmtp_proto::socket::Command::OpenUdp) asks for, taken out of
/// the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpOpen {
    /// The endpoint.
    pub addr: UdpEndpoint,
    /// Bind (DISH, DGRAM) rather than connect (RADIO).
    pub bind: bool,
    /// `IP_MULTICAST_LOOP` for a multicast connect.
    pub multicast_loop: bool,
    /// `IP_MULTICAST_TTL` for a multicast connect.
    pub multicast_hops: u32,
}

/// An opened `udp://` endpoint.
#[derive(Debug)]
pub struct UdpOpened {
    /// The socket, non-blocking.
    pub socket: UdpSocket,
    /// Where the endpoint's datagrams go when the socket is not connected: a RADIO's
    /// multicast group (give it to [`send_datagram`] when the core names no address).
    pub send_to: Option<SocketAddr>,
    /// The endpoint as text with the port actually bound (a bind of port `*` or 0), for
    /// `handle_listening`.
    pub endpoint: String,
}

/// Open the UDP socket of a `udp://` endpoint, as libzmq does (see the module
/// documentation). The socket is non-blocking.
pub fn open_udp(open: &UdpOpen) -> io::Result<UdpOpened> {
    let addr = &open.addr;
    let port = addr.port.unwrap_or(0);
    let interface = interface_of(addr.interface.as_ref())?;
    let socket = match addr.multicast_group() {
        Some(group) if open.bind => bind_multicast(group, port, interface)?,
        Some(group) => {
            let s = new_socket(group)?;
            s.bind(&SockAddr::from(SocketAddr::new(wildcard(group), 0)))?;
            match group {
                IpAddr::V4(_) => {
                    if let Some(IpAddr::V4(ip)) = interface {
                        s.set_multicast_if_v4(&ip)?;
                    }
                    s.set_multicast_loop_v4(open.multicast_loop)?;
                    s.set_multicast_ttl_v4(open.multicast_hops)?;
                }
                IpAddr::V6(_) => {
                    s.set_multicast_loop_v6(open.multicast_loop)?;
                    s.set_multicast_hops_v6(open.multicast_hops)?;
                }
            }
            s
        }
        None if open.bind => {
            let ip = match &addr.host {
                Host::Any => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                _ => host_addr(&addr.host, port)?.ip(),
            };
            let s = new_socket(ip)?;
            s.set_reuse_address(true)?;
            s.bind(&SockAddr::from(SocketAddr::new(ip, port)))?;
            s
        }
        None => {
            let to = host_addr(&addr.host, port)?;
            let s = new_socket(to.ip())?;
            s.bind(&SockAddr::from(SocketAddr::new(wildcard(to.ip()), 0)))?;
            s.connect(&SockAddr::from(to))?;
            s
        }
    };
    socket.set_nonblocking(true)?;
    let socket: UdpSocket = socket.into();
    let local = socket.local_addr()?;
    let mut resolved = addr.clone();
    resolved.port = Some(local.port());
    if open.bind && addr.multicast_group().is_none() && addr.host != Host::Any {
        resolved.host = match local.ip() {
            IpAddr::V4(ip) => Host::Ipv4(ip),
            IpAddr::V6(ip) => Host::Ipv6(ip),
        };
    }
    let endpoint = if open.bind {
        Endpoint::Udp(resolved).to_string()
    } else {
        Endpoint::Udp(addr.clone()).to_string()
    };
    let send_to = match addr.multicast_group() {
        Some(group) if !open.bind => Some(SocketAddr::new(group, port)),
        _ => None,
    };
    Ok(UdpOpened {
        socket,
        endpoint,
        send_to,
    })
}

/// Send one datagram on a UDP socket registered with any reactor, straight through the
/// system call (`send`, or `sendto` with `to`), without asking the reactor about write
/// readiness: a UDP socket takes a datagram whenever its buffer has room, and a reactor
/// that has not yet seen the socket writable would refuse with `WouldBlock` for nothing.
pub fn send_datagram(
    socket: &impl std::os::fd::AsFd,
    datagram: &[u8],
    to: Option<SocketAddr>,
) -> io::Result<usize> {
    let socket = socket2::SockRef::from(socket);
    match to {
        Some(to) => socket.send_to(datagram, &SockAddr::from(to)),
        None => socket.send(datagram),
    }
}

/// Take every datagram `socket` has to send, written in turn into `buf` (give it
/// [`MAX_DATAGRAM_LEN`](zmtp_proto::udp::MAX_DATAGRAM_LEN) bytes), and hand each to `send`
/// with its endpoint and destination (`None`: the endpoint's connected address). Returns
/// whether there were any (sending the last one can finish a close: run the socket's
/// commands again then).
pub fn drain_datagrams(
    socket: &mut zmtp_proto::socket::Socket,
    buf: &mut [u8],
    mut send: impl FnMut(EndpointId, &[u8], Option<SocketAddr>),
) -> bool {
    let mut any = false;
    while let Some(out) = socket.poll_datagram(buf) {
        any = true;
        if let Some(data) = buf.get(..out.len) {
            send(out.endpoint, data, out.to.map(SocketAddr::V4));
        }
    }
    any
}

/// A DISH's (or DGRAM's) multicast receiver: the wildcard address on `port`, shared, then
/// a member of `group`.
fn bind_multicast(group: IpAddr, port: u16, interface: Option<IpAddr>) -> io::Result<Socket> {
    let s = new_socket(group)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&SockAddr::from(SocketAddr::new(wildcard(group), port)))?;
    match group {
        IpAddr::V4(g) => {
            let on = match interface {
                Some(IpAddr::V4(ip)) => ip,
                _ => Ipv4Addr::UNSPECIFIED,
            };
            s.join_multicast_v4(&g, &on)?;
        }
        IpAddr::V6(g) => s.join_multicast_v6(&g, 0)?,
    }
    Ok(s)
}

fn new_socket(like: IpAddr) -> io::Result<Socket> {
    let domain = if like.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))
}

fn wildcard(like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// The multicast interface: `*` or none is the system's choice; a NIC name is `ENODEV`.
fn interface_of(interface: Option<&Host>) -> io::Result<Option<IpAddr>> {
    match interface {
        None | Some(Host::Any) => Ok(None),
        Some(Host::Ipv4(ip)) => Ok(Some(IpAddr::V4(*ip))),
        Some(Host::Ipv6(ip)) => Ok(Some(IpAddr::V6(*ip))),
        Some(Host::Name(_)) => Err(io::Error::from_raw_os_error(19)),
    }
}

/// A host with its port: a literal as it is, a name resolved (its first address).
fn host_addr(host: &Host, port: u16) -> io::Result<SocketAddr> {
    match host {
        Host::Ipv4(ip) => Ok(SocketAddr::new(IpAddr::V4(*ip), port)),
        Host::Ipv6(ip) => Ok(SocketAddr::new(IpAddr::V6(*ip), port)),
        Host::Name(name) => crate::lookup(name, port)?
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        Host::Any => Err(io::ErrorKind::InvalidInput.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(endpoint: &str, bind: bool) -> io::Result<UdpOpened> {
        let Endpoint::Udp(addr) = Endpoint::parse(endpoint).unwrap() else {
            unreachable!()
        };
        open_udp(&UdpOpen {
            addr,
            bind,
            multicast_loop: true,
            multicast_hops: 1,
        })
    }

    #[test]
    fn unicast_bind_and_connect_move_a_datagram() {
        let rx = open("udp://127.0.0.1:*", true).unwrap();
        let port = rx.socket.local_addr().unwrap().port();
        assert_eq!(rx.endpoint, format!("udp://127.0.0.1:{port}"));
        let tx = open(&format!("udp://127.0.0.1:{port}"), false).unwrap();
        tx.socket.send(b"\x01gx").unwrap();
        rx.socket.set_nonblocking(false).unwrap();
        let mut buf = [0u8; 16];
        let (n, from) = rx.socket.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"\x01gx");
        assert_eq!(from, tx.socket.local_addr().unwrap());
    }

    #[test]
    fn interface_names_are_refused_with_enodev() {
        let e = open("udp://eth0;239.0.0.1:5555", true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(19));
    }
}
