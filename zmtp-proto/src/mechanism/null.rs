use super::Step;
use crate::codec::Command;
use crate::error::{Reason, MAX_REASON_LEN};
use crate::Error;

/// The NULL mechanism (RFC 23): each side sends READY; an ERROR from the peer is fatal.
#[derive(Debug, Clone, Default)]
pub(crate) struct Null;

impl Null {
    pub(crate) fn handle_command<'a>(&mut self, cmd: Command<'a>) -> Result<Step<'a>, Error> {
        match cmd {
            Command::Ready(meta) => Ok(Step::Ready(meta)),
            Command::Error(reason) => Err(Error::PeerError(reason_of(reason))),
            _ => Err(Error::UnexpectedCommand),
        }
    }
}

/// Copy the front of an ERROR reason into a [`Reason`].
pub(crate) fn reason_of(reason: &[u8]) -> Reason {
    let mut r = Reason::new();
    // Cannot fail: cut to the capacity first.
    let _ = r.extend_from_slice(&reason[..reason.len().min(MAX_REASON_LEN)]);
    r
}
