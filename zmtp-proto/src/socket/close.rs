//! Closing: stop listening, refuse sends, linger until the queues are written or LINGER
//! runs out.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Command, EndpointId, EndpointKind, MonitorEvent, MonitorEventKind, PeerId, Socket};
use crate::Instant;

impl Socket {
    /// Close the socket: stop listening, refuse new sends, and linger until queued
    /// messages are written or `LINGER` expires; then [`Command::Closed`]. As in libzmq, a
    /// connect endpoint whose peer still has messages waiting for a connection keeps
    /// reconnecting while the socket lingers; the others stop.
    pub fn close(&mut self, now: Instant) {
        if self.closing.is_some() {
            return;
        }
        self.closing = Some(self.opts.linger.map(|l| now + l));
        let ids: Vec<(EndpointId, EndpointKind)> =
            self.endpoints.iter().map(|(id, e)| (*id, e.kind)).collect();
        for (id, kind) in ids {
            match kind {
                EndpointKind::Bind => {
                    self.monitor(MonitorEventKind::Closed, 0, id);
                    self.commands
                        .push_back(Command::StopListening { endpoint: id });
                }
                EndpointKind::Connect => {
                    if self.has_waiting(id) {
                        continue;
                    }
                    if let Some(e) = self.endpoints.get_mut(&id) {
                        e.dead = true;
                    }
                    self.set_retry(id, None);
                }
            }
        }
        self.try_finish_close(now);
    }

    /// Whether `close` has finished.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    pub(super) fn try_finish_close(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        // LINGER 0, or a deadline already past: no waiting for a timer.
        if self.closing.flatten().is_some_and(|t| t <= now) {
            self.finish_close();
            return;
        }
        let drained = self.peers.values().all(|p| {
            p.out.is_empty()
                && p.stream
                    .as_ref()
                    .is_none_or(|s| s.conn.queued_len() == 0 && !s.conn.connection().wants_write())
        });
        if drained {
            self.finish_close();
        }
    }

    pub(super) fn finish_close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for peer in peers {
            if self.peers.get(&peer).is_some_and(|p| p.stream.is_some()) {
                self.commands.push_back(Command::ClosePeer { peer });
            }
            self.peers.remove(&peer);
        }
        self.attached.clear();
        self.departed.clear();
        self.dirty.clear();
        self.endpoints.clear();
        self.timers.clear();
        if self.monitor_mask & MonitorEventKind::MonitorStopped.value() != 0 {
            self.monitors.push_back(MonitorEvent {
                kind: MonitorEventKind::MonitorStopped,
                value: 0,
                endpoint: String::new(),
            });
        }
        self.commands.push_back(Command::Closed);
    }
}
