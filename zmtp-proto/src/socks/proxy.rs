//! The SOCKS5 client's parts that need an allocator: the proxy option and the exchange on
//! one stream (see the parent module).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use bytes::{Buf, BytesMut};

use super::SocksError;
use crate::socket::endpoint::{Host, TcpEndpoint};
use crate::socket::{Endpoint, EndpointError};

/// The SOCKS version byte.
const VERSION: u8 = 5;
/// The version byte of RFC 1929's username and password exchange.
const AUTH_VERSION: u8 = 1;
/// Method: no authentication.
const NO_AUTH: u8 = 0;
/// Method: username and password (RFC 1929).
const BASIC_AUTH: u8 = 2;
/// The proxy accepts none of the methods offered.
const NO_ACCEPTABLE: u8 = 0xff;
/// The CONNECT command.
const CONNECT: u8 = 1;
/// Address types.
const ATYP_IPV4: u8 = 1;
const ATYP_NAME: u8 = 3;
const ATYP_IPV6: u8 = 4;

/// A SOCKS5 proxy for a socket's `tcp://` connects: libzmq's `ZMQ_SOCKS_PROXY`,
/// `ZMQ_SOCKS_USERNAME` and `ZMQ_SOCKS_PASSWORD` as one value.
///
/// ```
/// use zmtp_proto::socket::{Options, SocksProxy};
///
/// let proxy = SocksProxy::new("127.0.0.1:1080")?.with_credentials("someuser", "somepass")?;
/// assert_eq!(proxy.address(), "127.0.0.1:1080");
/// assert_eq!(proxy.username(), "someuser");
/// let options = Options::default().with_socks_proxy(Some(proxy));
/// assert!(options.socks_proxy.is_some());
///
/// // A source address first, as libzmq's `tcp://source;destination`.
/// assert!(SocksProxy::new("127.0.0.1:0;proxy.example.org:1080").is_ok());
/// assert!(SocksProxy::new("").is_err());
/// assert!(SocksProxy::new("proxy-without-port").is_err());
/// # Ok::<(), zmtp_proto::socket::SocksProxyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocksProxy {
    address: String,
    endpoint: TcpEndpoint,
    username: String,
    password: String,
}

/// Why a [`SocksProxy`] was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocksProxyError {
    /// The address is not `host:port` or `source;host:port` with a port other than 0 (an
    /// empty address included).
    Address(EndpointError),
    /// A username or password longer than 255 bytes.
    CredentialTooLong {
        /// Its length.
        len: usize,
    },
}

impl fmt::Display for SocksProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocksProxyError::Address(e) => write!(f, "SOCKS proxy address: {e}"),
            SocksProxyError::CredentialTooLong { len } => {
                write!(f, "SOCKS username or password of {len} bytes (at most 255)")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SocksProxyError {}

impl SocksProxy {
    /// A proxy at `address`: `host:port`, or `source;host:port` to bind a local address
    /// first (as in `tcp://`), with no credentials.
    ///
    /// # Errors
    /// [`SocksProxyError::Address`] for an empty address, one without a port, the port 0
    /// or `*`, or the `*` host.
    pub fn new(address: &str) -> Result<SocksProxy, SocksProxyError> {
        let mut text = String::from("tcp://");
        text.push_str(address);
        let endpoint = match Endpoint::parse(&text).map_err(SocksProxyError::Address)? {
            Endpoint::Tcp(tcp) => tcp,
            // A `tcp://` text is always a TCP endpoint.
            _ => return Err(SocksProxyError::Address(EndpointError::MissingPort)),
        };
        if endpoint.host == Host::Any {
            return Err(SocksProxyError::Address(
                EndpointError::WildcardHostOnConnect,
            ));
        }
        if matches!(endpoint.port, None | Some(0)) {
            return Err(SocksProxyError::Address(
                EndpointError::WildcardPortOnConnect,
            ));
        }
        Ok(SocksProxy {
            address: String::from(address),
            endpoint,
            username: String::new(),
            password: String::new(),
        })
    }

    /// The same proxy with a username and password (RFC 1929), each at most 255 bytes; an
    /// empty username means none are sent, as in libzmq.
    ///
    /// # Errors
    /// [`SocksProxyError::CredentialTooLong`].
    pub fn with_credentials(
        mut self,
        username: &str,
        password: &str,
    ) -> Result<SocksProxy, SocksProxyError> {
        for s in [username, password] {
            if s.len() > 255 {
                return Err(SocksProxyError::CredentialTooLong { len: s.len() });
            }
        }
        self.username = String::from(username);
        self.password = String::from(password);
        Ok(self)
    }

    /// The address as given.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The username (empty: none).
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Where the stream is opened: the proxy.
    pub(crate) fn endpoint(&self) -> &TcpEndpoint {
        &self.endpoint
    }
}

/// Where we ask the proxy to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    V4([u8; 4]),
    V6([u8; 16]),
    Name(String),
}

/// What the exchange waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The proxy's choice of method.
    Choice,
    /// The answer to our username and password.
    Auth,
    /// The answer to our CONNECT.
    Reply,
}

/// The client side of the exchange on one stream (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct SocksClient {
    stage: Stage,
    target: Target,
    port: u16,
    username: String,
    password: String,
}

impl SocksClient {
    /// The exchange for a connect to `target` through `proxy`. `None` when the target
    /// cannot be named to a proxy (the `*` host, a name over 255 bytes, no port): the
    /// connect checks prevent it.
    pub(crate) fn new(target: &TcpEndpoint, proxy: &SocksProxy) -> Option<SocksClient> {
        let host = match &target.host {
            Host::Ipv4(a) => Target::V4(a.octets()),
            Host::Ipv6(a) => Target::V6(a.octets()),
            Host::Name(n) if n.len() <= 255 => Target::Name(n.clone()),
            Host::Name(_) | Host::Any => return None,
        };
        Some(SocksClient {
            stage: Stage::Choice,
            target: host,
            port: target.port.filter(|&p| p != 0)?,
            username: proxy.username.clone(),
            password: proxy.password.clone(),
        })
    }

    /// Our greeting: version 5 and the one method we offer.
    pub(crate) fn greeting(&self) -> [u8; 3] {
        let method = if self.username.is_empty() {
            NO_AUTH
        } else {
            BASIC_AUTH
        };
        [VERSION, 1, method]
    }

    /// Take the proxy's answers from the front of `rx`, handing what we say next to `send`.
    /// `Ok(true)` once the proxy has connected us (what follows in `rx` is the endpoint's),
    /// `Ok(false)` while an answer is incomplete.
    pub(crate) fn pump(
        &mut self,
        rx: &mut BytesMut,
        mut send: impl FnMut(&[u8]),
    ) -> Result<bool, SocksError> {
        loop {
            match self.stage {
                Stage::Choice => {
                    let Some(&[version, method]) = rx.get(..2) else {
                        return Ok(false);
                    };
                    if version != VERSION {
                        return Err(SocksError::Malformed);
                    }
                    rx.advance(2);
                    match method {
                        NO_AUTH => {
                            send(&self.request());
                            self.stage = Stage::Reply;
                        }
                        BASIC_AUTH => {
                            send(&self.credentials());
                            self.stage = Stage::Auth;
                        }
                        NO_ACCEPTABLE => return Err(SocksError::NoAcceptableMethod),
                        other => return Err(SocksError::UnsupportedMethod(other)),
                    }
                }
                Stage::Auth => {
                    let Some(&[_, status]) = rx.get(..2) else {
                        return Ok(false);
                    };
                    if status != 0 {
                        return Err(SocksError::AuthFailed(status));
                    }
                    rx.advance(2);
                    send(&self.request());
                    self.stage = Stage::Reply;
                }
                Stage::Reply => {
                    let Some(&[version, code, reserved, atyp, first]) = rx.get(..5) else {
                        return Ok(false);
                    };
                    if version != VERSION || code > 8 || reserved != 0 {
                        return Err(SocksError::Malformed);
                    }
                    // The bound address and port that follow are not used.
                    let len = match atyp {
                        ATYP_IPV4 => 4 + 4 + 2,
                        ATYP_NAME => 4 + 1 + usize::from(first) + 2,
                        ATYP_IPV6 => 4 + 16 + 2,
                        _ => return Err(SocksError::Malformed),
                    };
                    if code != 0 {
                        return Err(SocksError::Refused(code));
                    }
                    if rx.len() < len {
                        return Ok(false);
                    }
                    rx.advance(len);
                    return Ok(true);
                }
            }
        }
    }

    /// RFC 1929's request: version 1, then the username and password, each with its length.
    fn credentials(&self) -> Vec<u8> {
        let (user, pass) = (self.username.as_bytes(), self.password.as_bytes());
        let mut out = Vec::with_capacity(3 + user.len() + pass.len());
        out.push(AUTH_VERSION);
        // Both at most 255 bytes (`SocksProxy::with_credentials`).
        out.push(u8::try_from(user.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(user.get(..255).unwrap_or(user));
        out.push(u8::try_from(pass.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(pass.get(..255).unwrap_or(pass));
        out
    }

    /// The CONNECT request for the target.
    fn request(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(7 + 256);
        out.extend_from_slice(&[VERSION, CONNECT, 0]);
        match &self.target {
            Target::V4(a) => {
                out.push(ATYP_IPV4);
                out.extend_from_slice(a);
            }
            Target::V6(a) => {
                out.push(ATYP_IPV6);
                out.extend_from_slice(a);
            }
            Target::Name(n) => {
                out.push(ATYP_NAME);
                // At most 255 bytes (`SocksClient::new`).
                out.push(u8::try_from(n.len()).unwrap_or(u8::MAX));
                out.extend_from_slice(n.as_bytes());
            }
        }
        out.extend_from_slice(&self.port.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    fn target(text: &str) -> TcpEndpoint {
        match Endpoint::parse(text) {
            Ok(Endpoint::Tcp(t)) => t,
            other => panic!("{other:?}"),
        }
    }

    fn run(client: &mut SocksClient, answer: &[u8]) -> (Result<bool, SocksError>, Vec<u8>) {
        let mut rx = BytesMut::from(answer);
        let mut sent = Vec::new();
        let r = client.pump(&mut rx, |b| sent.extend_from_slice(b));
        (r, sent)
    }

    #[test]
    fn no_auth_to_an_ipv4_address_then_the_endpoints_bytes_stay() {
        let proxy = SocksProxy::new("127.0.0.1:1080").unwrap();
        let mut c = SocksClient::new(&target("tcp://10.1.2.3:5555"), &proxy).unwrap();
        assert_eq!(c.greeting(), [5, 1, 0]);
        let (r, sent) = run(&mut c, &[5, 0]);
        assert_eq!(r, Ok(false));
        assert_eq!(sent, [5, 1, 0, 1, 10, 1, 2, 3, 0x15, 0xb3]);
        // The reply in pieces, then the endpoint's greeting in the same read.
        let mut rx = BytesMut::from(&[5u8, 0, 0][..]);
        assert_eq!(c.pump(&mut rx, |_| panic!("nothing to send")), Ok(false));
        rx.extend_from_slice(&[1, 127, 0, 0, 1, 0x30, 0x39, 0xff, 0, 0]);
        assert_eq!(c.pump(&mut rx, |_| panic!("nothing to send")), Ok(true));
        assert_eq!(&rx[..], &[0xff, 0, 0]);
    }

    #[test]
    fn names_and_ipv6_literals_are_sent_as_such() {
        let proxy = SocksProxy::new("proxy:1080").unwrap();
        let mut c = SocksClient::new(&target("tcp://somedomainname.org:80"), &proxy).unwrap();
        let (_, sent) = run(&mut c, &[5, 0]);
        let mut want = vec![5, 1, 0, 3, 18];
        want.extend_from_slice(b"somedomainname.org");
        want.extend_from_slice(&[0, 80]);
        assert_eq!(sent, want);
        let mut c = SocksClient::new(&target("tcp://[::1]:80"), &proxy).unwrap();
        let (_, sent) = run(&mut c, &[5, 0]);
        let mut want = vec![5, 1, 0, 4];
        want.extend_from_slice(&[0; 15]);
        want.extend_from_slice(&[1, 0, 80]);
        assert_eq!(sent, want);
    }

    #[test]
    fn username_and_password_when_a_username_is_set() {
        let proxy = SocksProxy::new("proxy:1080")
            .unwrap()
            .with_credentials("someuser", "somepass")
            .unwrap();
        let mut c = SocksClient::new(&target("tcp://10.0.0.1:1"), &proxy).unwrap();
        assert_eq!(c.greeting(), [5, 1, 2]);
        let (r, sent) = run(&mut c, &[5, 2]);
        assert_eq!(r, Ok(false));
        assert_eq!(sent, b"\x01\x08someuser\x08somepass");
        let (r, sent) = run(&mut c, &[1, 0, 5, 0, 0, 3, 9]);
        assert_eq!(r, Ok(false));
        assert_eq!(sent, [5, 1, 0, 1, 10, 0, 0, 1, 0, 1]);
        let (r, _) = run(&mut c, b"\x05\x00\x00\x03\x09localhost\x00\x01");
        assert_eq!(r, Ok(true));
        // Refused credentials.
        let mut c = SocksClient::new(&target("tcp://10.0.0.1:1"), &proxy).unwrap();
        assert_eq!(run(&mut c, &[5, 2, 1, 1]).0, Err(SocksError::AuthFailed(1)));
    }

    #[test]
    fn refusals_and_malformed_answers_fail_with_their_reason() {
        let proxy = SocksProxy::new("proxy:1080").unwrap();
        let t = target("tcp://10.0.0.1:1");
        let fresh = || SocksClient::new(&t, &proxy).unwrap();
        assert_eq!(
            run(&mut fresh(), &[5, 0xff]).0,
            Err(SocksError::NoAcceptableMethod)
        );
        assert_eq!(
            run(&mut fresh(), &[5, 1]).0,
            Err(SocksError::UnsupportedMethod(1))
        );
        assert_eq!(run(&mut fresh(), &[4, 0]).0, Err(SocksError::Malformed));
        assert_eq!(
            run(&mut fresh(), &[5, 0, 5, 4, 0, 1, 0]).0,
            Err(SocksError::Refused(4))
        );
        assert_eq!(
            run(&mut fresh(), &[5, 0, 5, 9, 0, 1, 0]).0,
            Err(SocksError::Malformed)
        );
        assert_eq!(
            run(&mut fresh(), &[5, 0, 5, 0, 1, 1, 0]).0,
            Err(SocksError::Malformed)
        );
        assert_eq!(
            run(&mut fresh(), &[5, 0, 5, 0, 0, 7, 0]).0,
            Err(SocksError::Malformed)
        );
        let text = SocksError::Refused(5).to_string();
        assert!(text.contains("connection refused"), "{text}");
    }

    /// Arbitrary answers, whole or in pieces: an error or a wait, never a panic, and
    /// success only past a well-formed success reply, with the bytes after it left.
    #[test]
    fn arbitrary_answers_fail_or_wait_and_never_panic() {
        let proxy = SocksProxy::new("proxy:1")
            .unwrap()
            .with_credentials("u", "p")
            .unwrap();
        let t = target("tcp://10.0.0.1:1");
        let mut seed = 7u64;
        let mut successes = 0;
        for round in 0..20_000 {
            let mut c = SocksClient::new(&t, &proxy).unwrap();
            let len = (crate::ws::splitmix64(&mut seed) % 40) as usize;
            let mut answer: Vec<u8> = (0..len)
                .map(|_| crate::ws::splitmix64(&mut seed) as u8)
                .collect();
            // Steer some rounds through the valid prefixes.
            match round % 4 {
                1 => answer.splice(0..0, [5, 2, 1, 0]).for_each(drop),
                2 => answer.splice(0..0, [5, 0, 5, 0, 0]).for_each(drop),
                3 => answer.splice(0..0, [5, 2, 1, 0, 5, 0, 0, 1]).for_each(drop),
                _ => {}
            }
            let mut rx = BytesMut::new();
            let mut fed = 0;
            for piece in answer.chunks(1 + round % 7) {
                rx.extend_from_slice(piece);
                fed += piece.len();
                match c.pump(&mut rx, |_| {}) {
                    Ok(true) => {
                        // At least a choice (2 bytes) and the shortest reply (7).
                        assert!(fed - rx.len() >= 9, "{answer:?}");
                        successes += 1;
                        break;
                    }
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
        }
        assert!(successes > 100, "{successes} answers succeeded");
    }

    #[test]
    fn proxy_addresses_and_credentials_are_checked() {
        assert!(SocksProxy::new("").is_err());
        assert!(SocksProxy::new("host").is_err());
        assert!(SocksProxy::new("host:0").is_err());
        assert!(SocksProxy::new("*:1080").is_err());
        assert!(SocksProxy::new("[::1]:1080").is_ok());
        let long = "x".repeat(256);
        let p = SocksProxy::new("host:1").unwrap();
        assert_eq!(
            p.clone().with_credentials(&long, ""),
            Err(SocksProxyError::CredentialTooLong { len: 256 })
        );
        assert!(p.with_credentials(&long[..255], &long[..255]).is_ok());
        let no_target = target("tcp://host:1");
        let mut any = no_target.clone();
        any.host = Host::Any;
        let proxy = SocksProxy::new("host:1").unwrap();
        assert!(SocksClient::new(&any, &proxy).is_none());
    }
}
