//! The blocks every family is built from: load balancing (round robin over attached
//! peers with room) and fair queuing (round robin over attached peers with a complete
//! message, what departed peers left first), with RCVHWM holding and resuming input.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::socket::output::deliver_to;
use crate::socket::{Command, Message, Outgoing, PeerId, SendError, Sent, Socket};
use crate::{Bytes, Clock, Instant};

impl Socket {
    /// Round-robin over attached peers with room.
    #[inline]
    pub(in crate::socket) fn lb_pick(&mut self) -> Option<PeerId> {
        let n = self.attached.len();
        let start = ring_start(self.lb_cursor, n);
        for i in 0..n {
            let idx = ring_next(start, i, n);
            let peer = self.attached[idx];
            if self.has_room(peer) {
                self.lb_cursor = ring_next(idx, 1, n);
                return Some(peer);
            }
        }
        None
    }

    /// Hand a message to the next peer with room, or refuse it (`WouldBlock`).
    #[inline]
    pub(in crate::socket) fn send_lb(&mut self, out: Outgoing<'_>) -> Result<Sent, SendError> {
        // `lb_pick` then `deliver`, with one lookup of the chosen peer instead of two.
        let rule = self.room_rule();
        let conflate = self.conflate();
        if let &[peer] = &self.attached[..] {
            // One peer: the round is that peer, without the ring's arithmetic.
            return match self.peers.get_mut(&peer) {
                Some(p) if rule.admits(p) => {
                    deliver_to(&mut self.dirty, p, peer, out, conflate);
                    Ok(Sent::Queued)
                }
                _ => Err(SendError::WouldBlock(out.into_message())),
            };
        }
        let n = self.attached.len();
        let start = ring_start(self.lb_cursor, n);
        for i in 0..n {
            let idx = ring_next(start, i, n);
            let Some(&peer) = self.attached.get(idx) else {
                break;
            };
            let Some(p) = self.peers.get_mut(&peer) else {
                continue;
            };
            if rule.admits(p) {
                self.lb_cursor = ring_next(idx, 1, n);
                deliver_to(&mut self.dirty, p, peer, out, conflate);
                return Ok(Sent::Queued);
            }
        }
        Err(SendError::WouldBlock(out.into_message()))
    }

    /// [`send_slices`](Socket::send_slices)'s bulk path: with one attached peer, load
    /// balancing is that peer, so the bodies are handed to it in order, with one lookup,
    /// while it has room. Returns how many; 0 also when it does not apply.
    pub(in crate::socket) fn send_lb_lone<B: AsRef<[u8]>>(&mut self, bodies: &[B]) -> usize {
        let &[peer] = &self.attached[..] else {
            return 0;
        };
        let rule = self.room_rule();
        let conflate = self.conflate();
        let Some(p) = self.peers.get_mut(&peer) else {
            return 0;
        };
        let mut n = 0;
        for body in bodies {
            if !rule.admits(p) {
                break;
            }
            deliver_to(
                &mut self.dirty,
                p,
                peer,
                Outgoing::Frame(body.as_ref()),
                conflate,
            );
            n += 1;
        }
        n
    }

    /// Whether some attached peer has room (load balancing can send).
    pub(in crate::socket) fn lb_room(&self) -> bool {
        self.attached.iter().any(|&p| self.has_room(p))
    }

    /// Queue a message received from a peer for the application (CONFLATE keeps only the
    /// newest).
    pub(in crate::socket) fn queue_in(&mut self, peer: PeerId, msg: Message) {
        let conflate = self.conflate();
        if let Some(p) = self.peers.get_mut(&peer) {
            if conflate {
                p.inq.clear();
            }
            p.inq.push_back(msg);
        }
    }

    /// After input was queued for `peer` (or it was attached): give it a turn in fair
    /// queuing if it has a message waiting and none yet.
    pub(in crate::socket) fn note_input(&mut self, peer: PeerId) {
        if let Some(p) = self.peers.get_mut(&peer) {
            if p.attached && !p.in_fq && !p.inq.is_empty() {
                p.in_fq = true;
                self.fq_active.push_back(peer);
            }
        }
    }

    /// Whether some peer (attached or departed) has a complete message.
    pub(in crate::socket) fn fq_ready(&self) -> bool {
        !self.departed.is_empty()
            || (self.fq_active.iter())
                .any(|peer| (self.peers.get(peer)).is_some_and(|p| p.attached && !p.inq.is_empty()))
    }

    /// Round-robin over attached peers with a complete message waiting. Also returns the
    /// peer's routing id, read before taking the message: taking it resumes the peer's
    /// input, which may end the peer. Inlined where it is called, so that what a caller
    /// leaves unused (the id, the peer) is never built or moved.
    #[inline(always)]
    pub(in crate::socket) fn fq_pop(
        &mut self,
        with_id: bool,
        now: &impl Clock,
    ) -> Option<(PeerId, Option<Bytes>, Message)> {
        // What departed peers left comes first: it arrived before they left.
        if !self.departed.is_empty() {
            if let Some((peer, id, msg)) = self.pop_departed(None) {
                return Some((peer, with_id.then_some(id), msg));
            }
        }
        let rcvhwm = self.rcv_limit();
        while let Some(&peer) = self.fq_active.front() {
            let Some(p) = self.peers.get_mut(&peer) else {
                self.fq_active.pop_front();
                continue;
            };
            let Some(msg) = p.attached.then(|| p.inq.pop_front()).flatten() else {
                // Passed over: detached, or its queue emptied by another path.
                p.in_fq = false;
                self.fq_active.pop_front();
                continue;
            };
            // Only ROUTER needs the routing id: nobody else pays for its clone.
            let id = with_id.then(|| p.routing_id.clone());
            let resume = p.held && p.inq.len() <= rcvhwm / 2;
            if p.inq.is_empty() {
                p.in_fq = false;
                self.fq_active.pop_front();
            } else if self.fq_active.len() > 1 {
                // Its next message waits for the others' turns.
                self.fq_active.rotate_left(1);
            }
            if resume {
                self.resume_input(peer, now.now());
            }
            return Some((peer, id, msg));
        }
        None
    }

    /// `recv`'s path for a plain fair-queuing type (see [`Socket::recv`]): with one
    /// attached peer and nothing left by departed ones, fair queuing is that peer's queue,
    /// so its next message is taken at once (resuming its input as `fq_pop` would). `None`
    /// when it does not apply or the queue is empty.
    #[inline]
    pub(in crate::socket) fn fq_pop_lone(&mut self, now: &impl Clock) -> Option<Message> {
        let (&[peer], true) = (&self.attached[..], self.departed.is_empty()) else {
            return None;
        };
        let rcvhwm = self.rcv_limit();
        let p = self.peers.get_mut(&peer)?;
        let msg = p.inq.pop_front()?;
        if p.held && p.inq.len() <= rcvhwm / 2 {
            self.resume_input(peer, now.now());
        }
        Some(msg)
    }

    /// [`recv_many`](Socket::recv_many)'s bulk move: with one attached peer and nothing
    /// left by departed ones, fair queuing is that peer's queue in order, so up to `max`
    /// of its messages move to `out` at once (resuming its input as `fq_pop` would).
    /// Returns how many; 0 when it does not apply.
    pub(in crate::socket) fn fq_drain_lone(
        &mut self,
        out: &mut Vec<Message>,
        max: usize,
        now: &impl Clock,
    ) -> usize {
        let (&[peer], true) = (&self.attached[..], self.departed.is_empty()) else {
            return 0;
        };
        let rcvhwm = self.rcv_limit();
        let Some(p) = self.peers.get_mut(&peer) else {
            return 0;
        };
        let k = max.min(p.inq.len());
        if k == p.inq.len() && out.is_empty() && out.capacity() >= k {
            // The whole queue into an empty list that could hold it: swap the two
            // buffers, so that no message is moved one by one (`Vec` and `VecDeque`
            // convert into each other without copying when the queue starts at the front
            // of its buffer, as one refilled from an empty list does).
            let spare = VecDeque::from(core::mem::take(out));
            *out = Vec::from(core::mem::replace(&mut p.inq, spare));
        } else {
            out.extend(p.inq.drain(..k));
        }
        if p.held && p.inq.len() <= rcvhwm / 2 {
            self.resume_input(peer, now.now());
        }
        k
    }

    /// The oldest message left by a departed peer (any, or `peer`).
    pub(in crate::socket) fn pop_departed(
        &mut self,
        peer: Option<PeerId>,
    ) -> Option<(PeerId, Bytes, Message)> {
        let i = self
            .departed
            .iter()
            .position(|d| peer.is_none_or(|p| p == d.peer))?;
        let d = self.departed.get_mut(i)?;
        let left = d
            .inq
            .pop_front()
            .map(|msg| (d.peer, d.routing_id.clone(), msg));
        if d.inq.is_empty() {
            self.departed.remove(i);
        }
        left
    }

    /// Drop every message waiting from the peers but `keep`, resuming their input.
    pub(in crate::socket) fn discard_input(&mut self, keep: Option<PeerId>, now: &impl Clock) {
        self.departed.retain(|d| Some(d.peer) == keep);
        // Mostly nothing waits (a REQ sending its next request): then no snapshot either.
        let waiting =
            |p: &PeerId| Some(*p) != keep && self.peers.get(p).is_some_and(|p| !p.inq.is_empty());
        if !self.attached.iter().any(waiting) {
            return;
        }
        // A snapshot: resuming input may end a peer and so change `attached`.
        let peers: Vec<PeerId> = self
            .attached
            .iter()
            .copied()
            .filter(|&p| Some(p) != keep)
            .collect();
        for peer in peers {
            while self.pop_from(peer, now).is_some() {}
        }
    }

    /// Take the next message from one peer, resuming its input if that frees room.
    pub(in crate::socket) fn pop_from(
        &mut self,
        peer: PeerId,
        now: &impl Clock,
    ) -> Option<Message> {
        let rcvhwm = self.rcv_limit();
        let p = self.peers.get_mut(&peer)?;
        let msg = p.inq.pop_front()?;
        if p.held && p.inq.len() <= rcvhwm / 2 {
            self.resume_input(peer, now.now());
        }
        Some(msg)
    }

    /// Whether `peer` has a message waiting, queued or left behind when it departed.
    pub(in crate::socket) fn has_input_from(&self, peer: PeerId) -> bool {
        self.peers.get(&peer).is_some_and(|p| !p.inq.is_empty())
            || self.departed.iter().any(|d| d.peer == peer)
    }

    /// A held peer's queue has drained to half: take its input again.
    #[cold]
    #[inline(never)]
    fn resume_input(&mut self, peer: PeerId, now: Instant) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.held = false;
        }
        self.process_input(peer, now);
        if self.wants_read(peer) {
            self.commands.push_back(Command::Resume { peer });
        }
    }
}

/// Where a round over `n` peers starts for a cursor (which may exceed `n` after peers
/// left): `cursor % n`, without a division in the common case.
fn ring_start(cursor: usize, n: usize) -> usize {
    if cursor < n {
        cursor
    } else {
        cursor.checked_rem(n).unwrap_or(0)
    }
}

/// The `i`-th position of a round over `n` peers from `start` (`start < n`, `i <= n`).
fn ring_next(start: usize, i: usize, n: usize) -> usize {
    let idx = start + i;
    if idx >= n {
        idx - n
    } else {
        idx
    }
}
