//! Endpoint strings as libzmq users write them: `tcp://host:port`, `ipc://path`,
//! `ipc://@name`, `inproc://name`, `udp://[iface;]host:port` and `ws://host:port[/path]`.
//!
//! [`Endpoint::parse`] checks the form only; it resolves no names and touches no
//! interfaces. Whether an endpoint may be bound or connected to is a second, separate check
//! ([`Endpoint::check_bind`], [`Endpoint::check_connect`]), as in libzmq, where `tcp://*:*`
//! is a valid bind endpoint but never a valid connect endpoint. Which socket types may use
//! a transport, and in which direction, is a third ([`Endpoint::check_bind_for`],
//! [`Endpoint::check_connect_for`]): over `udp://` a RADIO only connects and a DISH or
//! DGRAM only binds; a STREAM uses neither `ws://` nor `wss://`.

use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::str::FromStr;

use crate::udp::{may_bind_udp, may_connect_udp};
use crate::SocketType;

/// A parsed endpoint.
///
/// Its [`Display`](fmt::Display) form is canonical (`tcp://127.0.0.1:5555`,
/// `tcp://[::1]:5555`, `tcp://*:*`, `ipc:///tmp/x`, `ipc://@name`, `inproc://name`,
/// `udp://*;239.0.0.1:5555`) and parses back to an equal value for every endpoint that
/// [`Endpoint::parse`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `tcp://host:port`.
    Tcp(TcpEndpoint),
    /// `ipc://path` or `ipc://@name`.
    Ipc(IpcEndpoint),
    /// `inproc://name`: a non-empty name, local to one context.
    Inproc(String),
    /// `udp://[iface;]host:port`: RADIO/DISH or DGRAM datagrams (see [`crate::udp`]).
    Udp(UdpEndpoint),
    /// `ws://host:port[/path]`: ZWS 2.0, ZMTP over WebSocket over TCP (see [`crate::ws`]);
    /// `wss://host:port[/path]` the same over TLS ([`WsEndpoint::tls`]), which the driver
    /// adds between the TCP stream and the socket.
    Ws(WsEndpoint),
}

/// A `ws://host:port[/path]` or `wss://host:port[/path]` endpoint: a TCP endpoint, the
/// path a client requests, and whether the stream runs over TLS.
///
/// The host and port follow the rules of `tcp://` (`*` binds every interface, `*` or 0 an
/// ephemeral port). The path is everything from the first `/` after the port, kept as
/// written; only a connecting socket uses it, in its upgrade request (whose path starts at
/// the *last* `/`, as libzmq's does: see [`Target::from_address`](crate::ws::Target)). A
/// listening socket accepts any path, as libzmq does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WsEndpoint {
    /// Where to listen or connect.
    pub tcp: TcpEndpoint,
    /// Empty, or `/` and visible ASCII.
    pub path: String,
    /// `wss://`: the driver runs TLS on the TCP stream, under the WebSocket (the socket's
    /// bytes are the same as over `ws://`).
    pub tls: bool,
}

/// The host and port of a `tcp://` endpoint, and the source address of a connect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TcpEndpoint {
    /// The host: a wildcard, an address literal, or a name to resolve.
    pub host: Host,
    /// The port; `None` is the `*` wildcard (an ephemeral port, bind only). Port 0 also asks
    /// for an ephemeral port on bind.
    pub port: Option<u16>,
    /// `tcp://source;host:port` (connect only): the local address the connecting stream
    /// binds before it connects, as libzmq's source addresses do.
    pub source: Option<TcpSource>,
}

/// The source of a `tcp://source;destination` connect: `host:port`, where the host is `*`
/// (any local address of the destination's family) or an address literal, and the port is
/// `*` or 0 (an ephemeral one) or a number. The driver binds it with `SO_REUSEADDR` set, so
/// that several connects to different destinations may share one source port, as libzmq's
/// do. A name here is never looked up: libzmq takes only literals and interface names,
/// and interface names are not supported, so a connect from one fails when it is tried
/// (and is retried, as any failed connect is).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TcpSource {
    /// The local host.
    pub host: Host,
    /// The local port; 0 for an ephemeral one.
    pub port: u16,
}

impl fmt::Display for TcpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The host part of a `tcp://` or `udp://` endpoint, or the interface of a `udp://` one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// `*`: every local interface (bind only). As a `udp://` interface: the system's
    /// default multicast interface.
    Any,
    /// A dotted-quad IPv4 literal.
    Ipv4(Ipv4Addr),
    /// An IPv6 literal, written in brackets: `[::1]` (a `udp://` interface may omit them).
    Ipv6(Ipv6Addr),
    /// A host name (connect) or an interface or host name (bind), left for the driver to
    /// resolve. As a `udp://` interface: a NIC name.
    Name(String),
}

/// A `udp://` endpoint: `udp://host:port`, `udp://*:port` or, for multicast,
/// `udp://[iface;]group:port`.
///
/// What it means depends on the direction, as in libzmq (`udp_address.cpp`):
///
/// - **Connect** (RADIO): datagrams go to `host:port`. For a multicast group the driver
///   sends from the interface (`IP_MULTICAST_IF`, unless it is `*` or absent) with the
///   socket's multicast loop and hops options.
/// - **Bind** (DISH, DGRAM): with a unicast host, the socket binds `host:port` (`*` for
///   every interface). With a multicast group it binds the wildcard address on `port` with
///   `SO_REUSEADDR` and `SO_REUSEPORT`, then joins the group on the interface (`*` or
///   absent: the system's default).
///
/// The interface may be `*`, an IPv4 or IPv6 literal (brackets optional), or a NIC name
/// such as `eth0`. A name is kept as written ([`Host::Name`]): resolving it is the
/// driver's task, and a driver that cannot resolve interface names fails the bind or
/// connect, like a libzmq built without `ifaddrs` support, which gives `ENODEV`. An
/// interface is only allowed before a multicast literal (libzmq's `EINVAL` otherwise).
/// libzmq resolves IPv6 only with its `ZMQ_IPV6` option set and needs an interface index
/// (a NIC name) for IPv6 multicast; both are left to the driver.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UdpEndpoint {
    /// The multicast interface written before `;`, if any: [`Host::Any`] for `*`, an
    /// address literal, or [`Host::Name`] for a NIC name.
    pub interface: Option<Host>,
    /// The destination (connect), the local address (bind) or the multicast group: `*`
    /// (bind only), an address literal or a name to resolve.
    pub host: Host,
    /// The port; `None` is the `*` wildcard (bind only). Port 0 also asks for an ephemeral
    /// port on bind.
    pub port: Option<u16>,
}

impl UdpEndpoint {
    /// The multicast group, when the host is a multicast address literal (IPv4
    /// `224.0.0.0/4`, IPv6 `ff00::/8`). A name is never taken for a group.
    pub fn multicast_group(&self) -> Option<IpAddr> {
        host_ip(&self.host).filter(IpAddr::is_multicast)
    }
}

/// The target of an `ipc://` endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IpcEndpoint {
    /// A filesystem path (`ipc:///tmp/x` is the path `/tmp/x`). `*` asks for a unique
    /// temporary path on bind. A path that starts with `@` cannot be written as an endpoint:
    /// `ipc://@name` is always [`IpcEndpoint::Abstract`].
    Path(String),
    /// `ipc://@name`: a Linux abstract-namespace socket; the name excludes the `@`.
    Abstract(String),
}

/// What is wrong with an endpoint string, or why it cannot be bound or connected to.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointError {
    /// No `transport://` prefix.
    MissingScheme,
    /// The transport is not `tcp`, `ipc`, `inproc`, `udp` or `ws` (transports are lowercase).
    UnknownTransport(String),
    /// A `tcp://` or `udp://` endpoint has no `:port`, or an empty port.
    MissingPort,
    /// The port is neither `*` nor a decimal number up to 65535.
    BadPort(String),
    /// The host of a `tcp://` or `udp://` endpoint is empty.
    EmptyHost,
    /// The host contains a character no host or interface name has (whitespace, a control
    /// character, `/`, `[` or `]`).
    BadHost(String),
    /// The host consists of digits and dots but is not a dotted-quad IPv4 address.
    BadIpv4(String),
    /// The text in brackets is not an IPv6 address (zone ids such as `%eth0` are not
    /// supported).
    BadIpv6(String),
    /// A `[` without its closing `]`.
    UnclosedBracket,
    /// The host contains `:` without brackets: IPv6 literals are written `[addr]:port`.
    /// Holds everything after `tcp://`.
    UnbracketedIpv6(String),
    /// libzmq's `tcp://source;destination` form where it has no meaning: on a bind, or
    /// over `ws://` and `wss://`.
    UnsupportedSourceAddress,
    /// `ipc://` with an empty path.
    EmptyPath,
    /// `ipc://@` with an empty abstract name.
    EmptyAbstractName,
    /// `inproc://` with an empty name.
    EmptyName,
    /// Connecting to the `*` host.
    WildcardHostOnConnect,
    /// Connecting to the `*` port or to port 0.
    WildcardPortOnConnect,
    /// Connecting to `ipc://*`, which only names a path when binding.
    WildcardPathOnConnect,
    /// `udp://;group:port`: an empty interface before the `;`.
    EmptyInterface,
    /// The interface before the `;` of a `udp://` endpoint is neither `*`, an address
    /// literal nor a NIC name (it has a port, a `;`, whitespace or similar).
    BadInterface(String),
    /// The interface of a `udp://` endpoint is a multicast address (libzmq's `EINVAL`).
    MulticastInterface(String),
    /// `udp://iface;host:port` where the host is not a multicast address literal: an
    /// interface only goes with a multicast group (libzmq's `EINVAL`). Holds the host. A
    /// host name is refused too, where libzmq would first resolve it and accept it if it
    /// named a group.
    InterfaceNeedsMulticast(String),
    /// The interface and the multicast group of a `udp://` endpoint are of different
    /// address families, IPv4 and IPv6 (libzmq's `EINVAL`).
    InterfaceFamilyMismatch,
    /// This socket type may not use this transport in this direction (libzmq's
    /// `ENOCOMPATPROTO`): over `udp://` a RADIO may only connect, a DISH or DGRAM only bind,
    /// and no other type may use it; a STREAM (raw bytes) may use neither `ws://` nor
    /// `wss://`, in either direction.
    IncompatibleTransport {
        /// The transport, as written before `://`.
        transport: &'static str,
        /// The socket's type.
        socket_type: SocketType,
        /// Whether it was a bind (otherwise a connect).
        bind: bool,
    },
    /// The endpoint is valid but this socket cannot use its transport. Sockets run every
    /// transport the parser knows; the variant stays for transports added to the parser
    /// before the sockets run them.
    TransportUnavailable(&'static str),
    /// The path of a `ws://` endpoint has a byte that cannot go into an HTTP request line
    /// (anything but visible ASCII).
    BadWsPath(String),
    /// `connect_peer` on a socket that is not a PEER, or with `IMMEDIATE` set (libzmq's
    /// `ENOTSUP` and `EFAULT`).
    ConnectPeerRefused,
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointError::MissingScheme => f.write_str(
                "endpoint has no transport (expected tcp://, ipc://, inproc://, udp://, ws:// or \
                 wss://)",
            ),
            EndpointError::UnknownTransport(t) => write!(
                f,
                "unknown transport {:?} (expected tcp, ipc, inproc, udp, ws or wss, in lowercase)",
                t
            ),
            EndpointError::MissingPort => f.write_str("endpoint has no port (host:port)"),
            EndpointError::BadPort(p) => {
                write!(f, "invalid port {p:?} (expected 0..=65535 or *)")
            }
            EndpointError::EmptyHost => f.write_str("endpoint has an empty host"),
            EndpointError::BadHost(h) => write!(f, "invalid character in host {h:?}"),
            EndpointError::BadIpv4(h) => write!(f, "invalid IPv4 address {h:?}"),
            EndpointError::BadIpv6(h) => write!(f, "invalid IPv6 address {h:?}"),
            EndpointError::UnclosedBracket => f.write_str("IPv6 address is missing its ']'"),
            EndpointError::UnbracketedIpv6(a) => write!(
                f,
                "host contains ':' in {a:?}: write IPv6 addresses as [addr]:port"
            ),
            EndpointError::UnsupportedSourceAddress => {
                f.write_str("a source address (source;destination) is only for connecting tcp://")
            }
            EndpointError::EmptyPath => f.write_str("ipc endpoint has an empty path"),
            EndpointError::EmptyAbstractName => {
                f.write_str("ipc endpoint has an empty abstract name after '@'")
            }
            EndpointError::EmptyName => f.write_str("inproc endpoint has an empty name"),
            EndpointError::WildcardHostOnConnect => {
                f.write_str("cannot connect to the wildcard host '*'")
            }
            EndpointError::WildcardPortOnConnect => {
                f.write_str("cannot connect to a wildcard port ('*' or 0)")
            }
            EndpointError::WildcardPathOnConnect => {
                f.write_str("cannot connect to the wildcard ipc path '*'")
            }
            EndpointError::ConnectPeerRefused => {
                f.write_str("connect_peer needs a PEER socket with IMMEDIATE off")
            }
            EndpointError::BadWsPath(p) => {
                write!(f, "ws path {p:?} is not '/' followed by visible ASCII")
            }
            EndpointError::EmptyInterface => f.write_str("udp endpoint has an empty interface"),
            EndpointError::BadInterface(i) => write!(
                f,
                "invalid interface {i:?} (expected *, an address or an interface name)"
            ),
            EndpointError::MulticastInterface(i) => {
                write!(f, "the interface {i:?} is a multicast address")
            }
            EndpointError::InterfaceNeedsMulticast(h) => write!(
                f,
                "an interface goes only with a multicast group, and {h:?} is not one"
            ),
            EndpointError::InterfaceFamilyMismatch => {
                f.write_str("the interface and the multicast group are not of the same family")
            }
            EndpointError::IncompatibleTransport {
                transport,
                socket_type,
                bind,
            } => write!(
                f,
                "a {} socket cannot {} over {transport}:// ({})",
                socket_type.name(),
                if *bind { "bind" } else { "connect" },
                if *transport == "udp" {
                    "udp: RADIO connects, DISH and DGRAM bind"
                } else {
                    "STREAM is raw TCP: tcp, ipc and inproc only"
                }
            ),
            EndpointError::TransportUnavailable(t) => {
                write!(f, "sockets cannot use {t}:// yet")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for EndpointError {}

impl Endpoint {
    /// Parses an endpoint string.
    ///
    /// The transport is case-sensitive. For `tcp://` the host and port split at the last
    /// `:`, except that an IPv6 literal is written in brackets (`[::1]:5555`); the port is
    /// `*` or decimal `0..=65535`; the host is `*`, an IPv4 or bracketed IPv6 literal, or a
    /// name. `ipc://@name` is an abstract socket, any other `ipc://` target a path. Names and
    /// paths must not be empty. A `tcp://` endpoint may start with a source address and a
    /// `;` (`tcp://127.0.0.1:5564;server:5555`, split at the last `;`, as libzmq does): its
    /// `host:port` is parsed as the destination's and kept in [`TcpEndpoint::source`],
    /// for connects only. `udp://` takes the host and port of `tcp://`, optionally
    /// after an interface and a `;` (split at the last `;`, as libzmq does), which requires
    /// a multicast literal for the host; see [`UdpEndpoint`].
    pub fn parse(s: &str) -> Result<Endpoint, EndpointError> {
        let (scheme, rest) = s.split_once("://").ok_or(EndpointError::MissingScheme)?;
        match scheme {
            "" => Err(EndpointError::MissingScheme),
            "tcp" => parse_tcp(rest).map(Endpoint::Tcp),
            "udp" => parse_udp(rest).map(Endpoint::Udp),
            "ws" => parse_ws(rest, false).map(Endpoint::Ws),
            "wss" => parse_ws(rest, true).map(Endpoint::Ws),
            "ipc" => parse_ipc(rest).map(Endpoint::Ipc),
            "inproc" if rest.is_empty() => Err(EndpointError::EmptyName),
            "inproc" => Ok(Endpoint::Inproc(rest.to_owned())),
            other => Err(EndpointError::UnknownTransport(other.to_owned())),
        }
    }

    /// `tcp://` with an IPv6 literal written without brackets (`rest` is what follows
    /// `tcp://`, as [`EndpointError::UnbracketedIpv6`] holds it), split at the last `:`:
    /// how libzmq's SOCKS connecter reads `tcp://::1:5555`.
    pub(crate) fn unbracketed_tcp(rest: &str) -> Result<Endpoint, EndpointError> {
        let refused = || EndpointError::UnbracketedIpv6(rest.to_owned());
        let (host, port) = rest.rsplit_once(':').ok_or_else(refused)?;
        let host = host.parse::<Ipv6Addr>().map_err(|_| refused())?;
        Ok(Endpoint::Tcp(TcpEndpoint {
            host: Host::Ipv6(host),
            port: parse_port(port)?,
            source: None,
        }))
    }

    /// Checks that the endpoint can be bound: every parsed endpoint can (`tcp://*:*` binds
    /// every interface on an ephemeral port) but one with a source address
    /// ([`EndpointError::UnsupportedSourceAddress`]: a source is for connecting). A
    /// hand-built endpoint is also checked for what [`Endpoint::parse`] would reject, such
    /// as an empty name.
    pub fn check_bind(&self) -> Result<(), EndpointError> {
        self.check_form()?;
        match self {
            Endpoint::Tcp(TcpEndpoint {
                source: Some(_), ..
            }) => Err(EndpointError::UnsupportedSourceAddress),
            _ => Ok(()),
        }
    }

    /// Checks that the endpoint can be connected to: in addition to
    /// [`check_bind`](Endpoint::check_bind), a `tcp://` or `udp://` host must not be `*`,
    /// its port must be neither `*` nor 0, and an `ipc://` path must not be `*`.
    pub fn check_connect(&self) -> Result<(), EndpointError> {
        self.check_form()?;
        match self {
            Endpoint::Tcp(TcpEndpoint {
                host: Host::Any, ..
            })
            | Endpoint::Ws(WsEndpoint {
                tcp: TcpEndpoint {
                    host: Host::Any, ..
                },
                ..
            })
            | Endpoint::Udp(UdpEndpoint {
                host: Host::Any, ..
            }) => Err(EndpointError::WildcardHostOnConnect),
            Endpoint::Tcp(TcpEndpoint {
                port: None | Some(0),
                ..
            })
            | Endpoint::Ws(WsEndpoint {
                tcp:
                    TcpEndpoint {
                        port: None | Some(0),
                        ..
                    },
                ..
            })
            | Endpoint::Udp(UdpEndpoint {
                port: None | Some(0),
                ..
            }) => Err(EndpointError::WildcardPortOnConnect),
            Endpoint::Ipc(IpcEndpoint::Path(p)) if p == "*" => {
                Err(EndpointError::WildcardPathOnConnect)
            }
            _ => Ok(()),
        }
    }

    /// Everything libzmq checks before a socket of type `socket_type` binds this endpoint:
    /// [`check_bind`](Endpoint::check_bind), then the transport's socket types. Over
    /// `udp://` only DISH and DGRAM bind; any other type gets
    /// [`EndpointError::IncompatibleTransport`] (libzmq's `ENOCOMPATPROTO`). A STREAM
    /// socket talks raw bytes over a byte stream: it may not use `ws://` or `wss://`
    /// either (whose streams carry framed messages). Every type may bind every other
    /// transport.
    pub fn check_bind_for(&self, socket_type: SocketType) -> Result<(), EndpointError> {
        self.check_bind()?;
        match self {
            Endpoint::Ws(_) if socket_type == SocketType::Stream => {
                Err(EndpointError::IncompatibleTransport {
                    transport: self.transport(),
                    socket_type,
                    bind: true,
                })
            }
            Endpoint::Udp(_) if !may_bind_udp(socket_type) => {
                Err(EndpointError::IncompatibleTransport {
                    transport: "udp",
                    socket_type,
                    bind: true,
                })
            }
            _ => Ok(()),
        }
    }

    /// Everything libzmq checks before a socket of type `socket_type` connects to this
    /// endpoint: [`check_connect`](Endpoint::check_connect), then the transport's socket
    /// types. Over `udp://` only RADIO connects; any other type gets
    /// [`EndpointError::IncompatibleTransport`] (libzmq's `ENOCOMPATPROTO`). A STREAM may
    /// not connect over `ws://` or `wss://` (see [`check_bind_for`](Endpoint::check_bind_for)).
    /// Every type may connect over every other transport.
    pub fn check_connect_for(&self, socket_type: SocketType) -> Result<(), EndpointError> {
        self.check_connect()?;
        match self {
            Endpoint::Ws(_) if socket_type == SocketType::Stream => {
                Err(EndpointError::IncompatibleTransport {
                    transport: self.transport(),
                    socket_type,
                    bind: false,
                })
            }
            Endpoint::Udp(_) if !may_connect_udp(socket_type) => {
                Err(EndpointError::IncompatibleTransport {
                    transport: "udp",
                    socket_type,
                    bind: false,
                })
            }
            _ => Ok(()),
        }
    }

    /// The transport name as written before `://`: `"tcp"`, `"ipc"`, `"inproc"`, `"udp"`,
    /// `"ws"` or `"wss"`.
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Ipc(_) => "ipc",
            Endpoint::Inproc(_) => "inproc",
            Endpoint::Udp(_) => "udp",
            Endpoint::Ws(WsEndpoint { tls: false, .. }) => "ws",
            Endpoint::Ws(WsEndpoint { tls: true, .. }) => "wss",
        }
    }

    /// The TCP endpoint a driver listens on or connects to for this endpoint: the
    /// endpoint itself for `tcp://`, the host and port of `ws://` (whose streams the
    /// socket runs as ZWS); `None` for other transports.
    pub fn tcp(&self) -> Option<&TcpEndpoint> {
        match self {
            Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => Some(tcp),
            _ => None,
        }
    }

    /// The invariants [`Endpoint::parse`] guarantees, for endpoints built by hand.
    fn check_form(&self) -> Result<(), EndpointError> {
        match self {
            Endpoint::Tcp(tcp) => {
                if let Some(TcpSource {
                    host: Host::Name(name),
                    ..
                }) = &tcp.source
                {
                    check_name(name, name)?;
                }
                match &tcp.host {
                    Host::Name(name) => check_name(name, name),
                    _ => Ok(()),
                }
            }
            Endpoint::Ws(ws) if ws.tcp.source.is_some() => {
                Err(EndpointError::UnsupportedSourceAddress)
            }
            Endpoint::Ws(ws) => {
                if let Host::Name(name) = &ws.tcp.host {
                    check_name(name, name)?;
                }
                check_ws_path(&ws.path)
            }
            Endpoint::Ipc(IpcEndpoint::Path(p)) if p.is_empty() => Err(EndpointError::EmptyPath),
            Endpoint::Ipc(IpcEndpoint::Abstract(n)) if n.is_empty() => {
                Err(EndpointError::EmptyAbstractName)
            }
            Endpoint::Ipc(_) => Ok(()),
            Endpoint::Inproc(n) if n.is_empty() => Err(EndpointError::EmptyName),
            Endpoint::Inproc(_) => Ok(()),
            Endpoint::Udp(udp) => check_udp(udp),
        }
    }
}

/// Where a driver opens (or listens for) the stream of an endpoint, before any name is
/// resolved: what [`Endpoint::stream_addr`] and [`Command::dial_addr`](super::Command::dial_addr)
/// return.
///
/// `ws://` and `wss://` endpoints give their TCP address: the socket runs the WebSocket
/// itself over the stream, and for `wss://` ([`WsEndpoint::tls`]) the driver runs TLS
/// between the two. `udp://` endpoints have no stream (see
/// [`Command::OpenUdp`](super::Command::OpenUdp)).
///
/// ```
/// use zmtp_proto::socket::{Endpoint, StreamAddr};
///
/// let tcp = Endpoint::parse("tcp://127.0.0.1:5555").unwrap();
/// assert_eq!(tcp.stream_addr(), Some(StreamAddr::Ip(([127, 0, 0, 1], 5555).into())));
/// let name = Endpoint::parse("ws://localhost:8080/feed").unwrap();
/// assert_eq!(name.stream_addr(), Some(StreamAddr::Name { host: "localhost", port: 8080 }));
/// // A wildcard bind listens on every IPv4 interface, on a port the system picks.
/// let any = Endpoint::parse("tcp://*:*").unwrap();
/// assert_eq!(any.stream_addr(), Some(StreamAddr::Ip(([0, 0, 0, 0], 0).into())));
/// let ipc = Endpoint::parse("ipc://@feed").unwrap();
/// assert_eq!(ipc.stream_addr(), Some(StreamAddr::IpcAbstract("feed")));
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamAddr<'a> {
    /// An IP address and port, used as they are. A bind to `*` is the IPv4 wildcard
    /// address, and a bind to port `*` is port 0 (the system picks one).
    Ip(core::net::SocketAddr),
    /// A host name and port: the driver resolves the name and tries each address in turn
    /// until one connects, as libzmq does.
    Name {
        /// The name, as written in the endpoint.
        host: &'a str,
        /// The port.
        port: u16,
    },
    /// A Unix-domain socket file (`ipc://path`). `*` on a bind asks for a fresh path of
    /// the driver's choosing.
    IpcPath(&'a str),
    /// A Linux abstract socket name (`ipc://@name`), without the `@`.
    IpcAbstract(&'a str),
    /// An in-process name (`inproc://name`): no kernel stream; the driver pairs the two
    /// sockets itself.
    Inproc(&'a str),
}

impl Endpoint {
    /// Where the stream of this endpoint is opened or listened for, with no name resolved:
    /// see [`StreamAddr`]. `None` for `udp://`, which has no stream.
    pub fn stream_addr(&self) -> Option<StreamAddr<'_>> {
        fn tcp_addr(tcp: &TcpEndpoint) -> StreamAddr<'_> {
            let port = tcp.port.unwrap_or(0);
            match &tcp.host {
                Host::Any => StreamAddr::Ip((Ipv4Addr::UNSPECIFIED, port).into()),
                Host::Ipv4(a) => StreamAddr::Ip((*a, port).into()),
                Host::Ipv6(a) => StreamAddr::Ip((*a, port).into()),
                Host::Name(host) => StreamAddr::Name { host, port },
            }
        }
        match self {
            Endpoint::Tcp(tcp) | Endpoint::Ws(WsEndpoint { tcp, .. }) => Some(tcp_addr(tcp)),
            Endpoint::Ipc(IpcEndpoint::Path(path)) => Some(StreamAddr::IpcPath(path)),
            Endpoint::Ipc(IpcEndpoint::Abstract(name)) => Some(StreamAddr::IpcAbstract(name)),
            Endpoint::Inproc(name) => Some(StreamAddr::Inproc(name)),
            Endpoint::Udp(_) => None,
        }
    }
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(s: &str) -> Result<Endpoint, EndpointError> {
        Endpoint::parse(s)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(TcpEndpoint { host, port, source }) => {
                f.write_str("tcp://")?;
                if let Some(source) = source {
                    write!(f, "{source};")?;
                }
                write!(f, "{host}:")?;
                match port {
                    Some(p) => write!(f, "{p}"),
                    None => f.write_str("*"),
                }
            }
            Endpoint::Ws(WsEndpoint { tcp, path, .. }) => {
                write!(f, "{}://{}:", self.transport(), tcp.host)?;
                match tcp.port {
                    Some(p) => write!(f, "{p}")?,
                    None => f.write_str("*")?,
                }
                f.write_str(path)
            }
            Endpoint::Ipc(IpcEndpoint::Path(p)) => write!(f, "ipc://{p}"),
            Endpoint::Ipc(IpcEndpoint::Abstract(n)) => write!(f, "ipc://@{n}"),
            Endpoint::Inproc(n) => write!(f, "inproc://{n}"),
            Endpoint::Udp(UdpEndpoint {
                interface,
                host,
                port,
            }) => {
                f.write_str("udp://")?;
                if let Some(interface) = interface {
                    write!(f, "{interface};")?;
                }
                write!(f, "{host}:")?;
                match port {
                    Some(p) => write!(f, "{p}"),
                    None => f.write_str("*"),
                }
            }
        }
    }
}

/// The host as written in an endpoint: `*`, `127.0.0.1`, `[::1]` or the name.
impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Any => f.write_str("*"),
            Host::Ipv4(a) => write!(f, "{a}"),
            Host::Ipv6(a) => write!(f, "[{a}]"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// `rest` is everything after `tcp://`.
/// `source;destination`: the source split off at the last `;`, as libzmq does.
fn parse_tcp(rest: &str) -> Result<TcpEndpoint, EndpointError> {
    let Some((source, destination)) = rest.rsplit_once(';') else {
        return parse_tcp_destination(rest);
    };
    let (host, port) = parse_host_port(source)?;
    let mut tcp = parse_tcp_destination(destination)?;
    tcp.source = Some(TcpSource {
        host,
        port: port.unwrap_or(0),
    });
    Ok(tcp)
}

/// `host:port`, with no source address.
fn parse_tcp_destination(rest: &str) -> Result<TcpEndpoint, EndpointError> {
    if rest.contains(';') {
        return Err(EndpointError::UnsupportedSourceAddress);
    }
    let (host, port) = parse_host_port(rest)?;
    Ok(TcpEndpoint {
        host,
        port,
        source: None,
    })
}

/// `rest` is everything after `ws://` or `wss://` (`tls`): `host:port`, then the path from
/// the first `/`.
fn parse_ws(rest: &str, tls: bool) -> Result<WsEndpoint, EndpointError> {
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let tcp = parse_tcp_destination(authority)?;
    check_ws_path(path)?;
    Ok(WsEndpoint {
        tcp,
        path: path.to_owned(),
        tls,
    })
}

/// A `ws://` path is empty, or `/` and visible ASCII (it goes into the request line).
fn check_ws_path(path: &str) -> Result<(), EndpointError> {
    let visible = path.bytes().all(|b| b.is_ascii_graphic());
    if path.is_empty() || (path.starts_with('/') && visible) {
        Ok(())
    } else {
        Err(EndpointError::BadWsPath(path.to_owned()))
    }
}

/// `rest` is everything after `udp://`.
fn parse_udp(rest: &str) -> Result<UdpEndpoint, EndpointError> {
    let (interface, target) = match rest.rsplit_once(';') {
        Some((interface, target)) => (Some(parse_interface(interface)?), target),
        None => (None, rest),
    };
    let (host, port) = parse_host_port(target)?;
    let udp = UdpEndpoint {
        interface,
        host,
        port,
    };
    check_udp(&udp)?;
    Ok(udp)
}

/// The interface of a `udp://` endpoint, everything before the `;`: `*`, an IPv4 or IPv6
/// literal (in brackets or not, since no port follows), or a NIC name.
fn parse_interface(interface: &str) -> Result<Host, EndpointError> {
    let bad = || EndpointError::BadInterface(interface.to_owned());
    if interface.is_empty() {
        return Err(EndpointError::EmptyInterface);
    }
    if interface == "*" {
        return Ok(Host::Any);
    }
    if let Some(bracketed) = interface.strip_prefix('[') {
        let inner = bracketed
            .strip_suffix(']')
            .ok_or(EndpointError::UnclosedBracket)?;
        return inner
            .parse()
            .map(Host::Ipv6)
            .map_err(|_| EndpointError::BadIpv6(inner.to_owned()));
    }
    if let Ok(a) = interface.parse::<Ipv4Addr>() {
        return Ok(Host::Ipv4(a));
    }
    if let Ok(a) = interface.parse::<Ipv6Addr>() {
        return Ok(Host::Ipv6(a));
    }
    if interface.contains(':') {
        // Neither an IPv6 literal nor a name: most likely an address with a port.
        return Err(bad());
    }
    if interface.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(EndpointError::BadIpv4(interface.to_owned()));
    }
    check_interface_name(interface)?;
    Ok(Host::Name(interface.to_owned()))
}

/// What a NIC name must satisfy: a host name's rules, and no `;`.
fn check_interface_name(name: &str) -> Result<(), EndpointError> {
    if name.is_empty() {
        return Err(EndpointError::EmptyInterface);
    }
    match check_name(name, name) {
        Ok(()) if !name.contains(';') => Ok(()),
        _ => Err(EndpointError::BadInterface(name.to_owned())),
    }
}

/// The rules of a `udp://` endpoint beyond the form of its parts: an interface only before
/// a multicast group, never a multicast interface, and both of one family.
fn check_udp(udp: &UdpEndpoint) -> Result<(), EndpointError> {
    if let Host::Name(name) = &udp.host {
        check_name(name, name)?;
    }
    let Some(interface) = &udp.interface else {
        return Ok(());
    };
    if let Host::Name(name) = interface {
        check_interface_name(name)?;
    }
    let interface_ip = host_ip(interface);
    if interface_ip.is_some_and(|ip| ip.is_multicast()) {
        return Err(EndpointError::MulticastInterface(interface.to_string()));
    }
    let Some(group) = udp.multicast_group() else {
        return Err(EndpointError::InterfaceNeedsMulticast(udp.host.to_string()));
    };
    match interface_ip {
        Some(ip) if ip.is_ipv4() != group.is_ipv4() => Err(EndpointError::InterfaceFamilyMismatch),
        _ => Ok(()),
    }
}

/// The address of a literal host.
fn host_ip(host: &Host) -> Option<IpAddr> {
    match host {
        Host::Ipv4(a) => Some(IpAddr::V4(*a)),
        Host::Ipv6(a) => Some(IpAddr::V6(*a)),
        Host::Any | Host::Name(_) => None,
    }
}

/// `host:port` with an optional bracketed IPv6 host: `rest` is everything after
/// `tcp://`, or after `udp://` and any interface.
fn parse_host_port(rest: &str) -> Result<(Host, Option<u16>), EndpointError> {
    let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
        let (inner, after) = bracketed
            .split_once(']')
            .ok_or(EndpointError::UnclosedBracket)?;
        let port = after.strip_prefix(':').ok_or(EndpointError::MissingPort)?;
        if inner.is_empty() {
            return Err(EndpointError::EmptyHost);
        }
        let addr = inner
            .parse()
            .map_err(|_| EndpointError::BadIpv6(inner.to_owned()))?;
        (Host::Ipv6(addr), port)
    } else {
        let (host, port) = rest.rsplit_once(':').ok_or(EndpointError::MissingPort)?;
        (parse_host(host, rest)?, port)
    };
    Ok((host, parse_port(port)?))
}

/// `rest` is everything after `ipc://`.
fn parse_ipc(rest: &str) -> Result<IpcEndpoint, EndpointError> {
    match rest.strip_prefix('@') {
        Some("") => Err(EndpointError::EmptyAbstractName),
        Some(name) => Ok(IpcEndpoint::Abstract(name.to_owned())),
        None if rest.is_empty() => Err(EndpointError::EmptyPath),
        None => Ok(IpcEndpoint::Path(rest.to_owned())),
    }
}

/// An unbracketed host; `authority` (host and port) is quoted by
/// [`EndpointError::UnbracketedIpv6`].
fn parse_host(host: &str, authority: &str) -> Result<Host, EndpointError> {
    if host == "*" {
        return Ok(Host::Any);
    }
    check_name(host, authority)?;
    if let Ok(a) = host.parse::<Ipv4Addr>() {
        return Ok(Host::Ipv4(a));
    }
    if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        // Not a name either: a top-level label is never all digits.
        return Err(EndpointError::BadIpv4(host.to_owned()));
    }
    Ok(Host::Name(host.to_owned()))
}

/// What any unbracketed host must satisfy.
fn check_name(host: &str, authority: &str) -> Result<(), EndpointError> {
    if host.is_empty() {
        Err(EndpointError::EmptyHost)
    } else if host.contains(':') {
        Err(EndpointError::UnbracketedIpv6(authority.to_owned()))
    } else if host
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '/' | '[' | ']'))
    {
        Err(EndpointError::BadHost(host.to_owned()))
    } else {
        Ok(())
    }
}

fn parse_port(port: &str) -> Result<Option<u16>, EndpointError> {
    if port.is_empty() {
        Err(EndpointError::MissingPort)
    } else if port == "*" {
        Ok(None)
    } else if port.bytes().all(|b| b.is_ascii_digit()) {
        // Digits only, because `u16::from_str` also takes a leading '+'.
        port.parse()
            .map(Some)
            .map_err(|_| EndpointError::BadPort(port.to_owned()))
    } else {
        Err(EndpointError::BadPort(port.to_owned()))
    }
}
