//! Endpoint strings as libzmq users write them: `tcp://host:port`, `ipc://path`,
//! `ipc://@name` and `inproc://name`.
//!
//! [`Endpoint::parse`] checks the form only; it resolves no names and touches no
//! interfaces. Whether an endpoint may be bound or connected to is a second, separate check
//! ([`Endpoint::check_bind`], [`Endpoint::check_connect`]), as in libzmq, where `tcp://*:*`
//! is a valid bind endpoint but never a valid connect endpoint.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::str::FromStr;

/// A parsed endpoint.
///
/// Its [`Display`](fmt::Display) form is canonical (`tcp://127.0.0.1:5555`,
/// `tcp://[::1]:5555`, `tcp://*:*`, `ipc:///tmp/x`, `ipc://@name`, `inproc://name`) and
/// parses back to an equal value for every endpoint that [`Endpoint::parse`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `tcp://host:port`.
    Tcp(TcpEndpoint),
    /// `ipc://path` or `ipc://@name`.
    Ipc(IpcEndpoint),
    /// `inproc://name`: a non-empty name, local to one context.
    Inproc(String),
}

/// The host and port of a `tcp://` endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TcpEndpoint {
    /// The host: a wildcard, an address literal, or a name to resolve.
    pub host: Host,
    /// The port; `None` is the `*` wildcard (an ephemeral port, bind only). Port 0 also asks
    /// for an ephemeral port on bind.
    pub port: Option<u16>,
}

/// The host part of a `tcp://` endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// `*`: every local interface (bind only).
    Any,
    /// A dotted-quad IPv4 literal.
    Ipv4(Ipv4Addr),
    /// An IPv6 literal, written in brackets: `[::1]`.
    Ipv6(Ipv6Addr),
    /// A host name (connect) or an interface or host name (bind), left for the driver to
    /// resolve.
    Name(String),
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
    /// The transport is not `tcp`, `ipc` or `inproc` (transports are lowercase).
    UnknownTransport(String),
    /// A `tcp://` endpoint has no `:port`, or an empty port.
    MissingPort,
    /// The port is neither `*` nor a decimal number up to 65535.
    BadPort(String),
    /// The host is empty.
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
    /// libzmq's `tcp://source;destination` form, which is not supported.
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
    /// `connect_peer` on a socket that is not a PEER, or with `IMMEDIATE` set (libzmq's
    /// `ENOTSUP` and `EFAULT`).
    ConnectPeerRefused,
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointError::MissingScheme => {
                f.write_str("endpoint has no transport (expected tcp://, ipc:// or inproc://)")
            }
            EndpointError::UnknownTransport(t) => write!(
                f,
                "unknown transport {:?} (expected tcp, ipc or inproc, in lowercase)",
                t
            ),
            EndpointError::MissingPort => f.write_str("tcp endpoint has no port (host:port)"),
            EndpointError::BadPort(p) => {
                write!(f, "invalid port {p:?} (expected 0..=65535 or *)")
            }
            EndpointError::EmptyHost => f.write_str("tcp endpoint has an empty host"),
            EndpointError::BadHost(h) => write!(f, "invalid character in host {h:?}"),
            EndpointError::BadIpv4(h) => write!(f, "invalid IPv4 address {h:?}"),
            EndpointError::BadIpv6(h) => write!(f, "invalid IPv6 address {h:?}"),
            EndpointError::UnclosedBracket => f.write_str("IPv6 address is missing its ']'"),
            EndpointError::UnbracketedIpv6(a) => write!(
                f,
                "host contains ':' in {a:?}: write IPv6 addresses as [addr]:port"
            ),
            EndpointError::UnsupportedSourceAddress => {
                f.write_str("tcp source addresses (source;destination) are not supported")
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
    /// paths must not be empty.
    pub fn parse(s: &str) -> Result<Endpoint, EndpointError> {
        let (scheme, rest) = s.split_once("://").ok_or(EndpointError::MissingScheme)?;
        match scheme {
            "" => Err(EndpointError::MissingScheme),
            "tcp" => parse_tcp(rest).map(Endpoint::Tcp),
            "ipc" => parse_ipc(rest).map(Endpoint::Ipc),
            "inproc" if rest.is_empty() => Err(EndpointError::EmptyName),
            "inproc" => Ok(Endpoint::Inproc(rest.to_owned())),
            other => Err(EndpointError::UnknownTransport(other.to_owned())),
        }
    }

    /// Checks that the endpoint can be bound: every parsed endpoint can (`tcp://*:*` binds
    /// every interface on an ephemeral port). A hand-built endpoint is also checked for what
    /// [`Endpoint::parse`] would reject, such as an empty name.
    pub fn check_bind(&self) -> Result<(), EndpointError> {
        self.check_form()
    }

    /// Checks that the endpoint can be connected to: in addition to
    /// [`check_bind`](Endpoint::check_bind), a `tcp://` host must not be `*`, its port must
    /// be neither `*` nor 0, and an `ipc://` path must not be `*`.
    pub fn check_connect(&self) -> Result<(), EndpointError> {
        self.check_form()?;
        match self {
            Endpoint::Tcp(TcpEndpoint {
                host: Host::Any, ..
            }) => Err(EndpointError::WildcardHostOnConnect),
            Endpoint::Tcp(TcpEndpoint {
                port: None | Some(0),
                ..
            }) => Err(EndpointError::WildcardPortOnConnect),
            Endpoint::Ipc(IpcEndpoint::Path(p)) if p == "*" => {
                Err(EndpointError::WildcardPathOnConnect)
            }
            _ => Ok(()),
        }
    }

    /// The transport name as written before `://`: `"tcp"`, `"ipc"` or `"inproc"`.
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Ipc(_) => "ipc",
            Endpoint::Inproc(_) => "inproc",
        }
    }

    /// The invariants [`Endpoint::parse`] guarantees, for endpoints built by hand.
    fn check_form(&self) -> Result<(), EndpointError> {
        match self {
            Endpoint::Tcp(TcpEndpoint {
                host: Host::Name(name),
                ..
            }) => check_name(name, name),
            Endpoint::Tcp(_) => Ok(()),
            Endpoint::Ipc(IpcEndpoint::Path(p)) if p.is_empty() => Err(EndpointError::EmptyPath),
            Endpoint::Ipc(IpcEndpoint::Abstract(n)) if n.is_empty() => {
                Err(EndpointError::EmptyAbstractName)
            }
            Endpoint::Ipc(_) => Ok(()),
            Endpoint::Inproc(n) if n.is_empty() => Err(EndpointError::EmptyName),
            Endpoint::Inproc(_) => Ok(()),
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
            Endpoint::Tcp(TcpEndpoint { host, port }) => {
                write!(f, "tcp://{host}:")?;
                match port {
                    Some(p) => write!(f, "{p}"),
                    None => f.write_str("*"),
                }
            }
            Endpoint::Ipc(IpcEndpoint::Path(p)) => write!(f, "ipc://{p}"),
            Endpoint::Ipc(IpcEndpoint::Abstract(n)) => write!(f, "ipc://@{n}"),
            Endpoint::Inproc(n) => write!(f, "inproc://{n}"),
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
fn parse_tcp(rest: &str) -> Result<TcpEndpoint, EndpointError> {
    if rest.contains(';') {
        return Err(EndpointError::UnsupportedSourceAddress);
    }
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
    Ok(TcpEndpoint {
        host,
        port: parse_port(port)?,
    })
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
