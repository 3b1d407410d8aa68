//! The NULL mechanism (RFC 23).

use super::{
    command_frame_len, emit_error, emit_metadata_command, error_len, EmitError, Refusal, Verdict,
};
use crate::codec::{Command, Metadata};
use crate::config::Config;
use crate::error::{Error, Reason, MAX_REASON_LEN};

/// The NULL mechanism (RFC 23): each side sends READY; an ERROR from the peer is fatal.
/// With authentication on (libzmq: a ZAP domain is set), our READY waits for the verdict.
#[derive(Debug, Clone)]
pub(crate) struct Null {
    authenticate: bool,
    pub(crate) verdict: Verdict,
    refused: Refusal,
    ready_pending: bool,
    ready_queued: bool,
    peer_ready: bool,
}

impl Null {
    pub(crate) fn new(authenticate: bool) -> Null {
        Null {
            authenticate,
            verdict: Verdict::None,
            refused: Refusal::default(),
            ready_pending: false,
            ready_queued: false,
            peer_ready: false,
        }
    }

    pub(crate) fn start(&mut self) {
        if self.authenticate {
            self.verdict = Verdict::Waiting;
        } else {
            self.queue_ready();
        }
    }

    fn queue_ready(&mut self) {
        self.ready_pending = true;
        self.ready_queued = true;
    }

    pub(crate) fn has_pending(&self) -> bool {
        self.ready_pending || self.refused.farewell().is_some()
    }

    pub(crate) fn pending_len(&self, cfg: &Config) -> Option<usize> {
        if let Some(reason) = self.refused.farewell() {
            return Some(error_len(reason));
        }
        self.ready_pending
            .then(|| command_frame_len(b"READY", cfg.metadata_len()))
    }

    pub(crate) fn emit(&mut self, cfg: &Config, out: &mut [u8]) -> Result<usize, EmitError> {
        self.refused.emit_farewell(out, emit_error)?;
        if !self.ready_pending {
            return Ok(0);
        }
        let n = emit_metadata_command(b"READY", cfg, out)?;
        self.ready_pending = false;
        Ok(n)
    }

    pub(crate) fn handle_command<'a>(
        &mut self,
        body: &'a mut [u8],
    ) -> Result<Option<Metadata<'a>>, Error> {
        let body: &'a [u8] = body;
        match Command::parse(body)? {
            Command::Ready(meta) if !self.peer_ready => {
                self.peer_ready = true;
                Ok(Some(meta))
            }
            Command::Error(reason) => Err(Error::PeerError(reason_of(reason))),
            _ => Err(Error::UnexpectedCommand),
        }
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.peer_ready && self.ready_queued
    }

    pub(crate) fn handle_auth(&mut self, status: u16) -> Result<(), Error> {
        self.verdict = Verdict::None;
        if self.refused.apply(status)? {
            self.verdict = Verdict::Granted;
            self.queue_ready();
        }
        Ok(())
    }
}

/// Copy the front of an ERROR reason into a [`Reason`].
pub(crate) fn reason_of(reason: &[u8]) -> Reason {
    let mut r = Reason::new();
    // Cannot fail: cut to the capacity first.
    let _ = r.extend_from_slice(&reason[..reason.len().min(MAX_REASON_LEN)]);
    r
}
