//! From a `tcp://` endpoint to socket addresses, and trying them in turn.
//!
//! The core parses endpoints and leaves host names to the driver. A literal host (or the
//! `*` wildcard) gives its one address at once ([`TcpAddrs`]); a name needs a lookup,
//! which blocks: async drivers run it without blocking their runtime (their `resolve`),
//! the blocking driver off its I/O thread and off its locks, and each driver then tries
//! every address the lookup gave, in order, until one connects ([`Attempts`]), as libzmq
//! does.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;
use std::vec;

use socket2::{Domain, Protocol, Socket, Type};
use zmtp_proto::socket::endpoint::{Host, TcpEndpoint, TcpSource};

/// What a `tcp://` endpoint needs before a bind or a connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpAddrs {
    /// The host is an address literal or the `*` wildcard (`0.0.0.0`): its one address,
    /// at once. A missing port (`*`) is 0, an ephemeral port on bind.
    Known(SocketAddr),
    /// The host is a name: [`lookup`] it (or have the runtime resolve it) first.
    Lookup {
        /// The name.
        host: String,
        /// The port.
        port: u16,
    },
}

impl TcpAddrs {
    /// What `tcp` needs.
    pub fn of(tcp: &TcpEndpoint) -> TcpAddrs {
        let port = tcp.port.unwrap_or(0);
        TcpAddrs::Known(match &tcp.host {
            Host::Any => SocketAddr::from(([0, 0, 0, 0], port)),
            Host::Ipv4(a) => SocketAddr::from((*a, port)),
            Host::Ipv6(a) => SocketAddr::from((*a, port)),
            Host::Name(name) => {
                return TcpAddrs::Lookup {
                    host: name.clone(),
                    port,
                }
            }
        })
    }
}

/// Look `host` up with the system resolver. **Blocks**: call it on a thread that may
/// wait, holding no lock. An answer without addresses is an error (`NotFound`).
pub fn lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} resolves to no address"),
        ));
    }
    Ok(addrs)
}

/// Every address of a `tcp://` endpoint: its literal, or the addresses its name resolves
/// to. **Blocks** for a name (see [`lookup`]).
pub fn resolve_blocking(tcp: &TcpEndpoint) -> io::Result<Vec<SocketAddr>> {
    match TcpAddrs::of(tcp) {
        TcpAddrs::Known(addr) => Ok(vec![addr]),
        TcpAddrs::Lookup { host, port } => lookup(&host, port),
    }
}

/// The local address a connect to `dest` binds for `source` (`tcp://source;destination`):
/// `*` is the unspecified address of `dest`'s family; a literal must be of that family.
/// A name is refused (`Unsupported`): libzmq takes only literals and interface names
/// there, never looking a name up, and interface names are not supported.
pub fn source_addr(source: &TcpSource, dest: SocketAddr) -> io::Result<SocketAddr> {
    let ip = match &source.host {
        Host::Any if dest.is_ipv4() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Host::Any => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        Host::Ipv4(a) => IpAddr::V4(*a),
        Host::Ipv6(a) => IpAddr::V6(*a),
        Host::Name(name) => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "source address {name:?}: give an address literal or *; names and \
                     interface names are not supported as sources"
                ),
            ))
        }
    };
    if ip.is_ipv4() != dest.is_ipv4() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("source address {ip} is not of the family of {dest}"),
        ));
    }
    Ok(SocketAddr::new(ip, source.port))
}

/// The kernel buffer sizes of a TCP socket (`ZMQ_SNDBUF`, `ZMQ_RCVBUF`: the socket's
/// [`sndbuf`](zmtp_proto::socket::Options::sndbuf) and
/// [`rcvbuf`](zmtp_proto::socket::Options::rcvbuf)), set on each socket before it binds
/// or connects, as libzmq sets them: the receive buffer then also sets the window the
/// connection starts with (set on a live connection, a small one leaves the window scale
/// agreed for the larger default, and the connection crawls), and the connections a
/// listener accepts inherit both. `None`: the system's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpBuffers {
    /// `SO_SNDBUF`, in bytes.
    pub send: Option<usize>,
    /// `SO_RCVBUF`, in bytes.
    pub recv: Option<usize>,
}

impl TcpBuffers {
    /// The sizes a socket's options ask for.
    pub fn of(options: &zmtp_proto::socket::Options) -> TcpBuffers {
        TcpBuffers {
            send: options.sndbuf,
            recv: options.rcvbuf,
        }
    }

    /// Set them on `socket` (a size the system does not take fails the bind or connect).
    pub fn apply(self, socket: &Socket) -> io::Result<()> {
        if let Some(size) = self.send {
            socket.set_send_buffer_size(size)?;
        }
        if let Some(size) = self.recv {
            socket.set_recv_buffer_size(size)?;
        }
        Ok(())
    }
}

/// A TCP socket for a connect to `dest`: its buffer sizes set and, with a `source`, bound
/// there with `SO_REUSEADDR` set (so that connects to different destinations may share a
/// source port, as libzmq's do).
fn connect_socket(
    dest: SocketAddr,
    source: Option<&TcpSource>,
    buffers: TcpBuffers,
) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(dest), Type::STREAM, Some(Protocol::TCP))?;
    buffers.apply(&socket)?;
    if let Some(source) = source {
        let from = source_addr(source, dest)?;
        socket.set_reuse_address(true)?;
        socket.bind(&from.into())?;
    }
    Ok(socket)
}

/// Start a non-blocking connect to `dest`, from `source` if there is one (see
/// [`TcpSource`]), with `buffers`: the stream comes back while the connect is in
/// progress; it completes (or fails) when the stream turns writable, and `take_error`
/// then tells which.
pub fn start_connect(
    dest: SocketAddr,
    source: Option<&TcpSource>,
    buffers: TcpBuffers,
) -> io::Result<std::net::TcpStream> {
    let socket = connect_socket(dest, source, buffers)?;
    socket.set_nonblocking(true)?;
    match socket.connect(&dest.into()) {
        Ok(()) => {}
        Err(e) if in_progress(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}

/// Listen on `addr` with `buffers` (inherited by every connection accepted), with
/// `SO_REUSEADDR` set, as the standard library's listeners have it on Unix.
pub fn listen_socket(addr: SocketAddr, buffers: TcpBuffers) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    buffers.apply(&socket)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    Ok(socket.into())
}

/// A non-blocking connect's "under way" (`EINPROGRESS`; Windows says `WouldBlock`).
fn in_progress(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        return true;
    }
    e.kind() == io::ErrorKind::WouldBlock
}

/// Connect to `dest` from `source`, waiting at most `timeout`.
pub fn connect_from_blocking(
    dest: SocketAddr,
    source: &TcpSource,
    timeout: Duration,
) -> io::Result<std::net::TcpStream> {
    let socket = connect_socket(dest, Some(source), TcpBuffers::default())?;
    socket.connect_timeout(&dest.into(), timeout)?;
    Ok(socket.into())
}

/// The addresses to connect to, in order, and why the ones tried failed: connect to
/// [`next`](Attempts::next) until one connects, report each failure with
/// [`failed`](Attempts::failed), and when none is left the connect fails with
/// [`into_error`](Attempts::into_error) (the last failure).
#[derive(Debug)]
pub struct Attempts {
    addrs: vec::IntoIter<SocketAddr>,
    source: Option<TcpSource>,
    buffers: TcpBuffers,
    last: Option<io::Error>,
}

impl Attempts {
    /// Try `addrs` in order.
    pub fn new(addrs: Vec<SocketAddr>) -> Attempts {
        Attempts {
            addrs: addrs.into_iter(),
            source: None,
            buffers: TcpBuffers::default(),
            last: None,
        }
    }

    /// Connect with these buffer sizes (see [`TcpBuffers`]).
    pub fn with_buffers(mut self, buffers: TcpBuffers) -> Attempts {
        self.buffers = buffers;
        self
    }

    /// Whether a connect needs no more than the runtime's own (no source address, no
    /// buffer sizes), or must be started with [`start`](Self::start).
    pub fn plain(&self) -> bool {
        self.source.is_none() && self.buffers == TcpBuffers::default()
    }

    /// Start a non-blocking connect to `addr` (the last address [`next`](Self::next)
    /// gave) from the source and with the buffer sizes of this connect (see
    /// [`start_connect`]).
    pub fn start(&self, addr: SocketAddr) -> io::Result<std::net::TcpStream> {
        start_connect(addr, self.source.as_ref(), self.buffers)
    }

    /// Connect from `source` (`tcp://source;destination`; see [`start_connect`]).
    pub fn from_source(mut self, source: Option<TcpSource>) -> Attempts {
        self.source = source;
        self
    }

    /// The source address every attempt binds, if the endpoint gave one.
    pub fn source(&self) -> Option<&TcpSource> {
        self.source.as_ref()
    }

    /// The next address to try; `None` when every one failed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<SocketAddr> {
        self.addrs.next()
    }

    /// The last address given by [`next`](Self::next) did not connect.
    pub fn failed(&mut self, error: io::Error) {
        self.last = Some(error);
    }

    /// Why the connect failed: the last address's error (or, with no address at all,
    /// `InvalidInput`).
    pub fn into_error(self) -> io::Error {
        self.last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        })
    }

    /// Connect with `connect` to each address in turn (or bind: a listener tries the
    /// addresses of its endpoint the same way): the first stream it gives, or the last
    /// error. For drivers whose connect blocks (with a bounded wait); the async drivers
    /// write the same loop around their runtime's connect.
    pub fn connect_each<S>(
        mut self,
        mut connect: impl FnMut(SocketAddr) -> io::Result<S>,
    ) -> io::Result<S> {
        while let Some(addr) = self.next() {
            match connect(addr) {
                Ok(stream) => return Ok(stream),
                Err(e) => self.failed(e),
            }
        }
        Err(self.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zmtp_proto::socket::Endpoint;

    fn tcp(s: &str) -> TcpEndpoint {
        match Endpoint::parse(s).unwrap() {
            Endpoint::Tcp(t) => t,
            _ => panic!("not tcp"),
        }
    }

    #[test]
    fn literals_need_no_lookup() {
        let known = |s: &str| TcpAddrs::Known(s.parse().unwrap());
        assert_eq!(
            TcpAddrs::of(&tcp("tcp://127.0.0.1:5555")),
            known("127.0.0.1:5555")
        );
        assert_eq!(TcpAddrs::of(&tcp("tcp://[::1]:7")), known("[::1]:7"));
        assert_eq!(TcpAddrs::of(&tcp("tcp://*:*")), known("0.0.0.0:0"));
        assert_eq!(
            TcpAddrs::of(&tcp("tcp://localhost:1")),
            TcpAddrs::Lookup {
                host: "localhost".into(),
                port: 1
            }
        );
    }

    #[test]
    fn names_resolve_to_every_address() {
        let addrs = resolve_blocking(&tcp("tcp://localhost:5555")).unwrap();
        assert!(!addrs.is_empty());
        assert!(addrs
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 5555));
        assert!(lookup("no-such-host.invalid", 1).is_err());
    }

    #[test]
    fn attempts_go_in_order_and_keep_the_last_error() {
        let addrs: Vec<SocketAddr> = vec![
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            "127.0.0.1:3".parse().unwrap(),
        ];
        let mut tried = Vec::new();
        let got = Attempts::new(addrs.clone()).connect_each(|a| {
            tried.push(a.port());
            if a.port() == 2 {
                Ok(a)
            } else {
                Err(io::Error::from(io::ErrorKind::ConnectionRefused))
            }
        });
        assert_eq!(got.unwrap().port(), 2);
        assert_eq!(tried, [1, 2]);

        let err = Attempts::new(addrs)
            .connect_each(|a| -> io::Result<()> {
                Err(io::Error::other(format!("port {}", a.port())))
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "port 3");
        let none = Attempts::new(Vec::new()).connect_each(|_| Ok(()));
        assert_eq!(none.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}
