//! Security mechanisms. Each is a state of the handshake that the [`Connection`](crate::Connection)
//! drives between the greeting and traffic; they are an enum, not trait objects.
//!
//! A mechanism owns every handshake command it sends (queued one at a time, emitted through
//! the connection's control output) and parses every handshake command it receives. Servers
//! that authenticate their peers stop and wait for a verdict (ZAP, RFC 27): the connection
//! reports [`Event::AuthRequested`](crate::Event::AuthRequested), and the driver answers
//! with [`Connection::handle_auth`](crate::Connection::handle_auth).

#[cfg(feature = "curve")]
mod curve;
mod null;
mod plain;

#[cfg(feature = "curve")]
pub use curve::CurveError;
pub(crate) use null::reason_of;
use null::Null;
use plain::Plain;

use crate::codec::{FrameHeader, InsufficientSize, Mechanism as MechanismName, Metadata, Writer};
use crate::connection::Config;
#[cfg(feature = "curve")]
use crate::curve_crypto::{KeyPair, PublicKey};
use crate::{EncodeError, Error};

/// A user name or password for PLAIN: at most 255 bytes.
pub type Credential = heapless::Vec<u8, 255>;

/// The security mechanism a connection uses, and our role in it.
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

impl Security {
    /// A PLAIN client; `None` if the user name or password is longer than 255 bytes.
    pub fn plain_client(username: &[u8], password: &[u8]) -> Option<Security> {
        Some(Security::PlainClient {
            username: Credential::from_slice(username).ok()?,
            password: Credential::from_slice(password).ok()?,
        })
    }

    /// A CURVE server (`ZMQ_CURVE_SERVER` with `ZMQ_CURVE_SECRETKEY`) from its secret key
    /// in Z85 (40 characters); the public key is derived from it.
    #[cfg(feature = "curve")]
    pub fn curve_server_z85(secret: &str) -> Result<Security, crate::z85::Z85Error> {
        Ok(Security::CurveServer {
            keys: KeyPair::from_secret(crate::z85::decode_key(secret.as_bytes())?),
        })
    }

    /// A CURVE client (`ZMQ_CURVE_SERVERKEY`, `ZMQ_CURVE_SECRETKEY`) from the server's
    /// public key and our secret key, both in Z85.
    #[cfg(feature = "curve")]
    pub fn curve_client_z85(
        server_public: &str,
        secret: &str,
    ) -> Result<Security, crate::z85::Z85Error> {
        Ok(Security::CurveClient {
            server_key: PublicKey(crate::z85::decode_key(server_public.as_bytes())?),
            keys: KeyPair::from_secret(crate::z85::decode_key(secret.as_bytes())?),
        })
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

/// What a peer presented, for the authenticator to judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credentials<'a> {
    /// NULL: nothing.
    Null,
    /// PLAIN: a user name and a password.
    Plain {
        /// The user name.
        username: &'a [u8],
        /// The password.
        password: &'a [u8],
    },
    /// CURVE: the client's long-term public key (raw, 32 bytes).
    Curve {
        /// The client's public key.
        public_key: &'a [u8; 32],
    },
}

/// An authentication request: what ZAP (RFC 27) asks the handler. The driver adds the
/// domain, the peer's address and our routing identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthRequest<'a> {
    /// The mechanism in use.
    pub mechanism: MechanismName,
    /// What the peer presented.
    pub credentials: Credentials<'a>,
}

/// Where a server stands with the authentication of its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing asked (yet, or ever).
    None,
    /// Asked; waiting for [`Connection::handle_auth`](crate::Connection::handle_auth).
    Waiting,
    /// Granted (200).
    Granted,
}

/// The mechanism a connection uses, with its handshake state.
// Held inline: the crate works without an allocator.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum MechanismState {
    Null(Null),
    Plain(Plain),
    #[cfg(feature = "curve")]
    Curve(curve::Curve),
}

impl MechanismState {
    /// The state for `security`; `entropy` seeds CURVE's keys and nonces.
    pub(crate) fn new(
        security: &Security,
        authenticate_null: bool,
        entropy: Option<[u8; 32]>,
    ) -> Self {
        let _ = entropy;
        match security {
            Security::Null => MechanismState::Null(Null::new(authenticate_null)),
            Security::PlainClient { username, password } => {
                MechanismState::Plain(Plain::client(username.clone(), password.clone()))
            }
            Security::PlainServer => MechanismState::Plain(Plain::server()),
            #[cfg(feature = "curve")]
            Security::CurveClient { server_key, keys } => {
                MechanismState::Curve(curve::Curve::client(*server_key, keys.clone(), entropy))
            }
            #[cfg(feature = "curve")]
            Security::CurveServer { keys } => {
                MechanismState::Curve(curve::Curve::server(keys.clone(), entropy))
            }
        }
    }

    pub(crate) fn name(&self) -> MechanismName {
        match self {
            MechanismState::Null(_) => MechanismName::NULL,
            MechanismState::Plain(_) => MechanismName::PLAIN,
            #[cfg(feature = "curve")]
            MechanismState::Curve(_) => MechanismName::CURVE,
        }
    }

    /// The greeting is done: queue the first command, or ask for a verdict.
    pub(crate) fn start(&mut self) -> Result<(), Error> {
        match self {
            MechanismState::Null(m) => {
                m.start();
                Ok(())
            }
            MechanismState::Plain(m) => {
                m.start();
                Ok(())
            }
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.start(),
        }
    }

    /// Length of the handshake frame waiting to be sent, if any.
    pub(crate) fn pending_len(&self, cfg: &Config) -> Option<usize> {
        match self {
            MechanismState::Null(m) => m.pending_len(cfg),
            MechanismState::Plain(m) => m.pending_len(cfg),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.pending_len(cfg),
        }
    }

    /// Whether a handshake frame waits to be sent (cheaper than
    /// [`pending_len`](Self::pending_len)).
    pub(crate) fn has_pending(&self) -> bool {
        match self {
            MechanismState::Null(m) => m.has_pending(),
            MechanismState::Plain(m) => m.has_pending(),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.has_pending(),
        }
    }

    /// Emit the handshake frame waiting to be sent and mark it sent. Afterwards,
    /// [`failure`](Self::failure) says whether it was a farewell ERROR.
    pub(crate) fn emit(&mut self, cfg: &Config, out: &mut [u8]) -> Result<usize, InsufficientSize> {
        match self {
            MechanismState::Null(m) => m.emit(cfg, out),
            MechanismState::Plain(m) => m.emit(cfg, out),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.emit(cfg, out),
        }
    }

    /// Process a command received during the handshake. Returns the peer's metadata when
    /// the command carried it (READY, INITIATE).
    pub(crate) fn handle_command<'a>(
        &mut self,
        body: &'a mut [u8],
    ) -> Result<Option<Metadata<'a>>, Error> {
        match self {
            MechanismState::Null(m) => m.handle_command(body),
            MechanismState::Plain(m) => m.handle_command(body),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.handle_command(body),
        }
    }

    /// Whether our side of the handshake is done: everything we must send is queued or
    /// sent, every verdict given, and the peer's last handshake command received.
    pub(crate) fn is_complete(&self) -> bool {
        match self {
            MechanismState::Null(m) => m.is_complete(),
            MechanismState::Plain(m) => m.is_complete(),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.is_complete(),
        }
    }

    fn verdict(&self) -> Verdict {
        match self {
            MechanismState::Null(m) => m.verdict,
            MechanismState::Plain(m) => m.verdict,
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.verdict,
        }
    }

    /// The request waiting for a verdict, if any.
    pub(crate) fn auth_request(&self) -> Option<AuthRequest<'_>> {
        if self.verdict() != Verdict::Waiting {
            return None;
        }
        let credentials = match self {
            MechanismState::Null(_) => Credentials::Null,
            MechanismState::Plain(m) => m.credentials()?,
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.credentials()?,
        };
        Some(AuthRequest {
            mechanism: self.name(),
            credentials,
        })
    }

    /// Apply a verdict to the request waiting for one.
    pub(crate) fn handle_auth(&mut self, status: u16) -> Result<(), Error> {
        if self.verdict() != Verdict::Waiting {
            return Err(Error::UnexpectedVerdict);
        }
        match self {
            MechanismState::Null(m) => m.handle_auth(status),
            MechanismState::Plain(m) => m.handle_auth(status),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.handle_auth(status),
        }
    }

    /// The error that ends the handshake once nothing more is to be sent (after a farewell
    /// ERROR went out).
    pub(crate) fn failure(&self) -> Option<Error> {
        match self {
            MechanismState::Null(m) => m.refused.failure(),
            MechanismState::Plain(m) => m.refused.failure(),
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.failure(),
        }
    }

    /// Whether traffic is encrypted (CURVE): frames go through [`seal_len`](Self::seal_len),
    /// [`seal`](Self::seal) and [`open`](Self::open), and no frame body may bypass them.
    pub(crate) fn seals(&self) -> bool {
        match self {
            #[cfg(feature = "curve")]
            MechanismState::Curve(_) => true,
            _ => false,
        }
    }

    /// Length of the frame that carries `len` bytes of payload (a data frame body or a
    /// command body) once sealed.
    pub(crate) fn seal_len(len: usize) -> usize {
        #[cfg(feature = "curve")]
        {
            curve::Curve::sealed_frame_len(len)
        }
        #[cfg(not(feature = "curve"))]
        {
            len
        }
    }

    /// Write a sealed frame into `out`: `command` says whether the payload is a command body,
    /// `more` whether more frames of the message follow; `payload` writes the `len` payload
    /// bytes. Returns the bytes written; on failure nothing is written.
    pub(crate) fn seal(
        &mut self,
        command: bool,
        more: bool,
        len: usize,
        out: &mut [u8],
        payload: impl FnOnce(&mut Writer<'_>) -> Result<(), InsufficientSize>,
    ) -> Result<usize, EncodeError> {
        match self {
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.seal(command, more, len, out, payload),
            _ => {
                let _ = (command, more, len, out, payload);
                Err(EncodeError::Sealed)
            }
        }
    }

    /// Open a sealed frame body in place: returns the inner flags (bit 0 MORE, bit 1
    /// COMMAND) and the payload.
    pub(crate) fn open<'a>(&mut self, body: &'a mut [u8]) -> Result<(u8, &'a [u8]), Error> {
        match self {
            #[cfg(feature = "curve")]
            MechanismState::Curve(m) => m.open(body),
            _ => {
                let _ = body;
                Err(Error::UnexpectedMessage)
            }
        }
    }
}

/// A server's refusal of its peer, kept until the farewell ERROR (if any) has gone out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Refusal {
    status: Option<u16>,
    /// The ERROR is still to be sent.
    farewell_pending: bool,
}

impl Refusal {
    /// Refuse with `status`; `farewell` when an ERROR goes out first.
    pub(crate) fn refuse(&mut self, status: u16, farewell: bool) {
        self.status = Some(status);
        self.farewell_pending = farewell;
    }

    /// The reason of the ERROR still to be sent.
    pub(crate) fn farewell(&self) -> Option<&'static [u8]> {
        match (self.farewell_pending, self.status) {
            (true, Some(400)) => Some(b"400"),
            (true, Some(_)) => Some(b"500"),
            _ => None,
        }
    }

    pub(crate) fn farewell_sent(&mut self) {
        self.farewell_pending = false;
    }

    pub(crate) fn failure(&self) -> Option<Error> {
        match self.status {
            Some(status) if !self.farewell_pending => Some(Error::AuthRejected { status }),
            _ => None,
        }
    }

    /// Apply a verdict's ZAP status: true for 200 (go on). Otherwise the refusal is
    /// recorded: 400 and 500 say goodbye with an ERROR, anything else closes silently.
    pub(crate) fn apply(&mut self, status: u16) -> bool {
        match status {
            200 => true,
            400 | 500 => {
                self.refuse(status, true);
                false
            }
            _ => {
                self.refuse(status, false);
                false
            }
        }
    }
}

/// Length of a command frame whose body is `name` (length-prefixed) and `data_len` bytes.
pub(crate) fn command_frame_len(name: &[u8], data_len: usize) -> usize {
    let body = 1 + name.len() + data_len;
    FrameHeader::command(body).encoded_len() + body
}

/// Write a command frame header and the length-prefixed `name`; the caller writes the
/// `data_len` bytes that follow.
pub(crate) fn put_command_head(
    w: &mut Writer<'_>,
    name: &[u8],
    data_len: usize,
) -> Result<(), InsufficientSize> {
    let body = 1 + name.len() + data_len;
    w.emit(|out| FrameHeader::command(body).emit(out))?;
    w.put(&[u8::try_from(name.len()).unwrap_or(u8::MAX)])?;
    w.put(name)
}

/// Emit a whole ERROR command frame with `reason`.
pub(crate) fn emit_error(out: &mut [u8], reason: &[u8]) -> Result<usize, InsufficientSize> {
    let mut w = Writer::new(out);
    put_command_head(&mut w, b"ERROR", 1 + reason.len())?;
    w.put(&[u8::try_from(reason.len()).unwrap_or(u8::MAX)])?;
    w.put(reason)?;
    Ok(w.len())
}

/// Emit the ERROR frame of a PLAIN server in libzmq's form: its body starts `5e "RROR"`
/// (a C escape bug in libzmq turned `\5ERROR` into `^RROR`), and libzmq's PLAIN client
/// recognises only that form: with it, a refused libzmq client reports
/// HANDSHAKE_FAILED_AUTH with the status; with the RFC form, a protocol error.
pub(crate) fn emit_plain_error(out: &mut [u8], reason: &[u8]) -> Result<usize, InsufficientSize> {
    let body = 5 + 1 + reason.len();
    let mut w = Writer::new(out);
    w.emit(|out| FrameHeader::command(body).emit(out))?;
    w.put(b"\x5eRROR")?;
    w.put(&[u8::try_from(reason.len()).unwrap_or(u8::MAX)])?;
    w.put(reason)?;
    Ok(w.len())
}

/// Length of the ERROR frame [`emit_plain_error`] writes.
pub(crate) fn plain_error_len(reason: &[u8]) -> usize {
    let body = 5 + 1 + reason.len();
    FrameHeader::command(body).encoded_len() + body
}

/// Length of the ERROR frame [`emit_error`] writes.
pub(crate) fn error_len(reason: &[u8]) -> usize {
    command_frame_len(b"ERROR", 1 + reason.len())
}

/// Emit a READY or INITIATE command frame carrying our metadata.
pub(crate) fn emit_metadata_command(
    name: &[u8],
    cfg: &Config,
    out: &mut [u8],
) -> Result<usize, InsufficientSize> {
    let mut w = Writer::new(out);
    put_command_head(&mut w, name, cfg.metadata_len())?;
    cfg.emit_metadata(&mut w)?;
    Ok(w.len())
}
