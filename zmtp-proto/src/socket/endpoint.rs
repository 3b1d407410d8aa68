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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn tcp(host: Host, port: Option<u16>) -> Endpoint {
        Endpoint::Tcp(TcpEndpoint { host, port })
    }

    fn name(n: &str) -> Host {
        Host::Name(n.to_owned())
    }

    #[test]
    fn valid_endpoints_parse_and_round_trip() {
        // (input, expected value, canonical display)
        let cases: &[(&str, Endpoint, &str)] = &[
            (
                "tcp://127.0.0.1:5555",
                tcp(Host::Ipv4(Ipv4Addr::LOCALHOST), Some(5555)),
                "tcp://127.0.0.1:5555",
            ),
            (
                "tcp://[::1]:5555",
                tcp(Host::Ipv6(Ipv6Addr::LOCALHOST), Some(5555)),
                "tcp://[::1]:5555",
            ),
            (
                "tcp://[0:0:0:0:0:0:0:1]:1",
                tcp(Host::Ipv6(Ipv6Addr::LOCALHOST), Some(1)),
                "tcp://[::1]:1",
            ),
            (
                "tcp://[::ffff:10.0.0.1]:7",
                tcp(
                    Host::Ipv6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()),
                    Some(7),
                ),
                "tcp://[::ffff:10.0.0.1]:7",
            ),
            ("tcp://*:*", tcp(Host::Any, None), "tcp://*:*"),
            ("tcp://*:0", tcp(Host::Any, Some(0)), "tcp://*:0"),
            (
                "tcp://*:65535",
                tcp(Host::Any, Some(65535)),
                "tcp://*:65535",
            ),
            (
                "tcp://localhost:80",
                tcp(name("localhost"), Some(80)),
                "tcp://localhost:80",
            ),
            (
                "tcp://localhost:0080",
                tcp(name("localhost"), Some(80)),
                "tcp://localhost:80",
            ),
            ("tcp://eth0:*", tcp(name("eth0"), None), "tcp://eth0:*"),
            (
                "tcp://my-host.example.com:5555",
                tcp(name("my-host.example.com"), Some(5555)),
                "tcp://my-host.example.com:5555",
            ),
            (
                "tcp://1.2.3.4.example:1",
                tcp(name("1.2.3.4.example"), Some(1)),
                "tcp://1.2.3.4.example:1",
            ),
            (
                "ipc:///tmp/x",
                Endpoint::Ipc(IpcEndpoint::Path("/tmp/x".to_owned())),
                "ipc:///tmp/x",
            ),
            (
                "ipc://relative/sock",
                Endpoint::Ipc(IpcEndpoint::Path("relative/sock".to_owned())),
                "ipc://relative/sock",
            ),
            (
                "ipc://*",
                Endpoint::Ipc(IpcEndpoint::Path("*".to_owned())),
                "ipc://*",
            ),
            (
                "ipc://@name",
                Endpoint::Ipc(IpcEndpoint::Abstract("name".to_owned())),
                "ipc://@name",
            ),
            (
                "ipc://@@",
                Endpoint::Ipc(IpcEndpoint::Abstract("@".to_owned())),
                "ipc://@@",
            ),
            (
                "inproc://name",
                Endpoint::Inproc("name".to_owned()),
                "inproc://name",
            ),
            (
                "inproc://a:b;c//d",
                Endpoint::Inproc("a:b;c//d".to_owned()),
                "inproc://a:b;c//d",
            ),
        ];
        for (input, expected, canonical) in cases {
            let parsed = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(&parsed, expected, "{input}");
            assert_eq!(input.parse::<Endpoint>().as_ref(), Ok(expected), "{input}");
            let shown = parsed.to_string();
            assert_eq!(&shown, canonical, "{input}");
            assert_eq!(Endpoint::parse(&shown).as_ref(), Ok(expected), "{input}");
            assert_eq!(parsed.check_bind(), Ok(()), "{input}");
        }
    }

    #[test]
    fn invalid_endpoints_name_the_mistake() {
        use EndpointError as E;
        let s = |v: &str| v.to_owned();
        let cases: &[(&str, EndpointError)] = &[
            ("", E::MissingScheme),
            ("127.0.0.1:5555", E::MissingScheme),
            ("tcp:/127.0.0.1:5555", E::MissingScheme),
            ("://x", E::MissingScheme),
            ("TCP://127.0.0.1:5555", E::UnknownTransport(s("TCP"))),
            ("udp://127.0.0.1:5555", E::UnknownTransport(s("udp"))),
            ("pgm://eth0;239.192.1.1:5555", E::UnknownTransport(s("pgm"))),
            ("tcp://localhost", E::MissingPort),
            ("tcp://localhost:", E::MissingPort),
            ("tcp://[::1]", E::MissingPort),
            ("tcp://[::1]5555", E::MissingPort),
            ("tcp://[::1]:", E::MissingPort),
            ("tcp://localhost:65536", E::BadPort(s("65536"))),
            ("tcp://localhost:+80", E::BadPort(s("+80"))),
            ("tcp://localhost:-1", E::BadPort(s("-1"))),
            ("tcp://localhost:80 ", E::BadPort(s("80 "))),
            ("tcp://localhost:http", E::BadPort(s("http"))),
            ("tcp://localhost:5555/x", E::BadPort(s("5555/x"))),
            (
                "tcp://localhost:99999999999999999999",
                E::BadPort(s("99999999999999999999")),
            ),
            ("tcp://:5555", E::EmptyHost),
            ("tcp://[]:5555", E::EmptyHost),
            ("tcp:// localhost:5555", E::BadHost(s(" localhost"))),
            ("tcp://a/b:5555", E::BadHost(s("a/b"))),
            ("tcp://a]:5555", E::BadHost(s("a]"))),
            ("tcp://256.0.0.1:5555", E::BadIpv4(s("256.0.0.1"))),
            ("tcp://127.1:5555", E::BadIpv4(s("127.1"))),
            ("tcp://01.2.3.4:5555", E::BadIpv4(s("01.2.3.4"))),
            ("tcp://1234:5555", E::BadIpv4(s("1234"))),
            ("tcp://[1.2.3.4]:5555", E::BadIpv6(s("1.2.3.4"))),
            ("tcp://[fe80::1%eth0]:5555", E::BadIpv6(s("fe80::1%eth0"))),
            ("tcp://[*]:5555", E::BadIpv6(s("*"))),
            ("tcp://[::1:5555", E::UnclosedBracket),
            ("tcp://::1:5555", E::UnbracketedIpv6(s("::1:5555"))),
            ("tcp://::1", E::UnbracketedIpv6(s("::1"))),
            ("tcp://a:b:5555", E::UnbracketedIpv6(s("a:b:5555"))),
            (
                "tcp://10.0.0.1:0;10.0.0.2:5555",
                E::UnsupportedSourceAddress,
            ),
            ("tcp://eth0;10.0.0.2:5555", E::UnsupportedSourceAddress),
            ("ipc://", E::EmptyPath),
            ("ipc://@", E::EmptyAbstractName),
            ("inproc://", E::EmptyName),
        ];
        for (input, expected) in cases {
            assert_eq!(Endpoint::parse(input).as_ref(), Err(expected), "{input}");
            assert_eq!(input.parse::<Endpoint>().as_ref(), Err(expected), "{input}");
        }
    }

    #[test]
    fn bind_and_connect_checks() {
        use EndpointError as E;
        type Check = Result<(), E>;
        // (input, check_bind, check_connect)
        let cases: &[(&str, Check, Check)] = &[
            ("tcp://127.0.0.1:5555", Ok(()), Ok(())),
            ("tcp://[::1]:1", Ok(()), Ok(())),
            ("tcp://localhost:65535", Ok(()), Ok(())),
            ("tcp://*:5555", Ok(()), Err(E::WildcardHostOnConnect)),
            ("tcp://*:*", Ok(()), Err(E::WildcardHostOnConnect)),
            ("tcp://127.0.0.1:*", Ok(()), Err(E::WildcardPortOnConnect)),
            ("tcp://127.0.0.1:0", Ok(()), Err(E::WildcardPortOnConnect)),
            ("tcp://eth0:*", Ok(()), Err(E::WildcardPortOnConnect)),
            ("ipc:///tmp/x", Ok(()), Ok(())),
            ("ipc://*", Ok(()), Err(E::WildcardPathOnConnect)),
            ("ipc://@name", Ok(()), Ok(())),
            ("inproc://name", Ok(()), Ok(())),
            ("inproc://*", Ok(()), Ok(())),
        ];
        for (input, bind, connect) in cases {
            let e = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(&e.check_bind(), bind, "{input}");
            assert_eq!(&e.check_connect(), connect, "{input}");
        }
    }

    #[test]
    fn hand_built_endpoints_are_checked_like_parsed_ones() {
        use EndpointError as E;
        let cases: &[(Endpoint, E)] = &[
            (Endpoint::Inproc(String::new()), E::EmptyName),
            (
                Endpoint::Ipc(IpcEndpoint::Path(String::new())),
                E::EmptyPath,
            ),
            (
                Endpoint::Ipc(IpcEndpoint::Abstract(String::new())),
                E::EmptyAbstractName,
            ),
            (tcp(name(""), Some(1)), E::EmptyHost),
            (tcp(name("a b"), Some(1)), E::BadHost(s("a b"))),
            (tcp(name("::1"), Some(1)), E::UnbracketedIpv6(s("::1"))),
        ];
        fn s(v: &str) -> String {
            v.to_owned()
        }
        for (e, expected) in cases {
            assert_eq!(e.check_bind().as_ref(), Err(expected), "{e:?}");
            assert_eq!(e.check_connect().as_ref(), Err(expected), "{e:?}");
        }
    }

    #[test]
    fn transport_names() {
        for (input, transport) in [
            ("tcp://*:*", "tcp"),
            ("ipc://@x", "ipc"),
            ("inproc://x", "inproc"),
        ] {
            let e = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(e.transport(), transport);
            assert!(e.to_string().starts_with(transport));
        }
    }

    proptest::proptest! {
        /// Parsing never panics, and whatever parses displays to a string that parses back
        /// to the same value.
        #[test]
        fn parse_is_total_and_round_trips(
            input in "(tcp|ipc|inproc|TCP|)(://|:/)?[\\[\\]:*@;a-f0-9.%/ ]{0,24}"
        ) {
            if let Ok(e) = Endpoint::parse(&input) {
                proptest::prop_assert_eq!(Endpoint::parse(&e.to_string()), Ok(e.clone()));
                proptest::prop_assert_eq!(e.check_bind(), Ok(()));
            }
        }
    }

    #[test]
    fn errors_display_on_one_line() {
        let errors = [
            EndpointError::MissingScheme,
            EndpointError::UnknownTransport("TCP".to_owned()),
            EndpointError::MissingPort,
            EndpointError::BadPort("x".to_owned()),
            EndpointError::EmptyHost,
            EndpointError::BadHost("a b".to_owned()),
            EndpointError::BadIpv4("1.2".to_owned()),
            EndpointError::BadIpv6("x".to_owned()),
            EndpointError::UnclosedBracket,
            EndpointError::UnbracketedIpv6("::1".to_owned()),
            EndpointError::UnsupportedSourceAddress,
            EndpointError::EmptyPath,
            EndpointError::EmptyAbstractName,
            EndpointError::EmptyName,
            EndpointError::WildcardHostOnConnect,
            EndpointError::WildcardPortOnConnect,
            EndpointError::WildcardPathOnConnect,
        ];
        for e in errors {
            let text = e.to_string();
            assert!(!text.is_empty() && !text.contains('\n'), "{e:?}: {text}");
        }
        assert_eq!(
            EndpointError::BadPort("65536".to_owned()).to_string(),
            "invalid port \"65536\" (expected 0..=65535 or *)"
        );
    }
}
