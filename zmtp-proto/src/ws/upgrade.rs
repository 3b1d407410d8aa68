//! The HTTP/1.1 upgrade that opens a ZWS 2.0 connection, both roles.

use super::http::{self, expect_prefix, list, list_has, Visitor};
use super::sha1::Sha1;
use super::{base64, HandshakeError};
use crate::codec::{InsufficientSize, Mechanism, Status, Writer};

/// The GUID RFC 6455 appends to the client's key before hashing it (section 1.3).
const WS_GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Length of a `Sec-WebSocket-Key` we send: base64 of 16 bytes.
pub const KEY_LEN: usize = 24;

/// Length of a `Sec-WebSocket-Accept` value: base64 of a SHA-1 digest.
pub const ACCEPT_LEN: usize = 28;

/// A ZWS 2.0 WebSocket subprotocol (RFC 45, plus libzmq's CURVE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// `ZWS2.0/NULL`: the NULL mechanism's commands (READY), then traffic.
    Null,
    /// `ZWS2.0/PLAIN`: the PLAIN mechanism's commands, then traffic.
    Plain,
    /// `ZWS2.0/CURVE`: the CURVE mechanism's commands, then traffic. A libzmq extension
    /// RFC 45 does not define.
    Curve,
    /// Bare `ZWS2.0`: no mechanism at all. Each side's first frame is its routing id (an
    /// empty id is the single flags byte `00`); there is no READY and no socket-type
    /// check. Only NULL sockets accept it.
    Bare,
}

impl Protocol {
    /// Every protocol, in no particular order.
    pub const ALL: [Protocol; 4] = [
        Protocol::Null,
        Protocol::Plain,
        Protocol::Curve,
        Protocol::Bare,
    ];

    /// The name on the wire, as in `Sec-WebSocket-Protocol`.
    pub const fn name(self) -> &'static str {
        match self {
            Protocol::Null => "ZWS2.0/NULL",
            Protocol::Plain => "ZWS2.0/PLAIN",
            Protocol::Curve => "ZWS2.0/CURVE",
            Protocol::Bare => "ZWS2.0",
        }
    }

    /// The protocol of a name; names compare exactly (case-sensitively), as libzmq does.
    pub fn from_name(name: &[u8]) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name().as_bytes() == name)
    }

    /// Whether this is bare `ZWS2.0`: no greeting and no mechanism handshake; the first
    /// frame each side sends and receives is a routing id.
    pub const fn is_bare(self) -> bool {
        matches!(self, Protocol::Bare)
    }

    /// The security mechanism the protocol runs (NULL for bare `ZWS2.0`, which runs none
    /// but is the choice of NULL sockets).
    pub const fn mechanism(self) -> Mechanism {
        match self {
            Protocol::Null | Protocol::Bare => Mechanism::NULL,
            Protocol::Plain => Mechanism::PLAIN,
            Protocol::Curve => Mechanism::CURVE,
        }
    }

    /// What a client of `mechanism` offers, in its order: `ZWS2.0/NULL,ZWS2.0` for NULL,
    /// only its own protocol for PLAIN and CURVE, nothing for any other mechanism.
    pub fn offered(mechanism: Mechanism) -> &'static [Protocol] {
        match mechanism {
            m if m == Mechanism::NULL => &[Protocol::Null, Protocol::Bare],
            m if m == Mechanism::PLAIN => &[Protocol::Plain],
            m if m == Mechanism::CURVE => &[Protocol::Curve],
            _ => &[],
        }
    }

    /// Whether a socket of `mechanism` accepts this protocol: a NULL socket `ZWS2.0/NULL`
    /// and bare `ZWS2.0`, PLAIN and CURVE sockets only their own.
    pub fn accepted_by(self, mechanism: Mechanism) -> bool {
        Protocol::offered(mechanism).contains(&self)
    }
}

impl core::fmt::Display for Protocol {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A `Sec-WebSocket-Accept` value: base64 of SHA-1 over the client's key and RFC 6455's GUID.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AcceptKey([u8; ACCEPT_LEN]);

impl AcceptKey {
    /// The accept value for the `Sec-WebSocket-Key` value `key`, as sent (whitespace around
    /// it removed).
    pub fn for_key(key: &[u8]) -> AcceptKey {
        let mut sha = Sha1::new();
        sha.update(key);
        sha.update(WS_GUID);
        AcceptKey(base64::encode(&sha.finish()))
    }

    /// The 28 characters.
    pub fn as_bytes(&self) -> &[u8; ACCEPT_LEN] {
        &self.0
    }

    /// The 28 characters as text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl core::fmt::Debug for AcceptKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "AcceptKey({:?})", self.as_str())
    }
}

/// Where a client's upgrade request goes: the `Host` value and the request path.
///
/// Both must be visible ASCII (so neither can break the request's lines); the path starts
/// with `/`. [`Target::from_address`] splits a `ws://` address as libzmq does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target<'a> {
    host: &'a str,
    path: &'a str,
}

impl<'a> Target<'a> {
    /// A target from its parts.
    ///
    /// # Errors
    /// [`HandshakeError::InvalidTarget`] for an empty host, a path not starting with `/`,
    /// or a byte of either outside visible ASCII.
    pub fn new(host: &'a str, path: &'a str) -> Result<Target<'a>, HandshakeError> {
        let visible = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
        if host.is_empty() || !visible(host) || !path.starts_with('/') || !visible(path) {
            return Err(HandshakeError::InvalidTarget);
        }
        Ok(Target { host, path })
    }

    /// Split a `ws://` (or `wss://`) address the way libzmq does: the path starts at the
    /// *last* `/` (`/` when there is none, so `h:1/some/path?q=1` requests `/path?q=1`),
    /// the host is what comes before the last `:` ahead of it, and the port is dropped
    /// (libzmq's `Host` carries none). The scheme is optional.
    ///
    /// One departure: libzmq takes the host up to the last `:` of the whole address, so a
    /// path holding a `:` would leak into its `Host`; here the path is set apart first.
    ///
    /// # Errors
    /// [`HandshakeError::InvalidTarget`] without a `:` before the path (libzmq requires a
    /// port) or when [`Target::new`] refuses the parts.
    pub fn from_address(address: &'a str) -> Result<Target<'a>, HandshakeError> {
        let rest = strip_scheme(address, "ws://")
            .or_else(|| strip_scheme(address, "wss://"))
            .unwrap_or(address);
        let (authority, path) = match rest.rfind('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let colon = authority.rfind(':').ok_or(HandshakeError::InvalidTarget)?;
        let host = authority.get(..colon).unwrap_or_default();
        Target::new(host, path)
    }

    /// The `Host` value.
    pub fn host(&self) -> &'a str {
        self.host
    }

    /// The request path.
    pub fn path(&self) -> &'a str {
        self.path
    }
}

fn strip_scheme<'a>(address: &'a str, scheme: &str) -> Option<&'a str> {
    let head = address.get(..scheme.len())?;
    if head.eq_ignore_ascii_case(scheme) {
        address.get(scheme.len()..)
    } else {
        None
    }
}

/// The mechanisms a ZWS socket can run.
fn supported(mechanism: Mechanism) -> Result<Mechanism, HandshakeError> {
    if Protocol::offered(mechanism).is_empty() {
        Err(HandshakeError::UnsupportedMechanism)
    } else {
        Ok(mechanism)
    }
}

// ----- client ---------------------------------------------------------------------------

/// The client side of the upgrade: emits the request, checks the server's response.
///
/// ```
/// use zmtp_proto::codec::{Mechanism, Status};
/// use zmtp_proto::ws::{ClientHandshake, Protocol, ServerHandshake, Target};
///
/// let client = ClientHandshake::new(Mechanism::NULL, [7; 16])?;
/// let target = Target::from_address("ws://example.org:5555/feed")?;
/// let mut request = [0u8; 256];
/// let n = client.emit_request(&target, &mut request)?;
///
/// let server = ServerHandshake::new(Mechanism::NULL)?;
/// let Status::Complete((upgrade, used)) = server.parse_request(&request[..n])? else {
///     unreachable!("the request is whole")
/// };
/// assert_eq!((upgrade.protocol, used), (Protocol::Null, n));
/// let mut response = [0u8; 256];
/// let m = upgrade.emit_response(&mut response)?;
///
/// assert_eq!(
///     client.parse_response(&response[..m])?,
///     Status::Complete((Protocol::Null, m))
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientHandshake {
    mechanism: Mechanism,
    key: [u8; KEY_LEN],
    accept: AcceptKey,
}

impl ClientHandshake {
    /// A client of `mechanism` whose `Sec-WebSocket-Key` is the base64 of `nonce` (16
    /// bytes the caller draws; RFC 6455 asks for them to be random for each connection).
    ///
    /// # Errors
    /// [`HandshakeError::UnsupportedMechanism`] for a mechanism other than NULL, PLAIN or
    /// CURVE.
    pub fn new(mechanism: Mechanism, nonce: [u8; 16]) -> Result<ClientHandshake, HandshakeError> {
        let key = base64::encode(&nonce);
        Ok(ClientHandshake {
            mechanism: supported(mechanism)?,
            key,
            accept: AcceptKey::for_key(&key),
        })
    }

    /// The `Sec-WebSocket-Key` value.
    pub fn key(&self) -> &str {
        core::str::from_utf8(&self.key).unwrap_or_default()
    }

    /// The `Sec-WebSocket-Accept` value a correct server answers with.
    pub fn expected_accept(&self) -> AcceptKey {
        self.accept
    }

    /// The protocols offered, in order.
    pub fn offered(&self) -> &'static [Protocol] {
        Protocol::offered(self.mechanism)
    }

    /// The length of the request [`emit_request`](Self::emit_request) writes.
    pub fn request_len(&self, target: &Target<'_>) -> usize {
        let mut counter = Counter(0);
        self.write_request(target, &mut counter);
        counter.0
    }

    /// Emit the upgrade request as libzmq does, headers in its order: `GET <path>
    /// HTTP/1.1`, `Host` (no port), `Upgrade: websocket`, `Connection: Upgrade`,
    /// `Sec-WebSocket-Key`, `Sec-WebSocket-Protocol` (the offered list, comma-separated
    /// without spaces), `Sec-WebSocket-Version: 13`, then the empty line. No `Origin`.
    pub fn emit_request(
        &self,
        target: &Target<'_>,
        out: &mut [u8],
    ) -> Result<usize, InsufficientSize> {
        let mut w = Out {
            writer: Writer::new(out),
            error: None,
        };
        self.write_request(target, &mut w);
        w.finish()
    }

    fn write_request(&self, target: &Target<'_>, w: &mut impl Sink) {
        w.put(b"GET ");
        w.put(target.path.as_bytes());
        w.put(b" HTTP/1.1\r\nHost: ");
        w.put(target.host.as_bytes());
        w.put(b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ");
        w.put(&self.key);
        w.put(b"\r\nSec-WebSocket-Protocol: ");
        for (i, p) in self.offered().iter().enumerate() {
            if i > 0 {
                w.put(b",");
            }
            w.put(p.name().as_bytes());
        }
        w.put(b"\r\nSec-WebSocket-Version: 13\r\n\r\n");
    }

    /// Parse the server's response at the front of `input`: `Partial` until its empty
    /// line; then the protocol the server chose and the response's length (the bytes after
    /// it are WebSocket frames).
    ///
    /// Required: the status line `HTTP/1.1 101` (any reason phrase), `Upgrade: websocket`,
    /// a `Connection` holding the token `upgrade` (header names and these values compare
    /// case-insensitively; both may be lists), a `Sec-WebSocket-Accept` equal to
    /// [`expected_accept`](Self::expected_accept) (libzmq does not check it; we do), and
    /// one `Sec-WebSocket-Protocol` naming a protocol we offered. A
    /// `Sec-WebSocket-Extensions` with a value is refused: we offered none.
    pub fn parse_response(
        &self,
        input: &[u8],
    ) -> Result<Status<(Protocol, usize)>, HandshakeError> {
        http::parse_head(
            input,
            ResponseVisitor {
                client: self,
                upgrade: false,
                connection: false,
                accept: false,
                protocol: None,
            },
        )
    }
}

struct ResponseVisitor<'c> {
    client: &'c ClientHandshake,
    upgrade: bool,
    connection: bool,
    accept: bool,
    protocol: Option<Protocol>,
}

impl<'a> Visitor<'a> for ResponseVisitor<'_> {
    type Output = Protocol;

    fn start_line(&mut self, line: &'a [u8], complete: bool) -> Result<(), HandshakeError> {
        const BAD: HandshakeError = HandshakeError::BadStatusLine;
        if !expect_prefix(line, b"HTTP/1.1 ", BAD)? {
            return if complete { Err(BAD) } else { Ok(()) };
        }
        let mut code = 0u16;
        for i in 9..12 {
            match line.get(i) {
                Some(b) if b.is_ascii_digit() => code = code * 10 + u16::from(b - b'0'),
                Some(_) => return Err(BAD),
                None if complete => return Err(BAD),
                None => return Ok(()),
            }
        }
        if code != 101 {
            return Err(HandshakeError::UnexpectedStatus(code));
        }
        match line.get(12) {
            None | Some(b' ') => {}
            Some(_) => return Err(BAD),
        }
        let reason = line.get(13..).unwrap_or_default();
        if reason.iter().all(|&b| http::is_field_char(b)) {
            Ok(())
        } else {
            Err(BAD)
        }
    }

    fn field(&mut self, name: &'a [u8], value: &'a [u8]) -> Result<(), HandshakeError> {
        if name.eq_ignore_ascii_case(b"Upgrade") {
            self.upgrade |= list_has(value, b"websocket");
        } else if name.eq_ignore_ascii_case(b"Connection") {
            self.connection |= list_has(value, b"upgrade");
        } else if name.eq_ignore_ascii_case(b"Sec-WebSocket-Accept") {
            if self.accept {
                return Err(HandshakeError::DuplicateHeader("Sec-WebSocket-Accept"));
            }
            if value != self.client.accept.as_bytes() {
                return Err(HandshakeError::BadAccept);
            }
            self.accept = true;
        } else if name.eq_ignore_ascii_case(b"Sec-WebSocket-Protocol") {
            if self.protocol.is_some() {
                return Err(HandshakeError::DuplicateHeader("Sec-WebSocket-Protocol"));
            }
            match Protocol::from_name(value) {
                Some(p) if self.client.offered().contains(&p) => self.protocol = Some(p),
                _ => return Err(HandshakeError::UnofferedProtocol),
            }
        } else if name.eq_ignore_ascii_case(b"Sec-WebSocket-Extensions")
            && list(value).next().is_some()
        {
            return Err(HandshakeError::UnexpectedExtension);
        }
        Ok(())
    }

    fn finish(self) -> Result<Protocol, HandshakeError> {
        if !self.upgrade {
            return Err(HandshakeError::MissingUpgrade);
        }
        if !self.connection {
            return Err(HandshakeError::MissingConnectionUpgrade);
        }
        if !self.accept {
            return Err(HandshakeError::MissingAccept);
        }
        self.protocol.ok_or(HandshakeError::MissingProtocol)
    }
}

// ----- server ---------------------------------------------------------------------------

/// The server side of the upgrade: parses the client's request, chooses the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerHandshake {
    mechanism: Mechanism,
}

/// A valid upgrade request, as the server accepted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpgradeRequest<'a> {
    /// The protocol chosen (see [`ServerHandshake::parse_request`]).
    pub protocol: Protocol,
    /// The `Sec-WebSocket-Accept` value of the client's key.
    pub accept: AcceptKey,
    /// The request target (path and query) as sent. libzmq ignores it.
    pub path: &'a [u8],
    /// The first `Host` value, if any. libzmq ignores it.
    pub host: Option<&'a [u8]>,
}

impl UpgradeRequest<'_> {
    /// The length of the response [`emit_response`](Self::emit_response) writes.
    pub fn response_len(&self) -> usize {
        let mut counter = Counter(0);
        write_response(self.protocol, &self.accept, &mut counter);
        counter.0
    }

    /// Emit the `101 Switching Protocols` response, as libzmq does: `Upgrade`,
    /// `Connection`, `Sec-WebSocket-Accept`, `Sec-WebSocket-Protocol`, then the empty line.
    pub fn emit_response(&self, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        emit_response(self.protocol, &self.accept, out)
    }
}

/// Emit the `101 Switching Protocols` response for `protocol` and `accept` (what
/// [`UpgradeRequest::emit_response`] writes, for a caller that kept only these two).
pub fn emit_response(
    protocol: Protocol,
    accept: &AcceptKey,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let mut w = Out {
        writer: Writer::new(out),
        error: None,
    };
    write_response(protocol, accept, &mut w);
    w.finish()
}

fn write_response(protocol: Protocol, accept: &AcceptKey, w: &mut impl Sink) {
    w.put(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n");
    w.put(b"Sec-WebSocket-Accept: ");
    w.put(accept.as_bytes());
    w.put(b"\r\nSec-WebSocket-Protocol: ");
    w.put(protocol.name().as_bytes());
    w.put(b"\r\n\r\n");
}

/// The response that refuses an upgrade: `400 Bad Request`, with the version we speak and
/// `Connection: close`. libzmq sends nothing and closes; RFC 6455 asks for an HTTP error.
pub const REJECTION: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

impl ServerHandshake {
    /// A server of `mechanism`.
    ///
    /// # Errors
    /// [`HandshakeError::UnsupportedMechanism`] for a mechanism other than NULL, PLAIN or
    /// CURVE.
    pub fn new(mechanism: Mechanism) -> Result<ServerHandshake, HandshakeError> {
        Ok(ServerHandshake {
            mechanism: supported(mechanism)?,
        })
    }

    /// Parse the client's request at the front of `input`: `Partial` until its empty line;
    /// then the accepted request and its length (the bytes after it are WebSocket frames).
    ///
    /// Required: `GET <target> HTTP/1.1` (the target is not checked, as in libzmq),
    /// `Upgrade: websocket`, a `Connection` holding the token `upgrade` (header names and
    /// these values compare case-insensitively; both may be lists), one non-empty
    /// `Sec-WebSocket-Key` (any text, as in libzmq), and a protocol this socket accepts.
    /// `Host` and `Sec-WebSocket-Version` are not checked, as in libzmq.
    ///
    /// The protocol: the client's `Sec-WebSocket-Protocol` lists (there may be several
    /// headers) are walked in order and the first protocol this socket's mechanism accepts
    /// is taken, as libzmq does, with one exception: a NULL socket takes `ZWS2.0/NULL`
    /// over bare `ZWS2.0` wherever both are offered. (A libzmq client with heartbeats
    /// aborts on bare `ZWS2.0`; libzmq's server, offered `ZWS2.0,ZWS2.0/NULL`, picks it.)
    /// Elements are trimmed of spaces and tabs (libzmq strips one leading space) and
    /// compared exactly.
    ///
    /// Limits: the head is at most [`MAX_HEAD_LEN`](super::MAX_HEAD_LEN) bytes, a header
    /// name at most [`MAX_NAME_LEN`](super::MAX_NAME_LEN), a value at most
    /// [`MAX_VALUE_LEN`](super::MAX_VALUE_LEN). Refused requests get no response from
    /// this crate: close the stream, or write [`REJECTION`] first.
    pub fn parse_request<'a>(
        &self,
        input: &'a [u8],
    ) -> Result<Status<(UpgradeRequest<'a>, usize)>, HandshakeError> {
        http::parse_head(
            input,
            RequestVisitor {
                mechanism: self.mechanism,
                path: &[],
                host: None,
                upgrade: false,
                connection: false,
                accept: None,
                protocol: None,
            },
        )
    }
}

struct RequestVisitor<'a> {
    mechanism: Mechanism,
    path: &'a [u8],
    host: Option<&'a [u8]>,
    upgrade: bool,
    connection: bool,
    accept: Option<AcceptKey>,
    protocol: Option<Protocol>,
}

impl<'a> Visitor<'a> for RequestVisitor<'a> {
    type Output = UpgradeRequest<'a>;

    fn start_line(&mut self, line: &'a [u8], complete: bool) -> Result<(), HandshakeError> {
        if !expect_prefix(line, b"GET ", HandshakeError::NotGet)? {
            return if complete {
                Err(HandshakeError::NotGet)
            } else {
                Ok(())
            };
        }
        let rest = line.get(4..).unwrap_or_default();
        let mut target_end = None;
        for (i, &b) in rest.iter().enumerate() {
            if b == b' ' {
                target_end = Some(i);
                break;
            }
            // Any visible byte, as libzmq takes any but CR and LF (ASCII controls too).
            if b < 0x21 || b == 0x7F {
                return Err(HandshakeError::Malformed);
            }
        }
        let Some(end) = target_end else {
            return if complete {
                Err(HandshakeError::Malformed)
            } else {
                Ok(())
            };
        };
        if end == 0 {
            return Err(HandshakeError::Malformed);
        }
        let version = rest.get(end + 1..).unwrap_or_default();
        let whole = expect_prefix(version, b"HTTP/1.1", HandshakeError::BadVersion)?;
        if version.len() > 8 || (complete && !whole) {
            return Err(HandshakeError::BadVersion);
        }
        self.path = rest.get(..end).unwrap_or_default();
        Ok(())
    }

    fn field(&mut self, name: &'a [u8], value: &'a [u8]) -> Result<(), HandshakeError> {
        if name.eq_ignore_ascii_case(b"Upgrade") {
            self.upgrade |= list_has(value, b"websocket");
        } else if name.eq_ignore_ascii_case(b"Connection") {
            self.connection |= list_has(value, b"upgrade");
        } else if name.eq_ignore_ascii_case(b"Sec-WebSocket-Key") {
            if self.accept.is_some() {
                return Err(HandshakeError::DuplicateHeader("Sec-WebSocket-Key"));
            }
            if !value.is_empty() {
                self.accept = Some(AcceptKey::for_key(value));
            }
        } else if name.eq_ignore_ascii_case(b"Sec-WebSocket-Protocol") {
            for element in list(value) {
                let Some(p) = Protocol::from_name(element) else {
                    continue;
                };
                if !p.accepted_by(self.mechanism) {
                    continue;
                }
                match self.protocol {
                    None => self.protocol = Some(p),
                    // The one exception to "first acceptable wins".
                    Some(Protocol::Bare) if p == Protocol::Null => self.protocol = Some(p),
                    Some(_) => {}
                }
            }
        } else if name.eq_ignore_ascii_case(b"Host") && self.host.is_none() {
            self.host = Some(value);
        }
        Ok(())
    }

    fn finish(self) -> Result<UpgradeRequest<'a>, HandshakeError> {
        if !self.upgrade {
            return Err(HandshakeError::MissingUpgrade);
        }
        if !self.connection {
            return Err(HandshakeError::MissingConnectionUpgrade);
        }
        let accept = self.accept.ok_or(HandshakeError::MissingKey)?;
        let protocol = self.protocol.ok_or(HandshakeError::NoProtocol)?;
        Ok(UpgradeRequest {
            protocol,
            accept,
            path: self.path,
            host: self.host,
        })
    }
}

// ----- output ---------------------------------------------------------------------------

/// Where a head is written: a buffer, or a length counter.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

struct Counter(usize);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

/// A writer that keeps the first error and counts what would have been needed.
struct Out<'a> {
    writer: Writer<'a>,
    error: Option<usize>,
}

impl Sink for Out<'_> {
    fn put(&mut self, bytes: &[u8]) {
        match &mut self.error {
            Some(required) => *required += bytes.len(),
            None => {
                if let Err(e) = self.writer.put(bytes) {
                    self.error = Some(e.required);
                }
            }
        }
    }
}

impl Out<'_> {
    fn finish(self) -> Result<usize, InsufficientSize> {
        match self.error {
            Some(required) => Err(InsufficientSize { required }),
            None => Ok(self.writer.len()),
        }
    }
}
