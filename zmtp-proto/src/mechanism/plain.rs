//! The PLAIN mechanism (RFC 24).

use super::{
    command_frame_len, emit_metadata_command, emit_plain_error, plain_error_len, put_command_head,
    reason_of, Credentials, EmitError, Refusal, Verdict,
};
use crate::codec::{CodecError, Command, Metadata, Writer};
use crate::config::{Config, Credential};
use crate::error::Error;

/// The PLAIN mechanism (RFC 24).
///
/// Client: HELLO (user name, password) → WELCOME → INITIATE (metadata) → READY.
/// Server: HELLO → verdict → WELCOME (or ERROR) → INITIATE → READY.
#[derive(Debug, Clone)]
pub(crate) struct Plain {
    role: Role,
    pub(crate) verdict: Verdict,
    refused: Refusal,
    pending: Option<Out>,
    done: bool,
}

#[derive(Debug, Clone)]
enum Role {
    Client {
        username: Credential,
        password: Credential,
        stage: ClientStage,
    },
    Server {
        /// What the client's HELLO presented (kept for the verdict).
        username: Credential,
        password: Credential,
        stage: ServerStage,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientStage {
    Start,
    AwaitWelcome,
    AwaitReady,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What the server waits for.
enum ServerStage {
    Hello,
    Verdict,
    Initiate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Hello,
    Welcome,
    Initiate,
    Ready,
}

impl Plain {
    pub(crate) fn client(username: Credential, password: Credential) -> Plain {
        Plain::with(Role::Client {
            username,
            password,
            stage: ClientStage::Start,
        })
    }

    pub(crate) fn server() -> Plain {
        Plain::with(Role::Server {
            username: Credential::new(),
            password: Credential::new(),
            stage: ServerStage::Hello,
        })
    }

    fn with(role: Role) -> Plain {
        Plain {
            role,
            verdict: Verdict::None,
            refused: Refusal::default(),
            pending: None,
            done: false,
        }
    }

    pub(crate) fn start(&mut self) {
        if let Role::Client { stage, .. } = &mut self.role {
            *stage = ClientStage::AwaitWelcome;
            self.pending = Some(Out::Hello);
        }
    }

    pub(crate) fn credentials(&self) -> Option<Credentials<'_>> {
        match &self.role {
            Role::Server {
                username, password, ..
            } => Some(Credentials::Plain { username, password }),
            Role::Client { .. } => None,
        }
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.pending.is_some() || self.refused.farewell().is_some()
    }

    pub(crate) fn pending_len(&self, cfg: &Config) -> Option<usize> {
        if let Some(reason) = self.refused.farewell() {
            return Some(plain_error_len(reason));
        }
        Some(match self.pending? {
            Out::Hello => match &self.role {
                Role::Client {
                    username, password, ..
                } => command_frame_len(b"HELLO", 2 + username.len() + password.len()),
                Role::Server { .. } => 0,
            },
            Out::Welcome => command_frame_len(b"WELCOME", 0),
            Out::Initiate => command_frame_len(b"INITIATE", cfg.metadata_len()),
            Out::Ready => command_frame_len(b"READY", cfg.metadata_len()),
        })
    }

    pub(crate) fn emit(&mut self, cfg: &Config, out: &mut [u8]) -> Result<usize, EmitError> {
        self.refused.emit_farewell(out, emit_plain_error)?;
        let Some(next) = self.pending else {
            return Ok(0);
        };
        let n = match next {
            Out::Hello => {
                let Role::Client {
                    username, password, ..
                } = &self.role
                else {
                    return Ok(0);
                };
                let mut w = Writer::new(out);
                put_command_head(&mut w, b"HELLO", 2 + username.len() + password.len())?;
                // Both at most 255 bytes (`Credential`).
                w.put(&[u8::try_from(username.len()).unwrap_or(u8::MAX)])?;
                w.put(username)?;
                w.put(&[u8::try_from(password.len()).unwrap_or(u8::MAX)])?;
                w.put(password)?;
                w.len()
            }
            Out::Welcome => {
                let mut w = Writer::new(out);
                put_command_head(&mut w, b"WELCOME", 0)?;
                w.len()
            }
            Out::Initiate => emit_metadata_command(b"INITIATE", cfg, out)?,
            Out::Ready => emit_metadata_command(b"READY", cfg, out)?,
        };
        self.pending = None;
        Ok(n)
    }

    pub(crate) fn handle_command<'a>(
        &mut self,
        body: &'a mut [u8],
    ) -> Result<Option<Metadata<'a>>, Error> {
        let body: &'a [u8] = body;
        let cmd = Command::parse(body)?;
        if let Command::Error(reason) = cmd {
            return Err(Error::PeerError(reason_of(reason)));
        }
        match &mut self.role {
            Role::Client { stage, .. } => match (*stage, cmd) {
                (
                    ClientStage::AwaitWelcome,
                    Command::Unknown {
                        name: b"WELCOME",
                        data,
                    },
                ) => {
                    if !data.is_empty() {
                        return Err(CodecError::MalformedCommandBody.into());
                    }
                    *stage = ClientStage::AwaitReady;
                    self.pending = Some(Out::Initiate);
                    Ok(None)
                }
                (ClientStage::AwaitReady, Command::Ready(meta)) => {
                    self.done = true;
                    Ok(Some(meta))
                }
                _ => Err(Error::UnexpectedCommand),
            },
            Role::Server {
                username,
                password,
                stage,
            } => match (*stage, cmd) {
                (
                    ServerStage::Hello,
                    Command::Unknown {
                        name: b"HELLO",
                        data,
                    },
                ) => {
                    let (user, pass) = parse_hello(data).ok_or(CodecError::MalformedCommandBody)?;
                    // Both fit: their lengths came from one byte each.
                    *username = Credential::from_slice(user).unwrap_or_default();
                    *password = Credential::from_slice(pass).unwrap_or_default();
                    *stage = ServerStage::Verdict;
                    self.verdict = Verdict::Waiting;
                    Ok(None)
                }
                (
                    ServerStage::Initiate,
                    Command::Unknown {
                        name: b"INITIATE",
                        data,
                    },
                ) => {
                    let meta = Metadata::parse(data)?;
                    self.pending = Some(Out::Ready);
                    self.done = true;
                    Ok(Some(meta))
                }
                _ => Err(Error::UnexpectedCommand),
            },
        }
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.done
    }

    pub(crate) fn handle_auth(&mut self, status: u16) -> Result<(), Error> {
        if let Role::Server { stage, .. } = &mut self.role {
            self.verdict = Verdict::None;
            if self.refused.apply(status)? {
                self.verdict = Verdict::Granted;
                *stage = ServerStage::Initiate;
                self.pending = Some(Out::Welcome);
            }
        }
        Ok(())
    }
}

/// `u8 ulen, user, u8 plen, pass`, with nothing after.
fn parse_hello(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&ulen, rest) = data.split_first()?;
    let (user, rest) = rest.split_at_checked(usize::from(ulen))?;
    let (&plen, pass) = rest.split_first()?;
    (pass.len() == usize::from(plen)).then_some((user, pass))
}
