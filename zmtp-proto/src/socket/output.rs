//! Output: messages encoded into a peer's stream (or queued until its handshake), SNDHWM,
//! and what the driver writes.

use alloc::collections::VecDeque;

use bytes::Bytes;

use super::{Link, Outgoing, Peer, PeerId, Socket};
use crate::Clock;

impl Socket {
    /// Hand everything queued for a peer to `f` as owned chunks (large frame bodies as they
    /// are, encoded bytes copied), for an in-process stream; returns the bytes handed over,
    /// to pass to [`advance`](Self::advance).
    pub fn transmit_bytes(&mut self, peer: PeerId, f: impl FnMut(Bytes)) -> usize {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit_bytes(f);
                s.conn.queued_len()
            }
            None => 0,
        }
    }

    /// Bytes queued for a peer's stream and not yet written (0 for a peer without one).
    pub fn queued_len(&self, peer: PeerId) -> usize {
        self.peers
            .get(&peer)
            .and_then(|p| p.stream.as_ref())
            .map_or(0, |s| s.conn.queued_len())
    }

    /// Queue the connection's control frames and mark the peer for writing if it has output.
    pub(super) fn after_output(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            s.conn.poll_transmit();
            if s.conn.queued_len() > 0 {
                mark(&mut self.dirty, s, peer);
            }
        }
    }

    /// The next peer with bytes to write, if any.
    ///
    /// A peer is named once per batch of output: once named, its further output is not
    /// announced again until everything queued for it has been written
    /// ([`advance`](Self::advance) down to nothing, or a transmit call finding nothing).
    /// So the driver writes a named peer until its output is empty or the stream would
    /// block, and in the latter case writes again when the stream is writable. (A burst of
    /// sends thus costs the driver one notice, not one per message.)
    pub fn next_dirty(&mut self) -> Option<PeerId> {
        while let Some(peer) = self.dirty.pop_front() {
            // Entries of peers gone or closed since are skipped.
            let named = self
                .peers
                .get(&peer)
                .and_then(|p| p.stream.as_ref())
                .is_some_and(|s| s.dirty);
            if named {
                return Some(peer);
            }
        }
        None
    }

    /// Name every peer with unwritten output again through [`next_dirty`](Self::next_dirty),
    /// whether or not it was named already: for a driver that takes the socket over from
    /// another, which had been named peers whose writes it never finished.
    pub fn announce_output(&mut self) {
        self.dirty.clear();
        for (&peer, p) in &mut self.peers {
            if let Some(s) = p.stream.as_mut() {
                s.dirty = false;
                if s.conn.queued_len() > 0 {
                    mark(&mut self.dirty, s, peer);
                }
            }
        }
    }

    pub(super) fn mark_dirty(&mut self, peer: PeerId) {
        if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            mark(&mut self.dirty, s, peer);
        }
    }

    /// Bytes to write to a peer's stream now: the first segment of its output (write it,
    /// then call again until empty, or use [`transmit_chunks`](Self::transmit_chunks)).
    pub fn poll_transmit(&mut self, peer: PeerId) -> &[u8] {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit()
            }
            None => &[],
        }
    }

    /// Everything queued for a peer, as segments for one vectored write (large frame
    /// bodies are their own segments, shared with the sender, not copied); returns how
    /// many of `out` were filled.
    pub fn transmit_chunks<'a>(&'a mut self, peer: PeerId, out: &mut [&'a [u8]]) -> usize {
        match self.peers.get_mut(&peer).and_then(|p| p.stream.as_mut()) {
            Some(s) => {
                s.conn.poll_transmit();
                s.dirty &= s.conn.queued_len() > 0;
                s.conn.transmit_chunks(out)
            }
            None => 0,
        }
    }

    /// `n` bytes of [`poll_transmit`](Self::poll_transmit) (or of the chunks) were written.
    pub fn advance(&mut self, peer: PeerId, n: usize, now: impl Clock) {
        let mut waiting = None;
        let mut farewell = false;
        if let Some(p) = self.peers.get_mut(&peer) {
            if let Some(s) = p.stream.as_mut() {
                s.conn.advance(n);
                s.written += n as u64;
                if s.conn.queued_len() == 0 {
                    s.dirty = false;
                }
                while s.encoded_ends.front().is_some_and(|&end| end <= s.written) {
                    s.encoded_ends.pop_front();
                }
                // Messages held back while the stream was busy (CONFLATE) go out now.
                if s.established && s.encoded_ends.is_empty() && !p.out.is_empty() {
                    waiting = Some(core::mem::take(&mut p.out));
                }
                farewell = s.farewell.is_some();
            }
        }
        for msg in waiting.into_iter().flatten() {
            self.deliver(peer, msg);
        }
        // The time is read only when a farewell or a close may end here.
        if farewell {
            self.finish_farewell(peer, now.now());
        }
        if self.closing.is_some() {
            self.try_finish_close(now.now());
        }
    }

    pub(super) fn out_room(&self, p: &Peer) -> bool {
        self.room_rule().admits(p)
    }

    /// What decides whether a peer has room for one more message (SNDHWM).
    pub(super) fn room_rule(&self) -> RoomRule {
        RoomRule {
            sndhwm: if self.conflate() { 0 } else { self.opts.sndhwm },
            probes: self.probes(),
        }
    }

    /// Whether each new peer gets an empty message first (`ZMQ_PROBE_ROUTER`).
    pub(crate) fn probes(&self) -> bool {
        self.opts.probe_router && self.rules.probes
    }

    pub(super) fn has_room(&self, peer: PeerId) -> bool {
        self.peers.get(&peer).is_some_and(|p| self.out_room(p))
    }

    /// Hand a message to a peer: encode it now if its handshake is done, else queue it.
    /// With CONFLATE a message also waits while an earlier one is still being written, so
    /// that a newer one can replace it: the peer's queue holds one message, not a backlog.
    pub(super) fn deliver<'a>(&mut self, peer: PeerId, out: impl Into<Outgoing<'a>>) {
        let conflate = self.conflate();
        if let Some(p) = self.peers.get_mut(&peer) {
            deliver_to(&mut self.dirty, p, peer, out.into(), conflate);
        }
    }
}

/// Whether a peer has room for one more message: SNDHWM (0 = no limit, as under CONFLATE)
/// against what waits for it and what is encoded but not yet written.
#[derive(Clone, Copy)]
pub(super) struct RoomRule {
    sndhwm: usize,
    probes: bool,
}

impl RoomRule {
    #[inline]
    pub(super) fn admits(self, p: &Peer) -> bool {
        if self.sndhwm == 0 {
            return true;
        }
        let encoded = p.stream.as_ref().map_or(0, |s| s.encoded_ends.len());
        // Until the handshake, a slot is kept for the probe that goes first (in libzmq it
        // is written to the pipe as soon as the pipe exists, before any message).
        let probe = usize::from(self.probes && !p.stream.as_ref().is_some_and(|s| s.established));
        p.out.len() + encoded + probe < self.sndhwm
    }
}

/// [`Socket::deliver`] to a peer at hand.
#[inline(always)]
pub(super) fn deliver_to(
    dirty: &mut VecDeque<PeerId>,
    p: &mut Peer,
    peer: PeerId,
    out: Outgoing<'_>,
    conflate: bool,
) {
    match p.stream.as_mut() {
        Some(s) if s.established && (!conflate || s.encoded_ends.is_empty()) => {
            if encode(s, &out).is_err() {
                return;
            }
            mark(dirty, s, peer);
        }
        _ => {
            if conflate {
                p.out.clear();
            }
            p.out.push_back(out.into_message());
        }
    }
}

/// List a peer's stream as having output, once.
pub(super) fn mark(dirty: &mut VecDeque<PeerId>, s: &mut Link, peer: PeerId) {
    if !s.dirty {
        s.dirty = true;
        dirty.push_back(peer);
    }
}

/// Encode a whole message into a stream and record where it ends (for HWM accounting).
pub(super) fn encode(s: &mut Link, out: &Outgoing<'_>) -> Result<(), crate::EncodeError> {
    match out {
        Outgoing::Message(msg) => {
            let n = msg.len();
            for (i, frame) in msg.frames().iter().enumerate() {
                s.conn.send_frame_shared(frame, i + 1 < n)?;
            }
        }
        // Large bodies stay out of the encode buffer (which keeps its size as scratch): a
        // copy of their own, queued by reference, as `send` would queue them.
        Outgoing::Frame(body) if body.len() >= crate::SHARED_BODY_MIN => s
            .conn
            .send_frame_shared(&Bytes::copy_from_slice(body), false)?,
        Outgoing::Frame(body) => s.conn.send_frame(body, false)?,
    }
    let end = s.queued_bytes_end();
    s.encoded_ends.push_back(end);
    Ok(())
}
