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

/// How a socket's TCP sockets are set up (libzmq's `ZMQ_SNDBUF`, `ZMQ_RCVBUF`,
/// `ZMQ_TCP_KEEPALIVE*`, `ZMQ_TOS`, `ZMQ_TCP_MAXRT` and `ZMQ_BACKLOG`: the socket's
/// [`Options`](zmtp_proto::socket::Options) of those names), set on each socket before it
/// binds or connects. The receive buffer then also sets the window the connection starts
/// with (set on a live connection, a small one leaves the window scale agreed for the
/// larger default, and the connection crawls), and the connections a listener accepts
/// inherit every setting. `None` (or 0 for the type of service): the system's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpTuning {
    /// `SO_SNDBUF`, in bytes.
    pub send_buffer: Option<usize>,
    /// `SO_RCVBUF`, in bytes.
    pub recv_buffer: Option<usize>,
    /// `SO_KEEPALIVE`; the three after it apply only when it is on, as in libzmq.
    pub keepalive: Option<bool>,
    /// `TCP_KEEPCNT`.
    pub keepalive_count: Option<u32>,
    /// `TCP_KEEPIDLE`.
    pub keepalive_idle: Option<Duration>,
    /// `TCP_KEEPINTVL`.
    pub keepalive_interval: Option<Duration>,
    /// `IP_TOS` (IPv4) or `IPV6_TCLASS` (IPv6); 0: not set.
    pub tos: u32,
    /// `TCP_USER_TIMEOUT`.
    pub max_retransmit: Option<Duration>,
    /// A listener's `listen(2)` backlog.
    pub backlog: u32,
}

impl Default for TcpTuning {
    /// The system's settings, and libzmq's backlog of 100.
    fn default() -> TcpTuning {
        TcpTuning::of(&zmtp_proto::socket::Options::default())
    }
}

impl TcpTuning {
    /// The setup a socket's options ask for.
    pub fn of(options: &zmtp_proto::socket::Options) -> TcpTuning {
        TcpTuning {
            send_buffer: options.sndbuf,
            recv_buffer: options.rcvbuf,
            keepalive: options.tcp_keepalive,
            keepalive_count: options.tcp_keepalive_cnt,
            keepalive_idle: options.tcp_keepalive_idle,
            keepalive_interval: options.tcp_keepalive_intvl,
            tos: options.tos,
            max_retransmit: options.tcp_maxrt,
            backlog: options.backlog,
        }
    }

    /// Whether a connect needs nothing set (the runtime's own connect will do).
    pub fn is_system(&self) -> bool {
        TcpTuning {
            backlog: self.backlog,
            ..TcpTuning::of(&zmtp_proto::socket::Options::default())
        } == *self
    }

    /// Set it on `socket`, a TCP socket of `family`'s address family, before it binds or
    /// connects (a value the system does not take fails the bind or connect).
    pub fn apply(&self, socket: &Socket, family: SocketAddr) -> io::Result<()> {
        if let Some(size) = self.send_buffer {
            socket.set_send_buffer_size(size)?;
        }
        if let Some(size) = self.recv_buffer {
            socket.set_recv_buffer_size(size)?;
        }
        if let Some(on) = self.keepalive {
            socket.set_keepalive(on)?;
        }
        if self.keepalive == Some(true) {
            // Zero, which the system refuses, is taken as not set.
            let mut params = socket2::TcpKeepalive::new();
            if let Some(idle) = self.keepalive_idle.filter(|d| !d.is_zero()) {
                params = params.with_time(idle);
            }
            #[cfg(not(target_os = "windows"))]
            if let Some(interval) = self.keepalive_interval.filter(|d| !d.is_zero()) {
                params = params.with_interval(interval);
            }
            #[cfg(not(target_os = "windows"))]
            if let Some(count) = self.keepalive_count.filter(|&n| n > 0) {
                params = params.with_retries(count);
            }
            socket.set_tcp_keepalive(&params)?;
        }
        if self.tos != 0 {
            match family {
                SocketAddr::V4(_) => socket.set_tos_v4(self.tos)?,
                #[cfg(unix)]
                SocketAddr::V6(_) => socket.set_tclass_v6(self.tos)?,
                #[cfg(not(unix))]
                SocketAddr::V6(_) => {}
            }
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(limit) = self.max_retransmit {
            socket.set_tcp_user_timeout(Some(limit))?;
        }
        Ok(())
    }
}

/// A TCP socket for a connect to `dest`: set up as `tuning` says and, with a `source`, bound
/// there with `SO_REUSEADDR` set (so that connects to different destinations may share a
/// source port, as libzmq's do).
fn connect_socket(
    dest: SocketAddr,
    source: Option<&TcpSource>,
    tuning: &TcpTuning,
) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(dest), Type::STREAM, Some(Protocol::TCP))?;
    tuning.apply(&socket, dest)?;
    if let Some(source) = source {
        let from = source_addr(source, dest)?;
        socket.set_reuse_address(true)?;
        socket.bind(&from.into())?;
    }
    Ok(socket)
}

/// Start a non-blocking connect to `dest`, from `source` if there is one (see
/// [`TcpSource`]), set up as `tuning` says: the stream comes back while the connect is in
/// progress; it completes (or fails) when the stream turns writable, and `take_error`
/// then tells which.
pub fn start_connect(
    dest: SocketAddr,
    source: Option<&TcpSource>,
    tuning: &TcpTuning,
) -> io::Result<std::net::TcpStream> {
    let socket = connect_socket(dest, source, tuning)?;
    socket.set_nonblocking(true)?;
    match socket.connect(&dest.into()) {
        Ok(()) => {}
        Err(e) if in_progress(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}

/// Listen on `addr` set up as `tuning` says (inherited by every connection accepted),
/// with its backlog, and with `SO_REUSEADDR` set, as the standard library's listeners
/// have it on Unix.
pub fn listen_socket(addr: SocketAddr, tuning: &TcpTuning) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    tuning.apply(&socket, addr)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(tuning.backlog).unwrap_or(i32::MAX))?;
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
    let socket = connect_socket(dest, Some(source), &TcpTuning::default())?;
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
    tuning: TcpTuning,
    last: Option<io::Error>,
}

impl Attempts {
    /// Try `addrs` in order.
    pub fn new(addrs: Vec<SocketAddr>) -> Attempts {
        Attempts {
            addrs: addrs.into_iter(),
            source: None,
            tuning: TcpTuning::default(),
            last: None,
        }
    }

    /// Connect with sockets set up as `tuning` says (see [`TcpTuning`]).
    pub fn with_tuning(mut self, tuning: TcpTuning) -> Attempts {
        self.tuning = tuning;
        self
    }

    /// Whether a connect needs no more than the runtime's own (no source address, nothing
    /// to set up), or must be started with [`start`](Self::start).
    pub fn plain(&self) -> bool {
        self.source.is_none() && self.tuning.is_system()
    }

    /// Start a non-blocking connect to `addr` (the last address [`next`](Self::next)
    /// gave) from the source and set up as this connect says (see [`start_connect`]).
    pub fn start(&self, addr: SocketAddr) -> io::Result<std::net::TcpStream> {
        start_connect(addr, self.source.as_ref(), &self.tuning)
    }

    /// Connect from `source` (`tcp://source;destination`; see [`start_connect`]).
    pub fn from_source(mut self, source: Option<TcpSource>) -> Attempts {
        self.source = source;
        self
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
