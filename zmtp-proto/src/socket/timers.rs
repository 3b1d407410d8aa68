//! The socket's timers in one ordered set: each peer's next connection deadline (handshake,
//! heartbeat, TTL, or the farewell of a refused peer) and each connect endpoint's reconnect.
//! Arming, moving or cancelling a timer is O(log n); finding the next deadline is O(log n)
//! and firing costs only the timers that are due, so idle peers cost nothing.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::{Command, Ending, EndpointId, MonitorEventKind, PeerId, Socket};
use crate::Instant;

/// What a timer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey {
    /// A peer's stream: its connection's next deadline, or its farewell.
    Peer(PeerId),
    /// A connect endpoint's next reconnect attempt.
    Retry(EndpointId),
}

/// Deadlines ordered by time. The owner of each timer remembers the deadline it armed
/// (`Link::deadline`, `EndpointState::retry_at`), which is the key to move or cancel it.
#[derive(Debug, Default)]
pub(super) struct Timers {
    queue: BTreeSet<(Instant, TimerKey)>,
    /// Scratch for the timers due in one `handle_timeout`, kept to avoid allocating.
    due: Vec<TimerKey>,
}

impl Timers {
    /// Move `key` from deadline `old` to `new` (either may be `None`).
    #[inline]
    pub(super) fn reset(&mut self, key: TimerKey, old: Option<Instant>, new: Option<Instant>) {
        if old == new {
            return;
        }
        if let Some(t) = old {
            self.queue.remove(&(t, key));
        }
        if let Some(t) = new {
            self.queue.insert((t, key));
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Instant> {
        self.queue.first().map(|&(t, _)| t)
    }

    pub(super) fn clear(&mut self) {
        self.queue.clear();
    }
}

impl Socket {
    /// Re-arm a peer's timer at its stream's current deadline.
    #[inline]
    pub(super) fn rearm(&mut self, peer: PeerId) {
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        let deadline = match &s.farewell {
            Some((_, deadline)) => Some(*deadline),
            None => s.conn.connection().poll_timeout(),
        };
        if deadline != s.deadline {
            self.timers
                .reset(TimerKey::Peer(peer), s.deadline, deadline);
            s.deadline = deadline;
        }
    }

    /// Set (or with `None` cancel) a connect endpoint's reconnect deadline.
    pub(super) fn set_retry(&mut self, endpoint: EndpointId, at: Option<Instant>) {
        if let Some(e) = self.endpoints.get_mut(&endpoint) {
            self.timers.reset(TimerKey::Retry(endpoint), e.retry_at, at);
            e.retry_at = at;
        }
    }

    /// The earliest instant at which [`handle_timeout`](Self::handle_timeout) must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        match (self.timers.next(), self.closing.flatten()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire every expired timer: connection deadlines and heartbeats, reconnects, linger.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut due = core::mem::take(&mut self.timers.due);
        while let Some(&(t, key)) = self.timers.queue.first() {
            if t > now {
                break;
            }
            self.timers.queue.pop_first();
            due.push(key);
        }
        for key in due.drain(..) {
            match key {
                TimerKey::Peer(peer) => self.peer_timeout(peer, now),
                TimerKey::Retry(endpoint) => {
                    if let Some(e) = self.endpoints.get_mut(&endpoint) {
                        e.retry_at = None;
                        let addr = e.dial_addr();
                        self.commands.push_back(Command::Connect { endpoint, addr });
                        self.monitor(MonitorEventKind::ConnectDelayed, 0, endpoint);
                    }
                }
            }
        }
        self.timers.due = due;
        if self.closing.flatten().is_some_and(|t| t <= now) {
            self.finish_close();
        }
    }

    /// A peer's timer fired (its entry is already out of the queue).
    fn peer_timeout(&mut self, peer: PeerId, now: Instant) {
        let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        s.deadline = None;
        if s.farewell.is_some() {
            self.finish_farewell(peer, now);
        } else {
            match s.conn.connection_mut().handle_timeout(now) {
                Ok(()) => self.after_output(peer),
                Err(e) => {
                    self.end_stream(peer, Ending::Failed(e), now);
                    return;
                }
            }
        }
        self.rearm(peer);
    }
}
