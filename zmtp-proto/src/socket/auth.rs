//! Authentication at the socket level (ZAP, RFC 27): which peers are asked about, what
//! happens without a handler (libzmq's rules), and what an accepted peer carries.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use bytes::Bytes;

use super::{Command, Ending, PeerId, Socket};
use crate::codec::{Mechanism, Metadata};
use crate::mechanism::{Credentials, Security};
use crate::z85::Z85Error;
use crate::{Error, Instant, PublicKey};

/// How long a refused peer is given to read our ERROR before its stream is closed anyway.
const FAREWELL: core::time::Duration = core::time::Duration::from_secs(1);

/// What a ZAP handler is asked about one peer (RFC 27).
///
/// A socket builds these; a request is built here by hand to show what it holds:
///
/// ```
/// use zmtp_proto::codec::Mechanism;
/// use zmtp_proto::socket::ZapRequest;
/// use zmtp_proto::Bytes;
///
/// let request = ZapRequest {
///     domain: Bytes::from_static(b"global"),
///     address: "192.0.2.7".into(),
///     identity: Bytes::new(),
///     mechanism: Mechanism::PLAIN,
///     credentials: vec![Bytes::from_static(b"admin"), Bytes::from_static(b"secret")],
/// };
/// assert_eq!(request.mechanism_name(), "PLAIN");
/// assert_eq!(request.plain_credentials(), Some((&b"admin"[..], &b"secret"[..])));
/// assert_eq!(request.curve_public_key(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZapRequest {
    /// `ZMQ_ZAP_DOMAIN` (may be empty).
    pub domain: Bytes,
    /// The peer's IP address, without the port, from the address the driver gave to
    /// `handle_accepted`/`handle_connected` (empty for ipc and inproc).
    pub address: String,
    /// Our own routing id (libzmq sends the server socket's `ZMQ_ROUTING_ID`).
    pub identity: Bytes,
    /// The mechanism name: `NULL`, `PLAIN` or `CURVE`.
    pub mechanism: Mechanism,
    /// The credential frames: none for NULL, user name and password for PLAIN, the
    /// client's 32-byte public key for CURVE.
    pub credentials: Vec<Bytes>,
}

impl ZapRequest {
    /// The CURVE client's long-term public key, for a CURVE request (`None` for other
    /// mechanisms, or for credentials that are not one 32-byte key).
    pub fn curve_public_key(&self) -> Option<PublicKey> {
        match (self.mechanism, &self.credentials[..]) {
            (Mechanism::CURVE, [key]) => <[u8; 32]>::try_from(&key[..]).ok().map(PublicKey),
            _ => None,
        }
    }

    /// The PLAIN client's user name and password, for a PLAIN request.
    pub fn plain_credentials(&self) -> Option<(&[u8], &[u8])> {
        match (self.mechanism, &self.credentials[..]) {
            (Mechanism::PLAIN, [username, password]) => Some((username, password)),
            _ => None,
        }
    }

    /// The mechanism name as text (`"NULL"`, `"PLAIN"`, `"CURVE"`).
    pub fn mechanism_name(&self) -> &str {
        core::str::from_utf8(self.mechanism.name()).unwrap_or_default()
    }

    /// The request as ZAP frames (RFC 27, after the empty delimiter a REP handler needs):
    /// version, request id, domain, address, identity, mechanism, credentials.
    pub fn to_frames(&self, request_id: &[u8]) -> Vec<Bytes> {
        let mut frames = alloc::vec![
            Bytes::from_static(b"1.0"),
            Bytes::copy_from_slice(request_id),
            self.domain.clone(),
            Bytes::copy_from_slice(self.address.as_bytes()),
            self.identity.clone(),
            Bytes::copy_from_slice(self.mechanism.name()),
        ];
        frames.extend(self.credentials.iter().cloned());
        frames
    }
}

/// The answer to a [`ZapRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthReply {
    /// A handler's verdict.
    Verdict {
        /// ZAP status: 200 accepts; 300 closes silently; 400 and 500 refuse with an
        /// ERROR to the peer.
        status: u16,
        /// The user id, exposed as the `User-Id` property of the peer's messages.
        user_id: Bytes,
        /// Extra properties for the peer's messages (ZMTP metadata encoding; may be
        /// empty).
        metadata: Bytes,
    },
    /// No handler is there: libzmq's rules apply. NULL accepts unless `ZAP_ENFORCE_DOMAIN`
    /// is set; CURVE accepts unless `ZAP_ENFORCE_DOMAIN` is set with a `ZAP_DOMAIN`;
    /// PLAIN refuses. A refusal closes the stream without an ERROR, with monitor event
    /// HANDSHAKE_FAILED_NO_DETAIL carrying `EFAULT` ([`Error::NoZapHandler`]).
    NoHandler,
    /// The handler's reply broke RFC 27 ([`from_frames`](Self::from_frames) says how):
    /// the stream is closed without an ERROR, with monitor event
    /// HANDSHAKE_FAILED_PROTOCOL carrying `code`, one of libzmq's
    /// `ZMQ_PROTOCOL_ERROR_ZAP_*` codes ([`protocol_error`](super::monitor::protocol_error)).
    Invalid {
        /// What was wrong with the reply.
        code: u32,
    },
}

impl AuthReply {
    /// Read a ZAP reply (RFC 27, after the empty delimiter): version "1.0", the request id
    /// sent, a status code 200/300/400/500, status text, user id, metadata. A reply that
    /// breaks these rules is [`AuthReply::Invalid`], with the code libzmq reports for the
    /// first rule broken, checked in libzmq's order: not six frames
    /// (`ZAP_MALFORMED_REPLY`), the version (`ZAP_BAD_VERSION`), the request id
    /// (`ZAP_BAD_REQUEST_ID`), the status (`ZAP_INVALID_STATUS_CODE`), the metadata
    /// (`ZAP_INVALID_METADATA`).
    ///
    /// ```
    /// use zmtp_proto::socket::monitor::protocol_error;
    /// use zmtp_proto::socket::AuthReply;
    /// use zmtp_proto::Bytes;
    ///
    /// let reply = |frames: &[&'static str]| -> Vec<Bytes> {
    ///     frames.iter().map(|f| Bytes::from_static(f.as_bytes())).collect()
    /// };
    /// let ok = reply(&["1.0", "7", "200", "OK", "alice", ""]);
    /// assert_eq!(
    ///     AuthReply::from_frames(&ok, b"7"),
    ///     AuthReply::Verdict { status: 200, user_id: Bytes::from_static(b"alice"), metadata: Bytes::new() }
    /// );
    /// let wrong_id = AuthReply::from_frames(&ok, b"8");
    /// assert_eq!(wrong_id, AuthReply::Invalid { code: protocol_error::ZAP_BAD_REQUEST_ID });
    /// let unknown = reply(&["1.0", "7", "201", "", "", ""]);
    /// assert_eq!(
    ///     AuthReply::from_frames(&unknown, b"7"),
    ///     AuthReply::Invalid { code: protocol_error::ZAP_INVALID_STATUS_CODE }
    /// );
    /// ```
    pub fn from_frames(frames: &[Bytes], request_id: &[u8]) -> AuthReply {
        use super::monitor::protocol_error as p;
        let invalid = |code| AuthReply::Invalid { code };
        let [version, id, status, _text, user_id, metadata] = frames else {
            return invalid(p::ZAP_MALFORMED_REPLY);
        };
        if &version[..] != b"1.0" {
            return invalid(p::ZAP_BAD_VERSION);
        }
        if &id[..] != request_id {
            return invalid(p::ZAP_BAD_REQUEST_ID);
        }
        let status = match &status[..] {
            b"200" => 200,
            b"300" => 300,
            b"400" => 400,
            b"500" => 500,
            _ => return invalid(p::ZAP_INVALID_STATUS_CODE),
        };
        if Metadata::parse(metadata).is_err() {
            return invalid(p::ZAP_INVALID_METADATA);
        }
        AuthReply::Verdict {
            status,
            user_id: user_id.clone(),
            metadata: metadata.clone(),
        }
    }

    /// A verdict with no user id or metadata.
    pub fn status(status: u16) -> AuthReply {
        AuthReply::Verdict {
            status,
            user_id: Bytes::new(),
            metadata: Bytes::new(),
        }
    }
}

/// What is known of an authenticated peer, or of one that sent application metadata
/// (`X-` properties): readable on each message it sent
/// ([`Message::property`](super::Message::property)) and from
/// [`Socket::peer_properties`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PeerProperties {
    /// The user id the authenticator gave (`User-Id`).
    pub user_id: Bytes,
    /// The peer's own metadata (its READY or INITIATE: `Socket-Type`, `Identity`, `X-`
    /// properties), ZMTP-encoded.
    pub peer: Bytes,
    /// Properties the authenticator added, ZMTP-encoded.
    pub zap: Bytes,
    /// The peer's IP address as text (`Peer-Address`); empty when it has none (ipc,
    /// inproc).
    pub address: String,
    /// The descriptor of the peer's stream, as the driver gave it
    /// ([`Socket::set_peer_fd`]): what libzmq's `ZMQ_SRCFD` reads. `None` when the driver
    /// gave none (inproc, or a driver without descriptors).
    pub fd: Option<i32>,
}

impl PeerProperties {
    /// A property by name, as libzmq's `zmq_msg_gets`: `User-Id`, then `Peer-Address`
    /// (when the peer has an IP address), then the authenticator's properties, then the
    /// peer's own.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        if name == "User-Id" {
            return Some(&self.user_id);
        }
        if name == "Peer-Address" && !self.address.is_empty() {
            return Some(self.address.as_bytes());
        }
        find(&self.zap, name).or_else(|| find(&self.peer, name))
    }
}

fn find<'a>(block: &'a [u8], name: &str) -> Option<&'a [u8]> {
    Metadata::parse(block).ok()?.get(name.as_bytes())
}

impl Socket {
    /// A peer's connection asks for a verdict: decide here (libzmq's rule for CURVE
    /// without a domain, or the installed [`Authenticator`]), or ask the driver.
    pub(super) fn request_auth(&mut self, peer: PeerId) {
        let Some(conn) = self.connection(peer) else {
            return;
        };
        let Some(request) = conn.auth_request() else {
            return;
        };
        let enforce_empty = self.opts.zap_enforce_domain && self.opts.zap_domain.is_empty();
        if request.mechanism == Mechanism::CURVE && enforce_empty {
            // libzmq does not consult ZAP for CURVE then: everyone is let in.
            self.verdicts.push_back((peer, AuthReply::status(200)));
            return;
        }
        let credentials = match request.credentials {
            Credentials::Null => Vec::new(),
            Credentials::Plain { username, password } => alloc::vec![
                Bytes::copy_from_slice(username),
                Bytes::copy_from_slice(password)
            ],
            Credentials::Curve { public_key } => {
                alloc::vec![Bytes::copy_from_slice(public_key.as_bytes())]
            }
        };
        let address = self.peers.get(&peer).map(|p| p.ip()).unwrap_or_default();
        let request = ZapRequest {
            domain: self.opts.zap_domain.clone(),
            address,
            identity: self.opts.routing_id.clone(),
            mechanism: request.mechanism,
            credentials,
        };
        match &self.authenticator {
            // Applied once the input that asked is processed (`apply_verdicts`).
            Some(auth) => {
                let reply = auth.check(&request);
                self.verdicts.push_back((peer, reply));
            }
            None => self
                .commands
                .push_back(Command::Authenticate { peer, request }),
        }
    }

    /// Decide authentication here: every peer asking for a verdict gets this
    /// authenticator's, and no [`Command::Authenticate`] reaches the driver. `None`
    /// removes it (the driver is asked again).
    pub fn set_authenticator(&mut self, authenticator: Option<Authenticator>) {
        self.authenticator = authenticator;
    }

    /// Answer a [`Command::Authenticate`]. A refused peer gets an ERROR (400, 500) or
    /// nothing (300) and its stream is closed; its handshake fails with monitor event
    /// HANDSHAKE_FAILED_AUTH.
    pub fn handle_auth(&mut self, peer: PeerId, now: Instant, reply: AuthReply) {
        self.apply_auth(peer, now, reply);
        self.apply_verdicts(now);
    }

    /// Apply the verdicts decided in the core while input was processed.
    pub(super) fn apply_verdicts(&mut self, now: Instant) {
        while let Some((peer, reply)) = self.verdicts.pop_front() {
            self.apply_auth(peer, now, reply);
        }
    }

    fn apply_auth(&mut self, peer: PeerId, now: Instant, reply: AuthReply) {
        let (status, user_id, zap) = match reply {
            AuthReply::Verdict {
                status,
                user_id,
                metadata,
            } => (status, user_id, metadata),
            AuthReply::NoHandler if self.no_handler_accepts() => (200, Bytes::new(), Bytes::new()),
            AuthReply::NoHandler => return self.refuse_quietly(peer, Error::NoZapHandler, now),
            AuthReply::Invalid { code } => {
                return self.refuse_quietly(peer, Error::ZapReplyInvalid { code }, now)
            }
        };
        let Some(p) = self.peers.get_mut(&peer) else {
            return;
        };
        if p.stream.is_none() {
            return;
        }
        if status == 200 {
            let props = p.properties_mut();
            props.user_id = user_id;
            props.zap = zap;
            p.tagged = true;
        }
        let Some(s) = p.stream.as_mut() else {
            return;
        };
        let result = s.conn.connection_mut().handle_auth(now, status);
        // Queue what the verdict produced (WELCOME, READY or ERROR).
        s.conn.poll_transmit();
        let error = result
            .err()
            .or_else(|| s.conn.connection().error().cloned());
        match error {
            Some(e) if s.conn.queued_len() > 0 => {
                // Let the ERROR go out first.
                s.farewell = Some((Some(e), now + FAREWELL));
                self.detach(peer);
                self.mark_dirty(peer);
            }
            Some(e) => self.end_stream(peer, Ending::Failed(e), now),
            None => {
                self.process_conn_events(peer, now);
                self.after_output(peer);
            }
        }
        self.rearm(peer);
    }

    /// libzmq's verdict when no ZAP handler is there: whether the peer is let in.
    fn no_handler_accepts(&self) -> bool {
        let enforced = self.opts.zap_enforce_domain;
        match &self.opts.security {
            // A PLAIN server has no one to check the password.
            Security::PlainServer => false,
            // CURVE lets every client in unless a domain is enforced.
            #[cfg(feature = "curve")]
            Security::CurveServer { .. } => !enforced || self.opts.zap_domain.is_empty(),
            // NULL asks only with a domain, and lets the peer in unless it is enforced.
            _ => !enforced,
        }
    }

    /// Refuse a peer waiting for its verdict without a word to it: its stream is closed
    /// and its handshake fails with `error`.
    fn refuse_quietly(&mut self, peer: PeerId, error: Error, now: Instant) {
        let waiting = self
            .connection(peer)
            .is_some_and(|c| c.auth_request().is_some());
        if waiting {
            self.end_stream(peer, Ending::Failed(error), now);
        }
    }

    /// The properties of a peer whose handshake is done: its metadata and, when it was
    /// authenticated, the user id and the authenticator's properties.
    pub fn peer_properties(&self, peer: PeerId) -> Option<&PeerProperties> {
        self.peers.get(&peer)?.properties.as_deref()
    }

    /// A stream refused by its verdict has written its ERROR (or run out of time).
    pub(super) fn finish_farewell(&mut self, peer: PeerId, now: Instant) {
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        let done = match &s.farewell {
            Some((_, deadline)) => s.conn.queued_len() == 0 || *deadline <= now,
            None => false,
        };
        if done {
            if let Some((e, _)) = s.farewell.take() {
                let ending = e.map_or(Ending::Dropped, Ending::Failed);
                self.end_stream(peer, ending, now);
            }
        }
    }
}

/// The error to report for a stream that ended: the connection's own failure, if it had
/// one (an ERROR we sent, a refused verdict), rather than the close that followed.
pub(super) fn ending_of(conn_error: Option<&Error>) -> Ending {
    match conn_error {
        Some(e) => Ending::Failed(e.clone()),
        None => Ending::Closed,
    }
}

/// An authenticator configured in code: decides as a ZAP handler would (like czmq's
/// `zauth` or pyzmq's authenticators), without a handler socket.
///
/// - Addresses: with an allow list, only listed addresses pass; otherwise listed denied
///   addresses are refused. Refusals are status 400.
/// - NULL: every address that passes is accepted.
/// - PLAIN: the user name and password must match an entry of the table; the user id is
///   the user name.
/// - CURVE: the client's public key must be allowed (or any key, with
///   [`curve_allow_any`](Self::curve_allow_any)); the user id is the key in Z85.
///
/// Given to a socket (the drivers' `set_authenticator`), it answers every peer that
/// asks; [`check`](Self::check) is that answer, here on requests built by hand:
///
/// ```
/// use zmtp_proto::codec::Mechanism;
/// use zmtp_proto::socket::{AuthReply, Authenticator, ZapRequest};
/// use zmtp_proto::{Bytes, PublicKey};
///
/// let client_key: PublicKey = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID".parse()?;
/// let auth = Authenticator::new()
///     .plain_user("admin", "secret")
///     .curve_allow(client_key)
///     .deny("192.0.2.66");
///
/// let request = |address: &str, mechanism, credentials: &[&[u8]]| ZapRequest {
///     domain: Bytes::new(),
///     address: address.into(),
///     identity: Bytes::new(),
///     mechanism,
///     credentials: credentials.iter().map(|c| Bytes::copy_from_slice(c)).collect(),
/// };
/// let status = |reply: AuthReply| match reply {
///     AuthReply::Verdict { status, .. } => status,
///     _ => 0,
/// };
///
/// // A PLAIN user with the right password is let in, with the user name as user id.
/// let admin = request("192.0.2.7", Mechanism::PLAIN, &[b"admin", b"secret"]);
/// assert_eq!(
///     auth.check(&admin),
///     AuthReply::Verdict {
///         status: 200,
///         user_id: Bytes::from_static(b"admin"),
///         metadata: Bytes::new(),
///     }
/// );
/// let wrong = request("192.0.2.7", Mechanism::PLAIN, &[b"admin", b"guess"]);
/// assert_eq!(status(auth.check(&wrong)), 400);
///
/// // A CURVE client with an allowed key is let in; its user id is the key in Z85.
/// let curve = request("192.0.2.7", Mechanism::CURVE, &[&client_key.as_bytes()[..]]);
/// match auth.check(&curve) {
///     AuthReply::Verdict { status, user_id, .. } => {
///         assert_eq!(status, 200);
///         assert_eq!(&user_id[..], client_key.to_z85().as_bytes());
///     }
///     other => panic!("{other:?}"),
/// }
///
/// // A denied address is refused whatever it presents.
/// let denied = request("192.0.2.66", Mechanism::PLAIN, &[b"admin", b"secret"]);
/// assert_eq!(status(auth.check(&denied)), 400);
/// # Ok::<(), zmtp_proto::z85::Z85Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authenticator {
    allow: Vec<String>,
    deny: Vec<String>,
    users: BTreeMap<Bytes, Bytes>,
    curve_any: bool,
    curve_keys: BTreeSet<PublicKey>,
}

impl Authenticator {
    /// An authenticator that refuses every PLAIN and CURVE client until told otherwise.
    pub fn new() -> Authenticator {
        Authenticator::default()
    }

    /// Accept connections from this address only (repeatable; the peer's IP as text).
    pub fn allow(mut self, address: &str) -> Authenticator {
        self.allow.push(address.into());
        self
    }

    /// Refuse connections from this address (ignored once an allow list exists).
    pub fn deny(mut self, address: &str) -> Authenticator {
        self.deny.push(address.into());
        self
    }

    /// Accept PLAIN clients presenting this user name and password (each `&str`, `String`,
    /// `&[u8]` or any other bytes).
    ///
    /// ```
    /// use zmtp_proto::socket::Authenticator;
    ///
    /// let auth = Authenticator::new()
    ///     .plain_user("admin", "secret")
    ///     .plain_user(b"backup", String::from("s3cr3t"));
    /// assert_ne!(auth, Authenticator::new());
    /// ```
    pub fn plain_user(
        mut self,
        username: impl AsRef<[u8]>,
        password: impl AsRef<[u8]>,
    ) -> Authenticator {
        self.users.insert(
            Bytes::copy_from_slice(username.as_ref()),
            Bytes::copy_from_slice(password.as_ref()),
        );
        self
    }

    /// Accept CURVE clients with this public key.
    ///
    /// ```
    /// use zmtp_proto::socket::Authenticator;
    /// use zmtp_proto::PublicKey;
    ///
    /// let client: PublicKey = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID".parse()?;
    /// let auth = Authenticator::new().curve_allow(client);
    /// # Ok::<(), zmtp_proto::z85::Z85Error>(())
    /// ```
    pub fn curve_allow(mut self, public_key: PublicKey) -> Authenticator {
        self.curve_keys.insert(public_key);
        self
    }

    /// Accept CURVE clients with this public key, given as 40 characters of Z85 text.
    ///
    /// ```
    /// use zmtp_proto::socket::Authenticator;
    ///
    /// let auth = Authenticator::new()
    ///     .curve_allow_z85("Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID")?
    ///     .curve_allow_z85("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")?;
    /// assert!(Authenticator::new().curve_allow_z85("not a key").is_err());
    /// # Ok::<(), zmtp_proto::z85::Z85Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`PublicKey::from_z85`].
    pub fn curve_allow_z85(self, public_key: impl AsRef<[u8]>) -> Result<Authenticator, Z85Error> {
        Ok(self.curve_allow(PublicKey::from_z85(public_key)?))
    }

    /// Accept every CURVE client (encryption without authentication of the client).
    pub fn curve_allow_any(mut self) -> Authenticator {
        self.curve_any = true;
        self
    }

    /// The verdict on `request` (whose address is the peer's IP as text; empty when the
    /// transport has none, as ipc and inproc).
    pub fn check(&self, request: &ZapRequest) -> AuthReply {
        let listed = |list: &[String]| list.contains(&request.address);
        let address_ok = if self.allow.is_empty() {
            !listed(&self.deny)
        } else {
            listed(&self.allow)
        };
        if !address_ok {
            return AuthReply::status(400);
        }
        let accept = |user_id: Bytes| AuthReply::Verdict {
            status: 200,
            user_id,
            metadata: Bytes::new(),
        };
        match (request.mechanism, &request.credentials[..]) {
            (Mechanism::NULL, _) => accept(Bytes::new()),
            (Mechanism::PLAIN, [user, pass]) if self.users.get(user) == Some(pass) => {
                accept(user.clone())
            }
            (Mechanism::CURVE, _) => match request.curve_public_key() {
                Some(key) if self.curve_any || self.curve_keys.contains(&key) => {
                    accept(Bytes::copy_from_slice(key.to_z85().as_bytes()))
                }
                _ => AuthReply::status(400),
            },
            _ => AuthReply::status(400),
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::{AuthReply, Authenticator, ZapRequest};
    use crate::codec::Mechanism;
    use crate::PublicKey;
    use alloc::vec;
    use alloc::vec::Vec;
    use bytes::Bytes;

    const CLIENT: &str = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
    const OTHER: &str = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

    fn request(mechanism: Mechanism, credentials: Vec<Bytes>) -> ZapRequest {
        ZapRequest {
            domain: Bytes::new(),
            address: "127.0.0.1".into(),
            identity: Bytes::new(),
            mechanism,
            credentials,
        }
    }

    fn curve(key: &[u8]) -> ZapRequest {
        request(Mechanism::CURVE, vec![Bytes::copy_from_slice(key)])
    }

    fn status(reply: &AuthReply) -> u16 {
        match reply {
            AuthReply::Verdict { status, .. } => *status,
            AuthReply::NoHandler | AuthReply::Invalid { .. } => 0,
        }
    }

    #[test]
    fn zap_request_gives_typed_credentials() {
        let key = PublicKey::from_z85(CLIENT).unwrap();
        let req = curve(key.as_bytes());
        assert_eq!(req.curve_public_key(), Some(key));
        assert_eq!(req.plain_credentials(), None);
        assert_eq!(curve(&key.as_bytes()[..31]).curve_public_key(), None);
        let plain = request(
            Mechanism::PLAIN,
            vec![Bytes::from_static(b"admin"), Bytes::from_static(b"secret")],
        );
        assert_eq!(
            plain.plain_credentials(),
            Some((&b"admin"[..], &b"secret"[..]))
        );
        assert_eq!(plain.curve_public_key(), None);
        assert_eq!(request(Mechanism::NULL, vec![]).plain_credentials(), None);
    }

    #[test]
    fn curve_keys_allowed_as_keys_or_text() {
        let client = PublicKey::from_z85(CLIENT).unwrap();
        let other = PublicKey::from_z85(OTHER).unwrap();
        for auth in [
            Authenticator::new().curve_allow(client),
            Authenticator::new().curve_allow_z85(CLIENT).unwrap(),
        ] {
            let reply = auth.check(&curve(client.as_bytes()));
            let AuthReply::Verdict {
                status, user_id, ..
            } = reply
            else {
                panic!("a verdict: {reply:?}");
            };
            // The user id is the key in Z85.
            assert_eq!((status, &user_id[..]), (200, CLIENT.as_bytes()));
            assert_eq!(status_of(&auth, other.as_bytes()), 400);
            assert_eq!(status_of(&auth, &client.as_bytes()[..31]), 400);
        }
        assert!(Authenticator::new().curve_allow_z85(&CLIENT[1..]).is_err());
        let any = Authenticator::new().curve_allow_any();
        assert_eq!(status_of(&any, other.as_bytes()), 200);
    }

    fn status_of(auth: &Authenticator, key: &[u8]) -> u16 {
        status(&auth.check(&curve(key)))
    }

    #[test]
    fn plain_users_from_text_or_bytes() {
        let auth = Authenticator::new()
            .plain_user("admin", "secret")
            .plain_user(b"root", alloc::string::String::from("toor"));
        let plain = |user: &'static [u8], pass: &'static [u8]| {
            let req = request(
                Mechanism::PLAIN,
                vec![Bytes::from_static(user), Bytes::from_static(pass)],
            );
            status(&auth.check(&req))
        };
        assert_eq!(plain(b"admin", b"secret"), 200);
        assert_eq!(plain(b"root", b"toor"), 200);
        assert_eq!(plain(b"admin", b"toor"), 400);
    }
}
