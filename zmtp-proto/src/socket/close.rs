//! Closing: stop listening, refuse sends, linger until the queues are written or LINGER
//! runs out.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Command, EndpointId, EndpointKind, MonitorEvent, MonitorEventKind, PeerId, Socket};
use crate::Instant;

/// What a socket's close left unwritten: nothing when every message queued before the
/// close was handed to its peer's stream, or what was still queued when LINGER ran out.
///
/// As in libzmq, "delivered" means written to the stream (the operating system's socket
/// buffer); what the network does with it afterwards is not seen here.
///
/// ```
/// use zmtp_proto::socket::CloseReport;
///
/// let done = CloseReport::default();
/// assert!(done.delivered_all());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Whole messages that never reached a stream (waiting for a connection, or behind
    /// others in the peer's queue), dropped when LINGER ran out.
    pub unsent_messages: usize,
    /// Bytes encoded for a stream (parts of messages) and not written when LINGER ran out.
    pub unsent_bytes: usize,
}

impl CloseReport {
    /// Whether everything queued was written: LINGER did not cut anything off.
    pub fn delivered_all(&self) -> bool {
        self.unsent_messages == 0 && self.unsent_bytes == 0
    }

    /// The sum of two reports (for a context closing several sockets).
    #[must_use]
    pub fn merged(self, other: CloseReport) -> CloseReport {
        CloseReport {
            unsent_messages: self.unsent_messages + other.unsent_messages,
            unsent_bytes: self.unsent_bytes + other.unsent_bytes,
        }
    }
}

impl core::fmt::Display for CloseReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.delivered_all() {
            f.write_str("every message delivered")
        } else {
            write!(
                f,
                "LINGER expired with {} message(s) and {} byte(s) unsent",
                self.unsent_messages, self.unsent_bytes
            )
        }
    }
}

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

    /// What the close left unwritten, once it has finished (`None` before).
    pub fn close_report(&self) -> Option<CloseReport> {
        self.close_report
    }

    /// What is queued for the peers and not yet written: what a close would leave
    /// behind if LINGER ran out now.
    pub fn unsent(&self) -> CloseReport {
        let mut report = CloseReport::default();
        report.unsent_messages += self.udp.unsent();
        for p in self.peers.values() {
            report.unsent_messages += p.out.len();
            if let Some(s) = &p.stream {
                report.unsent_bytes += s.conn.queued_len();
            }
        }
        report
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
        if self.drained() {
            self.finish_close();
        }
    }

    /// Whether everything queued was written (streams) or taken (datagrams).
    fn drained(&self) -> bool {
        self.udp.drained()
            && self.peers.values().all(|p| {
                p.out.is_empty()
                    && p.stream.as_ref().is_none_or(|s| {
                        // A raw stream's connection never writes (its greeting stays unsent).
                        s.conn.queued_len() == 0
                            && (s.conn.is_raw() || !s.conn.connection().wants_write())
                    })
            })
    }

    /// The last datagram was taken: a lingering close may finish.
    pub(super) fn datagrams_drained(&mut self) {
        if self.closing.is_some() && self.drained() {
            self.finish_close();
        }
    }

    pub(super) fn finish_close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.close_report = Some(self.unsent());
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
        // udp connects close their UDP socket only now: their datagrams went first.
        for (id, e) in &self.endpoints {
            if e.kind == EndpointKind::Connect && matches!(e.addr, super::Endpoint::Udp(_)) {
                self.commands
                    .push_back(Command::StopListening { endpoint: *id });
            }
        }
        self.udp.clear();
        self.endpoints.clear();
        self.timers.clear();
        if self.monitor_mask & MonitorEventKind::MonitorStopped.value() != 0 {
            self.monitors.push_back(MonitorEvent::new(
                MonitorEventKind::MonitorStopped,
                0,
                String::new(),
            ));
        }
        self.commands.push_back(Command::Closed);
    }
}
