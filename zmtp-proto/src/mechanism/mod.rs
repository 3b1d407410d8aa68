//! Security mechanisms. Each is a state of the handshake that the [`Connection`](crate::Connection)
//! drives between the greeting and traffic; they are an enum, not trait objects.

mod null;

pub(crate) use null::{reason_of, Null};

use crate::codec::{Command, Mechanism as MechanismName};
use crate::Error;

/// The mechanism a connection uses, with its handshake state.
#[derive(Debug, Clone)]
pub(crate) enum MechanismState {
    Null(Null),
}

/// What the mechanism decided about one handshake command.
pub(crate) enum Step<'a> {
    /// The handshake is complete; the peer's metadata (READY) is attached.
    Ready(crate::codec::Metadata<'a>),
}

impl MechanismState {
    pub(crate) fn name(&self) -> MechanismName {
        match self {
            MechanismState::Null(_) => MechanismName::NULL,
        }
    }

    /// Whether our READY is to be sent as soon as the greeting is done (NULL sends it eagerly).
    pub(crate) fn ready_after_greeting(&self) -> bool {
        match self {
            MechanismState::Null(_) => true,
        }
    }

    /// Process a command received during the handshake.
    pub(crate) fn handle_command<'a>(&mut self, cmd: Command<'a>) -> Result<Step<'a>, Error> {
        match self {
            MechanismState::Null(n) => n.handle_command(cmd),
        }
    }
}
