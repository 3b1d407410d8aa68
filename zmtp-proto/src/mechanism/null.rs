use super::Step;
use crate::codec::Command;
use crate::error::Reason;
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

/// Copy an ERROR reason (at most 255 bytes by the grammar) into a [`Reason`].
pub(crate) fn reason_of(reason: &[u8]) -> Reason {
    let mut r = Reason::new();
    // Cannot fail: the codec bounds reasons to 255 bytes and we cut to that anyway.
    let _ = r.extend_from_slice(&reason[..reason.len().min(255)]);
    r
}
