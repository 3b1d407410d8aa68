//! `inproc://`: sockets of one context joined in memory, under the context's lock.
//!
//! A bound name is a table entry, not a listener. A connect to a bound name makes a peer
//! on each side at once (the state machines' `handle_connected` and `handle_accepted`),
//! linked to each other; a connect to a name not bound yet waits in the table and is
//! joined when the name is bound, its messages queued meanwhile (unless IMMEDIATE), as
//! libzmq's are.
//!
//! A linked peer has no stream: what one side's state machine queues for it is handed to
//! the other side's, as shared chunks (large bodies are not copied), in the same call that
//! queued it ([`Shared::deliver_inproc`], run at the end of every `pump` and of every
//! application call). So a connect between two sockets of one context has made its
//! handshake by the time it returns, and messages reach the other side in the order they
//! were sent, whichever peers they were sent through. A side that holds its input back
//! (RCVHWM) takes nothing more until it resumes: the rest waits in the sender's queue,
//! where SNDHWM counts it, so a link holds about SNDHWM + RCVHWM messages, as libzmq's
//! pipes do.

use std::collections::{BTreeMap, HashMap, VecDeque};

use zmtp_proto::socket::{EndpointId, PeerId};
use zmtp_proto::{Bytes, Instant};

use super::waiters::Notify;
use super::{Shared, State};

/// One end of a link: a socket and its peer.
type End = (usize, PeerId);

/// The context's `inproc://` names and links.
#[derive(Default)]
pub(crate) struct Inproc {
    /// Bound names, and the socket and endpoint bound there.
    bound: HashMap<String, (usize, EndpointId)>,
    /// Connects to names not bound yet, in the order they were made.
    pending: HashMap<String, Vec<(usize, EndpointId)>>,
    /// Each linked peer, and the other end.
    /// (A B-tree: looked up for every message sent, and cheaper than hashing for the few
    /// a context has.)
    links: BTreeMap<End, End>,
    /// Ends whose output is to be handed over.
    due: VecDeque<End>,
    /// Ends that take input again (after RCVHWM): what they were handed and held back is
    /// processed, then the other end's output handed over.
    resumed: Vec<End>,
    /// Ends whose other end is gone, closed once they have taken in what they were handed
    /// (as a stream's end comes after its data).
    ending: Vec<End>,
    /// Sockets to pump before the next hand-over (their state machines changed).
    to_pump: Vec<usize>,
    /// A hand-over is running (`pump` calls it, and it calls `pump`).
    delivering: bool,
    /// The chunks of a hand-over, kept for the next one (no allocation per message).
    chunks: Vec<Bytes>,
    /// Sockets changed by hand-overs, whose waiters are to be woken once the lock is
    /// released.
    touched: Vec<usize>,
    /// Peers were joined or unlinked since the I/O thread last looked: their sockets'
    /// timers changed (a handshake's deadline, a reconnect), which it must learn of.
    timers_moved: bool,
}

impl Inproc {
    /// Whether `endpoint` (`inproc://name`) is bound.
    pub(crate) fn is_bound(&self, endpoint: &str) -> bool {
        endpoint
            .strip_prefix("inproc://")
            .is_some_and(|name| self.bound.contains_key(name))
    }

    /// Whether `peer` of socket `id` is linked in memory.
    #[inline]
    pub(crate) fn is_linked(&self, id: usize, peer: PeerId) -> bool {
        !self.links.is_empty() && self.links.contains_key(&(id, peer))
            || !self.ending.is_empty() && self.ending.contains(&(id, peer))
    }

    /// `work::queue` for a linked peer: a write hands its output over; a read (the peer
    /// takes input again) takes the other end's.
    pub(crate) fn queue(&mut self, id: usize, peer: PeerId, write: bool) {
        if write {
            self.due.push_back((id, peer));
        } else {
            self.resumed.push((id, peer));
        }
    }

    /// Whether hand-overs changed sockets whose waiters are still to be woken.
    #[inline]
    pub(crate) fn touched_any(&self) -> bool {
        !self.touched.is_empty()
    }

    /// Whether there is anything for [`Shared::deliver_inproc`] to do.
    #[inline]
    pub(crate) fn busy(&self) -> bool {
        let work = !self.due.is_empty()
            || !self.to_pump.is_empty()
            || !self.resumed.is_empty()
            || self.timers_moved;
        work && !self.delivering
    }
}

impl Shared {
    /// Socket `id` listens on `inproc://name` as `endpoint`: the name is taken (unless
    /// another endpoint has it: "address already in use", as libzmq's `EADDRINUSE`), the
    /// socket and `bind` are told, and connects waiting for the name are joined.
    pub(super) fn inproc_listen(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        name: &str,
        now: Instant,
    ) {
        let taken = st.inproc.bound.contains_key(name);
        let Some(s) = st.sockets.get_mut(&id) else {
            return;
        };
        if taken {
            let errno = rustix::io::Errno::ADDRINUSE;
            s.core
                .handle_bind_failed(endpoint, errno.raw_os_error().unsigned_abs());
            s.bound.insert(endpoint, Err(errno.into()));
            return;
        }
        s.core
            .handle_listening(endpoint, &format!("inproc://{name}"));
        s.bound
            .insert(endpoint, Ok(s.core.last_endpoint().to_string()));
        st.inproc.bound.insert(name.to_owned(), (id, endpoint));
        for (cid, cendpoint) in st.inproc.pending.remove(name).unwrap_or_default() {
            self.inproc_join(st, (cid, cendpoint), (id, endpoint), now);
        }
    }

    /// Connect socket `id`'s `endpoint` to `name`: joined at once if it is bound, else
    /// when it is.
    pub(super) fn inproc_connect(
        &self,
        st: &mut State,
        id: usize,
        endpoint: EndpointId,
        name: &str,
        now: Instant,
    ) {
        match st.inproc.bound.get(name) {
            Some(&bound) => self.inproc_join(st, (id, endpoint), bound, now),
            None => {
                let waiting = st.inproc.pending.entry(name.to_owned()).or_default();
                if !waiting.contains(&(id, endpoint)) {
                    waiting.push((id, endpoint));
                }
            }
        }
    }

    /// Make a peer on each side and link them; their greetings go at the next hand-over.
    fn inproc_join(
        &self,
        st: &mut State,
        (cid, cendpoint): (usize, EndpointId),
        (bid, bendpoint): (usize, EndpointId),
        now: Instant,
    ) {
        let connected = (st.sockets.get_mut(&cid))
            .filter(|s| !s.closed)
            .and_then(|s| s.core.handle_connected(cendpoint, "", now));
        let Some(cpeer) = connected else {
            return;
        };
        let accepted = (st.sockets.get_mut(&bid))
            .filter(|s| !s.closed)
            .and_then(|s| s.core.handle_accepted(bendpoint, "", now));
        let Some(bpeer) = accepted else {
            // Turned away (the bound socket is closing): as a refused connect.
            if let Some(s) = st.sockets.get_mut(&cid) {
                s.core.handle_closed(cpeer, now);
            }
            st.inproc.to_pump.push(cid);
            return;
        };
        let inproc = &mut st.inproc;
        inproc.links.insert((cid, cpeer), (bid, bpeer));
        inproc.links.insert((bid, bpeer), (cid, cpeer));
        inproc.due.push_back((cid, cpeer));
        inproc.due.push_back((bid, bpeer));
        inproc.to_pump.extend([cid, bid]);
        inproc.timers_moved = true;
    }

    /// Socket `id` stops listening on `endpoint` (or stops connecting through it).
    pub(super) fn inproc_stop(&self, st: &mut State, id: usize, endpoint: EndpointId) {
        st.inproc.bound.retain(|_, &mut b| b != (id, endpoint));
        for waiting in st.inproc.pending.values_mut() {
            waiting.retain(|&c| c != (id, endpoint));
        }
    }

    /// Unlink `peer` of socket `id` (its socket let go of it): the other end's peer is
    /// closed once it has taken in what it was handed, as a stream's end comes after its
    /// data ([`Shared::deliver_inproc`]).
    pub(super) fn inproc_unlink(&self, st: &mut State, id: usize, peer: PeerId) {
        st.inproc.ending.retain(|&e| e != (id, peer));
        let Some(other) = st.inproc.links.remove(&(id, peer)) else {
            return;
        };
        st.inproc.links.remove(&other);
        st.inproc.ending.push(other);
        st.inproc.to_pump.push(other.0);
    }

    /// Close the ending peers ([`Inproc::ending`]) that have taken in all they were
    /// handed (they take input again); returns whether any was.
    fn end_peers(&self, st: &mut State, now: Instant) -> bool {
        let mut ended = false;
        let mut i = 0;
        while let Some(&(id, peer)) = st.inproc.ending.get(i) {
            let done = (st.sockets.get(&id)).is_none_or(|s| s.core.wants_read(peer));
            if !done {
                i += 1;
                continue;
            }
            st.inproc.ending.swap_remove(i);
            if let Some(s) = st.sockets.get_mut(&id) {
                s.core.handle_closed(peer, now);
            }
            st.inproc.to_pump.push(id);
            st.inproc.timers_moved = true;
            ended = true;
        }
        ended
    }

    /// Socket `id` closed: its names, waiting connects and links go.
    pub(super) fn inproc_closed(&self, st: &mut State, id: usize) {
        st.inproc.bound.retain(|_, b| b.0 != id);
        for waiting in st.inproc.pending.values_mut() {
            waiting.retain(|c| c.0 != id);
        }
        st.inproc.pending.retain(|_, w| !w.is_empty());
        st.inproc.ending.retain(|e| e.0 != id);
        let mine: Vec<PeerId> = (st.inproc.links.keys())
            .filter(|end| end.0 == id)
            .map(|end| end.1)
            .collect();
        for peer in mine {
            self.inproc_unlink(st, id, peer);
        }
    }

    /// Hand over what linked peers have queued, pumping the sockets this changes, until
    /// nothing is left to hand over; the sockets changed are noted, for whoever releases
    /// the lock to wake their waiters ([`inproc_touched`](Self::inproc_touched)). Does
    /// nothing when called from within itself (through `pump`).
    #[inline]
    pub(super) fn deliver_inproc(&self, st: &mut State) {
        if st.inproc.busy() {
            self.deliver_inproc_now(st);
        }
    }

    /// [`deliver_inproc`](Self::deliver_inproc) once there is something to do.
    #[inline(never)]
    fn deliver_inproc_now(&self, st: &mut State) {
        st.inproc.delivering = true;
        let now = self.now();
        // Few sockets each time: a short list, no allocation per node.
        let mut touched: Vec<usize> = Vec::new();
        loop {
            if let Some(id) = st.inproc.to_pump.pop() {
                self.pump(st, id);
                if !touched.contains(&id) {
                    touched.push(id);
                }
                continue;
            }
            if let Some(end) = st.inproc.resumed.pop() {
                // A chunk may carry more messages than RCVHWM let in: the rest waits in the
                // end's input buffer, processed now.
                if let Some(s) = st.sockets.get_mut(&end.0) {
                    s.core.handle_input(end.1, now);
                }
                st.inproc.to_pump.push(end.0);
                if let Some(&other) = st.inproc.links.get(&end) {
                    st.inproc.due.push_back(other);
                }
                continue;
            }
            let Some(from) = st.inproc.due.pop_front() else {
                if !st.inproc.ending.is_empty() && self.end_peers(st, now) {
                    continue;
                }
                break;
            };
            if let Some(&to) = st.inproc.links.get(&from) {
                if self.hand_over(st, from, to, now) {
                    st.inproc.to_pump.extend([to.0, from.0]);
                }
            }
        }
        st.inproc.delivering = false;
        if std::mem::take(&mut st.inproc.timers_moved) && st.parked {
            // The parked I/O thread waits for the timers it knew of.
            st.parked = false;
            let _ = self.registrar.wake();
        }
        // Woken once the lock is released ([`Shared::inproc_touched`]): a thread woken
        // now would only wait for the lock.
        for id in touched {
            if !st.inproc.touched.contains(&id) {
                st.inproc.touched.push(id);
            }
        }
    }

    /// The sockets hand-overs changed since the last call, added to `notify`: whoever
    /// releases the lock after a `pump` signals them (an application call's end, the I/O
    /// thread's turn, the end of a read run by an application thread, a name looked up,
    /// a ZAP verdict).
    #[inline]
    pub(super) fn inproc_touched(&self, st: &mut State, notify: &mut Notify) {
        if st.inproc.touched.is_empty() {
            return;
        }
        for id in std::mem::take(&mut st.inproc.touched) {
            notify.touch(st, id);
        }
    }

    /// Hand `from`'s queued output to `to` while `to` takes input; returns whether
    /// anything changed hands. What `to` does not take stays queued in `from` (SNDHWM
    /// and LINGER count it there), for when `to` resumes.
    fn hand_over(&self, st: &mut State, from: End, to: End, now: Instant) -> bool {
        let wants = (st.sockets.get(&to.0)).is_some_and(|o| o.core.wants_read(to.1));
        let Some(s) = st.sockets.get_mut(&from.0).filter(|_| wants) else {
            // Not now: the other end resumes it (a read queued for it: `Inproc::queue`).
            return false;
        };
        let mut chunks = std::mem::take(&mut st.inproc.chunks);
        if s.core.transmit_bytes(from.1, |chunk| chunks.push(chunk)) == 0 {
            st.inproc.chunks = chunks;
            return false;
        }
        let mut taken = 0;
        if let Some(o) = st.sockets.get_mut(&to.0) {
            for chunk in chunks.drain(..) {
                if !o.core.wants_read(to.1) {
                    break;
                }
                taken += chunk.len();
                o.core.handle_received_shared(to.1, now, chunk);
            }
        }
        chunks.clear();
        st.inproc.chunks = chunks;
        if let Some(s) = st.sockets.get_mut(&from.0) {
            s.core.advance(from.1, taken, || now);
            if s.core.queued_len(from.1) > 0 {
                // Left over (the other side began to hold its input back): tried again,
                // and kept until it resumes. Output queued later names the peer again
                // (`next_dirty`).
                st.inproc.due.push_back(from);
            }
        }
        taken > 0
    }
}
