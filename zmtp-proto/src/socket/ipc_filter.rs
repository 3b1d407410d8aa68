//! `ZMQ_IPC_FILTER_PID`, `ZMQ_IPC_FILTER_UID`, `ZMQ_IPC_FILTER_GID`: the processes, users
//! and groups a listener accepts `ipc://` peers from.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// Who is at the other end of an accepted `ipc://` stream, as the operating system tells
/// it (`SO_PEERCRED` on Linux): the driver reads it, [`IpcAcceptFilters`] judges it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerCredentials {
    /// The peer's process id, where the system reports it (Linux does; `None` elsewhere).
    pub pid: Option<i32>,
    /// The peer's user id.
    pub uid: u32,
    /// The peer's group id.
    pub gid: u32,
    /// The groups the peer's user belongs to besides [`gid`](Self::gid): the groups of
    /// the user database that list the user as a member. Empty when the user is unknown.
    pub groups: Vec<u32>,
}

/// The peers a listener accepts on its `ipc://` endpoints, by process, user and group.
/// With all three sets empty (the default) every peer is accepted; otherwise a stream
/// accepted on an `ipc://` endpoint is closed at once, with an `ACCEPT_FAILED` monitor
/// event, unless its peer's process id is in [`pids`](Self::pids), its user id in
/// [`uids`](Self::uids), or its group or one of its user's groups in
/// [`gids`](Self::gids), as libzmq's filter decides. A peer whose credentials the driver
/// could not read is refused.
///
/// ```
/// use zmtp_proto::socket::{IpcAcceptFilters, PeerCredentials};
///
/// let mut filters = IpcAcceptFilters::default();
/// let peer = PeerCredentials { pid: Some(42), uid: 1000, gid: 100, groups: vec![27] };
/// assert!(filters.accepts(&peer)); // no filter: everyone
/// filters.gids.insert(27);
/// assert!(filters.accepts(&peer)); // a group the user belongs to
/// filters.gids.clear();
/// filters.uids.insert(0);
/// assert!(!filters.accepts(&peer));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpcAcceptFilters {
    /// `ZMQ_IPC_FILTER_PID`: process ids accepted.
    pub pids: BTreeSet<i32>,
    /// `ZMQ_IPC_FILTER_UID`: user ids accepted.
    pub uids: BTreeSet<u32>,
    /// `ZMQ_IPC_FILTER_GID`: group ids accepted (the peer's own group, or a group its user
    /// is a member of).
    pub gids: BTreeSet<u32>,
}

impl IpcAcceptFilters {
    /// No filter is set: every peer is accepted (and no credentials are needed).
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.uids.is_empty() && self.gids.is_empty()
    }

    /// Whether a peer with these credentials may stay.
    pub fn accepts(&self, peer: &PeerCredentials) -> bool {
        self.is_empty()
            || peer.pid.is_some_and(|pid| self.pids.contains(&pid))
            || self.uids.contains(&peer.uid)
            || self.gids.contains(&peer.gid)
            || peer.groups.iter().any(|g| self.gids.contains(g))
    }
}
