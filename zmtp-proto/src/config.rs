//! The local side of a connection: what we announce, what we accept, how we authenticate.
//!
//! [`Config`] is everything a [`Connection`](crate::Connection) is told about our side:
//! socket type, version, limits, heartbeats, the [`Security`] mechanism and our role in
//! it, and the metadata our READY (or INITIATE) carries. The mechanisms read it to emit
//! that metadata; nothing here depends on the connection or the mechanisms.

use core::time::Duration;

use crate::codec::{
    emit_property, property_len, InsufficientSize, Mechanism as MechanismName, Metadata, Version,
    Writer,
};
#[cfg(feature = "curve")]
use crate::curve_crypto::{KeyPair, PublicKey, SecretKey};
use crate::socket_type::SocketType;
use crate::z85::Z85Error;

/// A routing identity: at most 255 bytes.
pub type Identity = heapless::Vec<u8, 255>;

/// Capacity for encoded application metadata (`X-` properties) sent in our READY.
pub const MAX_PROPERTIES_LEN: usize = 1024;

/// Default handshake deadline (libzmq's `ZMQ_HANDSHAKE_IVL`).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`Config::max_message_frames`].
pub const DEFAULT_MAX_MESSAGE_FRAMES: usize = 65_536;

/// Default limit for a single command frame (READY metadata, subscriptions, PING...).
pub const DEFAULT_MAX_COMMAND_SIZE: u64 = 64 * 1024;

/// A configuration value that cannot be used.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Routing identities are at most 255 bytes.
    IdentityTooLong,
    /// Application property names must start with `X-` and be at most 255 bytes (as in libzmq).
    BadPropertyName,
    /// The encoded application properties exceed [`MAX_PROPERTIES_LEN`].
    PropertiesFull,
    /// A PLAIN user name is longer than 255 bytes.
    UsernameTooLong,
    /// A PLAIN password is longer than 255 bytes.
    PasswordTooLong,
    /// A CURVE key given as Z85 text is not one (40 characters of the Z85 alphabet).
    BadKey(Z85Error),
}

impl From<Z85Error> for ConfigError {
    fn from(e: Z85Error) -> ConfigError {
        ConfigError::BadKey(e)
    }
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ConfigError::IdentityTooLong => "identity longer than 255 bytes",
            ConfigError::BadPropertyName => "property names must start with \"X-\"",
            ConfigError::PropertiesFull => "application properties too large",
            ConfigError::UsernameTooLong => "PLAIN user name longer than 255 bytes",
            ConfigError::PasswordTooLong => "PLAIN password longer than 255 bytes",
            ConfigError::BadKey(e) => return write!(f, "bad CURVE key: {e}"),
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::BadKey(e) => Some(e),
            _ => None,
        }
    }
}

/// Everything a [`Connection`](crate::Connection) needs to know about the local side.
#[derive(Debug, Clone)]
pub struct Config {
    /// Our socket type, sent as `Socket-Type` and checked against the peer's.
    pub socket_type: SocketType,
    /// Version we announce: [`Version::V3_1`] (default) or [`Version::V3_0`] to act as a 3.0 peer.
    pub version: Version,
    /// Deadline from construction to the end of the handshake (default 30 s); `None` for none.
    pub handshake_timeout: Option<Duration>,
    /// Send a PING this often once the handshake is done (`ZMQ_HEARTBEAT_IVL`).
    pub heartbeat_interval: Option<Duration>,
    /// Fail when nothing arrives this long after a PING (`ZMQ_HEARTBEAT_TIMEOUT`; default: the interval).
    pub heartbeat_timeout: Option<Duration>,
    /// TTL announced in our PINGs (`ZMQ_HEARTBEAT_TTL`), sent in tenths of a second.
    pub heartbeat_ttl: Option<Duration>,
    /// Largest message the peer may send, in bytes, summed over all its frames (`ZMQ_MAXMSGSIZE`).
    pub max_message_size: Option<u64>,
    /// Largest command frame body accepted.
    pub max_command_size: u64,
    /// Most frames one message may have (default [`DEFAULT_MAX_MESSAGE_FRAMES`]; `None` for
    /// no limit). Each frame costs memory even when empty, so without this an endless
    /// multipart message of empty frames would grow without bound.
    pub max_message_frames: Option<usize>,
    /// The security mechanism and our role in it (default NULL).
    pub security: Security,
    /// With NULL: ask for a verdict on every peer before sending READY (libzmq does when
    /// `ZMQ_ZAP_DOMAIN` is set). PLAIN and CURVE servers always ask.
    pub authenticate_null: bool,
    /// Accept peers that speak ZMTP 1.0 or 2.0 (default true, as libzmq does). They get no
    /// security mechanism: whatever this says, they are refused when `security` is not NULL
    /// or `authenticate_null` is set, as libzmq refuses them when ZAP is enabled.
    pub legacy_peers: bool,
    /// Take a peer of any socket type (default false: an incompatible one fails the
    /// handshake). Its `Socket-Type` is still recorded. For `inproc://`, which libzmq
    /// joins without a handshake, so that any two of its sockets can be joined there (a
    /// PAIR to a PULL).
    pub any_peer_type: bool,
    identity: Identity,
    properties: heapless::Vec<u8, MAX_PROPERTIES_LEN>,
}

impl Config {
    /// Defaults as libzmq's for a socket of this type.
    pub fn new(socket_type: SocketType) -> Config {
        Config {
            socket_type,
            version: Version::V3_1,
            handshake_timeout: Some(DEFAULT_HANDSHAKE_TIMEOUT),
            heartbeat_interval: None,
            heartbeat_timeout: None,
            heartbeat_ttl: None,
            max_message_size: None,
            max_command_size: DEFAULT_MAX_COMMAND_SIZE,
            max_message_frames: Some(DEFAULT_MAX_MESSAGE_FRAMES),
            security: Security::Null,
            authenticate_null: false,
            legacy_peers: true,
            any_peer_type: false,
            identity: Identity::new(),
            properties: heapless::Vec::new(),
        }
    }

    /// Set our routing identity (`ZMQ_ROUTING_ID`), sent by REQ, DEALER and ROUTER.
    pub fn set_identity(&mut self, id: &[u8]) -> Result<(), ConfigError> {
        self.identity = Identity::from_slice(id).map_err(|_| ConfigError::IdentityTooLong)?;
        Ok(())
    }

    /// Our routing identity.
    pub fn identity(&self) -> &[u8] {
        &self.identity
    }

    /// Add an application property (`ZMQ_METADATA`) to our READY. Names start with `X-`.
    pub fn add_property(&mut self, name: &[u8], value: &[u8]) -> Result<(), ConfigError> {
        if !name.starts_with(b"X-") || name.len() > 255 {
            return Err(ConfigError::BadPropertyName);
        }
        let mut buf = [0u8; MAX_PROPERTIES_LEN];
        let len = emit_property(name, value, &mut buf).map_err(|_| ConfigError::PropertiesFull)?;
        self.properties
            .extend_from_slice(buf.get(..len).unwrap_or_default())
            .map_err(|_| ConfigError::PropertiesFull)
    }

    /// The encoded application properties.
    pub fn properties(&self) -> Metadata<'_> {
        // Built only by `add_property`, so always valid; an empty block on the impossible failure.
        Metadata::parse(&self.properties).unwrap_or(Metadata::EMPTY)
    }

    /// Length of the metadata we send in READY or INITIATE: `Socket-Type`, `Identity` (for
    /// the types that send it) and the application properties.
    pub(crate) fn metadata_len(&self) -> usize {
        let mut len = property_len(b"Socket-Type", self.socket_type.name().as_bytes());
        if self.socket_type.sends_identity() {
            len += property_len(b"Identity", &self.identity);
        }
        len + self.properties.len()
    }

    /// Write the metadata of [`metadata_len`](Self::metadata_len).
    pub(crate) fn emit_metadata(&self, w: &mut Writer<'_>) -> Result<(), InsufficientSize> {
        let ty = self.socket_type.name().as_bytes();
        w.emit(|out| emit_property(b"Socket-Type", ty, out))?;
        if self.socket_type.sends_identity() {
            w.emit(|out| emit_property(b"Identity", &self.identity, out))?;
        }
        w.put(&self.properties)
    }
}

/// A user name or password for PLAIN: at most 255 bytes.
pub type Credential = heapless::Vec<u8, 255>;

/// The security mechanism a connection uses, and our role in it.
///
/// Each side of a connection names its mechanism and role, and the two must agree: a
/// PLAIN client talks to a PLAIN server, a CURVE client to the CURVE server whose public
/// key it was given (see `Security::curve_server`, with the `curve` feature).
///
/// ```
/// use zmtp_proto::mechanism::Security;
///
/// // PLAIN: a user name and password, against a server that checks them.
/// let client = Security::plain_client("admin", "secret")?;
/// let server = Security::plain_server();
/// assert_eq!(client.mechanism(), server.mechanism());
/// assert!(server.is_server() && !client.is_server());
/// assert_eq!(Security::default(), Security::Null);
/// # Ok::<(), zmtp_proto::ConfigError>(())
/// ```
// Credentials and keys are held inline: the crate works without an allocator.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Security {
    /// NULL (RFC 23): no authentication, no encryption. The default.
    #[default]
    Null,
    /// PLAIN client (RFC 24): sends a user name and password in clear text.
    PlainClient {
        /// The user name (`ZMQ_PLAIN_USERNAME`).
        username: Credential,
        /// The password (`ZMQ_PLAIN_PASSWORD`).
        password: Credential,
    },
    /// PLAIN server (`ZMQ_PLAIN_SERVER`): every client is authenticated (ZAP).
    PlainServer,
    /// CURVE client (RFC 26): authenticated, encrypted traffic to a server whose public key
    /// is known.
    #[cfg(feature = "curve")]
    CurveClient {
        /// The server's long-term public key (`ZMQ_CURVE_SERVERKEY`).
        server_key: PublicKey,
        /// Our long-term key pair (`ZMQ_CURVE_PUBLICKEY` / `ZMQ_CURVE_SECRETKEY`).
        keys: KeyPair,
    },
    /// CURVE server (`ZMQ_CURVE_SERVER`): every client's long-term key is authenticated (ZAP).
    #[cfg(feature = "curve")]
    CurveServer {
        /// Our long-term key pair.
        keys: KeyPair,
    },
}

/// Every constructor of a mechanism that takes text or bytes returns a `Result` with a
/// [`ConfigError`], which converts into the drivers' error with `?`; constructors that take
/// typed keys cannot fail.
///
/// ```
/// use zmtp_proto::mechanism::Security;
/// use zmtp_proto::ConfigError;
///
/// let client = Security::plain_client("admin", "secret")?;
/// let same = Security::plain_client(b"admin", String::from("secret"))?;
/// assert_eq!(client, same);
/// assert_eq!(
///     Security::plain_client("x".repeat(256), "secret"),
///     Err(ConfigError::UsernameTooLong)
/// );
/// # Ok::<(), ConfigError>(())
/// ```
impl Security {
    /// A PLAIN client (`ZMQ_PLAIN_USERNAME`, `ZMQ_PLAIN_PASSWORD`); each is `&str`,
    /// `String`, `&[u8]` or any other bytes.
    ///
    /// # Errors
    /// [`ConfigError::UsernameTooLong`] or [`ConfigError::PasswordTooLong`] for more than
    /// 255 bytes.
    pub fn plain_client(
        username: impl AsRef<[u8]>,
        password: impl AsRef<[u8]>,
    ) -> Result<Security, ConfigError> {
        Ok(Security::PlainClient {
            username: Credential::from_slice(username.as_ref())
                .map_err(|_| ConfigError::UsernameTooLong)?,
            password: Credential::from_slice(password.as_ref())
                .map_err(|_| ConfigError::PasswordTooLong)?,
        })
    }

    /// A PLAIN server (`ZMQ_PLAIN_SERVER`): [`Security::PlainServer`].
    pub const fn plain_server() -> Security {
        Security::PlainServer
    }

    /// A CURVE client (`ZMQ_CURVE_SERVERKEY`, `ZMQ_CURVE_PUBLICKEY`,
    /// `ZMQ_CURVE_SECRETKEY`) of the server with public key `server_key`, with our
    /// long-term `keys`.
    ///
    /// ```
    /// use zmtp_proto::curve_crypto::{KeyPair, SecretKey};
    /// use zmtp_proto::mechanism::Security;
    ///
    /// let server_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7".parse()?;
    /// let secret: SecretKey = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs".parse()?;
    /// let keys = KeyPair::from_secret(secret);
    /// let client = Security::curve_client(server_key, keys);
    /// assert!(!client.is_server());
    /// # Ok::<(), zmtp_proto::z85::Z85Error>(())
    /// ```
    #[cfg(feature = "curve")]
    pub fn curve_client(server_key: PublicKey, keys: KeyPair) -> Security {
        Security::CurveClient { server_key, keys }
    }

    /// A CURVE server (`ZMQ_CURVE_SERVER`) with our long-term `keys`. Its clients are
    /// given the public half, usually as 40 characters of Z85 text:
    ///
    /// ```
    /// use zmtp_proto::curve_crypto::{KeyPair, SecretKey};
    /// use zmtp_proto::mechanism::Security;
    ///
    /// let secret: SecretKey = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6".parse()?;
    /// let keys = KeyPair::from_secret(secret);
    /// let public = keys.public.to_z85(); // for the clients
    /// assert_eq!(public.len(), 40);
    /// let server = Security::curve_server(keys);
    ///
    /// let client = Security::curve_client_z85(
    ///     &public,
    ///     "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs", // the client's own secret key
    /// )?;
    /// assert_eq!(client.mechanism(), server.mechanism());
    /// assert!(server.is_server() && !client.is_server());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "curve")]
    pub fn curve_server(keys: KeyPair) -> Security {
        Security::CurveServer { keys }
    }

    /// A CURVE server (`ZMQ_CURVE_SERVER` with `ZMQ_CURVE_SECRETKEY`) from its secret key
    /// in Z85 (40 characters); the public key is derived from it.
    ///
    /// ```
    /// use zmtp_proto::mechanism::Security;
    /// use zmtp_proto::{z85::Z85Error, ConfigError};
    ///
    /// let server = Security::curve_server_z85("JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6")?;
    /// assert!(server.is_server());
    /// assert_eq!(
    ///     Security::curve_server_z85("JTKVSB"),
    ///     Err(ConfigError::BadKey(Z85Error::BadLength))
    /// );
    /// # Ok::<(), ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigError::BadKey`] if the text is not a Z85 key.
    #[cfg(feature = "curve")]
    pub fn curve_server_z85(secret: impl AsRef<[u8]>) -> Result<Security, ConfigError> {
        Ok(Security::curve_server(KeyPair::from_secret(
            SecretKey::from_z85(secret)?,
        )))
    }

    /// A CURVE client (`ZMQ_CURVE_SERVERKEY`, `ZMQ_CURVE_SECRETKEY`) from the server's
    /// public key and our secret key, both in Z85 (40 characters); our public key is
    /// derived from the secret.
    ///
    /// ```
    /// use zmtp_proto::mechanism::Security;
    ///
    /// let client = Security::curve_client_z85(
    ///     "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
    ///     "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs",
    /// )?;
    /// assert!(!client.is_server());
    /// # Ok::<(), zmtp_proto::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// [`ConfigError::BadKey`] if either text is not a Z85 key.
    #[cfg(feature = "curve")]
    pub fn curve_client_z85(
        server_public: impl AsRef<[u8]>,
        secret: impl AsRef<[u8]>,
    ) -> Result<Security, ConfigError> {
        Ok(Security::curve_client(
            PublicKey::from_z85(server_public)?,
            KeyPair::from_secret(SecretKey::from_z85(secret)?),
        ))
    }

    /// The mechanism's name, as in the greeting.
    pub fn mechanism(&self) -> MechanismName {
        match self {
            Security::Null => MechanismName::NULL,
            Security::PlainClient { .. } | Security::PlainServer => MechanismName::PLAIN,
            #[cfg(feature = "curve")]
            Security::CurveClient { .. } | Security::CurveServer { .. } => MechanismName::CURVE,
        }
    }

    /// Whether we are the server of the mechanism (PLAIN or CURVE server).
    pub fn is_server(&self) -> bool {
        match self {
            Security::Null | Security::PlainClient { .. } => false,
            Security::PlainServer => true,
            #[cfg(feature = "curve")]
            Security::CurveClient { .. } => false,
            #[cfg(feature = "curve")]
            Security::CurveServer { .. } => true,
        }
    }
}

impl PartialEq for Security {
    fn eq(&self, other: &Security) -> bool {
        match (self, other) {
            (Security::Null, Security::Null) | (Security::PlainServer, Security::PlainServer) => {
                true
            }
            (
                Security::PlainClient { username, password },
                Security::PlainClient {
                    username: u,
                    password: p,
                },
            ) => username == u && password == p,
            #[cfg(feature = "curve")]
            (
                Security::CurveClient { server_key, keys },
                Security::CurveClient {
                    server_key: s,
                    keys: k,
                },
            ) => server_key == s && same_keys(keys, k),
            #[cfg(feature = "curve")]
            (Security::CurveServer { keys }, Security::CurveServer { keys: k }) => {
                same_keys(keys, k)
            }
            _ => false,
        }
    }
}

impl Eq for Security {}

#[cfg(feature = "curve")]
fn same_keys(a: &KeyPair, b: &KeyPair) -> bool {
    a.public == b.public && a.secret.as_bytes() == b.secret.as_bytes()
}
