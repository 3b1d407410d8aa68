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
    /// Whole messages not entirely written to a stream when LINGER ran out: those waiting
    /// for a connection or behind others in the peer's queue, and those encoded for a
    /// stream whose bytes it had not all taken (the peer gets no part of them).
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

/// The messages a close left unwritten for one endpoint ([`Socket::close_losses`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    id: EndpointId,
    /// The endpoint, as bound or connected (`tcp://127.0.0.1:5555`).
    pub endpoint: String,
    /// The endpoint was connected to (not bound).
    pub connect: bool,
    /// Whole messages lost ([`CloseReport::unsent_messages`]'s share of this endpoint).
    pub messages: usize,
    /// A connect endpoint's last failure, if its last attempt failed: why nothing took
    /// them (`Connection refused (os error 111)`, a SOCKS proxy's refusal, a failed
    /// handshake).
    pub failure: Option<String>,
}

impl core::fmt::Display for Loss {
    /// `500 message(s) for tcp://127.0.0.1:5555`, or `... from peers of ...` for a
    /// bound endpoint.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let to = if self.connect { "for" } else { "for peers of" };
        write!(f, "{} message(s) {to} {}", self.messages, self.endpoint)?;
        match &self.failure {
            Some(why) => write!(f, " (its last attempt failed: {why})"),
            None => Ok(()),
        }
    }
}

/// A peer's messages not entirely written: those waiting in its queue and those encoded
/// for its stream that the stream has not all taken.
fn unsent_messages(p: &super::Peer) -> usize {
    p.out.len() + p.stream.as_ref().map_or(0, |s| s.encoded_ends.len())
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
            report.unsent_messages += unsent_messages(p);
            if let Some(s) = &p.stream {
                report.unsent_bytes += s.conn.queued_len();
            }
        }
        report
    }

    /// Where the messages a finished close left unwritten were going: one entry per
    /// endpoint, in the order of the endpoints (empty when it delivered everything, and
    /// before it has finished). What a driver says when a socket nobody waits for loses
    /// messages.
    pub fn close_losses(&self) -> &[Loss] {
        &self.close_losses
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

    /// What is queued and not yet written now, by endpoint: what a close would lose if
    /// LINGER ran out now ([`close_losses`](Self::close_losses) keeps it when it does).
    pub fn unsent_by_endpoint(&self) -> Vec<Loss> {
        let mut losses: Vec<Loss> = Vec::new();
        for p in self.peers.values() {
            let messages = unsent_messages(p);
            if messages == 0 {
                continue;
            }
            let endpoint = self.endpoints.get(&p.endpoint);
            match losses.iter_mut().find(|l| l.id == p.endpoint) {
                Some(loss) => loss.messages += messages,
                None => losses.push(Loss {
                    id: p.endpoint,
                    endpoint: endpoint.map(|e| e.text.clone()).unwrap_or_default(),
                    connect: endpoint.is_some_and(|e| e.kind == EndpointKind::Connect),
                    messages,
                    failure: endpoint.and_then(|e| e.failure.clone()),
                }),
            }
        }
        let datagrams = self.udp.unsent();
        if datagrams > 0 {
            losses.push(Loss {
                id: EndpointId(0),
                endpoint: String::from("udp://"),
                connect: true,
                messages: datagrams,
                failure: None,
            });
        }
        losses.sort_by_key(|l| l.id);
        losses
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
        self.close_losses = self.unsent_by_endpoint();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket::Options;
    use crate::SocketType;

    /// A close that lingers for one endpoint's queue finishes when that endpoint is
    /// disconnected (its queue discarded), not when LINGER runs out.
    #[test]
    fn disconnecting_the_endpoint_a_close_waits_for_finishes_it() {
        let mut push = Socket::new(SocketType::Push, Options::default(), 1).unwrap();
        push.connect("tcp://127.0.0.1:5555").unwrap();
        push.send(alloc::vec![1u8], || Instant::ZERO).unwrap();
        push.close(Instant::ZERO);
        assert!(
            !push.is_closed(),
            "LINGER is forever: it waits for the message"
        );
        assert!(push.disconnect("tcp://127.0.0.1:5555", Instant::ZERO));
        assert!(push.is_closed());
        assert_eq!(push.close_losses(), &[]);
        assert!(push.close_report().is_some_and(|r| r.delivered_all()));
    }
}
