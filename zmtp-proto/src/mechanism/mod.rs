//! Security mechanisms. Each is a state of the handshake that the [`Connection`](crate::Connection)
//! drives between the greeting and traffic; they are an enum, not trait objects.
//!
//! A mechanism owns every handshake command it sends (queued one at a time, emitted through
//! the connection's control output) and parses every handshake command it receives. Servers
//! that authenticate their peers stop and wait for a verdict (ZAP, RFC 27): the connection
//! reports [`Event::AuthRequested`](crate::Event::AuthRequested), and the driver answers
//! with [`Connection::handle_auth`](crate::Connection::handle_auth).
//!
//! A mechanism reports its failures as the error of the call that caused them (a command
//! it cannot accept, a verdict that closes silently, a farewell ERROR it has just written);
//! the connection keeps the error, the mechanism does not. Mechanisms read only the local
//! [`Config`] (for the metadata they carry) and never the connection.
//! [`Security`], which chooses the mechanism, is part of that configuration and is
//! re-exported here.

#[cfg(feature = "curve")]
mod curve;
mod null;
mod plain;

pub(crate) use null::reason_of;
use null::Null;
use plain::Plain;

pub use crate::config::{Credential, Security};
#[cfg(feature = "curve")]
pub use crate::error::CurveError;

use crate::codec::{FrameHeader, InsufficientSize, Mechanism as MechanismName, Metadata, Writer};
use crate::config::Config;
use crate::error::{EncodeError, Error};
use crate::PublicKey;

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
    /// CURVE: the client's long-term public key.
    Curve {
        /// The client's public key.
        public_key: PublicKey,
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

    /// Emit the handshake frame waiting to be sent and mark it sent. When the handshake
    /// ends here (a farewell ERROR after a refusal, or a command we could not build), the
    /// error says so and how much of `out` still goes out.
    pub(crate) fn emit(&mut self, cfg: &Config, out: &mut [u8]) -> Result<usize, EmitError> {
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

    /// Apply a verdict to the request waiting for one. A refusal without a farewell ERROR
    /// (any status but 200, 400 and 500) ends the handshake at once: that is the error.
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

/// Why [`MechanismState::emit`] wrote no handshake frame, or why the one it wrote is the
/// last.
#[derive(Debug)]
pub(crate) enum EmitError {
    /// `out` is too small; nothing was written.
    InsufficientSize(InsufficientSize),
    /// The handshake failed with `error`: the connection ends once the first `farewell`
    /// bytes of `out` (an ERROR command, or nothing) have been transmitted.
    Failed {
        /// Bytes written: the farewell ERROR, or 0.
        farewell: usize,
        /// The error the connection ends with.
        error: Error,
    },
}

impl From<InsufficientSize> for EmitError {
    fn from(e: InsufficientSize) -> EmitError {
        EmitError::InsufficientSize(e)
    }
}

/// A server's refusal of its peer, kept until the farewell ERROR has gone out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Refusal {
    /// The ZAP status of a refusal whose ERROR is still to be sent.
    farewell: Option<u16>,
}

impl Refusal {
    /// Apply a verdict's ZAP status: `Ok(true)` for 200 (go on). 400 and 500 are refusals
    /// that say goodbye with an ERROR: `Ok(false)`, the ERROR is queued. Any other status
    /// closes silently: the handshake fails here.
    pub(crate) fn apply(&mut self, status: u16) -> Result<bool, Error> {
        match status {
            200 => Ok(true),
            400 | 500 => {
                self.farewell = Some(status);
                Ok(false)
            }
            _ => Err(Error::AuthRejected { status }),
        }
    }

    /// The reason of the ERROR still to be sent.
    pub(crate) fn farewell(&self) -> Option<&'static [u8]> {
        self.farewell.map(farewell_reason)
    }

    /// Write the ERROR still to be sent, if any, with `emit` (the mechanism's form of
    /// ERROR and `reason`). Once it is written the handshake is over: that is the error.
    pub(crate) fn emit_farewell(
        &mut self,
        out: &mut [u8],
        emit: impl FnOnce(&mut [u8], &[u8]) -> Result<usize, InsufficientSize>,
    ) -> Result<(), EmitError> {
        let Some(status) = self.farewell else {
            return Ok(());
        };
        let farewell = emit(out, farewell_reason(status))?;
        self.farewell = None;
        Err(EmitError::Failed {
            farewell,
            error: Error::AuthRejected { status },
        })
    }
}

/// The reason an ERROR after a refusal with `status` carries (libzmq sends only these two).
fn farewell_reason(status: u16) -> &'static [u8] {
    if status == 400 {
        b"400"
    } else {
        b"500"
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
